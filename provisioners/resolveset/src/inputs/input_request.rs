//! An Input's constraints as the engine's [`Request`]: the same engine
//! and the same request type the resolver API resolves with.
//!
//! One subject per Input: `olm.catalog` (a package in a catalog, maybe a
//! channel), `olm.name`, `olm.gvk` or `olm.label`; `olm.packageVersion`
//! narrows a package subject to a version or range (alone, it is the
//! subject). Mistakes are refused naming the field, as
//! `spec.constraints[1].value.version`, with what to write instead.

use pakket_engine::Range;
use pakket_engine::resolve::Request;
use serde_json::Value;

use crate::inputs::input::InputConstraint;

/// A constraint the Input cannot be resolved with: the field and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The field, as a path into the Input (`spec.constraints[0].value.package`).
    pub field: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

fn error(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        field: field.into(),
        message: message.into(),
    }
}

/// A string field of an object value, trimmed; an error if absent or empty.
fn text<'a>(value: &'a Value, at: &str, key: &str) -> Result<&'a str, InputError> {
    match value.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim()),
        Some(_) => Err(error(
            format!("{at}.value.{key}"),
            "must be a non-empty string",
        )),
        None => Err(error(format!("{at}.value.{key}"), "is required")),
    }
}

/// A whole-string value (`olm.name`, `olm.label`).
fn scalar<'a>(value: &'a Value, at: &str, what: &str) -> Result<&'a str, InputError> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim()),
        _ => Err(error(
            format!("{at}.value"),
            format!("must be {what} as a non-empty string"),
        )),
    }
}

/// A version (`2.0.0`, meaning exactly it) or a range (`>=2.0.0 <3.0.0`).
pub fn version_range(text: &str) -> Result<Range, String> {
    let exact = text.trim_start_matches('v');
    let written = if pakket_engine::Version::parse(exact).is_ok() {
        format!("={exact}")
    } else {
        text.to_owned()
    };
    Range::parse(&written).map_err(|problem| {
        format!("{problem}; write a version (2.0.0) or a range (>=2.0.0 <3.0.0)")
    })
}

fn version_or_range(text: &str, at: &str) -> Result<Range, InputError> {
    version_range(text).map_err(|problem| error(format!("{at}.value.version"), problem))
}

/// The engine request for `constraints` (the Input's, then its class's).
/// `cel` and `minKubeVersion`, which look at a bundle itself, are read by
/// [`crate::inputs::input_filter::filters_of`] and narrow this request.
pub fn request_of(constraints: &[(String, &InputConstraint)]) -> Result<Request, InputError> {
    let mut subject: Option<(String, Request)> = None;
    let mut version: Option<(String, Range, String)> = None;
    for (at, constraint) in constraints {
        let value = &constraint.value;
        match constraint.type_.as_str() {
            "olm.packageVersion" => {
                if version.is_some() {
                    return Err(error(
                        at.as_str(),
                        "an Input takes one olm.packageVersion; combine the ranges in one (>=1.0.0 <2.0.0)",
                    ));
                }
                let package = text(value, at, "package")?.to_owned();
                let written = text(value, at, "version")?;
                let range = version_or_range(written, at)?;
                version = Some((at.clone(), range, package));
            }
            // They look at a bundle itself: `crate::inputs::input_filter`.
            "cel" | "minKubeVersion" => {}
            other => {
                let request = subject_of(other, value, at)?;
                if let Some((first, _)) = &subject {
                    return Err(error(
                        at.as_str(),
                        format!(
                            "an Input names one of olm.catalog, olm.name, olm.gvk and olm.label, and {first} already does; write another Input for another bundle"
                        ),
                    ));
                }
                subject = Some((at.clone(), request));
            }
        }
    }
    combined(subject, version)
}

/// The bundle one constraint of type `kind` names: a package in a
/// catalog, a bundle name, a label or an API.
fn subject_of(kind: &str, value: &Value, at: &str) -> Result<Request, InputError> {
    match kind {
        "olm.catalog" => {
            let package = text(value, at, "package")?.to_owned();
            let name = text(value, at, "name")?.to_owned();
            let channel = match value.get("channel") {
                None | Some(Value::Null) => None,
                Some(_) => Some(text(value, at, "channel")?.to_owned()),
            };
            Ok(Request::Package {
                package,
                channel,
                range: None,
                catalog: Some(name),
            })
        }
        "olm.name" => Ok(Request::BundleName(
            scalar(value, at, "a bundle name")?.to_owned(),
        )),
        "olm.label" => Ok(Request::Label(scalar(value, at, "a label")?.to_owned())),
        "olm.gvk" => {
            let group = match value.get("group") {
                Some(Value::String(group)) => group.trim(),
                None | Some(Value::Null) => "",
                Some(_) => {
                    return Err(error(
                        format!("{at}.value.group"),
                        "must be a string (empty for the core group)",
                    ));
                }
            };
            let api_version = text(value, at, "version")?;
            let kind = text(value, at, "kind")?;
            Ok(Request::Gvk(format!("{group}/{api_version}/{kind}")))
        }
        other => Err(error(
            format!("{at}.type"),
            format!(
                "{other:?} is not a constraint type; use olm.catalog, olm.packageVersion, olm.name, olm.gvk or olm.label"
            ),
        )),
    }
}

