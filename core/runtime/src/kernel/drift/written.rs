//! What the runtime last wrote of each Instance's objects, and the pure
//! decisions about it: whether it is to be written again ([`Staleness`]),
//! whether the drift watches vouch for it as it was written (so a resync
//! need not write it: [`vouched`]), what a repair may leave as it is
//! ([`untouched`]), and whether the watches have seen all of a recent
//! write ([`caught_up`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use pakket_api::ObjectRef;

use super::{Changes, Fingerprint};

/// What the runtime last wrote of one Instance's objects.
#[derive(Clone, Debug)]
pub(super) struct Written {
    /// What it was written from.
    pub fingerprint: Fingerprint,
    /// When that write began: a change by someone else since is drift.
    pub began: Instant,
    /// Since when the objects are known to be as written: the write's
    /// start, or the last time the watches vouched for them. The resync
    /// age counts from here.
    pub since: Instant,
    /// The objects it wrote, sorted.
    pub objects: Vec<ObjectRef>,
}

/// Why an Instance's objects are to be written again, or that they are not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staleness {
    /// Written by this process from the same content, render and
    /// generation, unchanged by anyone since, not long ago.
    Fresh,
    /// This process has not written them yet (it started since).
    NotWrittenHere,
    /// The content, its render or the Instance's generation differs from
    /// what was written last.
    Changed,
    /// Someone else changed or deleted one of them since the last write
    /// began.
    Drifted,
    /// The last write is older than the resync age (and the watches do
    /// not vouch for its objects, see `vouched`).
    Due,
}

/// Whether the write `last` no longer holds: see
/// [`super::Drift::needs_apply`].
/// Its age counts from when its objects were last known as written.
pub(super) fn staleness(
    last: Option<&Written>,
    fingerprint: &Fingerprint,
    changed_at: Option<Instant>,
    max_age: Duration,
) -> Staleness {
    let Some(written) = last else {
        return Staleness::NotWrittenHere;
    };
    if written.fingerprint != *fingerprint {
        Staleness::Changed
    } else if changed_at.is_some_and(|changed| changed >= written.began) {
        Staleness::Drifted
    } else if written.since.elapsed() >= max_age {
        Staleness::Due
    } else {
        Staleness::Fresh
    }
}

/// Whether the watches have caught up with an Instance's writes, so the
/// objects they saw labelled with it are all it has: no write of it began
/// in the last [`super::WATCH_CATCH_UP`] (`recent` is when one did), or the one
/// that did is the write `last` records, ended whole, and every object it
/// wrote is `seen` with the Instance already. A recent write not recorded
/// (still running, failed part-way, or holding CRDs back) may have made
/// objects the watches have not seen yet: its kinds are listed instead.
pub(super) fn caught_up(
    recent: Option<Instant>,
    last: Option<&Written>,
    seen: impl Fn(&ObjectRef) -> bool,
) -> bool {
    let Some(began) = recent else {
        return true;
    };
    last.is_some_and(|written| written.began >= began && written.objects.iter().all(seen))
}

/// What the drift watches know now, as far as [`vouched`] asks.
pub(super) struct Watched<'a> {
    /// The kinds (apiVersion, kind) whose watch has listed every labelled
    /// object and runs.
    pub synced: &'a HashSet<(String, String)>,
    /// The Instance each object was last seen labelled with.
    pub seen_with: &'a HashMap<ObjectRef, String>,
}

/// Whether the watches account for every object of `written` (what an
/// apply of `instance` wrote), so that writing them again would change
/// nothing: each one's kind is watched and synced, each is seen labelled
/// with `instance` now, and nothing of the Instance `drifted` since the
/// write began. Anything else is not vouched for, and the resync writes
/// the objects again as ever.
pub(super) fn vouched(
    written: &[ObjectRef],
    instance: &str,
    watched: &Watched<'_>,
    drifted: bool,
) -> bool {
    !drifted
        && written
            .iter()
            .all(|object| watched.accounts_for(object, instance))
}

