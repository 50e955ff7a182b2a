//! Pakket's own kinds inside content. An Instance, Bundle, Package, Input
//! or ProvisionerClass in content would be written by the provisioner,
//! with its rights and under its name: the admission webhooks would record
//! the provisioner as its requester, and `UserPermission` on the child's
//! class would ask about the provisioner. So:
//!
//! - content holding an object of a `*.pakket.dev` group is refused,
//!   naming it, unless the provisioner declares that it makes that kind
//!   ([`crate::Provisioner::pakket_kinds`]);
//! - a declared child is judged by whoever asked for its parent: it
//!   carries a `last-changed-by` record sealed for the child's name and
//!   spec, either the one the provisioner sealed itself for a person it
//!   installs for (verified here), or the parent's own verified requester,
//!   sealed here. A parent whose requester cannot be verified makes no
//!   child: nothing would say whose rights count.
//!
//! The admission webhooks keep such a record only on a write by one of
//! their delegates (`--delegate`), so a provisioner that makes Pakket kinds
//! runs as a delegate.

use pakket_api::{
    CreatorRecord, Instance, InstanceSpec, LAST_CHANGED_BY_ANNOTATION, RecordKey, record_object,
    spec_digest, value_digest,
};
use serde_json::Value;

use crate::apply::reference_of;

/// One of Pakket's own kinds, by API group and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PakketKind {
    /// The API group, e.g. `core.pakket.dev`.
    pub group: &'static str,
    /// The kind, e.g. `Instance`.
    pub kind: &'static str,
}

impl PakketKind {
    /// A child Instance (`core.pakket.dev`).
    pub const INSTANCE: Self = Self {
        group: "core.pakket.dev",
        kind: "Instance",
    };
}

/// Whether `group` is one of Pakket's API groups (`pakket.dev` or any
/// subdomain of it).
pub fn is_pakket_group(group: &str) -> bool {
    group == "pakket.dev" || group.ends_with(".pakket.dev")
}

/// The group of an object's `apiVersion` (`""` for the core group).
fn group_of(object: &Value) -> &str {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|version| version.split_once('/'))
        .map_or("", |(group, _)| group)
}

/// `objects` with every Pakket child sealed for the person it is made
/// for, or why the content is refused (a sentence naming the object).
pub fn judged_children(
    mut objects: Vec<Value>,
    declared: &[PakketKind],
    parent: &Instance,
    key: Option<&RecordKey>,
    provisioner: &str,
) -> Result<Vec<Value>, String> {
    for object in &mut objects {
        let group = group_of(object).to_owned();
        if !is_pakket_group(&group) {
            continue;
        }
        let reference = reference_of(object);
        let made = declared
            .iter()
            .any(|kind| kind.group == group && kind.kind == reference.kind);
        if !made {
            return Err(format!(
                "the content holds {reference} ({}), one of Pakket's own kinds, and provisioner \
                 {provisioner} does not make such objects: it would write it with its own rights, \
                 not its requester's. Nothing is applied; install that object by itself (an admin \
                 or its requester writes it), or remove it from the content",
                reference.api_version
            ));
        }
        // Without a key nothing can be sealed or verified; every policy
        // then asks a person about the child, as about its parent.
        let Some(key) = key else { continue };
        seal_child(object, parent, key)
            .map_err(|problem| format!("{reference} in the content: {problem}"))?;
    }
    Ok(objects)
}

