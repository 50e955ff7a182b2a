//! The resolver's CRDs (Catalog, InputClass, Input, Operator,
//! OperatorRequest), in the order an installer applies them. Each API crate
//! generates its own group's (`resolve-crdgen`, `operators-crdgen`); this
//! is both, for the process and the tests that install them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The resolve group's CRDs, then the operators group's.
pub fn all() -> Vec<CustomResourceDefinition> {
    let mut all = pakket_resolve_api::crd::all();
    all.extend(pakket_operators_api::crd::all());
    all
}
