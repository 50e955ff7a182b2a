//! The requester records: who created an Instance and who last changed its
//! spec, written by the mutating webhook from the authenticated request
//! (never from what the user sent) and sealed with the record key, so the
//! runtime can tell them from forgeries ([`pakket_api::requester`]).
//!
//! - CREATE (mutating): no record, or one naming the requester (re-applying
//!   an exported manifest) → the requester's record, sealed for this spec;
//!   a record naming anyone else → refused as forged.
//! - UPDATE (mutating): a spec change writes `last-changed-by` (the
//!   requester, sealed for the new spec); records the update drops (a
//!   client re-applying a manifest without them) are put back.
//! - CREATE (validating, after every mutation): `created-by` is the
//!   requester's and its seal verifies for the final spec (so a later
//!   mutating webhook that changed the spec is caught).
//! - UPDATE (validating, main resource): `created-by` never changes;
//!   `last-changed-by` changes only with the spec, to the requester's
//!   record sealed for the new spec. Status writes change neither.

use std::collections::BTreeMap;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::api::ObjectMeta;
use pakket_api::{
    CREATED_BY_ANNOTATION, CreatorRecord, InstanceSpec, LAST_CHANGED_BY_ANNOTATION, RecordKey,
};

use crate::review::Requester;

fn record_text<'a>(meta: &'a ObjectMeta, annotation: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()?
        .get(annotation)
        .map(String::as_str)
}

fn forged(instance: &str, annotation: &str, requester: &Requester, found: &str) -> String {
    format!(
        "Instance {instance:?}: annotation {annotation} is {found:?} but the request \
         comes from {requester}; the webhook records who asks itself, so remove the \
         annotation from the manifest"
    )
}

/// Whether `text` is a record naming the requester (seal aside).
fn names_requester(text: &str, requester: &Requester) -> bool {
    CreatorRecord::from_annotation(text)
        .is_ok_and(|record| record.same_identity(&requester.creator_record()))
}

/// The mutating answer on CREATE: the patch that writes the requester's
/// sealed record, or why the record the request carries is refused.
pub fn on_create(
    instance: &str,
    meta: &ObjectMeta,
    spec: &InstanceSpec,
    requester: &Requester,
    key: &RecordKey,
) -> Result<Vec<PatchOperation>, String> {
    if meta.name.as_deref().unwrap_or_default().is_empty() {
        return Err(
            "an Instance needs metadata.name (generateName is not supported: the requester \
             record is sealed for the Instance's name)"
                .to_owned(),
        );
    }
    for annotation in [CREATED_BY_ANNOTATION, LAST_CHANGED_BY_ANNOTATION] {
        if let Some(found) = record_text(meta, annotation)
            && !names_requester(found, requester)
        {
            return Err(forged(instance, annotation, requester, found));
        }
    }
    let sealed = requester
        .creator_record()
        .sealed(key, CREATED_BY_ANNOTATION, instance, spec);
    let mut patch = vec![add(meta, CREATED_BY_ANNOTATION, &sealed.to_annotation())];
    if record_text(meta, LAST_CHANGED_BY_ANNOTATION).is_some() {
        // A re-applied export may carry it; a new Instance has no changer yet.
        patch.push(PatchOperation::Remove(json_patch::RemoveOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", LAST_CHANGED_BY_ANNOTATION]),
        }));
    }
    Ok(patch)
}

/// The mutating answer on UPDATE: the requester's sealed `last-changed-by`
/// when the spec changes; records the update dropped, put back otherwise.
pub fn on_update(
    instance: &str,
    old: (&ObjectMeta, &InstanceSpec),
    new: (&ObjectMeta, &InstanceSpec),
    requester: &Requester,
    key: &RecordKey,
) -> Vec<PatchOperation> {
    let (old_meta, old_spec) = old;
    let (new_meta, new_spec) = new;
    let mut patch = Vec::new();
    let mut annotations_exist = new_meta.annotations.is_some();
    let mut put = |annotation: &str, value: &str, patch: &mut Vec<PatchOperation>| {
        patch.push(add_to(annotations_exist, annotation, value));
        annotations_exist = true;
    };
    if let (Some(kept), None) = (
        record_text(old_meta, CREATED_BY_ANNOTATION),
        record_text(new_meta, CREATED_BY_ANNOTATION),
    ) {
        put(CREATED_BY_ANNOTATION, kept, &mut patch);
    }
    if old_spec != new_spec {
        let sealed =
            requester
                .creator_record()
                .sealed(key, LAST_CHANGED_BY_ANNOTATION, instance, new_spec);
        put(
            LAST_CHANGED_BY_ANNOTATION,
            &sealed.to_annotation(),
            &mut patch,
        );
    } else if let (Some(kept), None) = (
        record_text(old_meta, LAST_CHANGED_BY_ANNOTATION),
        record_text(new_meta, LAST_CHANGED_BY_ANNOTATION),
    ) {
        put(LAST_CHANGED_BY_ANNOTATION, kept, &mut patch);
    }
    patch
}