/// The record `object` is judged by, checked or written.
fn seal_child(object: &mut Value, parent: &Instance, key: &RecordKey) -> Result<(), String> {
    let reference = reference_of(object);
    let object_name = record_object(&reference.kind, &reference.name);
    let digest = child_spec_digest(object, &reference.kind)?;
    let annotations = object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    if let Some(text) = annotations
        .and_then(|annotations| annotations.get(LAST_CHANGED_BY_ANNOTATION))
        .and_then(Value::as_str)
    {
        // The provisioner sealed the person it installs this child for.
        let record = CreatorRecord::from_annotation(text).map_err(|error| {
            format!("its {LAST_CHANGED_BY_ANNOTATION} record is not a record: {error}")
        })?;
        return record
            .verify_for(key, LAST_CHANGED_BY_ANNOTATION, &object_name, &digest)
            .map_err(|error| format!("its requester record does not verify: {error}"));
    }
    let (requester, _) = pakket_api::requester(parent, Some(key)).map_err(|error| {
        format!(
            "it would be judged by the rights of whoever asked for Instance {}, and {error}; \
             nothing is applied until the Instance's spec is written again with the admission \
             webhooks running",
            parent.metadata.name.as_deref().unwrap_or_default()
        )
    })?;
    let sealed = requester.sealed_for(key, LAST_CHANGED_BY_ANNOTATION, &object_name, digest);
    let metadata = object
        .as_object_mut()
        .ok_or("it is not an object")?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let annotations = metadata
        .as_object_mut()
        .ok_or("its metadata is not an object")?
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    annotations
        .as_object_mut()
        .ok_or("its metadata.annotations is not an object")?
        .insert(
            LAST_CHANGED_BY_ANNOTATION.to_owned(),
            Value::String(sealed.to_annotation()),
        );
    Ok(())
}

