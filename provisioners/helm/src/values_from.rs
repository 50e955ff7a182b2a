//! A HelmChart's `valuesFrom`: keys of ConfigMaps and Secrets in its
//! namespace, each read only if the HelmChart's verified author may `get`
//! that object herself (asked of the apiserver as a SubjectAccessReview),
//! as pakket-package reads a package's values: the chart would otherwise
//! copy into her objects what she cannot see.
//!
//! A ConfigMap's values are written into the Instance's config, where the
//! approval sees them. A Secret's are not (more people read Instances than
//! that Secret): the Instance names the Secret, its key and the
//! `resourceVersion` read, so a changed Secret is a changed Instance,
//! judged again; the values reach the provisioner in this process only
//! ([`pakket_runtime::secret_values`]).

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use kube::{Client, ResourceExt as _};
use pakket_api::CreatorRecord;
use pakket_helm_api::{DEFAULT_VALUES_KEY, HelmChart, ValuesKind, ValuesReference};
use pakket_runtime::secret_values::{ReadValues, SecretValueRef};
use serde_json::{Map, Value, json};

/// What the HelmChart's `valuesFrom` gave.
#[derive(Default)]
pub struct ValuesRead {
    /// The Instance's `spec.config.valuesFrom`, in order.
    pub entries: Vec<Value>,
    /// The Secrets' texts, by the entry's index.
    pub secrets: ReadValues,
}

/// Why nothing is written for the HelmChart: `Accepted=False` with these.
#[derive(Debug, PartialEq, Eq)]
pub struct Unread {
    /// The condition's reason.
    pub reason: &'static str,
    /// Its message, naming the field and what to do.
    pub message: String,
}

/// The name an entry's Secret text is kept under.
pub fn secret_name(index: usize) -> String {
    index.to_string()
}

/// The field the value kept under `name` stands for.
pub fn field(name: &str) -> String {
    format!("spec.valuesFrom[{name}]")
}

/// Reads `chart`'s `valuesFrom` for its verified `author`.
pub async fn read(
    client: &Client,
    chart: &HelmChart,
    author: Option<&CreatorRecord>,
) -> Result<ValuesRead, Unread> {
    let mut read = ValuesRead::default();
    if chart.spec.values_from.is_empty() {
        return Ok(read);
    }
    let namespace = chart.namespace().unwrap_or_default();
    let author = author.ok_or_else(|| Unread {
        reason: "NoVerifiedAuthor",
        message: "spec.valuesFrom: the HelmChart has no verified author (the webhooks record who writes HelmCharts), so nothing is read on anyone's behalf; write the values under spec.values".into(),
    })?;
    for (index, reference) in chart.spec.values_from.iter().enumerate() {
        let at = field(&secret_name(index));
        let key = reference
            .values_key
            .as_deref()
            .unwrap_or(DEFAULT_VALUES_KEY);
        may_get(client, author, reference, &namespace, &at).await?;
        let Some((text, version)) = fetch(client, reference, &namespace, key, &at).await? else {
            continue;
        };
        let secret = reference.kind == ValuesKind::Secret;
        let values = values_map(&text, secret).map_err(|problem| Unread {
            reason: "ValuesInvalid",
            message: format!(
                "{at}: key {key} of {} {namespace}/{} {problem}; write it as a YAML map of values, as in the chart's values.yaml",
                kind_name(reference.kind),
                reference.name
            ),
        })?;
        if secret {
            let source = SecretValueRef {
                namespace: namespace.clone(),
                name: reference.name.clone(),
                key: key.to_owned(),
                resource_version: version.clone(),
            };
            read.entries
                .push(json!({ "secret": reference.name, "key": key, "resourceVersion": version }));
            read.secrets.insert(secret_name(index), (source, text));
        } else {
            read.entries
                .push(json!({ "configMap": reference.name, "key": key, "values": values }));
        }
    }
    Ok(read)
}

