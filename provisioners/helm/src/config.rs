//! The Instance's `spec.config` for a chart: `releaseName` (Helm's
//! `.Release.Name`; default the Instance's name), `namespace` (the
//! release's namespace, where objects that name none go; default
//! `default`, as `helm install` without `-n`), `createNamespace` (make the
//! namespace if it is missing, as `--create-namespace`; it is then the
//! Instance's, and an existing one is used, never adopted) and `values`
//! (the chart's values, over its `values.yaml`). `valuesFrom` (written by
//! the HelmChart controller from what it read on the requester's behalf,
//! [`crate::values_from`]) lists values merged in order under `values`: a
//! ConfigMap's as written, a Secret's by name and `resourceVersion` only.
//! `namespaceOnly` (written
//! by the HelmChart controller for a namespace owner's chart) confines
//! everything to the release's namespace ([`crate::provisioner`]). Each
//! problem names its field; nothing falls back silently.

use pakket_runtime::secret_values::SecretValueRef;
use serde_json::{Map, Value, json};

/// The fields read.
const KNOWN: [&str; 6] = [
    "releaseName",
    "namespace",
    "createNamespace",
    "namespaceOnly",
    "values",
    "valuesFrom",
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
    /// Values under `values`, merged in order.
    pub values_from: Vec<ValuesSource>,
}

/// One entry of `valuesFrom`.
#[derive(Clone, Debug, PartialEq)]
pub enum ValuesSource {
    /// A ConfigMap's values, as read.
    Written(Map<String, Value>),
    /// A Secret's, by where they come from: the text is the HelmChart
    /// controller's to hand over, kept under `name`.
    Secret {
        /// What the text is kept under ([`crate::values_from::secret_name`]).
        name: String,
        /// Where from, at which version.
        source: SecretValueRef,
    },
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
    let values_from = match config.get("valuesFrom") {
        None => Vec::new(),
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .map(|(index, entry)| values_source(index, entry, &namespace))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(ConfigError {
                field: "spec.config.valuesFrom".into(),
                problem: format!(
                    "{other} is not a list; the HelmChart controller writes it, write values instead"
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
        values_from,
    })
}

/// Entry `index` of `valuesFrom`: `{configMap, key, values}` or `{secret,
/// key, resourceVersion}`, the Secret in the release's namespace.
fn values_source(
    index: usize,
    entry: &Value,
    namespace: &str,
) -> Result<ValuesSource, ConfigError> {
    let field = format!("spec.config.valuesFrom[{index}]");
    let text = |key: &str| entry[key].as_str().map(str::to_owned);
    match (entry.get("configMap"), entry.get("secret")) {
        (Some(_), None) => match entry.get("values") {
            Some(Value::Object(values)) => Ok(ValuesSource::Written(values.clone())),
            _ => Err(ConfigError {
                field: format!("{field}.values"),
                problem: "is not a map of values".into(),
            }),
        },
        (None, Some(_)) => match (text("secret"), text("key"), text("resourceVersion")) {
            (Some(name), Some(key), Some(resource_version)) => Ok(ValuesSource::Secret {
                name: crate::values_from::secret_name(index),
                source: SecretValueRef {
                    namespace: namespace.to_owned(),
                    name,
                    key,
                    resource_version,
                },
            }),
            _ => Err(ConfigError {
                field,
                problem: "a Secret's entry names secret, key and resourceVersion, as strings".into(),
            }),
        },
        _ => Err(ConfigError {
            field,
            problem: "names neither one configMap nor one secret; the HelmChart controller writes valuesFrom, write values instead".into(),
        }),
    }
}

/// `sources` merged in order, then `values` over them: maps merge key by
/// key, anything else the later one replaces (Helm's and Flux's merge).
pub fn merged(sources: &[Map<String, Value>], values: &Value) -> Value {
    let mut into = Value::Object(Map::new());
    for source in sources {
        merge(&mut into, &Value::Object(source.clone()));
    }
    merge(&mut into, values);
    into
}

fn merge(into: &mut Value, over: &Value) {
    match (into, over) {
        (Value::Object(into), Value::Object(over)) => {
            for (key, value) in over {
                match into.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (into, over) => *into = over.clone(),
    }
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
        let secret = read(
            Some(&config(json!({"namespace": "team-a", "valuesFrom": [
                {"configMap": "defaults", "key": "values.yaml", "values": {"a": 1}},
                {"secret": "db", "key": "values.yaml", "resourceVersion": "7"},
            ]}))),
            "web",
        )
        .unwrap();
        assert_eq!(secret.values_from.len(), 2);
        assert!(matches!(
            &secret.values_from[1],
            ValuesSource::Secret { name, source } if name == "1" && source.namespace == "team-a" && source.resource_version == "7"
        ));
        let error = read(
            Some(&config(json!({"valuesFrom": [{"secret": "db"}]}))),
            "web",
        )
        .unwrap_err();
        assert_eq!(error.field, "spec.config.valuesFrom[0]");
        let long = "a".repeat(60);
        let error = read(None, &long).unwrap_err();
        assert_eq!(error.field, "spec.config.releaseName");
        assert!(error.problem.contains("at most 53"), "{error:?}");
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    #[test]
    fn later_sources_win_key_by_key_and_written_values_win_over_all() {
        let first = json!({"image": {"repository": "web", "tag": "v1"}, "replicaCount": 1});
        let second = json!({"image": {"tag": "v2"}, "resources": {"cpu": "1"}});
        let values = json!({"replicaCount": 3, "resources": null});
        assert_eq!(
            merged(
                &[
                    first.as_object().unwrap().clone(),
                    second.as_object().unwrap().clone()
                ],
                &values
            ),
            json!({
                "image": {"repository": "web", "tag": "v2"},
                "replicaCount": 3,
                // A null is kept: Helm reads it as "drop the chart's default".
                "resources": null,
            })
        );
    }
}
