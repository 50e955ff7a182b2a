//! Health of a Service that must answer: one a provisioner marked with
//! [`HEALTH_ANNOTATION`]`: ready-endpoints` (registry-v1 marks the Services
//! in front of an operator's webhooks, which the apiserver calls: without a
//! ready endpoint, every write those webhooks intercept fails).
//!
//! A Service has no condition of its own; its EndpointSlices say whether a
//! ready Pod stands behind it. A fresh one waits for its Pods (settling); one
//! that has had [`GRACE`] to get there and still has none is unhealthy.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DynamicObject, ListParams};
use pakket_api::ObjectRef;

pub use pakket_api::ownership::HEALTH_ANNOTATION;

use super::HealthProblem;

/// The annotation's value asking for ready endpoints.
pub const READY_ENDPOINTS: &str = "ready-endpoints";

/// How long a marked Service may wait for a ready endpoint before it counts
/// as unhealthy (a Deployment's own progress deadline is 10 minutes).
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether `object` asks for ready endpoints.
pub fn wanted(object: &DynamicObject) -> bool {
    wanted_by(&object.metadata)
}

/// Whether an object with `metadata` asks for ready endpoints.
pub fn wanted_by(metadata: &kube::api::ObjectMeta) -> bool {
    metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(HEALTH_ANNOTATION))
        .is_some_and(|value| value == READY_ENDPOINTS)
}

/// Why the marked Service `object` is not healthy (yet), if it is not.
pub async fn problem(
    client: &kube::Client,
    reference: &ObjectRef,
    object: &DynamicObject,
) -> Option<HealthProblem> {
    let namespace = reference.namespace.as_deref().unwrap_or("default");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let selector = format!("kubernetes.io/service-name={}", reference.name);
    let ready = match slices.list(&ListParams::default().labels(&selector)).await {
        Ok(list) => list.items.iter().any(has_ready_endpoint),
        Err(error) => {
            return Some(HealthProblem::failing(
                reference,
                format!(
                    "{reference}: its endpoints cannot be read ({}); the provisioner needs list on endpointslices.discovery.k8s.io",
                    super::api_message(&error)
                ),
            ));
        }
    };
    if ready {
        return None;
    }
    let age = object
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|created| jiff::Timestamp::now().duration_since(created.0))
        .and_then(|age| std::time::Duration::try_from(age).ok())
        .unwrap_or_default();
    Some(if age < GRACE {
        HealthProblem::settling(reference, format!("{reference} to have a ready endpoint"))
    } else {
        HealthProblem::failing(
            reference,
            format!(
                "{reference} has no ready endpoint after {} minutes, so what calls it (an admission or conversion webhook) fails; check the Pods its selector matches",
                GRACE.as_secs() / 60
            ),
        )
    })
}

/// Whether one EndpointSlice lists an endpoint that is ready (an absent
/// `ready` means ready, as Kubernetes documents it).
fn has_ready_endpoint(slice: &EndpointSlice) -> bool {
    slice.endpoints.iter().any(|endpoint| {
        endpoint
            .conditions
            .as_ref()
            .and_then(|conditions| conditions.ready)
            .unwrap_or(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(ready: &[Option<bool>]) -> EndpointSlice {
        serde_json::from_value(serde_json::json!({
            "addressType": "IPv4",
            "metadata": {"name": "s"},
            "endpoints": ready.iter().map(|ready| serde_json::json!({
                "addresses": ["10.0.0.1"],
                "conditions": match ready { Some(ready) => serde_json::json!({"ready": ready}), None => serde_json::json!({}) },
            })).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn one_ready_endpoint_is_enough_and_unset_means_ready() {
        assert!(!has_ready_endpoint(&slice(&[])));
        assert!(!has_ready_endpoint(&slice(&[Some(false)])));
        assert!(has_ready_endpoint(&slice(&[Some(false), Some(true)])));
        assert!(has_ready_endpoint(&slice(&[None])));
    }

    #[test]
    fn only_marked_services_are_asked_about() {
        let mut service: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
        }))
        .unwrap();
        assert!(!wanted(&service));
        service.metadata.annotations = Some(
            [(HEALTH_ANNOTATION.to_owned(), READY_ENDPOINTS.to_owned())]
                .into_iter()
                .collect(),
        );
        assert!(wanted(&service));
    }
}
