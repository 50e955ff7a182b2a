//! The requester records: who created an object and who last changed its
//! spec, written by the mutating webhook from the authenticated request
//! (never from what the user sent) and sealed with the record key, so the
//! runtime can tell them from forgeries ([`pakket_api::requester`]). The
//! same records are kept on Instances, Inputs and Operators; a record is
//! sealed for its object's kind and name ([`pakket_api::record_object`]) and
//! the digest of its spec.
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
//!
//! **Delegates.** A controller that writes objects on someone's behalf
//! (pakket-resolveset writes each child Instance for the people whose
//! Inputs need it, and each Operator's Input for the Operator's author)
//! is named to the webhook as a delegate (`--delegate`). A delegate's
//! write may carry a `last-changed-by` naming someone else, and it is kept
//! only if its seal verifies for this very object and spec: only holders
//! of the record key can seal, and only a delegate's write can carry one.
//! `created-by` is always the writer's own.

use std::collections::BTreeMap;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::api::ObjectMeta;
use pakket_api::{
    CREATED_BY_ANNOTATION, CreatorRecord, LAST_CHANGED_BY_ANNOTATION, RecordKey, record_object,
};

use crate::review::Requester;

/// The object whose records are written or checked, and how the request
/// stands to it.
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    /// `Instance`, `Input`, `Operator`.
    pub kind: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Whether the requester is one of the webhook's delegates.
    pub delegate: bool,
}

impl Subject<'_> {
    /// An Instance, written by someone who is no delegate.
    pub fn instance(name: &str) -> Subject<'_> {
        Subject {
            kind: "Instance",
            name,
            delegate: false,
        }
    }

    fn object(&self) -> String {
        record_object(self.kind, self.name)
    }

    /// Whether `text` is a `last-changed-by` record a delegate may carry
    /// here: sealed with `key` for this object and the spec `digest`.
    fn delegated(&self, text: &str, key: &RecordKey, digest: &str) -> bool {
        self.delegate
            && CreatorRecord::from_annotation(text).is_ok_and(|record| {
                record
                    .verify_for(key, LAST_CHANGED_BY_ANNOTATION, &self.object(), digest)
                    .is_ok()
            })
    }
}

fn record_text<'a>(meta: &'a ObjectMeta, annotation: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()?
        .get(annotation)
        .map(String::as_str)
}

fn forged(subject: &Subject<'_>, annotation: &str, requester: &Requester, found: &str) -> String {
    format!(
        "{} {:?}: annotation {annotation} is {found:?} but the request \
         comes from {requester}; the webhook records who asks itself, so remove the \
         annotation from the manifest",
        subject.kind, subject.name
    )
}

/// Whether `text` is a record naming the requester (seal aside).
fn names_requester(text: &str, requester: &Requester) -> bool {
    CreatorRecord::from_annotation(text)
        .is_ok_and(|record| record.same_identity(&requester.creator_record()))
}

/// The mutating answer on CREATE: the patch that writes the requester's
/// sealed record (for the spec whose digest is `digest`), or why the
/// record the request carries is refused.
pub fn on_create_for(
    subject: &Subject<'_>,
    meta: &ObjectMeta,
    digest: &str,
    requester: &Requester,
    key: &RecordKey,
) -> Result<Vec<PatchOperation>, String> {
    if meta.name.as_deref().unwrap_or_default().is_empty() {
        return Err(format!(
            "a {} needs metadata.name (generateName is not supported: the requester \
             record is sealed for the object's name)",
            subject.kind
        ));
    }
    let delegated = record_text(meta, LAST_CHANGED_BY_ANNOTATION)
        .is_some_and(|found| subject.delegated(found, key, digest));
    for annotation in [CREATED_BY_ANNOTATION, LAST_CHANGED_BY_ANNOTATION] {
        if annotation == LAST_CHANGED_BY_ANNOTATION && delegated {
            continue;
        }
        if let Some(found) = record_text(meta, annotation)
            && !names_requester(found, requester)
        {
            return Err(forged(subject, annotation, requester, found));
        }
    }
    let sealed = requester.creator_record().sealed_for(
        key,
        CREATED_BY_ANNOTATION,
        &subject.object(),
        digest.to_owned(),
    );
    let mut patch = vec![add(meta, CREATED_BY_ANNOTATION, &sealed.to_annotation())];
    if record_text(meta, LAST_CHANGED_BY_ANNOTATION).is_some() && !delegated {
        // A re-applied export may carry it; a new object has no changer yet.
        patch.push(PatchOperation::Remove(json_patch::RemoveOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", LAST_CHANGED_BY_ANNOTATION]),
        }));
    }
    Ok(patch)
}

