//! `kubectl instance describe operatorrequest/NAMESPACE/NAME`: what a
//! namespace owner asked for (package, Catalog, channel, version, install
//! mode), where it stands (`why`'s one sentence), its conditions, and the
//! Operator and Instance written for it.
//!
//! Read from the request alone, as `why` is: the requester may read her
//! request and its status, not the cluster-scoped Operator or Instance, so
//! their names are given for whoever may read them.

use std::fmt::Write as _;
use std::io::Write;

use jiff::Timestamp;
use pakket_operators_api::OperatorRequest;
use pakket_operators_api::request::InstallMode;

use crate::error::Error;
use crate::output::{self, Format};
use crate::{age, describe, operator_request, operators, why_request};

/// Describes `operatorrequest/NAMESPACE/NAME` (`named` is what follows the
/// prefix); with `format`, prints the request itself.
pub async fn run(
    client: &kube::Client,
    named: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let request = operator_request::read(client, named).await?;
    match format {
        Some(format) => output::print(&request, format, out),
        None => {
            out.write_all(render(&request, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// The description as `kubectl describe`-style text.
pub fn render(request: &OperatorRequest, now: Timestamp) -> String {
    let mut text = String::new();
    let field = |text: &mut String, label: &str, value: &str| {
        let _ = writeln!(text, "{:<18}{value}", format!("{label}:"));
    };
    let namespace = request.metadata.namespace.as_deref().unwrap_or_default();
    let name = request.metadata.name.as_deref().unwrap_or_default();
    let spec = &request.spec;
    let status = request.status.clone().unwrap_or_default();
    field(&mut text, "Kind", "OperatorRequest");
    field(&mut text, "Namespace", namespace);
    field(&mut text, "Name", name);
    for (label, value) in operators::asked_for(&spec.catalog, spec.version.as_deref()) {
        field(&mut text, label, value);
    }
    let mode = match spec.install_mode {
        InstallMode::OwnNamespace => format!("OwnNamespace (runs in and watches {namespace})"),
        InstallMode::SingleNamespace => format!(
            "SingleNamespace (runs in {}, watches {namespace})",
            spec.install_namespace.as_deref().unwrap_or("(not named)")
        ),
    };
    field(&mut text, "Install mode", &mode);
    field(
        &mut text,
        "Installed",
        status
            .installed_version
            .as_deref()
            .unwrap_or("(nothing yet)"),
    );
    if let Some(created) = request.metadata.creation_timestamp.as_ref() {
        field(&mut text, "Age", &age::since(created.0, now));
    }
    let diagnosis = why_request::diagnose(request);
    field(&mut text, "State", &diagnosis.summary);
    if let Some((observed, generation)) = why_request::stale_generation(request) {
        let _ = writeln!(
            text,
            "Note: the status describes generation {observed}; the request is at {generation}, not judged yet"
        );
    }
    let _ = writeln!(text, "Conditions:");
    if status.conditions.is_empty() {
        let _ = writeln!(text, "  (none yet: pakket-resolveset has not judged it)");
    } else {
        let ordered: Vec<_> = status.conditions.iter().collect();
        text.push_str(&describe::table_of(&ordered, now));
    }
    field(
        &mut text,
        "Operator",
        status.operator.as_deref().unwrap_or("(none written)"),
    );
    match &status.instance {
        Some(instance) => {
            field(&mut text, "Instance", instance);
            let _ = writeln!(
                text,
                "  `kubectl instance describe {instance}` shows its objects and events (needs get on instances)"
            );
        }
        None => field(&mut text, "Instance", "(none yet)"),
    }
    let _ = writeln!(
        text,
        "Next: `kubectl instance why {}{namespace}/{name}` says what it waits for and who acts",
        operator_request::PREFIX
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(spec: serde_json::Value, status: serde_json::Value) -> OperatorRequest {
        serde_json::from_value(json!({
            "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "OperatorRequest",
            "metadata": { "name": "etcd", "namespace": "shop", "generation": 1,
                          "creationTimestamp": "2026-11-28T10:00:00Z" },
            "spec": spec,
            "status": status,
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        "2026-11-28T10:05:00Z".parse().unwrap()
    }

    #[test]
    fn an_installed_request_shows_what_was_asked_what_runs_and_where_to_look() {
        let text = render(
            &request(
                json!({ "catalog": { "name": "operatorhubio", "package": "etcd", "channel": "singlenamespace-alpha" },
                        "version": ">=0.9.0 <1.0.0" }),
                json!({
                    "conditions": [
                        { "type": "Accepted", "status": "True", "reason": "OperatorWritten",
                          "message": "Operator request-abc installs it", "lastTransitionTime": "2026-11-28T10:00:00Z",
                          "observedGeneration": 1 },
                        { "type": "Installed", "status": "True", "reason": "InstallSucceeded",
                          "message": "revision 1", "lastTransitionTime": "2026-11-28T10:01:00Z" },
                        { "type": "Healthy", "status": "True", "reason": "Healthy",
                          "message": "every object is healthy", "lastTransitionTime": "2026-11-28T10:02:00Z" },
                    ],
                    "operator": "request-abc", "instance": "etcd-x", "installedVersion": "0.9.4",
                    "observedGeneration": 1,
                }),
            ),
            now(),
        );
        for line in [
            "Namespace:        shop\n",
            "Package:          etcd\n",
            "Catalog:          operatorhubio\n",
            "Channel:          singlenamespace-alpha\n",
            "Version:          >=0.9.0 <1.0.0\n",
            "Install mode:     OwnNamespace (runs in and watches shop)\n",
            "Installed:        0.9.4\n",
            "Age:              5m\n",
            "  Accepted    True     OperatorWritten    5m    Operator request-abc installs it\n",
            "Operator:         request-abc\n",
            "Instance:         etcd-x\n",
            "  `kubectl instance describe etcd-x` shows its objects and events",
            "Next: `kubectl instance why operatorrequest/shop/etcd` says what it waits for and who acts\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        assert!(
            text.contains(
                "State:            installed 0.9.4 and healthy, through Operator request-abc\n"
            ),
            "{text}"
        );
        assert!(!text.contains("Note:"), "the status is current: {text}");
    }

    #[test]
    fn a_new_request_says_nothing_is_decided_and_names_the_defaults() {
        let text = render(
            &request(
                json!({ "catalog": { "name": "operatorhubio", "package": "etcd" },
                        "installMode": "SingleNamespace", "installNamespace": "shop-operators" }),
                json!({}),
            ),
            now(),
        );
        for line in [
            "Channel:          (the package's default)\n",
            "Version:          any\n",
            "Install mode:     SingleNamespace (runs in shop-operators, watches shop)\n",
            "Installed:        (nothing yet)\n",
            "State:            not judged yet: pakket-resolveset writes Accepted when it sees the request\n",
            "  (none yet: pakket-resolveset has not judged it)\n",
            "Operator:         (none written)\n",
            "Instance:         (none yet)\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
    }

    #[test]
    fn a_status_of_an_older_generation_is_said_to_be_one() {
        let mut changed = request(
            json!({ "catalog": { "name": "operatorhubio", "package": "etcd" } }),
            json!({ "observedGeneration": 1, "conditions": [] }),
        );
        changed.metadata.generation = Some(2);
        let text = render(&changed, now());
        assert!(
            text.contains(
                "Note: the status describes generation 1; the request is at 2, not judged yet\n"
            ),
            "{text}"
        );
    }
}
