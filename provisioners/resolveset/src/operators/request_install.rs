//! What an accepted OperatorRequest says about its install: a pure
//! decision over what the controller read (the Operator's Input, the
//! Instance it names, whose that Instance is), so every case is
//! table-tested.
//!
//! A request mirrors an Instance's `Approved`, `Installed` and `Healthy`
//! only when that Instance installs the request's package **for the
//! requester herself**: its requester record, sealed by pakket-resolveset
//! for her, verifies. Another team's install of the same package is never
//! shown as hers. Otherwise the request says, in its own words, why
//! nothing installs for it and who acts next, without sending her to
//! objects the shipped request role cannot read (each pointer to a
//! cluster-scoped object says it is a cluster admin's to follow).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use pakket_api::Instance;
use pakket_api::cause::CauseKind;
use pakket_operators_api::request::InstallReason;
use pakket_resolve_api::InputReason;

/// The conditions of the installing Instance a request mirrors.
pub const MIRRORED: [&str; 3] = ["Approved", "Installed", "Healthy"];

/// The Instance installing the request's package, as read.
#[derive(Clone, Copy, Debug)]
pub enum Installing<'a> {
    /// The Operator names no Instance for the package.
    NotNamed,
    /// Named, and not written yet.
    NotWritten(&'a str),
    /// Written, and sealed for the requester.
    Hers(&'a Instance),
    /// Written, and not sealed for the requester alone.
    NotHers(&'a str),
}

/// What was read for an accepted request.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The package asked for.
    pub package: &'a str,
    /// The Operator's Input (its name).
    pub input: &'a str,
    /// Its `ResolutionFailed` condition, if it has one.
    pub resolution: Option<&'a Condition>,
    /// The Instance installing the package.
    pub installing: Installing<'a>,
}

/// One condition to write: the Instance's own, or the request's words.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    /// The Instance's condition, as it has it.
    Mirrored(Condition),
    /// The request's own: type, status, reason, message.
    Own(&'static str, &'static str, InstallReason, String),
}

/// The `Approved`, `Installed` and `Healthy` conditions of an accepted
/// request.
pub fn conditions(facts: &Facts<'_>) -> Vec<Said> {
    if let Installing::Hers(instance) = facts.installing {
        return MIRRORED
            .into_iter()
            .map(|type_| {
                let said = instance
                    .status
                    .as_ref()
                    .and_then(|status| status.conditions.iter().find(|c| c.type_ == type_));
                match said {
                    Some(condition) if refused_by_policy(instance, condition) => Said::Own(
                        type_,
                        "False",
                        InstallReason::RefusedByPolicy,
                        condition.message.clone(),
                    ),
                    Some(condition) => Said::Mirrored(condition.clone()),
                    None => Said::Own(
                        type_,
                        "Unknown",
                        InstallReason::NotInstalled,
                        format!(
                            "Instance {} installs it for you and has not said yet",
                            instance.metadata.name.as_deref().unwrap_or_default()
                        ),
                    ),
                }
            })
            .collect();
    }
    let (status, reason, message) = waiting(facts);
    let see = format!("nothing installs for this request: {message}");
    vec![
        Said::Own("Approved", "Unknown", reason, see.clone()),
        Said::Own("Installed", status, reason, message),
        Said::Own("Healthy", "Unknown", reason, see),
    ]
}

/// Whether `condition` (the Instance's `Approved`) waits because a policy
/// rule refused it, as the Instance's typed cause says.
fn refused_by_policy(instance: &Instance, condition: &Condition) -> bool {
    let causes = instance
        .status
        .as_ref()
        .map(|status| status.causes.as_slice())
        .unwrap_or_default();
    pakket_api::cause::cause_of(causes, &condition.type_, &condition.reason)
        .is_some_and(|cause| cause.kind == CauseKind::PolicyRefused)
}

