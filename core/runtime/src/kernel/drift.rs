//! Drift: objects an Instance installed, edited or deleted by someone else,
//! are put back. One metadata-only watch per kind the runtime has applied
//! (objects carrying [`INSTANCE_LABEL`]) turns a foreign change into a
//! reconcile of the Instance that owns the object.
//!
//! Who made a change is read from the object's managedFields: the entries
//! with the latest timestamp are the last writers. If they are all the
//! runtime's field manager, the event is the echo of its own apply and is
//! ignored, unless its resourceVersion is newer than every one the
//! runtime's writes of the object returned: then someone wrote under the
//! runtime's name (`kubectl --field-manager pakket.dev/runtime`), which is
//! drift like any edit (the `versions` module, which also says how an
//! event that arrives before its write's answer is judged). A foreign
//! write to the object itself (`kubectl edit`, another controller), such a
//! write under the runtime's name, or a deletion marks the Instance
//! *dirty*: its next reconcile re-applies. So does a write to a
//! subresource other than `status` (`kubectl scale` writes `scale`, which
//! is the spec); a foreign write to `status` (a Deployment's controller)
//! only re-checks health. Timestamps have one-second resolution; a tie with
//! a foreign writer counts as foreign.
//!
//! An object whose Instance label is removed leaves the watch's selector,
//! which the watch reports as a deletion of an object that no longer names
//! its Instance: the last Instance each object was seen with is remembered
//! for that. An object deleted while a watch was down sends no deletion:
//! the listing the watch restarts with lacks it, and that counts as one.
//! So the watches, not the hourly re-apply, are what repair drift.
//!
//! They also spare that re-apply where they can: when an Instance's last
//! write is merely old ([`Staleness::Due`]) and the watches account for
//! every object it wrote (each kind's watch has listed and runs, each
//! object is seen labelled with the Instance, none changed by anyone else
//! since the write began), writing them again would change nothing, so it
//! is not done (`written::vouched`); its age starts again instead. An object the
//! watches cannot speak for (a kind the provisioner may not watch, a watch
//! listing again, an object not seen) is written again as before. Nor is
//! an object they see read for its health when its kind's health is its
//! existence (a ConfigMap, not a Deployment: [`crate::apply::to_read`]),
//! so an Instance of such objects at rest costs no request at all.

mod marks;
mod records;
mod versions;
mod written;

use versions::Echo;
pub use written::Staleness;
use written::{Watched, Written, caught_up, staleness, untouched, vouched};

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::api::{Api, DynamicObject, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::discovery::ApiResource;
use kube::runtime::reflector::ObjectRef as Trigger;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use pakket_api::{Instance, ObjectRef};

use crate::drift_mode::Ignored;
use pakket_api::ownership::{FIELD_MANAGER, INSTANCE_LABEL};

/// How long after a write of an Instance's objects began its uninstall
/// lists them rather than trusting the watches, which see a new object a
/// moment after it is made.
const WATCH_CATCH_UP: Duration = Duration::from_secs(10);

/// What an Instance's objects were last applied from, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// The Instance's generation.
    pub generation: Option<i64>,
    /// The Bundle applied.
    pub bundle: String,
    /// Its content digest.
    pub digest: String,
    /// The digest of the objects rendered from it: a provisioner whose
    /// render changes by itself (a rotated certificate) writes again.
    pub rendered: Option<String>,
}

/// One Instance's objects someone else changed: when, and whether the
/// change was a deletion.
pub(crate) type Changes = HashMap<ObjectRef, (Instant, bool)>;

