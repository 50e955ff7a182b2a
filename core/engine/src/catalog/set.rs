//! Several catalogs at once, by priority, with lookup indices built once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::graph::UpdateGraph;
use super::model::{Bundle, Catalog, Channel, Gvk, Package};

/// A bundle in a [`CatalogSet`]: the catalog's position in
/// [`CatalogSet::catalogs`] and the bundle's in that catalog's
/// [`Catalog::bundles`]. Cheap to copy, hash and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BundleRef {
    /// Index of the catalog in the set.
    pub catalog: u32,
    /// Index of the bundle in its catalog.
    pub bundle: u32,
}

/// Catalogs ordered by priority (higher first; ties by name), with indices
/// by package, by provided API and by bundle name.
///
/// Every list of [`BundleRef`]s it returns is in preference order: catalog
/// order first, then version (newest first), then bundle name.
///
/// Catalogs are shared (`Arc`): a server that swaps one catalog builds the
/// next set from the others without copying them, so a swap costs memory
/// for the new catalog only.
#[derive(Debug, Default)]
pub struct CatalogSet {
    catalogs: Vec<Arc<Catalog>>,
    by_package: HashMap<String, Vec<BundleRef>>,
    by_gvk: HashMap<Gvk, Vec<BundleRef>>,
    /// Per catalog: bundle name to index.
    by_name: Vec<HashMap<String, u32>>,
}

impl CatalogSet {
    /// Orders `catalogs` and builds the indices.
    ///
    /// # Panics
    /// Never in practice: only past `u32::MAX` catalogs or bundles in one.
    pub fn new(catalogs: Vec<Catalog>) -> Self {
        Self::shared(catalogs.into_iter().map(Arc::new).collect())
    }

    /// [`CatalogSet::new`] of catalogs that other sets may share.
    ///
    /// # Panics
    /// Never in practice: only past `u32::MAX` catalogs or bundles in one.
    pub fn shared(mut catalogs: Vec<Arc<Catalog>>) -> Self {
        catalogs.sort_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut set = Self {
            by_name: Vec::with_capacity(catalogs.len()),
            ..Self::default()
        };
        for (c, catalog) in catalogs.iter().enumerate() {
            let mut names = HashMap::with_capacity(catalog.bundles.len());
            for (b, bundle) in catalog.bundles.iter().enumerate() {
                let r = BundleRef {
                    catalog: index(c),
                    bundle: index(b),
                };
                // Keys are cloned only when new: most bundles share their
                // package and APIs with the bundle before them.
                if !names.contains_key(&bundle.name) {
                    names.insert(bundle.name.clone(), r.bundle);
                }
                match set.by_package.get_mut(&bundle.package) {
                    Some(refs) => refs.push(r),
                    None => {
                        set.by_package.insert(bundle.package.clone(), vec![r]);
                    }
                }
                for gvk in &bundle.provided_gvks {
                    match set.by_gvk.get_mut(gvk) {
                        // A bundle listing an API twice still provides it once.
                        Some(providers) if providers.last() == Some(&r) => {}
                        Some(providers) => providers.push(r),
                        None => {
                            set.by_gvk.insert(gvk.clone(), vec![r]);
                        }
                    }
                }
            }
            set.by_name.push(names);
        }
        let order = |a: &BundleRef, b: &BundleRef| {
            let (x, y) = (bundle_in(&catalogs, *a), bundle_in(&catalogs, *b));
            a.catalog
                .cmp(&b.catalog)
                .then_with(|| y.version.cmp(&x.version))
                .then_with(|| x.name.cmp(&y.name))
        };
        for refs in set.by_package.values_mut().chain(set.by_gvk.values_mut()) {
            refs.sort_by(order);
        }
        set.catalogs = catalogs;
        set
    }

    /// The catalogs, highest priority first.
    pub fn catalogs(&self) -> &[Arc<Catalog>] {
        &self.catalogs
    }

