//! The helm group's CRD (HelmChart) generated from the type, and its YAML
//! under `crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::HelmChart;

/// The CRDs this crate defines.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![HelmChart::crd()]
}

pub use pakket_api::crd::file_name;

/// The YAML document for one CRD, with a header saying where it came from.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    pakket_api::crd::generated_yaml(crd, "pakket-helm-api", "helm-crdgen", "apis/helm")
}