/// Watches on installed objects, and what the runtime itself wrote.
pub struct Drift {
    client: Client,
    watched: Mutex<HashSet<(String, String)>>,
    /// Per Instance: what it was last applied from and the objects that
    /// apply wrote, when it began, and since when they are known as written.
    applied: Mutex<HashMap<String, Written>>,
    /// The Instance each watched object was last seen labelled with.
    seen_with: Mutex<HashMap<ObjectRef, String>>,
    /// Per Instance: the objects someone else changed (or deleted: `true`),
    /// and when; forgotten once an apply that began later wrote them. The
    /// latest is compared with when the last apply began, so a change that
    /// lands while an apply is under way is not forgotten when it ends.
    drifted: Mutex<HashMap<String, Changes>>,
    /// Objects a prune, an undone apply or an uninstall is about to
    /// delete: their deletion is the runtime's own, not drift.
    pruning: Mutex<marks::Marks>,
    /// Per Instance: the fields its class's `drift.ignore` names, whose
    /// changes by others are no drift.
    ignored: Mutex<HashMap<String, Ignored>>,
    /// The kinds whose watch has listed every labelled object and runs:
    /// for them, the objects seen with an Instance are all it has.
    synced: Mutex<HashSet<(String, String)>>,
    /// Per Instance: when its last write began.
    writes: Mutex<HashMap<String, Instant>>,
    /// Each labelled object's ownership records as last seen, which a
    /// prune or uninstall judges it by instead of reading it again.
    records: Mutex<records::Records>,
    /// The resourceVersions the runtime's writes returned, and the writes
    /// under way: what tells an edit under the runtime's name from its own.
    versions: Mutex<versions::Versions>,
    trigger: mpsc::UnboundedSender<Trigger<Instance>>,
}

impl Drift {
    /// Drift tracking for `client`'s cluster, and the stream of Instances
    /// to reconcile because something changed their objects.
    pub fn new(
        client: Client,
    ) -> (
        Arc<Self>,
        impl futures::Stream<Item = Trigger<Instance>> + Send + 'static,
    ) {
        let (trigger, triggers) = mpsc::unbounded();
        let drift = Arc::new(Self {
            client,
            watched: Mutex::default(),
            applied: Mutex::default(),
            seen_with: Mutex::default(),
            drifted: Mutex::default(),
            pruning: Mutex::default(),
            ignored: Mutex::default(),
            synced: Mutex::default(),
            writes: Mutex::default(),
            records: Mutex::default(),
            versions: Mutex::default(),
            trigger,
        });
        (drift, triggers)
    }

