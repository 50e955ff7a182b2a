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
///
/// The runtime keeps a deleted Instance until the API server has finished
/// deleting its CRDs (and touches one whose finalizing failed), so after
/// the Instances are gone this normally returns at once; it waits up to
/// 120 s for the Instances still leaving, and if CRDs stay, says which and
/// what holds them.
pub async fn wait_for_crds_gone(client: &kube::Client, names: &[String]) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut left = Vec::new();
    for _ in 0..1200 {
        left.clear();
        for name in names {
            if let Some(crd) = api.get_opt(name).await.expect("CRDs can be read") {
                left.push(crd);
            }
        }
        if left.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held: Vec<String> = left
        .iter()
        .map(|crd| {
            let meta = &crd.metadata;
            format!(
                "{} (deleting since {}, finalizers {:?}, labels {:?}, conditions {:?})",
                meta.name.as_deref().unwrap_or_default(),
                meta.deletion_timestamp
                    .as_ref()
                    .map_or("never: not being deleted".to_owned(), |t| t.0.to_string()),
                meta.finalizers.as_deref().unwrap_or_default(),
                meta.labels.clone().unwrap_or_default(),
                crd.status
                    .as_ref()
                    .and_then(|status| status.conditions.as_ref())
                    .map(|conditions| conditions
                        .iter()
                        .map(|c| format!(
                            "{}={} {}: {}",
                            c.type_,
                            c.status,
                            c.reason.as_deref().unwrap_or_default(),
                            c.message.as_deref().unwrap_or_default()
                        ))
                        .collect::<Vec<_>>())
                    .unwrap_or_default(),
            )
        })
        .collect();
    panic!("CRDs still there after 120 s: {}", held.join("; "));
}

/// Asserts that the committed `crds/<group>_*.yaml` are exactly what
/// `to_yaml` makes of `crds` (one API group's CRDs), and that no other
/// file of that group sits there; `command` regenerates them.
pub fn assert_committed(
    group: &str,
    crds: Vec<CustomResourceDefinition>,
    to_yaml: impl Fn(&CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error>,
    command: &str,
) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let mut expected = Vec::new();
    for crd in crds {
        let file = pakket_api::crd::file_name(&crd);
        let generated = to_yaml(&crd).unwrap();
        let committed = std::fs::read_to_string(dir.join(&file))
            .unwrap_or_else(|error| panic!("crds/{file} is missing ({error}); run `{command}`"));
        assert!(
            committed == generated,
            "crds/{file} differs from the types; run `{command}` and commit the result"
        );
        expected.push(file);
    }
    let prefix = format!("{group}_");
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix) && name.ends_with(".yaml"))
        .collect();
    present.sort();
    expected.sort();
    assert_eq!(
        present, expected,
        "crds/ holds {prefix}* files no type generates"
    );
}
