//! The approval step under `approval: Policy`: the class's ApprovalPolicy
//! decides ([`crate::trust::policy`]), over inputs gathered and verified
//! here: the requester from the sealed record, the Bundle's properties as
//! the provisioner reads them from the pinned content (never from a status
//! someone could write), the rights and objects as rendered, and the
//! effects ([`crate::trust::effects`]) of the rendered objects against the
//! running ones, deletions included.
//!
//! What a rule approved holds for exactly that request (the decision key,
//! [`crate::trust::decision_key`]) with the policy at the generation that
//! decided: editing the policy judges every request again by the rules as
//! they are then (what runs stays running while it waits). The controller
//! watches ApprovalPolicies: an edit re-judges the Instances of every
//! class naming the policy at once. Decisions that wait are also asked
//! again every [`RECHECK`] (a requester's rights, which `userPermission()`
//! and `requesterOwns()` read, change without an event here).

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use pakket_api::condition::ConditionStatus;
use pakket_api::{
    ApprovalPolicy, ApprovalState, ApprovedContent, Cause, CauseKind, Instance, PolicyVerdict,
    ProvisionerClass, Reason, RuleOutcome,
};

use super::super::super::context::Context;
use super::super::super::report::Report;
use super::super::installed::running_revision;
use super::request::{
    Decided, Proposed, WAITING, Waits, landing, set_pending, set_pending_because,
};
use crate::approval::{Approval, ApprovalRequest, user_permission};
use crate::class_parameters;
use crate::provisioner::Provisioner;
use crate::trust::decision_key;
use crate::trust::policy::{self, BundleInputs, Inputs, InstanceInputs, Requester, RightsInputs};

/// How soon a decision that waits is asked again.
pub const RECHECK: Duration = Duration::from_secs(60);

/// `None` when the policy approved `content` (or approved it before);
/// otherwise why it waits and when to ask again.
pub(super) async fn decide<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    decided: Decided<'_>,
    context: &Context<P>,
    report: &mut Report,
) -> Waits {
    let name = instance.name_any();
    let policy_name = match named(class, &name, report) {
        Ok(policy_name) => policy_name,
        Err(waits) => return waits,
    };
    let approval_policy = match read(policy_name, class, &name, context, report).await {
        Ok(found) => found,
        Err(waits) => return waits,
    };
    // What this policy judges: the request, and the policy as it is now
    // (an edited policy judges every request again).
    let judged = pakket_api::Judged {
        policy: format!(
            "{policy_name} generation {}",
            approval_policy.metadata.generation.unwrap_or_default()
        ),
        ..decided.judged.clone()
    };
    if approved_before(instance, policy_name, content, decided.generation, &judged) {
        return None;
    }
    let rules = &approval_policy.spec.rules;
    let inputs = match inputs(instance, class, proposed, content, rules, context).await {
        Ok(inputs) => inputs,
        Err(why) => {
            set_pending(
                report,
                format!(
                    "ApprovalPolicy {policy_name} cannot decide: {why}; a person decides: `kubectl instance approve {name}`"
                ),
            );
            return Some((WAITING.to_owned(), Some(RECHECK)));
        }
    };
    let decision = policy::decide(rules, &inputs);
    let by = decision.by(policy_name, rules);
    let because = cause_of(policy_name, rules, &decision, decided.other_content);
    let permission = permission_inputs(instance, proposed);
    record(
        context,
        instance,
        (&inputs, permission),
        &by,
        decision.outcome,
    )
    .await;
    let approved = ApprovedContent {
        approved_by: by,
        generation: Some(decided.generation),
        judged: Some(judged),
        ..content.clone()
    };
    tell_decision(
        instance,
        &decision,
        approved,
        decided.asked_again,
        because,
        context,
        report,
    )
}

/// What `userPermission()` asks about for this request, kept with the
/// decision so the CLI can ask it for another user.
fn permission_inputs(instance: &Instance, proposed: Proposed<'_>) -> policy::PermissionInputs {
    policy::PermissionInputs {
        objects: proposed
            .objects
            .iter()
            .map(policy::permission_view)
            .collect(),
        removed: crate::trust::approval::removed_objects(instance, proposed.objects),
    }
}

