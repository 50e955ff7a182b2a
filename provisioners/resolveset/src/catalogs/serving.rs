//! The catalogs the resolver answers from: one immutable snapshot (the
//! catalog set by priority, and the engine's universe built from it),
//! replaced whole.
//!
//! A new digest is loaded beside the served snapshot, a new snapshot is
//! built from it and the other catalogs, and only then swapped in under a
//! write lock held for one pointer store. A request holds the `Arc` of the
//! snapshot it started with, so it never sees a half-loaded catalog and a
//! reload never makes it wait. `std`'s `RwLock<Arc<_>>` does this with no
//! extra crate: readers only clone an `Arc` under the lock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use pakket_engine::catalog::{Catalog, CatalogSet};
use pakket_engine::resolve::Universe;

use crate::catalogs::catalog::CatalogCounts;

/// One consistent view of every served catalog.
#[derive(Default)]
pub struct Served {
    /// The catalogs, highest priority first.
    pub set: CatalogSet,
    /// What the resolver chooses from, built once for this set.
    pub universe: Universe,
    /// The digest each catalog's content has, by catalog name.
    digests: BTreeMap<String, String>,
}

impl Served {
    /// The digest of catalog `name`'s served content.
    pub fn digest(&self, name: &str) -> Option<&str> {
        self.digests.get(name).map(String::as_str)
    }

    /// Every served digest.
    pub fn digests(&self) -> impl Iterator<Item = &str> {
        self.digests.values().map(String::as_str)
    }

    /// The served catalog called `name`.
    pub fn catalog(&self, name: &str) -> Option<&Catalog> {
        self.set.catalog(self.set.catalog_index(name)?)
    }
}

/// The served snapshot and the one way to change it.
pub struct Catalogs {
    current: RwLock<Arc<Served>>,
    /// Changes are made one at a time, so two Catalogs reloading together
    /// never build from the same old snapshot and drop each other's content.
    writer: Mutex<()>,
    /// Counts swaps, so the Input controller resolves again after one.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Catalogs {
    fn default() -> Self {
        Self {
            current: RwLock::default(),
            writer: Mutex::default(),
            changed: tokio::sync::watch::channel(0).0,
        }
    }
}

impl Catalogs {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells of every swap (the value counts them).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The snapshot to answer one request from.
    pub fn snapshot(&self) -> Arc<Served> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Serves `catalog` (content `digest`) in place of any catalog of the
    /// same name. Blocking: builds the new universe before the swap.
    pub fn put(&self, catalog: Catalog, digest: &str) {
        let name = catalog.name.clone();
        self.change(|catalogs, digests| {
            catalogs.retain(|c| c.name != name);
            catalogs.push(Arc::new(catalog));
            digests.insert(name, digest.to_owned());
        });
    }

    /// Serves catalog `name`'s content at a new priority, without reloading it.
    pub fn set_priority(&self, name: &str, priority: i32) {
        self.change(|catalogs, _| {
            for catalog in catalogs.iter_mut().filter(|c| c.name == name) {
                // A copy only while an older snapshot still holds this
                // catalog; priorities change rarely.
                Arc::make_mut(catalog).priority = priority;
            }
        });
    }

    /// Stops serving catalog `name`.
    pub fn remove(&self, name: &str) {
        if self.snapshot().digest(name).is_none() {
            return;
        }
        self.change(|catalogs, digests| {
            catalogs.retain(|c| c.name != name);
            digests.remove(name);
        });
    }

    fn change(&self, edit: impl FnOnce(&mut Vec<Arc<Catalog>>, &mut BTreeMap<String, String>)) {
        let _one_at_a_time = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.snapshot();
        // The other catalogs are shared with the old snapshot, not copied.
        let mut catalogs = old.set.catalogs().to_vec();
        let mut digests = old.digests.clone();
        drop(old);
        edit(&mut catalogs, &mut digests);
        let set = CatalogSet::shared(catalogs);
        let universe = Universe::from_catalogs(&set);
        let next = Arc::new(Served {
            set,
            universe,
            digests,
        });
        let previous = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            next,
        );
        // Freed after the write lock is released: dropping a whole catalog
        // set takes tens of milliseconds, which readers must not wait for.
        drop(previous);
        self.changed.send_modify(|swaps| *swaps += 1);
    }
}

/// How much a loaded catalog holds.
pub fn counts(catalog: &Catalog) -> CatalogCounts {
    CatalogCounts {
        packages: catalog.packages.len() as u64,
        channels: catalog
            .packages
            .values()
            .map(|package| package.channels.len() as u64)
            .sum(),
        bundles: catalog.bundles.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_engine::catalog::Format;

    fn catalog(name: &str, priority: i32, version: &str) -> Catalog {
        let text = format!(
            r#"{{"schema":"olm.package","name":"etcd","defaultChannel":"alpha"}}
{{"schema":"olm.channel","package":"etcd","name":"alpha","entries":[{{"name":"etcd.v{version}"}}]}}
{{"schema":"olm.bundle","name":"etcd.v{version}","package":"etcd","image":"x","properties":[{{"type":"olm.package","value":{{"packageName":"etcd","version":"{version}"}}}}]}}"#
        );
        Catalog::from_str(&text, "catalog.json", Format::Json, name, priority).unwrap()
    }

    #[test]
    fn a_snapshot_taken_before_a_swap_keeps_its_content() {
        let catalogs = Catalogs::new();
        catalogs.put(catalog("a", 0, "1.0.0"), "sha256:1");
        let before = catalogs.snapshot();
        catalogs.put(catalog("a", 0, "2.0.0"), "sha256:2");
        catalogs.put(catalog("b", 5, "3.0.0"), "sha256:3");
        assert_eq!(before.digest("a"), Some("sha256:1"));
        assert_eq!(before.set.catalogs().len(), 1);
        let after = catalogs.snapshot();
        assert_eq!(after.digest("a"), Some("sha256:2"));
        let order: Vec<&str> = after
            .set
            .catalogs()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(order, ["b", "a"]);

        catalogs.set_priority("a", 10);
        let order: Vec<String> = catalogs
            .snapshot()
            .set
            .catalogs()
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(order, ["a", "b"]);
        catalogs.remove("b");
        assert!(catalogs.snapshot().catalog("b").is_none());
        assert_eq!(counts(catalogs.snapshot().catalog("a").unwrap()).bundles, 1);
    }
}
