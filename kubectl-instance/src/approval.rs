//! `kubectl instance approve|deny NAME`: writes the `Approved` condition,
//! as the caller, on the status subresource only.
//!
//! The write is a server-side apply of that one condition with the field
//! manager [`FIELD_MANAGER`]: conditions are a list map keyed by `type`, so
//! the other three stay as the provisioner wrote them. The apply carries
//! the resourceVersion that was read, so a decision is never taken about an
//! Instance the caller did not see: if the Instance changed meanwhile it is
//! read again, and if it now wants another Bundle the command stops.
//!
//! An approval names the content it covers: `status.approval` holds the
//! Bundle and the digest its status pins, written in the same apply as the
//! condition; the provisioner installs exactly that content and nothing
//! else (`pakket_api::ApprovalState`).
//!
//! Who may approve is the apiserver's call: RBAC on `instances/status`
//! (update, patch), and Pakket's admission webhook, which asks for the
//! `approve` verb on `instances`. A refusal is turned into a message that
//! names the caller and the rights to ask for.

use std::io::Write;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{
    ApprovalState, ApprovedContent, Bundle, ConditionType, Instance, Reason, UnpackPhase,
};
use serde_json::json;

use crate::error::{self, Error};
use crate::{identity, lookup};

/// The field manager that owns the `Approved` conditions this plugin writes.
pub const FIELD_MANAGER: &str = "kubectl-instance";

/// How often a write that lost a race is retried on a fresh read.
const ATTEMPTS: usize = 5;

/// What a caller needs to approve or deny, said as a request to an admin.
pub const APPROVE_ADVICE: &str = "ask an admin for verb approve on instances.core.pakket.dev \
     and verbs update, patch on instances/status, and get on bundles \
     (`kubectl instance approve --help` shows a ClusterRole, pakket-instance-approver, that grants them)";

/// Approve or deny.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Approved=True, reason ApprovedByUser.
    Approve,
    /// Approved=False, reason ApprovalDenied.
    Deny,
}

impl Decision {
    fn verb(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Self::Approve => "approved",
            Self::Deny => "denied",
        }
    }
}

/// What the caller asked for besides the decision.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// A note appended to the condition's message.
    pub note: Option<&'a str>,
    /// Decide only if the Bundle's content has this digest.
    pub digest: Option<&'a str>,
}

/// The digest the Instance's Bundle pins: the content a decision covers.
/// An embedded Bundle's pin is in the Instance's own status.
async fn pinned_digest(client: &kube::Client, current: &Instance) -> Result<String, Error> {
    let bundle = &current.spec.bundle.name;
    let instance = &kube::ResourceExt::name_any(current);
    let found = match current.embedded_bundle() {
        Some(embedded) => Some(embedded),
        None => match Api::<Bundle>::all(client.clone()).get_opt(bundle).await {
            Ok(found) => found,
            Err(source) => {
                return Err(identity::refused(
                    client,
                    source,
                    format!("get Bundle {bundle}"),
                    APPROVE_ADVICE,
                )
                .await);
            }
        },
    };
    let not_yet = || {
        Error::Changed(format!(
            "Bundle {bundle} is not unpacked yet, so there is no content to approve; wait until \
             `kubectl instance describe {instance}` shows Unpacked=True"
        ))
    };
    let status = found.ok_or_else(not_yet)?.status.ok_or_else(not_yet)?;
    if status.unpacked != UnpackPhase::Done {
        return Err(not_yet());
    }
    status
        .source
        .and_then(|source| source.digest)
        .ok_or_else(not_yet)
}

