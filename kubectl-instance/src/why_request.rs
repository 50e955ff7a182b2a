//! `kubectl instance why operatorrequest/NAMESPACE/NAME`: where a namespace
//! owner's request stands and what to do next.
//!
//! Read from the request's status alone, which only pakket-resolveset
//! writes (the RBAC deploy/ ships gives users `get` on
//! `operatorrequests/status`, nothing more): `Accepted` says whether an
//! Operator was written for it or why not, and the installing Instance's
//! `Approved`, `Installed` and `Healthy` conditions are mirrored there, so
//! the requester, who may not read cluster-scoped Instances, gets the whole
//! answer.

use std::io::Write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use pakket_operators_api::OperatorRequest;
use pakket_operators_api::request::InstallReason;
use serde::Serialize;

use crate::error::Error;
use crate::operator_request;
use crate::output::{self, Format};

/// The answer for one request.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDiagnosis {
    /// `OperatorRequest NAMESPACE/NAME`.
    pub request: String,
    /// One sentence: where it stands.
    pub summary: String,
    /// The conditions behind it, one a line.
    pub reasons: Vec<String>,
    /// What to do next, and who does it, if anything.
    pub next: Option<String>,
}

/// Prints the diagnosis of `operatorrequest/NAMESPACE/NAME` (`named` is
/// what follows the prefix).
pub async fn run(
    client: &kube::Client,
    named: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let request = operator_request::read(client, named).await?;
    let diagnosis = diagnose(&request);
    match format {
        Some(format) => output::print(&diagnosis, format, out),
        None => output::explanation(
            out,
            &diagnosis.request,
            &diagnosis.summary,
            &diagnosis.reasons,
            diagnosis.next.as_deref(),
        ),
    }
}

/// The diagnosis, from the request as read.
pub fn diagnose(request: &OperatorRequest) -> RequestDiagnosis {
    let namespace = request.metadata.namespace.as_deref().unwrap_or_default();
    let name = request.metadata.name.as_deref().unwrap_or_default();
    let named = format!("{}{namespace}/{name}", operator_request::PREFIX);
    let status = request.status.clone().unwrap_or_default();
    let condition = |kind: &str| status.conditions.iter().find(|c| c.type_ == kind);
    let mut reasons: Vec<String> = [
        "Accepted",
        "Approved",
        "Installed",
        "Healthy",
        "ConfigConflict",
        "CatalogUnavailable",
    ]
    .into_iter()
    .filter_map(condition)
    .map(|c| format!("{} is {} ({}): {}", c.type_, c.status, c.reason, c.message))
    .collect();
    if let Some((observed, generation)) = stale_generation(request) {
        reasons.push(format!(
            "this describes generation {observed}; the request is at {generation}, which pakket-resolveset has not judged yet"
        ));
    }
    let (summary, next) = match condition("Accepted") {
        None => (
            "not judged yet: pakket-resolveset writes Accepted when it sees the request".to_owned(),
            Some("wait a moment; if nothing comes, an admin checks that pakket-resolveset runs (its leader judges requests)".to_owned()),
        ),
        Some(accepted) if accepted.status != "True" => refused(accepted),
        Some(_) => accepted(&status, &named, &condition),
    };
    RequestDiagnosis {
        request: format!("OperatorRequest {namespace}/{name}"),
        summary,
        reasons,
        next,
    }
}

/// `(observed, current)` generations when the status describes an older
/// generation of the request than the one it is at.
pub fn stale_generation(request: &OperatorRequest) -> Option<(i64, i64)> {
    let observed = request.status.as_ref()?.observed_generation?;
    let generation = request.metadata.generation?;
    (observed < generation).then_some((observed, generation))
}

/// A request that was not accepted: nothing was written for it, and who
/// can change that.
fn refused(accepted: &Condition) -> (String, Option<String>) {
    let next = match accepted.reason.as_str() {
        "NotYourNamespace" => {
            "ask for a namespace you own (one where you may create RoleBindings), or ask its admin for that right".to_owned()
        }
        "InvalidInstallMode" => {
            "change spec.installMode or spec.installNamespace as the condition says".to_owned()
        }
        "NoRequester" => {
            "create the request again while Pakket's webhooks run (they record who asked)".to_owned()
        }
        "Withdrawn" => {
            "what was written for it was deleted when you lost a namespace it runs in or watches; its admin gives you back the right to create RoleBindings there, or delete the request".to_owned()
        }
        "NameTaken" => format!(
            "another object holds the name; its owner or a cluster admin removes it, or make the request again under a new name: {}",
            accepted.message
        ),
        "NoInputClass" | "NoRecordKey" => {
            format!("a cluster admin acts: {}", accepted.message)
        }
        _ => accepted.message.clone(),
    };
    let what = if accepted.reason == "Withdrawn" {
        "what was written for it was withdrawn"
    } else {
        "nothing was written for it"
    };
    (format!("refused ({}): {what}", accepted.reason), Some(next))
}

