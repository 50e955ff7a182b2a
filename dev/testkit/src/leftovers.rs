//! What earlier test runs killed mid-way left on a kept control plane.
//!
//! A test that is killed (Ctrl-C, a timeout) never runs its cleanup, and
//! its provisioner goes with it: its Instances, OperatorRequests and
//! HelmCharts keep
//! their finalizers with nobody left to remove them, and its namespace
//! stays `Terminating` for good. The next run on the same control plane
//! (`PAKKET_TEST_KUBECONFIG`) would then meet their CRDs and names. So the
//! first scope of a test process sweeps them: objects carrying the scope
//! label and older than [`LEFTOVER_AGE`] (longer than any test runs, so a
//! test still running in another process is never touched) lose their
//! finalizers and are deleted.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt as _};

use crate::SCOPE_LABEL;

/// How old a scope's object must be to count as left behind.
pub const LEFTOVER_AGE: Duration = Duration::from_secs(30 * 60);

/// The finalized kinds tests make: Pakket's Instances, OperatorRequests
/// and HelmCharts.
fn finalized_kinds() -> [ApiResource; 3] {
    [
        ApiResource {
            group: "core.pakket.dev".into(),
            version: "v1alpha1".into(),
            api_version: "core.pakket.dev/v1alpha1".into(),
            kind: "Instance".into(),
            plural: "instances".into(),
        },
        ApiResource {
            group: "operators.pakket.dev".into(),
            version: "v1alpha1".into(),
            api_version: "operators.pakket.dev/v1alpha1".into(),
            kind: "OperatorRequest".into(),
            plural: "operatorrequests".into(),
        },
        ApiResource {
            group: "helm.pakket.dev".into(),
            version: "v1alpha1".into(),
            api_version: "helm.pakket.dev/v1alpha1".into(),
            kind: "HelmChart".into(),
            plural: "helmcharts".into(),
        },
    ]
}

/// Whether an object created at `created` is left behind at `now`.
pub fn left_behind(created: Option<jiff::Timestamp>, now: jiff::Timestamp) -> bool {
    created.is_some_and(|created| {
        now.duration_since(created)
            .try_into()
            .is_ok_and(|age: Duration| age > LEFTOVER_AGE)
    })
}

/// Removes what killed runs left (see the module docs); errors are
/// ignored (a kind whose CRD is not installed has nothing to sweep).
pub async fn sweep(client: &Client) {
    let now = jiff::Timestamp::now();
    let by_label = ListParams::default().labels(SCOPE_LABEL);
    let unfinalize = json_patch_without_finalizers();
    for resource in finalized_kinds() {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let Ok(list) = api.list(&by_label).await else {
            continue;
        };
        for object in list.items {
            if !left_behind(object.creation_timestamp().map(|t| t.0), now) {
                continue;
            }
            let name = object.name_any();
            let api: Api<DynamicObject> = match object.namespace() {
                Some(namespace) => Api::namespaced_with(client.clone(), &namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            eprintln!(
                "testkit: removing {} {name}, left by a killed test run",
                resource.kind
            );
            let _ = api.patch(&name, &PatchParams::default(), &unfinalize).await;
            let _ = api.delete(&name, &DeleteParams::default()).await;
        }
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if let Ok(list) = namespaces.list(&by_label).await {
        for namespace in list.items {
            if left_behind(namespace.creation_timestamp().map(|t| t.0), now) {
                let _ = namespaces
                    .delete(&namespace.name_any(), &DeleteParams::default())
                    .await;
            }
        }
    }
}

fn json_patch_without_finalizers() -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "metadata": { "finalizers": null } }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_older_than_any_test_run_are_left_behind() {
        let now: jiff::Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let at = |text: &str| Some(text.parse::<jiff::Timestamp>().unwrap());
        assert!(left_behind(at("2026-11-29T11:00:00Z"), now));
        assert!(!left_behind(at("2026-11-29T11:45:00Z"), now));
        assert!(!left_behind(None, now));
    }
}
