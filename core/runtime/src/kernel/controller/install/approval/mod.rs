//! The approval step: the class's policy, or a person with the `approve`
//! verb, decides on exactly this request: the content (Bundle and digest),
//! the Instance's generation, and everything else the decision key names
//! ([`decision_key`]: class, policy, requester, config, the objects it
//! writes and what it deletes). Any change to them is a new request, judged
//! anew by the class's current policy; only a re-render of the material
//! Pakket issues itself stays approved, and says so.

mod policy;
mod request;

use kube::ResourceExt;
use pakket_api::condition::ConditionStatus;
use pakket_api::{ApprovalState, ApprovedContent};
use pakket_api::{Cause, CauseKind, Instance, ProvisionerClass, Reason};

use super::super::context::Context;
use super::super::report::Report;
use super::installed::{live_running, previous_objects, running_revision};
use super::*;
use crate::apply;
use crate::approval::{Approval, ApprovalRequest};
use crate::class_parameters;
use crate::provisioner::Provisioner;
use crate::trust::decision_key::{self, Cover};
pub(super) use request::Proposed;
use request::{Decided, WAITING, Waits, set_pending, set_pending_because};

/// Whether `content` may be installed: when it waits, the `Approved`
/// condition says why (and the plan, that nothing is applied).
pub(super) async fn step<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> super::plan::Approval {
    if let Some((message, retry)) =
        approve(instance, class, proposed, content, context, report).await
    {
        return super::plan::Approval::Waiting { message, retry };
    }
    report.status.pending_request = None;
    super::plan::Approval::Approved
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

/// Decides approval of exactly this request: `content` (this Bundle at
/// this digest) for this generation of the Instance, with everything else
/// [`decision_key`] names. `None` when it may be installed; otherwise why
/// it waits and when to ask again (the `Approved` condition and
/// `status.approval` are set accordingly).
///
/// What decides is [`ApprovalState`], the one definition the admission
/// webhook guards: a person's approval holds for the request it names
/// (the content and generation it shows, and what the runtime recorded
/// it covers at first use) and for no other; a denial stands until
/// someone with `approve` changes it. Any change to what was judged is a
/// new request, judged anew by the class's current policy.
async fn approve<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Waits {
    if is_policy_trial(instance) {
        return policy::trial(instance, class, proposed, content, context, report).await;
    }
    let state = ApprovalState::of(instance);
    // A person's decision comes first, whatever the class says.
    if state.is_denied() {
        return Some(denied(instance, report));
    }
    let judged = match judge(instance, class, proposed, context, report).await {
        Ok(judged) => judged,
        Err(why) => {
            set_pending(
                report,
                format!(
                    "what the change would delete could not be read ({why}); nothing is applied, trying again"
                ),
            );
            return Some((WAITING.to_owned(), Some(AFTER_INSTALL_FAILURE)));
        }
    };
    // What a person who approves now approves (`kubectl instance approve`
    // copies it); cleared once the request is approved.
    report.status.pending_request = Some(judged.clone());
    let asking = Asking {
        instance,
        class,
        proposed,
        content,
        context,
        state,
        judged,
        generation: instance.metadata.generation.unwrap_or_default(),
    };
    if asking.state.by_person() && asking.by_person(report) {
        return None;
    }
    match asking.policy(report) {
        Ok(policy) => asking.by_policy(policy, report).await,
        Err(waits) => waits,
    }
}

/// Whether `instance` is a policy trial ([`pakket_api::POLICY_TRIAL_ANNOTATION`]).
fn is_policy_trial(instance: &Instance) -> bool {
    instance
        .annotations()
        .get(pakket_api::POLICY_TRIAL_ANNOTATION)
        .is_some_and(|value| value == "true")
}

/// The words for a request a person denied: it stays denied until someone
/// with `approve` changes that.
fn denied(instance: &Instance, report: &Report) -> (String, Option<Duration>) {
    let name = instance.name_any();
    let message = report
        .approval()
        .map(|c| c.message.clone())
        .unwrap_or_default();
    (
        format!(
            "approval was denied ({message}); nothing is applied. An approver can run `kubectl instance approve {name}`"
        ),
        None,
    )
}

/// A digest as people compare it: the algorithm and 12 hex digits.
pub(super) fn short_digest(digest: &str) -> &str {
    let end = digest.find(':').map_or(12, |colon| colon + 13);
    digest.get(..end).unwrap_or(digest)
}

/// One request being decided: the content, as judged, for this generation.
struct Asking<'a, P> {
    instance: &'a Instance,
    class: &'a ProvisionerClass,
    proposed: Proposed<'a>,
    content: &'a ApprovedContent,
    context: &'a Context<P>,
    state: ApprovalState,
    judged: pakket_api::Judged,
    generation: i64,
}

