//! What "approved" means, defined once for everyone who decides it: the
//! admission webhook guards exactly the fields [`ApprovalState`] reads, and
//! the runtime installs only what [`ApprovalState::covers`] says.
//!
//! An approval names the content it approves: the Bundle and the digest the
//! approver saw ([`ApprovedContent`] in `status.approval`). Content whose
//! digest differs is never installed under it. The `Approved` condition's
//! `observedGeneration`, message and timestamps decide nothing, so moving
//! them cannot approve anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ConditionType, Instance, InstanceStatus, Reason};

/// The content an approval covers, written with the `Approved` condition by
/// whoever approves (`kubectl instance approve`, or the provisioner under a
/// policy), and guarded by the admission webhook like the condition itself.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovedContent {
    /// The Bundle approved.
    #[schemars(length(min = 1, max = 253))]
    pub bundle: String,
    /// Its pinned content digest (`sha256:<hex>`), as its status showed it.
    #[schemars(length(min = 1, max = 128))]
    pub digest: String,
    /// Who approved: a user name, or `policy <name>` for a class policy.
    #[schemars(length(max = 512))]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub approved_by: String,
    /// The digest (`sha256:<hex>`) of the objects the provisioner rendered
    /// when it was approved, recorded by the runtime (what revisions
    /// compare). Absent in an approval written by a person (`kubectl
    /// instance approve`): the runtime records the render it installs under
    /// it.
    #[schemars(length(max = 128))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
    /// The Instance generation the decision was taken on: its spec (class,
    /// Bundle, `config`, and through the sealed record, who asked). Written
    /// by whoever decides (`kubectl instance approve` writes the generation
    /// it showed); a spec changed since is a new request, judged anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Everything else the decision was judged on, part by part, recorded
    /// by the runtime ([`Judged`]). Absent in a person's approval until the
    /// runtime first installs under it (for the generation it names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged>,
}

/// What a decision was judged on besides the Bundle, its digest and the
/// Instance's generation: the decision key, kept part by part so that a
/// change names what changed. Each part is a digest or a name; the runtime
/// computes them (`pakket_runtime::kernel::trust::decision_key`), and an approval
/// covers a request only while every part is the same.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    /// The class: `NAME provisioner ID parameters sha256:<hex>`.
    #[schemars(length(max = 512))]
    #[serde(default)]
    pub class: String,
    /// The ApprovalPolicy that decided, `NAME generation N`, when one did.
    #[schemars(length(max = 320))]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policy: String,
    /// The requester from the record Pakket's webhook sealed: `NAME groups
    /// sha256:<hex>`, or empty when none could be verified.
    #[schemars(length(max = 512))]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub requester: String,
    /// `sha256:<hex>` of the Instance's `spec.config` (empty when it has
    /// none).
    #[schemars(length(max = 128))]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config: String,
    /// `sha256:<hex>` of the rendered objects, with the material Pakket
    /// itself issues (serving certificates it rotates) left out: what the
    /// change writes.
    #[schemars(length(max = 128))]
    #[serde(default)]
    pub effects: String,
    /// What the change deletes (the objects the Instance installed that
    /// the new render lacks), each as the first 16 hex digits of the
    /// sha256 of `apiVersion Kind/namespace/name`, sorted; empty when it
    /// deletes nothing. A later pass that deletes a part of them (a CRD
    /// kept while objects of it exist) is covered; one that deletes
    /// anything else is a new request.
    #[schemars(length(max = 4096))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<String>,
}

/// Everything that decides approval, and nothing else: the `Approved`
/// condition's status and reason, and the content the approval covers.
/// A write that changes this needs the `approve` verb.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ApprovalState {
    /// `True`, `False`, `Unknown`, or empty when the condition is absent.
    pub status: String,
    /// The condition's reason, or empty.
    pub reason: String,
    /// `status.approval`.
    pub content: Option<ApprovedContent>,
}

impl ApprovalState {
    /// The state of an Instance as written.
    pub fn of(instance: &Instance) -> Self {
        instance
            .status
            .as_ref()
            .map(Self::of_status)
            .unwrap_or_default()
    }

    /// The state a status says (one being written, say).
    pub fn of_status(status: &InstanceStatus) -> Self {
        let condition = crate::condition::find(&status.conditions, ConditionType::Approved);
        Self {
            status: condition.map(|c| c.status.clone()).unwrap_or_default(),
            reason: condition.map(|c| c.reason.clone()).unwrap_or_default(),
            content: status.approval.clone(),
        }
    }

    /// Whether nothing about approval has been written yet.
    pub fn is_empty(&self) -> bool {
        self.status.is_empty() && self.reason.is_empty() && self.content.is_none()
    }

