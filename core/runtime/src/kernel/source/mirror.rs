//! Image mirrors: the class parameter `mirrors: [{source, mirror}]`, which
//! pulls an image ref that starts with `source` from `mirror` instead
//! (OLM's ImageDigestMirrorSet), so catalogs that name public registries
//! install in a disconnected cluster from its own registry.
//!
//! A source matches a ref at a path boundary only (`quay.io/org` matches
//! `quay.io/org/etcd:v1`, never `quay.io/organization/...`); the longest
//! matching source wins. The tag or digest is kept, so a digest-pinned ref
//! is pulled by the same digest from the mirror. The mirror is an admin's
//! setting (a class parameter), never a user's.

use serde_json::{Map, Value};

use crate::class_parameters::ParameterError;

/// One mirror.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// A registry, or a registry and a path (`quay.io/openshift-community-operators`).
    pub source: String,
    /// Where the same images are (`registry.internal:5000/mirror`).
    pub mirror: String,
}

fn refused(problem: String) -> ParameterError {
    ParameterError {
        name: "mirrors".into(),
        problem,
    }
}

/// The class's `mirrors`, checked; none when it sets none.
pub fn from_parameters(
    parameters: Option<&Map<String, Value>>,
) -> Result<Vec<Mirror>, ParameterError> {
    let Some(value) = parameters.and_then(|p| p.get("mirrors")) else {
        return Ok(Vec::new());
    };
    let usage = "write [{source: quay.io/org, mirror: registry.internal:5000/org}]";
    let list = value
        .as_array()
        .ok_or_else(|| refused(format!("is not a list; {usage}")))?;
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |key: &str| {
                let text = item
                    .get(key)
                    .and_then(Value::as_str)
                    .map(|s| s.trim().trim_end_matches('/'))
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| refused(format!("[{i}].{key} is missing or empty; {usage}")))?;
                if text.contains("://") {
                    return Err(refused(format!(
                        "[{i}].{key} {text:?} has a scheme; write the registry and path only ({usage})"
                    )));
                }
                Ok(text.to_owned())
            };
            Ok(Mirror {
                source: field("source")?,
                mirror: field("mirror")?,
            })
        })
        .collect()
}

/// `reference` (`docker://…` or `oci://…`) as pulled through the longest
/// matching mirror; `None` when no mirror matches.
pub fn rewrite(reference: &str, mirrors: &[Mirror]) -> Option<String> {
    let (scheme, image) = reference.split_once("://")?;
    let mirror = mirrors
        .iter()
        .filter(|m| {
            image
                .strip_prefix(m.source.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', ':', '@']))
        })
        .max_by_key(|m| m.source.len())?;
    Some(format!(
        "{scheme}://{}{}",
        mirror.mirror,
        &image[mirror.source.len()..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mirrors(value: Value) -> Result<Vec<Mirror>, ParameterError> {
        let parameters: Map<String, Value> =
            serde_json::from_value(json!({ "mirrors": value })).unwrap();
        from_parameters(Some(&parameters))
    }

    #[test]
    fn refs_are_pulled_through_the_longest_mirror_at_a_path_boundary() {
        let list = mirrors(json!([
            {"source": "quay.io/org", "mirror": "local:5000/org"},
            {"source": "quay.io/org/special", "mirror": "local:5000/special/"},
        ]))
        .unwrap();
        assert_eq!(
            rewrite("docker://quay.io/org/etcd:v0.9.2", &list).as_deref(),
            Some("docker://local:5000/org/etcd:v0.9.2")
        );
        assert_eq!(
            rewrite("docker://quay.io/org/special/x@sha256:abc", &list).as_deref(),
            Some("docker://local:5000/special/x@sha256:abc"),
            "the longest source wins; the digest is kept"
        );
        assert_eq!(rewrite("docker://quay.io/organization/x:1", &list), None);
        assert_eq!(rewrite("docker://docker.io/library/x:1", &list), None);
    }

    #[test]
    fn bad_mirrors_name_the_entry_and_what_to_write() {
        assert_eq!(mirrors(json!([])).unwrap(), Vec::new());
        let missing = mirrors(json!([{"source": "quay.io"}])).unwrap_err();
        assert_eq!(missing.name, "mirrors");
        assert!(
            missing.problem.starts_with("[0].mirror is missing"),
            "{}",
            missing.problem
        );
        let scheme = mirrors(json!([{"source": "https://quay.io", "mirror": "x"}])).unwrap_err();
        assert!(
            scheme.problem.contains("has a scheme"),
            "{}",
            scheme.problem
        );
        assert!(
            mirrors(json!("quay.io"))
                .unwrap_err()
                .problem
                .contains("is not a list")
        );
    }
}
