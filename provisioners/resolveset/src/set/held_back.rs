//! Dependents go first. When a resolution drops a bundle from the set, its
//! child Instance would be pruned at once, together with the children that
//! needed it: an operator's CRDs could go while the operator that uses them
//! is still running. So a bundle leaving the set stays in it, at the bundle
//! installed, while a child that needs it (by the set's own record,
//! `pakket.dev/neededBy`) is leaving too and still on the cluster; once
//! every such child is gone, the next pass lets it go. A child that stays
//! in the set does not hold anything back: the new set says what it needs.
//!
//! Nor does a bundle leave while an Instance outside the set needs what it
//! provides: a package in a required range (`olm.package.required`) or an
//! API (`olm.gvk.required`), as that Instance's provisioner recorded them
//! (`Bundle.status.properties`). It stays until that Instance is gone or no
//! longer needs it.

use pakket_api::BundleProperty;
use pakket_engine::{Range, Version};
use serde_json::{Value, json};

use crate::inputs::input_resolve::child_name;
use crate::set::resolved_set::Entry;

/// The property a held-back entry carries: the Instances it waits for.
pub const HELD_BACK_FOR: &str = "pakket.dev/heldBackFor";
pub use crate::set::resolved_set::NEEDED_BY;

/// The Instances (by name) that `entry` is recorded as needed by.
fn needing_instances(entry: &Entry) -> Vec<String> {
    entry
        .needed_by()
        .into_iter()
        .filter_map(|who| who.strip_prefix("Instance "))
        .map(str::to_owned)
        .collect()
}

