//! The resolve group's CRDs (Catalog, InputClass, Input) generated from
//! the types, and their YAML under `crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{Catalog, Input, InputClass};

/// The CRDs this crate defines, in the order an installer applies them.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![Catalog::crd(), InputClass::crd(), Input::crd()]
}

pub use pakket_api::crd::file_name;

/// The YAML document for one CRD, with a header saying where it came from.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    pakket_api::crd::generated_yaml(crd, "pakket-resolve-api", "resolve-crdgen", "apis/resolve")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_crd_is_cluster_scoped_in_the_resolve_group() {
        let crd = Catalog::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.group, crate::catalog::GROUP);
        assert_eq!(crd.spec.versions[0].name, crate::catalog::VERSION);
        let schema = serde_json::to_string(&crd.spec.versions[0].schema).unwrap();
        assert!(schema.contains("exactly one of image, configMap or https"));
        assert!(schema.contains(r#""x-kubernetes-list-map-keys":["type"]"#));
        assert!(
            schema.contains(r#""default":0"#),
            "priority defaults to 0: {schema}"
        );
    }
}
