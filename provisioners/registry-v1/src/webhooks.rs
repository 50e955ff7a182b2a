//! A CSV's `spec.webhookdefinitions` as plain objects, with OLM's
//! semantics (operator-controller's registry+v1 renderer, which keeps
//! parity with OLM v0's `install/webhook.go` and `certresources.go`):
//!
//! | definition | objects |
//! |---|---|
//! | any, per Deployment | a Service `<deployment>-service` (dots become dashes) selecting the Deployment's `spec.selector.matchLabels`, one port per distinct `containerPort`/`targetPort`; a TLS Secret `<service>-cert` with the serving certificate; the Secret mounted into every container at OLM's two paths |
//! | `ValidatingAdmissionWebhook` | a ValidatingWebhookConfiguration named `generateName` (a trailing `-` dropped), one webhook |
//! | `MutatingAdmissionWebhook` | the same, Mutating, with `reinvocationPolicy` |
//! | `ConversionWebhook` | `spec.conversion` on each CRD of `conversionCRDs` |
//!
//! Every webhook points at the Service with the Instance's CA as
//! `caBundle` ([`crate::certificates`]), and, unless the operator watches
//! every namespace, admits only objects in the watched namespaces. What
//! OLM refuses is refused here, each problem naming its CSV field: a
//! missing or unknown `type`, `generateName` or `deploymentName`, rules
//! over every group, OLM's or Pakket's groups or webhook configurations,
//! and conversion webhooks unless the operator supports only
//! AllNamespaces (a CRD has one conversion for every namespace).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bundle::Bundle;
use crate::certificates::Authority;
use crate::config::{Placement, Watch};

/// Where OLM mounts the serving certificate, and under which names: the
/// controller-runtime default, and the aggregated-API-server one.
/// (volume, mount path, file for `tls.crt`, file for `tls.key`)
pub const CERTIFICATE_MOUNTS: [(&str, &str, &str, &str); 2] = [
    (
        "webhook-cert",
        "/tmp/k8s-webhook-server/serving-certs",
        "tls.crt",
        "tls.key",
    ),
    (
        "apiservice-cert",
        "/apiserver.local.config/certificates",
        "apiserver.crt",
        "apiserver.key",
    ),
];

/// The port a webhook is served on when its definition names none.
const DEFAULT_PORT: i64 = 443;

/// API groups no admission webhook may intercept: all of them, OLM's (v0
/// and v1) and Pakket's own, so a broken webhook cannot stop anyone from
/// removing it.
const FORBIDDEN_GROUPS: [&str; 4] = [
    "*",
    "operators.coreos.com",
    "olm.operatorframework.io",
    "core.pakket.dev",
];

/// The kind of a webhook definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `ValidatingAdmissionWebhook`.
    Validating,
    /// `MutatingAdmissionWebhook`.
    Mutating,
    /// `ConversionWebhook`.
    Conversion,
}

/// One `spec.webhookdefinitions[]` entry, checked.
#[derive(Clone, Debug)]
pub struct Definition {
    /// Its index, for messages.
    pub index: usize,
    /// Its kind.
    pub kind: Kind,
    /// `generateName` without a trailing `-`: the configuration's and the
    /// webhook's name.
    pub name: String,
    /// The Deployment serving it.
    pub deployment: String,
    /// The Service port (`containerPort`, default 443).
    pub port: i64,
    /// The pod port (`targetPort`, a number or a name; default `port`).
    pub target_port: Value,
    raw: Raw,
}

/// The entry as written; every field optional so that each missing one is
/// reported by name rather than as a parse error.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(rename = "type")]
    kind: Option<String>,
    generate_name: Option<String>,
    deployment_name: Option<String>,
    container_port: Option<i64>,
    target_port: Option<Value>,
    webhook_path: Option<String>,
    admission_review_versions: Option<Vec<String>>,
    side_effects: Option<Value>,
    failure_policy: Option<Value>,
    rules: Option<Vec<Value>>,
    object_selector: Option<Value>,
    match_policy: Option<Value>,
    timeout_seconds: Option<Value>,
    reinvocation_policy: Option<Value>,
    #[serde(rename = "conversionCRDs")]
    conversion_crds: Option<Vec<String>>,
}