/// Whether `author` may `get` the referenced object herself.
async fn may_get(
    client: &Client,
    author: &CreatorRecord,
    reference: &ValuesReference,
    namespace: &str,
    at: &str,
) -> Result<(), Unread> {
    let access = pakket_runtime::kernel::trust::rbac::Access::Resource {
        group: String::new(),
        resource: match reference.kind {
            ValuesKind::ConfigMap => "configmaps",
            ValuesKind::Secret => "secrets",
        }
        .into(),
        subresource: String::new(),
        verb: "get".into(),
        namespace: Some(namespace.to_owned()),
        name: Some(reference.name.clone()),
    };
    let reviews: Api<k8s_openapi::api::authorization::v1::SubjectAccessReview> =
        Api::all(client.clone());
    match pakket_runtime::approval::review(&reviews, author, &access).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(Unread {
            reason: "ValuesNotReadable",
            message: format!(
                "{at}: {} may not {access}, so pakket-helm does not read it for them; nothing is written. Ask for get on it, or write the values under spec.values",
                author.username
            ),
        }),
        Err(problem) => Err(Unread {
            reason: "ValuesUnread",
            message: format!("{at}: {problem}; trying again"),
        }),
    }
}

/// The key's text and the object's `resourceVersion`; `None` when the
/// reference is optional and the object or key is missing.
async fn fetch(
    client: &Client,
    reference: &ValuesReference,
    namespace: &str,
    key: &str,
    at: &str,
) -> Result<Option<(String, String)>, Unread> {
    let failed = |error: kube::Error| Unread {
        reason: "ValuesUnread",
        message: format!("{at}: {error}; trying again"),
    };
    let found = match reference.kind {
        ValuesKind::ConfigMap => Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .get_opt(&reference.name)
            .await
            .map_err(failed)?
            .map(|map| {
                let text = map.data.and_then(|data| data.get(key).cloned());
                (text.map(Ok), map.metadata.resource_version)
            }),
        ValuesKind::Secret => Api::<Secret>::namespaced(client.clone(), namespace)
            .get_opt(&reference.name)
            .await
            .map_err(failed)?
            .map(|secret| {
                let bytes = secret.data.and_then(|data| data.get(key).cloned());
                let text = bytes.map(|bytes| String::from_utf8(bytes.0).map_err(|_| ()));
                (text, secret.metadata.resource_version)
            }),
    };
    let what = format!(
        "{} {namespace}/{}",
        kind_name(reference.kind),
        reference.name
    );
    match found {
        Some((Some(Ok(text)), version)) => Ok(Some((text, version.unwrap_or_default()))),
        Some((Some(Err(())), _)) => Err(Unread {
            reason: "ValuesInvalid",
            message: format!("{at}: key {key} of {what} is not UTF-8 text; values are YAML text"),
        }),
        _ if reference.optional => Ok(None),
        None => Err(Unread {
            reason: "ValuesMissing",
            message: format!(
                "{at}: {what} does not exist; create it, or mark the reference optional"
            ),
        }),
        Some((None, _)) => Err(Unread {
            reason: "ValuesMissing",
            message: format!(
                "{at}: {what} has no key {key}; name the key holding the values as valuesKey"
            ),
        }),
    }
}

fn kind_name(kind: ValuesKind) -> &'static str {
    match kind {
        ValuesKind::ConfigMap => "ConfigMap",
        ValuesKind::Secret => "Secret",
    }
}

/// `text` as a map of values (empty text is no values). A Secret's text
/// is never repeated in the problem, not even a fragment of it.
pub fn values_map(text: &str, secret: bool) -> Result<Map<String, Value>, String> {
    match serde_saphyr::from_str::<Option<Value>>(text) {
        Ok(None | Some(Value::Null)) => Ok(Map::new()),
        Ok(Some(Value::Object(values))) => Ok(values),
        Ok(Some(_)) => Err("is not a map of values".into()),
        Err(_) if secret => {
            Err("is not valid YAML (the Secret's text is not repeated here)".into())
        }
        Err(error) => Err(format!("is not valid YAML: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_values_key_is_a_yaml_map_and_a_secrets_text_is_never_repeated() {
        assert_eq!(
            values_map("replicaCount: 2\nimage: {tag: v1}\n", false).unwrap(),
            json!({"replicaCount": 2, "image": {"tag": "v1"}})
                .as_object()
                .unwrap()
                .clone()
        );
        assert!(values_map("", true).unwrap().is_empty());
        assert_eq!(
            values_map("- a\n- b\n", false).unwrap_err(),
            "is not a map of values"
        );
        let bad = "password: [hunter2\n";
        assert!(
            values_map(bad, false)
                .unwrap_err()
                .contains("not valid YAML")
        );
        let secret = values_map(bad, true).unwrap_err();
        assert!(!secret.contains("hunter2"), "{secret}");
    }
}