/// Records `decision` on Instance `name` as the caller.
pub async fn run(
    client: &kube::Client,
    name: &str,
    decision: Decision,
    request: Request<'_>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instances: Api<Instance> = Api::all(client.clone());
    let mut current = lookup::instance_with_advice(client, name, APPROVE_ADVICE).await?;
    let bundle = current.spec.bundle.name.clone();
    let digest = pinned_digest(client, &current).await?;
    if let Some(wanted) = request.digest
        && wanted != digest
    {
        return Err(Error::Changed(format!(
            "Bundle {bundle} has content {digest}, not {wanted}; nothing was {}: review it \
             (kubectl instance describe {name}) and run the command again",
            decision.past()
        )));
    }
    if let Some(already) = already_decided(&current, decision, &digest) {
        writeln!(out, "{already}")?;
        return Ok(());
    }
    let user = identity::whoami(client).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for _ in 0..ATTEMPTS {
        let condition = decided(&current, decision, &user, request.note, Timestamp::now());
        let patch = json!({
            "apiVersion": format!("{}/{}", pakket_api::GROUP, pakket_api::VERSION),
            "kind": "Instance",
            "metadata": {
                "name": name,
                // A precondition: refused with 409 if anyone wrote since.
                "resourceVersion": current.metadata.resource_version,
            },
            "status": {
                // The whole list: it is written atomically, so a list of
                // the decision alone would drop every other condition
                // until the runtime writes them again.
                "conditions": with_decision(&current, condition),
                "approval": ApprovedContent {
                    bundle: bundle.clone(),
                    digest: digest.clone(),
                    approved_by: user.clone(),
                    rendered: None,
                    // The spec this caller read: a later change to it is
                    // a new request, which this approval does not cover.
                    generation: current.metadata.generation,
                    // And what the runtime showed waiting for this very
                    // spec: the approval covers exactly that.
                    judged: shown_request(&current),
                },
            },
        });
        match instances
            .patch_status(name, &params, &Patch::Apply(&patch))
            .await
        {
            Ok(_) => {
                writeln!(
                    out,
                    "instance {name} {} (Bundle {bundle} at {digest}, by {user})",
                    decision.past()
                )?;
                return Ok(());
            }
            Err(source) if error::status_code(&source) == Some(409) => {
                current = lookup::instance_with_advice(client, name, APPROVE_ADVICE).await?;
                if current.spec.bundle.name != bundle {
                    return Err(Error::Changed(format!(
                        "Instance {name} now wants Bundle {} instead of {bundle}, which you meant to {}; \
                         review it (kubectl instance describe {name}) and run the command again",
                        current.spec.bundle.name,
                        decision.verb()
                    )));
                }
                if let Some(already) = already_decided(&current, decision, &digest) {
                    writeln!(out, "{already}")?;
                    return Ok(());
                }
            }
            Err(source) if error::status_code(&source) == Some(404) => {
                return Err(Error::NotFound {
                    kind: "instance",
                    name: name.to_owned(),
                });
            }
            Err(source) => {
                return Err(identity::refused(
                    client,
                    source,
                    format!("{} Instance {name}", decision.verb()),
                    APPROVE_ADVICE,
                )
                .await);
            }
        }
    }
    Err(Error::Changed(format!(
        "Instance {name} changed {ATTEMPTS} times while writing its approval; run the command again"
    )))
}

/// A note when the decision is already in place for this content, so
/// nothing is written.
fn already_decided(instance: &Instance, decision: Decision, digest: &str) -> Option<String> {
    let existing = instance.condition(ConditionType::Approved)?;
    let name = &instance.spec.bundle.name;
    let instance_name = instance.metadata.name.as_deref().unwrap_or_default();
    let done = match decision {
        // An approval covers one Bundle at one digest, for one generation
        // of the spec: other content, or a changed spec, is approved
        // again, as the runtime asks.
        Decision::Approve => {
            let state = ApprovalState::of(instance);
            state.covers(name, digest)
                && state
                    .content
                    .as_ref()
                    .and_then(|content| content.generation)
                    == instance.metadata.generation
        }
        Decision::Deny => {
            existing.status == "False" && existing.reason == Reason::ApprovalDenied.as_str()
        }
    };
    done.then(|| {
        format!(
            "instance {instance_name} is already {} for Bundle {name} ({}: {}); nothing to do",
            decision.past(),
            existing.reason,
            existing.message
        )
    })
}

/// The request the runtime says waits for a decision, when its status
/// describes the spec the caller read (else the runtime records what the
/// approval covers when it first installs under it).
fn shown_request(current: &Instance) -> Option<pakket_api::Judged> {
    let status = current.status.as_ref()?;
    (status.observed_generation.is_some()
        && status.observed_generation == current.metadata.generation)
        .then(|| status.pending_request.clone())
        .flatten()
}

/// The `Approved` condition recording `decision`; its transition time
/// moves only if its status or reason does.
fn decided(
    instance: &Instance,
    decision: Decision,
    user: &str,
    note: Option<&str>,
    now: Timestamp,
) -> Condition {
    let (reason, status) = match decision {
        Decision::Approve => (Reason::ApprovedByUser, ConditionStatus::True),
        Decision::Deny => (Reason::ApprovalDenied, ConditionStatus::False),
    };
    let mut message = format!(
        "{} by {user} at {} for Bundle {}",
        decision.past(),
        now.round(jiff::Unit::Second).unwrap_or(now),
        instance.spec.bundle.name
    );
    if let Some(note) = note.filter(|note| !note.trim().is_empty()) {
        message.push_str(": ");
        message.push_str(note.trim());
    }
    let mut conditions: Vec<Condition> = instance
        .condition(ConditionType::Approved)
        .cloned()
        .into_iter()
        .collect();
    condition::set(
        &mut conditions,
        condition::new(reason, status, message, instance.metadata.generation, now),
    );
    conditions.remove(0)
}

