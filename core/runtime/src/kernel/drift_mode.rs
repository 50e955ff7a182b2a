//! `drift` (a ProvisionerClass parameter): what the runtime does when
//! someone else changes or deletes an object an Instance installed.
//! `{mode: Repair}` (the default) puts it back; `{mode: Warn}` leaves it,
//! and says which objects changed in the Instance's `Drifted` condition
//! and an Event, until new content or a new generation is applied (which
//! writes the objects as the content has them, as any install does).
//!
//!
//! `ignore` names fields someone else owns (an autoscaler's
//! `/spec/replicas`): `[{group, kind, name?, paths: [JSON pointer]}]`. The
//! runtime writes such a field with the value the cluster has, once the
//! object exists (the content's value only when it creates it), and a
//! change by someone else that touches nothing but ignored fields is no
//! drift. Pakket's own records (name, namespace, its labels) cannot be
//! ignored.

use serde_json::{Map, Value};

use crate::class_parameters::ParameterError;

/// What happens to objects someone else changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DriftMode {
    /// Put them back.
    #[default]
    Repair,
    /// Leave them, and say so.
    Warn,
}

/// Reads the class's `drift` parameter; the error names the parameter and
/// what to write.
pub fn from_parameters(
    parameters: Option<&Map<String, Value>>,
) -> Result<DriftMode, ParameterError> {
    let error = |name: String, problem: String| ParameterError { name, problem };
    let Some(drift) = parameters.and_then(|parameters| parameters.get("drift")) else {
        return Ok(DriftMode::Repair);
    };
    let Some(drift) = drift.as_object() else {
        return Err(error(
            "drift".into(),
            format!("{drift} is not an object; write drift: {{mode: Repair}} or {{mode: Warn}}"),
        ));
    };
    if let Some(unknown) = drift
        .keys()
        .find(|key| !matches!(key.as_str(), "mode" | "ignore"))
    {
        return Err(error(
            format!("drift.{unknown}"),
            "is not a drift setting; write mode or ignore".into(),
        ));
    }
    match drift.get("mode") {
        None => Ok(DriftMode::Repair),
        Some(Value::String(mode)) if mode == "Repair" => Ok(DriftMode::Repair),
        Some(Value::String(mode)) if mode == "Warn" => Ok(DriftMode::Warn),
        Some(other) => Err(error(
            "drift.mode".into(),
            format!("{other} is not a mode; write Repair (the default) or Warn"),
        )),
    }
}

/// Fields of some objects that someone else owns (`drift.ignore`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ignored {
    rules: Vec<IgnoreRule>,
}

/// One entry of `drift.ignore`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct IgnoreRule {
    group: String,
    kind: String,
    name: Option<String>,
    /// Each path's segments (JSON pointer, unescaped).
    paths: Vec<Vec<String>>,
}

/// The most entries, and paths per entry, `drift.ignore` may hold.
const MAX_IGNORED: usize = 32;

