//! The runtime's provisioner for a chart's Instance: its config read
//! ([`crate::config`]), the chart refused if a template needs the cluster
//! ([`crate::cluster_functions`]), rendered by `helm template` with the
//! cluster's version and served APIs ([`crate::template`]), and every
//! namespaced object that names no namespace placed in the release's, as
//! `helm install -n` places them.

use kube::ResourceExt as _;
use pakket_runtime::provisioner::ClusterFacts;
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Value, json};

use std::collections::BTreeMap;
use std::sync::Arc;

use pakket_runtime::secret_values::{self, SecretValues};

use crate::config::{self, ChartConfig, ValuesSource};
use crate::template::{Helm, Release, chart_folder};

/// The helm provisioner.
pub struct HelmCharts {
    id: String,
    helm: Helm,
    /// Values the HelmChart controller read from Secrets.
    secret_values: Arc<SecretValues>,
}

impl HelmCharts {
    /// Answers to `id`, rendering with `helm`, with the values the
    /// HelmChart controller read from Secrets.
    pub fn new(id: impl Into<String>, helm: Helm, secret_values: Arc<SecretValues>) -> Self {
        Self {
            id: id.into(),
            helm,
            secret_values,
        }
    }

    /// The values to render with: `valuesFrom` merged in order, then
    /// `values`; and the Secrets' texts, which no problem may repeat.
    fn values(
        &self,
        instance: &str,
        config: &ChartConfig,
    ) -> Result<(Value, BTreeMap<String, String>), ObjectsError> {
        let wanted: BTreeMap<String, secret_values::SecretValueRef> = config
            .values_from
            .iter()
            .filter_map(|source| match source {
                ValuesSource::Secret { name, source } => Some((name.clone(), source.clone())),
                ValuesSource::Written(_) => None,
            })
            .collect();
        let secrets = self
            .secret_values
            .for_instance(instance, &wanted)
            .map_err(ObjectsError::DependenciesMissing)?;
        // Each Secret's text read once: as values, and for what a problem
        // must not repeat.
        let mut sources = Vec::new();
        let mut masks = BTreeMap::new();
        for source in &config.values_from {
            match source {
                ValuesSource::Written(values) => sources.push(values.clone()),
                ValuesSource::Secret { name, .. } => {
                    let text = secrets.get(name).map_or("", String::as_str);
                    let values = crate::values_from::values_map(text, true).map_err(|problem| {
                        ObjectsError::Config {
                            field: crate::values_from::field(name),
                            problem,
                        }
                    })?;
                    for leaf in values.values().flat_map(leaves) {
                        masks.insert(masks.len().to_string(), leaf);
                    }
                    sources.push(values);
                }
            }
        }
        Ok((config::merged(&sources, &config.values), masks))
    }
}

/// The scalar texts in `value` a problem must not repeat (short ones, like
/// `true` or `1`, would mask the words around them and hide nothing).
fn leaves(value: &Value) -> Vec<String> {
    match value {
        Value::Object(map) => map.values().flat_map(leaves).collect(),
        Value::Array(items) => items.iter().flat_map(leaves).collect(),
        Value::String(text) if text.len() >= 4 => vec![text.clone()],
        Value::Number(number) if number.to_string().len() >= 4 => vec![number.to_string()],
        _ => Vec::new(),
    }
}

impl Provisioner for HelmCharts {
    fn id(&self) -> &str {
        &self.id
    }