/// The validating check on CREATE: the record is the requester's and its
/// seal verifies for the spec as created.
pub fn check_create(
    instance: &str,
    meta: &ObjectMeta,
    spec: &InstanceSpec,
    requester: &Requester,
    key: &RecordKey,
) -> Result<(), String> {
    let Some(found) = record_text(meta, CREATED_BY_ANNOTATION) else {
        return Err(format!(
            "Instance {instance:?} has no {CREATED_BY_ANNOTATION} annotation: the mutating \
             webhook pakket-webhooks did not run; check that its MutatingWebhookConfiguration \
             is installed"
        ));
    };
    verify(instance, CREATED_BY_ANNOTATION, found, spec, requester, key)
}

fn verify(
    instance: &str,
    annotation: &'static str,
    found: &str,
    spec: &InstanceSpec,
    requester: &Requester,
    key: &RecordKey,
) -> Result<(), String> {
    if !names_requester(found, requester) {
        return Err(forged(instance, annotation, requester, found));
    }
    let record = CreatorRecord::from_annotation(found).map_err(|error| error.to_string())?;
    record.verify(key, annotation, instance, spec).map_err(|error| {
        format!(
            "Instance {instance:?}: {error}; a mutating webhook that ran after Pakket's changed \
             the spec: let Pakket's webhook run last (reinvocationPolicy: IfNeeded)"
        )
    })
}

/// The validating check on UPDATE; `status` for writes to the status
/// subresource, which may change neither record.
pub fn check_update(
    instance: &str,
    old: (&ObjectMeta, &InstanceSpec),
    new: (&ObjectMeta, &InstanceSpec),
    requester: &Requester,
    key: &RecordKey,
    status: bool,
) -> Result<(), String> {
    let unchanged = |annotation: &str| -> Result<(), String> {
        let (before, after) = (
            record_text(old.0, annotation),
            record_text(new.0, annotation),
        );
        if before == after {
            return Ok(());
        }
        let show =
            |text: Option<&str>| text.map_or("absent".to_owned(), |text| format!("{text:?}"));
        Err(format!(
            "Instance {instance:?}: annotation {annotation} cannot be added, changed or \
             removed by hand (it was {}, the update makes it {}); leave it as the webhook \
             wrote it",
            show(before),
            show(after)
        ))
    };
    unchanged(CREATED_BY_ANNOTATION)?;
    if status || old.1 == new.1 {
        return unchanged(LAST_CHANGED_BY_ANNOTATION);
    }
    match record_text(new.0, LAST_CHANGED_BY_ANNOTATION) {
        None => Err(format!(
            "Instance {instance:?} changes its spec without a {LAST_CHANGED_BY_ANNOTATION} \
             annotation: the mutating webhook pakket-webhooks did not run"
        )),
        Some(found) => verify(
            instance,
            LAST_CHANGED_BY_ANNOTATION,
            found,
            new.1,
            requester,
            key,
        ),
    }
}

/// The JSON-patch operation that sets `annotation`, creating the
/// annotations map when the object has none (a JSON-patch `add` needs the
/// parent).
fn add(meta: &ObjectMeta, annotation: &str, value: &str) -> PatchOperation {
    add_to(meta.annotations.is_some(), annotation, value)
}

