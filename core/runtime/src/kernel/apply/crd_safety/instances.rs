//! The custom resources a new CRD would break: each existing object of the
//! CRD's kind is validated ([`validate`]) against the new schema of every
//! version served before and after whose schema changes, and the ones that
//! fail are named with the field and what is wrong.
//!
//! Only what the upgrade makes worse counts: a problem the object already
//! has under the current schema (which validation ratcheting lets stand) is
//! not the upgrade's doing. A version whose schema does not change is not
//! listed at all, so re-applying the same CRD costs no reads. The work is
//! capped at [`CHECKED_AT_MOST`] objects per CRD, read in pages.
//!
//! The objects are listed through an `ApiResource` built from the CRD on the
//! cluster rather than through [`Kinds`]' discovery: the CRD names its
//! group, versions and plural already, and a kind resolved by [`Kinds`] gets
//! a drift watch, which a kind the Instance does not own should not.

use std::collections::BTreeSet;

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde_json::Value;

use super::validate::{self, Violation};
use crate::apply::{ApplyError, Kinds, api_message};

/// At most this many custom resources are checked per CRD; past it the
/// message says the check stopped.
pub const CHECKED_AT_MOST: usize = 10_000;
/// At most this many failing custom resources are named.
const NAMED_AT_MOST: usize = 20;
/// At most this many problems are named per custom resource.
const PROBLEMS_AT_MOST: usize = 3;
/// Objects per list call.
const PAGE: u32 = 500;

/// A version to check: its name and its current and new schemas.
#[derive(Debug, PartialEq)]
struct Check {
    version: String,
    old: Value,
    new: Value,
}

/// One existing custom resource the new schema refuses.
#[derive(Debug)]
struct Broken {
    namespace: Option<String>,
    name: String,
    version: String,
    violations: Vec<Violation>,
}

/// What the listing found.
#[derive(Debug, Default)]
struct Found {
    /// The first [`NAMED_AT_MOST`] that fail.
    named: Vec<Broken>,
    /// How many fail in all.
    failing: usize,
    /// Whether the check stopped at [`CHECKED_AT_MOST`].
    capped: bool,
}

impl Found {
    /// Counts `item` if the new schema of `check` breaks it (once, however
    /// many versions see it), naming it while there is room.
    fn judge(
        &mut self,
        item: DynamicObject,
        check: &Check,
        several: bool,
        seen: &mut BTreeSet<(Option<String>, Option<String>)>,
    ) {
        let key = (item.metadata.namespace.clone(), item.metadata.name.clone());
        if seen.contains(&key) {
            return;
        }
        let object = serde_json::to_value(&item).unwrap_or_default();
        let violations = worsened(&check.old, &check.new, &object);
        if violations.is_empty() {
            return;
        }
        seen.insert(key);
        self.failing += 1;
        if self.named.len() < NAMED_AT_MOST {
            self.named.push(Broken {
                namespace: item.metadata.namespace,
                name: item.metadata.name.unwrap_or_default(),
                version: if several {
                    check.version.clone()
                } else {
                    String::new()
                },
                violations,
            });
        }
    }
}

/// Why replacing `current` (the CRD on the cluster) with `desired` would
/// break existing custom resources, one entry per object named, after a
/// first that counts them; empty when none would break.
pub async fn breaking(
    kinds: &Kinds,
    current: &Value,
    desired: &Value,
) -> Result<Vec<String>, ApplyError> {
    let checks = checks(current, desired);
    if checks.is_empty() {
        return Ok(Vec::new());
    }
    let text = |pointer: &str| {
        current
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (crd, group, kind, plural) = (
        text("/metadata/name"),
        text("/spec/group"),
        text("/spec/names/kind"),
        text("/spec/names/plural"),
    );
    let several = checks.len() > 1;
    let mut found = Found::default();
    let mut seen = BTreeSet::new();
    let mut checked = 0;
    'versions: for check in &checks {
        let resource = ApiResource {
            group: group.clone(),
            version: check.version.clone(),
            api_version: format!("{group}/{}", check.version),
            kind: kind.clone(),
            plural: plural.clone(),
        };
        let api: Api<DynamicObject> = Api::all_with(kinds.client.clone(), &resource);
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = match api.list(&params).await {
                Ok(page) => page,
                // Not served (yet): no objects of this version to break.
                Err(kube::Error::Api(status)) if status.code == 404 => continue 'versions,
                Err(error) => {
                    return Err(ApplyError::Refused {
                        object: format!("CustomResourceDefinition {crd}"),
                        message: format!(
                            "its {kind} objects could not be listed to check them against the \
                             new schema: {}",
                            api_message(&error)
                        ),
                    });
                }
            };
            for item in page.items {
                if checked == CHECKED_AT_MOST {
                    found.capped = true;
                    break 'versions;
                }
                checked += 1;
                found.judge(item, check, several, &mut seen);
            }
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    if found.capped && found.failing == 0 {
        tracing::warn!(
            crd,
            checked = CHECKED_AT_MOST,
            "the CRD upgrade check stopped at its cap; the objects past it were not checked"
        );
    }
    Ok(refusal(&crd, &kind, &found))
}

/// The versions served by both CRDs whose schema changes.
fn checks(current: &Value, desired: &Value) -> Vec<Check> {
    let served = |crd: &Value| -> Vec<(String, Value)> {
        crd.pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|version| version.get("served").and_then(Value::as_bool) == Some(true))
            .filter_map(|version| {
                let name = version.get("name")?.as_str()?.to_owned();
                let schema = version
                    .pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .unwrap_or(Value::Null);
                Some((name, schema))
            })
            .collect()
    };
    let new_versions = served(desired);
    served(current)
        .into_iter()
        .filter_map(|(version, old)| {
            let (_, new) = new_versions.iter().find(|(name, _)| *name == version)?;
            (!new.is_null() && *new != old).then(|| Check {
                version,
                old,
                new: new.clone(),
            })
        })
        .collect()
}

