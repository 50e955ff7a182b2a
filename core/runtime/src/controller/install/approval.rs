//! The approval step: the class's policy, or a person with the `approve`
//! verb, decides on exactly this content (Bundle and digest); a provisioner
//! that renders approved content differently is compared with what runs,
//! and more rights wait for a person.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{ApprovalState, ApprovedContent};
use pakket_api::{Instance, ProvisionerClass, Reason};

use super::super::context::Context;
use super::super::report::Report;
use super::pivot::previous_objects;
use super::*;
use crate::apply;
use crate::approval::{Approval, ApprovalRequest};
use crate::class_parameters;
use crate::provisioner::Provisioner;
use crate::store::Digest;
use crate::trust::{
    self,
    rerender::{self, Render},
};

/// Goes on when `content` may be installed; else the `Approved` condition
/// says why it waits, and `Installed` that nothing is applied.
pub(super) async fn step<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Flow<()> {
    if let Some((waiting, retry)) =
        approve(instance, class, proposed, content, context, report).await
    {
        report.set(Reason::InstallPending, ConditionStatus::False, waiting);
        return Flow::Stop(retry.map_or_else(Action::await_change, Action::requeue));
    }
    Flow::Next(())
}

/// What an approval decides on: the objects the new content would install,
/// and how they were made (to render the running content the same way,
/// see [`running_objects`], only when a policy asks for it).
#[derive(Clone, Copy)]
pub(super) struct Proposed<'a> {
    pub objects: &'a [serde_json::Value],
    pub request: &'a crate::provisioner::ObjectsRequest<'a>,
}

/// The objects of the content `instance` runs now, rendered again from
/// the store the way they were installed, for policies that compare new
/// content with it (`Android`). `None` for a first install, when the class
/// asks for no such policy, or when the content is no longer stored (the
/// policy then asks a person, as for a first install). What runs is the
/// content last approved, when it is the active Bundle's: that record is
/// the runtime's own (the webhook lets no requester write it).
fn running_objects<P: Provisioner>(
    instance: &Instance,
    request: &crate::provisioner::ObjectsRequest<'_>,
    context: &Context<P>,
) -> Option<Vec<serde_json::Value>> {
    let compares = matches!(
        class_parameters::string(request.class_parameters, "approval"),
        Ok(Some("Android"))
    );
    if !compares {
        return None;
    }
    running_revision(instance, request, context).map(|(_, objects)| objects)
}