impl Ignored {
    /// Reads `drift.ignore`; the error names the entry and field.
    pub fn from_parameters(
        parameters: Option<&Map<String, Value>>,
    ) -> Result<Self, ParameterError> {
        let error = |name: String, problem: &str| ParameterError {
            name,
            problem: problem.to_owned(),
        };
        let Some(list) = parameters
            .and_then(|parameters| parameters.get("drift"))
            .and_then(|drift| drift.get("ignore"))
        else {
            return Ok(Self::default());
        };
        let entries = list
            .as_array()
            .filter(|entries| entries.len() <= MAX_IGNORED)
            .ok_or_else(|| {
                error(
                    "drift.ignore".into(),
                    "must be a list of at most 32 {group, kind, name?, paths}",
                )
            })?;
        let mut rules = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let at = format!("drift.ignore[{index}]");
            let text = |field: &str| entry.get(field).and_then(Value::as_str);
            let kind = text("kind").ok_or_else(|| {
                error(
                    format!("{at}.kind"),
                    "is required (the kind whose fields are ignored, e.g. Deployment)",
                )
            })?;
            let paths = entry
                .get("paths")
                .and_then(Value::as_array)
                .filter(|paths| !paths.is_empty() && paths.len() <= MAX_IGNORED)
                .ok_or_else(|| {
                    error(
                        format!("{at}.paths"),
                        "must list 1 to 32 JSON pointers, e.g. /spec/replicas",
                    )
                })?;
            let paths = paths
                .iter()
                .enumerate()
                .map(|(number, path)| {
                    let at = format!("{at}.paths[{number}]");
                    let path = path.as_str().ok_or_else(|| {
                        error(at.clone(), "must be a JSON pointer, e.g. /spec/replicas")
                    })?;
                    pointer(path).map_err(|problem| error(at, &problem))
                })
                .collect::<Result<Vec<_>, _>>()?;
            rules.push(IgnoreRule {
                group: text("group").unwrap_or_default().to_owned(),
                kind: kind.to_owned(),
                name: text("name").map(str::to_owned),
                paths,
            });
        }
        Ok(Self { rules })
    }

    /// Whether an entry names objects of `group` and `kind` (and `name`).
    pub fn selects(&self, group: &str, kind: &str, name: &str) -> bool {
        self.paths_of(group, kind, name).next().is_some()
    }

    /// Whether nothing is ignored.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The ignored paths of the object of `group`, `kind` and `name`.
    fn paths_of<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Vec<String>> + 'a {
        self.rules
            .iter()
            .filter(move |rule| {
                rule.group == group
                    && rule.kind == kind
                    && rule.name.as_deref().is_none_or(|only| only == name)
            })
            .flat_map(|rule| rule.paths.iter())
    }

    /// `desired` with each ignored field as `live` has it (left as the
    /// content has it where `live` has none).
    pub fn keep_live(&self, group: &str, kind: &str, desired: &mut Value, live: &Value) {
        let name = desired
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for path in self.paths_of(group, kind, &name) {
            if let Some(value) = at(live, path) {
                set(desired, path, value.clone());
            }
        }
    }

    /// Whether every field in `fields` (paths, as managedFields list them)
    /// is an ignored one of that object, or under one.
    pub fn covers_all(&self, group: &str, kind: &str, name: &str, fields: &[Vec<String>]) -> bool {
        !fields.is_empty()
            && fields.iter().all(|field| {
                self.paths_of(group, kind, name)
                    .any(|path| field.starts_with(path))
            })
    }
}

/// The segments of a JSON pointer that may be ignored.
fn pointer(path: &str) -> Result<Vec<String>, String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!(
            "{path:?} is not a JSON pointer: start it with /, e.g. /spec/replicas"
        ));
    };
    let segments: Vec<String> = rest
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect();
    if segments.iter().any(String::is_empty) {
        return Err(format!("{path:?} has an empty segment"));
    }
    let ours = match segments.as_slice() {
        [top] => matches!(top.as_str(), "apiVersion" | "kind" | "metadata"),
        [metadata, field, ..] if metadata == "metadata" => match field.as_str() {
            "labels" | "annotations" => {
                segments.get(2).is_none_or(|key| key.contains("pakket.dev"))
            }
            _ => true,
        },
        _ => false,
    };
    if ours {
        return Err(format!(
            "{path:?} holds what Pakket records on the object (its kind, name, namespace, ownership); \
             only other fields, labels and annotations can be ignored"
        ));
    }
    Ok(segments)
}

