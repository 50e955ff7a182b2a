//! The Catalog controller: fetch → load → swap → status, one named step
//! each.
//!
//! Every replica runs it, so every replica's API answers from every
//! Catalog; only the replica leading the Lease writes status (the others
//! would only repeat it). A Catalog whose newest content fails keeps its
//! last good content serving and says so: `Unpacked` False with the cause,
//! `Serving` True naming the digest still served.
//!
//! Polls do not rewrite an unchanged status: a write happens when a
//! condition, the digest, the counts or the findings change, or when
//! `lastSyncTime` is older than [`SYNC_TIME_REFRESH`]. Each change of a
//! condition's reason, and each new digest served, is an Event too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt as _};
use kube::{Api, Client, Resource as _, ResourceExt as _};
use pakket_runtime::kernel::leader::LeaderState;
use pakket_runtime::kernel::serve::Metrics;
use pakket_runtime::kernel::store::Digest;

use crate::catalogs::catalog::{Catalog, CatalogStatus, parse_interval};
use crate::catalogs::condition::{self, ConditionType, Reason};
use crate::catalogs::gauges;
use crate::catalogs::serving::{Catalogs, counts};
use crate::catalogs::source::{Fetched, Fetcher};
use crate::catalogs::store_gc::Loading;
use crate::{Error, catalogs::load};

/// The field manager of status writes.
pub const MANAGER: &str = "pakket-resolveset";
/// How soon a failed fetch is tried again when the Catalog sets no poll interval.
const RETRY: Duration = Duration::from_secs(60);
/// Shortest poll interval honoured, so a typo cannot hammer a registry.
const MIN_POLL: Duration = Duration::from_secs(1);
/// How stale `lastSyncTime` may get before an otherwise unchanged status
/// is written again: polls every few seconds would otherwise write every
/// few seconds, for nobody.
pub const SYNC_TIME_REFRESH: Duration = Duration::from_secs(600);

/// What every reconcile shares.
pub struct Context {
    /// The apiserver.
    pub client: Client,
    /// Where content comes from.
    pub fetcher: Fetcher,
    /// What the API serves.
    pub catalogs: Arc<Catalogs>,
    /// Digests being loaded, which the store collector keeps.
    pub loading: Arc<Loading>,
    /// Publishes the Catalogs' Events.
    pub recorder: Recorder,
    /// Whether this replica writes status; `None`: always.
    pub leader: Option<LeaderState>,
    /// Reconcile counts and durations.
    pub metrics: Arc<Metrics>,
}

/// Runs the controller; `selector` limits it to Catalogs with matching
/// labels (one process per shard, or per test); `resync` asks for every
/// Catalog to be reconciled again (on becoming leader, so status is
/// written at once).
pub async fn run(
    context: Arc<Context>,
    selector: Option<String>,
    resync: impl futures::Stream<Item = ()> + Send + Sync + 'static,
) {
    let api: Api<Catalog> = Api::all(context.client.clone());
    let config = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    tokio::spawn(forget_deleted(
        api.clone(),
        config.clone(),
        Arc::clone(&context.catalogs),
    ));
    let controller = Controller::new(api, config);
    // Read at each scrape from the controller's own cache.
    context.metrics.register_collector(gauges::CatalogGauges {
        cache: controller.store(),
        catalogs: Arc::clone(&context.catalogs),
    });
    controller
        .reconcile_all_on(resync)
        .run(reconcile, error_policy, context)
        .for_each(|_| async {})
        .await;
}

/// Stops serving Catalogs that are deleted. A finalizer would hold a
/// deletion until the leader ran, but every replica serves and must
/// forget; a watch of its own tells each replica.
async fn forget_deleted(api: Api<Catalog>, config: watcher::Config, catalogs: Arc<Catalogs>) {
    let mut names = std::collections::HashSet::new();
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Delete(catalog)) => {
                let name = catalog.name_any();
                let catalogs = Arc::clone(&catalogs);
                let _ = tokio::task::spawn_blocking(move || catalogs.remove(&name)).await;
            }
            Ok(Event::Init) => names.clear(),
            Ok(Event::InitApply(catalog)) => {
                names.insert(catalog.name_any());
            }
            Ok(Event::InitDone) => {
                // Deleted while the watch was down.
                let served: Vec<String> = catalogs
                    .snapshot()
                    .set
                    .catalogs()
                    .iter()
                    .map(|c| c.name.clone())
                    .filter(|name| !names.contains(name))
                    .collect();
                let catalogs = Arc::clone(&catalogs);
                let _ = tokio::task::spawn_blocking(move || {
                    for name in served {
                        catalogs.remove(&name);
                    }
                })
                .await;
            }
            Ok(Event::Apply(_)) => {}
            Err(error) => tracing::warn!(%error, "watching Catalogs for deletions"),
        }
    }
}

