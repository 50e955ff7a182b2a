//! `kubectl instance why NAME`: why an Instance is where it is, one
//! paragraph per problem, each with the next step.
//!
//! The diagnosis is read from the four conditions (Approved, Unpacked,
//! Installed, Healthy). Failures come first, in that order, because they
//! are what blocks; of the conditions that are merely not done yet only the
//! first one is shown, and only when no failure comes before it (anything
//! after a failure is its consequence). The runtime decides approval after
//! unpacking, so an `ApprovalPending` before the Bundle is unpacked is a
//! placeholder and is not reported as "waiting for approval".

use std::io::Write;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use pakket_api::readiness;
use pakket_api::{
    Bundle, Cause, CauseKind, CauseObject, ConditionType, Instance, ProvisionerClass, Reason,
};
use serde::Serialize;

use crate::error::Error;
use crate::events::EventLine;
use crate::output::{self, Format};
use crate::{age, lookup, why_catalogs};

/// Where an Instance stands, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// Every condition is True.
    Ready,
    /// No provisioner has written any condition yet.
    NotReconciled,
    /// Waiting for someone with the `approve` verb.
    WaitingForApproval,
    /// Approval was refused.
    ApprovalDenied,
    /// The Bundle is being fetched or unpacked.
    Unpacking,
    /// The Bundle could not be fetched, or its content was refused.
    UnpackFailed,
    /// Nothing applied yet, for the reason in the message.
    InstallPending,
    /// Applying or pivoting failed.
    InstallFailed,
    /// Dependency resolution found no set of bundles that works together.
    DependencyConflict,
    /// Installed, but some objects are not healthy.
    Unhealthy,
    /// Still on its way (health not known yet, and the like).
    Progressing,
    /// Deleted, and held by a finalizer (its provisioner is not running,
    /// or never claimed the class).
    DeletionHeld,
    /// A condition with a reason this plugin does not know.
    Other,
}

/// One problem: the condition that shows it, and what to do.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// What kind of problem.
    pub kind: Kind,
    /// One sentence for people.
    pub summary: String,
    /// The condition type that shows it.
    pub condition: String,
    /// That condition's status.
    pub status: String,
    /// That condition's reason.
    pub reason: String,
    /// That condition's message, verbatim (may span lines).
    pub message: String,
    /// Since when the condition has had this status.
    pub since: Timestamp,
    /// The Bundle concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// The Bundle's sources, for unpack problems.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
    /// Each object the Healthy condition names, with what is wrong.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
    /// Commands or actions that move things on.
    pub next_steps: Vec<String>,
}

/// The whole answer to "why".
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// The Instance's name.
    pub instance: String,
    /// The state, from the first problem (or `Ready`).
    pub state: Kind,
    /// One sentence.
    pub summary: String,
    /// The problems, most blocking first.
    pub problems: Vec<Problem>,
    /// Who approved what runs, and by which rule, when it is approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<String>,
}

/// What is known besides the Instance: its Bundle and its class, when they
/// could be read.
pub struct Context<'a> {
    /// The Bundle `spec.bundle.name` names, if it exists and could be read.
    pub bundle: Option<&'a Bundle>,
    /// The ProvisionerClass, if it exists and could be read.
    pub class: Option<&'a ProvisionerClass>,
    /// Whether the class was looked up and is absent (not merely unreadable).
    pub class_missing: bool,
    /// For an Instance being deleted: the provisioner's newest Event on
    /// what holds the uninstall (`UninstallWaiting`, `UninstallIncomplete`),
    /// if the caller may read Events.
    pub uninstall_report: Option<&'a EventLine>,
}

/// The Event reasons in which a provisioner says what holds an uninstall.
const UNINSTALL_REPORTS: [&str; 2] = ["UninstallWaiting", "UninstallIncomplete"];

