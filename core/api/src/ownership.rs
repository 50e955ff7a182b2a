//! The records on installed objects that say whose they are. The runtime
//! writes them; `kubectl instance` reads them to show an approver what
//! applying would do. What the provisioner deletes is decided by these
//! records on the live object, never by a status list.

/// The field manager of every object the runtime applies.
pub const FIELD_MANAGER: &str = "pakket.dev/runtime";
/// Label naming the Instance that installed an object (for people and
/// selectors; names can be reused, so ownership is decided by the UID).
pub const INSTANCE_LABEL: &str = "core.pakket.dev/instance";
/// Label holding the UID of the Instance that installed an object: with
/// [`FIELD_MANAGER`] among its managers, the proof that it is Pakket's.
pub const INSTANCE_UID_LABEL: &str = "core.pakket.dev/instance-uid";
/// Label naming the Bundle an object came from.
pub const BUNDLE_LABEL: &str = "core.pakket.dev/bundle";
/// Annotation with which someone who may write an existing object hands it
/// to an Instance (its value: the Instance's name). Without it, an object
/// Pakket did not create is never taken over.
pub const ADOPT_ANNOTATION: &str = "core.pakket.dev/adopt-into";
/// Label on a Bundle saying which Instance (by UID) has had it active; a
/// pivot marks only such Bundles as replaced.
pub const ACTIVE_FOR_LABEL: &str = "core.pakket.dev/active-for";
/// Annotation a provisioner puts on a rendered object (`"true"`) that is to
/// be created only if absent: one that exists and is not the Instance's is
/// used as it is (never adopted, never a conflict), and is not the
/// Instance's to delete. registry-v1's install namespace is one. The
/// runtime removes the annotation before applying.
pub const CREATE_IF_ABSENT_ANNOTATION: &str = "core.pakket.dev/create-if-absent";

/// Annotation a provisioner puts on a rendered object whose health needs
/// more than the object itself: `ready-endpoints` on a Service means it is
/// healthy only with a ready endpoint behind it (registry-v1's webhook
/// Services). The runtime reads it; it stays on the object.
pub const HEALTH_ANNOTATION: &str = "core.pakket.dev/health";

/// The finalizer with which a provisioner removes an Instance's objects
/// before it goes: the provisioner's own id (a domain-prefixed name, as
/// finalizers are). One per provisioner, so an Instance whose class is gone
/// is still cleaned up by the provisioner that installed it and by no other.
/// The admission webhook adds it when an Instance is created; the
/// provisioner adds it if it is missing.
pub fn finalizer_of(provisioner_id: &str) -> &str {
    provisioner_id
}

/// Who an existing object belongs to, as far as Pakket is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Installed by the Instance with this UID (label and field manager agree).
    Instance(String),
    /// Handed to the named Instance by someone who may write it ([`ADOPT_ANNOTATION`]).
    OfferedTo(String),
    /// Not Pakket's: no UID label, or no Pakket field manager.
    Unmanaged,
}

/// Reads ownership from an object's labels, annotations and the managers
/// in its managedFields.
pub fn owner_of<'a>(
    labels: Option<&std::collections::BTreeMap<String, String>>,
    annotations: Option<&std::collections::BTreeMap<String, String>>,
    managers: impl IntoIterator<Item = &'a str>,
) -> Owner {
    let ours = managers.into_iter().any(|manager| manager == FIELD_MANAGER);
    if let Some(uid) = labels.and_then(|labels| labels.get(INSTANCE_UID_LABEL))
        && ours
    {
        return Owner::Instance(uid.clone());
    }
    match annotations.and_then(|annotations| annotations.get(ADOPT_ANNOTATION)) {
        Some(instance) => Owner::OfferedTo(instance.clone()),
        None => Owner::Unmanaged,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn an_object_is_an_instances_only_with_its_uid_label_and_pakkets_field_manager() {
        let labelled = BTreeMap::from([(INSTANCE_UID_LABEL.to_owned(), "u1".to_owned())]);
        assert_eq!(
            owner_of(Some(&labelled), None, ["kubectl", FIELD_MANAGER]),
            Owner::Instance("u1".into())
        );
        // A label someone wrote by hand, without Pakket's apply: not Pakket's.
        assert_eq!(
            owner_of(Some(&labelled), None, ["kubectl"]),
            Owner::Unmanaged
        );
        assert_eq!(owner_of(None, None, [FIELD_MANAGER]), Owner::Unmanaged);
        let offered = BTreeMap::from([(ADOPT_ANNOTATION.to_owned(), "hello".to_owned())]);
        assert_eq!(
            owner_of(None, Some(&offered), ["kubectl"]),
            Owner::OfferedTo("hello".into())
        );
    }
}