    /// Helm is told the cluster's version and served kinds, and which
    /// kinds are namespaced decides where objects go.
    fn needs_cluster_facts(&self) -> bool {
        true
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let config = config::read(
            request.instance.spec.config.as_ref(),
            &request.instance.name_any(),
        )
        .map_err(|error| ObjectsError::Config {
            field: error.field,
            problem: error.problem,
        })?;
        let chart = chart_folder(request.content).map_err(ObjectsError::Content)?;
        let named = chart
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::cluster_functions::refuse(&chart)
            .map_err(|problem| ObjectsError::Content(format!("chart {named}: {problem}")))?;
        let (values, secrets) = self.values(&request.instance.name_any(), &config)?;
        let release = Release {
            name: &config.release_name,
            namespace: &config.namespace,
            chart: &chart,
            values: &values,
        };
        let objects = self
            .helm
            .template(&release, request.cluster, request.max_object_size)
            .map_err(|problem| {
                ObjectsError::Content(secret_values::masked(
                    &format!("chart {named}: {problem}"),
                    &secrets,
                ))
            })?;
        let mut objects = placed(objects, &config.namespace, request.cluster);
        if config.namespace_only {
            confined(&objects, &config.namespace, request.cluster)
                .map_err(|problem| ObjectsError::Content(format!("chart {named}: {problem}")))?;
        }
        if config.create_namespace {
            objects.insert(0, namespace_if_absent(&config.namespace));
        }
        Ok(objects)
    }
}

/// The release's namespace, created only if absent (`createNamespace`):
/// then it is the Instance's and goes with it; an existing one is used as
/// it is, never adopted.
fn namespace_if_absent(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "annotations": { pakket_api::ownership::CREATE_IF_ABSENT_ANNOTATION: "true" },
        },
    })
}

/// `objects` with every namespaced one that names no namespace in
/// `namespace`. A kind neither the cluster nor the chart's CRDs know is
/// taken as namespaced, as Helm takes it; the apiserver refuses it at the
/// runtime's dry run if it is not.
pub fn placed(objects: Vec<Value>, namespace: &str, cluster: &ClusterFacts) -> Vec<Value> {
    let everything = objects.clone();
    objects
        .into_iter()
        .map(|mut object| {
            let has_namespace = object["metadata"]["namespace"]
                .as_str()
                .is_some_and(|own| !own.is_empty());
            if !has_namespace && cluster.namespaced(&object, &everything).unwrap_or(true) {
                object["metadata"]["namespace"] = json!(namespace);
            }
            object
        })
        .collect()
}

/// Refuses, naming each, what a chart confined to `namespace` may not
/// write: anything cluster-scoped, anything in another namespace, and any
/// kind the cluster does not say is namespaced (its scope decides whether
/// it stays in the namespace).
pub fn confined(objects: &[Value], namespace: &str, cluster: &ClusterFacts) -> Result<(), String> {
    let named = |object: &Value| {
        format!(
            "{} {}",
            object["kind"].as_str().unwrap_or("object"),
            object["metadata"]["name"].as_str().unwrap_or("?")
        )
    };
    let mut outside = Vec::new();
    for object in objects {
        match cluster.namespaced(object, objects) {
            Ok(true) if object["metadata"]["namespace"] == namespace => {}
            Ok(true) => outside.push(format!(
                "{} (in namespace {})",
                named(object),
                object["metadata"]["namespace"].as_str().unwrap_or("?")
            )),
            Ok(false) => outside.push(format!("{} (cluster-scoped)", named(object))),
            Err(_) => outside.push(format!(
                "{} (a kind this cluster does not serve)",
                named(object)
            )),
        }
    }
    if outside.is_empty() {
        return Ok(());
    }
    Err(format!(
        "a chart installed for namespace {namespace} writes only namespaced objects into it, and this one renders {}; nothing was written. An admin installs such a chart as an Instance of the helm class",
        outside.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_without_a_namespace_go_to_the_releases_and_cluster_scoped_ones_stay_so() {
        let cluster = ClusterFacts {
            served: [
                ("v1".to_owned(), "ConfigMap".to_owned()),
                (
                    "rbac.authorization.k8s.io/v1".to_owned(),
                    "ClusterRole".to_owned(),
                ),
            ]
            .into(),
            cluster_scoped: [(
                "rbac.authorization.k8s.io/v1".to_owned(),
                "ClusterRole".to_owned(),
            )]
            .into(),
            ..ClusterFacts::default()
        };
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "elsewhere"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "c"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "d"}}),
        ];
        let placed = placed(objects, "team-a", &cluster);
        let namespaces: Vec<Option<&str>> = placed
            .iter()
            .map(|o| o["metadata"]["namespace"].as_str())
            .collect();
        assert_eq!(
            namespaces,
            [Some("team-a"), Some("elsewhere"), None, Some("team-a")]
        );
    }
}