async fn reconcile(catalog: Arc<Catalog>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let attempt = sync(&catalog, &context).await;
    let status = status(&catalog, &context, &attempt);
    if context.leader.as_ref().is_none_or(LeaderState::is_leader) {
        let old = catalog.status.as_ref();
        for event in transitions(old, &status) {
            if let Err(error) = context
                .recorder
                .publish(&event, &catalog.object_ref(&()))
                .await
            {
                tracing::debug!(%error, "publishing a Catalog Event");
            }
        }
        if worth_writing(old, &status, Timestamp::now()) {
            write_status(&catalog, &context.client, status).await?;
        }
    }
    let label = attempt.as_ref().err().map_or("ok", Error::metric_label);
    context.metrics.reconciled(label, started.elapsed());
    Ok(next(&catalog, attempt.as_ref().err()))
}

fn error_policy(catalog: Arc<Catalog>, error: &Error, context: Arc<Context>) -> Action {
    tracing::warn!(catalog = %catalog.name_any(), %error, "reconcile failed");
    context
        .metrics
        .reconciled(error.metric_label(), Duration::ZERO);
    Action::requeue(Duration::from_secs(5))
}

/// When to look again: an unpinned source at its poll interval; a failure
/// that may pass later after a while; otherwise only on change.
fn next(catalog: &Catalog, error: Option<&Error>) -> Action {
    let poll = catalog
        .spec
        .poll_interval
        .as_deref()
        .and_then(parse_interval)
        .filter(|_| !catalog.spec.source.is_pinned())
        .map(|interval| interval.max(MIN_POLL));
    match (poll, error) {
        (Some(interval), _) => Action::requeue(interval),
        (None, Some(error)) if !error.is_terminal() => Action::requeue(RETRY),
        _ => Action::await_change(),
    }
}

/// What the last attempt found: the digest now served for this Catalog.
struct Synced {
    digest: Digest,
    dir: std::path::PathBuf,
}

/// fetch → load → swap.
async fn sync(catalog: &Catalog, context: &Context) -> Result<Synced, Error> {
    let name = catalog.name_any();
    let Fetched { digest, dir } = context.fetcher.fetch(catalog).await?;
    let served = context.catalogs.snapshot();
    let priority = catalog.spec.priority;
    if served.digest(&name) == Some(digest.as_str()) {
        let changed = served
            .catalog(&name)
            .is_some_and(|c| c.priority != priority);
        drop(served);
        if changed {
            let catalogs = Arc::clone(&context.catalogs);
            let task_name = name.clone();
            tokio::task::spawn_blocking(move || catalogs.set_priority(&task_name, priority))
                .await
                .map_err(|error| Error::Task(error.to_string()))?;
        }
        return Ok(Synced { digest, dir });
    }
    drop(served);
    // Loading and building the new universe are CPU work: off the async threads.
    let catalogs = Arc::clone(&context.catalogs);
    let source = catalog.spec.source.clone();
    let (task_dir, task_digest) = (dir.clone(), digest.clone());
    let started = Instant::now();
    let _kept_while_loading = context.loading.hold(digest.as_str());
    tokio::task::spawn_blocking(move || {
        let loaded = load::load(&task_dir, &source, &name, priority)?;
        catalogs.put(loaded, task_digest.as_str());
        Ok::<_, Error>(())
    })
    .await
    .map_err(|error| Error::Task(error.to_string()))??;
    tracing::info!(catalog = %catalog.name_any(), digest = digest.as_str(), took_ms = started.elapsed().as_millis() as u64, "serving new content");
    Ok(Synced { digest, dir })
}