/// Explains `instance`.
pub fn diagnose(instance: &Instance, context: &Context<'_>) -> Diagnosis {
    let name = instance.name_any();
    let conditions = instance
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    if let Some(held) = deletion_held(instance, context) {
        return held;
    }
    if conditions.is_empty() {
        return not_reconciled(instance, context);
    }
    // The first failure leads, as it does in `Ready`
    // (`readiness::instance_blocker`); a pending condition before it
    // follows the failures.
    let unpacked = pakket_api::condition::find(conditions, ConditionType::Unpacked)
        .is_some_and(|condition| condition.status == "True");
    let mut problems = Vec::new();
    let mut first_pending = None;
    let mut failed = false;
    for kind in ConditionType::INSTANCE {
        let Some(condition) = pakket_api::condition::find(conditions, kind) else {
            continue;
        };
        if condition.status == "True" {
            continue;
        }
        if is_failure(condition) {
            failed = true;
            problems.push(problem(instance, condition, context));
        } else if !failed && first_pending.is_none() {
            let placeholder = kind == ConditionType::Approved && !unpacked;
            if !placeholder {
                first_pending = Some(condition);
            }
        }
    }
    // Content that cannot be rendered has nothing to approve yet: asking
    // for an approval next to it would send a person to approve content
    // that will never install.
    let unrenderable = problems.iter().any(|p| {
        matches!(
            known_reason(&p.reason),
            Some(Reason::UnpackFailed | Reason::RenderFailed | Reason::InvalidConfig)
        )
    });
    if let Some(condition) = first_pending
        && !(unrenderable && condition.type_ == ConditionType::Approved.as_str())
    {
        problems.push(problem(instance, condition, context));
    }
    let (state, summary) = match problems.first() {
        Some(first) => (first.kind, first.summary.clone()),
        None if ConditionType::INSTANCE.iter().all(|kind| {
            pakket_api::condition::find(conditions, *kind).is_some_and(|c| c.status == "True")
        }) =>
        {
            (
                Kind::Ready,
                format!("Instance {name} is installed and healthy."),
            )
        }
        // Only placeholders are left: the provisioner is still working.
        None => (
            Kind::Progressing,
            format!("Instance {name} is still being worked on; nothing has failed."),
        ),
    };
    Diagnosis {
        instance: name,
        state,
        summary,
        problems,
        approved: approved_by(instance),
    }
}

/// The decision behind what runs: who or which policy rule approved it,
/// for which content, in the `Approved` condition's words.
fn approved_by(instance: &Instance) -> Option<String> {
    let status = instance.status.as_ref()?;
    let condition = pakket_api::condition::find(&status.conditions, ConditionType::Approved)
        .filter(|condition| condition.status == "True")?;
    let approval = status.approval.as_ref()?;
    Some(if condition.message.contains(&approval.approved_by) {
        condition.message.clone()
    } else {
        format!(
            "approved by {}: {}",
            approval.approved_by, condition.message
        )
    })
}

/// Where content ships its author's progression probes (the runtime's
/// `apply::probes::CONTENT_FILE`; this tool does not link the runtime).
const PROBES_FILE: &str = ".progression-probes.yaml";

/// A failure blocks until someone acts; anything else is "not done yet".
fn is_failure(condition: &Condition) -> bool {
    readiness::is_failure(condition)
}

fn known_reason(reason: &str) -> Option<Reason> {
    readiness::known_reason(reason)
}

/// Whether a condition is another component's dependency explanation (a
/// resolver's), told by its reason: Pakket's own reasons each have advice
/// of their own (a missing dependency is `DependenciesMissing`).
fn is_dependency_conflict(condition: &Condition) -> bool {
    let reason = condition.reason.as_str();
    known_reason(reason).is_none()
        && (reason.contains("Dependenc")
            || reason.contains("Conflict")
            || reason.contains("Resolution"))
}

/// The cause the runtime wrote beside `condition`, if it still explains it.
fn cause_of<'a>(instance: &'a Instance, condition: &Condition) -> Option<&'a Cause> {
    let causes = &instance.status.as_ref()?.causes;
    pakket_api::cause::cause_of(causes, &condition.type_, &condition.reason)
}

