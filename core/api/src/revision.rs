//! An Instance's revisions: each install of other content (a first
//! install, a pivot to another Bundle, the same Bundle rendered to other
//! objects) is one, numbered, recorded by the runtime in the Instance's
//! status with what was applied, under whose approval, when, and how its
//! rollout ended. `kubectl instance history` lists them and `kubectl
//! instance rollback` asks for an earlier one's content again.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::BundleSpec;

/// How many revisions an Instance keeps unless its class says otherwise
/// (class parameter `revisionHistoryLimit`).
pub const REVISION_HISTORY_LIMIT: usize = 10;

/// One revision. Its content fields never change once recorded; only its
/// outcome moves, until the rollout ends or a later revision replaces it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    /// 1 for the first install, one more for each later revision.
    pub number: i64,
    /// The Bundle applied.
    #[schemars(length(min = 1, max = 253))]
    pub bundle: String,
    /// The Bundle's spec when the Instance embedded it, so that a rollback
    /// can ask for the same content again. Kept as written: the spec's own
    /// rules were checked when it was the Instance's, and repeating them
    /// for every revision would exceed the apiserver's rule budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub bundle_spec: Option<BundleSpec>,
    /// The pinned content digest (`sha256:<hex>`).
    #[schemars(length(min = 1, max = 128))]
    pub digest: String,
    /// The digest of the objects the provisioner rendered from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub rendered: Option<String>,
    /// Who approved it: a user, or `policy <name>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 512))]
    pub approved_by: String,
    /// When it was first applied (or first tried).
    pub applied: Time,
    /// How its rollout went.
    pub outcome: RevisionOutcome,
    /// When the outcome became final (`Succeeded`, `Superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Time>,
    /// The outcome in words: what holds a rollout, why an apply failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub message: String,
}

/// An automatic rollback (class parameter `rollbackOnFailure`): revision
/// `from` did not roll out, so the content of revision `to` (the one that
/// served before it) runs again, under the approval it had, until the
/// Instance's spec changes. Written by the runtime only; changing it (or
/// the revisions) needs the `approve` verb, as changing an approval does.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticRollback {
    /// The revision that did not roll out.
    pub from: i64,
    /// The revision whose content runs again.
    pub to: i64,
    /// The Instance's generation it was decided for: a change of the spec
    /// (a new Bundle, `kubectl instance rollback`) ends it.
    pub generation: i64,
    /// Whether the rollback is in force, or could not be made (`message`
    /// says why; the Instance then stays as it is).
    pub state: RollbackState,
    /// Why, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub message: String,
}

/// Whether an automatic rollback runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RollbackState {
    /// The earlier revision's content is applied again.
    RolledBack,
    /// It could not be: the earlier content is gone or renders to other
    /// objects than were approved. Nothing changed.
    NotPossible,
}

/// How a revision's rollout went.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RevisionOutcome {
    /// Applied; its workloads are rolling out.
    RollingOut,
    /// Applied and rolled out: every object healthy.
    Succeeded,
    /// Applied, but its rollout passed its progress deadline or failed;
    /// it may still finish.
    Blocked,
    /// Its objects could not be applied; the revision before it still runs.
    Failed,
    /// A later revision replaced it before its rollout ended.
    Superseded,
}

impl RevisionOutcome {
    /// The outcome as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RollingOut => "RollingOut",
            Self::Succeeded => "Succeeded",
            Self::Blocked => "Blocked",
            Self::Failed => "Failed",
            Self::Superseded => "Superseded",
        }
    }
}

impl std::fmt::Display for RevisionOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// What an automatic rollback installs from, as a status says it: each
/// revision's number, Bundle, content and render digests, outcome (which
/// decides the serving one) and approver; the serving revision; and the
/// rollback in force. The runtime applies a revision's content again under
/// the approval it had (the objects must render to the recorded digest),
/// so a write that changes this needs the `approve` verb, as a write that
/// changes an approval does. The admission webhook compares this list,
/// and its match condition the same list in CEL (`webhooks/src/config.rs`):
/// keep the two alike.
pub fn rollback_record(status: Option<&crate::InstanceStatus>) -> Vec<String> {
    let Some(status) = status else {
        return Vec::new();
    };
    let mut record: Vec<String> = status
        .revisions
        .iter()
        .map(|revision| {
            format!(
                "{}/{}/{}/{}/{}/{}",
                revision.number,
                revision.bundle,
                revision.digest,
                revision.rendered.as_deref().unwrap_or_default(),
                revision.outcome,
                revision.approved_by
            )
        })
        .collect();
    if let Some(serving) = status.serving_revision {
        record.push(format!("serving/{serving}"));
    }
    if let Some(rollback) = &status.automatic_rollback {
        record.push(format!(
            "rollback/{}/{}/{}/{}",
            rollback.from,
            rollback.to,
            rollback.generation,
            match rollback.state {
                RollbackState::RolledBack => "RolledBack",
                RollbackState::NotPossible => "NotPossible",
            }
        ));
    }
    record
}