impl Watched<'_> {
    /// Whether `object`'s kind is watched and synced, and the object seen
    /// labelled with `instance` now.
    pub(super) fn accounts_for(&self, object: &ObjectRef, instance: &str) -> bool {
        let kind = (object.api_version.clone(), object.kind.clone());
        self.synced.contains(&kind)
            && self.seen_with.get(object).map(String::as_str) == Some(instance)
    }
}

/// The objects of `candidates` a repair may leave as they are: ones the
/// last whole write (`written`) wrote, that the watches account for, and
/// that nobody changed since (`changed`). Every other one is written.
pub(super) fn untouched(
    candidates: &[ObjectRef],
    instance: &str,
    written: Option<&Written>,
    watched: &Watched<'_>,
    changed: Option<&Changes>,
) -> BTreeSet<ObjectRef> {
    let Some(written) = written else {
        return BTreeSet::new();
    };
    candidates
        .iter()
        .filter(|object| {
            written.objects.binary_search(object).is_ok()
                && watched.accounts_for(object, instance)
                && !changed.is_some_and(|changed| changed.contains_key(*object))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube::Client;

    use super::super::Drift;
    use super::*;

    #[test]
    fn a_change_during_an_apply_is_not_forgotten_when_the_apply_ends() {
        let fingerprint = Fingerprint {
            generation: Some(1),
            bundle: "b".into(),
            digest: "sha256:0".into(),
            rendered: None,
        };
        let hour = Duration::from_secs(3600);
        let began = Instant::now();
        let changed_during = began + Duration::from_millis(5);
        let written = |fingerprint: &Fingerprint, began: Instant| Written {
            fingerprint: fingerprint.clone(),
            began,
            since: began,
            objects: Vec::new(),
        };
        let last = written(&fingerprint, began);
        let fresh = Staleness::Fresh;
        assert_eq!(staleness(Some(&last), &fingerprint, None, hour), fresh);
        assert_eq!(
            staleness(Some(&last), &fingerprint, Some(changed_during), hour),
            Staleness::Drifted
        );
        let changed_before = began;
        let next = written(&fingerprint, began + Duration::from_millis(10));
        assert_eq!(
            staleness(Some(&next), &fingerprint, Some(changed_before), hour),
            fresh
        );
        assert_eq!(
            staleness(None, &fingerprint, None, hour),
            Staleness::NotWrittenHere
        );
        let rendered = Fingerprint {
            rendered: Some("sha256:1".into()),
            ..fingerprint.clone()
        };
        assert_eq!(
            staleness(Some(&last), &rendered, None, hour),
            Staleness::Changed
        );
        assert_eq!(
            staleness(Some(&last), &fingerprint, None, Duration::ZERO),
            Staleness::Due
        );
    }

    fn object(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            namespace: Some("n".into()),
        }
    }

    /// Watches that synced ConfigMaps and Secrets, and saw `a`, `b` and
    /// the Secret `s` with Instance `i` and `theirs` with Instance `j`.
    fn watches() -> (HashSet<(String, String)>, HashMap<ObjectRef, String>) {
        let synced = [("v1", "ConfigMap"), ("v1", "Secret")]
            .into_iter()
            .map(|(version, kind)| (version.to_owned(), kind.to_owned()))
            .collect();
        let seen_with = [
            (object("ConfigMap", "a"), "i"),
            (object("ConfigMap", "b"), "i"),
            (object("Secret", "s"), "i"),
            (object("ConfigMap", "theirs"), "j"),
        ]
        .into_iter()
        .map(|(object, instance)| (object, instance.to_owned()))
        .collect();
        (synced, seen_with)
    }

    #[test]
    fn the_watches_vouch_only_for_objects_they_all_account_for() {
        let (synced, seen_with) = watches();
        let watched = Watched {
            synced: &synced,
            seen_with: &seen_with,
        };
        let config_maps = [object("ConfigMap", "a"), object("ConfigMap", "b")];
        let rows: Vec<(&str, Vec<ObjectRef>, bool, bool)> = vec![
            (
                "every object seen, kinds synced, nothing drifted",
                config_maps.to_vec(),
                false,
                true,
            ),
            (
                "two kinds, both synced",
                vec![object("ConfigMap", "a"), object("Secret", "s")],
                false,
                true,
            ),
            (
                "nothing written: nothing to write again",
                vec![],
                false,
                true,
            ),
            (
                "something drifted since the write began",
                config_maps.to_vec(),
                true,
                false,
            ),
            (
                "a kind whose watch has not synced (or may not run)",
                vec![object("ConfigMap", "a"), object("Service", "a")],
                false,
                false,
            ),
            (
                "an object the watch has not seen (deleted, or not yet)",
                vec![object("ConfigMap", "a"), object("ConfigMap", "c")],
                false,
                false,
            ),
            (
                "an object seen with another Instance (relabelled)",
                vec![object("ConfigMap", "theirs")],
                false,
                false,
            ),
        ];
        for (row, written, drifted, expected) in rows {
            assert_eq!(vouched(&written, "i", &watched, drifted), expected, "{row}");
        }
    }

    #[test]
    fn a_repair_leaves_only_what_the_last_write_wrote_the_watches_vouch_for_and_nobody_changed() {
        let (synced, seen_with) = watches();
        let watched = Watched {
            synced: &synced,
            seen_with: &seen_with,
        };
        let written = Written {
            fingerprint: Fingerprint {
                generation: Some(1),
                bundle: "b".into(),
                digest: "sha256:0".into(),
                rendered: None,
            },
            began: Instant::now(),
            since: Instant::now(),
            objects: vec![
                object("ConfigMap", "a"),
                object("ConfigMap", "b"),
                object("Secret", "s"),
                object("Service", "web"),
            ],
        };
        let candidates = [
            object("ConfigMap", "a"),
            object("ConfigMap", "b"),
            object("Secret", "s"),
            object("Service", "web"),
            object("ConfigMap", "new"),
        ];
        let changed: Changes = [(object("ConfigMap", "b"), (Instant::now(), false))].into();
        let left = untouched(&candidates, "i", Some(&written), &watched, Some(&changed));
        assert_eq!(
            left.into_iter().collect::<Vec<_>>(),
            [object("ConfigMap", "a"), object("Secret", "s")],
            "b was changed, Services are not watched, `new` was never written"
        );
        assert!(
            untouched(&candidates, "j", Some(&written), &watched, None).is_empty(),
            "seen with another Instance"
        );
        assert!(
            untouched(&candidates, "i", None, &watched, None).is_empty(),
            "no whole write recorded: everything is written"
        );
    }

    /// A Drift whose watches are as [`watches`] says, with Instance `i`
    /// written from `fingerprint` at `began`: ConfigMaps `a` and `b`.
    fn drift_with(fingerprint: &Fingerprint, began: Instant) -> Arc<Drift> {
        // A client to nowhere: nothing here talks to an apiserver.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let (drift, _triggers) = Drift::new(Client::try_from(config).unwrap());
        let (synced, seen_with) = watches();
        *drift.synced.lock().unwrap() = synced;
        *drift.seen_with.lock().unwrap() = seen_with;
        let objects = [object("ConfigMap", "b"), object("ConfigMap", "a")];
        drift.applied("i", fingerprint.clone(), began, &objects);
        drift
    }

    #[tokio::test]
    async fn an_old_write_the_watches_vouch_for_is_fresh_and_its_age_starts_again() {
        let fingerprint = Fingerprint {
            generation: Some(1),
            bundle: "b".into(),
            digest: "sha256:0".into(),
            rendered: None,
        };
        let began = Instant::now() - Duration::from_secs(120);
        let drift = drift_with(&fingerprint, began);
        let minute = Duration::from_secs(60);
        assert_eq!(drift.staleness("i", &fingerprint, minute), Staleness::Fresh);
        let since = drift.applied.lock().unwrap()["i"].since;
        assert!(since > began + minute, "the age starts again when vouched");
        assert_eq!(
            drift.staleness("i", &fingerprint, minute),
            Staleness::Fresh,
            "and stays fresh for a resync age"
        );

        // A change someone made after the write, though before the
        // vouching, is still drift: drift counts from the write itself.
        drift.drifted.lock().unwrap().insert(
            "i".into(),
            [(
                object("ConfigMap", "a"),
                (began + Duration::from_secs(1), false),
            )]
            .into(),
        );
        assert_eq!(
            drift.staleness("i", &fingerprint, minute),
            Staleness::Drifted
        );

        // A watch that lists again cannot vouch: written again, as ever.
        let drift = drift_with(&fingerprint, began);
        drift.synced.lock().unwrap().clear();
        assert_eq!(drift.staleness("i", &fingerprint, minute), Staleness::Due);
    }

    #[tokio::test]
    async fn the_watches_tell_an_object_present_only_where_they_account_for_it() {
        let fingerprint = Fingerprint {
            generation: Some(1),
            bundle: "b".into(),
            digest: "sha256:0".into(),
            rendered: None,
        };
        let drift = drift_with(&fingerprint, Instant::now());
        let records = kube::api::ObjectMeta {
            resource_version: Some("7".into()),
            ..kube::api::ObjectMeta::default()
        };
        for object in [object("ConfigMap", "a"), object("ConfigMap", "theirs")] {
            drift.records.lock().unwrap().saw(&object, &records);
        }
        let rows = [
            (
                "seen with the Instance, kind synced",
                "i",
                object("ConfigMap", "a"),
                true,
            ),
            (
                "seen with another Instance",
                "i",
                object("ConfigMap", "theirs"),
                false,
            ),
            (
                "asked for by the other Instance",
                "j",
                object("ConfigMap", "theirs"),
                true,
            ),
            ("not seen", "i", object("ConfigMap", "c"), false),
        ];
        for (row, instance, object, present) in rows {
            assert_eq!(drift.present(instance, &object).is_some(), present, "{row}");
        }
        drift.synced.lock().unwrap().clear();
        assert!(
            drift.present("i", &object("ConfigMap", "a")).is_none(),
            "a watch that lists again cannot tell"
        );
    }

    #[test]
    fn an_uninstall_trusts_the_watches_once_they_saw_what_a_recent_write_wrote() {
        let fingerprint = Fingerprint {
            generation: Some(1),
            bundle: "b".into(),
            digest: "sha256:0".into(),
            rendered: None,
        };
        let began = Instant::now();
        let written = |began: Instant| Written {
            fingerprint: fingerprint.clone(),
            began,
            since: began,
            objects: vec![object("ConfigMap", "a"), object("ConfigMap", "b")],
        };
        let all = |_: &ObjectRef| true;
        let not_b = |object: &ObjectRef| object.name != "b";
        let earlier = began - Duration::from_secs(1);
        let rows: Vec<(&str, Option<Instant>, Option<Written>, bool)> = vec![
            ("no recent write", None, None, true),
            (
                "no recent write, an old one recorded",
                None,
                Some(written(earlier)),
                true,
            ),
            (
                "a recent write, recorded whole, all seen",
                Some(began),
                Some(written(began)),
                true,
            ),
            (
                "a recent write not recorded (running or failed)",
                Some(began),
                Some(written(earlier)),
                false,
            ),
            (
                "a recent write and nothing recorded",
                Some(began),
                None,
                false,
            ),
        ];
        for (row, recent, last, expected) in rows {
            assert_eq!(caught_up(recent, last.as_ref(), all), expected, "{row}");
        }
        assert!(
            !caught_up(Some(began), Some(&written(began)), not_b),
            "an object of the write not seen yet"
        );
    }
}