fn problem(instance: &Instance, condition: &Condition, context: &Context<'_>) -> Problem {
    let name = instance.name_any();
    let bundle = instance.spec.bundle.name.clone();
    let mut problem = Problem {
        kind: Kind::Other,
        summary: format!(
            "Instance {name}: condition {} is {} ({}).",
            condition.type_, condition.status, condition.reason
        ),
        condition: condition.type_.clone(),
        status: condition.status.clone(),
        reason: condition.reason.clone(),
        message: condition.message.clone(),
        since: condition.last_transition_time.0,
        bundle: None,
        refs: Vec::new(),
        objects: Vec::new(),
        next_steps: Vec::new(),
    };
    if is_dependency_conflict(condition) {
        problem.kind = Kind::DependencyConflict;
        problem.summary =
            format!("Instance {name} cannot be installed: its dependencies conflict.");
        problem.next_steps.push(
            "the explanation above names the chain of requirements that rules each candidate out; \
             change the request, the installed set or the catalogs it names"
                .to_owned(),
        );
        return problem;
    }
    let held_at = instance
        .status
        .as_ref()
        .and_then(|status| status.progression.as_ref());
    let cause = cause_of(instance, condition);
    match known_reason(&condition.reason) {
        Some(Reason::ApprovalPending) => {
            problem.kind = Kind::WaitingForApproval;
            problem.summary =
                format!("Instance {name} is waiting for approval to install Bundle {bundle}.");
            problem.next_steps = trust_steps(cause, &name).unwrap_or_default();
            if let Some(decided) = cause.and_then(|cause| cause.policy.as_ref()) {
                problem.summary = if decided.refused {
                    format!(
                        "Instance {name}: Bundle {bundle} was refused by {}; nothing is installed.",
                        decided.in_words()
                    )
                } else {
                    format!(
                        "Instance {name} is waiting for a person: {} did not approve Bundle {bundle} by itself.",
                        decided.in_words()
                    )
                };
                problem.next_steps.push(format!(
                    "read the rules: kubectl get approvalpolicy {} -o yaml (the message above says which rule decided and why)",
                    decided.name
                ));
            }
            problem.bundle = Some(bundle);
            problem.next_steps.extend([
                format!("kubectl instance describe {name}   # review what would be installed"),
                format!(
                    "kubectl instance approve {name}    # needs verb approve on instances.core.pakket.dev"
                ),
            ]);
        }
        Some(Reason::ApprovalDenied) => {
            problem.kind = Kind::ApprovalDenied;
            problem.summary = format!("Instance {name} was denied approval for Bundle {bundle}.");
            problem.bundle = Some(bundle);
            problem.next_steps = vec![format!(
                "if it should go ahead after all: kubectl instance approve {name}"
            )];
        }
        Some(Reason::UnpackPending | Reason::Unpacking) => {
            problem.kind = Kind::Unpacking;
            problem.summary = format!("Bundle {bundle} of Instance {name} is not unpacked yet.");
            problem.refs = refs(instance, context.bundle);
            problem.bundle = Some(bundle);
        }
        Some(Reason::UnpackFailed) => {
            problem.kind = Kind::UnpackFailed;
            problem.summary = format!("Bundle {bundle} of Instance {name} failed to unpack.");
            problem.refs = refs(instance, context.bundle);
            problem.next_steps = trust_steps(cause, &name)
                .unwrap_or_else(|| unpack_steps(instance, context.bundle, cause));
            problem.bundle = Some(bundle);
        }
        Some(Reason::InstallPending) => {
            problem.kind = Kind::InstallPending;
            problem.summary = format!("Instance {name} is not installed yet.");
            if context.class_missing {
                problem.next_steps.push(format!(
                    "create ProvisionerClass {} or point spec.class at an existing one (kubectl get provisionerclasses)",
                    instance.spec.class
                ));
            }
        }
        Some(Reason::Installing) if held_at.is_some() => {
            // A set held at a phase: the phases before it are written, the
            // next starts once the probes status names pass.
            problem.kind = Kind::Progressing;
            if let Some(held) = held_at {
                problem.summary = format!(
                    "Instance {name} is installed up to phase {}; phase {} waits for these probes to pass: {}. Nothing has failed.",
                    held.reached,
                    held.next,
                    held.held_by.join("; ")
                );
            }
            problem.bundle = Some(bundle);
            problem.next_steps.push(
                "look at the object the message names (kubectl describe KIND NAME -n NAMESPACE): a workload whose Pods do not start, a claim no volume binds, a Job that failed"
                    .to_owned(),
            );
            problem.next_steps.push(format!(
                "a hold that names progressionProbes is the class's own probe: read it with kubectl get provisionerclass {} -o yaml",
                instance.spec.class
            ));
            problem.next_steps.push(format!(
                "a hold that names {PROBES_FILE} is the content author's probe, shipped in Bundle {}'s content; new content (a new Bundle) changes it",
                instance.spec.bundle.name
            ));
            problem.next_steps.push(
                "past the progress deadline, Progressing says Blocked; nothing of the revision before is removed until the whole set is written"
                    .to_owned(),
            );
        }
        Some(Reason::Installing) => {
            problem.kind = Kind::Progressing;
            problem.summary = format!("Instance {name} is being installed; nothing has failed.");
            problem.bundle = Some(bundle);
            problem.next_steps.push(format!(
                "the message counts the objects; it is updated every few seconds until the apply ends (kubectl instance why {name} again, or kubectl get instance {name} -w)"
            ));
        }
        Some(Reason::InvalidConfig) => {
            problem.kind = Kind::InstallFailed;
            problem.summary = format!(
                "Instance {name}'s spec is not valid (spec.config for its provisioner, or spec.drift, spec.progressDeadline: the message names the field); nothing is applied."
            );
            problem.next_steps.push(format!(
                "fix the field the message names: kubectl edit instance {name} (a changed spec is a new request, approved anew)"
            ));
        }
        Some(Reason::DependenciesMissing) => {
            problem.kind = Kind::InstallFailed;
            problem.summary = format!(
                "Instance {name} needs packages or APIs that nothing installed provides; nothing of Bundle {bundle} is applied."
            );
            problem.bundle = Some(bundle);
            problem.next_steps.push(
                "install what the message says is missing (an Instance of a bundle that provides it); this Instance installs on its own once it is there"
                    .to_owned(),
            );
        }
        Some(Reason::InstallFailed) => {
            problem.kind = Kind::InstallFailed;
            problem.summary = format!("Instance {name} failed to install Bundle {bundle}.");
            problem.bundle = Some(bundle);
            if let Some(steps) = trust_steps(cause, &name) {
                problem.next_steps = steps;
            }
            problem.next_steps.push(
                "the objects of the previously active Bundle stay in place; fix the cause above and the provisioner retries on its own"
                    .to_owned(),
            );
        }
        Some(Reason::RolledBack) => {
            problem.kind = Kind::InstallFailed;
            problem.summary = format!(
                "Instance {name}'s Bundle {bundle} did not roll out and was rolled back automatically (its class's rollbackOnFailure): the revision that served before it runs again, under the approval it had."
            );
            problem.bundle = Some(bundle);
            problem.next_steps.push(format!(
                "kubectl instance history {name}   # the revision that did not roll out, why, and the one that runs"
            ));
            problem.next_steps.push(format!(
                "fix the content and point the Instance at a new Bundle (kubectl edit instance {name}); a changed spec ends the rollback and is approved as any change"
            ));
            problem.next_steps.push(format!(
                "kubectl instance rollback {name}   # make the running revision's content the spec's own, ending the rollback"
            ));
        }
        Some(Reason::RenderFailed) => {
            problem.kind = Kind::InstallFailed;
            problem.summary = format!(
                "The content of Instance {name} was fetched and unpacked, but its provisioner could not make objects of it."
            );
            match trust_steps(cause, &name) {
                Some(steps) => problem.next_steps = steps,
                None => problem.next_steps.push(
                    "the message names the file and what is wrong with it; fix the content and point the Instance at a new Bundle with it (its source and the registry are fine)"
                        .to_owned(),
                ),
            }
            problem.next_steps.push(
                "what was installed before keeps running; nothing of this content is applied"
                    .to_owned(),
            );
        }
        Some(Reason::ObjectsUnhealthy) => {
            problem.kind = Kind::Unhealthy;
            let objects = cause
                .map(|cause| cause.objects.as_slice())
                .unwrap_or_default();
            problem.objects = objects.iter().map(object_in_words).collect();
            problem.summary = match objects.len() {
                // A status from before causes were written: the message
                // above names them.
                0 => format!(
                    "Instance {name} is installed, but some of its objects are not healthy."
                ),
                1 => format!("Instance {name} is installed, but 1 of its objects is not healthy."),
                count => format!(
                    "Instance {name} is installed, but {count} of its objects are not healthy."
                ),
            };
            problem.next_steps = objects
                .iter()
                .filter_map(|object| describe_command(&object.object))
                .collect();
        }
        Some(Reason::MixedRevisions) => {
            problem.kind = Kind::Unhealthy;
            problem.summary = format!(
                "Instance {name} runs a mix of two revisions: a write failed part-way and not every object could be put back."
            );
            problem.next_steps.push(
                "the message above names the objects at the new revision; the provisioner puts them back or completes the change at its next try, and Healthy stays False until one revision runs whole"
                    .to_owned(),
            );
        }
        Some(Reason::ProgressDeadlineExceeded) => {
            problem.kind = Kind::Unhealthy;
            problem.summary = format!(
                "Instance {name}'s newest revision did not roll out within its progress deadline; what served before keeps serving where it can."
            );
            problem.next_steps.push(
                "the message above names what the rollout waits for: look at that workload's pods (kubectl describe)"
                    .to_owned(),
            );
            problem.next_steps.push(format!(
                "kubectl instance history {name}   # the revisions, and the one that serves"
            ));
            problem.next_steps.push(format!(
                "kubectl instance rollback {name}   # ask for the last revision that rolled out again (approved as any change)"
            ));
        }
        Some(Reason::ObjectsProgressing) => {
            problem.kind = Kind::Progressing;
            problem.summary = format!(
                "Instance {name} is installed and its objects are still getting ready; nothing has failed."
            );
            problem.next_steps.push(format!(
                "the message names what it waits for; a rollout that misses its progress deadline (the class's progressDeadline, or the Instance's) turns Healthy False (kubectl get instance {name} -w)"
            ));
        }
        Some(Reason::HealthUnknown) | Some(_) => {
            problem.kind = Kind::Progressing;
            problem.summary = format!(
                "Instance {name} is on its way: {} is {} ({}).",
                condition.type_, condition.status, condition.reason
            );
        }
        None => {}
    }
    problem
}