    /// The catalog at `index` (as in [`BundleRef::catalog`]).
    pub fn catalog(&self, index: u32) -> Option<&Catalog> {
        self.catalogs.get(index as usize).map(|c| &**c)
    }

    /// The index of the catalog called `name`.
    pub fn catalog_index(&self, name: &str) -> Option<u32> {
        self.catalogs.iter().position(|c| c.name == name).map(index)
    }

    /// The bundle `r` points at.
    ///
    /// # Panics
    /// If `r` did not come from this set.
    pub fn bundle(&self, r: BundleRef) -> &Bundle {
        bundle_in(&self.catalogs, r)
    }

    /// The bundle `r` points at, or `None` if `r` is not from this set.
    pub fn get(&self, r: BundleRef) -> Option<&Bundle> {
        self.catalogs
            .get(r.catalog as usize)?
            .bundles
            .get(r.bundle as usize)
    }

    /// The catalog `r` points into.
    ///
    /// # Panics
    /// If `r` did not come from this set.
    pub fn catalog_of(&self, r: BundleRef) -> &Catalog {
        &self.catalogs[r.catalog as usize]
    }

    /// Every bundle of `package` in every catalog, in preference order.
    pub fn bundles_of_package(&self, package: &str) -> Vec<BundleRef> {
        self.by_package.get(package).cloned().unwrap_or_default()
    }

    /// Every bundle that provides `gvk`, in preference order.
    pub fn providers_of(&self, gvk: &Gvk) -> Vec<BundleRef> {
        self.by_gvk.get(gvk).cloned().unwrap_or_default()
    }

    /// The bundle called `name` in the catalog called `catalog`.
    pub fn find_bundle(&self, catalog: &str, name: &str) -> Option<BundleRef> {
        let c = self.catalog_index(catalog)?;
        self.find_bundle_in(c, name)
    }

    /// The bundle called `name` in the catalog at index `catalog`.
    pub fn find_bundle_in(&self, catalog: u32, name: &str) -> Option<BundleRef> {
        let bundle = *self.by_name.get(catalog as usize)?.get(name)?;
        Some(BundleRef { catalog, bundle })
    }

    /// Names of every package in any catalog, sorted.
    pub fn package_names(&self) -> Vec<&str> {
        let names: BTreeSet<&str> = self
            .catalogs
            .iter()
            .flat_map(|c| c.packages.keys().map(String::as_str))
            .collect();
        names.into_iter().collect()
    }

    /// Package `name` in each catalog that has it, highest priority first.
    pub fn package(&self, name: &str) -> Vec<(u32, &Package)> {
        self.catalogs
            .iter()
            .enumerate()
            .filter_map(|(c, catalog)| Some((index(c), catalog.packages.get(name)?)))
            .collect()
    }

    /// Channel `channel` of `package` in the catalog at index `catalog`.
    pub fn channel(&self, catalog: u32, package: &str, channel: &str) -> Option<&Channel> {
        self.catalog(catalog)?.channel(package, channel)
    }

    /// The channels listing bundle `r`, in its own catalog.
    pub fn channels_of(&self, r: BundleRef) -> Vec<&Channel> {
        match (self.catalog(r.catalog), self.get(r)) {
            (Some(catalog), Some(bundle)) => catalog.channels_of(bundle),
            _ => Vec::new(),
        }
    }

    /// The update graph of a channel, with versions from its own catalog.
    pub fn graph(&self, catalog: u32, package: &str, channel: &str) -> Option<UpdateGraph<'_>> {
        let channel = self.channel(catalog, package, channel)?;
        let version_of = move |name: &str| {
            let r = self.find_bundle_in(catalog, name)?;
            let bundle = self.get(r).filter(|b| b.package == channel.package)?;
            Some(&bundle.version)
        };
        Some(UpdateGraph::new(channel, version_of))
    }
}

fn index(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 catalogs and bundles per catalog")
}

