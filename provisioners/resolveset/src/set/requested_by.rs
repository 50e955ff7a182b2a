//! Whose rights the Instances made for the set are judged by. Each Input
//! carries the webhook's sealed record of who wrote it; the Input
//! controller verifies it (a record that does not verify counts as
//! nobody's) and stamps each entry of the set with the one person the
//! Inputs that need it were written by, directly or through the entries
//! that need it (`pakket.dev/neededBy`). The resolveset provisioner then
//! seals that person's record on the entry's child Instance (as its
//! `last-changed-by`, which the webhook accepts from pakket-resolveset
//! only), so `approval: UserPermission` on the child's class asks about
//! her rights, not the process's.
//!
//! An entry several people's Inputs need, or one an Input with no
//! verified record needs, gets no stamp: its child is then judged as
//! pakket-resolveset's own request, which under `UserPermission` means a
//! person approves (the process holds no rights to install operators).

use std::collections::{BTreeMap, BTreeSet};

use pakket_api::CreatorRecord;
use serde_json::{Value, json};

use crate::inputs::input_resolve::child_name;
use crate::set::resolved_set::Entry;

/// The property naming the person an entry is installed for.
pub const REQUESTED_BY: &str = "pakket.dev/requestedBy";

/// The verified author of each Input, by name (`None`: no record, or one
/// that does not verify for the Input's current spec).
pub type Authors = BTreeMap<String, Option<CreatorRecord>>;

/// Whose an entry is: the identities found (JSON of the unsealed
/// record), or `None` when some Input on the way has no verified author.
type Owners = Option<BTreeSet<String>>;

/// Stamps every entry that one person's Inputs alone need with
/// [`REQUESTED_BY`] (her identity, unsealed), and takes the stamp off the
/// others. `set` is the set's Instance (children are `<set>-<package>`).
pub fn stamp(entries: &mut [Entry], set: &str, authors: &Authors) {
    let by_child: BTreeMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| (child_name(set, entry), i))
        .collect();
    let mut known: BTreeMap<usize, Owners> = BTreeMap::new();
    let owners: Vec<Owners> = (0..entries.len())
        .map(|i| {
            owners_of(
                i,
                entries,
                &by_child,
                authors,
                &mut known,
                &mut BTreeSet::new(),
            )
        })
        .collect();
    for (entry, owners) in entries.iter_mut().zip(owners) {
        entry
            .properties
            .retain(|property| property["type"] != REQUESTED_BY);
        if let Some(owners) = owners
            && owners.len() == 1
        {
            let identity: Value =
                serde_json::from_str(owners.first().expect("one")).expect("written as JSON");
            entry
                .properties
                .push(json!({ "type": REQUESTED_BY, "value": identity }));
        }
    }
}

fn owners_of(
    index: usize,
    entries: &[Entry],
    by_child: &BTreeMap<String, usize>,
    authors: &Authors,
    known: &mut BTreeMap<usize, Owners>,
    visiting: &mut BTreeSet<usize>,
) -> Owners {
    if let Some(owners) = known.get(&index) {
        return owners.clone();
    }
    if !visiting.insert(index) {
        // A cycle of needs adds no one new.
        return Some(BTreeSet::new());
    }
    let mut owners = BTreeSet::new();
    let mut unknown = false;
    for who in entries[index].needed_by() {
        if let Some(input) = who.strip_prefix("Input ") {
            match authors.get(input).cloned().flatten() {
                Some(record) => {
                    let identity = CreatorRecord::new(record.username, record.uid, record.groups);
                    owners.insert(identity.to_annotation());
                }
                None => unknown = true,
            }
        } else if let Some(child) = who.strip_prefix("Instance ") {
            match by_child.get(child) {
                Some(&needing) => {
                    match owners_of(needing, entries, by_child, authors, known, visiting) {
                        Some(more) => owners.extend(more),
                        None => unknown = true,
                    }
                }
                // An Instance outside the set: not someone's Input here.
                None => unknown = true,
            }
        } else {
            unknown = true;
        }
    }
    visiting.remove(&index);
    let result = (!unknown).then_some(owners);
    known.insert(index, result.clone());
    result
}

/// The person `entry` is stamped for, if any.
pub fn of(entry: &Entry) -> Option<CreatorRecord> {
    entry
        .properties
        .iter()
        .find(|property| property["type"] == REQUESTED_BY)
        .and_then(|property| serde_json::from_value(property["value"].clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, needed_by: &[&str]) -> Entry {
        Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: format!("{package}.v1"),
            package_name: package.into(),
            version: "1.0.0".into(),
            image: String::new(),
            catalog: "c".into(),
            channel: None,
            properties: vec![
                json!({ "type": crate::set::resolved_set::NEEDED_BY, "value": needed_by }),
            ],
        }
    }

    fn person(name: &str) -> Option<CreatorRecord> {
        Some(CreatorRecord::new(name, None, vec!["team".into()]))
    }

    #[test]
    fn a_dependency_is_stamped_for_the_one_author_of_the_inputs_that_need_it() {
        let mut entries = vec![
            entry("cluster-op", &["Instance set-topology"]),
            entry("topology", &["Input topology"]),
        ];
        let authors = Authors::from([("topology".to_owned(), person("alice"))]);
        stamp(&mut entries, "set", &authors);
        for entry in &entries {
            let who = of(entry).expect("stamped");
            assert_eq!(who.username, "alice");
            assert_eq!(who.groups, ["team"]);
            assert!(who.seal.is_none(), "the set holds identities, not seals");
        }
    }

    #[test]
    fn two_authors_or_an_unverified_input_leave_an_entry_unstamped() {
        let mut entries = vec![
            entry("shared", &["Input a", "Input b"]),
            entry("mine", &["Input a"]),
            entry("unknown", &["Input c"]),
            entry("outside", &["Instance someone-elses"]),
        ];
        let authors = Authors::from([
            ("a".to_owned(), person("alice")),
            ("b".to_owned(), person("bob")),
            ("c".to_owned(), None),
        ]);
        stamp(&mut entries, "set", &authors);
        let stamped: Vec<Option<String>> = entries
            .iter()
            .map(|entry| of(entry).map(|who| who.username))
            .collect();
        assert_eq!(stamped, [None, Some("alice".into()), None, None]);
        // Stamping again replaces, never adds.
        stamp(&mut entries, "set", &Authors::new());
        assert!(entries.iter().all(|entry| of(entry).is_none()));
    }
}
