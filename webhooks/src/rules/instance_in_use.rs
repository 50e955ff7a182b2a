//! Deleting an Instance whose APIs are in use is refused, naming the
//! users: "3 EtcdCluster objects in namespaces a, b; Instance x requires
//! etcd.database.coreos.com/v1beta2 EtcdCluster". Deleting the Instance
//! would delete its CRDs, and with them every custom resource of theirs,
//! and leave the Instances that need its APIs broken.
//!
//! What it provides and who uses it come from the runtime's inventory
//! ([`pakket_runtime::kernel::inventory`]): its CRDs and APIServices by the
//! label the runtime writes (from the webhook's watch cache,
//! [`crate::apis`], once synced), the custom resources of their kinds, the
//! installed Instances whose Bundles require them. The users are read at
//! the request, so as current as the apiserver.
//!
//! An admin may delete it anyway: with the verb `delete-in-use` on
//! `instances` (no built-in role has it), she annotates the Instance
//! `core.pakket.dev/delete-in-use: "<why>"` and deletes it. The delete
//! then goes through unchecked, and an Event on the Instance records who
//! did it and why. The webhook is `failurePolicy: Fail`: while it is down,
//! Instances are not deleted (Pakket's own objects only; nothing else
//! waits on them), and an Instance whose users cannot be read is not
//! deleted either: the message says why and how to override.

use kube::Client;
use kube::ResourceExt as _;
use pakket_api::Instance;
use pakket_runtime::kernel::inventory::{self, Provided};

use super::Permission;

/// The annotation that asks to delete an Instance in use, with why.
pub const OVERRIDE_ANNOTATION: &str = "core.pakket.dev/delete-in-use";
/// The verb that lets a user use [`OVERRIDE_ANNOTATION`].
pub const OVERRIDE_VERB: &str = "delete-in-use";

/// The permission overriding the check needs.
pub fn permission(instance: &str) -> Permission {
    Permission::pakket(OVERRIDE_VERB, "instances", instance)
}

/// The reason written in the override annotation, if there is one.
pub fn override_reason(instance: &Instance) -> Option<&str> {
    instance
        .annotations()
        .get(OVERRIDE_ANNOTATION)
        .map(|reason| reason.trim())
        .filter(|reason| !reason.is_empty())
}

/// Why the in-use check of Instance `name` could not decide.
pub fn undecided(name: &str, error: &kube::Error) -> String {
    format!(
        "Instance {name}: cannot check whether its APIs are in use ({error}); try again, or delete it anyway with the {OVERRIDE_ANNOTATION} annotation (verb {OVERRIDE_VERB} on instances)"
    )
}

/// Why deleting `instance`, which provides `provided`, is refused, if it
/// is: its users in words.
pub async fn refusal(
    client: &Client,
    instance: &Instance,
    provided: &Provided,
) -> Result<Option<String>, String> {
    let name = instance.name_any();
    if provided.is_empty() {
        return Ok(None);
    }
    let users = inventory::users(client, instance, provided, false)
        .await
        .map_err(|error| undecided(&name, &error))?;
    if !users.in_use() {
        return Ok(None);
    }
    Ok(Some(format!(
        "Instance {name} is in use: {}. Deleting it would delete its CRDs and every object of them; remove the users first, or, with the verb {OVERRIDE_VERB} on instances, annotate it {OVERRIDE_ANNOTATION}=\"<why>\" and delete it again",
        users.words()
    )))
}

/// Why an override is refused: names the user, the verb and the rule.
pub fn override_denial(requester: &crate::review::Requester, instance: &str) -> String {
    format!(
        "Instance {instance:?}: {requester} asks to delete it while in use ({OVERRIDE_ANNOTATION}), which needs {}; an admin grants it with a ClusterRole rule {{apiGroups: [{}], resources: [instances], verbs: [{OVERRIDE_VERB}]}}",
        permission(instance).describe(),
        pakket_api::GROUP
    )
}

/// The Bundle the pivot override names, if `new` sets it or changes it
/// (taking it away needs nothing).
pub fn pivot_override_set<'a>(old: Option<&Instance>, new: &'a Instance) -> Option<&'a str> {
    let named = |instance: &'a Instance| {
        instance
            .annotations()
            .get(pakket_api::PIVOT_IN_USE_ANNOTATION)
            .map(String::as_str)
    };
    let before = old.and_then(|old| {
        old.annotations()
            .get(pakket_api::PIVOT_IN_USE_ANNOTATION)
            .map(String::as_str)
    });
    named(new).filter(|now| Some(*now) != before)
}

/// Why setting the pivot override is refused: names the user, the verb
/// and the rule.
pub fn pivot_override_denial(requester: &crate::review::Requester, instance: &str) -> String {
    format!(
        "Instance {instance:?}: {requester} sets {}, which lets a pivot take CRDs from their users and needs {}; an admin grants it with a ClusterRole rule {{apiGroups: [{}], resources: [instances], verbs: [{OVERRIDE_VERB}]}}",
        pakket_api::PIVOT_IN_USE_ANNOTATION,
        permission(instance).describe(),
        pakket_api::GROUP
    )
}