/// An Instance being deleted that finalizers still hold: whose they are,
/// whether their provisioner ever claimed the class, and whether removing
/// one by hand is safe (nothing installed) or leaves objects behind.
fn deletion_held(instance: &Instance, context: &Context<'_>) -> Option<Diagnosis> {
    let since = instance.metadata.deletion_timestamp.as_ref()?.0;
    let finalizers = instance.finalizers();
    if finalizers.is_empty() {
        return None;
    }
    let name = instance.name_any();
    let class = &instance.spec.class;
    let status = instance.status.clone().unwrap_or_default();
    let installed = status.object_count.unwrap_or(status.objects.len() as u64);
    let claimed = context.class.is_some_and(ProvisionerClass::is_claimed);
    let who = match context.class {
        Some(found) if !claimed => format!(
            "no provisioner with the id {} has ever claimed ProvisionerClass {class} (a typo in its spec.provisioner, or that provisioner is not installed)",
            found.spec.provisioner
        ),
        Some(_) if context.uninstall_report.is_some_and(|r| r.reason == "UninstallWaiting") => {
            "the provisioner has deleted what it installed and waits for the API server to finish deleting the CRDs named above with their custom resources; the Instance goes once they are gone. A custom resource whose own finalizer stays holds its CRD: list what remains with `kubectl get KIND -A` and check who owns those finalizers".to_owned()
        }
        Some(_) if context.uninstall_report.is_some() => {
            "the provisioner cannot delete the object named above yet and retries every few seconds: lift what refuses it (a webhook, a policy, a lost right); the Instance goes once it is deleted".to_owned()
        }
        Some(found) => format!(
            "the provisioner {} (ProvisionerClass {class}) removes it once it has uninstalled what the Instance installed; `kubectl instance describe {name}` shows what holds it in its Events (UninstallIncomplete: an object it cannot delete yet; UninstallWaiting: a CRD the API server is still deleting, and why); if there are none, check that the provisioner is running",
            found.spec.provisioner
        ),
        None if context.class_missing => {
            format!(
                "ProvisionerClass {class} does not exist, so no provisioner serves the Instance"
            )
        }
        None => format!(
            "check that ProvisionerClass {class} exists and that its provisioner is running"
        ),
    };
    let remove = format!(
        "kubectl patch instance {name} --type merge -p '{{\"metadata\":{{\"finalizers\":null}}}}'"
    );
    let mut next_steps = vec![who];
    if installed == 0 {
        next_steps.push(format!(
            "its status lists no installed objects, so removing the finalizer is safe: {remove}"
        ));
    } else if context.uninstall_report.is_some() {
        next_steps.push(format!(
            "removing the finalizer by hand ({remove}) leaves what remains of its {installed} objects behind, no longer anyone's"
        ));
    } else {
        next_steps.push(format!(
            "it installed {installed} objects: start its provisioner so it removes them; removing the finalizer by hand ({remove}) leaves them running"
        ));
    }
    let summary = format!(
        "Instance {name} is being deleted and is held by {}: {}.",
        if finalizers.len() == 1 {
            "a finalizer"
        } else {
            "finalizers"
        },
        finalizers.join(", ")
    );
    Some(Diagnosis {
        instance: name,
        state: Kind::DeletionHeld,
        summary: summary.clone(),
        problems: vec![Problem {
            kind: Kind::DeletionHeld,
            summary,
            condition: String::new(),
            status: String::new(),
            reason: String::new(),
            message: match context.uninstall_report {
                Some(report) => format!("{}: {}", report.reason, report.message),
                None => format!(
                    "deletion requested; waiting for finalizers {}",
                    finalizers.join(", ")
                ),
            },
            since,
            bundle: Some(instance.spec.bundle.name.clone()),
            refs: Vec::new(),
            objects: Vec::new(),
            next_steps,
        }],
        approved: None,
    })
}

