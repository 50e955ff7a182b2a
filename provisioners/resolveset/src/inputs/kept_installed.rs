//! What runs stays unless someone asks it to go. An Input that resolved
//! once and cannot be resolved now (its Catalog deleted, unreachable or not
//! loaded yet; its constraints edited into something no bundle meets; a
//! conflict with a newer Input) keeps what it installed in the set, at the
//! installed bundles, marked [`KEPT_FOR`]. Only deleting the Input (or the
//! Operator it stands for) removes a package.
//!
//! An installed bundle its catalog no longer offers is not resolved again
//! at all: the resolver would need its update graph, and would otherwise
//! move the package to whatever another catalog offers. Its Inputs are
//! held at what they installed until the catalog serves it again; upgrades
//! wait, and the Input says which catalog they wait for. Changes that need
//! no catalog still land: a config edit is applied, and an Input whose
//! request (edited or not) the installed bundle still meets is told it is
//! satisfied, not that it fails ([`Held::satisfied_by`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::inputs::input::ResolvedInstance;
use crate::set::resolved_set::Entry;

/// The property a kept entry carries: the Inputs it is kept for.
pub const KEPT_FOR: &str = "pakket.dev/keptFor";

/// Whether a catalog offers a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// The catalog is served and has the bundle.
    Offered,
    /// The catalog is served and no longer has the bundle.
    NotOffered,
    /// No catalog of that name is served (deleted, unreachable, not
    /// loaded yet).
    CatalogNotServed,
}

/// An installed bundle the served catalogs cannot resolve again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// Its package.
    pub package: String,
    /// The bundle installed.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The catalog it came from.
    pub catalog: String,
    /// Whether that catalog is served at all.
    pub catalog_served: bool,
}

impl Unavailable {
    /// One clause: what waits for which catalog.
    pub fn words(&self) -> String {
        if self.catalog_served {
            format!(
                "Catalog {} no longer offers {} {} (bundle {})",
                self.catalog, self.package, self.version, self.bundle
            )
        } else {
            format!(
                "Catalog {} is not served (deleted, unreachable or not loaded yet), and {} {} came from it",
                self.catalog, self.package, self.version
            )
        }
    }
}

/// The entries of `previous` whose catalog does not offer them now, by
/// `offer(catalog, bundle)`.
pub fn unavailable(previous: &[Entry], offer: impl Fn(&str, &str) -> Offer) -> Vec<Unavailable> {
    previous
        .iter()
        .filter_map(|entry| {
            let served = match offer(&entry.catalog, &entry.name) {
                Offer::Offered => return None,
                Offer::NotOffered => true,
                Offer::CatalogNotServed => false,
            };
            Some(Unavailable {
                package: entry.package_name.clone(),
                bundle: entry.name.clone(),
                version: entry.version.clone(),
                catalog: entry.catalog.clone(),
                catalog_served: served,
            })
        })
        .collect()
}

/// An Input held at what it installed: why, and what of it still meets
/// the Input's request as it is now, if something does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// What cannot be resolved again, and that upgrades wait for it.
    pub why: String,
    /// The installed bundle that meets the request now, in words.
    pub satisfied_by: Option<String>,
}

/// The installed bundle that meets `request` without its catalog: the
/// same package, in the range, channel and catalog the request names (a
/// request by GVK or label needs the catalog to say, so it is not met).
pub fn satisfied_by<'a>(
    request: &pakket_engine::resolve::Request,
    installed: &'a [ResolvedInstance],
) -> Option<&'a ResolvedInstance> {
    use pakket_engine::resolve::Request;
    installed.iter().find(|bundle| match request {
        Request::Package {
            package,
            channel,
            range,
            catalog,
        } => {
            bundle.package == *package
                && channel
                    .as_ref()
                    .is_none_or(|channel| bundle.channel.as_ref() == Some(channel))
                && catalog
                    .as_ref()
                    .is_none_or(|catalog| bundle.catalog == *catalog)
                && range.as_ref().is_none_or(|range| {
                    pakket_engine::Version::parse(&bundle.version)
                        .is_ok_and(|version| range.contains(&version))
                })
        }
        Request::BundleName(name) => bundle.bundle == *name,
        Request::Gvk(_) | Request::Label(_) => false,
    })
}

/// The unavailable bundles among what an Input installed (`installed`,
/// from its status).
pub fn held_by<'a>(
    installed: &[ResolvedInstance],
    unavailable: &'a [Unavailable],
) -> Vec<&'a Unavailable> {
    unavailable
        .iter()
        .filter(|gone| {
            installed
                .iter()
                .any(|i| i.package == gone.package && i.bundle == gone.bundle)
        })
        .collect()
}

/// The entries of `previous` kept in the set for Inputs that cannot be
/// resolved now (`failing`: each Input's name and what it installed),
/// where `next` does not hold their package already. Each is the entry
/// as installed (no pivot, the same bundle), marked with the Inputs it is
/// kept for.
pub fn kept(
    previous: &[Entry],
    next: &[Entry],
    failing: &[(&str, &[ResolvedInstance])],
) -> Vec<Entry> {
    let mut kept_for: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (input, installed) in failing {
        for instance in *installed {
            let in_next = next.iter().any(|e| e.package_name == instance.package);
            let was_installed = previous
                .iter()
                .any(|e| e.package_name == instance.package && e.name == instance.bundle);
            if !in_next && was_installed {
                kept_for
                    .entry(instance.package.as_str())
                    .or_default()
                    .insert(format!("Input {input}"));
            }
        }
    }
    previous
        .iter()
        .filter_map(|entry| {
            let inputs = kept_for.get(entry.package_name.as_str())?;
            let mut entry = entry.clone();
            // Kept as it runs: not a pivot from anything.
            entry.properties.retain(|p| {
                !matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("pivotFrom" | KEPT_FOR)
                )
            });
            entry.properties.push(json!({
                "type": KEPT_FOR,
                "value": inputs.iter().collect::<Vec<_>>(),
            }));
            Some(entry)
        })
        .collect()
}

