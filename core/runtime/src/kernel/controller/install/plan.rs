//! The one decision of an Instance reconcile, once everything it needs is
//! read: what to do next. Pure (no kube, no async), so every arm is a row
//! of the table test below, checked without a cluster.
//!
//! What the plan does not decide is read between the writes of an apply:
//! whether a phase's probes hold the phases after it (the apply then stops
//! at that phase and says so, see `act::apply`), and whether the revision
//! written rolls out (`revision::decide_rollback`, after health). An
//! Instance held at a phase is planned again as the install it is: the
//! next reconcile writes again through the gates.

use std::time::Duration;

use crate::drift::Staleness;
use crate::drift_mode::DriftMode;

/// What one reconcile found, as far as the plan needs it.
#[derive(Clone, Debug)]
pub(super) struct Observed {
    /// The Bundle whose content is to run: the spec's, or under an
    /// automatic rollback the earlier revision's.
    pub bundle: String,
    /// The Bundle the status says runs (`status.activeBundle`).
    pub active_bundle: Option<String>,
    /// Whether `bundle` is installed, as the status read for the
    /// Instance's current generation says (succeeded, or rolled back).
    pub installed_here: bool,
    /// The class's drift mode.
    pub drift: DriftMode,
    /// Why what this process last wrote is to be written again, if it is.
    pub staleness: Staleness,
    /// Whether an earlier apply failed (as the status read says, or as
    /// this process saw).
    pub failed_before: bool,
    /// The approval of the content to run.
    pub approval: Approval,
}

/// Whether the content to run may be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Approval {
    /// The class's policy or a person approved it.
    Approved,
    /// It waits: why, and when to ask again (`None`: on a change).
    Waiting {
        message: String,
        retry: Option<Duration>,
    },
    /// An automatic rollback is in force: the earlier revision's approval
    /// covers its content while it renders to the objects it recorded
    /// (`Err` says how it does not).
    Rollback {
        to: i64,
        render_unchanged: Result<(), String>,
    },
}

/// The one next action of a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// The automatic rollback's content renders otherwise today: the
    /// rollback is recorded as not possible and looked at again soon.
    RollbackNotPossible { why: String },
    /// Nothing is written before approval: wait (and ask again after
    /// `retry`, or on a change).
    AwaitApproval {
        message: String,
        retry: Option<Duration>,
    },
    /// The content is installed and the class's drift mode is Warn:
    /// nothing is written again; `Drifted` names what others changed.
    WarnOnly,
    /// The content is installed and nothing asks to write it again.
    InSync,
    /// Write the set (dry run, then the phases with their probes), then
    /// prune what only the earlier revision had.
    Write(Write),
}

/// Why and how the set is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Write {
    /// Why it is written.
    pub why: Why,
    /// The Bundle that ran before, when it is another one: the CRDs the
    /// new content drops must not be in use (the pivot guard).
    pub pivot_from: Option<String>,
    /// An earlier apply failed: objects are read before they are created,
    /// so a retry does not create and remove them again.
    pub read_first: bool,
}

/// Why a set is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Why {
    /// New content, a new generation, or an install not finished (failed,
    /// or held at a phase).
    Install,
    /// Another Bundle's content replaces the one that ran.
    Pivot,
    /// The automatic rollback installs revision `to`'s content.
    RollBack { to: i64 },
    /// Installed, and someone else changed its objects since: put back.
    Repair,
    /// Installed, and its content renders to other objects now (or the
    /// generation moved): written as rendered.
    Rerender,
    /// Installed, written again as a matter of course (this process has
    /// not written it yet, or the last write is old).
    Resync,
}

impl Write {
    /// Whether the content written differs from what is installed (not
    /// a write of installed content again).
    pub fn content_changed(&self) -> bool {
        matches!(self.why, Why::Install | Why::Pivot | Why::RollBack { .. })
    }
}

