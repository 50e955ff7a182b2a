//! `namespaceTemplate`: the labels and annotations the install namespace
//! gets when Pakket creates it (Pod Security labels first of all). A
//! namespace that already exists is used as it is and never relabelled.
//!
//! An admin sets it on the ProvisionerClass (parameter
//! `namespaceTemplate`) for every Instance of the class; an Instance (or
//! the Operator it stands for) may add its own in `spec.config`, but never
//! change a key the class sets: a class that enforces
//! `pod-security.kubernetes.io/enforce: restricted` keeps it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::ConfigError;

/// Where an Instance sets it.
pub const FIELD: &str = "spec.config.namespaceTemplate";
/// Where the class sets it.
pub const CLASS_PARAMETER: &str = "the ProvisionerClass parameter namespaceTemplate";

/// Labels and annotations for a namespace Pakket creates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceTemplate {
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its annotations.
    pub annotations: BTreeMap<String, String>,
}

impl NamespaceTemplate {
    /// The class's template, with what `own` adds under it: the class's
    /// keys win.
    pub fn under(self, own: Self) -> Self {
        let mut merged = own;
        merged.labels.extend(self.labels);
        merged.annotations.extend(self.annotations);
        merged
    }
}

/// Reads a template written at `field` (`{labels: {...}, annotations:
/// {...}}`), each key and label value checked as Kubernetes checks them.
pub fn read(value: &Value, field: &str) -> Result<NamespaceTemplate, ConfigError> {
    let error = |field: String, problem: String| ConfigError { field, problem };
    let Some(object) = value.as_object() else {
        return Err(error(
            field.into(),
            format!("{value} is not an object; write {{labels: {{...}}, annotations: {{...}}}}"),
        ));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !["labels", "annotations"].contains(&key.as_str()))
    {
        return Err(error(
            format!("{field}.{unknown}"),
            "a namespace template has labels and annotations only".into(),
        ));
    }
    let mut template = NamespaceTemplate::default();
    for (part, map) in [
        ("labels", &mut template.labels),
        ("annotations", &mut template.annotations),
    ] {
        let Some(items) = object.get(part) else {
            continue;
        };
        let Some(items) = items.as_object() else {
            return Err(error(
                format!("{field}.{part}"),
                format!("{items} is not a map of strings"),
            ));
        };
        for (key, item) in items {
            let at = format!("{field}.{part}[{key:?}]");
            let Some(text) = item.as_str() else {
                return Err(error(at, format!("{item} is not a string; quote it")));
            };
            if let Some(problem) = key_problem(key) {
                return Err(error(at, problem));
            }
            if part == "labels"
                && let Some(problem) = label_value_problem(text)
            {
                return Err(error(at, problem));
            }
            map.insert(key.clone(), text.to_owned());
        }
    }
    Ok(template)
}

/// Why `key` is not a label or annotation key (`[prefix/]name`).
fn key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
    // A DNS subdomain: labels as namespace names are, joined by dots.
    let prefix_ok = prefix.is_none_or(|prefix| {
        prefix.len() <= 253 && prefix.split('.').all(crate::config::is_dns_label)
    });
    (!name_ok || !prefix_ok).then(|| {
        "is not a valid key: an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit".into()
    })
}

/// Why `value` is not a label value.
fn label_value_problem(value: &str) -> Option<String> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && value.as_bytes()[0].is_ascii_alphanumeric()
            && value.as_bytes()[value.len() - 1].is_ascii_alphanumeric());
    (!ok).then(|| {
        format!("{value:?} is not a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_class_keys_win_and_the_instance_adds_its_own() {
        let class = read(
            &json!({"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}),
            CLASS_PARAMETER,
        )
        .unwrap();
        let own = read(
            &json!({
                "labels": {"pod-security.kubernetes.io/enforce": "privileged", "team": "a"},
                "annotations": {"example.com/owner": "team a"},
            }),
            FIELD,
        )
        .unwrap();
        let merged = class.under(own);
        assert_eq!(
            merged.labels["pod-security.kubernetes.io/enforce"],
            "restricted"
        );
        assert_eq!(merged.labels["team"], "a");
        assert_eq!(merged.annotations["example.com/owner"], "team a");
    }

    #[test]
    fn wrong_keys_and_values_are_named() {
        let bad_value = read(&json!({"labels": {"team": "a b"}}), FIELD).unwrap_err();
        assert_eq!(
            bad_value.field,
            "spec.config.namespaceTemplate.labels[\"team\"]"
        );
        let bad_key = read(&json!({"annotations": {"-x": "y"}}), FIELD).unwrap_err();
        assert!(bad_key.problem.contains("not a valid key"));
        let unknown = read(&json!({"label": {}}), FIELD).unwrap_err();
        assert_eq!(unknown.field, "spec.config.namespaceTemplate.label");
        let not_string = read(&json!({"labels": {"n": 1}}), FIELD).unwrap_err();
        assert!(not_string.problem.contains("quote it"));
    }
}