/// The whole status, from what is served and what the attempt found.
fn status(catalog: &Catalog, context: &Context, attempt: &Result<Synced, Error>) -> CatalogStatus {
    let name = catalog.name_any();
    let generation = catalog.metadata.generation;
    let now = Timestamp::now();
    let served = context.catalogs.snapshot();
    let serving = served.catalog(&name).zip(served.digest(&name));
    let mut conditions: Vec<Condition> = catalog
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut set = |reason: Reason, message: String| {
        pakket_api::condition::set(
            &mut conditions,
            condition::new(reason, message, generation, now),
        );
    };
    match (attempt, serving) {
        (Ok(synced), Some((loaded, _))) => {
            let c = counts(loaded);
            set(
                Reason::UnpackSucceeded,
                format!(
                    "{} unpacked at {}: {} packages, {} channels, {} bundles",
                    catalog.spec.source.field(),
                    synced.digest,
                    c.packages,
                    c.channels,
                    c.bundles
                ),
            );
            set(
                Reason::ServingLatest,
                format!("the resolver answers from {}", synced.digest),
            );
        }
        (Ok(synced), None) => {
            // Fetched but not served: only if the Catalog was deleted meanwhile.
            set(
                Reason::UnpackSucceeded,
                format!("unpacked at {}", synced.digest),
            );
            set(
                Reason::NothingServed,
                "the content is not served yet".to_owned(),
            );
        }
        (Err(error), served_now) => {
            set(error.reason(), error.to_string());
            match served_now {
                Some((_, digest)) => set(
                    Reason::ServingPrevious,
                    format!(
                        "the resolver still answers from {digest}, the last content that loaded; the newest content is not served (see the Unpacked condition)"
                    ),
                ),
                None => set(
                    Reason::NothingServed,
                    "nothing of this Catalog has loaded yet (see the Unpacked condition)"
                        .to_owned(),
                ),
            }
        }
    }
    conditions.sort_by_key(|c| {
        ConditionType::ALL
            .iter()
            .position(|kind| kind.as_str() == c.type_)
    });
    let standing = pakket_resolve_api::readiness::of_catalog(&conditions);
    pakket_api::readiness::write(&mut conditions, generation, &standing, now);
    let content_dir = match (attempt, serving) {
        (Ok(synced), _) => Some(synced.dir.clone()),
        (Err(_), Some((_, digest))) => Digest::parse(digest)
            .ok()
            .map(|digest| context.fetcher.store.path_of(&digest)),
        _ => None,
    };
    CatalogStatus {
        conditions,
        observed_generation: generation,
        digest: serving.map(|(_, digest)| digest.to_owned()),
        counts: serving.map(|(loaded, _)| counts(loaded)),
        last_sync_time: Some(Time(now)),
        diagnostics: serving.and_then(|(loaded, _)| {
            let dir = content_dir?;
            (!loaded.diagnostics.is_empty()).then(|| load::summarize(&loaded.diagnostics, &dir))
        }),
    }
}