/// The words after a failing Input's reason: what stays installed, and
/// what removes it.
pub fn stays(installed: &[ResolvedInstance]) -> String {
    let listed: Vec<String> = installed
        .iter()
        .map(|i| format!("{} {}", i.package, i.version))
        .collect();
    format!(
        "{} stay{} installed as {} (only deleting the Input or its Operator removes {})",
        listed.join(", "),
        if listed.len() == 1 { "s" } else { "" },
        if listed.len() == 1 {
            "it is"
        } else {
            "they are"
        },
        if listed.len() == 1 { "it" } else { "them" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, bundle: &str, catalog: &str) -> Entry {
        Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: bundle.into(),
            package_name: package.into(),
            version: "1.0.0".into(),
            image: format!("example.com/{bundle}"),
            catalog: catalog.into(),
            channel: None,
            properties: vec![json!({"type": "pivotFrom", "value": "older"})],
        }
    }

    fn installed(package: &str, bundle: &str) -> ResolvedInstance {
        ResolvedInstance {
            name: format!("set-{package}"),
            package: package.into(),
            version: "1.0.0".into(),
            bundle: bundle.into(),
            catalog: "community".into(),
            ..ResolvedInstance::default()
        }
    }

    #[test]
    fn an_entry_is_unavailable_when_its_catalog_is_gone_or_no_longer_has_it() {
        let previous = [
            entry("etcd", "etcd.v1", "gone"),
            entry("redis", "redis.v1", "pruned"),
            entry("nginx", "nginx.v1", "fine"),
        ];
        let found = unavailable(&previous, |catalog, _| match catalog {
            "gone" => Offer::CatalogNotServed,
            "pruned" => Offer::NotOffered,
            _ => Offer::Offered,
        });
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].package.as_str(), found[0].catalog_served),
            ("etcd", false)
        );
        assert_eq!(
            (found[1].package.as_str(), found[1].catalog_served),
            ("redis", true)
        );
        assert!(found[0].words().contains("Catalog gone is not served"));
        assert!(found[1].words().contains("no longer offers redis"));
        let asked = [installed("nginx", "nginx.v1"), installed("etcd", "etcd.v1")];
        let held = held_by(&asked, &found);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].package, "etcd");
        assert!(held_by(&[installed("etcd", "etcd.v2")], &found).is_empty());
    }

    #[test]
    fn a_failing_input_keeps_what_it_installed_as_it_was_and_nothing_more() {
        let previous = [
            entry("etcd", "etcd.v1", "c"),
            entry("backup", "backup.v1", "c"),
            entry("redis", "redis.v1", "c"),
        ];
        let next = [entry("backup", "backup.v2", "c")];
        let app = [
            installed("etcd", "etcd.v1"),
            installed("backup", "backup.v1"),
        ];
        let other = [installed("etcd", "etcd.v1")];
        let kept = kept(&previous, &next, &[("app", &app), ("other", &other)]);
        // etcd is kept for both; backup is in the next set already; redis
        // was nobody's that is failing.
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].name, "etcd.v1");
        assert_eq!(
            kept[0].properties,
            [json!({"type": KEPT_FOR, "value": ["Input app", "Input other"]})]
        );
        // A bundle the Input never installed is not kept.
        assert!(self::kept(&previous, &[], &[("x", &[installed("etcd", "etcd.v9")])]).is_empty());
    }

    #[test]
    fn an_installed_bundle_meets_a_request_by_package_range_channel_and_catalog_without_its_catalog()
     {
        use pakket_engine::Range;
        use pakket_engine::resolve::Request;
        let mut etcd = installed("etcd", "etcd.v0.9.4");
        etcd.version = "0.9.4".into();
        etcd.channel = Some("alpha".into());
        let installed = [etcd];
        let package =
            |channel: Option<&str>, range: Option<&str>, catalog: Option<&str>| Request::Package {
                package: "etcd".into(),
                channel: channel.map(Into::into),
                range: range.map(|range| Range::parse(range).unwrap()),
                catalog: catalog.map(Into::into),
            };
        let met = |request: &Request| satisfied_by(request, &installed).is_some();
        assert!(met(&package(None, None, None)));
        assert!(met(&package(Some("alpha"), Some(">=0.9.0 <1.0.0"), None)));
        assert!(
            !met(&package(None, Some(">=1.0.0"), None)),
            "a range above it needs the catalog"
        );
        assert!(
            !met(&package(Some("stable"), None, None)),
            "another channel needs the catalog"
        );
        assert!(!met(&package(None, None, Some("other"))));
        assert!(met(&package(None, None, Some(&installed[0].catalog))));
        assert!(!met(&Request::package("redis")));
        assert!(met(&Request::BundleName("etcd.v0.9.4".into())));
        assert!(!met(&Request::Gvk(
            "etcd.database.coreos.com/v1beta2/EtcdCluster".into()
        )));
    }

    #[test]
    fn the_words_say_what_stays_and_what_removes_it() {
        assert_eq!(
            stays(&[installed("etcd", "etcd.v1")]),
            "etcd 1.0.0 stays installed as it is (only deleting the Input or its Operator removes it)"
        );
        assert!(
            stays(&[installed("a", "a"), installed("b", "b")])
                .starts_with("a 1.0.0, b 1.0.0 stay installed as they are")
        );
    }
}
