//! Installing Pakket's CRDs into the test control plane.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{conditions, wait::await_condition};
use serde_json::json;

/// Applies the CRDs generated from `pakket-api` (server-side, so every test
/// can call it) and waits until each is `Established`.
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    apply_crds(client, pakket_api::crd::all()).await
}

/// Applies `crds` (another crate's, e.g. the resolver's) server-side and
/// waits until each is `Established`.
pub async fn apply_crds(
    client: &kube::Client,
    crds: Vec<CustomResourceDefinition>,
) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("pakket-testkit").force();
    let mut installed = Vec::new();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd)).await?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        let crd = tokio::time::timeout(Duration::from_secs(30), established).await??;
        installed.extend(crd);
    }
    Ok(installed)
}

/// Waits until none of the CRDs named in `names` exists, not merely until
/// each is being deleted: a test that installed cluster-wide CRDs ends
/// only when the next test can install them again as its own.
///
/// The apiserver finalizes a deleted CRD itself (its custom resources
/// first). A CRD deleted while its storage was still (re)initializing, as
/// happens on a busy machine right after it was created or updated, fails
/// that once (`Terminating`: `InstanceDeletionFailed`, "storage is
/// (re)initializing") and is not tried again until the CRD changes: it
/// stayed for minutes. So such a CRD is touched (an annotation) to be
/// finalized again. Waits up to 120 s; if CRDs stay, says which and what
/// holds them.
pub async fn wait_for_crds_gone(client: &kube::Client, names: &[String]) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut left = Vec::new();
    for attempt in 0..1200 {
        left.clear();
        for name in names {
            if let Some(crd) = api.get_opt(name).await.expect("CRDs can be read") {
                left.push(crd);
            }
        }
        if left.is_empty() {
            return;
        }
        if attempt % 20 == 19 {
            for crd in left.iter().filter(|crd| finalizing_failed(crd)) {
                let touch = json!({ "metadata": { "annotations": {
                    "test.pakket.dev/finalize-again": attempt.to_string()
                } } });
                let name = crd.metadata.name.as_deref().unwrap_or_default();
                // Gone meanwhile is fine; the next round sees it.
                let _ = api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&touch))
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held: Vec<String> = left
        .iter()
        .map(|crd| {
            let meta = &crd.metadata;
            format!(
                "{} (deleting since {}, finalizers {:?}, labels {:?})",
                meta.name.as_deref().unwrap_or_default(),
                meta.deletion_timestamp
                    .as_ref()
                    .map_or("never: not being deleted".to_owned(), |t| t.0.to_string()),
                meta.finalizers.as_deref().unwrap_or_default(),
                meta.labels.clone().unwrap_or_default(),
            )
        })
        .collect();
    panic!("CRDs still there after 120 s: {}", held.join("; "));
}

/// Whether the apiserver's finalizing of deleted `crd` failed and waits.
fn finalizing_failed(crd: &CustomResourceDefinition) -> bool {
    crd.metadata.deletion_timestamp.is_some()
        && crd
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions.iter().any(|condition| {
                    condition.type_ == "Terminating"
                        && condition.reason.as_deref() == Some("InstanceDeletionFailed")
                })
            })
}