/// How `object` fails `new` where it did not fail `old` already.
fn worsened(old: &Value, new: &Value, object: &Value) -> Vec<Violation> {
    let now = validate::violations(new, object);
    if now.is_empty() || old.is_null() {
        return now;
    }
    let before = validate::violations(old, object);
    now.into_iter()
        .filter(|violation| !before.contains(violation))
        .collect()
}

/// The refusal's entries for what was found: a count, then each object
/// named with its problems.
fn refusal(crd: &str, kind: &str, found: &Found) -> Vec<String> {
    if found.failing == 0 {
        return Vec::new();
    }
    let (count, verb) = match found.failing {
        1 => (format!("1 existing {kind} object"), "does"),
        many => (format!("{many} existing {kind} objects"), "do"),
    };
    let capped = if found.capped {
        format!(", of the first {CHECKED_AT_MOST} checked (the rest were not checked)")
    } else {
        String::new()
    };
    let mut entries = vec![format!(
        "CustomResourceDefinition {crd}: {count} {verb} not validate against the new schema{capped} \
         (fix or delete them, or keep the new schema accepting them)"
    )];
    for broken in &found.named {
        let object = match &broken.namespace {
            Some(namespace) => format!("{namespace}/{}", broken.name),
            None => broken.name.clone(),
        };
        let version = if broken.version.is_empty() {
            String::new()
        } else {
            format!(" (as {})", broken.version)
        };
        let mut problems: Vec<String> = broken
            .violations
            .iter()
            .take(PROBLEMS_AT_MOST)
            .map(ToString::to_string)
            .collect();
        if broken.violations.len() > PROBLEMS_AT_MOST {
            problems.push(format!(
                "and {} more problems",
                broken.violations.len() - PROBLEMS_AT_MOST
            ));
        }
        entries.push(format!("{kind} {object}{version}: {}", problems.join(", ")));
    }
    if found.failing > found.named.len() {
        entries.push(format!(
            "and {} more {kind} objects",
            found.failing - found.named.len()
        ));
    }
    entries
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(versions: Value) -> Value {
        json!({ "spec": { "versions": versions } })
    }

    fn version(name: &str, served: bool, size: &str) -> Value {
        json!({ "name": name, "served": served, "schema": { "openAPIV3Schema": {
            "type": "object", "properties": { "spec": { "type": "object", "properties": {
                "size": { "type": size } } } } } } })
    }

    #[test]
    fn only_versions_served_by_both_whose_schema_changes_are_checked() {
        let old = crd(json!([
            version("v1", true, "string"),
            version("v2", true, "string"),
            version("v3", false, "string"),
            version("v4", true, "string"),
        ]));
        let new = crd(json!([
            version("v1", true, "string"),
            version("v2", true, "integer"),
            version("v3", true, "integer"),
            version("v4", false, "integer"),
        ]));
        let versions: Vec<String> = checks(&old, &new).into_iter().map(|c| c.version).collect();
        assert_eq!(versions, ["v2"]);
    }

    #[test]
    fn a_problem_the_object_already_had_is_not_the_upgrades() {
        let schema = |extra: Value| {
            json!({ "type": "object", "properties": { "spec": { "type": "object",
                "required": ["name"], "properties": {
                    "name": { "type": "string" }, "size": extra } } } })
        };
        let old = schema(json!({ "type": "string" }));
        let new = schema(json!({ "type": "integer" }));
        let object = json!({ "spec": { "size": "three" } });
        let said: Vec<String> = worsened(&old, &new, &object)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            said,
            ["spec.size: a string of 5 characters is not of type integer"]
        );
    }

    fn broken(name: &str, problems: usize) -> Broken {
        Broken {
            namespace: Some("ns".into()),
            name: name.into(),
            version: String::new(),
            violations: (0..problems)
                .map(|n| Violation {
                    path: format!("spec.f{n}"),
                    problem: "\"x\" is not of type integer".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_refusal_names_each_object_and_counts_the_rest() {
        assert!(refusal("w.x", "Widget", &Found::default()).is_empty());
        let found = Found {
            named: vec![broken("a", 1), broken("b", 5)],
            failing: 30,
            capped: true,
        };
        assert_eq!(
            refusal("w.x", "Widget", &found),
            [
                "CustomResourceDefinition w.x: 30 existing Widget objects do not validate against \
                 the new schema, of the first 10000 checked (the rest were not checked) \
                 (fix or delete them, or keep the new schema accepting them)",
                "Widget ns/a: spec.f0: \"x\" is not of type integer",
                "Widget ns/b: spec.f0: \"x\" is not of type integer, spec.f1: \"x\" is not of type \
                 integer, spec.f2: \"x\" is not of type integer, and 2 more problems",
                "and 28 more Widget objects",
            ]
        );
    }
}