/// A policy trial: the inputs any ApprovalPolicy would see for this
/// request, every question a rule can ask answered for its requester,
/// kept for `kubectl instance policy test`; nothing is ever approved, so
/// nothing is applied.
pub(super) async fn trial<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Waits {
    let name = instance.name_any();
    // A rule asking both questions, so both are answered.
    let every_question = [pakket_api::ApprovalRule {
        name: None,
        cel: "userPermission() && requesterOwns('')".into(),
        outcome: RuleOutcome::AskAPerson,
        message: String::new(),
    }];
    let (message, kind) = match inputs(instance, class, proposed, content, &every_question, context)
        .await
    {
        Ok(inputs) => {
            let trial = (&inputs, permission_inputs(instance, proposed));
            record(
                context,
                instance,
                trial,
                "a policy trial",
                RuleOutcome::AskAPerson,
            )
            .await;
            let kept = format!(
                "a policy trial ({}): what a policy would see is kept for `kubectl instance policy test`; it is never approved and nothing is applied",
                pakket_api::POLICY_TRIAL_ANNOTATION
            );
            (kept, CauseKind::PolicyTrial)
        }
        Err(why) => (
            format!(
                "a policy trial: the inputs of a policy cannot be computed ({why}); nothing is applied"
            ),
            CauseKind::PolicyTrialFailed,
        ),
    };
    tracing::info!(instance = %name, "policy trial");
    set_pending_because(report, message, Cause::new(kind));
    Some((WAITING.to_owned(), None))
}

/// The ApprovalPolicy the class names, or why there is none to ask.
fn named<'a>(
    class: &'a ProvisionerClass,
    name: &str,
    report: &mut Report,
) -> Result<&'a str, Waits> {
    let class_name = class.name_any();
    let message = match class_parameters::string(class.spec.parameters.as_ref(), policy::PARAMETER)
    {
        Ok(Some(policy_name)) => return Ok(policy_name),
        Ok(None) => format!(
            "ProvisionerClass {class_name} has approval: Policy and names no ApprovalPolicy (parameter {}); an admin names one, or a person approves: `kubectl instance approve {name}`",
            policy::PARAMETER
        ),
        Err(error) => format!(
            "ProvisionerClass {class_name}: {error}; fix the class, or run `kubectl instance approve {name}`"
        ),
    };
    set_pending(report, message);
    Err(Some((WAITING.to_owned(), Some(RECHECK))))
}

/// The ApprovalPolicy `policy_name`, or why it cannot be read.
async fn read<P>(
    policy_name: &str,
    class: &ProvisionerClass,
    name: &str,
    context: &Context<P>,
    report: &mut Report,
) -> Result<ApprovalPolicy, Waits> {
    let found = Api::<ApprovalPolicy>::all(context.client.clone())
        .get_opt(policy_name)
        .await;
    let message = match found {
        Ok(Some(found)) => return Ok(found),
        Ok(None) => format!(
            "ProvisionerClass {} names ApprovalPolicy {policy_name}, which does not exist; an admin creates it, or a person approves: `kubectl instance approve {name}`",
            class.name_any()
        ),
        Err(error) => format!(
            "reading ApprovalPolicy {policy_name} failed ({}); trying again",
            crate::apply::api_message(&error)
        ),
    };
    set_pending(report, message);
    Err(Some((WAITING.to_owned(), Some(RECHECK))))
}

/// Whether this policy approved exactly this request before.
fn approved_before(
    instance: &Instance,
    policy_name: &str,
    content: &ApprovedContent,
    generation: i64,
    judged: &pakket_api::Judged,
) -> bool {
    let state = ApprovalState::of(instance);
    let by_this_policy = format!("policy {policy_name} rule ");
    state.by_policy()
        && state.content.as_ref().is_some_and(|approved| {
            approved.approved_by.starts_with(&by_this_policy)
                && decision_key::cover(
                    approved,
                    &content.bundle,
                    &content.digest,
                    generation,
                    judged,
                ) == decision_key::Cover::Covered
        })
}

