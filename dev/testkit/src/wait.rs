//! Waiting for an Instance to reach a state, with the last status in the
//! failure message so a failing test says where the Instance got stuck.

use std::time::Duration;

use kube::Api;
use pakket_api::{ConditionType, Instance};

/// Polls every 100 ms until `check` passes (up to 90 s) and returns the
/// Instance it passed on; panics naming `what` and the last status seen.
pub async fn wait_for_instance(
    instances: &Api<Instance>,
    name: &str,
    what: &str,
    check: impl Fn(&Instance) -> bool,
) -> Instance {
    let mut last = None;
    for _ in 0..900 {
        if let Some(instance) = instances.get_opt(name).await.expect("reading the Instance") {
            assert_readable_messages(&instance);
            if check(&instance) {
                return instance;
            }
            last = Some(instance);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{what} did not happen within 90 s; last seen: {:#?}",
        last.and_then(|i| i.status)
    );
}

/// Marks of text that is not words for people: Rust Debug dumps
/// (`Some(`, `Status { status: ...`), escaped bytes, and the replacement
/// character that stands for bytes that were not UTF-8.
const UNREADABLE: [&str; 5] = ["Some(", "None,", "\\x", "\\u{", "\u{fffd}"];

/// Panics if a condition message of `instance` carries a Debug dump,
/// escaped or non-UTF-8 bytes, or control characters. Every Instance the
/// suite waits on passes through here, so every message a test provokes
/// is checked.
pub fn assert_readable_messages(instance: &Instance) {
    let conditions = instance
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    for condition in conditions {
        let message = &condition.message;
        let marked = UNREADABLE.iter().find(|mark| message.contains(*mark));
        let control = message.chars().find(|c| c.is_control());
        assert!(
            marked.is_none() && control.is_none(),
            "condition {} of Instance {} is not words for people ({}): {message}",
            condition.type_,
            instance.metadata.name.as_deref().unwrap_or_default(),
            marked.map_or_else(
                || format!("control character {control:?}"),
                |m| format!("contains {m:?}")
            ),
        );
    }
}

/// Whether the Instance's condition `kind` has `status` (`"True"`, `"False"`, `"Unknown"`).
pub fn condition_is(instance: &Instance, kind: ConditionType, status: &str) -> bool {
    instance
        .condition(kind)
        .is_some_and(|condition| condition.status == status)
}

/// The message of the Instance's condition `kind` (empty without one).
pub fn message_of(instance: &Instance, kind: ConditionType) -> String {
    instance
        .condition(kind)
        .map(|condition| condition.message.clone())
        .unwrap_or_default()
}

/// Whether the Instance's condition `kind` carries `reason`.
pub fn reason_is(instance: &Instance, kind: ConditionType, reason: &str) -> bool {
    instance
        .condition(kind)
        .is_some_and(|condition| condition.reason == reason)
}

/// Polls `check` every 100 ms for up to 30 s; panics naming `what`.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..300 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 30 s");
}

/// Bundle `name`'s status, wherever it is kept: on the Bundle object, or
/// (for content an Instance embeds, which has no object) in that
/// Instance's `status.embeddedBundle`. `None` while nothing is recorded.
pub async fn bundle_status(client: &kube::Client, name: &str) -> Option<pakket_api::BundleStatus> {
    let object = Api::<pakket_api::Bundle>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap_or_else(|error| panic!("reading Bundle {name}: {error}"));
    if let Some(bundle) = object {
        return bundle.status;
    }
    let instances = Api::<pakket_api::Instance>::all(client.clone())
        .list(&Default::default())
        .await
        .unwrap_or_else(|error| panic!("listing Instances: {error}"));
    instances.items.into_iter().find_map(|instance| {
        let record = instance.status?.embedded_bundle?;
        (record.name == name && instance.spec.bundle.name == name).then_some(record.status)
    })
}

/// The digest the Bundle `instance` wants pins (what an approval of it
/// covers): its embedded Bundle's, recorded in its own status, else the
/// named Bundle object's. Panics if it is not unpacked.
pub async fn pinned_digest_for(client: &kube::Client, instance: &pakket_api::Instance) -> String {
    let name = &instance.spec.bundle.name;
    match instance.embedded_bundle() {
        Some(embedded) => embedded
            .status
            .and_then(|status| status.source)
            .and_then(|source| source.digest)
            .unwrap_or_else(|| panic!("embedded Bundle {name} is not unpacked")),
        None => pinned_digest(client, name).await,
    }
}

/// The digest Bundle `name`'s status pins (what an approval covers);
/// panics if it is not unpacked.
pub async fn pinned_digest(client: &kube::Client, name: &str) -> String {
    bundle_status(client, name)
        .await
        .and_then(|status| status.source)
        .and_then(|source| source.digest)
        .unwrap_or_else(|| panic!("Bundle {name} is not unpacked"))
}
