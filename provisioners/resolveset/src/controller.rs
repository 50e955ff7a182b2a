//! The Catalog controller: fetch → load → swap → status, one named step
//! each.
//!
//! Every replica runs it, so every replica's API answers from every
//! Catalog; only the replica leading the Lease writes status (the others
//! would only repeat it). A Catalog whose newest content fails keeps its
//! last good content serving and says so: `Unpacked` False with the cause,
//! `Serving` True naming the digest still served.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt as _};
use kube::{Api, Client, ResourceExt as _};
use pakket_runtime::leader::LeaderState;
use pakket_runtime::serve::Metrics;
use pakket_runtime::store::Digest;

use crate::catalog::{Catalog, CatalogStatus, parse_interval};
use crate::condition::{self, ConditionType, Reason};
use crate::serving::{Catalogs, counts};
use crate::source::{Fetched, Fetcher};
use crate::{Error, load};

/// The field manager of status writes.
pub const MANAGER: &str = "pakket-resolveset";
/// How soon a failed fetch is tried again when the Catalog sets no poll interval.
const RETRY: Duration = Duration::from_secs(60);
/// Shortest poll interval honoured, so a typo cannot hammer a registry.
const MIN_POLL: Duration = Duration::from_secs(1);

/// What every reconcile shares.
pub struct Context {
    /// The apiserver.
    pub client: Client,
    /// Where content comes from.
    pub fetcher: Fetcher,
    /// What the API serves.
    pub catalogs: Arc<Catalogs>,
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
    Controller::new(api, config)
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
        write_status(&catalog, &context.client, status).await?;
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
    let content_dir = match (attempt, serving) {
        (Ok(synced), _) => Some(synced.dir.clone()),
        (Err(_), Some((_, digest))) => Digest::parse(digest)
            .ok()
            .map(|digest| context.fetcher.store.path_of(&digest)),
        _ => None,
    };
    CatalogStatus {
        conditions,
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
        "apiVersion": format!("{}/{}", crate::catalog::GROUP, crate::catalog::VERSION),
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
