//! The resourceVersions the runtime's own writes returned, which tell its
//! own writes from someone else's made under its field manager's name.
//!
//! Anyone who may write an object can write it as `pakket.dev/runtime`
//! (`kubectl --field-manager`), and the managedFields then name the runtime
//! as the last writer. Such an event is the runtime's own only if its
//! resourceVersion is one a write of the runtime returned (or older); one
//! newer than every version the runtime's writes of the object returned is
//! someone else's write ([`Echo::Foreign`]): drift.
//!
//! The watch event of a write may arrive before the write's answer: while a
//! write of an Instance's objects is under way (a [`Versions::begin`] not
//! yet [`Versions::end`]ed), such events of its objects are held
//! ([`Echo::Held`]) and judged when it ends. That is sound: each answer is
//! recorded as it comes, so once the write ends every version it made is
//! known; the versions of one object only grow, so an event of the
//! runtime's own write is never newer than the last version its writes
//! returned, and one that is newer was written after the runtime's last
//! write of it, by someone else. A version lost with an answer that never
//! came (a timeout) makes its event look foreign: one re-apply too many,
//! never an edit missed.
//!
//! What cannot be judged counts as the runtime's own, as the field manager
//! alone said before: an object no write of this process has answered for
//! (after a restart, until the Instance's first write, which every
//! Instance gets then), and a resourceVersion that is not a number (every
//! etcd-backed apiserver's is: its revision).

use std::collections::HashMap;

use pakket_api::ObjectRef;

/// Whose an event is whose last writers are all the runtime's field manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Echo {
    /// The runtime's own write (or one that cannot be judged).
    Own,
    /// A write of the Instance is under way: judged when it ends.
    Held,
    /// Newer than every version the runtime's writes returned: someone
    /// else wrote under the runtime's name.
    Foreign,
}

/// The versions the runtime's writes returned, per object, and the writes
/// under way, per Instance.
#[derive(Default)]
pub struct Versions {
    /// The newest version a write of the runtime returned, per object.
    returned: HashMap<ObjectRef, u64>,
    /// The writes under way, per Instance.
    writing: HashMap<String, Window>,
}

/// The writes of one Instance under way, and the events held meanwhile.
#[derive(Default)]
struct Window {
    /// How many (one, but a nested write must not end the window early).
    open: usize,
    /// The newest version held per object.
    held: HashMap<ObjectRef, u64>,
}

impl Versions {
    /// A write of `instance`'s objects begins.
    pub fn begin(&mut self, instance: &str) {
        self.writing.entry(instance.to_owned()).or_default().open += 1;
    }

    /// A write of the runtime returned `version` for `reference`.
    pub fn returned(&mut self, reference: &ObjectRef, version: Option<&str>) {
        let Some(version) = number(version) else {
            return;
        };
        let newest = self.returned.entry(reference.clone()).or_default();
        *newest = (*newest).max(version);
    }

    /// Whose the event `version` of `reference`, labelled with `instance`,
    /// is, when the runtime's field manager wrote it last.
    pub fn seen(&mut self, instance: &str, reference: &ObjectRef, version: Option<&str>) -> Echo {
        if let Some(window) = self.writing.get_mut(instance) {
            if let Some(version) = number(version) {
                let held = window.held.entry(reference.clone()).or_default();
                *held = (*held).max(version);
            }
            return Echo::Held;
        }
        judge(self.returned.get(reference).copied(), number(version))
    }

    /// A write of `instance`'s objects ended (whole, failed or dropped):
    /// once none is under way, the objects whose held events are someone
    /// else's, sorted.
    pub fn end(&mut self, instance: &str) -> Vec<ObjectRef> {
        let Some(window) = self.writing.get_mut(instance) else {
            return Vec::new();
        };
        window.open = window.open.saturating_sub(1);
        if window.open > 0 {
            return Vec::new();
        }
        let held = self.writing.remove(instance).unwrap_or_default().held;
        let mut foreign: Vec<ObjectRef> = held
            .into_iter()
            .filter(|(reference, version)| {
                judge(self.returned.get(reference).copied(), Some(*version)) == Echo::Foreign
            })
            .map(|(reference, _)| reference)
            .collect();
        foreign.sort();
        foreign
    }

    /// `reference` is gone at `version` (deleted, or its label removed):
    /// what its writes returned is forgotten, unless a later write (which
    /// made it again) returned a newer version.
    pub fn gone(&mut self, reference: &ObjectRef, version: Option<&str>) {
        let gone_at = number(version).unwrap_or(u64::MAX);
        if self
            .returned
            .get(reference)
            .is_some_and(|returned| *returned <= gone_at)
        {
            self.returned.remove(reference);
        }
    }
}

/// Whose a write by the runtime's field manager at version `seen` is,
/// given the newest version the runtime's writes of the object `returned`:
/// someone else's only when both are known and it is newer.
fn judge(returned: Option<u64>, seen: Option<u64>) -> Echo {
    match (returned, seen) {
        (Some(returned), Some(seen)) if seen > returned => Echo::Foreign,
        _ => Echo::Own,
    }
}