fn add_to(annotations_exist: bool, annotation: &str, value: &str) -> PatchOperation {
    if annotations_exist {
        PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", annotation]),
            value: value.into(),
        })
    } else {
        PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations"]),
            value: serde_json::to_value(BTreeMap::from([(annotation, value)]))
                .expect("a map of strings serializes"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Requester {
        Requester::named("alice", &["system:authenticated", "pakket:test-users"])
    }

    fn key() -> RecordKey {
        RecordKey::from_bytes(&[3; 32]).unwrap()
    }

    fn spec(bundle: &str) -> InstanceSpec {
        serde_json::from_value(serde_json::json!({"class": "plain", "bundle": {"name": bundle}}))
            .unwrap()
    }

    fn meta_with(records: &[(&str, &str)]) -> ObjectMeta {
        let mut annotations = BTreeMap::from([("other".to_owned(), "x".to_owned())]);
        for (annotation, record) in records {
            annotations.insert((*annotation).to_owned(), (*record).to_owned());
        }
        ObjectMeta {
            name: Some("hello".into()),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }
    }

    fn applied(meta: &ObjectMeta, patch: Vec<PatchOperation>) -> ObjectMeta {
        let mut object = serde_json::json!({ "metadata": meta });
        json_patch::patch(&mut object, &patch).unwrap();
        serde_json::from_value(object["metadata"].clone()).unwrap()
    }

    #[test]
    fn create_seals_the_requesters_record_with_or_without_annotations() {
        let bare = ObjectMeta {
            name: Some("hello".into()),
            ..ObjectMeta::default()
        };
        let patched = applied(
            &bare,
            on_create("hello", &bare, &spec("v1"), &alice(), &key()).unwrap(),
        );
        check_create("hello", &patched, &spec("v1"), &alice(), &key()).unwrap();
        // The spec changed after our webhook: the seal no longer verifies.
        let error = check_create("hello", &patched, &spec("v2"), &alice(), &key()).unwrap_err();
        assert!(error.contains("reinvocationPolicy"), "{error}");
    }

    #[test]
    fn create_refuses_a_record_naming_someone_else_and_reseals_the_requesters_own() {
        let admin = Requester::named("pakket-admin", &["system:masters"])
            .creator_record()
            .to_annotation();
        let error = on_create(
            "hello",
            &meta_with(&[(CREATED_BY_ANNOTATION, &admin)]),
            &spec("v1"),
            &alice(),
            &key(),
        )
        .unwrap_err();
        assert!(
            error.contains("the request comes from user \"alice\""),
            "{error}"
        );
        let forged_changer = on_create(
            "hello",
            &meta_with(&[(LAST_CHANGED_BY_ANNOTATION, &admin)]),
            &spec("v1"),
            &alice(),
            &key(),
        );
        assert!(forged_changer.is_err());
        // Her own unsealed record (an export re-applied) is sealed afresh.
        let own = alice().creator_record().to_annotation();
        let meta = meta_with(&[(CREATED_BY_ANNOTATION, &own)]);
        let patched = applied(
            &meta,
            on_create("hello", &meta, &spec("v1"), &alice(), &key()).unwrap(),
        );
        check_create("hello", &patched, &spec("v1"), &alice(), &key()).unwrap();
        assert!(
            check_create("hello", &meta, &spec("v1"), &alice(), &key()).is_err(),
            "unsealed"
        );
    }

    #[test]
    fn the_validating_checks_refuse_the_requesters_own_record_sealed_with_another_key() {
        let other = RecordKey::from_bytes(&[4; 32]).unwrap();
        let created =
            alice()
                .creator_record()
                .sealed(&other, CREATED_BY_ANNOTATION, "hello", &spec("v1"));
        let meta = meta_with(&[(CREATED_BY_ANNOTATION, &created.to_annotation())]);
        let error = check_create("hello", &meta, &spec("v1"), &alice(), &key()).unwrap_err();
        assert!(error.contains("does not verify"), "{error}");
        // The mutating webhook replaces it with a seal of its own key.
        let patched = applied(
            &meta,
            on_create("hello", &meta, &spec("v1"), &alice(), &key()).unwrap(),
        );
        check_create("hello", &patched, &spec("v1"), &alice(), &key()).unwrap();

        let changed = alice().creator_record().sealed(
            &other,
            LAST_CHANGED_BY_ANNOTATION,
            "hello",
            &spec("v2"),
        );
        let new = meta_with(&[
            (CREATED_BY_ANNOTATION, &created.to_annotation()),
            (LAST_CHANGED_BY_ANNOTATION, &changed.to_annotation()),
        ]);
        let error = check_update(
            "hello",
            (&meta, &spec("v1")),
            (&new, &spec("v2")),
            &alice(),
            &key(),
            false,
        )
        .unwrap_err();
        assert!(error.contains(LAST_CHANGED_BY_ANNOTATION), "{error}");
    }

    #[test]
    fn a_spec_change_records_who_made_it_and_nothing_else_moves_the_records() {
        let created =
            alice()
                .creator_record()
                .sealed(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"));
        let old = meta_with(&[(CREATED_BY_ANNOTATION, &created.to_annotation())]);
        let bob = Requester::named("bob", &[]);
        // bob changes the spec: last-changed-by is his, sealed for v2.
        let dropped = ObjectMeta {
            name: Some("hello".into()),
            ..ObjectMeta::default()
        };
        let patch = on_update(
            "hello",
            (&old, &spec("v1")),
            (&dropped, &spec("v2")),
            &bob,
            &key(),
        );
        let new = applied(&dropped, patch);
        check_update(
            "hello",
            (&old, &spec("v1")),
            (&new, &spec("v2")),
            &bob,
            &key(),
            false,
        )
        .unwrap();
        let record =
            CreatorRecord::from_annotation(record_text(&new, LAST_CHANGED_BY_ANNOTATION).unwrap())
                .unwrap();
        assert_eq!(record.username, "bob");
        // ...and alice cannot pass bob's record off as hers.
        assert!(
            check_update(
                "hello",
                (&old, &spec("v1")),
                (&new, &spec("v2")),
                &alice(),
                &key(),
                false
            )
            .is_err()
        );
        // A metadata-only update keeps both records; a hand edit is refused.
        let same = on_update(
            "hello",
            (&new, &spec("v2")),
            (&new, &spec("v2")),
            &alice(),
            &key(),
        );
        assert!(same.is_empty());
        let forged = meta_with(&[
            (CREATED_BY_ANNOTATION, &created.to_annotation()),
            (LAST_CHANGED_BY_ANNOTATION, "{}"),
        ]);
        let error = check_update(
            "hello",
            (&new, &spec("v2")),
            (&forged, &spec("v2")),
            &alice(),
            &key(),
            false,
        )
        .unwrap_err();
        assert!(
            error.contains("cannot be added, changed or removed by hand"),
            "{error}"
        );
        // A status write may change neither, even with a spec that differs.
        assert!(
            check_update(
                "hello",
                (&old, &spec("v1")),
                (&new, &spec("v2")),
                &bob,
                &key(),
                true
            )
            .is_err()
        );
    }
}
