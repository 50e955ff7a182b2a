//! Collects the content store: catalog content no Catalog serves any more
//! (an old digest after an update, a broken digest that never loaded) goes
//! after a grace period, and the store is kept under its cap.
//!
//! Pins are the digests this process serves and the ones it is loading
//! right now; every replica has its own store and collects it on its own
//! (no leader needed: what a replica serves is its own business).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use pakket_runtime::kernel::controller::StoreGc;
use pakket_runtime::kernel::serve::Metrics;
use pakket_runtime::kernel::store::{Digest, Store};

use crate::catalogs::serving::Catalogs;

/// Digests fetched and being loaded, not served yet: kept by the collector.
#[derive(Default)]
pub struct Loading {
    digests: Mutex<HashSet<String>>,
}

impl Loading {
    /// Marks `digest` as being loaded until the returned guard is dropped.
    pub fn hold(self: &Arc<Self>, digest: &str) -> LoadingGuard {
        self.digests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(digest.to_owned());
        LoadingGuard {
            loading: Arc::clone(self),
            digest: digest.to_owned(),
        }
    }

    fn snapshot(&self) -> Vec<String> {
        self.digests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// Keeps a digest pinned while it loads.
pub struct LoadingGuard {
    loading: Arc<Loading>,
    digest: String,
}

impl Drop for LoadingGuard {
    fn drop(&mut self) {
        self.loading
            .digests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.digest);
    }
}

/// What the collector must keep: the served digests and those loading.
pub fn pinned(catalogs: &Catalogs, loading: &Loading) -> HashSet<Digest> {
    let served = catalogs.snapshot();
    served
        .digests()
        .map(str::to_owned)
        .chain(loading.snapshot())
        .filter_map(|digest| Digest::parse(&digest).ok())
        .collect()
}

/// Collects `store` every `gc.every`, forever.
pub async fn run(
    store: Arc<Store>,
    catalogs: Arc<Catalogs>,
    loading: Arc<Loading>,
    metrics: Arc<Metrics>,
    gc: StoreGc,
) {
    let mut ticker = tokio::time::interval(gc.every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; content from before a restart is
    // collected once the Catalogs had a chance to load it again.
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let pins = pinned(&catalogs, &loading);
        let task_store = Arc::clone(&store);
        // Walking and deleting directories is blocking file IO.
        let outcome =
            tokio::task::spawn_blocking(move || task_store.collect(&pins, gc.policy)).await;
        pakket_runtime::kernel::controller::report_collection(outcome, gc, &metrics);
    }
}