/// Writes what the rules decided: the approval (`approved`, when they
/// approve) or why it waits, and an Event when the decision is new.
fn tell_decision<P>(
    instance: &Instance,
    decision: &policy::Decision,
    approved: ApprovedContent,
    asked_again: Option<&str>,
    because: Cause,
    context: &Context<P>,
    report: &mut Report,
) -> Waits {
    let name = instance.name_any();
    let by = &approved.approved_by;
    let message = match decision.outcome {
        RuleOutcome::Approve => {
            // Each decision names the content it covers, so an approval of
            // newer content never reads like the one before it.
            let covers = format!(
                "Bundle {} at {}",
                approved.bundle,
                super::short_digest(&approved.digest)
            );
            let message = match asked_again {
                Some(again) => {
                    format!("approved by {by}: {} ({covers}; {again})", decision.message)
                }
                None => format!("approved by {by}: {} ({covers})", decision.message),
            };
            report.set(
                Reason::ApprovedByPolicy,
                ConditionStatus::True,
                message.clone(),
            );
            report.status.approval = Some(approved);
            let normal = EventType::Normal;
            tell(context, instance, normal, "ApprovedByPolicyRule", &message);
            return None;
        }
        RuleOutcome::Deny => format!(
            "refused by {by}: {}; nothing is applied. Change the request, or a person with the approve verb decides: `kubectl instance approve {name}`",
            decision.message
        ),
        RuleOutcome::AskAPerson => format!(
            "{by} asks a person: {}; review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}` or `kubectl instance deny {name}`",
            decision.message
        ),
    };
    let message = match asked_again {
        Some(again) => format!("{message} ({again})"),
        None => message,
    };
    let told = report
        .approval()
        .is_some_and(|condition| condition.message == message);
    if !told {
        let kind = if decision.outcome == RuleOutcome::Deny {
            EventType::Warning
        } else {
            EventType::Normal
        };
        tell(context, instance, kind, "PolicyDecided", &message);
    }
    set_pending_because(report, message, because);
    Some((WAITING.to_owned(), Some(RECHECK)))
}

/// What tools read of a decision that waits: the policy and its rule,
/// and whether the rule refused or asks a person (or, before either, that
/// the approval on record covered other content).
fn cause_of(
    policy_name: &str,
    rules: &[pakket_api::ApprovalRule],
    decision: &policy::Decision,
    other_content: bool,
) -> Cause {
    let refused = decision.outcome == RuleOutcome::Deny;
    let kind = if other_content {
        CauseKind::ApprovalOfOtherContent
    } else if refused {
        CauseKind::PolicyRefused
    } else {
        CauseKind::PolicyAsksPerson
    };
    Cause::new(kind).with_policy(PolicyVerdict {
        name: policy_name.to_owned(),
        rule: decision.rule.map(|index| index as u32 + 1),
        rule_name: decision.rule.and_then(|index| rules[index].name.clone()),
        refused,
    })
}

/// What the rules see, each part verified here.
async fn inputs<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    rules: &[pakket_api::ApprovalRule],
    context: &Context<P>,
) -> Result<Inputs, String> {
    let (requester, _) = pakket_api::requester(instance, context.record_key.as_ref())
        .map_err(|error| format!("the requester record is not trusted ({error})"))?;
    // What runs now, rendered again from the store: what the new content
    // does beyond it is `rights.new` and `effects.new`, what it lacks of it
    // `effects.deleted`. Nothing stored to compare with: all of it is new.
    let running = running_revision(instance, proposed.request, context).map(|(_, objects)| objects);
    let (all, new, effects) = crate::approval::rights_and_effects(
        &context.client,
        proposed.objects,
        running.as_deref(),
        landing(context).await,
    )
    .await
    .map_err(|error| format!("reading the cluster's aggregated roles failed ({error})"))?;
    let running = running.unwrap_or_default();
    let user_permission = if policy::needs_user_permission(rules) {
        let request = ApprovalRequest {
            client: &context.client,
            instance,
            class,
            policy: "UserPermission",
            objects: proposed.objects,
            running: Some(&running),
            kinds: context.kinds.clone(),
            record_key: context.record_key.as_ref(),
        };
        Some(matches!(
            user_permission(&request).await,
            Approval::Approved(_)
        ))
    } else {
        None
    };
    let requester_owns = if policy::needs_requester_owns(rules) {
        Some(
            crate::approval::owned_namespaces(&context.client, &requester, &effects.all.namespaces)
                .await?,
        )
    } else {
        None
    };
    Ok(Inputs {
        requester: Requester {
            name: requester.username,
            groups: requester.groups,
        },
        bundle: BundleInputs {
            name: content.bundle.clone(),
            digest: content.digest.clone(),
            refs: bundle_refs(instance, context),
            properties: context.provisioner.properties(proposed.request),
            ..BundleInputs::default()
        },
        rights: RightsInputs { all, new },
        effects,
        objects: Inputs::objects_of(proposed.objects),
        instance: InstanceInputs {
            name: instance.name_any(),
            class: class.name_any(),
            config: instance
                .spec
                .config
                .clone()
                .map(serde_json::Value::Object)
                .unwrap_or_else(|| serde_json::json!({})),
        },
        user_permission,
        requester_owns,
    }
    .with_package_from_properties())
}