/// The Instances whose presence decides what is held back: those that
/// need an entry of `previous` that `next` drops. Ask the cluster about
/// these, then call [`held_back`].
pub fn to_look_up(previous: &[Entry], next: &[Entry]) -> Vec<String> {
    let mut names: Vec<String> = leaving(previous, next)
        .flat_map(needing_instances)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn leaving<'a>(previous: &'a [Entry], next: &'a [Entry]) -> impl Iterator<Item = &'a Entry> {
    previous.iter().filter(|entry| {
        !next
            .iter()
            .any(|kept| kept.package_name == entry.package_name)
    })
}

/// An Instance outside the set and what its content requires, as its
/// provisioner recorded it.
#[derive(Clone, Debug, Default)]
pub struct Outside {
    /// The Instance's name.
    pub name: String,
    /// Its active Bundle's properties (`olm.package.required`,
    /// `olm.gvk.required`, …).
    pub properties: Vec<BundleProperty>,
}

/// Whether `needs` (an Instance's recorded properties) require what
/// `entry` provides.
fn requires(needs: &[BundleProperty], entry: &Entry) -> bool {
    let version = Version::parse(&entry.version).ok();
    let provided_gvks: Vec<&Value> = entry
        .properties
        .iter()
        .filter(|property| property["type"] == "olm.gvk")
        .map(|property| &property["value"])
        .collect();
    needs.iter().any(|need| match need.type_.as_str() {
        "olm.package.required" => {
            let package = need.value["packageName"].as_str().unwrap_or_default();
            let range = need.value["versionRange"].as_str().unwrap_or_default();
            package == entry.package_name
                && (range.trim().is_empty()
                    || match (Range::parse(range), &version) {
                        (Ok(range), Some(version)) => range.contains(version),
                        // A range or version that does not read: assume
                        // the need, rather than pull what may be in use.
                        _ => true,
                    })
        }
        "olm.gvk.required" => provided_gvks.iter().any(|gvk| {
            ["group", "version", "kind"]
                .iter()
                .all(|field| gvk[field] == need.value[field])
        }),
        _ => false,
    })
}

/// The entries of `previous` that `next` drops but that must stay for now:
/// some child that needs them is still `present` on the cluster and is
/// not a child of `next` (set Instance `set`), or an Instance `outside`
/// the set requires what they provide. Each comes back as it was, with
/// [`HELD_BACK_FOR`] naming the Instances it waits for.
pub fn held_back(
    previous: &[Entry],
    next: &[Entry],
    set: &str,
    present: impl Fn(&str) -> bool,
    outside: &[Outside],
) -> Vec<Entry> {
    let staying: Vec<String> = next.iter().map(|entry| child_name(set, entry)).collect();
    leaving(previous, next)
        .filter_map(|entry| {
            let mut waits_for: Vec<String> = needing_instances(entry)
                .into_iter()
                .filter(|name| !staying.contains(name) && present(name))
                .collect();
            waits_for.extend(
                outside
                    .iter()
                    .filter(|instance| requires(&instance.properties, entry))
                    .map(|instance| instance.name.clone()),
            );
            if waits_for.is_empty() {
                return None;
            }
            let mut kept = entry.clone();
            kept.properties
                .retain(|property| property["type"] != HELD_BACK_FOR);
            kept.properties
                .push(json!({ "type": HELD_BACK_FOR, "value": waits_for }));
            Some(kept)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, needed_by: &[&str]) -> Entry {
        Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: format!("{package}.v1.0.0"),
            package_name: package.into(),
            version: "1.0.0".into(),
            image: format!("quay.io/{package}:v1.0.0"),
            catalog: "community".into(),
            channel: None,
            properties: vec![json!({ "type": NEEDED_BY, "value": needed_by })],
        }
    }

    #[test]
    fn a_dependency_stays_while_its_leaving_dependent_is_on_the_cluster() {
        let previous = [
            entry("cluster-op", &["Instance set-topology"]),
            entry("topology", &["Input topology"]),
        ];
        assert_eq!(to_look_up(&previous, &[]), ["set-topology"]);
        let kept = held_back(&previous, &[], "set", |name| name == "set-topology", &[]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].package_name, "cluster-op");
        assert!(
            kept[0]
                .properties
                .contains(&json!({ "type": HELD_BACK_FOR, "value": ["set-topology"] }))
        );
        // Its dependent gone: it goes too.
        assert!(held_back(&previous, &[], "set", |_| false, &[]).is_empty());
    }

    #[test]
    fn a_dependent_that_stays_in_the_set_holds_nothing_back() {
        // topology's new version no longer needs cluster-op.
        let previous = [
            entry("cluster-op", &["Instance set-topology"]),
            entry("topology", &["Input topology"]),
        ];
        let next = [entry("topology", &["Input topology"])];
        assert!(held_back(&previous, &next, "set", |_| true, &[]).is_empty());
    }

    #[test]
    fn holding_back_again_names_the_current_waits_only() {
        let mut previous = entry("cluster-op", &["Instance set-a", "Instance set-b"]);
        previous
            .properties
            .push(json!({ "type": HELD_BACK_FOR, "value": ["set-a", "set-b"] }));
        let kept = held_back(&[previous], &[], "set", |name| name == "set-b", &[]);
        let waits: Vec<&Value> = kept[0]
            .properties
            .iter()
            .filter(|p| p["type"] == HELD_BACK_FOR)
            .collect();
        assert_eq!(
            waits,
            [&json!({ "type": HELD_BACK_FOR, "value": ["set-b"] })]
        );
    }

    fn property(type_: &str, value: Value) -> BundleProperty {
        BundleProperty {
            type_: type_.into(),
            value,
        }
    }

    #[test]
    fn an_instance_outside_the_set_that_requires_a_package_or_api_holds_it() {
        let mut cluster_op = entry("cluster-op", &["Input a"]);
        cluster_op.properties.push(
            json!({"type": "olm.gvk", "value": {"group": "rabbitmq.com", "version": "v1beta1", "kind": "RabbitmqCluster"}}),
        );
        let previous = [cluster_op];
        let by_package = Outside {
            name: "app".into(),
            properties: vec![property(
                "olm.package.required",
                json!({"packageName": "cluster-op", "versionRange": ">=1.0.0"}),
            )],
        };
        let kept = held_back(&previous, &[], "set", |_| false, &[by_package]);
        assert!(
            kept[0]
                .properties
                .contains(&json!({ "type": HELD_BACK_FOR, "value": ["app"] }))
        );
        let by_api = Outside {
            name: "other".into(),
            properties: vec![property(
                "olm.gvk.required",
                json!({"group": "rabbitmq.com", "version": "v1beta1", "kind": "RabbitmqCluster"}),
            )],
        };
        assert_eq!(
            held_back(&previous, &[], "set", |_| false, &[by_api]).len(),
            1
        );
        // Out of range, or another API: it goes.
        let elsewhere = Outside {
            name: "old".into(),
            properties: vec![
                property(
                    "olm.package.required",
                    json!({"packageName": "cluster-op", "versionRange": "<1.0.0"}),
                ),
                property(
                    "olm.gvk.required",
                    json!({"group": "rabbitmq.com", "version": "v1", "kind": "Other"}),
                ),
            ],
        };
        assert!(held_back(&previous, &[], "set", |_| false, &[elsewhere]).is_empty());
    }
}