/// A CSV's webhooks, checked against the bundle.
#[derive(Clone, Debug, Default)]
pub struct Webhooks {
    definitions: Vec<Definition>,
}

/// The Service in front of `deployment`'s webhooks (OLM's name).
pub fn service_name(deployment: &str) -> String {
    name_with_suffix(&deployment.replace('.', "-"), "service")
}

/// The Secret holding `deployment`'s serving certificate (OLM's name).
pub fn secret_name(deployment: &str) -> String {
    name_with_suffix(&service_name(deployment), "cert")
}

/// `<base>-<suffix>` in at most 63 characters, the base cut short if need
/// be (OLM cuts the same way, one character later).
fn name_with_suffix(base: &str, suffix: &str) -> String {
    let room = 63 - suffix.len() - 1;
    let base = if base.len() > room {
        base[..room].trim_end_matches(['-', '.'])
    } else {
        base
    };
    format!("{base}-{suffix}")
}

impl Webhooks {
    /// The definitions of `bundle`'s CSV that are valid, and a problem for
    /// each that is not (naming the field).
    pub fn read(bundle: &Bundle) -> (Self, Vec<String>) {
        let csv = &bundle.csv;
        let prefix = format!("ClusterServiceVersion {}", csv.metadata.name);
        let deployments: Vec<&str> = csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .map(|deployment| deployment.name.as_str())
            .collect();
        let mut problems = Vec::new();
        let mut definitions = Vec::new();
        for (index, entry) in csv.spec.webhookdefinitions.iter().enumerate() {
            let field = format!("{prefix}: spec.webhookdefinitions[{index}]");
            match definition(index, entry, &deployments) {
                Ok(definition) => definitions.push(definition),
                Err(found) => problems.extend(
                    found
                        .into_iter()
                        .map(|problem| format!("{field}.{problem}")),
                ),
            }
        }
        let mut seen = BTreeSet::new();
        for definition in &definitions {
            if !seen.insert((definition.kind, definition.name.clone())) {
                problems.push(format!(
                    "{prefix}: spec.webhookdefinitions[{}].generateName {:?} is used by another webhook of the same type; give each its own name",
                    definition.index, definition.name
                ));
            }
        }
        problems.extend(
            conversion_problems(bundle, &definitions)
                .into_iter()
                .map(|problem| format!("{prefix}: {problem}")),
        );
        (Self { definitions }, problems)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.definitions.is_empty()
    }

    /// Whether `deployment` serves any of them (and so gets the Secret).
    pub fn served_by(&self, deployment: &str) -> bool {
        self.definitions
            .iter()
            .any(|definition| definition.deployment == deployment)
    }