fn not_reconciled(instance: &Instance, context: &Context<'_>) -> Diagnosis {
    let name = instance.name_any();
    let class = &instance.spec.class;
    let step = match (context.class, context.class_missing) {
        (Some(found), _) if !found.is_claimed() => format!(
            "no provisioner with the id {} has ever claimed ProvisionerClass {class}: fix a typo in its spec.provisioner, or install that provisioner (a running provisioner claims its classes in status.claimed)",
            found.spec.provisioner
        ),
        (Some(found), _) => format!(
            "check that the provisioner {} (named by ProvisionerClass {class}) is running; it writes conditions within seconds",
            found.spec.provisioner
        ),
        (None, true) => format!(
            "ProvisionerClass {class} does not exist: create it, or point spec.class at an existing one (kubectl get provisionerclasses)"
        ),
        (None, false) => format!(
            "check that ProvisionerClass {class} exists and that its provisioner is running"
        ),
    };
    let summary = format!("No provisioner has acted on Instance {name} yet.");
    let created = instance
        .creation_timestamp()
        .map(|time| time.0)
        .unwrap_or_else(Timestamp::now);
    Diagnosis {
        instance: name.clone(),
        state: Kind::NotReconciled,
        summary: summary.clone(),
        problems: vec![Problem {
            kind: Kind::NotReconciled,
            summary,
            condition: String::new(),
            status: String::new(),
            reason: String::new(),
            message: "the Instance has no status conditions".to_owned(),
            since: created,
            bundle: Some(instance.spec.bundle.name.clone()),
            refs: Vec::new(),
            objects: Vec::new(),
            next_steps: vec![step],
        }],
        approved: None,
    }
}

