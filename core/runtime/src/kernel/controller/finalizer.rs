//! The provisioner's finalizer on an Instance: added in the same reconcile
//! that installs (not in one of its own, as kube's `finalizer` helper does,
//! which costs every new Instance a second full reconcile), removed once
//! the cleanup has run.
//!
//! Both writes are merge patches carrying the resourceVersion read, so they
//! fail with a conflict instead of dropping someone else's finalizer.

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::Instance;
use serde_json::json;

/// Whether `instance` carries `finalizer`.
pub fn has(instance: &Instance, finalizer: &str) -> bool {
    instance.finalizers().iter().any(|f| f == finalizer)
}

/// Adds `finalizer`; returns the Instance as stored after it.
pub async fn add(
    api: &Api<Instance>,
    instance: &Instance,
    finalizer: &str,
) -> Result<Instance, kube::Error> {
    let mut finalizers = instance.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    write(api, instance, finalizers).await
}

/// Removes `finalizer`, letting the deletion go on.
pub async fn remove(
    api: &Api<Instance>,
    instance: &Instance,
    finalizer: &str,
) -> Result<Instance, kube::Error> {
    let finalizers = instance
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    write(api, instance, finalizers).await
}

async fn write(
    api: &Api<Instance>,
    instance: &Instance,
    finalizers: Vec<String>,
) -> Result<Instance, kube::Error> {
    let patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": instance.resource_version(),
        }
    });
    api.patch(
        &instance.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
}
