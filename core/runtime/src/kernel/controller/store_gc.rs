//! Collects the content store now and then: content no Bundle pins goes
//! (after a grace period that covers an unpack whose pin is not written
//! yet), and the store is kept under its cap (see [`crate::store::gc`]).
//!
//! Pins are read from the watch caches, every Bundle in the cluster, and
//! every Instance's embedded Bundle and serving revision: content another provisioner's Bundle
//! pins is kept too, which costs little and needs no knowledge of classes. The store is this process's
//! own volume, so one collector per store holds (see [`Store::retain`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kube::runtime::reflector::Store as Cache;
use pakket_api::{Bundle, Instance};

use crate::serve::Metrics;
use crate::store::{Digest, Store, gc};

/// When and how the store is collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreGc {
    /// How often.
    pub every: Duration,
    /// What to keep.
    pub policy: gc::Policy,
}

/// Collections every 5 minutes.
pub const DEFAULT_GC_EVERY: Duration = Duration::from_secs(300);
/// Unpinned content younger than 10 minutes stays (unless over the cap).
pub const DEFAULT_GC_GRACE: Duration = Duration::from_secs(600);
/// 768 MiB: the store's volume in `deploy/` is a 1 GiB emptyDir, and an
/// unpack needs room for its temporary copy.
pub const DEFAULT_STORE_MAX_BYTES: u64 = 768 << 20;

impl Default for StoreGc {
    fn default() -> Self {
        Self {
            every: DEFAULT_GC_EVERY,
            policy: gc::Policy {
                grace: DEFAULT_GC_GRACE,
                max_bytes: DEFAULT_STORE_MAX_BYTES,
            },
        }
    }
}

/// The digests the cached Bundles and embedded Bundles pin.
/// Content a reconcile is installing right now: unpacked, but not yet
/// pinned by a status the caches have seen. Held while the reconcile runs
/// and a few seconds after, so a collection between the unpack and the
/// status write (or before the watch caches see that write) keeps it.
#[derive(Clone, Default)]
pub struct InFlight(Arc<std::sync::Mutex<std::collections::HashMap<Digest, usize>>>);

/// How long content stays held after its reconcile ends: the watch caches
/// the pins are read from see the status write by then.
const HELD_AFTER: Duration = Duration::from_secs(5);

impl InFlight {
    /// Holds `digest` until the returned guard is dropped (and
    /// [`HELD_AFTER`] more).
    pub fn hold(&self, digest: &Digest) -> Held {
        *self
            .0
            .lock()
            .expect("not poisoned")
            .entry(digest.clone())
            .or_default() += 1;
        Held {
            in_flight: self.clone(),
            digest: digest.clone(),
        }
    }

    fn digests(&self) -> Vec<Digest> {
        self.0
            .lock()
            .expect("not poisoned")
            .keys()
            .cloned()
            .collect()
    }

    fn release(&self, digest: &Digest) {
        let mut held = self.0.lock().expect("not poisoned");
        if let Some(count) = held.get_mut(digest) {
            *count -= 1;
            if *count == 0 {
                held.remove(digest);
            }
        }
    }
}

/// A hold on in-flight content; released [`HELD_AFTER`] after it drops.
pub struct Held {
    in_flight: InFlight,
    digest: Digest,
}

impl Drop for Held {
    fn drop(&mut self) {
        let (in_flight, digest) = (self.in_flight.clone(), self.digest.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(HELD_AFTER).await;
                    in_flight.release(&digest);
                });
            }
            Err(_) => in_flight.release(&digest),
        }
    }
}

fn pinned(bundles: &Cache<Bundle>, instances: &Cache<Instance>) -> HashSet<Digest> {
    let objects = bundles
        .state()
        .into_iter()
        .filter_map(|bundle| bundle.status.as_ref()?.source.as_ref()?.digest.clone());
    let embedded = instances.state().into_iter().flat_map(|instance| {
        let Some(status) = instance.status.as_ref() else {
            return Vec::new();
        };
        let mut digests: Vec<String> = status
            .embedded_bundle
            .iter()
            .filter_map(|record| record.status.source.as_ref()?.digest.clone())
            .collect();
        // The serving revision's content stays while a later one rolls
        // out, and so does an automatic rollback's: a rollback takes its
        // content from the store, never from its source again.
        let kept = [
            status.serving_revision,
            status
                .automatic_rollback
                .as_ref()
                .map(|rollback| rollback.to),
        ];
        digests.extend(
            status
                .revisions
                .iter()
                .filter(|revision| kept.contains(&Some(revision.number)))
                .map(|revision| revision.digest.clone()),
        );
        digests
    });
    objects
        .chain(embedded)
        .filter_map(|digest| Digest::parse(&digest).ok())
        .collect()
}

/// Waits until `cache` has its first list; `false` if its writer is gone.
/// Asked again every second: kube's `wait_until_ready` may not wake a
/// waiter when another (the controller, on the Instance cache) waits at
/// the same time, while a fresh call after the list returns at once.
async fn filled<K>(cache: &Cache<K>) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    loop {
        match tokio::time::timeout(Duration::from_secs(1), cache.wait_until_ready()).await {
            Ok(result) => return result.is_ok(),
            Err(_elapsed) => continue,
        }
    }
}

/// Collects `store` every `gc.every`, once the caches are filled (before
/// that every pin would look absent).
pub async fn run(
    store: Arc<Store>,
    bundles: Cache<Bundle>,
    instances: Cache<Instance>,
    in_flight: InFlight,
    metrics: Arc<Metrics>,
    gc: StoreGc,
) {
    if !filled(&bundles).await || !filled(&instances).await {
        return;
    }
    let mut ticker = tokio::time::interval(gc.every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let mut pins = pinned(&bundles, &instances);
        pins.extend(in_flight.digests());
        let task_store = Arc::clone(&store);
        // Walking and deleting directories is blocking file IO.
        let outcome =
            tokio::task::spawn_blocking(move || task_store.collect(&pins, gc.policy)).await;
        report(outcome, gc, &metrics);
    }
}

/// Logs and counts one collection's outcome: what went, what could not,
/// and content that pins alone keep over the cap.
pub fn report(
    outcome: Result<
        Result<(gc::Plan, crate::store::GcReport), crate::store::StoreError>,
        tokio::task::JoinError,
    >,
    gc: StoreGc,
    metrics: &Metrics,
) {
    match outcome {
        Ok(Ok((plan, report))) => {
            for error in &report.failed {
                tracing::warn!(%error, "store collection");
            }
            if let Some(over) = plan.pinned_over_cap {
                tracing::warn!(
                    over_by = over,
                    max_bytes = gc.policy.max_bytes,
                    "pinned content is over the store's cap; raise --store-max-bytes and the volume"
                );
            }
            if !report.removed.is_empty() || report.stale_temp > 0 {
                tracing::info!(
                    removed = report.removed.len(),
                    stale_temp = report.stale_temp,
                    bytes = plan.bytes_after,
                    "store collected"
                );
            }
            metrics.store_collected(
                plan.bytes_after,
                report.removed.len(),
                plan.pinned_over_cap.unwrap_or(0),
            );
        }
        Ok(Err(error)) => tracing::warn!(%error, "store collection"),
        Err(error) => tracing::warn!(%error, "store collection task"),
    }
}