fn bundle_in(catalogs: &[Arc<Catalog>], r: BundleRef) -> &Bundle {
    &catalogs[r.catalog as usize].bundles[r.bundle as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Format;

    fn catalog(name: &str, priority: i32, yaml: &str) -> Catalog {
        Catalog::from_str(yaml, name, Format::Yaml, name, priority).unwrap()
    }

    const ETCD: &str = "
schema: olm.package
name: etcd
defaultChannel: alpha
---
schema: olm.channel
package: etcd
name: alpha
entries:
- name: etcd.v0.9.2
- name: etcd.v0.9.4
  replaces: etcd.v0.9.2
---
schema: olm.bundle
name: etcd.v0.9.2
package: etcd
image: quay.io/etcd:0.9.2
properties:
- {type: olm.package, value: {packageName: etcd, version: 0.9.2}}
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
---
schema: olm.bundle
name: etcd.v0.9.4
package: etcd
image: quay.io/etcd:0.9.4
properties:
- {type: olm.package, value: {packageName: etcd, version: 0.9.4}}
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
";

    fn names(set: &CatalogSet, refs: &[BundleRef]) -> Vec<String> {
        refs.iter()
            .map(|&r| format!("{}/{}", set.catalog_of(r).name, set.bundle(r).name))
            .collect()
    }

    #[test]
    fn catalogs_order_by_priority_then_name_and_lists_follow_that_order() {
        let set = CatalogSet::new(vec![
            catalog("b-low", -1, ETCD),
            catalog("z-high", 10, ETCD),
            catalog("a-low", -1, ETCD),
        ]);
        let order: Vec<_> = set.catalogs().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(order, ["z-high", "a-low", "b-low"]);
        assert_eq!(
            names(&set, &set.bundles_of_package("etcd")),
            [
                "z-high/etcd.v0.9.4",
                "z-high/etcd.v0.9.2",
                "a-low/etcd.v0.9.4",
                "a-low/etcd.v0.9.2",
                "b-low/etcd.v0.9.4",
                "b-low/etcd.v0.9.2",
            ]
        );
        assert!(set.bundles_of_package("nope").is_empty());
    }

    #[test]
    fn providers_are_indexed_by_gvk_once_per_bundle() {
        let set = CatalogSet::new(vec![catalog("c", 0, ETCD)]);
        let gvk = Gvk::new("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
        assert_eq!(
            names(&set, &set.providers_of(&gvk)),
            ["c/etcd.v0.9.4", "c/etcd.v0.9.2"]
        );
        assert!(set.providers_of(&Gvk::new("", "v1", "Pod")).is_empty());
    }

    #[test]
    fn bundles_packages_and_channels_can_be_looked_up() {
        let set = CatalogSet::new(vec![catalog("one", 1, ETCD), catalog("two", 0, ETCD)]);
        let r = set.find_bundle("two", "etcd.v0.9.4").unwrap();
        assert_eq!(set.catalog_of(r).name, "two");
        assert_eq!(set.bundle(r).version.to_string(), "0.9.4");
        assert!(set.find_bundle("two", "etcd.v9").is_none());
        assert!(set.find_bundle("three", "etcd.v0.9.4").is_none());
        assert!(
            set.get(BundleRef {
                catalog: 7,
                bundle: 0
            })
            .is_none()
        );
        assert_eq!(set.package_names(), ["etcd"]);
        let packages: Vec<_> = set
            .package("etcd")
            .iter()
            .map(|(c, p)| (*c, p.name.clone()))
            .collect();
        assert_eq!(packages, [(0, "etcd".to_owned()), (1, "etcd".to_owned())]);
        assert_eq!(set.channel(1, "etcd", "alpha").unwrap().entries.len(), 2);
        let channels: Vec<_> = set.channels_of(r).iter().map(|c| c.name.clone()).collect();
        assert_eq!(channels, ["alpha"]);
        let graph = set.graph(0, "etcd", "alpha").unwrap();
        assert_eq!(graph.heads()[0].name, "etcd.v0.9.4");
        assert_eq!(
            graph.version_of("etcd.v0.9.2").unwrap().to_string(),
            "0.9.2"
        );
    }
}