/// The next action, decided in this order:
///
/// 1. An automatic rollback whose content renders otherwise than its
///    revision recorded is not possible ([`Plan::RollbackNotPossible`]).
/// 2. Content not approved waits ([`Plan::AwaitApproval`]); a rollback's
///    content is covered by its revision's approval.
/// 3. Installed content under drift Warn is left as it is
///    ([`Plan::WarnOnly`]).
/// 4. Installed content nothing asks to write again is in sync
///    ([`Plan::InSync`]).
/// 5. Installed content is written again: drifted objects are repaired
///    ([`Why::Repair`]) unless the content, render or generation changed
///    ([`Why::Rerender`]); else it is a resync ([`Why::Resync`]).
/// 6. Content not installed is written: the rollback's ([`Why::RollBack`]),
///    another Bundle's ([`Why::Pivot`]), or this Bundle's ([`Why::Install`]).
///    Whenever the Bundle that ran is another one, the write is guarded
///    (`pivot_from`); after a failed apply, objects are read before they are
///    created (`read_first`).
pub(super) fn plan(observed: &Observed) -> Plan {
    let rollback_to = match &observed.approval {
        Approval::Rollback {
            render_unchanged: Err(why),
            ..
        } => return Plan::RollbackNotPossible { why: why.clone() },
        Approval::Waiting { message, retry } => {
            return Plan::AwaitApproval {
                message: message.clone(),
                retry: *retry,
            };
        }
        Approval::Rollback { to, .. } => Some(*to),
        Approval::Approved => None,
    };
    if observed.installed_here {
        if observed.drift == DriftMode::Warn {
            return Plan::WarnOnly;
        }
        let why = match observed.staleness {
            Staleness::Fresh => return Plan::InSync,
            Staleness::Changed => Why::Rerender,
            Staleness::Drifted => Why::Repair,
            Staleness::NotWrittenHere | Staleness::Due => Why::Resync,
        };
        return write(observed, why);
    }
    let why = match (rollback_to, pivot_from(observed)) {
        (Some(to), _) => Why::RollBack { to },
        (None, Some(_)) => Why::Pivot,
        (None, None) => Why::Install,
    };
    write(observed, why)
}

fn write(observed: &Observed, why: Why) -> Plan {
    Plan::Write(Write {
        why,
        pivot_from: pivot_from(observed),
        read_first: observed.failed_before,
    })
}

