//! Teams' own copies of one operator. The set installs a package once as
//! its own entry (`<set>-<package>`), for the Input that owns it
//! ([`crate::inputs::package_owner`]); every other Input that asks for it
//! from one namespace of its own gets a copy (`<set>-<package>.<ns>`):
//! the same bundle, at the one version the set resolves for the package,
//! running in and watching only that namespace, with that Input's config
//! and requester, and without the CRDs (registry-v1's `crds: Omit`),
//! which the package's own entry installs and owns.
//!
//! Why copies and not one operator watching every team's namespace: an
//! operator's ServiceAccount acts in each namespace it watches, and
//! whoever owns the namespace it runs in can act as that account, so one
//! team would gain another's rights. A copy acts only where its own team
//! already may.
//!
//! The CRDs stay with the package's own entry. When the Input it was
//! installed for goes while copies remain, the entry keeps the CRDs alone
//! (`crds: Only`): one team leaving never deletes the CRDs, and with them
//! every custom resource, that another team's copy serves. They go when
//! the last copy does, as a package's CRDs always go with it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use pakket_resolve_api::input::ResolvedInstance;

use crate::inputs::input_resolve::{Answer, copy_name};
use crate::inputs::package_owner::{Installed, Main, Owners};
use crate::set::resolved_set::{COPY_IN, Entry, NEEDED_BY};

/// The set's entries split into each package's own entry and the copies.
pub fn split(entries: Vec<Entry>) -> (Vec<Entry>, Vec<Entry>) {
    entries
        .into_iter()
        .partition(|entry| entry.copy_in().is_none())
}

/// What the set installs now for each package: its own entry and the
/// namespaces of its copies.
pub fn installed(mains: &[Entry], copies: &[Entry]) -> BTreeMap<String, Installed> {
    mains
        .iter()
        .map(|entry| {
            let copies: BTreeSet<String> = copies
                .iter()
                .filter(|copy| copy.package_name == entry.package_name)
                .filter_map(|copy| copy.copy_in().map(str::to_owned))
                .collect();
            let main = Main::of(entry.config.as_ref());
            (entry.package_name.clone(), Installed { main, copies })
        })
        .collect()
}

/// Each copy's Input is answered with its copy (not the package's own
/// Instance), so it and its Operator report what runs for them.
pub fn answer_with_copies(answers: &mut BTreeMap<String, Answer>, owners: &Owners, set: &str) {
    for (input, copy) in &owners.copies {
        if let Some(Answer::Resolved(instances)) = answers.get_mut(input) {
            rename(
                instances,
                &copy.package,
                &copy_name(set, &copy.package, &copy.namespace),
            );
        }
    }
}

fn rename(instances: &mut [ResolvedInstance], package: &str, name: &str) {
    for instance in instances.iter_mut().filter(|i| i.package == package) {
        instance.name = name.to_owned();
    }
}

/// Adds a copy entry for each copy whose Input `resolved`, and makes the
/// own entry of each package kept for copies install its CRDs alone.
/// `configs` is each Input's `spec.config`; `previous` the set's own
/// entries before (whose config a package kept for copies keeps).
pub fn add(
    entries: &mut Vec<Entry>,
    owners: &Owners,
    resolved: &BTreeSet<&str>,
    configs: &BTreeMap<String, Option<Map<String, Value>>>,
    previous: &[Entry],
) {
    let mut added = Vec::new();
    for (input, copy) in &owners.copies {
        let Some(main) = entries
            .iter_mut()
            .find(|entry| entry.package_name == copy.package)
        else {
            continue;
        };
        // The copy's Input needs the copy, not the package's own entry,
        // whose requester it must not become.
        drop_needed_by(main, &format!("Input {input}"));
        if !resolved.contains(input.as_str()) {
            continue;
        }
        let mut entry = main.clone();
        entry
            .properties
            .retain(|p| p["type"] != NEEDED_BY && p["type"] != "pivotFrom");
        entry
            .properties
            .push(json!({ "type": NEEDED_BY, "value": [format!("Input {input}")] }));
        entry
            .properties
            .push(json!({ "type": COPY_IN, "value": copy.namespace }));
        let mut config = configs.get(input).cloned().flatten().unwrap_or_default();
        config.insert("crds".into(), json!("Omit"));
        entry.config = Some(config);
        added.push(entry);
    }
    for package in &owners.crds_only {
        let Some(main) = entries.iter_mut().find(|e| &e.package_name == package) else {
            continue;
        };
        let mut config = previous
            .iter()
            .find(|entry| &entry.package_name == package)
            .and_then(|entry| entry.config.clone())
            .unwrap_or_default();
        config.insert("crds".into(), json!("Only"));
        main.config = Some(config);
    }
    entries.extend(added);
    entries.sort_by(|a, b| (&a.package_name, a.copy_in()).cmp(&(&b.package_name, b.copy_in())));
}