/// A resourceVersion as the number it is on etcd; `None` if it is not one.
fn number(version: Option<&str>) -> Option<u64> {
    version?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            namespace: Some("n".into()),
        }
    }

    #[test]
    fn a_write_under_the_runtimes_name_is_foreign_only_when_newer_than_what_it_returned() {
        let rows = [
            (
                "the version the write returned",
                Some(100),
                Some(100),
                Echo::Own,
            ),
            ("an older event, seen late", Some(100), Some(90), Echo::Own),
            ("newer: someone else's", Some(100), Some(101), Echo::Foreign),
            ("nothing returned here yet", None, Some(101), Echo::Own),
            ("a version that is not a number", Some(100), None, Echo::Own),
        ];
        for (row, returned, seen, expected) in rows {
            assert_eq!(judge(returned, seen), expected, "{row}");
        }
        assert_eq!(number(Some("123")), Some(123));
        assert_eq!(number(Some("abc")), None);
        assert_eq!(number(None), None);
    }

    /// One step of a sequence: a write begins or ends, a write answers, a
    /// watch event comes (and is judged as `expected`), or the object goes.
    enum Step {
        Begin,
        Returned(&'static str, &'static str),
        Seen(&'static str, &'static str, Echo),
        End(&'static [&'static str]),
        Gone(&'static str, &'static str),
    }

    /// The sequences of [`events_during_a_write_wait_for_its_answers`].
    fn sequences() -> Vec<(&'static str, Vec<Step>)> {
        use Step::*;
        vec![
            (
                "the event of the runtime's apply before its answer",
                vec![
                    Begin,
                    Seen("a", "100", Echo::Held),
                    Returned("a", "100"),
                    End(&[]),
                ],
            ),
            (
                "the event after the answer and the end",
                vec![
                    Begin,
                    Returned("a", "100"),
                    End(&[]),
                    Seen("a", "100", Echo::Own),
                ],
            ),
            (
                "an edit under the runtime's name after its write of the object, during the write",
                vec![
                    Begin,
                    Returned("a", "100"),
                    Seen("a", "100", Echo::Held),
                    Seen("a", "104", Echo::Held),
                    Returned("b", "102"),
                    End(&["a"]),
                ],
            ),
            (
                "an edit before the runtime's write of the object: written over",
                vec![
                    Begin,
                    Seen("a", "98", Echo::Held),
                    Returned("a", "100"),
                    End(&[]),
                ],
            ),
            (
                "an edit of an object the write left as it was",
                vec![
                    Returned("a", "90"),
                    Begin,
                    Seen("a", "95", Echo::Held),
                    Returned("b", "100"),
                    End(&["a"]),
                ],
            ),
            (
                "an edit long after the write",
                vec![
                    Begin,
                    Returned("a", "100"),
                    End(&[]),
                    Seen("a", "100", Echo::Own),
                    Seen("a", "250", Echo::Foreign),
                ],
            ),
        ]
    }

    /// More of them: lost answers, nested writes, objects gone.
    fn more_sequences() -> Vec<(&'static str, Vec<Step>)> {
        use Step::*;
        vec![
            (
                "an answer lost (a timeout): its event looks foreign, one re-apply",
                vec![
                    Begin,
                    Returned("a", "100"),
                    Seen("a", "105", Echo::Held),
                    End(&["a"]),
                ],
            ),
            (
                "nested writes: judged when the last ends",
                vec![
                    Begin,
                    Begin,
                    Seen("a", "105", Echo::Held),
                    End(&[]),
                    Seen("a", "106", Echo::Held),
                    Returned("a", "100"),
                    End(&["a"]),
                ],
            ),
            (
                "gone and made again by the runtime, its deletion seen late",
                vec![
                    Returned("a", "100"),
                    Returned("a", "120"),
                    Gone("a", "110"),
                    Seen("a", "130", Echo::Foreign),
                ],
            ),
            (
                "gone: what was returned is forgotten",
                vec![
                    Returned("a", "100"),
                    Gone("a", "110"),
                    Seen("a", "130", Echo::Own),
                ],
            ),
        ]
    }

    #[test]
    fn events_during_a_write_wait_for_its_answers() {
        use Step::*;
        for (row, steps) in sequences().into_iter().chain(more_sequences()) {
            let mut versions = Versions::default();
            for (at, step) in steps.into_iter().enumerate() {
                match step {
                    Begin => versions.begin("i"),
                    Returned(name, version) => versions.returned(&config_map(name), Some(version)),
                    Seen(name, version, expected) => assert_eq!(
                        versions.seen("i", &config_map(name), Some(version)),
                        expected,
                        "{row}, step {at}"
                    ),
                    End(foreign) => {
                        let expected: Vec<ObjectRef> =
                            foreign.iter().map(|name| config_map(name)).collect();
                        assert_eq!(versions.end("i"), expected, "{row}, step {at}");
                    }
                    Gone(name, version) => versions.gone(&config_map(name), Some(version)),
                }
            }
            assert!(versions.writing.is_empty(), "{row}: no window left open");
        }
    }

    #[test]
    fn a_write_of_another_instance_holds_nothing_of_this_one() {
        let mut versions = Versions::default();
        versions.returned(&config_map("a"), Some("100"));
        versions.begin("other");
        assert_eq!(
            versions.seen("i", &config_map("a"), Some("101")),
            Echo::Foreign
        );
        assert_eq!(versions.end("other"), Vec::<ObjectRef>::new());
        assert_eq!(versions.end("never-began"), Vec::<ObjectRef>::new());
    }
}
