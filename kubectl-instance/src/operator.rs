//! The operator an Instance of a registry+v1 bundle runs, for `describe`:
//! its name, version and maker (the `olm.package` and `olm.csv.metadata`
//! properties its Bundle's status records), where it runs and what it
//! watches (the `olm.operatorNamespace` and `olm.targetNamespaces`
//! annotations the provisioner puts on each pod template), and whether its
//! Deployments are Available.
//!
//! Deployments are read with the caller's rights, at most
//! [`DEPLOYMENTS_READ_MAX`] of them; one that cannot be read is a note,
//! never fatal. An Instance of a plain bundle has no operator facts.

use std::fmt::Write as _;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use pakket_api::{Bundle, BundleProperty, Instance, ObjectRef};
use serde::Serialize;
use serde_json::Value;

use crate::{error, lookup};

/// Most Deployments `describe` reads: one GET each.
pub const DEPLOYMENTS_READ_MAX: usize = 20;
/// The namespace the operator runs in, on its pod template.
const OPERATOR_NAMESPACE: &str = "olm.operatorNamespace";
/// The namespaces it watches, comma-separated; empty for all.
const TARGET_NAMESPACES: &str = "olm.targetNamespaces";

/// What `describe` knows about an Instance's operator.
#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorFacts {
    /// The package (`olm.package` `packageName`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The CSV's version (`olm.package` `version`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The CSV's `spec.displayName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The CSV's `spec.provider.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Where the operator runs, from its Deployments' pod templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_namespace: Option<String>,
    /// What it watches, from its Deployments' pod templates: empty for all
    /// namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch_namespaces: Option<Vec<String>>,
    /// The Deployments read, in the order the Instance's status lists them.
    pub deployments: Vec<DeploymentFacts>,
    /// Deployments of the Instance left unread (past [`DEPLOYMENTS_READ_MAX`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub not_read: u64,
}

/// One operator Deployment's availability.
#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentFacts {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Whether its `Available` condition is True.
    pub available: bool,
    /// Pods ready.
    pub ready: i32,
    /// Pods wanted.
    pub desired: i32,
    /// The `Available` condition's reason, when not Available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The `Available` condition's message, when not Available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Gathers the operator facts of `instance`, whose wanted Bundle is
/// `wanted` (if it could be read); what cannot be read goes to `notes`.
pub async fn gather(
    client: &kube::Client,
    instance: &Instance,
    wanted: Option<&Bundle>,
    notes: &mut Vec<String>,
) -> Option<OperatorFacts> {
    let properties = recorded_properties(client, instance, wanted, notes).await;
    // A Bundle that records no operator is a plain one: its Deployments
    // are not an operator's, so they are not read. Unknown (no readable
    // Bundle): the pod templates' annotations tell.
    if properties.as_ref().is_some_and(|p| !names_an_operator(p)) {
        return None;
    }
    let listed = deployments_listed(instance);
    let mut deployments = Vec::new();
    for object in listed.iter().take(DEPLOYMENTS_READ_MAX) {
        let namespace = object.namespace.as_deref().unwrap_or("default");
        let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        match api.get_opt(&object.name).await {
            Ok(Some(deployment)) => deployments.push(deployment),
            Ok(None) => notes.push(format!(
                "Deployment {namespace}/{} is listed in the Instance's status.objects but does not exist \
                 (deleted, or not applied yet)",
                object.name
            )),
            Err(source) => notes.push(
                error::api(format!("reading Deployment {namespace}/{}", object.name))(source)
                    .to_string(),
            ),
        }
    }
    let not_read = deployments_counted(instance).saturating_sub(DEPLOYMENTS_READ_MAX as u64);
    let (facts, disagreements) = facts(
        properties.as_deref().unwrap_or_default(),
        &deployments,
        not_read,
    );
    notes.extend(disagreements);
    facts
}