/// The Bundle's refs: from the Bundle object, else from the embedded spec.
fn refs(instance: &Instance, bundle: Option<&Bundle>) -> Vec<String> {
    bundle
        .map(|bundle| bundle.spec.refs.clone())
        .or_else(|| {
            instance
                .spec
                .bundle
                .spec
                .as_ref()
                .map(|spec| spec.refs.clone())
        })
        .unwrap_or_default()
}

/// Next steps for what the trust model refuses, by the cause the runtime
/// wrote: an object that is someone else's, a Bundle another Instance owns,
/// content that changed at its source, an internal address, an approval of
/// other content, a requester record no webhook sealed.
fn trust_steps(cause: Option<&Cause>, instance: &str) -> Option<Vec<String>> {
    let step = match cause?.kind {
        CauseKind::ObjectNotManaged => "an object the Bundle holds already exists and Pakket never takes one over silently: someone who may write it hands it over with the `kubectl annotate` command above, or remove it from the Bundle".to_owned(),
        CauseKind::ObjectOfAnotherInstance => "an object can have one owner: remove it from one of the two Bundles, or delete the other Instance (deletionPolicy: Orphan keeps it running) and adopt it".to_owned(),
        CauseKind::BundleOfAnotherInstance => format!(
            "name a Bundle of your own in spec.bundle.name of Instance {instance}"
        ),
        CauseKind::ContentChangedAtSource => "the source now serves other bytes than the Bundle pinned; create a new Bundle for the new content and have it approved".to_owned(),
        CauseKind::InternalAddress => "the ref points at an internal address; publish the content where the provisioner may fetch it, or ask an admin to set allowInternalAddresses: true on the class".to_owned(),
        CauseKind::ApprovalOfOtherContent => format!(
            "the approval covered other content; review the new content (kubectl instance describe {instance}) and approve it again"
        ),
        CauseKind::RequesterUnsealed => "no class policy approves an Instance whose requester record Pakket's webhook did not seal for its spec, and the provisioner reads none of its ConfigMaps; check that the webhooks run, then write the Instance again".to_owned(),
        CauseKind::PolicyTrial | CauseKind::PolicyTrialFailed => format!(
            "Instance {instance} is a policy trial ({}): it is never approved; remove the annotation to install it",
            pakket_api::POLICY_TRIAL_ANNOTATION
        ),
        CauseKind::ContentInvalid
        | CauseKind::PolicyRefused
        | CauseKind::PolicyAsksPerson
        | CauseKind::ObjectsUnhealthy => return None,
    };
    Some(vec![step])
}