    /// Whether an approver denied the Instance (a denial stands until
    /// someone with `approve` changes it).
    pub fn is_denied(&self) -> bool {
        self.status == "False" && self.reason == Reason::ApprovalDenied.as_str()
    }

    /// Whether a person (not a class policy) approved.
    pub fn by_person(&self) -> bool {
        self.status == "True" && self.reason == Reason::ApprovedByUser.as_str()
    }

    /// Whether a class policy approved.
    pub fn by_policy(&self) -> bool {
        self.status == "True" && self.reason == Reason::ApprovedByPolicy.as_str()
    }

    /// Whether this approval covers exactly `bundle` with content `digest`:
    /// the one question the runtime asks before it installs anything.
    pub fn covers(&self, bundle: &str, digest: &str) -> bool {
        self.status == "True"
            && (self.by_person() || self.by_policy())
            && self
                .content
                .as_ref()
                .is_some_and(|content| content.bundle == bundle && content.digest == digest)
    }

    /// `True/ApprovedByUser for Bundle b at sha256:…`, for messages.
    pub fn describe(&self) -> String {
        if self.is_empty() {
            return "absent".to_owned();
        }
        let mut text = format!("{}/{}", self.status, self.reason);
        if let Some(content) = &self.content {
            text.push_str(&format!(
                " for Bundle {} at {}",
                content.bundle, content.digest
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::condition::{self, ConditionStatus};
    use crate::{BundleTemplate, InstanceSpec, InstanceStatus};

    fn instance(
        reason: Reason,
        status: ConditionStatus,
        content: Option<(&str, &str)>,
    ) -> Instance {
        let mut instance = Instance::new(
            "a",
            InstanceSpec {
                class: "c".into(),
                selector: None,
                bundle: BundleTemplate {
                    name: "b".into(),
                    spec: None,
                },
                deletion_policy: Default::default(),
                config: None,
                progress_deadline: None,
                drift: None,
            },
        );
        let mut conditions = Vec::new();
        condition::set(
            &mut conditions,
            condition::new(reason, status, "m", Some(1), Timestamp::UNIX_EPOCH),
        );
        instance.status = Some(InstanceStatus {
            conditions,
            approval: content.map(|(bundle, digest)| ApprovedContent {
                rendered: None,
                bundle: bundle.into(),
                digest: digest.into(),
                approved_by: "alice".into(),
                generation: Some(1),
                judged: None,
            }),
            ..InstanceStatus::default()
        });
        instance
    }

    #[test]
    fn an_approval_covers_exactly_the_bundle_and_digest_it_names() {
        let approved = ApprovalState::of(&instance(
            Reason::ApprovedByUser,
            ConditionStatus::True,
            Some(("b", "sha256:1")),
        ));
        assert!(approved.covers("b", "sha256:1"));
        assert!(!approved.covers("b", "sha256:2"));
        assert!(!approved.covers("other", "sha256:1"));
    }

    #[test]
    fn a_true_condition_without_content_approves_nothing() {
        let bare = ApprovalState::of(&instance(
            Reason::ApprovedByUser,
            ConditionStatus::True,
            None,
        ));
        assert!(!bare.covers("b", "sha256:1"));
        let pending = ApprovalState::of(&instance(
            Reason::ApprovalPending,
            ConditionStatus::True,
            Some(("b", "sha256:1")),
        ));
        assert!(
            !pending.covers("b", "sha256:1"),
            "only approval reasons approve"
        );
    }

    #[test]
    fn the_state_ignores_generation_message_and_time() {
        let mut one = instance(
            Reason::ApprovedByUser,
            ConditionStatus::True,
            Some(("b", "sha256:1")),
        );
        let before = ApprovalState::of(&one);
        let condition = &mut one.status.as_mut().unwrap().conditions[0];
        condition.observed_generation = Some(7);
        condition.message = "moved".into();
        assert_eq!(ApprovalState::of(&one), before);
        one.status
            .as_mut()
            .unwrap()
            .approval
            .as_mut()
            .unwrap()
            .digest = "sha256:2".into();
        assert_ne!(ApprovalState::of(&one), before);
    }

    #[test]
    fn denials_stand_apart() {
        let denied = ApprovalState::of(&instance(
            Reason::ApprovalDenied,
            ConditionStatus::False,
            Some(("b", "sha256:1")),
        ));
        assert!(denied.is_denied());
        assert!(!denied.covers("b", "sha256:1"));
        assert_eq!(
            denied.describe(),
            "False/ApprovalDenied for Bundle b at sha256:1"
        );
    }
}
