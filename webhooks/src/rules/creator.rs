//! The creator record: who created an Instance, written by the mutating
//! webhook from the authenticated request, never from what the user sent.
//!
//! - CREATE (mutating): no record → add the requester's; a record equal to
//!   the requester's (re-applying an exported manifest) → keep; any other
//!   record → refuse as forged.
//! - UPDATE (mutating): a record the update drops (a client re-applying a
//!   manifest without it) is put back, so `kubectl apply` keeps working.
//! - CREATE (validating, after every mutation): the record must be the
//!   requester's.
//! - UPDATE (validating, main resource and status): the record may not be
//!   added, changed or removed.

use std::collections::BTreeMap;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::api::ObjectMeta;
use pakket_api::{CREATED_BY_ANNOTATION, CreatorRecord};

use crate::review::Requester;

fn record_text(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()?
        .get(CREATED_BY_ANNOTATION)
        .map(String::as_str)
}

fn forged(instance: &str, requester: &Requester, found: &str) -> String {
    format!(
        "Instance {instance:?}: annotation {CREATED_BY_ANNOTATION} is {found:?} but the request \
         comes from {requester}; the webhook records the creator itself, so remove the \
         annotation from the manifest"
    )
}

/// The mutating answer on CREATE: the patch that adds the record (or none
/// when the requester's own record is already there), or why the record
/// the request carries is refused.
pub fn on_create(
    instance: &str,
    meta: &ObjectMeta,
    requester: &Requester,
) -> Result<Vec<PatchOperation>, String> {
    let mine = requester.creator_record();
    match record_text(meta) {
        None => Ok(vec![add(meta, &mine.to_annotation())]),
        Some(found) => match CreatorRecord::from_annotation(found) {
            Ok(record) if record == mine => Ok(Vec::new()),
            _ => Err(forged(instance, requester, found)),
        },
    }
}

/// The mutating answer on UPDATE: puts back a record the update dropped.
pub fn on_update(old: &ObjectMeta, new: &ObjectMeta) -> Vec<PatchOperation> {
    match (record_text(old), record_text(new)) {
        (Some(kept), None) => vec![add(new, kept)],
        _ => Vec::new(),
    }
}

/// The validating check on CREATE: the record is there and is the requester's.
pub fn check_create(
    instance: &str,
    meta: &ObjectMeta,
    requester: &Requester,
) -> Result<(), String> {
    let mine = requester.creator_record();
    match record_text(meta) {
        None => Err(format!(
            "Instance {instance:?} has no {CREATED_BY_ANNOTATION} annotation: the mutating \
             webhook pakket-webhooks did not run; check that its MutatingWebhookConfiguration \
             is installed"
        )),
        Some(found) => match CreatorRecord::from_annotation(found) {
            Ok(record) if record == mine => Ok(()),
            _ => Err(forged(instance, requester, found)),
        },
    }
}

/// The validating check on UPDATE: the record is exactly as it was.
pub fn check_update(instance: &str, old: &ObjectMeta, new: &ObjectMeta) -> Result<(), String> {
    let (before, after) = (record_text(old), record_text(new));
    if before == after {
        return Ok(());
    }
    let show = |text: Option<&str>| text.map_or("absent".to_owned(), |text| format!("{text:?}"));
    Err(format!(
        "Instance {instance:?}: annotation {CREATED_BY_ANNOTATION} cannot be added, changed or \
         removed after creation (it was {}, the update makes it {}); leave it as the webhook \
         wrote it",
        show(before),
        show(after)
    ))
}

/// The JSON-patch operation that sets the record, creating the annotations
/// map when the object has none (a JSON-patch `add` needs the parent).
fn add(meta: &ObjectMeta, value: &str) -> PatchOperation {
    match &meta.annotations {
        Some(_) => PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", CREATED_BY_ANNOTATION]),
            value: value.into(),
        }),
        None => PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations"]),
            value: serde_json::to_value(BTreeMap::from([(CREATED_BY_ANNOTATION, value)]))
                .expect("a map of strings serializes"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Requester {
        Requester::named("alice", &["system:authenticated", "pakket:test-users"])
    }

    fn meta_with(record: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some("hello".into()),
            annotations: record.map(|record| {
                BTreeMap::from([
                    ("other".to_owned(), "x".to_owned()),
                    (CREATED_BY_ANNOTATION.to_owned(), record.to_owned()),
                ])
            }),
            ..ObjectMeta::default()
        }
    }

    fn applied(meta: &ObjectMeta, patch: Vec<PatchOperation>) -> ObjectMeta {
        let mut object = serde_json::json!({ "metadata": meta });
        json_patch::patch(&mut object, &patch).unwrap();
        serde_json::from_value(object["metadata"].clone()).unwrap()
    }

    #[test]
    fn create_adds_the_requesters_record_with_or_without_annotations() {
        let no_annotations = ObjectMeta::default();
        let patch = on_create("hello", &no_annotations, &alice()).unwrap();
        let patched = applied(&no_annotations, patch);
        check_create("hello", &patched, &alice()).unwrap();

        let other = ObjectMeta {
            annotations: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
            ..ObjectMeta::default()
        };
        let patched = applied(&other, on_create("hello", &other, &alice()).unwrap());
        assert_eq!(patched.annotations.as_ref().unwrap().len(), 2);
        check_create("hello", &patched, &alice()).unwrap();
    }

    #[test]
    fn create_keeps_the_requesters_own_record_and_refuses_anyone_elses() {
        let own = alice().creator_record().to_annotation();
        assert_eq!(
            on_create("hello", &meta_with(Some(&own)), &alice()),
            Ok(vec![])
        );

        let admin = Requester::named("pakket-admin", &["system:masters"])
            .creator_record()
            .to_annotation();
        let error = on_create("hello", &meta_with(Some(&admin)), &alice()).unwrap_err();
        assert!(
            error.contains("the request comes from user \"alice\""),
            "{error}"
        );
        assert!(on_create("hello", &meta_with(Some("not json")), &alice()).is_err());
        assert!(check_create("hello", &meta_with(Some(&admin)), &alice()).is_err());
        assert!(check_create("hello", &meta_with(None), &alice()).is_err());
    }

    #[test]
    fn update_puts_back_a_dropped_record_and_refuses_any_other_change() {
        let own = alice().creator_record().to_annotation();
        let old = meta_with(Some(&own));
        let dropped = ObjectMeta::default();
        let restored = applied(&dropped, on_update(&old, &dropped));
        check_update("hello", &old, &restored).unwrap();
        assert!(on_update(&old, &old).is_empty());

        let error = check_update("hello", &old, &meta_with(Some("{}"))).unwrap_err();
        assert!(
            error.contains("cannot be added, changed or removed"),
            "{error}"
        );
        assert!(check_update("hello", &old, &dropped).is_err());
        assert!(check_update("hello", &meta_with(None), &old).is_err());
    }
}
