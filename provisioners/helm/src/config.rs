//! The Instance's `spec.config` for a chart: `releaseName` (Helm's
//! `.Release.Name`; default the Instance's name), `namespace` (the
//! release's namespace, where objects that name none go; default
//! `default`, as `helm install` without `-n`), `createNamespace` (make the
//! namespace if it is missing, as `--create-namespace`; it is then the
//! Instance's, and an existing one is used, never adopted) and `values`
//! (the chart's values, over its `values.yaml`). `namespaceOnly` (written
//! by the HelmChart controller for a namespace owner's chart) confines
//! everything to the release's namespace ([`crate::provisioner`]). Each
//! problem names its field; nothing falls back silently.

use serde_json::{Map, Value, json};

/// The fields read.
const KNOWN: [&str; 5] = [
    "releaseName",
    "namespace",
    "createNamespace",
    "namespaceOnly",
    "values",
];

/// Helm's own limit on a release name.
const MAX_RELEASE_NAME: usize = 53;

/// What the Instance asks of its chart.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartConfig {
    /// `.Release.Name`.
    pub release_name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// Whether the namespace is made if missing.
    pub create_namespace: bool,
    /// Whether everything must be namespaced and in the release's
    /// namespace.
    pub namespace_only: bool,
    /// The values.
    pub values: Value,
}

/// A field of `spec.config` that is wrong, and what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// `spec.config.values`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// Reads `config` for the Instance named `instance`.
pub fn read(
    config: Option<&Map<String, Value>>,
    instance: &str,
) -> Result<ChartConfig, ConfigError> {
    let empty = Map::new();
    let config = config.unwrap_or(&empty);
    if let Some((field, problem)) =
        pakket_runtime::provisioner::unread_config_field(config, &KNOWN, "the helm provisioner")
    {
        return Err(ConfigError {
            field,
            problem: format!("{problem} (a chart's values go under values)"),
        });
    }
    let release_name = match config.get("releaseName") {
        None => name(instance, "the Instance's name, the release name by default").map_err(
            |problem| ConfigError {
                field: "spec.config.releaseName".into(),
                problem: format!("{problem}; name the release here"),
            },
        )?,
        Some(value) => name_field(value, "spec.config.releaseName")?,
    };
    let namespace = match config.get("namespace") {
        None => "default".to_owned(),
        Some(value) => name_field(value, "spec.config.namespace")?,
    };
    let create_namespace = flag(config, "createNamespace")?;
    let namespace_only = flag(config, "namespaceOnly")?;
    if create_namespace && namespace_only {
        return Err(ConfigError {
            field: "spec.config.createNamespace".into(),
            problem: "a chart confined to its namespace (namespaceOnly) cannot make a namespace; install into one that exists".into(),
        });
    }
    let values = match config.get("values") {
        None => json!({}),
        Some(Value::Object(values)) => Value::Object(values.clone()),
        Some(other) => {
            return Err(ConfigError {
                field: "spec.config.values".into(),
                problem: format!(
                    "{other} is not a map; write the chart's values as a map, as in its values.yaml"
                ),
            });
        }
    };
    Ok(ChartConfig {
        release_name,
        namespace,
        create_namespace,
        namespace_only,
        values,
    })
}

/// `spec.config.<key>`: true, false, or absent (false).
fn flag(config: &Map<String, Value>, key: &str) -> Result<bool, ConfigError> {
    match config.get(key) {
        None => Ok(false),
        Some(Value::Bool(set)) => Ok(*set),
        Some(other) => Err(ConfigError {
            field: format!("spec.config.{key}"),
            problem: format!("{other} is not true or false"),
        }),
    }
}

fn name_field(value: &Value, field: &str) -> Result<String, ConfigError> {
    let text = value.as_str().ok_or_else(|| ConfigError {
        field: field.into(),
        problem: format!("{value} is not a string"),
    })?;
    name(text, &format!("{text:?}")).map_err(|problem| ConfigError {
        field: field.into(),
        problem,
    })
}

/// `text` if it is a DNS-1123 label Helm takes (at most 53 characters).
fn name(text: &str, what: &str) -> Result<String, String> {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let valid = !text.is_empty()
        && text.chars().all(|c| alphanumeric(c) || c == '-')
        && text.starts_with(alphanumeric)
        && text.ends_with(alphanumeric);
    if !valid {
        return Err(format!(
            "{what} is not a name Helm takes (lowercase letters, digits and '-', starting and ending with a letter or digit)"
        ));
    }
    if text.len() > MAX_RELEASE_NAME {
        return Err(format!(
            "{what} has {} characters; Helm takes at most {MAX_RELEASE_NAME}",
            text.len()
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_defaults_are_helms_and_each_wrong_field_is_named() {
        let plain = read(None, "podinfo").unwrap();
        assert_eq!(
            (
                plain.release_name.as_str(),
                plain.namespace.as_str(),
                &plain.values
            ),
            ("podinfo", "default", &json!({}))
        );
        let given = read(
            Some(&config(
                json!({"releaseName": "web", "namespace": "team-a", "values": {"replicaCount": 2}}),
            )),
            "podinfo",
        )
        .unwrap();
        assert_eq!(given.release_name, "web");
        assert_eq!(given.namespace, "team-a");
        assert_eq!(given.values["replicaCount"], 2);
        for (written, field, says) in [
            (
                json!({"replicas": 2}),
                "spec.config.replicas",
                "go under values",
            ),
            (json!({"values": [1]}), "spec.config.values", "is not a map"),
            (
                json!({"namespace": "Team_A"}),
                "spec.config.namespace",
                "not a name Helm takes",
            ),
            (
                json!({"releaseName": 7}),
                "spec.config.releaseName",
                "is not a string",
            ),
        ] {
            let error = read(Some(&config(written)), "podinfo").unwrap_err();
            assert_eq!(error.field, field);
            assert!(error.problem.contains(says), "{error:?}");
        }
        let long = "a".repeat(60);
        let error = read(None, &long).unwrap_err();
        assert_eq!(error.field, "spec.config.releaseName");
        assert!(error.problem.contains("at most 53"), "{error:?}");
    }
}