/// The properties of the active Bundle, else of the wanted one; `None`
/// when neither could be read.
async fn recorded_properties(
    client: &kube::Client,
    instance: &Instance,
    wanted: Option<&Bundle>,
    notes: &mut Vec<String>,
) -> Option<Vec<BundleProperty>> {
    let properties = |bundle: &Bundle| {
        bundle
            .status
            .as_ref()
            .map(|status| status.properties.clone())
            .unwrap_or_default()
    };
    let active = instance
        .status
        .as_ref()
        .and_then(|status| status.active_bundle.as_deref());
    match active {
        Some(active) if active != instance.spec.bundle.name => {
            match lookup::bundle(client, active).await {
                Ok(Some(bundle)) => return Some(properties(&bundle)),
                Ok(None) => {}
                Err(error) => notes.push(error.to_string()),
            }
        }
        _ => {}
    }
    wanted.map(properties)
}

fn names_an_operator(properties: &[BundleProperty]) -> bool {
    properties
        .iter()
        .any(|p| matches!(p.type_.as_str(), "olm.package" | "olm.csv.metadata"))
}

/// The Deployments `instance`'s status lists.
fn deployments_listed(instance: &Instance) -> Vec<ObjectRef> {
    instance
        .status
        .iter()
        .flat_map(|status| &status.objects)
        .filter(|object| is_deployment(&object.api_version, &object.kind))
        .cloned()
        .collect()
}

/// How many Deployments `instance` has, including those a status cut
/// short does not list.
fn deployments_counted(instance: &Instance) -> u64 {
    let listed = deployments_listed(instance).len() as u64;
    let counted = instance
        .status
        .iter()
        .flat_map(|status| &status.object_kinds)
        .filter(|kind| is_deployment(&kind.api_version, &kind.kind))
        .map(|kind| kind.count)
        .sum::<u64>();
    listed.max(counted)
}

fn is_deployment(api_version: &str, kind: &str) -> bool {
    api_version == "apps/v1" && kind == "Deployment"
}