/// Decides approval of exactly `content` (this Bundle at this digest).
/// `None` when it may be installed; otherwise why it waits and when to ask
/// again (the `Approved` condition and `status.approval` are set
/// accordingly).
///
/// What decides is [`ApprovalState`], the one definition the admission
/// webhook guards: a person's approval holds for the content it names and
/// for no other; a denial stands until someone with `approve` changes it.
/// `AllowAll` approves any content; other policies are the provisioner's
/// ([`Provisioner::approve`]), and what a policy approved holds for that
/// content while the class keeps that policy.
async fn approve<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Option<(String, Option<Duration>)> {
    let name = instance.name_any();
    let class_name = class.name_any();
    let state = ApprovalState::of(instance);
    let waiting = "nothing is applied before approval".to_owned();
    // A person's decision comes first, whatever the class says.
    if state.is_denied() {
        let message = report
            .approval()
            .map(|c| c.message.clone())
            .unwrap_or_default();
        return Some((
            format!(
                "approval was denied ({message}); nothing is applied. An approver can run `kubectl instance approve {name}`"
            ),
            None,
        ));
    }
    // The approved content, rendered to other objects than were approved.
    match rerender::compare(state.content.as_ref(), content) {
        Render::Changed => {
            if let Some(waiting) =
                rerendered(instance, class, proposed, &state, content, context, report).await
            {
                return Some(waiting);
            }
        }
        Render::Unrecorded if state.by_person() || state.by_policy() => {
            // Approved before the render was recorded (by a person, with
            // `kubectl instance approve`): what installs under it now is
            // what it covers from here on.
            if let Some(approval) = report.status.approval.as_mut() {
                approval.rendered = content.rendered.clone();
            }
        }
        Render::Unrecorded | Render::Same | Render::OtherContent => {}
    }
    if state.by_person() && state.covers(&content.bundle, &content.digest) {
        return None;
    }
    // An `approval` that is not a string must not fall back to AllowAll:
    // a class meant to be gated would install everything.
    let policy = match class_parameters::string(class.spec.parameters.as_ref(), "approval") {
        Ok(policy) => policy.unwrap_or("AllowAll"),
        Err(error) => {
            set_pending(
                report,
                format!(
                    "ProvisionerClass {class_name}: {error}; fix the class, or run `kubectl instance approve {name}`"
                ),
            );
            return Some((waiting, None));
        }
    };
    let by_policy = format!("policy {policy}");
    // A policy's approval holds for the content it approved, while the
    // class keeps that policy.
    if state.by_policy()
        && state.covers(&content.bundle, &content.digest)
        && state
            .content
            .as_ref()
            .is_some_and(|approved| approved.approved_by == by_policy)
    {
        return None;
    }
    // With a record key (every deployment has one), a policy approves only
    // content someone asked for through Pakket's webhooks: a record the
    // webhook sealed for this very spec. Without it (webhooks removed, or
    // bypassed while absent), only a person approves.
    if let Some(key) = &context.record_key
        && let Err(error) = pakket_api::requester(instance, Some(key))
    {
        set_pending(
            report,
            format!(
                "ProvisionerClass {class_name} (approval: {policy}) approves only Instances whose requester Pakket's admission webhook recorded, and {error}; a person must approve: run `kubectl instance approve {name}`"
            ),
        );
        return Some((waiting, None));
    }
    let approved = |report: &mut Report, message: String| {
        report.set(Reason::ApprovedByPolicy, ConditionStatus::True, message);
        report.status.approval = Some(ApprovedContent {
            approved_by: by_policy.clone(),
            ..content.clone()
        });
    };
    if policy == "Policy" {
        return super::policy::decide(instance, class, proposed, content, context, report).await;
    }
    if policy == "AllowAll" {
        approved(
            report,
            format!("ProvisionerClass {class_name} approves every Instance (approval: AllowAll)"),
        );
        return None;
    }
    // Rendered here, past the early answers: an approval that already
    // holds costs no second render on every reconcile. For the approved
    // content itself (rendered otherwise now, see `rerendered`), what runs
    // is read back from the cluster: the old content rendered again by
    // this provisioner would be the new render.
    let same_content = state.content.as_ref().is_some_and(|approved| {
        approved.bundle == content.bundle && approved.digest == content.digest
    });
    let running = if same_content && policy == "Android" {
        live_running(instance, context).await.ok()
    } else {
        running_objects(instance, proposed.request, context)
    };
    let request = ApprovalRequest {
        client: &context.client,
        instance,
        class,
        policy,
        objects: proposed.objects,
        running: running.as_deref(),
        kinds: context.kinds.clone(),
        record_key: context.record_key.as_ref(),
    };
    let (message, retry) = match context.provisioner.approve(&request).await {
        Approval::Approved(message) => {
            approved(report, message);
            return None;
        }
        Approval::Pending { message, retry } => (message, retry),
    };
    // An earlier approval of other content: say why it is asked again
    // (the record stays until a new approval replaces it, so every later
    // pass says the same).
    let message = match &state.content {
        Some(earlier) if earlier.bundle != content.bundle || earlier.digest != content.digest => {
            format!(
                "{message}; the last approval covered Bundle {} at {}, but the content to install is Bundle {} at {}",
                earlier.bundle, earlier.digest, content.bundle, content.digest
            )
        }
        _ => message,
    };
    set_pending(report, message);
    Some((waiting, retry))
}