impl<P: Provisioner> Asking<'_, P> {
    /// How the approval on record covers this request.
    fn cover(&self) -> Option<Cover> {
        self.state.content.as_ref().map(|approved| {
            decision_key::cover(
                approved,
                &self.content.bundle,
                &self.content.digest,
                self.generation,
                &self.judged,
            )
        })
    }

    /// Whether a person's approval holds for this request (the request the
    /// person reviewed, this generation and content, is recorded at first
    /// use, so that any later change is seen).
    fn by_person(&self, report: &mut Report) -> bool {
        match self.cover() {
            Some(Cover::Covered) => {
                rerendered_issued_material(self.instance, self.content, self.context, report);
                true
            }
            Some(Cover::Bind) => {
                if let Some(approval) = report.status.approval.as_mut() {
                    approval.rendered = self.content.rendered.clone();
                    approval.judged = Some(self.judged.clone());
                }
                true
            }
            Some(Cover::Changed(_)) | None => false,
        }
    }

    /// The class's policy. An `approval` that is not a string must not
    /// fall back to AllowAll: a class meant to be gated would install
    /// everything.
    fn policy(&self, report: &mut Report) -> Result<&'_ str, Waits> {
        let parameters = self.class.spec.parameters.as_ref();
        match class_parameters::string(parameters, "approval") {
            Ok(policy) => Ok(policy.unwrap_or("AllowAll")),
            Err(error) => {
                let (class, name) = (self.class.name_any(), self.instance.name_any());
                set_pending(
                    report,
                    format!(
                        "ProvisionerClass {class}: {error}; fix the class, or run `kubectl instance approve {name}`"
                    ),
                );
                Err(Some((WAITING.to_owned(), None)))
            }
        }
    }

    /// The class's `policy` decides, unless it approved this very request
    /// before (while the class keeps that policy).
    async fn by_policy(&self, policy: &str, report: &mut Report) -> Waits {
        let by_policy = format!("policy {policy}");
        if self.state.by_policy()
            && self
                .state
                .content
                .as_ref()
                .is_some_and(|approved| approved.approved_by == by_policy)
            && self.cover() == Some(Cover::Covered)
        {
            rerendered_issued_material(self.instance, self.content, self.context, report);
            return None;
        }
        if let Some(waits) = self.unrecorded(policy, report) {
            return waits;
        }
        let asked_again = asked_again(&self.state, self.content, self.generation, &self.judged);
        match policy {
            "Policy" => {
                let decided = Decided {
                    judged: &self.judged,
                    generation: self.generation,
                    asked_again: asked_again.as_deref(),
                    other_content: other_content(&self.state, self.content),
                };
                let (instance, class) = (self.instance, self.class);
                let (proposed, content) = (self.proposed, self.content);
                policy::decide(
                    instance,
                    class,
                    proposed,
                    content,
                    decided,
                    self.context,
                    report,
                )
                .await
            }
            "AllowAll" => self.allow_all(&by_policy, report).await,
            _ => {
                self.by_provisioner(policy, &by_policy, asked_again, report)
                    .await
            }
        }
    }

    /// With a record key (every deployment has one), a policy approves
    /// only content someone asked for through Pakket's webhooks: a record
    /// the webhook sealed for this very spec. Without it (webhooks removed,
    /// or bypassed while absent), only a person approves.
    fn unrecorded(&self, policy: &str, report: &mut Report) -> Option<Waits> {
        let key = self.context.record_key.as_ref()?;
        let error = pakket_api::requester(self.instance, Some(key)).err()?;
        let (class, name) = (self.class.name_any(), self.instance.name_any());
        set_pending_because(
            report,
            format!(
                "ProvisionerClass {class} (approval: {policy}) approves only Instances whose requester Pakket's admission webhook recorded, and {error}; a person must approve: run `kubectl instance approve {name}`"
            ),
            Cause::new(CauseKind::RequesterUnsealed),
        );
        Some(Some((WAITING.to_owned(), None)))
    }

    /// Records the policy's approval of this request.
    fn approved(&self, by_policy: &str, report: &mut Report, message: String) {
        // Each decision names the content it covers, so an approval of
        // newer content never reads like the one before it.
        let message = format!(
            "{message} (Bundle {} at {})",
            self.content.bundle,
            short_digest(&self.content.digest)
        );
        report.set(Reason::ApprovedByPolicy, ConditionStatus::True, message);
        report.status.approval = Some(ApprovedContent {
            approved_by: by_policy.to_owned(),
            generation: Some(self.generation),
            judged: Some(self.judged.clone()),
            ..self.content.clone()
        });
    }

    /// `AllowAll`: approving everything never extends to running as
    /// Pakket: what would run as a Pakket ServiceAccount or in its
    /// namespace waits for a person, who sees it named.
    async fn allow_all(&self, by_policy: &str, report: &mut Report) -> Waits {
        let (class, name) = (self.class.name_any(), self.instance.name_any());
        let landing = request::landing(self.context).await;
        let effects = crate::trust::effects::Effects::of(self.proposed.objects, None, &landing);
        if let Some(why) = crate::trust::effects::runs_as_pakket(&effects) {
            set_pending(
                report,
                format!(
                    "ProvisionerClass {class} approves every Instance (approval: AllowAll), but not this: {why}; a person decides: review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`"
                ),
            );
            return Some((WAITING.to_owned(), None));
        }
        let message =
            format!("ProvisionerClass {class} approves every Instance (approval: AllowAll)");
        self.approved(by_policy, report, message);
        None
    }

    /// Any other policy is the provisioner's (`DenyAll`, `UserPermission`,
    /// `Android`, its own).
    async fn by_provisioner(
        &self,
        policy: &str,
        by_policy: &str,
        asked_again: Option<String>,
        report: &mut Report,
    ) -> Waits {
        let running = self.running(policy, report).await;
        let request = ApprovalRequest {
            client: &self.context.client,
            instance: self.instance,
            class: self.class,
            policy,
            objects: self.proposed.objects,
            running: running.as_deref(),
            kinds: self.context.kinds.clone(),
            record_key: self.context.record_key.as_ref(),
        };
        let (message, retry) = match self.context.provisioner.approve(&request).await {
            Approval::Approved(message) => {
                let message = match &asked_again {
                    Some(again) => format!("{message} ({again})"),
                    None => message,
                };
                self.approved(by_policy, report, message);
                return None;
            }
            Approval::Pending { message, retry } => (message, retry),
        };
        let message = match &asked_again {
            Some(again) => format!("{message}; {again}"),
            None => message,
        };
        let unsealed =
            pakket_api::requester(self.instance, self.context.record_key.as_ref()).is_err();
        if other_content(&self.state, self.content) {
            let because = Cause::new(CauseKind::ApprovalOfOtherContent);
            set_pending_because(report, message, because);
        } else if unsealed {
            let because = Cause::new(CauseKind::RequesterUnsealed);
            set_pending_because(report, message, because);
        } else {
            set_pending(report, message);
        }
        Some((WAITING.to_owned(), retry))
    }

    /// What runs, for a policy that compares with it. Rendered here, past
    /// the early answers: an approval that already holds costs no second
    /// render on every reconcile. For the content that runs (rendered
    /// otherwise now, by a new provisioner version or a changed config),
    /// what runs is read back from the cluster: the old content rendered
    /// again by this provisioner would be the new render.
    async fn running(&self, policy: &str, report: &Report) -> Option<Vec<serde_json::Value>> {
        let content = self.content;
        let same_content = report.status.active_bundle.as_deref() == Some(content.bundle.as_str())
            && self.state.content.as_ref().is_some_and(|approved| {
                approved.bundle == content.bundle && approved.digest == content.digest
            });
        if same_content && policy == "Android" {
            live_running(self.instance, self.context).await.ok()
        } else {
            running_objects(self.instance, self.proposed.request, self.context)
        }
    }
}