fn unpack_steps(
    instance: &Instance,
    bundle: Option<&Bundle>,
    cause: Option<&Cause>,
) -> Vec<String> {
    let name = &instance.spec.bundle.name;
    if bundle.is_none() && instance.spec.bundle.spec.is_none() {
        return vec![format!(
            "create Bundle {name}, or embed its spec in the Instance's spec.bundle.spec"
        )];
    }
    let content_invalid = cause.is_some_and(|cause| cause.kind == CauseKind::ContentInvalid);
    let first = if content_invalid {
        "the content was fetched, and it is the content that is wrong: fix it where it is built (the file and line are above), publish it under a new tag or digest, and install that as a new Bundle".to_owned()
    } else {
        "make each ref reachable from the provisioner (registry up, image pushed, credentials); it retries on its own, waiting up to a minute between tries".to_owned()
    };
    vec![
        first,
        format!(
            "Bundle specs are immutable: to use other content, create a new Bundle and point the Instance's spec.bundle.name at it (kubectl get bundle {name} -o yaml shows the current one)"
        ),
    ]
}

/// One unhealthy object as people read it: `Kind/ns/name is not Available`.
fn object_in_words(object: &CauseObject) -> String {
    match &object.problem {
        Some(problem) => format!("{} {problem}", object.object),
        None => object.object.clone(),
    }
}

/// `kubectl describe kind [-n namespace] name` for `Kind/ns/name`.
fn describe_command(reference: &str) -> Option<String> {
    let parts: Vec<&str> = reference.split('/').collect();
    let command = match parts.as_slice() {
        [kind, namespace, name] => format!(
            "kubectl describe {} -n {namespace} {name}",
            kind.to_lowercase()
        ),
        [kind, name] => format!("kubectl describe {} {name}", kind.to_lowercase()),
        _ => return None,
    };
    Some(command)
}

