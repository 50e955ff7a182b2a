//! What a reconcile leaves behind, written in one place: the revision
//! record (in the Instance reconcile, only this module writes
//! `status.revisions` and `status.automaticRollback`; a test below keeps
//! it so) and the one write of the report at the end of the reconcile,
//! the Bundle object's status (recorded by the unpack and render steps)
//! included.

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use pakket_api::{Bundle, Instance, Reason};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::report::{Report, StatusWrite};
use super::super::revision;
use super::AFTER_CONFLICT;

/// Writes the report and returns `action`, or an early retry if the write
/// lost a race with another change to the Instance.
pub(super) async fn finish<P>(
    mut report: Report,
    context: &Context<P>,
    action: Action,
) -> Result<Action, kube::Error> {
    // The Bundle's status first: the Instance's status names its pin.
    if let Some(pending) = report.bundle_status.take() {
        let bundles: Api<Bundle> = Api::all(context.client.clone());
        bundle_status::write_pending(&bundles, pending).await?;
    }
    let instances: Api<Instance> = Api::all(context.client.clone());
    let key = report.key();
    let (written, version) = report.write(&instances, &context.events).await?;
    match (written, version) {
        // Another writer came between: its change brings the next reconcile.
        (StatusWrite::Conflict, _) => context.wrote_status(key, None),
        (_, Some(version)) => context.wrote_status(key, Some(version)),
        // Nothing written: the last write stands.
        (_, None) => {}
    }
    Ok(match written {
        StatusWrite::Conflict => Action::requeue(AFTER_CONFLICT),
        StatusWrite::Stored | StatusWrite::Unchanged => action,
    })
}

/// Records that `content`'s objects are applied ([`revision::applied`]);
/// returns the revision's number.
pub(super) fn applied(
    report: &mut Report,
    content: revision::Content<'_>,
    settings: revision::Settings,
    now: Timestamp,
) -> i64 {
    revision::applied(&mut report.status, content, settings, now)
}

/// Records that applying `content` failed ([`revision::failed`]); returns
/// the revision's number.
pub(super) fn failed(
    report: &mut Report,
    content: revision::Content<'_>,
    settings: revision::Settings,
    message: &str,
    now: Timestamp,
) -> i64 {
    revision::failed(&mut report.status, content, settings, message, now)
}

/// Records how the newest revision's rollout stands ([`revision::rollout`]).
pub(super) fn rollout(
    report: &mut Report,
    health: &revision::Health,
    settings: revision::Settings,
    now: Timestamp,
) -> Option<revision::Progress> {
    revision::rollout(&mut report.status, health, settings, now)
}

/// Ends an automatic rollback decided for an earlier generation: the spec
/// changed since.
pub(super) fn rollback_ended(report: &mut Report, generation: i64) {
    if report
        .status
        .automatic_rollback
        .as_ref()
        .is_some_and(|rollback| rollback.generation != generation)
    {
        report.status.automatic_rollback = None;
    }
}

/// Records that the rollback is not possible, and says so in `Progressing`'s
/// words: the Instance stays as it is.
pub(super) fn rollback_not_possible(report: &mut Report, why: &str) {
    tracing::warn!(%why, "automatic rollback not possible");
    revision::rollback_not_possible(&mut report.status, why);
}

/// Once the newest revision does not roll out and the class asks for it,
/// decides the automatic rollback (the next reconcile applies it): the
/// revision's record and a Warning Event say why. Returns whether it did.
pub(super) fn roll_back_if_due(
    requester: &Instance,
    report: &mut Report,
    settings: revision::Settings,
) -> bool {
    let generation = requester.metadata.generation.unwrap_or_default();
    let Some(decided) = revision::decide_rollback(&report.status, settings, generation) else {
        return false;
    };
    tracing::warn!(instance = %requester.name_any(), why = %decided.message, "rolling back");
    if let Some(newest) = report.status.revisions.last_mut() {
        newest.message = decided.message.chars().take(1024).collect();
    }
    report.after_write.push(kube::runtime::events::Event {
        type_: kube::runtime::events::EventType::Warning,
        reason: Reason::RolledBack.as_str().into(),
        note: Some(decided.message.chars().take(1000).collect()),
        action: "Rollback".into(),
        secondary: None,
    });
    report.status.automatic_rollback = Some(decided);
    true
}

#[cfg(test)]
mod tests {
    /// What only this module may write in the Instance reconcile.
    const WRITES: [&str; 7] = [
        "revision::applied(",
        "revision::failed(",
        "revision::rollout(",
        "revision::rollback_not_possible(",
        "status.revisions.push",
        "status.revisions.last_mut",
        "status.automatic_rollback =",
    ];

    /// Every source file of the Instance reconcile, with its path inside
    /// `install/`.
    fn sources() -> Vec<(String, String)> {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernel/controller/install");
        let mut dirs = vec![root.clone()];
        let mut files = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("the install folder is there") {
                let path = entry.expect("listed").path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let name = path.strip_prefix(&root).expect("inside").display();
                    let text = std::fs::read_to_string(&path).expect("readable");
                    files.push((name.to_string(), text));
                }
            }
        }
        assert!(files.len() > 10, "the steps were read");
        files
    }

    #[test]
    fn only_the_outcome_writes_the_revision_record() {
        for (path, text) in sources() {
            if path == "outcome.rs" {
                continue;
            }
            for write in WRITES {
                assert!(
                    !text.contains(write),
                    "{path} writes the revision record ({write}): only outcome.rs does"
                );
            }
        }
    }

    /// No step changes an Instance's spec or metadata: the reconcile holds
    /// the Instance read-only (`&Instance`) and talks to the Instance API
    /// only through the report, which writes the status subresource (the
    /// end of the reconcile here, the progress of a long apply in
    /// `act/apply.rs`).
    #[test]
    fn no_step_writes_an_instance_but_through_the_report() {
        for (path, text) in sources() {
            let talks = text.contains(&["Api<", "Instance>"].concat());
            assert!(
                !talks || path == "outcome.rs" || path == "act/apply.rs",
                "{path} talks to the Instance API: only the report's writers do"
            );
            for verb in [
                ".patch(",
                ".replace(",
                ".create(",
                ".delete(",
                ".patch_status(",
            ] {
                assert!(
                    !text.contains(&["instances", verb].concat()),
                    "{path} writes an Instance ({verb}): only the report does"
                );
            }
        }
    }

    /// The Bundle's status is recorded by the steps and written once, by
    /// [`finish`] (`bundle_status::write_pending`), before the Instance's.
    #[test]
    fn no_step_writes_a_bundles_status_but_the_outcome() {
        for (path, text) in sources() {
            let writes = text.contains(&["bundle_status::", "write_pending"].concat())
                || text.contains(&["bundles", ".patch_status("].concat());
            assert!(
                !writes || path == "outcome.rs",
                "{path} writes a Bundle's status: only outcome.rs does"
            );
        }
    }
}
