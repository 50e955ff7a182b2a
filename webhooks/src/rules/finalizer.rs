//! The provisioner's finalizer, added when an Instance is created.
//!
//! Each provisioner removes an Instance's objects before the Instance goes,
//! under a finalizer named by its id. Added here, it costs no write of its
//! own: otherwise the provisioner's first reconcile spends an apiserver
//! request on it for every new Instance. An Instance whose class does not
//! exist yet gets none here; its provisioner adds it when it first acts.
//! Like the finalizer the provisioner would add, it means deleting the
//! Instance waits for that provisioner (or for an admin who removes it).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::core::ObjectMeta;

/// The JSON-patch operation that adds `finalizer` to a new object, or
/// `None` when it is there already (a reinvoked webhook adds nothing).
pub fn on_create(meta: &ObjectMeta, finalizer: &str) -> Option<PatchOperation> {
    match &meta.finalizers {
        Some(present) if present.iter().any(|f| f == finalizer) => None,
        Some(_) => Some(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "finalizers", "-"]),
            value: finalizer.into(),
        })),
        None => Some(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "finalizers"]),
            value: serde_json::json!([finalizer]),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(meta: &ObjectMeta, operation: PatchOperation) -> Vec<String> {
        let mut object = serde_json::json!({ "metadata": meta });
        json_patch::patch(&mut object, &[operation]).expect("the patch applies");
        serde_json::from_value(object["metadata"]["finalizers"].clone()).unwrap()
    }

    #[test]
    fn a_new_instance_gets_the_finalizer_beside_any_it_has() {
        let bare = ObjectMeta::default();
        let added = on_create(&bare, "pakket.dev/plain").expect("added");
        assert_eq!(applied(&bare, added), ["pakket.dev/plain"]);
        let other = ObjectMeta {
            finalizers: Some(vec!["example.com/keep".into()]),
            ..Default::default()
        };
        let added = on_create(&other, "pakket.dev/plain").expect("added");
        assert_eq!(
            applied(&other, added),
            ["example.com/keep", "pakket.dev/plain"]
        );
    }

    #[test]
    fn a_reinvoked_webhook_adds_nothing() {
        let meta = ObjectMeta {
            finalizers: Some(vec!["pakket.dev/plain".into()]),
            ..Default::default()
        };
        assert!(on_create(&meta, "pakket.dev/plain").is_none());
    }
}