/// Why nothing installs for the request: `Installed`'s status, reason
/// and message.
fn waiting(facts: &Facts<'_>) -> (&'static str, InstallReason, String) {
    let (package, input) = (facts.package, facts.input);
    match facts.installing {
        Installing::NotHers(instance) => {
            return (
                "False",
                InstallReason::InstalledForAnother,
                format!(
                    "Instance {instance} installs package {package}, and its requester record does not name you alone, so it is not shown as yours; ask a cluster admin (`kubectl instance why {instance}`)"
                ),
            );
        }
        Installing::NotWritten(instance) => {
            return (
                "Unknown",
                InstallReason::NotInstalled,
                format!(
                    "Instance {instance} is not written yet: the cluster's set waits for a cluster admin to approve it (it adds a package without one requester whose class judges the request, or moves one back); its approver names which"
                ),
            );
        }
        Installing::Hers(_) | Installing::NotNamed => {}
    }
    let Some(resolution) = facts.resolution else {
        return (
            "Unknown",
            InstallReason::NotInstalled,
            format!("Input {input} is not resolved yet"),
        );
    };
    let admin_sees = format!("a cluster admin sees more with `kubectl instance why input/{input}`");
    match InputReason::parse(&resolution.reason) {
        Some(InputReason::PackageOwnedByAnother) => (
            "False",
            InstallReason::PackageOwnedByAnother,
            format!(
                "package {package} is installed once in the cluster, and another request or Operator has it, so nothing installs for this request (another's install is never shown as yours); it installs here once that one is removed, or a cluster admin installs one for every team ({admin_sees})"
            ),
        ),
        Some(InputReason::ConflictWaitsForDecision) => (
            "Unknown",
            InstallReason::NotResolved,
            format!(
                "it conflicts with other new requests, and none installs until a cluster admin chooses one (`kubectl instance decide input/{input}`)"
            ),
        ),
        _ if resolution.status == "True" => (
            "False",
            InstallReason::NotResolved,
            format!(
                "its Input cannot be resolved ({}): {}; {admin_sees}",
                resolution.reason, resolution.message
            ),
        ),
        _ => (
            "Unknown",
            InstallReason::NotInstalled,
            "resolved; the set that installs it is being written".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: None,
            last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        }
    }

    fn facts<'a>(resolution: Option<&'a Condition>, installing: Installing<'a>) -> Facts<'a> {
        Facts {
            package: "etcd",
            input: "request-1",
            resolution,
            installing,
        }
    }

    /// `Installed`'s status and reason, and whether its message holds `words`.
    fn installed(said: &[Said], words: &str) -> (String, String) {
        let Some(Said::Own(_, status, reason, message)) = said.get(1) else {
            panic!("{said:?}");
        };
        assert!(message.contains(words), "{message}");
        (status.to_string(), reason.as_str().to_owned())
    }

    #[test]
    fn only_an_instance_sealed_for_the_requester_is_mirrored() {
        let mut instance: Instance = serde_json::from_value(json!({
            "metadata": {"name": "set-etcd"},
            "spec": {"class": "c", "bundle": {"name": "b"}},
            "status": {"conditions": [
                {"type": "Approved", "status": "True", "reason": "Approved", "message": "approved by policy p rule 3 (self-service)", "lastTransitionTime": "2026-11-29T10:00:00Z"},
            ]},
        }))
        .unwrap();
        let said = conditions(&facts(None, Installing::Hers(&instance)));
        assert!(matches!(&said[0], Said::Mirrored(c) if c.message.contains("self-service")));
        assert!(matches!(
            &said[1],
            Said::Own("Installed", "Unknown", InstallReason::NotInstalled, _)
        ));
        // A rule's refusal is said as one, from the Instance's typed cause.
        let refused: Instance = serde_json::from_value(json!({
            "metadata": {"name": "set-etcd"},
            "spec": {"class": "c", "bundle": {"name": "b"}},
            "status": {
                "conditions": [
                    {"type": "Approved", "status": "False", "reason": "ApprovalPending", "message": "refused by policy p rule 2 (listed-teams): not your team", "lastTransitionTime": "2026-11-29T10:00:00Z"},
                ],
                "causes": [{"type": "Approved", "reason": "ApprovalPending", "kind": "PolicyRefused"}],
            },
        }))
        .unwrap();
        let said = conditions(&facts(None, Installing::Hers(&refused)));
        assert!(
            matches!(&said[0], Said::Own("Approved", "False", InstallReason::RefusedByPolicy, m) if m.contains("not your team")),
            "{said:?}"
        );
        instance.status = None;
        let others = conditions(&facts(None, Installing::NotHers("set-etcd")));
        assert_eq!(
            installed(&others, "not shown as yours"),
            ("False".into(), "InstalledForAnother".into())
        );
        assert!(
            others.iter().all(|s| !matches!(s, Said::Mirrored(_))),
            "another's Instance is never mirrored"
        );
    }

    #[test]
    fn each_reason_nothing_installs_is_said_in_the_requests_own_words() {
        let owned = condition(
            "ResolutionFailed",
            "True",
            "PackageOwnedByAnother",
            "Input request-other owns package etcd",
        );
        let waits = condition("ResolutionFailed", "True", "ConflictWaitsForDecision", "");
        let unsat = condition("ResolutionFailed", "True", "Unsatisfiable", "no etcd 9.9");
        let resolved = condition("ResolutionFailed", "False", "Resolved", "");
        let cases = [
            (
                facts(Some(&owned), Installing::NotNamed),
                "installed once in the cluster",
                ("False", "PackageOwnedByAnother"),
            ),
            (
                facts(Some(&waits), Installing::NotNamed),
                "kubectl instance decide input/request-1",
                ("Unknown", "NotResolved"),
            ),
            (
                facts(Some(&unsat), Installing::NotNamed),
                "(Unsatisfiable): no etcd 9.9",
                ("False", "NotResolved"),
            ),
            (
                facts(Some(&resolved), Installing::NotNamed),
                "being written",
                ("Unknown", "NotInstalled"),
            ),
            (
                facts(None, Installing::NotNamed),
                "not resolved yet",
                ("Unknown", "NotInstalled"),
            ),
            (
                facts(Some(&resolved), Installing::NotWritten("set-etcd")),
                "waits for a cluster admin to approve it",
                ("Unknown", "NotInstalled"),
            ),
        ];
        for (facts, words, (status, reason)) in cases {
            let said = conditions(&facts);
            assert_eq!(said.len(), 3);
            assert_eq!(
                installed(&said, words),
                (status.to_owned(), reason.to_owned())
            );
        }
        // Another's Input name never reaches her words for an owned package.
        let said = conditions(&facts(Some(&owned), Installing::NotNamed));
        assert!(!format!("{said:?}").contains("request-other"));
    }
}