    /// Starts watching objects of `resource` (once per kind) that carry the
    /// Instance label.
    pub fn watch(self: &Arc<Self>, resource: &ApiResource) {
        let key = (resource.api_version.clone(), resource.kind.clone());
        if !self.watched.lock().expect("not poisoned").insert(key) {
            return;
        }
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(self.client.clone(), resource);
        let config = watcher::Config::default().labels(INSTANCE_LABEL);
        let drift = Arc::downgrade(self);
        let resource = resource.clone();
        tokio::spawn(async move {
            let mut events = watcher(api, config).default_backoff().boxed();
            // The objects a listing (at the start, or after the watch
            // restarted) found so far.
            let mut listed: Option<HashSet<ObjectRef>> = None;
            while let Some(event) = events.next().await {
                let Some(drift) = drift.upgrade() else { return };
                match event {
                    Ok(watcher::Event::Init) => {
                        drift.set_synced(&resource, false);
                        listed = Some(HashSet::new());
                    }
                    // The listing counts too: the watch starts after the
                    // first apply of its kind, and an edit in between (or
                    // while the watch was down) shows up only there.
                    Ok(watcher::Event::InitApply(object)) => {
                        if let Some(listed) = listed.as_mut() {
                            listed.insert(reference_of(&resource, &object));
                        }
                        drift.changed(&resource, &object, false)
                    }
                    Ok(watcher::Event::Apply(object)) => drift.changed(&resource, &object, false),
                    Ok(watcher::Event::Delete(object)) => drift.changed(&resource, &object, true),
                    // An object deleted while the watch was down sends no
                    // Delete: it is missing from the listing.
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            drift.missing_from(&resource, &listed);
                        }
                        drift.set_synced(&resource, true);
                    }
                    Err(error) => tracing::debug!(%error, kind = %resource.kind, "drift watch"),
                }
            }
        });
    }

    /// Records that `objects` of `instance` were applied from
    /// `fingerprint`, by an apply that began at `began`.
    pub fn applied(
        &self,
        instance: &str,
        fingerprint: Fingerprint,
        began: Instant,
        objects: &[ObjectRef],
    ) {
        let mut objects = objects.to_vec();
        objects.sort();
        objects.dedup();
        let written = Written {
            fingerprint,
            began,
            since: began,
            objects,
        };
        self.applied
            .lock()
            .expect("not poisoned")
            .insert(instance.to_owned(), written);
        if let Some(objects) = self.drifted.lock().expect("not poisoned").get_mut(instance) {
            objects.retain(|_, (at, _)| *at >= began);
        }
    }

    /// The objects of `instance` someone else changed (`false`) or deleted
    /// (`true`) since the runtime last wrote them, sorted.
    pub fn drifted(&self, instance: &str) -> Vec<(ObjectRef, bool)> {
        let mut objects: Vec<(ObjectRef, bool)> = self
            .drifted
            .lock()
            .expect("not poisoned")
            .get(instance)
            .into_iter()
            .flatten()
            .map(|(object, (_, deleted))| (object.clone(), *deleted))
            .collect();
        objects.sort();
        objects
    }

    /// Whether `instance` must be applied again: its content or generation
    /// moved, someone changed its objects since the last apply began, this
    /// process has not applied it yet, or the last apply is older than
    /// `max_age`.
    pub fn needs_apply(
        &self,
        instance: &str,
        fingerprint: &Fingerprint,
        max_age: Duration,
    ) -> bool {
        self.staleness(instance, fingerprint, max_age) != Staleness::Fresh
    }

    /// Why `instance` must be applied again, if it must (see
    /// [`Self::needs_apply`]). A write that is merely old while the
    /// watches vouch for every object it wrote (`written::vouched`) is not
    /// written again: it is [`Staleness::Fresh`], and its age starts again.
    pub fn staleness(
        &self,
        instance: &str,
        fingerprint: &Fingerprint,
        max_age: Duration,
    ) -> Staleness {
        let changed_at = self
            .drifted
            .lock()
            .expect("not poisoned")
            .get(instance)
            .and_then(|objects| objects.values().map(|(at, _)| *at).max());
        let mut applied = self.applied.lock().expect("not poisoned");
        let found = staleness(applied.get(instance), fingerprint, changed_at, max_age);
        let Some(written) = applied
            .get_mut(instance)
            .filter(|_| found == Staleness::Due)
        else {
            return found;
        };
        let drifted = changed_at.is_some_and(|changed| changed >= written.began);
        let watched = Watched {
            synced: &self.synced.lock().expect("not poisoned"),
            seen_with: &self.seen_with.lock().expect("not poisoned"),
        };
        if !vouched(&written.objects, instance, &watched, drifted) {
            return found;
        }
        // Drift stays measured from the write itself (`began`): only the
        // age for the next resync starts again.
        written.since = Instant::now();
        tracing::debug!(%instance, objects = written.objects.len(), "the drift watches vouch for the objects: not written again");
        Staleness::Fresh
    }

    /// The objects of `candidates` (the set about to be written again) that
    /// a repair may leave as they are: written whole by the last write,
    /// accounted for by the watches, changed by nobody since (see
    /// `written::untouched`). Asked once the repair's write has begun, so a change
    /// made after it counts as drift of that write and comes back.
    pub fn untouched(&self, instance: &str, candidates: &[ObjectRef]) -> BTreeSet<ObjectRef> {
        let drifted = self.drifted.lock().expect("not poisoned");
        let applied = self.applied.lock().expect("not poisoned");
        let watched = Watched {
            synced: &self.synced.lock().expect("not poisoned"),
            seen_with: &self.seen_with.lock().expect("not poisoned"),
        };
        untouched(
            candidates,
            instance,
            applied.get(instance),
            &watched,
            drifted.get(instance),
        )
    }

    /// Notes that the runtime is about to delete `objects` (or, under
    /// `deletionPolicy: Orphan`, take its label off them), so their
    /// deletion does not count as someone else's change.
    pub fn pruning<'a>(&self, objects: impl IntoIterator<Item = &'a ObjectRef>) {
        self.pruning
            .lock()
            .expect("not poisoned")
            .mark(objects, Instant::now());
    }

    fn set_synced(&self, resource: &ApiResource, synced: bool) {
        let key = (resource.api_version.clone(), resource.kind.clone());
        let mut all = self.synced.lock().expect("not poisoned");
        if synced {
            all.insert(key);
        } else {
            all.remove(&key);
        }
    }

    /// Notes that a write of `instance`'s objects begins, at `began` (the
    /// instant [`Self::applied`] is given when it ends whole).
    pub fn writing(&self, instance: &str, began: Instant) {
        let mut writes = self.writes.lock().expect("not poisoned");
        // Kept only while they matter (also past the Instance's deletion).
        writes.retain(|_, began| began.elapsed() < WATCH_CATCH_UP);
        writes.insert(instance.to_owned(), began);
    }

    /// A write of `instance`'s objects under way, until the value returned
    /// is dropped: meanwhile, events of its objects that name the runtime
    /// as their last writer wait to be judged by the versions the write
    /// returned (see the `versions` module).
    pub fn write_under_way(self: &Arc<Self>, instance: &str) -> WriteUnderWay {
        self.versions.lock().expect("not poisoned").begin(instance);
        WriteUnderWay {
            drift: Arc::clone(self),
            instance: instance.to_owned(),
        }
    }

    /// A write of the runtime answered `version` for `reference`: that
    /// resourceVersion is the runtime's own.
    pub fn returned(&self, reference: &ObjectRef, version: Option<&str>) {
        self.versions
            .lock()
            .expect("not poisoned")
            .returned(reference, version);
    }

    /// A write of `instance`'s objects ended: the events held meanwhile
    /// that are newer than its answers are someone else's writes.
    fn write_ended(&self, instance: &str) {
        let foreign = self.versions.lock().expect("not poisoned").end(instance);
        for reference in foreign {
            tracing::debug!(%instance, object = %reference, "written under the runtime's field manager, after the runtime's last write of it");
            self.record(reference, instance.to_owned(), false, true);
        }
    }

    /// The ownership records of `reference` as the watches last saw it
    /// (see the `records` module); `None` when they have not.
    pub fn as_seen(&self, reference: &ObjectRef) -> Option<ObjectMeta> {
        self.records.lock().expect("not poisoned").get(reference)
    }

    /// The watch's copy of `reference`'s records (its health annotation
    /// among them) when the watches account for it as `instance`'s now:
    /// its kind's watch has listed and runs, and saw it labelled with the
    /// Instance, so it exists. `None` when they do not.
    pub fn present(&self, instance: &str, reference: &ObjectRef) -> Option<ObjectMeta> {
        let synced = self.synced.lock().expect("not poisoned");
        let seen_with = self.seen_with.lock().expect("not poisoned");
        let watched = Watched {
            synced: &synced,
            seen_with: &seen_with,
        };
        if !watched.accounts_for(reference, instance) {
            return None;
        }
        self.records.lock().expect("not poisoned").get(reference)
    }

    /// The objects of the kinds `of` last seen labelled with `instance`,
    /// from the watches, for the kinds whose watch has listed them all;
    /// and the kinds that must be listed instead (no such watch yet, or a
    /// write of the Instance began moments ago whose objects the watch may
    /// not have seen yet, see `written::caught_up`). Saves an Instance's uninstall
    /// a list of every object of its kinds in the cluster.
    pub fn labelled_with(
        &self,
        instance: &str,
        of: &std::collections::BTreeSet<(String, String)>,
    ) -> (Vec<ObjectRef>, std::collections::BTreeSet<(String, String)>) {
        let recent = self
            .writes
            .lock()
            .expect("not poisoned")
            .get(instance)
            .copied()
            .filter(|began| began.elapsed() < WATCH_CATCH_UP);
        let caught_up = {
            let applied = self.applied.lock().expect("not poisoned");
            let seen_with = self.seen_with.lock().expect("not poisoned");
            caught_up(recent, applied.get(instance), |object| {
                seen_with.get(object).map(String::as_str) == Some(instance)
            })
        };
        if !caught_up {
            return (Vec::new(), of.clone());
        }
        let synced = self.synced.lock().expect("not poisoned");
        let (known, unknown): (std::collections::BTreeSet<_>, _) =
            of.iter().cloned().partition(|kind| synced.contains(kind));
        let mut found: Vec<ObjectRef> = self
            .seen_with
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|(reference, seen)| {
                seen.as_str() == instance
                    && known.contains(&(reference.api_version.clone(), reference.kind.clone()))
            })
            .map(|(reference, _)| reference.clone())
            .collect();
        found.sort();
        (found, unknown)
    }

    /// Records the fields `instance`'s class ignores (`drift.ignore`).
    pub fn ignore(&self, instance: &str, ignored: &Ignored) {
        let mut all = self.ignored.lock().expect("not poisoned");
        if ignored.is_empty() {
            all.remove(instance);
        } else if all.get(instance) != Some(ignored) {
            all.insert(instance.to_owned(), ignored.clone());
        }
    }

    /// Forgets an Instance that is gone.
    pub fn forget_instance(&self, instance: &str) {
        self.ignored.lock().expect("not poisoned").remove(instance);
        self.applied.lock().expect("not poisoned").remove(instance);
        // What the watches saw with it stays until the objects go (their
        // deletions remove it): an uninstall that fails part-way finds the
        // rest there on its next try.
        self.drifted.lock().expect("not poisoned").remove(instance);
    }

    /// Records as deleted the objects of `resource` last seen labelled
    /// with an Instance that a fresh listing no longer holds.
    fn missing_from(&self, resource: &ApiResource, listed: &HashSet<ObjectRef>) {
        let gone = missing(
            &self.seen_with.lock().expect("not poisoned"),
            resource,
            listed,
        );
        for (reference, instance) in gone {
            self.seen_with
                .lock()
                .expect("not poisoned")
                .remove(&reference);
            self.records.lock().expect("not poisoned").gone(&reference);
            self.versions
                .lock()
                .expect("not poisoned")
                .gone(&reference, None);
            self.record(reference, instance, true, true);
        }
    }

    fn changed(
        &self,
        resource: &ApiResource,
        object: &PartialObjectMeta<DynamicObject>,
        deleted: bool,
    ) {
        let reference = reference_of(resource, object);
        let labelled = object.labels().get(INSTANCE_LABEL).cloned();
        let instance = {
            let mut seen_with = self.seen_with.lock().expect("not poisoned");
            let mut records = self.records.lock().expect("not poisoned");
            match (&labelled, deleted) {
                (Some(instance), false) => {
                    seen_with.insert(reference.clone(), instance.clone());
                    records.saw(&reference, &object.metadata);
                    instance.clone()
                }
                // Gone, or its label removed: whose it was is remembered.
                _ => {
                    records.gone(&reference);
                    match seen_with.remove(&reference).or(labelled) {
                        Some(instance) => instance,
                        None => return,
                    }
                }
            }
        };
        let version = object.metadata.resource_version.as_deref();
        let spec_changed = match (deleted, last_writers(&object.metadata)) {
            (true, _) => {
                let mut versions = self.versions.lock().expect("not poisoned");
                versions.gone(&reference, version);
                true
            }
            // The runtime's own write, unless newer than all it wrote (or
            // held until the write under way ends).
            (false, LastWriters::Runtime) => {
                let mut versions = self.versions.lock().expect("not poisoned");
                match versions.seen(&instance, &reference, version) {
                    Echo::Own | Echo::Held => return,
                    Echo::Foreign => {
                        tracing::debug!(%instance, object = %reference, "written under the runtime's field manager, after the runtime's last write of it");
                        true
                    }
                }
            }
            // Fields the class ignores are someone else's to change.
            (false, LastWriters::Foreign { to_object }) => {
                to_object && !self.only_ignored(&instance, &reference, &object.metadata)
            }
        };
        self.record(reference, instance, deleted, spec_changed);
    }

    /// Whether the latest foreign writes to `reference` touched nothing
    /// but fields `instance`'s class ignores.
    fn only_ignored(&self, instance: &str, reference: &ObjectRef, metadata: &ObjectMeta) -> bool {
        let all = self.ignored.lock().expect("not poisoned");
        let Some(ignored) = all.get(instance) else {
            return false;
        };
        let group = pakket_api::group_of(&reference.api_version);
        ignored.covers_all(
            group,
            &reference.kind,
            &reference.name,
            &foreign_fields(metadata),
        )
    }

    /// Marks `instance` to be applied again when someone changed or deleted
    /// `reference` (a prune's own deletion aside), and brings it back for
    /// a look at its health either way.
    fn record(&self, reference: ObjectRef, instance: String, deleted: bool, spec_changed: bool) {
        if deleted && self.pruning.lock().expect("not poisoned").take(&reference) {
            return;
        }
        if spec_changed {
            tracing::info!(%instance, object = %reference, deleted, "installed object changed by someone else");
            let now = Instant::now();
            self.drifted
                .lock()
                .expect("not poisoned")
                .entry(instance.clone())
                .or_default()
                .insert(reference, (now, deleted));
        }
        let _ = self.trigger.unbounded_send(Trigger::new(&instance));
    }
}