/// `instance`'s conditions with `decision` in place of its `Approved` one
/// (or added): the list the status is written with.
fn with_decision(instance: &Instance, decision: Condition) -> Vec<Condition> {
    let mut conditions = instance
        .status
        .as_ref()
        .map(|status| status.conditions.clone())
        .unwrap_or_default();
    condition::set(&mut conditions, decision);
    conditions
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::InstanceStatus;

    fn pending() -> Instance {
        let mut instance = crate::fixture::instance("web", "web.v2");
        instance.metadata.generation = Some(3);
        instance.status = Some(InstanceStatus {
            conditions: vec![condition::new(
                Reason::ApprovalPending,
                ConditionStatus::False,
                "waiting",
                Some(3),
                Timestamp::from_second(100).unwrap(),
            )],
            ..InstanceStatus::default()
        });
        instance
    }

    #[test]
    fn approving_names_the_user_the_time_and_the_bundle() {
        let now = Timestamp::from_second(1_000).unwrap();
        let condition = decided(&pending(), Decision::Approve, "alice", Some(" ok "), now);
        assert_eq!(condition.type_, "Approved");
        assert_eq!(condition.status, "True");
        assert_eq!(condition.reason, "ApprovedByUser");
        assert_eq!(
            condition.message,
            "approved by alice at 1970-01-01T00:16:40Z for Bundle web.v2: ok"
        );
        assert_eq!(condition.last_transition_time.0, now);
        assert_eq!(condition.observed_generation, Some(3));
    }

    #[test]
    fn denying_a_pending_instance_starts_a_new_transition() {
        // False both times, but a denial is news: its age starts now, not
        // when the Instance began waiting.
        let now = Timestamp::from_second(1_000).unwrap();
        let condition = decided(&pending(), Decision::Deny, "bob", None, now);
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason, "ApprovalDenied");
        assert_eq!(condition.last_transition_time.0, now);
    }

    #[test]
    fn the_decision_is_written_with_every_other_condition_kept() {
        // The conditions are an atomic list: what is sent is all there is.
        let mut instance = pending();
        let unpacked = condition::new(
            Reason::UnpackSucceeded,
            ConditionStatus::True,
            "unpacked",
            Some(3),
            Timestamp::from_second(90).unwrap(),
        );
        let status = instance.status.as_mut().unwrap();
        status.conditions.push(unpacked.clone());
        let now = Timestamp::from_second(1_000).unwrap();
        let decision = decided(&instance, Decision::Approve, "alice", None, now);
        let written = with_decision(&instance, decision.clone());
        assert_eq!(written.len(), 2, "{written:?}");
        assert!(written.contains(&unpacked));
        assert!(written.contains(&decision));
    }

    #[test]
    fn an_existing_decision_is_reported_not_rewritten() {
        let mut approved = pending();
        let status = approved.status.as_mut().unwrap();
        status.conditions[0].status = "True".into();
        status.conditions[0].reason = "ApprovedByPolicy".into();
        status.approval = Some(ApprovedContent {
            bundle: "web.v2".into(),
            digest: "sha256:1".into(),
            approved_by: "policy AllowAll".into(),
            rendered: None,
            generation: Some(3),
            judged: None,
        });
        let note = already_decided(&approved, Decision::Approve, "sha256:1").unwrap();
        assert!(
            note.starts_with(
                "instance web is already approved for Bundle web.v2 (ApprovedByPolicy"
            ),
            "{note}"
        );
        assert!(already_decided(&approved, Decision::Deny, "sha256:1").is_none());
        assert!(already_decided(&pending(), Decision::Approve, "sha256:1").is_none());
    }

    #[test]
    fn an_approval_of_other_content_does_not_count() {
        let mut stale = pending();
        let status = stale.status.as_mut().unwrap();
        status.conditions[0].status = "True".into();
        status.conditions[0].reason = "ApprovedByUser".into();
        status.approval = Some(ApprovedContent {
            bundle: "web.v2".into(),
            digest: "sha256:old".into(),
            approved_by: "alice".into(),
            rendered: None,
            generation: Some(3),
            judged: None,
        });
        assert!(already_decided(&stale, Decision::Approve, "sha256:new").is_none());
        assert!(already_decided(&stale, Decision::Approve, "sha256:old").is_some());
    }
}