    /// Points `crd` at its conversion webhook, if a definition names it.
    pub fn convert(&self, crd: &mut Value, namespace: &str, authority: &Authority) {
        let name = crd.pointer("/metadata/name").and_then(Value::as_str);
        let Some(definition) = self.definitions.iter().find(|definition| {
            definition.kind == Kind::Conversion
                && name.is_some_and(|name| {
                    definition
                        .raw
                        .conversion_crds
                        .iter()
                        .flatten()
                        .any(|crd| crd == name)
                })
        }) else {
            return;
        };
        let mut client = client_config(definition, namespace, authority);
        // OLM's default: a conversion webhook without a path answers at /.
        client["service"]["path"] = json!(definition.raw.webhook_path.as_deref().unwrap_or("/"));
        if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert(
                "conversion".into(),
                json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client,
                        "conversionReviewVersions": definition.raw.admission_review_versions,
                    },
                }),
            );
        }
    }

    /// The Services, Secrets and webhook configurations; or a problem per
    /// Service that cannot be made.
    pub fn objects(
        &self,
        bundle: &Bundle,
        placement: &Placement,
        authority: &Authority,
    ) -> Result<Vec<Value>, Vec<String>> {
        let csv = &bundle.csv;
        let namespace = &placement.install_namespace;
        let mut problems = Vec::new();
        let mut objects = Vec::new();
        for (index, deployment) in csv.spec.install.spec.deployments.iter().enumerate() {
            let served: Vec<&Definition> = self
                .definitions
                .iter()
                .filter(|definition| definition.deployment == deployment.name)
                .collect();
            if served.is_empty() {
                continue;
            }
            let service = service_name(&deployment.name);
            let secret = secret_name(&deployment.name);
            for (kind, name) in [("Service", &service), ("Secret", &secret)] {
                if shipped(bundle, kind, name) {
                    problems.push(format!(
                        "manifests/: {kind} {name} is the one made for the webhooks of Deployment {}; rename the bundle's",
                        deployment.name
                    ));
                }
            }
            let selector = deployment.spec.pointer("/selector/matchLabels");
            let selects_nothing = selector
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if selects_nothing {
                problems.push(format!(
                    "ClusterServiceVersion {}: spec.install.spec.deployments[{index}].spec.selector.matchLabels is empty, so the webhook Service {service} would select no pod; write the pod labels there",
                    csv.metadata.name
                ));
                continue;
            }
            match ports(&served) {
                Ok(ports) => objects.push(json!({
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": { "name": service, "namespace": namespace },
                    "spec": { "ports": ports, "selector": selector },
                })),
                Err(problem) => {
                    problems.push(format!(
                        "ClusterServiceVersion {}: {problem}",
                        csv.metadata.name
                    ));
                    continue;
                }
            }
            match authority.serving(&deployment.name, &service, namespace) {
                Ok(serving) => objects.push(json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": { "name": secret, "namespace": namespace },
                    "type": "kubernetes.io/tls",
                    "data": {
                        "tls.crt": STANDARD.encode(&serving.certificate),
                        "tls.key": STANDARD.encode(&serving.key),
                        "ca.crt": STANDARD.encode(authority.pem()),
                    },
                })),
                Err(problem) => problems.push(format!(
                    "cannot issue the serving certificate of Deployment {}: {problem}",
                    deployment.name
                )),
            }
        }
        for definition in &self.definitions {
            let kind = match definition.kind {
                Kind::Validating => "ValidatingWebhookConfiguration",
                Kind::Mutating => "MutatingWebhookConfiguration",
                Kind::Conversion => continue,
            };
            objects.push(json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": { "name": definition.name },
                "webhooks": [admission_webhook(definition, placement, authority)],
            }));
        }
        if problems.is_empty() {
            Ok(objects)
        } else {
            Err(problems)
        }
    }
}

/// Mounts the Secret `secret` where OLM does, in every container of the
/// Deployment `spec`, replacing volumes of the same names and any volume a
/// container mounts at one of those paths.
pub fn mount_certificates(spec: &mut Value, secret: &str) {
    let Some(pod) = spec
        .pointer_mut("/template/spec")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut replaced: BTreeSet<String> = CERTIFICATE_MOUNTS
        .iter()
        .map(|(volume, ..)| (*volume).to_owned())
        .collect();
    let paths: BTreeSet<&str> = CERTIFICATE_MOUNTS
        .iter()
        .map(|(_, path, ..)| *path)
        .collect();
    let containers = pod
        .get("containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for container in &containers {
        for mount in container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = mount.get("mountPath").and_then(Value::as_str);
            if path.is_some_and(|path| paths.contains(path))
                && let Some(name) = mount.get("name").and_then(Value::as_str)
            {
                replaced.insert(name.to_owned());
            }
        }
    }
    let keep = |item: &Value| {
        !item
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| replaced.contains(name))
    };
    let mut volumes: Vec<Value> = pod
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|volume| keep(volume))
        .cloned()
        .collect();
    volumes.extend(CERTIFICATE_MOUNTS.iter().map(|(volume, _, crt, key)| {
        json!({
            "name": volume,
            "secret": {
                "secretName": secret,
                "items": [
                    { "key": "tls.crt", "path": crt },
                    { "key": "tls.key", "path": key },
                ],
            },
        })
    }));
    pod.insert("volumes".into(), Value::Array(volumes));
    if let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) {
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mut mounts: Vec<Value> = container
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|mount| keep(mount))
                .cloned()
                .collect();
            mounts.extend(
                CERTIFICATE_MOUNTS
                    .iter()
                    .map(|(volume, path, ..)| json!({ "name": volume, "mountPath": path })),
            );
            container.insert("volumeMounts".into(), Value::Array(mounts));
        }
    }
}