/// The digest a record on the child is sealed for: an Instance's spec as
/// its type writes it, any other kind's spec as canonical JSON (what the
/// admission webhooks compute).
fn child_spec_digest(object: &Value, kind: &str) -> Result<String, String> {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    if kind == "Instance" {
        let spec: InstanceSpec =
            serde_json::from_value(spec).map_err(|error| format!("spec: {error}"))?;
        Ok(spec_digest(&spec))
    } else {
        Ok(value_digest(&spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::CREATED_BY_ANNOTATION;
    use serde_json::json;

    fn key() -> RecordKey {
        RecordKey::from_bytes(&[7; 32]).unwrap()
    }

    fn alice() -> CreatorRecord {
        CreatorRecord::new("alice", Some("alice".into()), vec!["team-a".into()])
    }

    /// A parent Instance created by `person`, sealed with `key`.
    fn parent_by(person: &CreatorRecord, key: &RecordKey) -> Instance {
        let mut parent: Instance = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": "parent" },
            "spec": { "class": "plain", "bundle": { "name": "content" } },
        }))
        .unwrap();
        let sealed = person.sealed(key, CREATED_BY_ANNOTATION, "parent", &parent.spec);
        parent.metadata.annotations = Some(
            [(CREATED_BY_ANNOTATION.to_owned(), sealed.to_annotation())]
                .into_iter()
                .collect(),
        );
        parent
    }

    fn child_instance() -> Value {
        json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": "child" },
            "spec": { "class": "cluster-admin-class", "bundle": { "name": "anything" } },
        })
    }

    fn config_map() -> Value {
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c", "namespace": "a" } })
    }

    #[test]
    fn pakket_kinds_a_provisioner_does_not_make_are_refused_by_name() {
        for object in [
            child_instance(),
            json!({ "apiVersion": "core.pakket.dev/v1alpha1", "kind": "ProvisionerClass", "metadata": { "name": "mine" } }),
            json!({ "apiVersion": "packages.pakket.dev/v1alpha1", "kind": "ClusterPackage", "metadata": { "name": "p" } }),
            json!({ "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input", "metadata": { "name": "i" } }),
        ] {
            let error = judged_children(
                vec![config_map(), object.clone()],
                &[],
                &parent_by(&alice(), &key()),
                Some(&key()),
                "pakket.dev/plain",
            )
            .unwrap_err();
            let name = object["metadata"]["name"].as_str().unwrap();
            assert!(error.contains(name), "{error}");
            assert!(error.contains("pakket.dev/plain"), "{error}");
        }
        // Declaring Instances declares nothing else.
        let error = judged_children(
            vec![json!({ "apiVersion": "core.pakket.dev/v1alpha1", "kind": "ProvisionerClass", "metadata": { "name": "mine" } })],
            &[PakketKind::INSTANCE],
            &parent_by(&alice(), &key()),
            Some(&key()),
            "pakket.dev/resolveset",
        )
        .unwrap_err();
        assert!(error.contains("ProvisionerClass/mine"), "{error}");
    }

    #[test]
    fn groups_that_only_look_like_pakkets_are_not_pakkets() {
        assert!(is_pakket_group("core.pakket.dev"));
        assert!(is_pakket_group("pakket.dev"));
        assert!(!is_pakket_group("notpakket.dev"));
        assert!(!is_pakket_group("pakket.dev.example.com"));
        let objects = vec![
            config_map(),
            json!({ "apiVersion": "widgets.notpakket.dev/v1", "kind": "Widget", "metadata": { "name": "w" } }),
        ];
        assert_eq!(
            judged_children(
                objects.clone(),
                &[],
                &parent_by(&alice(), &key()),
                Some(&key()),
                "p"
            ),
            Ok(objects)
        );
    }

    #[test]
    fn a_declared_child_carries_its_parents_requester_sealed_for_itself() {
        let key = key();
        let objects = judged_children(
            vec![child_instance()],
            &[PakketKind::INSTANCE],
            &parent_by(&alice(), &key),
            Some(&key),
            "p",
        )
        .unwrap();
        let child: Instance = serde_json::from_value(objects[0].clone()).unwrap();
        let (requester, annotation) = pakket_api::requester(&child, Some(&key)).unwrap();
        assert_eq!(annotation, LAST_CHANGED_BY_ANNOTATION);
        assert!(requester.same_identity(&alice()));
    }

    #[test]
    fn a_parent_without_a_verified_requester_makes_no_child() {
        let key = key();
        let mut parent = parent_by(&alice(), &key);
        // Sealed with another key: a forgery.
        parent = {
            let other = RecordKey::from_bytes(&[9; 32]).unwrap();
            let mut forged = parent_by(&alice(), &other);
            forged.metadata.name = parent.metadata.name.clone();
            forged
        };
        let error = judged_children(
            vec![child_instance()],
            &[PakketKind::INSTANCE],
            &parent,
            Some(&key),
            "p",
        )
        .unwrap_err();
        assert!(error.contains("Instance/child"), "{error}");
        assert!(error.contains("Instance parent"), "{error}");
    }

    #[test]
    fn a_record_the_provisioner_sealed_is_kept_only_if_it_verifies_for_the_child() {
        let key = key();
        let carol = CreatorRecord::new("carol", None, vec![]);
        let mut child = child_instance();
        let spec: InstanceSpec = serde_json::from_value(child["spec"].clone()).unwrap();
        let sealed = carol.sealed(&key, LAST_CHANGED_BY_ANNOTATION, "child", &spec);
        child["metadata"]["annotations"] =
            json!({ LAST_CHANGED_BY_ANNOTATION: sealed.to_annotation() });
        let parent = parent_by(&alice(), &key);
        let kept = judged_children(
            vec![child.clone()],
            &[PakketKind::INSTANCE],
            &parent,
            Some(&key),
            "p",
        )
        .unwrap();
        let judged: Instance = serde_json::from_value(kept[0].clone()).unwrap();
        assert!(
            pakket_api::requester(&judged, Some(&key))
                .unwrap()
                .0
                .same_identity(&carol)
        );

        // The same record on a child with another spec does not verify.
        child["spec"]["class"] = json!("another-class");
        let error = judged_children(
            vec![child],
            &[PakketKind::INSTANCE],
            &parent,
            Some(&key),
            "p",
        )
        .unwrap_err();
        assert!(error.contains("does not verify"), "{error}");
    }
}
