//! `ApprovalPolicy`: an admin's rules for what a class approves by itself.
//! A ProvisionerClass names one (`approval: Policy`, `approvalPolicy:
//! NAME`); the runtime evaluates its rules, in order, for each new content
//! an Instance asks for.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most rules a policy holds.
pub const MAX_RULES: usize = 64;
/// The longest rule expression.
pub const MAX_RULE_EXPRESSION: usize = 4096;

/// Ordered rules, each a CEL expression with an outcome: the first rule
/// whose expression is true decides; when none is, a person decides. A
/// rule that cannot be evaluated (an error, past the cost limit) asks a
/// person, saying why. What the expressions see is verified by the
/// runtime: the requester from the record Pakket's webhook sealed, the
/// Bundle and its properties as the provisioner read them from the pinned
/// content, the rights and objects as rendered.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "core.pakket.dev",
    version = "v1alpha1",
    kind = "ApprovalPolicy",
    plural = "approvalpolicies",
    shortname = "apol",
    category = "pakket",
    printcolumn = r#"{"name":"Rules","type":"integer","jsonPath":".spec.rules.length()"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct ApprovalPolicySpec {
    /// The rules, in order.
    #[schemars(length(min = 1, max = 64))]
    pub rules: Vec<ApprovalRule>,
}

/// One rule: when `cel` is true, `outcome` decides, with `message`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRule {
    /// A name people read in approvals and Events (`rule 2 (etcd-for-team-a)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub name: Option<String>,
    /// A CEL expression that is true when the rule applies. It sees
    /// `requester` (`name`, `groups`), `bundle` (`name`, `digest`,
    /// `package`, `version`, `properties`: `[{type, value}]`), `rights`
    /// (`all` the content asks for, `new` beyond what runs), `objects`
    /// (`[{group, version, kind, namespace, name}]`), `instance` (`name`,
    /// `class`, `config`), `effects` (what the change does, typed), and the
    /// functions `userPermission()`, `noNewRights()`, `requesterOwns(ns)`
    /// and `semverSatisfies(version, range)`.
    #[schemars(length(min = 1, max = 4096))]
    pub cel: String,
    /// What the rule decides.
    pub outcome: RuleOutcome,
    /// Why, for people: the Approved condition and the Event say it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub message: String,
}

/// What a rule decides.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RuleOutcome {
    /// The class installs the content by itself.
    Approve,
    /// Refused: nothing is installed until the request changes or a
    /// person approves.
    Deny,
    /// A person decides (`kubectl instance approve`).
    AskAPerson,
}

impl std::fmt::Display for RuleOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Approve => "Approve",
            Self::Deny => "Deny",
            Self::AskAPerson => "AskAPerson",
        })
    }
}
