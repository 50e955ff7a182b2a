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

use crate::config;
use crate::template::{Helm, Release, chart_folder};

/// The helm provisioner.
pub struct HelmCharts {
    id: String,
    helm: Helm,
}

impl HelmCharts {
    /// Answers to `id`, rendering with `helm`.
    pub fn new(id: impl Into<String>, helm: Helm) -> Self {
        Self {
            id: id.into(),
            helm,
        }
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
        let release = Release {
            name: &config.release_name,
            namespace: &config.namespace,
            chart: &chart,
            values: &config.values,
        };
        let objects = self
            .helm
            .template(&release, request.cluster, request.max_object_size)
            .map_err(|problem| ObjectsError::Content(format!("chart {named}: {problem}")))?;
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