/// An accepted request: where its operator's install stands.
fn accepted<'a>(
    status: &pakket_operators_api::request::OperatorRequestStatus,
    named: &str,
    condition: &impl Fn(&str) -> Option<&'a Condition>,
) -> (String, Option<String>) {
    let operator = status.operator.as_deref().unwrap_or("(not named yet)");
    let instance = status.instance.as_deref();
    // The requester may not read cluster-scoped Instances: the conditions
    // above are her whole answer, and a pointer to the Instance is said
    // to be an admin's.
    let why_instance = |instance: &str| {
        format!(
            "the conditions above say what it waits for; a cluster admin sees more with `kubectl instance why {instance}`"
        )
    };
    let installed = condition("Installed");
    let healthy = condition("Healthy");
    let approved = condition("Approved");
    let version = status
        .installed_version
        .as_deref()
        .map_or(String::new(), |v| format!(" {v}"));
    if healthy.is_some_and(|c| c.status == "True") {
        return (
            format!("installed{version} and healthy, through Operator {operator}"),
            None,
        );
    }
    if installed.is_some_and(|c| c.status == "True") {
        let next = instance.map(why_instance);
        return (
            format!("installed{version}, not healthy yet, through Operator {operator}"),
            next,
        );
    }
    if let Some(nothing) = installed
        .filter(|c| InstallReason::parse(&c.reason).is_some_and(InstallReason::nothing_installs))
    {
        return (
            format!("accepted, but nothing installs for it ({})", nothing.reason),
            Some(nothing.message.clone()),
        );
    }
    match (approved, instance) {
        (Some(approved), Some(instance)) if approved.reason == "ApprovalPending" => (
            format!("waits for approval of Instance {instance}, which installs it"),
            Some(format!(
                "someone who may approve Instances reviews it (`kubectl instance describe {instance}`), then runs `kubectl instance approve {named}`"
            )),
        ),
        (Some(approved), _) if approved.reason == InstallReason::RefusedByPolicy.as_str() => (
            format!("refused by the class's policy: {}", approved.message),
            Some(
                "change the request as the rule says, or ask a cluster admin: the platform team edits the policy, or someone who may approve Instances decides"
                    .to_owned(),
            ),
        ),
        (Some(approved), _) if approved.reason == "ApprovalDenied" => (
            format!("denied: {}", approved.message),
            Some("talk to the approver; changing the request asks again".to_owned()),
        ),
        (_, None) => (
            format!("accepted; Operator {operator} has no Instance installing it yet"),
            Some(
                approved
                    .map(|c| c.message.clone())
                    .unwrap_or_else(|| "wait for pakket-resolveset to resolve it".to_owned()),
            ),
        ),
        (_, Some(instance)) => match installed.filter(|c| c.status == "False") {
            Some(failed) => (
                format!(
                    "the install failed ({}), through Instance {instance}",
                    failed.reason
                ),
                Some(why_instance(instance)),
            ),
            None => (
                format!("installing through Instance {instance}"),
                Some(why_instance(instance)),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(conditions: serde_json::Value, extra: serde_json::Value) -> OperatorRequest {
        let mut status = json!({ "conditions": conditions });
        status
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "OperatorRequest",
            "metadata": { "name": "etcd", "namespace": "shop", "generation": 1 },
            "spec": { "catalog": { "name": "operatorhubio", "package": "etcd" } },
            "status": status,
        }))
        .unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
        json!({ "type": type_, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": "2026-11-28T10:00:00Z" })
    }

    #[test]
    fn a_refused_request_says_why_and_who_acts() {
        let mine = diagnose(&request(
            json!([condition(
                "Accepted",
                "False",
                "NotYourNamespace",
                "alice may not create RoleBindings in namespace kube-system"
            )]),
            json!({}),
        ));
        assert_eq!(
            mine.summary,
            "refused (NotYourNamespace): nothing was written for it"
        );
        assert!(
            mine.next
                .unwrap()
                .starts_with("ask for a namespace you own")
        );
        assert_eq!(
            mine.reasons,
            [
                "Accepted is False (NotYourNamespace): alice may not create RoleBindings in namespace kube-system"
            ]
        );
        let admins = diagnose(&request(
            json!([condition(
                "Accepted",
                "False",
                "NameTaken",
                "Operator/request-1 exists"
            )]),
            json!({}),
        ));
        let taken = admins.next.unwrap();
        assert!(
            taken.starts_with("another object holds the name")
                && taken.ends_with("Operator/request-1 exists"),
            "{taken}"
        );
        let withdrawn = diagnose(&request(
            json!([condition(
                "Accepted",
                "False",
                "Withdrawn",
                "alice may not create RoleBindings in namespace team-a; so Operator/request-1 and Input/request-1 written for this request were deleted"
            )]),
            json!({}),
        ));
        assert_eq!(
            withdrawn.summary,
            "refused (Withdrawn): what was written for it was withdrawn"
        );
    }

    #[test]
    fn an_accepted_request_names_the_approval_it_waits_for_and_the_command() {
        let waiting = diagnose(&request(
            json!([
                condition(
                    "Accepted",
                    "True",
                    "OperatorWritten",
                    "Operator request-1 asks for it on your behalf"
                ),
                condition("Approved", "False", "ApprovalPending", "waits for a person"),
            ]),
            json!({ "operator": "request-1", "instance": "etcd-x" }),
        ));
        assert_eq!(
            waiting.summary,
            "waits for approval of Instance etcd-x, which installs it"
        );
        assert_eq!(
            waiting.next.as_deref(),
            Some(
                "someone who may approve Instances reviews it (`kubectl instance describe etcd-x`), then runs `kubectl instance approve operatorrequest/shop/etcd`"
            )
        );
        let healthy = diagnose(&request(
            json!([
                condition("Accepted", "True", "OperatorWritten", "written"),
                condition("Approved", "True", "ApprovedByPolicy", "policy"),
                condition("Installed", "True", "InstallSucceeded", "applied"),
                condition("Healthy", "True", "Healthy", "available"),
            ]),
            json!({ "operator": "request-1", "instance": "etcd-x", "installedVersion": "0.9.4" }),
        ));
        assert_eq!(
            healthy.summary,
            "installed 0.9.4 and healthy, through Operator request-1"
        );
        assert_eq!(healthy.next, None);
        assert_eq!(healthy.reasons.len(), 4);
    }

    #[test]
    fn a_request_for_a_package_another_has_says_nothing_installs_for_it() {
        let owned = "package etcd is installed once in the cluster, and another request or Operator has it, so nothing installs for this request";
        let diagnosis = diagnose(&request(
            json!([
                condition("Accepted", "True", "OperatorWritten", "written"),
                condition(
                    "Approved",
                    "Unknown",
                    "PackageOwnedByAnother",
                    "see Installed"
                ),
                condition("Installed", "False", "PackageOwnedByAnother", owned),
                condition(
                    "Healthy",
                    "Unknown",
                    "PackageOwnedByAnother",
                    "see Installed"
                ),
                condition(
                    "ConfigConflict",
                    "True",
                    "PackageOwnedByAnother",
                    "its config is not applied"
                ),
            ]),
            json!({ "operator": "request-2" }),
        ));
        assert_eq!(
            diagnosis.summary,
            "accepted, but nothing installs for it (PackageOwnedByAnother)"
        );
        assert_eq!(diagnosis.next.as_deref(), Some(owned));
        assert!(
            diagnosis
                .reasons
                .iter()
                .any(|r| r.starts_with("ConfigConflict is True")),
            "{:?}",
            diagnosis.reasons
        );
    }

    #[test]
    fn a_request_not_judged_or_judged_for_an_older_generation_says_so() {
        let unseen = diagnose(&request(json!([]), json!({})));
        assert!(unseen.summary.starts_with("not judged yet"), "{unseen:?}");
        let mut stale = request(
            json!([condition("Accepted", "True", "OperatorWritten", "written")]),
            json!({ "operator": "request-1", "observedGeneration": 1 }),
        );
        stale.metadata.generation = Some(2);
        let stale = diagnose(&stale);
        assert!(
            stale
                .reasons
                .iter()
                .any(|r| r.contains("describes generation 1; the request is at 2")),
            "{stale:?}"
        );
        assert!(stale.summary.contains("has no Instance installing it yet"));
    }
}
