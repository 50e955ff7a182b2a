//! The package CRDs generated from the types, and their YAML under `crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{ClusterPackage, Package, PackageInfo, PackageRepository};

/// The CRDs this crate defines, in the order an installer applies them.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![
        PackageRepository::crd(),
        PackageInfo::crd(),
        ClusterPackage::crd(),
        Package::crd(),
    ]
}

pub use pakket_api::crd::file_name;

/// The YAML document for one CRD, with a header saying where it came from.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    pakket_api::crd::generated_yaml(
        crd,
        "pakket-packages-api",
        "package-crdgen",
        "apis/packages",
    )
}
