//! What an approval decides on and what its steps share: the request
//! proposed (objects and how they were made), what the class's policy step
//! hands the ApprovalPolicy step, where objects land, and how a waiting
//! approval is said.

use std::time::Duration;

use pakket_api::condition::ConditionStatus;
use pakket_api::{Cause, Reason};

use super::super::super::context::Context;
use super::super::super::report::Report;
use crate::trust::effects::Landing;

/// Why an approval waits, and when to ask again (`None`: it does not).
pub(super) type Waits = Option<(String, Option<Duration>)>;

/// What `Installed` says while approval waits.
pub(super) const WAITING: &str = "nothing is applied before approval";

/// What an approval decides on: the objects the new content would
/// install, and how they were made (to render the running content the
/// same way, only when a policy asks for it).
#[derive(Clone, Copy)]
pub(in super::super) struct Proposed<'a> {
    pub objects: &'a [serde_json::Value],
    pub request: &'a crate::provisioner::ObjectsRequest<'a>,
}

/// What the approval step passes on to the ApprovalPolicy step: the
/// request as judged (its policy part is the ApprovalPolicy's), the
/// generation it is of, and why it is asked again, if it is.
#[derive(Clone, Copy)]
pub(super) struct Decided<'a> {
    pub judged: &'a pakket_api::Judged,
    pub generation: i64,
    pub asked_again: Option<&'a str>,
    /// The last approval covered other content (another Bundle, or other
    /// bytes) than this request's.
    pub other_content: bool,
}

/// Where the objects of this provisioner land: a namespaced object naming
/// no namespace in its client's default one, kinds as the cluster serves
/// them, Pakket's namespaces (`pakket-system` and the provisioner's own).
pub(super) async fn landing<P>(context: &Context<P>) -> Landing {
    let mut landing = Landing::new(
        context.client.default_namespace(),
        context.decision_records.as_deref(),
    );
    landing.cluster_scoped = context
        .cluster_facts()
        .await
        .cluster_scoped
        .iter()
        .map(|(api_version, kind)| {
            let group = api_version.split_once('/').map_or("", |(group, _)| group);
            (group.to_owned(), kind.clone())
        })
        .collect();
    landing
}

/// Says in `Approved` why approval waits (unless it says so already).
pub(super) fn set_pending(report: &mut Report, message: String) {
    if !says_already(report, &message, None) {
        report.set(Reason::ApprovalPending, ConditionStatus::False, message);
    }
}

/// Says in `Approved` why approval waits, with its cause for tools.
pub(super) fn set_pending_because(report: &mut Report, message: String, because: Cause) {
    if !says_already(report, &message, Some(&because)) {
        report.set_because(
            Reason::ApprovalPending,
            ConditionStatus::False,
            message,
            because,
        );
    }
}

/// Whether `Approved` already waits with `message` and this cause (so
/// its transition time stays).
fn says_already(report: &Report, message: &str, because: Option<&Cause>) -> bool {
    let pending = Reason::ApprovalPending.as_str();
    let condition = report
        .approval()
        .is_some_and(|c| c.reason == pending && c.message == message);
    let cause = pakket_api::cause::cause_of(&report.status.causes, "Approved", pending);
    let same_cause = match (cause, because) {
        (Some(had), Some(wanted)) => had.kind == wanted.kind && had.policy == wanted.policy,
        (None, None) => true,
        _ => false,
    };
    condition && same_cause
}