/// Everything [`decision_key`] judges about this request, but the
/// ApprovalPolicy (the policy step adds it): the class, the verified
/// requester, the config, the objects (Pakket's issued material left out)
/// and what the change deletes.
async fn judge<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    context: &Context<P>,
    report: &Report,
) -> Result<pakket_api::Judged, apply::ApplyError> {
    let record = context
        .record_key
        .as_ref()
        .and_then(|key| pakket_api::requester(instance, Some(key)).ok())
        .map(|(record, _)| record);
    let issued: Vec<Vec<&'static str>> = proposed
        .objects
        .iter()
        .map(|object| context.provisioner.issued_material(object))
        .collect();
    let deletes = deletions(instance, proposed.objects, context, report).await?;
    Ok(decision_key::judged(&decision_key::Parts {
        class: &class.name_any(),
        provisioner: &class.spec.provisioner,
        parameters: class.spec.parameters.as_ref(),
        policy: None,
        requester: record
            .as_ref()
            .map(|record| (record.username.as_str(), record.groups.as_slice())),
        config: instance.spec.config.as_ref(),
        objects: proposed.objects,
        issued: &issued,
        deletes: &deletes,
    }))
}

/// What applying `objects` would delete: what the Instance installed
/// (the prune's own list, see [`previous_objects`]) that they lack.
async fn deletions<P>(
    instance: &Instance,
    objects: &[serde_json::Value],
    context: &Context<P>,
    report: &Report,
) -> Result<Vec<pakket_api::ObjectRef>, apply::ApplyError> {
    if report.status.objects.is_empty() && report.status.object_count.unwrap_or_default() == 0 {
        return Ok(Vec::new());
    }
    let mut kinds = context.kinds.clone();
    let uid = instance.uid().unwrap_or_default();
    let previous = previous_objects(&mut kinds, &report.status, &uid).await?;
    let keep: std::collections::BTreeSet<pakket_api::ObjectRef> =
        objects.iter().map(apply::reference_of).collect();
    Ok(previous
        .into_iter()
        .filter(|reference| !keep.contains(reference))
        .collect())
}

