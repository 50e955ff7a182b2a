//! What the controller needs of a ClusterPackage or a Package, and who
//! wrote it.

use std::fmt::Debug;

use kube::api::Api;
use kube::{Client, Resource, ResourceExt as _};
use pakket_packages_api::{ClusterPackage, ClusterPackageSpec, Package, PackageStatus};
use serde::de::DeserializeOwned;

/// The package's author, if its record verifies for its current spec.
pub fn author<K: PackageObject>(
    package: &K,
    key: Option<&pakket_api::RecordKey>,
) -> Option<pakket_api::CreatorRecord> {
    let name = match package.namespace() {
        Some(namespace) => format!("{namespace}/{}", package.name_any()),
        None => package.name_any(),
    };
    let spec = serde_json::to_value(package).ok()?["spec"].clone();
    pakket_api::requester_of(
        package.meta().annotations.as_ref(),
        key,
        &pakket_api::record_object(K::KIND, &name),
        &pakket_api::value_digest(&spec),
    )
    .map_err(|error| tracing::debug!(kind = K::KIND, package = %name, %error, "no verified author"))
    .ok()
    .map(|(record, _)| record)
}

/// A ClusterPackage or a Package.
pub trait PackageObject:
    Resource<DynamicType = ()>
    + Clone
    + Debug
    + DeserializeOwned
    + serde::Serialize
    + Send
    + Sync
    + 'static
{
    /// `ClusterPackage` or `Package`.
    const KIND: &'static str;
    /// Its spec, in the shape both share.
    fn common_spec(&self) -> ClusterPackageSpec;
    /// Its status.
    fn package_status(&self) -> Option<&PackageStatus>;
    /// The API for objects like it (all namespaces, or its namespace).
    fn api(client: &Client, namespace: Option<&str>) -> Api<Self>;
}

impl PackageObject for ClusterPackage {
    const KIND: &'static str = "ClusterPackage";
    fn common_spec(&self) -> ClusterPackageSpec {
        self.spec.clone()
    }
    fn package_status(&self) -> Option<&PackageStatus> {
        self.status.as_ref()
    }
    fn api(client: &Client, _: Option<&str>) -> Api<Self> {
        Api::all(client.clone())
    }
}

impl PackageObject for Package {
    const KIND: &'static str = "Package";
    fn common_spec(&self) -> ClusterPackageSpec {
        ClusterPackageSpec {
            package_info: self.spec.package_info.clone(),
            values: self.spec.values.clone(),
            suspend: self.spec.suspend,
        }
    }
    fn package_status(&self) -> Option<&PackageStatus> {
        self.status.as_ref()
    }
    fn api(client: &Client, namespace: Option<&str>) -> Api<Self> {
        match namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        }
    }
}
