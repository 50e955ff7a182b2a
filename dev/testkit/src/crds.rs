//! Installing Pakket's CRDs into the test control plane.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{conditions, wait::await_condition};

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
pub async fn wait_for_crds_gone(client: &kube::Client, names: &[String]) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    crate::eventually(&format!("CRDs {} are gone", names.join(", ")), || async {
        for name in names {
            if api.get_opt(name).await.expect("CRDs can be read").is_some() {
                return false;
            }
        }
        true
    })
    .await;
}