/// Whether the last approval covered other content than this request's
/// (another Bundle, or other bytes).
fn other_content(state: &ApprovalState, content: &ApprovedContent) -> bool {
    state
        .content
        .as_ref()
        .is_some_and(|earlier| earlier.bundle != content.bundle || earlier.digest != content.digest)
}

/// Why a request is judged again although something was approved for
/// this Instance: the earlier approval's content, or the parts of the
/// request that changed since. `None` when nothing was approved before.
fn asked_again(
    state: &ApprovalState,
    content: &ApprovedContent,
    generation: i64,
    judged: &pakket_api::Judged,
) -> Option<String> {
    let earlier = state.content.as_ref()?;
    if earlier.bundle != content.bundle || earlier.digest != content.digest {
        return Some(format!(
            "the last approval covered Bundle {} at {}, but the content to install is Bundle {} at {}",
            earlier.bundle, earlier.digest, content.bundle, content.digest
        ));
    }
    let by = &earlier.approved_by;
    match decision_key::cover(
        earlier,
        &content.bundle,
        &content.digest,
        generation,
        judged,
    ) {
        Cover::Changed(parts) if !parts.is_empty() => Some(format!(
            "the last approval ({by}) covered an earlier request: {} changed since, and a change is a new request, judged anew",
            decision_key::in_words(&parts)
        )),
        _ => None,
    }
}

/// Under an approval that covers the request, the full render may still
/// differ from the one approved in the material Pakket issues (a rotated
/// serving certificate): the approval stays, the record follows the
/// render, and an Event says why.
fn rerendered_issued_material<P>(
    instance: &Instance,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) {
    use kube::runtime::events::{Event, EventType};
    let Some(approval) = report.status.approval.as_mut() else {
        return;
    };
    if approval.rendered.is_none() || approval.rendered == content.rendered {
        return;
    }
    approval.rendered = content.rendered.clone();
    context.events.publish(
        instance,
        Event {
            type_: EventType::Normal,
            reason: "RerenderedIssuedMaterial".into(),
            note: Some(format!(
                "Bundle {} at {} renders to other objects than were approved only in the material Pakket issues (serving certificates it rotates), so the approval stays",
                content.bundle, content.digest
            )),
            action: "Approve".into(),
            secondary: None,
        },
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_digest_is_shortened_to_its_algorithm_and_twelve_digits() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(super::short_digest(&digest), "sha256:abababababab");
        assert_eq!(super::short_digest("sha256:ab"), "sha256:ab");
        assert_eq!(super::short_digest(""), "");
    }
}
