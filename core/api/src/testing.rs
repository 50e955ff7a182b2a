//! Fixture builders for unit tests of the crates that decide about
//! Instances, so a test states only what its case is about:
//!
//! ```ignore
//! use pakket_api::{ConditionStatus, Instance, Reason};
//! let waiting = Instance::test("web")
//!     .with_bundle("web.v2")
//!     .saying(Reason::ApprovalPending, ConditionStatus::False, "a person decides");
//! assert_eq!(waiting.spec.bundle.name, "web.v2");
//! ```
//!
//! Behind the `testing` feature: never in a shipped binary. Times are
//! fixed (the Unix epoch), so what a test builds twice is equal.

use jiff::Timestamp;

use crate::cause::{self, Cause};
use crate::condition::{self, ConditionStatus, Reason};
use crate::{ApprovedContent, BundleTemplate, Instance, InstanceSpec, InstanceStatus};

impl Instance {
    /// Instance `name` of class `plain`, installing Bundle `NAME.v1`, at
    /// generation 1, with uid `uid-NAME` and no status.
    pub fn test(name: &str) -> Self {
        let mut instance = Instance::new(
            name,
            InstanceSpec {
                class: "plain".into(),
                selector: None,
                bundle: BundleTemplate {
                    name: format!("{name}.v1"),
                    spec: None,
                },
                deletion_policy: Default::default(),
                config: None,
                progress_deadline: None,
                drift: None,
            },
        );
        instance.metadata.generation = Some(1);
        instance.metadata.uid = Some(format!("uid-{name}"));
        instance
    }

    /// Installing Bundle `bundle`.
    pub fn with_bundle(mut self, bundle: &str) -> Self {
        self.spec.bundle.name = bundle.into();
        self
    }

    /// Of class `class`.
    pub fn with_class(mut self, class: &str) -> Self {
        self.spec.class = class.into();
        self
    }

    /// At spec generation `generation` (conditions written after this say
    /// they observed it).
    pub fn with_generation(mut self, generation: i64) -> Self {
        self.metadata.generation = Some(generation);
        self
    }

    /// With the condition `reason` belongs to set as given, for the
    /// current generation.
    pub fn saying(mut self, reason: Reason, status: ConditionStatus, message: &str) -> Self {
        let generation = self.metadata.generation;
        let written = condition::new(reason, status, message, generation, Timestamp::UNIX_EPOCH);
        condition::set(&mut self.status_mut().conditions, written);
        self
    }

    /// With `because` beside `reason`'s condition, as the runtime writes
    /// it (set the condition with [`Instance::saying`] too).
    pub fn because(mut self, reason: Reason, because: Cause) -> Self {
        cause::set_cause(&mut self.status_mut().causes, reason, because);
        self
    }

    /// Approved by `who` for its Bundle at `digest`, this generation:
    /// `status.approval` and `Approved=True` as `kubectl instance approve`
    /// writes them.
    pub fn approved_by(mut self, who: &str, digest: &str) -> Self {
        let approval = ApprovedContent {
            bundle: self.spec.bundle.name.clone(),
            digest: digest.into(),
            approved_by: who.into(),
            rendered: None,
            generation: self.metadata.generation,
            judged: None,
        };
        self.status_mut().approval = Some(approval);
        let message = format!("approved by {who}");
        self.saying(Reason::ApprovedByUser, ConditionStatus::True, &message)
    }

    /// With its Bundle installed: `status.activeBundle` and
    /// `Installed=True`.
    pub fn installed(mut self) -> Self {
        self.status_mut().active_bundle = Some(self.spec.bundle.name.clone());
        self.saying(Reason::InstallSucceeded, ConditionStatus::True, "applied")
    }

    /// With every condition last changed at `at` (they are written at the
    /// Unix epoch otherwise), for tests that tell how long ago.
    pub fn changed_at(mut self, at: Timestamp) -> Self {
        for written in &mut self.status_mut().conditions {
            written.last_transition_time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at);
        }
        self
    }

    fn status_mut(&mut self) -> &mut InstanceStatus {
        self.status.get_or_insert_with(InstanceStatus::default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CauseKind, ConditionType};

    #[test]
    fn a_fixture_says_what_it_was_told_and_nothing_else() {
        let plain = Instance::test("web");
        assert_eq!(plain.spec.bundle.name, "web.v1");
        assert!(plain.status.is_none(), "no status until one is asked for");

        let approved = Instance::test("web")
            .with_bundle("web.v2")
            .with_generation(3)
            .approved_by("alice", "sha256:1")
            .installed();
        let status = approved.status.as_ref().unwrap();
        let approval = status.approval.as_ref().unwrap();
        assert_eq!(
            (approval.bundle.as_str(), approval.generation),
            ("web.v2", Some(3))
        );
        assert_eq!(status.active_bundle.as_deref(), Some("web.v2"));
        let said = condition::find(&status.conditions, ConditionType::Approved).unwrap();
        assert_eq!(
            (said.reason.as_str(), said.observed_generation),
            ("ApprovedByUser", Some(3))
        );

        let refused = Instance::test("web")
            .saying(Reason::InstallFailed, ConditionStatus::False, "taken")
            .because(
                Reason::InstallFailed,
                Cause::new(CauseKind::ObjectNotManaged),
            );
        let causes = &refused.status.as_ref().unwrap().causes;
        assert!(cause::cause_of(causes, "Installed", "InstallFailed").is_some());
    }
}