async fn write_status(
    catalog: &Catalog,
    client: &Client,
    status: CatalogStatus,
) -> Result<(), Error> {
    let api: Api<Catalog> = Api::all(client.clone());
    let patch = serde_json::json!({
        "apiVersion": format!("{}/{}", crate::catalogs::catalog::GROUP, crate::catalogs::catalog::VERSION),
        "kind": "Catalog",
        "status": status,
    });
    api.patch_status(
        &catalog.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(Error::Status)?;
    Ok(())
}

/// Whether `new` says anything `old` does not, or `old`'s sync time is
/// older than [`SYNC_TIME_REFRESH`].
fn worth_writing(old: Option<&CatalogStatus>, new: &CatalogStatus, now: Timestamp) -> bool {
    let Some(old) = old else { return true };
    let without_time = |status: &CatalogStatus| CatalogStatus {
        last_sync_time: None,
        ..status.clone()
    };
    if without_time(old) != without_time(new) {
        return true;
    }
    let refresh = jiff::SignedDuration::try_from(SYNC_TIME_REFRESH).expect("a small duration");
    old.last_sync_time
        .as_ref()
        .is_none_or(|synced| now.duration_since(synced.0) >= refresh)
}

/// The Events a status change is worth: a condition whose reason changed,
/// and a new digest served. Warnings for conditions that went False.
fn transitions(old: Option<&CatalogStatus>, new: &CatalogStatus) -> Vec<KubeEvent> {
    let before =
        |kind: &str| old.and_then(|status| status.conditions.iter().find(|c| c.type_ == kind));
    let mut events = Vec::new();
    for condition in &new.conditions {
        let previous = before(&condition.type_);
        let new_digest = condition.type_ == ConditionType::Serving.as_str()
            && old.and_then(|status| status.digest.as_deref()) != new.digest.as_deref();
        if previous.is_some_and(|p| p.reason == condition.reason) && !new_digest {
            continue;
        }
        events.push(KubeEvent {
            type_: if condition.status == "False" {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: condition.reason.clone(),
            note: Some(condition.message.chars().take(1000).collect()),
            // kube's recorder folds Events of one action and reason into a
            // series that keeps the first message: each digest served is
            // an action of its own, so every swap shows with its digest.
            action: match (
                &new.digest,
                condition.type_ == ConditionType::Serving.as_str(),
            ) {
                (Some(digest), true) => format!("Serve {}", short(digest)),
                _ => "Sync".into(),
            },
            secondary: None,
        });
    }
    events
}

/// `sha256:` and the first 12 hex digits, as image tools print digests.
fn short(digest: &str) -> &str {
    let end = digest.find(':').map_or(0, |colon| colon + 1) + 12;
    digest.get(..end).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(reasons: &[Reason], digest: Option<&str>, synced: Timestamp) -> CatalogStatus {
        CatalogStatus {
            conditions: reasons
                .iter()
                .map(|reason| condition::new(*reason, "m", Some(1), Timestamp::UNIX_EPOCH))
                .collect(),
            digest: digest.map(str::to_owned),
            last_sync_time: Some(Time(synced)),
            ..CatalogStatus::default()
        }
    }

    #[test]
    fn only_a_change_or_a_stale_sync_time_is_written() {
        let then = Timestamp::from_second(1_000_000).unwrap();
        let serving = [Reason::ServingLatest, Reason::UnpackSucceeded];
        let old = status(&serving, Some("sha256:a"), then);
        let soon = then + jiff::SignedDuration::from_secs(30);
        let late = then + jiff::SignedDuration::from_secs(601);
        assert!(!worth_writing(
            Some(&old),
            &status(&serving, Some("sha256:a"), soon),
            soon
        ));
        assert!(worth_writing(
            Some(&old),
            &status(&serving, Some("sha256:a"), late),
            late
        ));
        assert!(worth_writing(
            Some(&old),
            &status(&serving, Some("sha256:b"), soon),
            soon
        ));
        assert!(worth_writing(None, &old, soon));
    }

    #[test]
    fn events_for_changed_reasons_and_new_digests_warnings_when_false() {
        let t = Timestamp::UNIX_EPOCH;
        let good = status(
            &[Reason::ServingLatest, Reason::UnpackSucceeded],
            Some("sha256:aaaaaaaaaaaaaaaa"),
            t,
        );
        assert!(transitions(Some(&good), &good).is_empty());
        let broken = status(
            &[Reason::ServingPrevious, Reason::CatalogInvalid],
            Some("sha256:aaaaaaaaaaaaaaaa"),
            t,
        );
        let events = transitions(Some(&good), &broken);
        let seen: Vec<(&str, EventType)> = events
            .iter()
            .map(|e| (e.reason.as_str(), e.type_))
            .collect();
        assert_eq!(
            seen,
            [
                ("ServingPrevious", EventType::Normal),
                ("CatalogInvalid", EventType::Warning)
            ]
        );
        let newer = status(
            &[Reason::ServingLatest, Reason::UnpackSucceeded],
            Some("sha256:bbbbbbbbbbbbbbbb"),
            t,
        );
        let events = transitions(Some(&good), &newer);
        assert_eq!(events.len(), 1, "the new digest alone");
        assert_eq!(events[0].action, "Serve sha256:bbbbbbbbbbbb");
        assert_eq!(
            transitions(None, &good).len(),
            2,
            "a first status tells both"
        );
    }
}
