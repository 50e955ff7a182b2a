//! The ownership records of each labelled object as the drift watches last
//! saw it: its UID, resourceVersion, Pakket's labels, an adoption offer and
//! the names of its field managers, all that
//! [`crate::ownership::standing_of`] reads. A prune or an uninstall judges
//! an object from these instead of reading it again, and deletes it with a
//! precondition on that UID and resourceVersion: an object changed since
//! the watch saw it (or swapped for another of the same name) refuses the
//! delete with a conflict, and is then read and judged afresh. So the
//! guarantee stays the one a read gives, without the read.
//!
//! The health annotation ([`HEALTH_ANNOTATION`]) is kept too: whether a
//! Service asks for ready endpoints decides whether its health is more
//! than its existence, which the health step judges by this copy
//! ([`crate::apply::to_read`]).
//!
//! Only those few fields are kept (no fieldsV1, no other annotations such
//! as kubectl's last-applied configuration), so the copy of every
//! installed object costs a few hundred bytes.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::ObjectMeta;
use pakket_api::ObjectRef;
use pakket_api::ownership::{
    ADOPT_ANNOTATION, HEALTH_ANNOTATION, INSTANCE_LABEL, INSTANCE_UID_LABEL,
};

/// Each labelled object's ownership records, as last seen.
#[derive(Default)]
pub struct Records {
    seen: HashMap<ObjectRef, ObjectMeta>,
}

impl Records {
    /// Keeps `metadata`'s ownership records for `reference`.
    pub fn saw(&mut self, reference: &ObjectRef, metadata: &ObjectMeta) {
        self.seen.insert(reference.clone(), trimmed(metadata));
    }

    /// Forgets `reference` (deleted, or no longer labelled).
    pub fn gone(&mut self, reference: &ObjectRef) {
        self.seen.remove(reference);
    }

    /// `reference`'s records as last seen, if it was.
    pub fn get(&self, reference: &ObjectRef) -> Option<ObjectMeta> {
        self.seen.get(reference).cloned()
    }
}

/// What of `metadata` ownership is judged by: identity and version,
/// Pakket's labels, the adoption offer, and one managedFields entry per
/// manager (its name alone); and the health annotation.
fn trimmed(metadata: &ObjectMeta) -> ObjectMeta {
    let keep = |map: Option<&BTreeMap<String, String>>, keys: &[&str]| {
        let kept: BTreeMap<String, String> = map
            .into_iter()
            .flatten()
            .filter(|(key, _)| keys.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        (!kept.is_empty()).then_some(kept)
    };
    let mut managers: Vec<&str> = metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.as_deref())
        .collect();
    managers.sort_unstable();
    managers.dedup();
    ObjectMeta {
        name: metadata.name.clone(),
        namespace: metadata.namespace.clone(),
        uid: metadata.uid.clone(),
        resource_version: metadata.resource_version.clone(),
        labels: keep(
            metadata.labels.as_ref(),
            &[INSTANCE_LABEL, INSTANCE_UID_LABEL],
        ),
        annotations: keep(
            metadata.annotations.as_ref(),
            &[ADOPT_ANNOTATION, HEALTH_ANNOTATION],
        ),
        managed_fields: Some(
            managers
                .into_iter()
                .map(|manager| ManagedFieldsEntry {
                    manager: Some(manager.to_owned()),
                    ..ManagedFieldsEntry::default()
                })
                .collect(),
        ),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use kube::api::{ApiResource, DynamicObject};
    use pakket_api::ownership::FIELD_MANAGER;

    use super::*;
    use crate::ownership::{Claimant, Standing, standing_of};

    fn live() -> ObjectMeta {
        let pairs = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        let entry = |manager: &str| ManagedFieldsEntry {
            manager: Some(manager.into()),
            fields_v1: Some(FieldsV1(serde_json::json!({"f:data": {"f:value": {}}}))),
            ..ManagedFieldsEntry::default()
        };
        ObjectMeta {
            name: Some("x".into()),
            namespace: Some("n".into()),
            uid: Some("object-uid".into()),
            resource_version: Some("42".into()),
            labels: pairs(&[
                (INSTANCE_LABEL, "hello"),
                (INSTANCE_UID_LABEL, "u-hello"),
                ("app", "web"),
            ]),
            annotations: pairs(&[
                ("kubectl.kubernetes.io/last-applied-configuration", "{...}"),
                (HEALTH_ANNOTATION, "ready-endpoints"),
            ]),
            managed_fields: Some(vec![
                entry(FIELD_MANAGER),
                entry("kubectl-edit"),
                entry(FIELD_MANAGER),
            ]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn only_what_ownership_is_judged_by_is_kept() {
        let kept = trimmed(&live());
        assert_eq!(kept.uid.as_deref(), Some("object-uid"));
        assert_eq!(kept.resource_version.as_deref(), Some("42"));
        assert_eq!(kept.labels.as_ref().map(BTreeMap::len), Some(2));
        let annotations: Vec<&String> = kept
            .annotations
            .iter()
            .flatten()
            .map(|(key, _)| key)
            .collect();
        assert_eq!(
            annotations,
            [HEALTH_ANNOTATION],
            "the health annotation alone"
        );
        let managers: Vec<_> = kept
            .managed_fields
            .iter()
            .flatten()
            .map(|entry| (entry.manager.as_deref(), entry.fields_v1.is_some()))
            .collect();
        assert_eq!(
            managers,
            [(Some("kubectl-edit"), false), (Some(FIELD_MANAGER), false)]
        );
    }

    #[test]
    fn the_records_kept_judge_as_the_live_object_does() {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let as_object = |metadata: ObjectMeta| {
            let mut object = DynamicObject::new("x", &resource);
            object.metadata = metadata;
            object
        };
        let reference = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "x".into(),
            namespace: Some("n".into()),
        };
        let mut records = Records::default();
        records.saw(&reference, &live());
        for claimant in [
            Claimant {
                name: "hello",
                uid: "u-hello",
            },
            Claimant {
                name: "other",
                uid: "u-other",
            },
        ] {
            let judged = standing_of(
                &reference,
                &as_object(records.get(&reference).unwrap()),
                claimant,
            );
            assert_eq!(
                judged,
                standing_of(&reference, &as_object(live()), claimant),
                "{claimant:?}"
            );
        }
        assert_eq!(
            standing_of(
                &reference,
                &as_object(records.get(&reference).unwrap()),
                Claimant {
                    name: "hello",
                    uid: "u-hello",
                }
            ),
            Standing::Ours("42".into())
        );
        records.gone(&reference);
        assert_eq!(records.get(&reference), None);
    }
}
