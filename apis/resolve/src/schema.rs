//! Schema pieces the resolve and operators kinds share (conditions merged
//! by type, free-form objects kept as written).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::{Schema, SchemaGenerator, json_schema};

/// `metav1.Condition` list, merged by `type` under server-side apply.
pub fn conditions(generator: &mut SchemaGenerator) -> Schema {
    let item = generator.subschema_for::<Condition>();
    json_schema!({
        "type": "array",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// Any JSON value, kept as written (a constraint's `value`).
pub fn free_form(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// A JSON object of any fields, kept as written (a `spec.config`).
pub fn free_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}