/// Checks one entry; the problems are field paths below the entry.
fn definition(
    index: usize,
    entry: &Value,
    deployments: &[&str],
) -> Result<Definition, Vec<String>> {
    let raw: Raw = serde_json::from_value(entry.clone())
        .map_err(|error| vec![format!("{error}; fix the field it names")])?;
    let mut problems = Vec::new();
    let kind = match raw.kind.as_deref() {
        Some("ValidatingAdmissionWebhook") => Some(Kind::Validating),
        Some("MutatingAdmissionWebhook") => Some(Kind::Mutating),
        Some("ConversionWebhook") => Some(Kind::Conversion),
        other => {
            let found =
                other.map_or_else(|| "is missing".to_owned(), |kind| format!("is {kind:?}"));
            problems.push(format!(
                "type {found}; write ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook"
            ));
            None
        }
    };
    let name = raw
        .generate_name
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('-')
        .to_owned();
    if name.is_empty() {
        problems
            .push("generateName is missing; name the webhook, e.g. vmyresource.example.com".into());
    } else if !is_dns_subdomain(&name) {
        problems.push(format!(
            "generateName {name:?} is not a valid object name (lowercase letters, digits, '-' and '.')"
        ));
    }
    let deployment = raw.deployment_name.clone().unwrap_or_default();
    if deployment.is_empty() {
        problems.push(format!(
            "deploymentName is missing; name the Deployment that serves the webhook ({})",
            deployments.join(", ")
        ));
    } else if !deployments.contains(&deployment.as_str()) {
        problems.push(format!(
            "deploymentName {deployment:?} is not among spec.install.spec.deployments ({}); name one of them",
            deployments.join(", ")
        ));
    }
    let port = raw.container_port.unwrap_or(DEFAULT_PORT);
    if !(1..=65535).contains(&port) {
        problems.push(format!("containerPort {port} is not a port (1 to 65535)"));
    }
    let target_port = raw.target_port.clone().unwrap_or_else(|| json!(port));
    let target_ok = match &target_port {
        Value::Number(number) => number.as_i64().is_some_and(|n| (1..=65535).contains(&n)),
        Value::String(name) => !name.is_empty(),
        _ => false,
    };
    if !target_ok {
        problems.push(format!(
            "targetPort {target_port} is neither a port number nor a port name"
        ));
    }
    if matches!(kind, Some(Kind::Validating | Kind::Mutating)) {
        if raw.side_effects.is_none() {
            problems.push(
                "sideEffects is missing; admission webhooks declare None or NoneOnDryRun".into(),
            );
        }
        for (rule_index, rule) in raw.rules.iter().flatten().enumerate() {
            problems
                .extend(rule_problem(rule).map(|problem| format!("rules[{rule_index}].{problem}")));
        }
    }
    if raw
        .admission_review_versions
        .as_ref()
        .is_none_or(Vec::is_empty)
    {
        problems.push("admissionReviewVersions is missing; write [v1]".into());
    }
    if kind == Some(Kind::Conversion) && raw.conversion_crds.as_ref().is_none_or(Vec::is_empty) {
        problems.push("conversionCRDs is empty; name the CRDs this webhook converts".into());
    }
    match kind {
        Some(kind) if problems.is_empty() => Ok(Definition {
            index,
            kind,
            name,
            deployment,
            port,
            target_port,
            raw,
        }),
        _ => Err(problems),
    }
}

