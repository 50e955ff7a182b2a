//! The finalizer that keeps a package until its Instance is gone: added
//! before anything is made for it, removed last.

use std::time::Duration;

use kube::ResourceExt as _;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use super::super::status::Next;
use super::super::{Error, FINALIZER, PackageContext, PackageObject};

/// Adds the finalizer; the pass after it (at once) goes on.
pub(super) async fn add<K: PackageObject>(
    package: &K,
    context: &PackageContext,
) -> Result<Next, Error> {
    let mut finalizers = package.finalizers().to_vec();
    finalizers.push(FINALIZER.into());
    patch(package, context, finalizers).await?;
    Ok(Next::Quiet(Action::requeue(Duration::ZERO)))
}

/// Removes the finalizer: the package goes.
pub(super) async fn remove<K: PackageObject>(
    package: &K,
    context: &PackageContext,
) -> Result<(), kube::Error> {
    let finalizers: Vec<String> = package
        .finalizers()
        .iter()
        .filter(|f| f.as_str() != FINALIZER)
        .cloned()
        .collect();
    patch(package, context, finalizers).await
}

async fn patch<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    finalizers: Vec<String>,
) -> Result<(), kube::Error> {
    K::api(&context.info.client, package.namespace().as_deref())
        .patch(
            &package.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
        )
        .await?;
    Ok(())
}