/// The diagnosis as paragraphs.
pub fn render(diagnosis: &Diagnosis, now: Timestamp) -> String {
    let mut text = String::new();
    if diagnosis.problems.is_empty() {
        text.push_str(&diagnosis.summary);
        text.push('\n');
        if let Some(approved) = &diagnosis.approved {
            text.push_str(&format!("  {approved}\n"));
        }
        return text;
    }
    for (i, problem) in diagnosis.problems.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&problem.summary);
        text.push('\n');
        if !problem.condition.is_empty() {
            text.push_str(&format!(
                "  {}={} ({}) for {}:\n",
                problem.condition,
                problem.status,
                problem.reason,
                age::since(problem.since, now)
            ));
        }
        for line in problem.message.lines() {
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
        if !problem.refs.is_empty() {
            text.push_str(&format!(
                "  Bundle {} reads from:\n",
                problem.bundle.as_deref().unwrap_or("?")
            ));
            for reference in &problem.refs {
                text.push_str(&format!("    {reference}\n"));
            }
        }
        if !problem.objects.is_empty() {
            text.push_str("  Not healthy:\n");
            for object in &problem.objects {
                text.push_str(&format!("    - {object}\n"));
            }
        }
        if !problem.next_steps.is_empty() {
            text.push_str("  Next:\n");
            for step in &problem.next_steps {
                text.push_str(&format!("    {step}\n"));
            }
        }
    }
    text
}

/// Explains Instance `name`.
pub async fn run(
    client: &kube::Client,
    name: &str,
    format: Option<Format>,
    server: Option<&crate::resolver::Server<'_>>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instance = lookup::instance(client, name).await?;
    // The Bundle and class only add detail: a caller who may read Instances
    // but not Bundles or classes still gets the diagnosis.
    let bundle = lookup::bundle_of(client, &instance).await.ok().flatten();
    let class = lookup::class(client, &instance.spec.class).await;
    let class_missing = matches!(class, Ok(None));
    let class = class.ok().flatten();
    // Only an Instance being deleted has an uninstall to report on; Events
    // only add detail, so a caller who may not read them is not refused.
    let events = if instance.metadata.deletion_timestamp.is_some() {
        crate::events::for_instance(client, name)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let since = instance.metadata.deletion_timestamp.as_ref().map(|t| t.0);
    let uninstall_report = events.iter().rev().find(|event| {
        UNINSTALL_REPORTS.contains(&event.reason.as_str())
            && event.time.zip(since).is_none_or(|(at, since)| at >= since)
    });
    let context = Context {
        bundle: bundle.as_ref(),
        class: class.as_ref(),
        class_missing,
        uninstall_report,
    };
    let mut diagnosis = diagnose(&instance, &context);
    if let Some(server) = server {
        ask_catalogs(client, server, &instance, bundle.as_ref(), &mut diagnosis).await;
    }
    match format {
        Some(format) => output::print(&diagnosis, format, out),
        None => {
            out.write_all(render(&diagnosis, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// Adds the resolver's advice to each dependency problem.
async fn ask_catalogs(
    client: &kube::Client,
    server: &crate::resolver::Server<'_>,
    instance: &Instance,
    bundle: Option<&Bundle>,
    diagnosis: &mut Diagnosis,
) {
    let about_dependencies = |problem: &Problem| {
        problem.kind == Kind::DependencyConflict
            || problem.reason == Reason::DependenciesMissing.as_str()
    };
    if !diagnosis.problems.iter().any(about_dependencies) {
        return;
    }
    let wanted = bundle
        .and_then(|bundle| bundle.status.as_ref())
        .and_then(|status| why_catalogs::package_of(&status.properties));
    let steps = why_catalogs::advise(client, server, instance, wanted).await;
    for problem in diagnosis
        .problems
        .iter_mut()
        .filter(|p| about_dependencies(p))
    {
        problem.next_steps.extend(steps.iter().cloned());
    }
}

#[cfg(test)]
#[path = "why_tests.rs"]
mod tests;