fn drop_needed_by(entry: &mut Entry, who: &str) {
    for property in entry
        .properties
        .iter_mut()
        .filter(|p| p["type"] == NEEDED_BY)
    {
        if let Some(list) = property["value"].as_array_mut() {
            list.retain(|item| item.as_str() != Some(who));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::input_resolve::child_name;
    use crate::inputs::package_owner::TeamCopy;

    fn entry(config: Value, needed_by: &[&str]) -> Entry {
        Entry {
            config: config.as_object().cloned(),
            schema: "olm.bundle".into(),
            name: "etcdoperator.v0.9.4".into(),
            package_name: "etcd".into(),
            version: "0.9.4".into(),
            image: "quay.io/etcd:0.9.4".into(),
            catalog: "c".into(),
            channel: None,
            properties: vec![
                json!({ "type": NEEDED_BY, "value": needed_by }),
                json!({ "type": "pivotFrom", "value": "etcdoperator.v0.9.2" }),
            ],
        }
    }

    fn homed(namespace: &str) -> Option<Map<String, Value>> {
        json!({"installNamespace": namespace, "watchNamespaces": [namespace]})
            .as_object()
            .cloned()
    }

    /// Owners giving bob a copy of etcd in team-b.
    fn bob_copies_etcd_in_team_b() -> Owners {
        Owners {
            copies: BTreeMap::from([(
                "bob".to_owned(),
                TeamCopy {
                    package: "etcd".into(),
                    namespace: "team-b".into(),
                },
            )]),
            ..Owners::default()
        }
    }

    #[test]
    fn a_copy_is_its_inputs_alone_without_the_crds_and_the_own_entry_is_not_its_requesters() {
        let alice = homed("team-a");
        let mut entries = vec![entry(json!(alice), &["Input alice", "Input bob"])];
        let owners = bob_copies_etcd_in_team_b();
        let configs = BTreeMap::from([("bob".to_owned(), homed("team-b"))]);
        add(
            &mut entries,
            &owners,
            &BTreeSet::from(["alice", "bob"]),
            &configs,
            &[],
        );
        let names: Vec<String> = entries.iter().map(|e| child_name("set", e)).collect();
        assert_eq!(names, ["set-etcd", "set-etcd.team-b"]);
        assert_eq!(entries[0].needed_by(), ["Input alice"]);
        assert_eq!(entries[1].needed_by(), ["Input bob"]);
        let copy = entries[1].config.as_ref().unwrap();
        assert_eq!(copy["installNamespace"], "team-b");
        assert_eq!(copy["crds"], "Omit");
        assert!(entries[0].config.as_ref().unwrap().get("crds").is_none());
        assert!(
            !entries[1]
                .properties
                .iter()
                .any(|p| p["type"] == "pivotFrom"),
            "a copy pivots from its own bundle, not the package's own entry's"
        );
        let (mains, copies) = split(entries.clone());
        assert_eq!((mains.len(), copies.len()), (1, 1));
        let now = installed(&mains, &copies);
        assert_eq!(now["etcd"].main, Main::Whole(Some("team-a".into())));
        assert_eq!(now["etcd"].copies, BTreeSet::from(["team-b".to_owned()]));

        // An unresolved copy's Input gets no copy (and still does not
        // become the own entry's requester).
        let mut unresolved = vec![entry(json!(homed("team-a")), &["Input alice", "Input bob"])];
        add(
            &mut unresolved,
            &owners,
            &BTreeSet::from(["alice"]),
            &configs,
            &[],
        );
        assert_eq!(unresolved.len(), 1);
        assert_eq!(unresolved[0].needed_by(), ["Input alice"]);
    }

    #[test]
    fn a_package_kept_for_copies_keeps_its_own_entrys_place_with_the_crds_alone() {
        let before = entry(json!(homed("team-a")), &["Input alice"]);
        let mut entries = vec![entry(json!(null), &["Input bob"])];
        let owners = Owners {
            crds_only: BTreeSet::from(["etcd".to_owned()]),
            ..Owners::default()
        };
        add(
            &mut entries,
            &owners,
            &BTreeSet::new(),
            &BTreeMap::new(),
            &[before],
        );
        let config = entries[0].config.as_ref().unwrap();
        assert_eq!(config["crds"], "Only");
        assert_eq!(config["installNamespace"], "team-a");
        assert_eq!(Main::of(Some(config)), Main::CrdsOnly);
    }

    #[test]
    fn a_copys_input_is_answered_with_its_copy() {
        let instance = |name: &str, package: &str| ResolvedInstance {
            name: name.into(),
            package: package.into(),
            version: "1".into(),
            bundle: "b".into(),
            catalog: "c".into(),
            channel: None,
            deprecated: None,
            satisfies: Vec::new(),
            dependencies: Vec::new(),
        };
        let mut answers = BTreeMap::from([(
            "bob".to_owned(),
            Answer::Resolved(vec![
                instance("set-etcd", "etcd"),
                instance("set-dep", "dep"),
            ]),
        )]);
        let owners = bob_copies_etcd_in_team_b();
        answer_with_copies(&mut answers, &owners, "set");
        let Answer::Resolved(instances) = &answers["bob"] else {
            panic!("resolved")
        };
        assert_eq!(instances[0].name, "set-etcd.team-b");
        assert_eq!(instances[1].name, "set-dep", "a dependency is shared");
    }
}