/// A write of one Instance's objects under way ([`Drift::write_under_way`]):
/// when it is dropped (the write ended, whole or not), the events held
/// meanwhile are judged.
pub struct WriteUnderWay {
    drift: Arc<Drift>,
    instance: String,
}

impl Drop for WriteUnderWay {
    fn drop(&mut self) {
        self.drift.write_ended(&self.instance);
    }
}

/// The object reference of `object`, of kind `resource`.
fn reference_of(resource: &ApiResource, object: &PartialObjectMeta<DynamicObject>) -> ObjectRef {
    ObjectRef {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        name: object.name_any(),
        namespace: object.namespace(),
    }
}

/// The objects of `resource` last seen labelled with an Instance (and
/// whose) that `listed` lacks.
fn missing(
    seen_with: &HashMap<ObjectRef, String>,
    resource: &ApiResource,
    listed: &HashSet<ObjectRef>,
) -> Vec<(ObjectRef, String)> {
    let mut gone: Vec<(ObjectRef, String)> = seen_with
        .iter()
        .filter(|(reference, _)| {
            reference.kind == resource.kind
                && reference.api_version == resource.api_version
                && !listed.contains(*reference)
        })
        .map(|(reference, instance)| (reference.clone(), instance.clone()))
        .collect();
    gone.sort();
    gone
}