/// The largest record kept: a ConfigMap holds at most 1 MiB.
const MAX_RECORD: usize = 900 * 1024;

/// Keeps what the policy saw and decided for `instance`, for `kubectl
/// instance policy test`, in the provisioner's own namespace (a ConfigMap
/// the Instance owns, so it goes with it). A record that cannot be kept is
/// logged, never a reason to hold the decision.
async fn record<P>(
    context: &Context<P>,
    instance: &Instance,
    (inputs, permission): (&Inputs, policy::PermissionInputs),
    decided_by: &str,
    outcome: RuleOutcome,
) {
    let Some(namespace) = &context.decision_records else {
        return;
    };
    let instance_name = instance.name_any();
    let record = policy::DecisionRecord {
        inputs: inputs.clone(),
        user_permission: inputs.user_permission,
        requester_owns: inputs.requester_owns.clone(),
        decided_by: decided_by.to_owned(),
        outcome: serde_json::to_value(outcome)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default(),
        permission: Some(permission),
    };
    let text = match serde_json::to_string(&record) {
        Ok(text) if text.len() <= MAX_RECORD => text,
        Ok(text) => {
            tracing::warn!(
                instance = %instance_name,
                "the inputs of its policy decision are {} bytes, over {MAX_RECORD}; not kept, so `kubectl instance policy test` cannot use them",
                text.len()
            );
            return;
        }
        Err(error) => {
            tracing::warn!(instance = %instance_name, "its policy decision's inputs: {error}");
            return;
        }
    };
    let name = policy::decision_record_name(&instance_name);
    let config_map = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": { policy::DECISION_RECORD_INSTANCE: instance_name },
            "ownerReferences": [{
                "apiVersion": "core.pakket.dev/v1alpha1",
                "kind": "Instance",
                "name": instance_name,
                "uid": instance.uid().unwrap_or_default(),
            }],
        },
        "data": { policy::DECISION_RECORD_KEY: text },
    });
    let written = Api::<ConfigMap>::namespaced(context.client.clone(), namespace)
        .patch(
            &name,
            &PatchParams::apply("pakket-policy-inputs").force(),
            &Patch::Apply(config_map),
        )
        .await;
    if let Err(error) = written {
        tracing::warn!(
            instance = %instance_name,
            "keeping its policy decision's inputs in ConfigMap {namespace}/{name} failed ({}); the provisioner needs get, create and patch on configmaps in {namespace}",
            crate::apply::api_message(&error)
        );
    }
}

/// The refs the content came from: the embedded spec's, else the Bundle
/// object's (whose spec is immutable).
fn bundle_refs<P>(instance: &Instance, context: &Context<P>) -> Vec<String> {
    match &instance.spec.bundle.spec {
        Some(spec) => spec.refs.clone(),
        None => context
            .bundles
            .get(&kube::runtime::reflector::ObjectRef::new(
                &instance.spec.bundle.name,
            ))
            .map(|bundle| bundle.spec.refs.clone())
            .unwrap_or_default(),
    }
}

/// An Event on the Instance with the rule's words.
fn tell<P>(context: &Context<P>, instance: &Instance, type_: EventType, reason: &str, note: &str) {
    context.events.publish(
        instance,
        Event {
            type_,
            reason: reason.into(),
            note: Some(note.chars().take(1000).collect()),
            action: "Approve".into(),
            secondary: None,
        },
    );
}
