//! `policy test -f INSTANCE.yaml --trial`: a request nobody has made yet,
//! rendered by its own provisioner as a policy trial.
//!
//! The CLI cannot render a provisioner's content, and inputs guessed here
//! could pass a rule that fails live. So the Instance is created as
//! written, marked [`pakket_api::POLICY_TRIAL_ANNOTATION`]: its
//! provisioner unpacks and renders it as it would the real request,
//! computes what any policy would see (and answers `userPermission()` and
//! `requesterOwns()` for its requester), keeps that as it keeps every
//! decision's inputs, and never approves it, so nothing is applied. The
//! trial Instance is deleted once read, or when anything fails.

use std::time::Duration;

use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::{Instance, Reason};
use pakket_runtime::kernel::trust::policy::DecisionRecord;

use crate::error::Error;
use crate::identity;

/// How long its provisioner has to render the trial.
const RENDER_WITHIN: Duration = Duration::from_secs(90);

/// What `decided_by` says in a trial's record (the runtime's words).
const TRIAL: &str = "a policy trial";

/// Creates `written` as a policy trial, waits for its provisioner's
/// record, and deletes it again.
pub async fn render(
    client: &kube::Client,
    written: &Instance,
    records_namespace: &str,
) -> Result<DecisionRecord, Error> {
    let mut trial = written.clone();
    trial.metadata.resource_version = None;
    trial.metadata.uid = None;
    trial.status = None;
    trial
        .annotations_mut()
        .insert(pakket_api::POLICY_TRIAL_ANNOTATION.into(), "true".into());
    let name = trial.name_any();
    let instances: Api<Instance> = Api::all(client.clone());
    if let Err(source) = instances.create(&PostParams::default(), &trial).await {
        return Err(identity::refused(
            client,
            source,
            "create instances",
            "a policy trial creates the Instance for a moment (it is never applied); ask an admin for create and delete on instances, and use on its class",
        )
        .await);
    }
    let read = wait_for_record(client, &instances, &name, written, records_namespace).await;
    // Whatever happened, the trial goes: it never applied anything.
    let _ = instances.delete(&name, &DeleteParams::default()).await;
    read
}

async fn wait_for_record(
    client: &kube::Client,
    instances: &Api<Instance>,
    name: &str,
    written: &Instance,
    records_namespace: &str,
) -> Result<DecisionRecord, Error> {
    let started = std::time::Instant::now();
    loop {
        if let Ok(record) = super::read_record(client, records_namespace, name).await
            && record.decided_by == TRIAL
            && record.inputs.bundle.name == written.spec.bundle.name
        {
            return Ok(record);
        }
        let said = instances
            .get_opt(name)
            .await
            .ok()
            .flatten()
            .and_then(|instance| failed_trial(&instance));
        if let Some(why) = said {
            return Err(Error::Config(format!(
                "policy trial Instance {name}: {why}"
            )));
        }
        if started.elapsed() > RENDER_WITHIN {
            return Err(Error::Config(format!(
                "policy trial Instance {name}: no provisioner rendered it within {} s; check that the provisioner of class {} runs (`kubectl instance why {name}` while it exists), then try again",
                RENDER_WITHIN.as_secs(),
                written.spec.class
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Why a trial cannot give a record: content that does not unpack or
/// render, or inputs its provisioner could not compute (told by the
/// runtime's typed cause, in the condition's words).
fn failed_trial(instance: &Instance) -> Option<String> {
    let status = instance.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| {
            let cause = pakket_api::cause::cause_of(&status.causes, &c.type_, &c.reason);
            let unusable = [Reason::UnpackFailed, Reason::RenderFailed]
                .iter()
                .any(|reason| reason.as_str() == c.reason);
            c.status == "False" && unusable
                || cause.is_some_and(|cause| cause.kind == pakket_api::CauseKind::PolicyTrialFailed)
        })
        .map(|c| format!("{} ({}): {}", c.type_, c.reason, c.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(kind: &str, reason: &str) -> Instance {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "t"},
            "spec": {"class": "c", "bundle": {"name": "b"}},
            "status": {
                "conditions": [{"type": "Approved", "status": "False", "reason": reason,
                    "message": "a policy trial: why", "lastTransitionTime": "2026-11-29T10:00:00Z"}],
                "causes": [{"type": "Approved", "reason": reason, "kind": kind}],
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_trial_fails_by_its_typed_cause_not_its_words() {
        let failed = failed_trial(&trial("PolicyTrialFailed", "ApprovalPending"));
        assert_eq!(
            failed.as_deref(),
            Some("Approved (ApprovalPending): a policy trial: why")
        );
        assert_eq!(failed_trial(&trial("PolicyTrial", "ApprovalPending")), None);
        // A cause written for the condition's earlier reason says nothing.
        let mut stale = trial("PolicyTrialFailed", "ApprovalPending");
        stale.status.as_mut().unwrap().causes[0].reason = "Earlier".into();
        assert_eq!(failed_trial(&stale), None);
    }
}