/// Who wrote an object last, from its managedFields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastWriters {
    /// Only the runtime's field manager.
    Runtime,
    /// Someone else, to the object itself or only to a subresource.
    Foreign {
        /// Whether a foreign write touched the object, not only its status.
        to_object: bool,
    },
}

/// The fields the latest foreign writers own in the object itself (not
/// its status), as paths: `f:spec` `f:replicas` is `["spec", "replicas"]`;
/// list keys (`k:…`, `v:…`, `i:…`) are kept as they are, so only an
/// ignored path above them covers them.
fn foreign_fields(metadata: &ObjectMeta) -> Vec<Vec<String>> {
    let entries = metadata.managed_fields.as_deref().unwrap_or_default();
    let latest = entries.iter().filter_map(|entry| entry.time.as_ref()).max();
    let mut fields = Vec::new();
    for entry in entries
        .iter()
        .filter(|entry| entry.time.is_none() || entry.time.as_ref() == latest)
        .filter(|entry| entry.manager.as_deref() != Some(FIELD_MANAGER))
        .filter(|entry| entry.subresource.as_deref() != Some("status"))
    {
        match &entry.fields_v1 {
            Some(owned) => leaves(&owned.0, &mut Vec::new(), &mut fields),
            // Owning it knows not what: the whole object.
            None => fields.push(Vec::new()),
        }
    }
    fields
}

