//! Where a child installs: the resolveset class's `installNamespace`, a
//! name or a pattern (`{package}-system`, as OLM v1 names install
//! namespaces), and its `namespaceTemplate`, the labels and annotations
//! (Pod Security first of all) that registry-v1 gives the namespace when
//! it creates it. What the package's owner asks for in `spec.config` adds
//! to the template but never changes a key the class sets; her
//! `installNamespace` still wins over the class's, as before.

use serde_json::{Map, Value};

use pakket_runtime::ObjectsError;

/// Where the class sets the namespace.
const NAMESPACE_FIELD: &str = "ProvisionerClass spec.parameters.installNamespace";
/// Where the class sets the template.
const TEMPLATE_FIELD: &str = "ProvisionerClass spec.parameters.namespaceTemplate";
/// The placeholder a pattern names the package with.
const PACKAGE: &str = "{package}";

/// The install namespace for `package` under the class's parameters: the
/// pattern with the package put in, the name as given, or (no parameter)
/// the package's own name.
pub fn install_namespace(
    parameters: Option<&Map<String, Value>>,
    package: &str,
) -> Result<String, ObjectsError> {
    let Some(given) = parameters.and_then(|p| p.get("installNamespace")) else {
        return Ok(package.to_owned());
    };
    let pattern = given.as_str().ok_or_else(|| ObjectsError::Config {
        field: NAMESPACE_FIELD.into(),
        problem: "must be a namespace name or a pattern such as {package}-system".into(),
    })?;
    let namespace = pattern.replace(PACKAGE, package);
    if is_namespace_name(&namespace) {
        Ok(namespace)
    } else {
        Err(ObjectsError::Config {
            field: NAMESPACE_FIELD.into(),
            problem: format!(
                "{pattern:?} gives {namespace:?} for package {package}, which is not a namespace name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit); shorten the pattern or name the namespace in the Operator's spec.config.installNamespace"
            ),
        })
    }
}

/// Whether `name` is a DNS-1123 label, as a namespace's name must be.
fn is_namespace_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&name.len())
        && name.chars().all(|c| alphanumeric(c) || c == '-')
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
}

/// The child's `namespaceTemplate`: the class's, over what the package's
/// owner asked for (`own`, her config's); `None` when neither sets one.
pub fn namespace_template(
    parameters: Option<&Map<String, Value>>,
    own: Option<&Value>,
) -> Result<Option<Value>, ObjectsError> {
    let Some(class) = parameters.and_then(|p| p.get("namespaceTemplate")) else {
        return Ok(own.cloned());
    };
    let mut merged = Map::new();
    for part in ["labels", "annotations"] {
        let mut keys = own
            .and_then(|own| own.get(part))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match class.get(part) {
            None => {}
            Some(Value::Object(set)) if set.values().all(Value::is_string) => {
                keys.extend(set.clone());
            }
            Some(_) => {
                return Err(ObjectsError::Config {
                    field: format!("{TEMPLATE_FIELD}.{part}"),
                    problem: "must map names to string values".into(),
                });
            }
        }
        if !keys.is_empty() {
            merged.insert(part.to_owned(), Value::Object(keys));
        }
    }
    if let Some(unknown) = class.as_object().and_then(|class| {
        class
            .keys()
            .find(|key| !["labels", "annotations"].contains(&key.as_str()))
    }) {
        return Err(ObjectsError::Config {
            field: format!("{TEMPLATE_FIELD}.{unknown}"),
            problem: "is not a field of a namespace template; use labels and annotations".into(),
        });
    }
    Ok(Some(Value::Object(merged)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parameters(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_pattern_names_each_package_s_namespace_and_a_bad_one_is_named() {
        assert_eq!(install_namespace(None, "etcd").unwrap(), "etcd");
        let pattern = parameters(json!({"installNamespace": "{package}-system"}));
        assert_eq!(
            install_namespace(Some(&pattern), "etcd").unwrap(),
            "etcd-system"
        );
        let fixed = parameters(json!({"installNamespace": "operators"}));
        assert_eq!(
            install_namespace(Some(&fixed), "etcd").unwrap(),
            "operators"
        );
        let long = "p".repeat(60);
        let error = install_namespace(Some(&pattern), &long)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("installNamespace")
                && error.contains("not a namespace name")
                && error.contains("-system"),
            "{error}"
        );
        let upper = parameters(json!({"installNamespace": "Ops-{package}"}));
        assert!(install_namespace(Some(&upper), "etcd").is_err());
        let number = parameters(json!({"installNamespace": 3}));
        assert!(install_namespace(Some(&number), "etcd").is_err());
    }

    #[test]
    fn the_class_template_keeps_its_keys_over_the_owner_s_and_adds_to_them() {
        let class = parameters(json!({"namespaceTemplate": {"labels": {
            "pod-security.kubernetes.io/enforce": "restricted",
        }}}));
        let own = json!({"labels": {
            "pod-security.kubernetes.io/enforce": "privileged",
            "team": "storage",
        }, "annotations": {"owner": "alice"}});
        let merged = namespace_template(Some(&class), Some(&own))
            .unwrap()
            .unwrap();
        assert_eq!(
            merged,
            json!({
                "labels": {"pod-security.kubernetes.io/enforce": "restricted", "team": "storage"},
                "annotations": {"owner": "alice"},
            })
        );
        assert_eq!(
            namespace_template(None, Some(&own)).unwrap(),
            Some(own.clone())
        );
        assert_eq!(namespace_template(None, None).unwrap(), None);
        let bad = parameters(json!({"namespaceTemplate": {"labels": {"a": 1}}}));
        let error = namespace_template(Some(&bad), None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("namespaceTemplate.labels"), "{error}");
        let unknown = parameters(json!({"namespaceTemplate": {"finalizers": []}}));
        assert!(
            namespace_template(Some(&unknown), None)
                .unwrap_err()
                .to_string()
                .contains("finalizers")
        );
    }
}