/// Why an admission rule is refused, if it is (OLM's list plus Pakket's
/// group).
fn rule_problem(rule: &Value) -> Option<String> {
    let strings = |field: &str| -> Vec<&str> {
        rule.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    let groups = strings("apiGroups");
    if let Some(group) = groups.iter().find(|group| FORBIDDEN_GROUPS.contains(group)) {
        return Some(format!(
            "apiGroups includes {group:?}; admission webhooks may not intercept every group, OLM's or Pakket's (a broken webhook could not be removed)"
        ));
    }
    if groups.contains(&"admissionregistration.k8s.io") {
        let forbidden = [
            "*",
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ];
        if let Some(resource) = strings("resources").iter().find(|resource| {
            let resource = resource.to_ascii_lowercase();
            forbidden.iter().any(|forbidden| {
                resource == *forbidden || resource == forbidden.trim_end_matches('s')
            })
        }) {
            return Some(format!(
                "resources includes {resource:?} of admissionregistration.k8s.io; admission webhooks may not intercept webhook configurations"
            ));
        }
    }
    None
}

/// Conversion webhooks: only for operators that support AllNamespaces
/// alone, each naming CRDs of the bundle that no other one names and that
/// do not preserve unknown fields.
fn conversion_problems(bundle: &Bundle, definitions: &[Definition]) -> Vec<String> {
    let conversions: Vec<&Definition> = definitions
        .iter()
        .filter(|definition| definition.kind == Kind::Conversion)
        .collect();
    let mut problems = Vec::new();
    if conversions.is_empty() {
        return problems;
    }
    let modes = bundle.csv.spec.supported_modes();
    if modes != ["AllNamespaces"] {
        for definition in &conversions {
            problems.push(format!(
                "spec.webhookdefinitions[{}] is a ConversionWebhook, and the operator supports install modes {}; conversion webhooks need an operator that supports AllNamespaces only (a CRD converts for every namespace)",
                definition.index,
                modes.join(", ")
            ));
        }
    }
    let crds: BTreeMap<&str, &Value> = bundle
        .manifests
        .iter()
        .filter(|object| {
            object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        })
        .filter_map(|crd| Some((crd.pointer("/metadata/name")?.as_str()?, crd)))
        .collect();
    let mut claimed: BTreeMap<&str, usize> = BTreeMap::new();
    for definition in &conversions {
        for (crd_index, name) in definition.raw.conversion_crds.iter().flatten().enumerate() {
            let field = format!(
                "spec.webhookdefinitions[{}].conversionCRDs[{crd_index}]",
                definition.index
            );
            match crds.get(name.as_str()) {
                None => problems.push(format!(
                    "{field} names {name}, which is not a CRD of this bundle; name one of {}",
                    crds.keys().copied().collect::<Vec<_>>().join(", ")
                )),
                Some(crd) if crd.pointer("/spec/preserveUnknownFields") == Some(&json!(true)) => {
                    problems.push(format!(
                        "{field} names {name}, whose spec.preserveUnknownFields is true; the apiserver calls conversion webhooks only when it is false"
                    ));
                }
                Some(_) => {}
            }
            if let Some(other) = claimed.insert(name.as_str(), definition.index)
                && other != definition.index
            {
                problems.push(format!(
                    "{field} names {name}, which spec.webhookdefinitions[{other}] converts already; a CRD has one conversion webhook"
                ));
            }
        }
    }
    problems
}

/// The Service ports for `served`, one per distinct port.
fn ports(served: &[&Definition]) -> Result<Vec<Value>, String> {
    let mut ports: BTreeMap<i64, (&Value, usize)> = BTreeMap::new();
    for definition in served {
        match ports.get(&definition.port) {
            Some((target, other)) if **target != definition.target_port => {
                return Err(format!(
                    "spec.webhookdefinitions[{}].targetPort is {}, and spec.webhookdefinitions[{other}] sends the same containerPort {} to {target}; a Service port has one target",
                    definition.index, definition.target_port, definition.port
                ));
            }
            Some(_) => {}
            None => {
                ports.insert(definition.port, (&definition.target_port, definition.index));
            }
        }
    }
    Ok(ports
        .into_iter()
        .map(|(port, (target, _))| {
            json!({ "name": port.to_string(), "port": port, "targetPort": target })
        })
        .collect())
}

/// `clientConfig`: the Service, its port and path, and the CA.
fn client_config(definition: &Definition, namespace: &str, authority: &Authority) -> Value {
    let mut service = Map::new();
    service.insert("namespace".into(), json!(namespace));
    service.insert("name".into(), json!(service_name(&definition.deployment)));
    if let Some(path) = &definition.raw.webhook_path {
        service.insert("path".into(), json!(path));
    }
    service.insert("port".into(), json!(definition.port));
    json!({
        "service": service,
        "caBundle": STANDARD.encode(authority.pem()),
    })
}

/// One entry of a webhook configuration's `webhooks`.
fn admission_webhook(
    definition: &Definition,
    placement: &Placement,
    authority: &Authority,
) -> Value {
    let raw = &definition.raw;
    let mut webhook = Map::new();
    webhook.insert("name".into(), json!(definition.name));
    webhook.insert(
        "clientConfig".into(),
        client_config(definition, &placement.install_namespace, authority),
    );
    webhook.insert(
        "admissionReviewVersions".into(),
        json!(raw.admission_review_versions),
    );
    webhook.insert("rules".into(), json!(raw.rules.clone().unwrap_or_default()));
    let optional = [
        ("sideEffects", &raw.side_effects),
        ("failurePolicy", &raw.failure_policy),
        ("matchPolicy", &raw.match_policy),
        ("objectSelector", &raw.object_selector),
        ("timeoutSeconds", &raw.timeout_seconds),
    ];
    for (field, value) in optional {
        if let Some(value) = value {
            webhook.insert(field.into(), value.clone());
        }
    }
    if definition.kind == Kind::Mutating
        && let Some(policy) = &raw.reinvocation_policy
    {
        webhook.insert("reinvocationPolicy".into(), policy.clone());
    }
    // As OLM does: a webhook of an operator that watches some namespaces
    // admits only objects there (cluster-scoped objects always reach it).
    if let Watch::Namespaces(watched) = &placement.watch {
        webhook.insert(
            "namespaceSelector".into(),
            json!({
                "matchExpressions": [{
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": watched,
                }],
            }),
        );
    }
    Value::Object(webhook)
}

/// Whether the bundle ships a `kind` named `name`.
fn shipped(bundle: &Bundle, kind: &str, name: &str) -> bool {
    bundle.manifests.iter().any(|object| {
        object.get("kind").and_then(Value::as_str) == Some(kind)
            && object.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
    })
}

/// An RFC 1123 subdomain, as most object names are.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_olm_and_fit_63_characters() {
        assert_eq!(service_name("che-operator"), "che-operator-service");
        assert_eq!(secret_name("che-operator"), "che-operator-service-cert");
        assert_eq!(service_name("operator.v1"), "operator-v1-service");
        let long = "a".repeat(70);
        assert_eq!(service_name(&long).len(), 63);
        assert_eq!(secret_name(&long).len(), 63);
    }

    #[test]
    fn certificate_volumes_replace_same_named_ones_and_those_at_the_paths() {
        let mut spec = json!({ "template": { "spec": {
            "volumes": [
                { "name": "webhook-cert", "emptyDir": {} },
                { "name": "old-certs", "secret": { "secretName": "x" } },
                { "name": "data", "emptyDir": {} },
            ],
            "containers": [
                { "name": "a", "volumeMounts": [
                    { "name": "old-certs", "mountPath": "/tmp/k8s-webhook-server/serving-certs" },
                    { "name": "data", "mountPath": "/data" },
                ] },
                { "name": "b" },
            ],
        } } });
        mount_certificates(&mut spec, "op-service-cert");
        let volumes: Vec<&str> = spec["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|volume| volume["name"].as_str().unwrap())
            .collect();
        assert_eq!(volumes, ["data", "webhook-cert", "apiservice-cert"]);
        for container in spec["template"]["spec"]["containers"].as_array().unwrap() {
            let paths: Vec<&str> = container["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|mount| mount["mountPath"].as_str().unwrap())
                .collect();
            assert!(paths.contains(&"/tmp/k8s-webhook-server/serving-certs"));
            assert!(paths.contains(&"/apiserver.local.config/certificates"));
            assert_eq!(
                paths.iter().filter(|path| path.starts_with("/tmp")).count(),
                1
            );
        }
        assert_eq!(
            spec.pointer("/template/spec/volumes/2/secret/items/0/path"),
            Some(&json!("apiserver.crt"))
        );
    }

    #[test]
    fn rules_over_every_group_or_webhook_configurations_are_refused() {
        assert!(rule_problem(&json!({ "apiGroups": ["*"] })).is_some());
        assert!(rule_problem(&json!({ "apiGroups": ["core.pakket.dev"] })).is_some());
        assert!(
            rule_problem(&json!({
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["ValidatingWebhookConfigurations"],
            }))
            .is_some()
        );
        assert!(rule_problem(&json!({ "apiGroups": ["apps"], "resources": ["*"] })).is_none());
    }
}