/// The leaf paths of a managedFields `fieldsV1` tree.
fn leaves(node: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Some(map) = node.as_object().filter(|map| !map.is_empty()) else {
        out.push(path.clone());
        return;
    };
    for (key, child) in map {
        if key == "." {
            out.push(path.clone());
            continue;
        }
        path.push(key.strip_prefix("f:").unwrap_or(key).to_owned());
        leaves(child, path, out);
        path.pop();
    }
}

fn last_writers(metadata: &ObjectMeta) -> LastWriters {
    let entries = metadata.managed_fields.as_deref().unwrap_or_default();
    let latest = entries.iter().filter_map(|entry| entry.time.as_ref()).max();
    // An entry without a time counts as one of the latest: the apiserver
    // writes none for `kubectl scale` (the scale subresource). Once the
    // runtime applies again its forced apply takes the fields back, and the
    // entry, owning nothing, is gone.
    let foreign: Vec<_> = entries
        .iter()
        .filter(|entry| entry.time.is_none() || entry.time.as_ref() == latest)
        .filter(|entry| entry.manager.as_deref() != Some(FIELD_MANAGER))
        .collect();
    if foreign.is_empty() && latest.is_some() {
        return LastWriters::Runtime;
    }
    LastWriters::Foreign {
        to_object: latest.is_none()
            || foreign
                .iter()
                .any(|entry| entry.subresource.as_deref() != Some("status")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};

    fn written_by(entries: &[(&str, &str, i64)]) -> ObjectMeta {
        ObjectMeta {
            managed_fields: Some(
                entries
                    .iter()
                    .map(|(manager, subresource, second)| ManagedFieldsEntry {
                        manager: Some((*manager).into()),
                        subresource: (!subresource.is_empty()).then(|| (*subresource).into()),
                        time: Some(Time(
                            jiff::Timestamp::from_second(*second).expect("valid time"),
                        )),
                        ..ManagedFieldsEntry::default()
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn the_fields_a_foreign_writer_owns_are_read_as_paths() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
        let mut metadata = written_by(&[(FIELD_MANAGER, "", 5), ("hpa", "scale", 9)]);
        metadata.managed_fields.as_mut().unwrap()[1].fields_v1 =
            Some(FieldsV1(serde_json::json!({"f:spec": {"f:replicas": {}}})));
        assert_eq!(
            foreign_fields(&metadata),
            vec![vec!["spec".to_owned(), "replicas".to_owned()]]
        );
        metadata.managed_fields.as_mut().unwrap()[1].fields_v1 = Some(FieldsV1(
            serde_json::json!({
                "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}}
            }),
        ));
        let fields = foreign_fields(&metadata);
        assert_eq!(fields.len(), 2, "{fields:?}");
        assert!(
            fields
                .iter()
                .all(|field| field[..4] == ["spec", "template", "spec", "containers"])
        );
    }

    #[test]
    fn an_object_a_listing_no_longer_holds_was_deleted_while_the_watch_was_down() {
        let config_maps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let object = |kind: &str, name: &str| ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            namespace: Some("n".into()),
        };
        let seen_with: HashMap<ObjectRef, String> = [
            (object("ConfigMap", "kept"), "a".to_owned()),
            (object("ConfigMap", "gone"), "b".to_owned()),
            (object("Secret", "other-kind"), "a".to_owned()),
        ]
        .into_iter()
        .collect();
        let listed: HashSet<ObjectRef> = [object("ConfigMap", "kept")].into_iter().collect();
        assert_eq!(
            missing(&seen_with, &config_maps, &listed),
            vec![(object("ConfigMap", "gone"), "b".to_owned())],
            "only the kind listed, only what it lacks"
        );
    }

    #[test]
    fn the_runtimes_own_apply_is_not_drift() {
        let object = written_by(&[("kubectl-edit", "", 10), (FIELD_MANAGER, "", 20)]);
        assert_eq!(last_writers(&object), LastWriters::Runtime);
    }

    #[test]
    fn a_later_foreign_edit_is_drift_and_a_status_update_is_not() {
        let edited = written_by(&[(FIELD_MANAGER, "", 10), ("kubectl-edit", "", 20)]);
        assert_eq!(
            last_writers(&edited),
            LastWriters::Foreign { to_object: true }
        );
        let status = written_by(&[
            (FIELD_MANAGER, "", 10),
            ("kube-controller-manager", "status", 20),
        ]);
        assert_eq!(
            last_writers(&status),
            LastWriters::Foreign { to_object: false }
        );
    }

    #[test]
    fn a_write_to_the_scale_subresource_is_drift_even_without_a_time() {
        let scaled = written_by(&[(FIELD_MANAGER, "", 10), ("kubectl", "scale", 20)]);
        assert_eq!(
            last_writers(&scaled),
            LastWriters::Foreign { to_object: true }
        );
        // As the apiserver writes it: no time on the scale entry, and a
        // later status update by the Deployment's controller.
        let mut untimed = written_by(&[
            (FIELD_MANAGER, "", 10),
            ("kubectl", "scale", 0),
            ("kube-controller-manager", "status", 20),
        ]);
        untimed.managed_fields.as_mut().unwrap()[1].time = None;
        assert_eq!(
            last_writers(&untimed),
            LastWriters::Foreign { to_object: true }
        );
    }

    /// A Drift whose watches talk to no apiserver.
    fn unconnected() -> Arc<Drift> {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        Drift::new(Client::try_from(config).unwrap()).0
    }

    /// The watch event of ConfigMap `n/a` of Instance `i` at `version`,
    /// last written by the runtime's field manager (at second `second`).
    fn written_by_the_runtime(version: &str, second: i64) -> PartialObjectMeta<DynamicObject> {
        let mut metadata = written_by(&[("kubectl-edit", "", 1), (FIELD_MANAGER, "", second)]);
        metadata.name = Some("a".into());
        metadata.namespace = Some("n".into());
        metadata.labels = Some([(INSTANCE_LABEL.to_owned(), "i".to_owned())].into());
        metadata.resource_version = Some(version.into());
        PartialObjectMeta {
            types: None,
            metadata,
            _phantom: std::marker::PhantomData,
        }
    }

    #[tokio::test]
    async fn a_write_under_the_runtimes_name_after_its_own_is_drift_whenever_its_event_comes() {
        let config_maps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let a = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "a".into(),
            namespace: Some("n".into()),
        };
        let drift = unconnected();
        // The runtime's write, whose event comes before its answer.
        let under_way = drift.write_under_way("i");
        drift.changed(&config_maps, &written_by_the_runtime("100", 10), false);
        drift.returned(&a, Some("100"));
        drop(under_way);
        assert_eq!(drift.drifted("i"), [], "the runtime's own write");
        // Seen again (a watch that lists again): still its own.
        drift.changed(&config_maps, &written_by_the_runtime("100", 10), false);
        assert_eq!(drift.drifted("i"), []);
        // Someone writes under the runtime's name.
        drift.changed(&config_maps, &written_by_the_runtime("107", 30), false);
        assert_eq!(drift.drifted("i"), [(a.clone(), false)], "someone else's");

        // The same edit while a write of the Instance is under way, after
        // the write's own write of the object: drift once it ends.
        let drift = unconnected();
        let under_way = drift.write_under_way("i");
        drift.returned(&a, Some("100"));
        drift.changed(&config_maps, &written_by_the_runtime("100", 10), false);
        drift.changed(&config_maps, &written_by_the_runtime("103", 11), false);
        assert_eq!(drift.drifted("i"), [], "held while the write is under way");
        drop(under_way);
        assert_eq!(drift.drifted("i"), [(a.clone(), false)]);

        // After a restart nothing of the object was returned here: it
        // cannot be judged, and the Instance's first write comes anyway.
        let drift = unconnected();
        drift.changed(&config_maps, &written_by_the_runtime("107", 30), false);
        assert_eq!(drift.drifted("i"), []);
    }

    #[test]
    fn a_tie_with_a_foreign_writer_counts_as_foreign() {
        let tie = written_by(&[(FIELD_MANAGER, "", 20), ("someone", "", 20)]);
        assert_eq!(last_writers(&tie), LastWriters::Foreign { to_object: true });
    }
}