/// The mutating answer on UPDATE (metadata and spec digest, before and
/// after): the requester's sealed `last-changed-by` when the spec changes
/// (a delegate's sealed one kept); records the update dropped, put back
/// otherwise.
pub fn on_update_for(
    subject: &Subject<'_>,
    old: (&ObjectMeta, &str),
    new: (&ObjectMeta, &str),
    requester: &Requester,
    key: &RecordKey,
) -> Vec<PatchOperation> {
    let (old_meta, old_digest) = old;
    let (new_meta, new_digest) = new;
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
    if old_digest != new_digest {
        let delegated = record_text(new_meta, LAST_CHANGED_BY_ANNOTATION)
            .is_some_and(|found| subject.delegated(found, key, new_digest));
        if !delegated {
            let sealed = requester.creator_record().sealed_for(
                key,
                LAST_CHANGED_BY_ANNOTATION,
                &subject.object(),
                new_digest.to_owned(),
            );
            put(
                LAST_CHANGED_BY_ANNOTATION,
                &sealed.to_annotation(),
                &mut patch,
            );
        }
    } else if let (Some(kept), None) = (
        record_text(old_meta, LAST_CHANGED_BY_ANNOTATION),
        record_text(new_meta, LAST_CHANGED_BY_ANNOTATION),
    ) {
        put(LAST_CHANGED_BY_ANNOTATION, kept, &mut patch);
    }
    patch
}

/// The validating check on CREATE: the record is the requester's and its
/// seal verifies for the spec as created; a `last-changed-by` only a
/// delegate may carry, sealed for this spec.
pub fn check_create_for(
    subject: &Subject<'_>,
    meta: &ObjectMeta,
    digest: &str,
    requester: &Requester,
    key: &RecordKey,
) -> Result<(), String> {
    let Some(found) = record_text(meta, CREATED_BY_ANNOTATION) else {
        return Err(format!(
            "{} {:?} has no {CREATED_BY_ANNOTATION} annotation: the mutating \
             webhook pakket-webhooks did not run; check that its MutatingWebhookConfiguration \
             is installed",
            subject.kind, subject.name
        ));
    };
    verify(
        subject,
        CREATED_BY_ANNOTATION,
        found,
        digest,
        requester,
        key,
    )?;
    match record_text(meta, LAST_CHANGED_BY_ANNOTATION) {
        Some(found) if !subject.delegated(found, key, digest) => Err(forged(
            subject,
            LAST_CHANGED_BY_ANNOTATION,
            requester,
            found,
        )),
        _ => Ok(()),
    }
}

fn verify(
    subject: &Subject<'_>,
    annotation: &'static str,
    found: &str,
    digest: &str,
    requester: &Requester,
    key: &RecordKey,
) -> Result<(), String> {
    if !names_requester(found, requester) {
        return Err(forged(subject, annotation, requester, found));
    }
    let record = CreatorRecord::from_annotation(found).map_err(|error| error.to_string())?;
    record
        .verify_for(key, annotation, &subject.object(), digest)
        .map_err(|error| {
            format!(
                "{} {:?}: {error}; a mutating webhook that ran after Pakket's changed \
                 the spec: let Pakket's webhook run last (reinvocationPolicy: IfNeeded)",
                subject.kind, subject.name
            )
        })
}