/// Sets `ApprovalPending`, keeping the condition as it is when it already
/// says the same (so its lastTransitionTime and Event are not renewed).
/// The approved content renders to other objects now (an upgraded
/// provisioner, a changed class parameter). Under `AllowAll`, or when the
/// new objects ask for no right beyond what runs on the cluster (read back,
/// not rendered again: a new render of the old content is the new render),
/// the approval carries over to the new render and an Event says so
/// (`None`). Otherwise it waits for a person, naming the new rights; a
/// person's `kubectl instance approve` then covers the new render.
async fn rerendered<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    state: &ApprovalState,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Option<(String, Option<Duration>)> {
    use kube::runtime::events::{Event, EventType};
    let name = instance.name_any();
    let approved_by = state
        .content
        .as_ref()
        .map(|approved| approved.approved_by.clone())
        .unwrap_or_default();
    let allows_all = matches!(
        class_parameters::string(class.spec.parameters.as_ref(), "approval"),
        Ok(None | Some("AllowAll"))
    );
    let beyond = if allows_all {
        Ok(Vec::new())
    } else {
        match live_running(instance, context).await {
            Ok(live) => trust::approval::rights_beyond(&context.client, proposed.objects, &live)
                .await
                .map_err(|error| apply::api_message(&error)),
            Err(error) => Err(error.to_string()),
        }
    };
    match beyond {
        Ok(rights) if rights.is_empty() => {
            report.status.approval = Some(ApprovedContent {
                approved_by,
                ..content.clone()
            });
            context.events.publish(
                instance,
                Event {
                    type_: EventType::Normal,
                    reason: "Rerendered".into(),
                    note: Some(format!(
                        "Bundle {} at {} renders to other objects than were approved ({}); they ask for no right beyond what runs, so the approval carries over",
                        content.bundle,
                        content.digest,
                        content.rendered.as_deref().unwrap_or_default()
                    )),
                    action: "Approve".into(),
                    secondary: None,
                },
            );
            None
        }
        Ok(rights) => {
            let shown: Vec<&str> = rights.iter().take(8).map(String::as_str).collect();
            let message = format!(
                "Bundle {} at {} was approved ({approved_by}), but it renders to other objects now (a new provisioner version?), and they ask for {} right(s) the running objects do not hold: {}{}; a person decides: review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`",
                content.bundle,
                content.digest,
                rights.len(),
                shown.join("; "),
                if rights.len() > shown.len() {
                    "; ..."
                } else {
                    ""
                }
            );
            context.events.publish(
                instance,
                Event {
                    type_: EventType::Warning,
                    reason: "RerenderedWithNewRights".into(),
                    note: Some(message.chars().take(1000).collect()),
                    action: "Approve".into(),
                    secondary: None,
                },
            );
            set_pending(report, message);
            // What waits for a person is this render: a person's approval
            // of the content from now on covers it (and the class's policy,
            // asked again, compares it with what runs).
            if let Some(approval) = report.status.approval.as_mut() {
                approval.rendered = content.rendered.clone();
            }
            Some(("nothing is applied before approval".to_owned(), None))
        }
        Err(error) => {
            set_pending(
                report,
                format!(
                    "Bundle {} at {} renders to other objects than were approved, and what runs could not be read to compare them ({error}); trying again, or a person approves: `kubectl instance approve {name}`",
                    content.bundle, content.digest
                ),
            );
            Some((
                "nothing is applied before approval".to_owned(),
                Some(AFTER_INSTALL_FAILURE),
            ))
        }
    }
}

/// What `instance` runs now, read back from the cluster: the objects it
/// installed ([`previous_objects`]) as they are.
async fn live_running<P>(
    instance: &Instance,
    context: &Context<P>,
) -> Result<Vec<serde_json::Value>, apply::ApplyError> {
    let mut kinds = context.kinds.clone();
    let status = instance.status.clone().unwrap_or_default();
    let uid = instance.uid().unwrap_or_default();
    let refs = previous_objects(&mut kinds, &status, &uid).await?;
    live_objects(&mut kinds, &refs).await
}

/// The objects `refs` as they are on the cluster now (those that exist).
async fn live_objects(
    kinds: &mut apply::Kinds,
    refs: &[pakket_api::ObjectRef],
) -> Result<Vec<serde_json::Value>, apply::ApplyError> {
    let mut live = Vec::with_capacity(refs.len());
    for reference in refs {
        let api = kinds.api(reference).await?;
        let found =
            api.get_opt(&reference.name)
                .await
                .map_err(|error| apply::ApplyError::Refused {
                    object: reference.to_string(),
                    message: apply::api_message(&error),
                })?;
        if let Some(object) = found
            && let Ok(value) = serde_json::to_value(object)
        {
            live.push(value);
        }
    }
    Ok(live)
}

pub(super) fn set_pending(report: &mut Report, message: String) {
    let same = report
        .approval()
        .is_some_and(|c| c.reason == Reason::ApprovalPending.as_str() && c.message == message);
    if !same {
        report.set(Reason::ApprovalPending, ConditionStatus::False, message);
    }
}

/// The Bundle `instance` runs now and its objects, rendered again from the
/// store the way they were installed (see [`running_objects`]); `None`
/// when nothing is approved for the active Bundle or its content is no
/// longer stored.
pub(super) fn running_revision<P: Provisioner>(
    instance: &Instance,
    request: &crate::provisioner::ObjectsRequest<'_>,
    context: &Context<P>,
) -> Option<(String, Vec<serde_json::Value>)> {
    let status = instance.status.as_ref()?;
    let approved = status.approval.as_ref()?;
    if status.active_bundle.as_deref() != Some(approved.bundle.as_str()) {
        return None;
    }
    let dir = context.store.get(&Digest::parse(&approved.digest).ok()?)?;
    let running = crate::provisioner::ObjectsRequest {
        content: &dir,
        ..*request
    };
    let objects = context.provisioner.objects(&running).ok()?;
    Some((approved.bundle.clone(), objects))
}