/// The request the subject and the version range make together.
fn combined(
    subject: Option<(String, Request)>,
    version: Option<(String, Range, String)>,
) -> Result<Request, InputError> {
    match (subject, version) {
        (
            Some((
                _,
                Request::Package {
                    package,
                    channel,
                    catalog,
                    ..
                },
            )),
            Some((at, range, versioned)),
        ) => {
            if versioned != package {
                return Err(error(
                    format!("{at}.value.package"),
                    format!(
                        "names package {versioned}, but the Input asks for package {package}; name the same package"
                    ),
                ));
            }
            Ok(Request::Package {
                package,
                channel,
                range: Some(range),
                catalog,
            })
        }
        (Some((first, _)), Some((at, _, _))) => Err(error(
            at,
            format!(
                "olm.packageVersion narrows a package, but {first} asks for a bundle by name, API or label; drop one of them"
            ),
        )),
        (Some((_, request)), None) => Ok(request),
        (None, Some((_, range, package))) => Ok(Request::Package {
            package,
            channel: None,
            range: Some(range),
            catalog: None,
        }),
        (None, None) => Err(error(
            "spec.constraints",
            "names no bundle; add an olm.catalog, olm.packageVersion, olm.name, olm.gvk or olm.label constraint",
        )),
    }
}

/// The Input's constraints, then its class's, each with its field path.
pub fn with_fields<'a>(
    input: &'a [InputConstraint],
    class_name: &str,
    class: &'a [InputConstraint],
) -> Vec<(String, &'a InputConstraint)> {
    input
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("spec.constraints[{i}]"), c))
        .chain(class.iter().enumerate().map(move |(i, c)| {
            (
                format!("InputClass {class_name} spec.parameters.constraints[{i}]"),
                c,
            )
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn constraints(list: Value) -> Vec<InputConstraint> {
        serde_json::from_value(list).unwrap()
    }

    fn request(list: Value) -> Result<Request, InputError> {
        let list = constraints(list);
        request_of(&with_fields(&list, "c", &[]))
    }

    #[test]
    fn a_catalog_subscription_narrowed_by_a_version_or_range() {
        let plain = request(json!([
            {"type": "olm.catalog", "value": {"name": "community", "package": "etcd", "channel": "alpha"}}
        ]))
        .unwrap();
        assert_eq!(
            plain,
            Request::Package {
                package: "etcd".into(),
                channel: Some("alpha".into()),
                range: None,
                catalog: Some("community".into())
            }
        );
        let pinned = request(json!([
            {"type": "olm.catalog", "value": {"name": "community", "package": "etcd"}},
            {"type": "olm.packageVersion", "value": {"package": "etcd", "version": "0.9.2"}}
        ]))
        .unwrap();
        let Request::Package { range, .. } = pinned else {
            panic!("a package request")
        };
        let range = range.unwrap();
        assert!(range.contains(&pakket_engine::Version::parse("0.9.2").unwrap()));
        assert!(!range.contains(&pakket_engine::Version::parse("0.9.4").unwrap()));
        let ranged = request(json!([
            {"type": "olm.packageVersion", "value": {"package": "etcd", "version": ">=0.9.0 <0.9.4"}}
        ]))
        .unwrap();
        assert!(matches!(
            ranged,
            Request::Package {
                catalog: None,
                range: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn names_apis_and_labels_are_subjects_of_their_own() {
        assert_eq!(
            request(json!([{"type": "olm.name", "value": "etcd.v0.9.4"}])).unwrap(),
            Request::BundleName("etcd.v0.9.4".into())
        );
        assert_eq!(
            request(json!([{"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}}])).unwrap(),
            Request::Gvk("etcd.database.coreos.com/v1beta2/EtcdCluster".into())
        );
        assert_eq!(
            request(json!([{"type": "olm.label", "value": "LTS"}])).unwrap(),
            Request::Label("LTS".into())
        );
    }

    #[test]
    fn mistakes_name_the_field_and_what_to_write() {
        let cases = [
            (json!([]), "spec.constraints", "names no bundle"),
            (
                json!([{"type": "olm.catalog", "value": {"name": "c"}}]),
                "spec.constraints[0].value.package",
                "is required",
            ),
            (
                json!([{"type": "olm.packageVersion", "value": {"package": "etcd", "version": ">=x"}}]),
                "spec.constraints[0].value.version",
                "write a version (2.0.0) or a range",
            ),
            (
                json!([{"type": "olm.name", "value": "a"}, {"type": "olm.label", "value": "b"}]),
                "spec.constraints[1]",
                "write another Input",
            ),
            (
                json!([
                    {"type": "olm.catalog", "value": {"name": "c", "package": "etcd"}},
                    {"type": "olm.packageVersion", "value": {"package": "other", "version": "1.0.0"}}
                ]),
                "spec.constraints[1].value.package",
                "name the same package",
            ),
            (
                json!([{"type": "olm.name", "value": 3}]),
                "spec.constraints[0].value",
                "non-empty string",
            ),
        ];
        for (list, field, words) in cases {
            let refused = request(list.clone()).unwrap_err();
            assert_eq!(refused.field, field, "{list}");
            assert!(refused.message.contains(words), "{list}: {refused}");
        }
    }
}