/// The validating check on UPDATE (metadata and spec digest, before and
/// after); `status` for writes to the status subresource, which may
/// change neither record.
pub fn check_update_for(
    subject: &Subject<'_>,
    old: (&ObjectMeta, &str),
    new: (&ObjectMeta, &str),
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
            "{} {:?}: annotation {annotation} cannot be added, changed or \
             removed by hand (it was {}, the update makes it {}); leave it as the webhook \
             wrote it",
            subject.kind,
            subject.name,
            show(before),
            show(after)
        ))
    };
    unchanged(CREATED_BY_ANNOTATION)?;
    if status || old.1 == new.1 {
        // A delegate may say, without changing the spec, for whom it writes
        // the object (a child first written before its requester was
        // sealed on it, or now asked for by someone else), with a record
        // sealed for this object and this very spec.
        let redelegated = !status
            && record_text(new.0, LAST_CHANGED_BY_ANNOTATION).is_some_and(|found| {
                record_text(old.0, LAST_CHANGED_BY_ANNOTATION) != Some(found)
                    && subject.delegated(found, key, new.1)
            });
        if redelegated {
            return Ok(());
        }
        return unchanged(LAST_CHANGED_BY_ANNOTATION);
    }
    match record_text(new.0, LAST_CHANGED_BY_ANNOTATION) {
        None => Err(format!(
            "{} {:?} changes its spec without a {LAST_CHANGED_BY_ANNOTATION} \
             annotation: the mutating webhook pakket-webhooks did not run",
            subject.kind, subject.name
        )),
        Some(found) if subject.delegated(found, key, new.1) => Ok(()),
        Some(found) => verify(
            subject,
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
    use pakket_api::{InstanceSpec, spec_digest};

    use super::*;

    // The Instance forms the tests read best in: an Instance written by
    // someone who is no delegate, sealed for its typed spec.

    fn on_create(
        instance: &str,
        meta: &ObjectMeta,
        spec: &InstanceSpec,
        requester: &Requester,
        key: &RecordKey,
    ) -> Result<Vec<PatchOperation>, String> {
        on_create_for(
            &Subject::instance(instance),
            meta,
            &spec_digest(spec),
            requester,
            key,
        )
    }

    fn on_update(
        instance: &str,
        old: (&ObjectMeta, &InstanceSpec),
        new: (&ObjectMeta, &InstanceSpec),
        requester: &Requester,
        key: &RecordKey,
    ) -> Vec<PatchOperation> {
        on_update_for(
            &Subject::instance(instance),
            (old.0, &spec_digest(old.1)),
            (new.0, &spec_digest(new.1)),
            requester,
            key,
        )
    }

    fn check_create(
        instance: &str,
        meta: &ObjectMeta,
        spec: &InstanceSpec,
        requester: &Requester,
        key: &RecordKey,
    ) -> Result<(), String> {
        check_create_for(
            &Subject::instance(instance),
            meta,
            &spec_digest(spec),
            requester,
            key,
        )
    }

    fn check_update(
        instance: &str,
        old: (&ObjectMeta, &InstanceSpec),
        new: (&ObjectMeta, &InstanceSpec),
        requester: &Requester,
        key: &RecordKey,
        status: bool,
    ) -> Result<(), String> {
        check_update_for(
            &Subject::instance(instance),
            (old.0, &spec_digest(old.1)),
            (new.0, &spec_digest(new.1)),
            requester,
            key,
            status,
        )
    }

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

    #[test]
    fn a_delegate_may_seal_for_whom_it_writes_an_unchanged_spec_and_nobody_else_may() {
        let controller =
            Requester::named("system:serviceaccount:pakket-system:pakket-resolveset", &[]);
        let digest = spec_digest(&spec("v1"));
        let delegate = Subject {
            kind: "Instance",
            name: "hello",
            delegate: true,
        };
        let for_alice = alice()
            .creator_record()
            .sealed_for(&key(), LAST_CHANGED_BY_ANNOTATION, "hello", digest.clone())
            .to_annotation();
        let before = meta_with(&[]);
        let after = meta_with(&[(LAST_CHANGED_BY_ANNOTATION, &for_alice)]);
        let update = |subject: &Subject<'_>, requester: &Requester, digest: &str, status: bool| {
            check_update_for(
                subject,
                (&before, digest),
                (&after, digest),
                requester,
                &key(),
                status,
            )
        };
        update(&delegate, &controller, &digest, false).unwrap();
        // Not on the status subresource, not by anyone else, not with a
        // record for another spec.
        assert!(update(&delegate, &controller, &digest, true).is_err());
        let mallory = Requester::named("mallory", &[]);
        assert!(update(&Subject::instance("hello"), &mallory, &digest, false).is_err());
        let other = spec_digest(&spec("v2"));
        assert!(update(&delegate, &controller, &other, false).is_err());
    }

    #[test]
    fn a_delegate_may_carry_a_sealed_record_of_someone_else_and_nobody_else_may() {
        let controller =
            Requester::named("system:serviceaccount:pakket-system:pakket-resolveset", &[]);
        let digest = spec_digest(&spec("v1"));
        let delegate = Subject {
            kind: "Instance",
            name: "hello",
            delegate: true,
        };
        let for_alice = alice().creator_record().sealed_for(
            &key(),
            LAST_CHANGED_BY_ANNOTATION,
            "hello",
            digest.clone(),
        );
        let meta = meta_with(&[(LAST_CHANGED_BY_ANNOTATION, &for_alice.to_annotation())]);
        // The delegate's create keeps it; created-by is the delegate's own.
        let patched = applied(
            &meta,
            on_create_for(&delegate, &meta, &digest, &controller, &key()).unwrap(),
        );
        assert_eq!(
            record_text(&patched, LAST_CHANGED_BY_ANNOTATION),
            Some(for_alice.to_annotation().as_str())
        );
        check_create_for(&delegate, &patched, &digest, &controller, &key()).unwrap();
        let created =
            CreatorRecord::from_annotation(record_text(&patched, CREATED_BY_ANNOTATION).unwrap())
                .unwrap();
        assert!(created.same_identity(&controller.creator_record()));

        // Anyone else carrying the very same record is refused.
        let mallory = Requester::named("mallory", &[]);
        let anyone = Subject::instance("hello");
        assert!(on_create_for(&anyone, &meta, &digest, &mallory, &key()).is_err());
        assert!(check_create_for(&anyone, &patched, &digest, &mallory, &key()).is_err());
        // A delegate's record for another spec or another object is not kept.
        let other_spec = spec_digest(&spec("v2"));
        assert!(on_create_for(&delegate, &meta, &other_spec, &controller, &key()).is_err());
        let elsewhere = Subject {
            name: "other",
            ..delegate
        };
        assert!(on_create_for(&elsewhere, &meta, &digest, &controller, &key()).is_err());
        let as_input = Subject {
            kind: "Input",
            ..delegate
        };
        assert!(on_create_for(&as_input, &meta, &digest, &controller, &key()).is_err());

        // An update by the delegate to a new spec keeps a record sealed for it.
        let v2 = alice().creator_record().sealed_for(
            &key(),
            LAST_CHANGED_BY_ANNOTATION,
            "hello",
            other_spec.clone(),
        );
        let mut updated = patched.clone();
        updated
            .annotations
            .as_mut()
            .unwrap()
            .insert(LAST_CHANGED_BY_ANNOTATION.into(), v2.to_annotation());
        assert!(
            on_update_for(
                &delegate,
                (&patched, &digest),
                (&updated, &other_spec),
                &controller,
                &key()
            )
            .is_empty()
        );
        check_update_for(
            &delegate,
            (&patched, &digest),
            (&updated, &other_spec),
            &controller,
            &key(),
            false,
        )
        .unwrap();
        assert!(
            check_update_for(
                &anyone,
                (&patched, &digest),
                (&updated, &other_spec),
                &mallory,
                &key(),
                false
            )
            .is_err()
        );
    }
}
