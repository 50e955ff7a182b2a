//! New content that drops CRDs whose APIs are in use is refused before
//! anything is written: "Bundle x-v2 drops CRD etcdclusters.etcd.database.coreos.com,
//! which is in use: 3 EtcdCluster objects in namespaces a, b; Instance y
//! requires …". The old content keeps running, and the Instance says what
//! to do. The retry after a failed install looks again, so the pivot goes
//! through by itself once the users are gone.
//!
//! This is the runtime's check, not the admission webhook's: which CRDs a
//! Bundle has is known only once its content is unpacked and rendered,
//! long after the Instance was written.
//!
//! An admin who means it annotates the Instance
//! [`PIVOT_IN_USE_ANNOTATION`] with the new Bundle's name (the webhook
//! lets only users with the verb `delete-in-use` set it); the pivot then
//! goes through, a Warning Event says so, and the CRDs still in use stay
//! (the prune never deletes a CRD while objects of it exist).
//!
//! A served version dropped from a CRD the new content keeps is refused
//! always, in use or not, by the CRD upgrade-safety check.

use std::collections::BTreeSet;

use kube::{Client, ResourceExt as _};
use pakket_api::{Instance, ObjectRef, PIVOT_IN_USE_ANNOTATION};

use crate::inventory;

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No dropped CRD is in use.
    Clear,
    /// Refused: why, in words, and what to do.
    Refused(String),
    /// In use, but the Instance's annotation lets this pivot through: who
    /// uses what, for the Event.
    Overridden(String),
}

/// Whether applying `objects` (Bundle `bundle`) in place of `previous` may
/// go ahead.
pub(super) async fn judge(
    client: &Client,
    instance: &Instance,
    bundle: &str,
    previous: &[ObjectRef],
    objects: &[serde_json::Value],
) -> Result<Verdict, kube::Error> {
    let dropped = dropped_crds(previous, objects);
    if dropped.is_empty() {
        return Ok(Verdict::Clear);
    }
    let users = inventory::users_of_crds(client, instance, &dropped).await?;
    if !users.in_use() {
        return Ok(Verdict::Clear);
    }
    let names: Vec<&str> = dropped.iter().copied().collect();
    let words = format!(
        "Bundle {bundle} drops CustomResourceDefinition {}, which is in use: {}",
        names.join(", "),
        users.words()
    );
    if overridden_for(instance, bundle) {
        return Ok(Verdict::Overridden(words));
    }
    Ok(Verdict::Refused(format!(
        "{words}; nothing was applied and Bundle {} keeps running. Remove the users first (the pivot then goes through by itself), or, with the verb delete-in-use on instances, annotate the Instance {PIVOT_IN_USE_ANNOTATION}={bundle} (the CRDs then stay while objects of them exist)",
        instance
            .status
            .as_ref()
            .and_then(|status| status.active_bundle.as_deref())
            .unwrap_or("(the installed one)")
    )))
}

/// The CRDs `previous` has and `objects` lacks, by name.
fn dropped_crds<'a>(previous: &'a [ObjectRef], objects: &[serde_json::Value]) -> BTreeSet<&'a str> {
    let kept: BTreeSet<&str> = objects
        .iter()
        .filter(|object| object["kind"] == "CustomResourceDefinition")
        .filter_map(|object| object.pointer("/metadata/name")?.as_str())
        .collect();
    previous
        .iter()
        .filter(|reference| reference.kind == "CustomResourceDefinition")
        .map(|reference| reference.name.as_str())
        .filter(|name| !kept.contains(name))
        .collect()
}

/// Whether the Instance's override names exactly this Bundle.
fn overridden_for(instance: &Instance, bundle: &str) -> bool {
    instance
        .annotations()
        .get(PIVOT_IN_USE_ANNOTATION)
        .is_some_and(|named| named.trim() == bundle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: name.into(),
            namespace: None,
        }
    }

    #[test]
    fn only_crds_the_new_content_lacks_are_dropped() {
        let previous = vec![
            crd("a.example.com"),
            crd("b.example.com"),
            ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "gone".into(),
                namespace: Some("ns".into()),
            },
        ];
        let objects = vec![
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.example.com"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b.example.com"}}),
        ];
        assert_eq!(
            dropped_crds(&previous, &objects),
            BTreeSet::from(["b.example.com"])
        );
    }

    #[test]
    fn the_override_covers_only_the_bundle_it_names() {
        let mut instance = Instance::new(
            "x",
            serde_json::from_value(json!({"class": "c", "bundle": {"name": "x-v2"}})).unwrap(),
        );
        assert!(!overridden_for(&instance, "x-v2"));
        instance
            .annotations_mut()
            .insert(PIVOT_IN_USE_ANNOTATION.into(), "x-v2".into());
        assert!(overridden_for(&instance, "x-v2"));
        assert!(!overridden_for(&instance, "x-v3"));
    }
}
