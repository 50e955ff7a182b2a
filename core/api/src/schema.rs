//! Schema fragments the derive macros cannot express on their own, shared
//! by every API group's crate (conditions merged by type, free-form fields
//! kept as written).
//!
//! The CEL rules here are checked by the apiserver itself, so a bad object is
//! refused before any Pakket component sees it.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Upper bound for a ref URI; bounds keep the CEL cost estimate within budget.
pub(crate) const MAX_REF_LENGTH: u32 = 2048;
/// Upper bound for the number of refs in a Bundle.
pub(crate) const MAX_REFS: u32 = 16;

/// A free-form object whose fields the apiserver keeps as written.
pub fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Any JSON value, kept as written.
pub fn free_form_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// `metav1.Condition` list, merged by `type` under server-side apply.
pub fn conditions(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = condition_list(generator);
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["type"]),
    );
    schema
}

/// `metav1.Condition` list written whole by each writer (`atomic`): for a
/// kind whose conditions only a controller's full status write and
/// preconditioned read-modify-writes change, so nothing needs the merge by
/// `type`. What it saves is the apiserver's work on every write: with a
/// list merged by type, `managedFields` tracks each field of each
/// condition (1.2 kB of an Instance's 6.9), and every write decodes,
/// coerces and re-encodes all of it.
pub fn atomic_conditions(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = condition_list(generator);
    schema.insert("x-kubernetes-list-type".into(), "atomic".into());
    schema
}

/// A list of `metav1.Condition`, its list type not said yet.
fn condition_list(generator: &mut SchemaGenerator) -> Schema {
    let item =
        generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>();
    json_schema!({
        "type": "array",
        "items": item,
    })
}

/// A Kubernetes label selector (`metav1.LabelSelector`).
pub(crate) fn label_selector(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>()
}
