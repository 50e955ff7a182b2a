//! Objects the runtime creates are created with a plain create (POST), the
//! only create that fails when the object already exists: Kubernetes has no
//! create-only server-side apply, and a read before an apply leaves a window
//! in which someone else's object could appear and be taken over.
//!
//! A create records its fields under the runtime's manager with operation
//! `Update`, while later applies own fields under the same manager with
//! operation `Apply`. Server-side apply removes a field a new configuration
//! drops only if no other entry owns it, so before content that may drop
//! fields is applied over a created object, the `Update` entry's fields
//! are moved into the `Apply` entry (what client-go's `csaupgrade` does for
//! `kubectl apply` users). One request, once per object, and only when the
//! content changed.

use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::FIELD_MANAGER;

/// The merge patch that moves the runtime's `Update` fields of `object`
/// into its `Apply` entry, guarded by the resourceVersion read; `None` when
/// there is nothing to move.
pub fn upgrade_patch(object: &DynamicObject) -> Option<Value> {
    let entries = object.metadata.managed_fields.as_ref()?;
    let ours = |entry: &&k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
                operation: &str| {
        entry.manager.as_deref() == Some(FIELD_MANAGER)
            && entry.operation.as_deref() == Some(operation)
            && entry.subresource.as_deref().unwrap_or_default().is_empty()
    };
    let created = entries.iter().find(|entry| ours(entry, "Update"))?;
    let created_fields = created.fields_v1.as_ref().map(|f| f.0.clone())?;
    let mut merged: Vec<Value> = Vec::with_capacity(entries.len());
    let mut applied_seen = false;
    for entry in entries {
        if ours(&entry, "Update") {
            continue;
        }
        let mut value = serde_json::to_value(entry).ok()?;
        if ours(&entry, "Apply") {
            applied_seen = true;
            let mut fields = entry
                .fields_v1
                .as_ref()
                .map(|f| f.0.clone())
                .unwrap_or_else(|| json!({}));
            union(&mut fields, &created_fields);
            value["fieldsV1"] = fields;
        }
        merged.push(value);
    }
    if !applied_seen {
        let mut value = serde_json::to_value(created).ok()?;
        value["operation"] = json!("Apply");
        merged.push(value);
    }
    Some(json!({
        "metadata": {
            "resourceVersion": object.metadata.resource_version,
            "managedFields": merged,
        }
    }))
}

/// Adds every field of the set `from` to the set `into` (FieldsV1 is a tree
/// of JSON objects, so a set union is a deep merge).
fn union(into: &mut Value, from: &Value) {
    let (Value::Object(into), Value::Object(from)) = (into, from) else {
        return;
    };
    for (key, value) in from {
        match into.get_mut(key) {
            Some(existing) => union(existing, value),
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Moves the runtime's `Update` fields of `object` into its `Apply` entry
/// (see the module doc); returns the resourceVersion to apply at.
pub async fn upgrade(
    api: &kube::Api<DynamicObject>,
    object: &DynamicObject,
) -> Result<Option<String>, kube::Error> {
    let Some(patch) = upgrade_patch(object) else {
        return Ok(None);
    };
    let name = object.metadata.name.clone().unwrap_or_default();
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let stored = api.patch(&name, &params, &Patch::Merge(&patch)).await?;
    Ok(stored.metadata.resource_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(entries: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "resourceVersion": "7", "managedFields": entries},
        }))
        .expect("a ConfigMap")
    }

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1",
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn a_created_object_gets_its_fields_under_the_apply_entry() {
        let created = entry(
            FIELD_MANAGER,
            "Update",
            json!({"f:data": {"f:a": {}, "f:b": {}}}),
        );
        let patch = upgrade_patch(&object(json!([created]))).expect("a patch");
        let entries = patch["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0]["operation"], "Apply");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        );
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn created_fields_join_the_applied_ones_and_others_keep_theirs() {
        let entries = json!([
            entry(FIELD_MANAGER, "Update", json!({"f:data": {"f:a": {}}})),
            entry(FIELD_MANAGER, "Apply", json!({"f:data": {"f:b": {}}})),
            entry("kubectl-edit", "Update", json!({"f:data": {"f:c": {}}})),
        ]);
        let patch = upgrade_patch(&object(entries)).expect("a patch");
        let entries = patch["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:data": {"f:b": {}, "f:a": {}}})
        );
        assert_eq!(entries[1]["manager"], "kubectl-edit");
        assert_eq!(entries[1]["fieldsV1"], json!({"f:data": {"f:c": {}}}));
    }

    #[test]
    fn nothing_to_move_without_a_create_entry() {
        let entries = json!([entry(FIELD_MANAGER, "Apply", json!({"f:data": {}}))]);
        assert!(upgrade_patch(&object(entries)).is_none());
    }
}