/// The Bundle that ran before, when it is not the one to run.
fn pivot_from(observed: &Observed) -> Option<String> {
    observed
        .active_bundle
        .as_ref()
        .filter(|active| **active != observed.bundle)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Instance asking for Bundle `v2`, approved, never installed.
    fn observed() -> Observed {
        Observed {
            bundle: "v2".into(),
            active_bundle: None,
            installed_here: false,
            drift: DriftMode::Repair,
            staleness: Staleness::NotWrittenHere,
            failed_before: false,
            approval: Approval::Approved,
        }
    }

    fn installed() -> Observed {
        Observed {
            active_bundle: Some("v2".into()),
            installed_here: true,
            staleness: Staleness::Fresh,
            ..observed()
        }
    }

    fn write(why: Why, pivot_from: Option<&str>, read_first: bool) -> Plan {
        Plan::Write(Write {
            why,
            pivot_from: pivot_from.map(str::to_owned),
            read_first,
        })
    }

    fn rollback(to: i64, render_unchanged: Result<(), String>) -> Approval {
        Approval::Rollback {
            to,
            render_unchanged,
        }
    }

    /// Nothing is written before approval, installed or not.
    #[test]
    fn approval_rows() {
        let waiting = Approval::Waiting {
            message: "nothing is applied before approval".into(),
            retry: None,
        };
        check(vec![
            (
                "waiting for approval",
                Observed {
                    approval: waiting.clone(),
                    ..observed()
                },
                Plan::AwaitApproval {
                    message: "nothing is applied before approval".into(),
                    retry: None,
                },
            ),
            (
                "approval waits even for installed content",
                Observed {
                    approval: Approval::Waiting {
                        message: "asked".into(),
                        retry: Some(Duration::from_secs(60)),
                    },
                    ..installed()
                },
                Plan::AwaitApproval {
                    message: "asked".into(),
                    retry: Some(Duration::from_secs(60)),
                },
            ),
        ]);
    }

    /// Content not installed is written: an install, a retry, a held install, a pivot.
    #[test]
    fn written_rows() {
        check(vec![
            (
                "first install",
                observed(),
                write(Why::Install, None, false),
            ),
            (
                "failed before: retried, reading before creating",
                Observed {
                    failed_before: true,
                    ..observed()
                },
                write(Why::Install, None, true),
            ),
            (
                "held at a phase (Installed says Installing): written again through the gates",
                Observed {
                    active_bundle: Some("v2".into()),
                    ..observed()
                },
                write(Why::Install, None, false),
            ),
            (
                "pivot from another Bundle, guarded",
                Observed {
                    active_bundle: Some("v1".into()),
                    ..observed()
                },
                write(Why::Pivot, Some("v1"), false),
            ),
            (
                "pivot after a failed try",
                Observed {
                    active_bundle: Some("v1".into()),
                    failed_before: true,
                    ..observed()
                },
                write(Why::Pivot, Some("v1"), true),
            ),
            (
                "drift Warn does not hold back new content",
                Observed {
                    drift: DriftMode::Warn,
                    active_bundle: Some("v1".into()),
                    ..observed()
                },
                write(Why::Pivot, Some("v1"), false),
            ),
        ]);
    }

    /// Installed content: in sync, left alone under Warn, or written again (repair, re-render, resync).
    #[test]
    fn installed_rows() {
        check(vec![
            ("in sync", installed(), Plan::InSync),
            (
                "drift Warn on installed content: nothing written",
                Observed {
                    drift: DriftMode::Warn,
                    staleness: Staleness::Drifted,
                    ..installed()
                },
                Plan::WarnOnly,
            ),
            (
                "drift Repair puts back what others changed",
                Observed {
                    staleness: Staleness::Drifted,
                    ..installed()
                },
                write(Why::Repair, None, false),
            ),
            (
                "re-render: installed content renders otherwise now",
                Observed {
                    staleness: Staleness::Changed,
                    ..installed()
                },
                write(Why::Rerender, None, false),
            ),
            (
                "resync after a restart",
                Observed {
                    staleness: Staleness::NotWrittenHere,
                    ..installed()
                },
                write(Why::Resync, None, false),
            ),
            (
                "resync when the last write is old",
                Observed {
                    staleness: Staleness::Due,
                    ..installed()
                },
                write(Why::Resync, None, false),
            ),
        ]);
    }

    /// An automatic rollback: written under its revision's approval, in sync once done, or not possible.
    #[test]
    fn rollback_rows() {
        check(vec![
            (
                "roll back to revision 1 (same Bundle)",
                Observed {
                    active_bundle: Some("v2".into()),
                    approval: rollback(1, Ok(())),
                    ..observed()
                },
                write(Why::RollBack { to: 1 }, None, false),
            ),
            (
                "roll back to another Bundle: guarded as a pivot",
                Observed {
                    bundle: "v1".into(),
                    active_bundle: Some("v2".into()),
                    approval: rollback(1, Ok(())),
                    ..observed()
                },
                write(Why::RollBack { to: 1 }, Some("v2"), false),
            ),
            (
                "rolled back already: in sync",
                Observed {
                    approval: rollback(1, Ok(())),
                    ..installed()
                },
                Plan::InSync,
            ),
            (
                "rollback whose render changed is not possible",
                Observed {
                    approval: rollback(1, Err("renders otherwise".into())),
                    ..observed()
                },
                Plan::RollbackNotPossible {
                    why: "renders otherwise".into(),
                },
            ),
        ]);
    }

    fn check(rows: Vec<(&str, Observed, Plan)>) {
        for (row, observed, expected) in rows {
            assert_eq!(plan(&observed), expected, "{row}");
        }
    }

    #[test]
    fn only_installed_content_written_again_is_unchanged() {
        let changed = |why| Write {
            why,
            pivot_from: None,
            read_first: false,
        };
        assert!(changed(Why::Install).content_changed());
        assert!(changed(Why::Pivot).content_changed());
        assert!(changed(Why::RollBack { to: 1 }).content_changed());
        assert!(!changed(Why::Repair).content_changed());
        assert!(!changed(Why::Rerender).content_changed());
        assert!(!changed(Why::Resync).content_changed());
    }
}
