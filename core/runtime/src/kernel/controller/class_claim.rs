//! A provisioner claims the ProvisionerClasses that name it: it writes
//! `status.claimed` (its id and when) on each, once. A class nobody ever
//! claimed names a provisioner that has never run (a typo in the id, or
//! one not installed): the admission webhook gives its Instances no
//! finalizer, so deleting them never hangs on a finalizer nobody removes,
//! and `kubectl instance why` says what is wrong. The runtime adds its
//! finalizer itself before it writes anything, so an Instance created
//! before the claim lands loses nothing.

use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use pakket_api::{ProvisionerClass, Standing, readiness};
use serde_json::json;

/// Claims `class` for provisioner `id` if it names `id` and is not claimed
/// by it yet (in a task of its own: the class watch does not wait on it).
pub fn claim_if_named(client: &Client, id: &str, class: &ProvisionerClass) {
    if class.spec.provisioner != id || class.is_claimed() {
        return;
    }
    let api: Api<ProvisionerClass> = Api::all(client.clone());
    let name = class.name_any();
    let mut conditions = class.status.clone().unwrap_or_default().conditions;
    let claimed = Standing::ready("Claimed", format!("provisioner {id} serves this class"));
    readiness::write(&mut conditions, None, &claimed, jiff::Timestamp::now());
    let patch = json!({ "status": {
        "claimed": {
            "provisioner": id,
            "claimedAt": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
        "conditions": conditions,
    } });
    tokio::spawn(async move {
        if let Err(error) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(class = %name, error = %crate::apply::api_message(&error), "claiming the ProvisionerClass");
        }
    });
}
