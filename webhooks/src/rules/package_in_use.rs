//! Deleting a ClusterPackage other packages depend on is refused, naming
//! them: their objects would stop working (postgresql's Clusters without
//! cloudnative-pg's operator and CRD). Delete the dependents first.
//!
//! The dependents are read from the cluster at the request (packages and
//! the package files their PackageInfos hold), as the package provisioner
//! reads them. The webhook is `failurePolicy: Ignore`, so it never blocks
//! cleanup while it is down; the provisioner then keeps the package (its
//! finalizer) until no package depends on it, so nothing breaks either way.

use kube::Client;
use pakket_packages_api::ClusterPackage;
use pakket_packages_client::dependents;

/// Why deleting `package` must wait, if it must; an error when the
/// packages cannot be listed (the caller lets the delete through).
pub async fn refusal(client: &Client, package: &ClusterPackage) -> Result<Option<String>, String> {
    let everyone = dependents::everyone(client)
        .await
        .map_err(|error| format!("cannot list packages to check dependents: {error}"))?;
    let uid = package.metadata.uid.clone().unwrap_or_default();
    let name = package.metadata.name.clone().unwrap_or_default();
    Ok(dependents::deletion_refused(
        &everyone,
        &name,
        &package.spec.package_info.name,
        &uid,
    ))
}