/// The operator facts from a Bundle's recorded `properties` and the
/// `deployments` read; `None` when nothing names an operator. Also what the
/// reader should know: Deployments that disagree on where the operator
/// runs or what it watches.
pub fn facts(
    properties: &[BundleProperty],
    deployments: &[Deployment],
    not_read: u64,
) -> (Option<OperatorFacts>, Vec<String>) {
    let mut facts = OperatorFacts {
        not_read,
        ..OperatorFacts::default()
    };
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    for property in properties {
        match property.type_.as_str() {
            "olm.package" => {
                facts.package = text(&property.value, "/packageName");
                facts.version = text(&property.value, "/version");
            }
            "olm.csv.metadata" => {
                facts.display_name = text(&property.value, "/displayName");
                facts.provider = text(&property.value, "/provider/name");
            }
            _ => {}
        }
    }
    let mut install = Vec::new();
    let mut watched = Vec::new();
    for deployment in deployments {
        let annotations = deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref())
            .and_then(|metadata| metadata.annotations.as_ref());
        let annotation = |key: &str| annotations.and_then(|a| a.get(key)).cloned();
        if let Some(namespace) = annotation(OPERATOR_NAMESPACE)
            && !install.contains(&namespace)
        {
            install.push(namespace);
        }
        if let Some(targets) = annotation(TARGET_NAMESPACES)
            && !watched.contains(&targets)
        {
            watched.push(targets);
        }
        facts.deployments.push(availability(deployment));
    }
    let mut notes = Vec::new();
    for (values, annotation) in [
        (&install, OPERATOR_NAMESPACE),
        (&watched, TARGET_NAMESPACES),
    ] {
        if values.len() > 1 {
            notes.push(format!(
                "the operator's Deployments disagree on their pod templates' {annotation} annotation \
                 ({}); shown is the first",
                values
                    .iter()
                    .map(|value| format!("{value:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    facts.install_namespace = install.into_iter().next();
    facts.watch_namespaces = watched.first().map(|targets| {
        targets
            .split(',')
            .map(str::trim)
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned)
            .collect()
    });
    let known = facts.package.is_some()
        || facts.display_name.is_some()
        || facts.install_namespace.is_some()
        || facts.watch_namespaces.is_some();
    (known.then_some(facts), notes)
}

/// A Deployment's `Available` condition and ready pods.
fn availability(deployment: &Deployment) -> DeploymentFacts {
    let status = deployment.status.clone().unwrap_or_default();
    let condition = status
        .conditions
        .iter()
        .flatten()
        .find(|condition| condition.type_ == "Available");
    let available = condition.is_some_and(|condition| condition.status == "True");
    let (reason, message) = match condition {
        _ if available => (None, None),
        Some(condition) => (condition.reason.clone(), condition.message.clone()),
        None => (None, None),
    };
    DeploymentFacts {
        namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
        name: deployment.metadata.name.clone().unwrap_or_default(),
        available,
        ready: status.ready_replicas.unwrap_or(0),
        desired: deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.replicas)
            .unwrap_or(1),
        reason,
        message,
    }
}

/// The operator section of `describe`'s text.
pub fn render(facts: &OperatorFacts) -> String {
    let mut text = String::new();
    let name = facts
        .display_name
        .as_deref()
        .or(facts.package.as_deref())
        .unwrap_or("<unnamed> (no readable Bundle records it)");
    let mut headline = name.to_owned();
    if let Some(version) = &facts.version {
        let _ = write!(headline, " {version}");
    }
    let mut about = Vec::new();
    if let Some(package) = facts.package.as_deref().filter(|package| *package != name) {
        about.push(format!("package {package}"));
    }
    if let Some(provider) = &facts.provider {
        about.push(format!("by {provider}"));
    }
    if !about.is_empty() {
        let _ = write!(headline, " ({})", about.join(", "));
    }
    let _ = writeln!(text, "{:<15}{headline}", "Operator:");
    if let Some(namespace) = &facts.install_namespace {
        let _ = writeln!(text, "  Install namespace: {namespace}");
    }
    if let Some(namespaces) = &facts.watch_namespaces {
        let watching = if namespaces.is_empty() {
            "all namespaces".to_owned()
        } else {
            namespaces.join(", ")
        };
        let _ = writeln!(text, "  Watching:          {watching}");
    }
    if facts.deployments.is_empty() && facts.not_read == 0 {
        text.push_str("  Deployments:       <none> read\n");
        return text;
    }
    text.push_str("  Deployments:\n");
    for deployment in &facts.deployments {
        let counts = format!("{}/{} ready", deployment.ready, deployment.desired);
        let state = if deployment.available {
            format!("Available {counts}")
        } else {
            let why = match (&deployment.reason, &deployment.message) {
                (Some(reason), Some(message)) => format!("{reason}: {message}"),
                (Some(reason), None) => reason.clone(),
                (None, Some(message)) => message.clone(),
                (None, None) => "no Available condition reported yet".to_owned(),
            };
            format!("not Available ({why}), {counts}")
        };
        let _ = writeln!(
            text,
            "    {}/{}: {state}",
            deployment.namespace, deployment.name
        );
    }
    if facts.not_read > 0 {
        let _ = writeln!(
            text,
            "    … and {} more, not read (describe reads at most {DEPLOYMENTS_READ_MAX})",
            facts.not_read
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn property(type_: &str, value: Value) -> BundleProperty {
        BundleProperty {
            type_: type_.into(),
            value,
        }
    }

    fn etcd_properties() -> Vec<BundleProperty> {
        vec![
            property(
                "olm.package",
                json!({ "packageName": "etcd", "version": "0.9.4" }),
            ),
            property(
                "olm.csv.metadata",
                json!({ "displayName": "etcd", "provider": { "name": "CNCF" } }),
            ),
            property(
                "olm.gvk",
                json!({ "group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster" }),
            ),
        ]
    }

    /// A Deployment as the registry-v1 provisioner renders it, with a
    /// status as the Deployment controller writes it.
    fn deployment(name: &str, targets: Option<&str>, available: Value) -> Deployment {
        let mut annotations = serde_json::Map::new();
        annotations.insert(OPERATOR_NAMESPACE.into(), json!("operators"));
        if let Some(targets) = targets {
            annotations.insert(TARGET_NAMESPACES.into(), json!(targets));
        }
        serde_json::from_value(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": { "name": name, "namespace": "operators" },
            "spec": {
                "replicas": 2,
                "selector": { "matchLabels": { "app": name } },
                "template": {
                    "metadata": { "labels": { "app": name }, "annotations": annotations },
                    "spec": { "containers": [{ "name": "operator", "image": "operator:1" }] },
                },
            },
            "status": { "readyReplicas": 1, "conditions": [available] },
        }))
        .expect("a valid Deployment")
    }

    fn available() -> Value {
        json!({ "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable" })
    }

    fn unavailable() -> Value {
        json!({
            "type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
        })
    }

    #[test]
    fn an_operator_shows_its_name_version_maker_namespaces_and_availability() {
        let deployments = [
            deployment("etcd-operator", Some(""), available()),
            deployment("etcd-backup", Some(""), unavailable()),
        ];
        let (facts, notes) = facts(&etcd_properties(), &deployments, 3);
        let facts = facts.expect("an operator");
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(facts.install_namespace.as_deref(), Some("operators"));
        assert_eq!(facts.watch_namespaces, Some(Vec::new()));
        assert_eq!(
            render(&facts),
            "Operator:      etcd 0.9.4 (by CNCF)\n\
             \x20 Install namespace: operators\n\
             \x20 Watching:          all namespaces\n\
             \x20 Deployments:\n\
             \x20   operators/etcd-operator: Available 1/2 ready\n\
             \x20   operators/etcd-backup: not Available (MinimumReplicasUnavailable: Deployment does \
             not have minimum availability.), 1/2 ready\n\
             \x20   … and 3 more, not read (describe reads at most 20)\n"
        );
    }

    #[test]
    fn the_package_is_named_when_the_display_name_differs_and_watched_namespaces_are_listed() {
        let mut properties = etcd_properties();
        properties[1].value = json!({ "displayName": "etcd Operator" });
        let deployments = [deployment("etcd-operator", Some("a, b"), available())];
        let (facts, _) = facts(&properties, &deployments, 0);
        let text = render(&facts.unwrap());
        assert!(
            text.starts_with("Operator:      etcd Operator 0.9.4 (package etcd)\n"),
            "{text}"
        );
        assert!(text.contains("  Watching:          a, b\n"), "{text}");
    }

    #[test]
    fn a_plain_bundle_has_no_operator() {
        let plain = [property("olm.gvk", json!({ "kind": "Web" }))];
        assert_eq!(facts(&plain, &[], 0).0, None);
        // Deployments without OLM's annotations are nobody's operator.
        let mut web = deployment("web", None, available());
        web.spec.as_mut().unwrap().template.metadata = None;
        assert_eq!(facts(&[], &[web], 0).0, None);
    }

    #[test]
    fn without_a_readable_bundle_the_pod_templates_still_tell() {
        let (facts, _) = facts(&[], &[deployment("op", Some("team-a"), available())], 0);
        let text = render(&facts.unwrap());
        assert!(
            text.starts_with(
                "Operator:      <unnamed> (no readable Bundle records it)\n  Install namespace: operators\n  Watching:          team-a\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_operator_with_nothing_read_says_so_and_disagreeing_templates_are_noted() {
        let (facts_only, _) = facts(&etcd_properties(), &[], 0);
        assert!(
            render(&facts_only.unwrap()).ends_with("  Deployments:       <none> read\n"),
            "no Deployments read"
        );
        let deployments = [
            deployment("a", Some(""), available()),
            deployment("b", Some("team-a"), available()),
        ];
        let (facts, notes) = facts(&etcd_properties(), &deployments, 0);
        assert_eq!(facts.unwrap().watch_namespaces, Some(Vec::new()));
        assert_eq!(
            notes,
            [
                "the operator's Deployments disagree on their pod templates' olm.targetNamespaces \
                 annotation (\"\", \"team-a\"); shown is the first"
            ]
        );
    }

    #[test]
    fn a_deployment_without_an_available_condition_is_not_available() {
        let mut fresh = deployment("op", Some(""), available());
        fresh.status = None;
        let facts = availability(&fresh);
        assert!(!facts.available);
        let (operator, _) = super::facts(&etcd_properties(), &[fresh], 0);
        assert!(
            render(&operator.unwrap()).contains(
                "    operators/op: not Available (no Available condition reported yet), 0/2 ready\n"
            ),
            "a fresh Deployment"
        );
    }

    #[test]
    fn the_json_form_skips_what_is_unknown() {
        let (facts, _) = facts(&etcd_properties(), &[], 0);
        assert_eq!(
            serde_json::to_value(facts.unwrap()).unwrap(),
            json!({
                "package": "etcd", "version": "0.9.4", "displayName": "etcd",
                "provider": "CNCF", "deployments": [],
            })
        );
    }
}