/// The value at `path` in `object`.
fn at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |node, segment| match node {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => items.get(segment.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Sets `path` in `object` to `value`, making the objects on the way.
fn set(object: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = object;
    for segment in parents {
        let Value::Object(map) = node else { return };
        node = map
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(map) = node {
        map.insert(last.clone(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(value: Value) -> Result<DriftMode, String> {
        from_parameters(value.as_object()).map_err(|error| error.to_string())
    }

    #[test]
    fn repair_is_the_default_and_warn_is_chosen_by_name() {
        assert_eq!(read(json!({})), Ok(DriftMode::Repair));
        assert_eq!(read(json!({"drift": {}})), Ok(DriftMode::Repair));
        assert_eq!(
            read(json!({"drift": {"mode": "Warn"}})),
            Ok(DriftMode::Warn)
        );
        assert_eq!(
            read(json!({"drift": {"mode": "Repair"}})),
            Ok(DriftMode::Repair)
        );
    }

    #[test]
    fn anything_else_is_refused_naming_the_parameter() {
        assert!(
            read(json!({"drift": "Warn"}))
                .unwrap_err()
                .starts_with("parameter drift: ")
        );
        assert!(
            read(json!({"drift": {"mode": "warn"}}))
                .unwrap_err()
                .starts_with("parameter drift.mode: ")
        );
        assert!(
            read(json!({"drift": {"ignored": []}}))
                .unwrap_err()
                .starts_with("parameter drift.ignored: ")
        );
    }

    fn ignored(value: Value) -> Result<Ignored, String> {
        Ignored::from_parameters(value.as_object()).map_err(|error| error.to_string())
    }

    #[test]
    fn ignored_fields_keep_the_clusters_value_and_a_change_to_them_alone_is_no_drift() {
        let rules = ignored(json!({"drift": {"mode": "Repair", "ignore": [
            {"group": "apps", "kind": "Deployment", "paths": ["/spec/replicas"]},
            {"group": "", "kind": "ConfigMap", "name": "tuned", "paths": ["/data/level"]},
        ]}}))
        .unwrap();
        assert_eq!(
            read(json!({"drift": {"ignore": []}})),
            Ok(DriftMode::Repair)
        );
        let mut desired =
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "paused": false}});
        let live = json!({"metadata": {"name": "web"}, "spec": {"replicas": 5, "paused": true}});
        rules.keep_live("apps", "Deployment", &mut desired, &live);
        assert_eq!(desired["spec"], json!({"replicas": 5, "paused": false}));
        // Where the cluster has no value, the content's stays.
        let mut fresh = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2}});
        rules.keep_live("apps", "Deployment", &mut fresh, &json!({"metadata": {}}));
        assert_eq!(fresh["spec"]["replicas"], 2);
        // By name, when the entry names one.
        let mut other = json!({"metadata": {"name": "plain"}, "data": {"level": "1"}});
        rules.keep_live(
            "",
            "ConfigMap",
            &mut other,
            &json!({"data": {"level": "9"}}),
        );
        assert_eq!(other["data"]["level"], "1");

        let field = |path: &str| {
            path.split('/')
                .skip(1)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert!(rules.covers_all("apps", "Deployment", "web", &[field("/spec/replicas")]));
        assert!(!rules.covers_all(
            "apps",
            "Deployment",
            "web",
            &[
                field("/spec/replicas"),
                field("/spec/template/spec/containers")
            ]
        ));
        assert!(!rules.covers_all("apps", "StatefulSet", "web", &[field("/spec/replicas")]));
        assert!(!rules.covers_all("apps", "Deployment", "web", &[]));
    }

    #[test]
    fn what_pakket_records_cannot_be_ignored_and_mistakes_name_the_field() {
        let problem = |entry: Value| ignored(json!({"drift": {"ignore": [entry]}})).unwrap_err();
        assert!(
            problem(json!({"kind": "Deployment", "paths": ["/metadata/name"]}))
                .starts_with("parameter drift.ignore[0].paths[0]: ")
        );
        assert!(
            problem(json!({"kind": "Deployment", "paths": ["/metadata/labels/core.pakket.dev~1instance"]}))
                .contains("what Pakket records")
        );
        assert!(
            problem(json!({"kind": "Deployment", "paths": ["spec/replicas"]}))
                .contains("start it with /")
        );
        assert!(
            problem(json!({"paths": ["/spec/replicas"]}))
                .starts_with("parameter drift.ignore[0].kind: ")
        );
        assert!(
            problem(json!({"kind": "Deployment", "paths": []}))
                .starts_with("parameter drift.ignore[0].paths: ")
        );
        assert!(
            ignored(json!({"drift": {"ignore": [{"kind": "Deployment", "paths": ["/metadata/annotations/example.com~1owner"]}]}}))
                .is_ok(),
            "a label or annotation of someone else's may be ignored"
        );
    }
}
