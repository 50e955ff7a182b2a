//! A CSV's `spec.webhookdefinitions` as plain objects, with OLM's
//! semantics (operator-controller's registry+v1 renderer, which keeps
//! parity with OLM v0's `install/webhook.go` and `certresources.go`):
//!
//! | definition | objects |
//! |---|---|
//! | any, per Deployment | a Service `<deployment>-service` (dots become dashes) selecting the Deployment's `spec.selector.matchLabels`, one port per distinct `containerPort`/`targetPort`; a TLS Secret `<service>-cert` with the serving certificate (or, with cert-manager, a Certificate writing it); the Secret mounted into every container at OLM's two paths |
//! | `ValidatingAdmissionWebhook` | a ValidatingWebhookConfiguration named `generateName` (a trailing `-` dropped), one webhook |
//! | `MutatingAdmissionWebhook` | the same, Mutating, with `reinvocationPolicy` |
//! | `ConversionWebhook` | `spec.conversion` on each CRD of `conversionCRDs` |
//!
//! Every webhook points at the Service with the Instance's CA as
//! `caBundle` ([`crate::certificates`]), or with cert-manager's
//! `inject-ca-from` annotation instead ([`crate::cert_manager`]), and,
//! unless the operator watches every namespace, admits only objects in the
//! watched namespaces. `definitions` reads and checks the definitions
//! (what OLM refuses is refused, naming the CSV field); this module makes
//! the objects.

mod definitions;

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

pub use self::definitions::{Definition, Kind};
use crate::bundle::Bundle;
use crate::cert_manager;
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

/// A CSV's webhooks, checked against the bundle.
#[derive(Clone, Debug, Default)]
pub struct Webhooks {
    definitions: Vec<Definition>,
}

/// Who issues the serving certificates, as rendering sees it.
#[derive(Debug)]
pub enum Certificates<'a> {
    /// Pakket, with the Instance's CA: Secrets with the certificates, and
    /// the CA as `caBundle`.
    Pakket(Box<Authority<'a>>),
    /// cert-manager: Issuers and Certificates, and `inject-ca-from`.
    CertManager,
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
pub(crate) fn name_with_suffix(base: &str, suffix: &str) -> String {
    let room = 63 - suffix.len() - 1;
    let base = if base.len() > room {
        base[..room].trim_end_matches(['-', '.'])
    } else {
        base
    };
    format!("{base}-{suffix}")
}

impl Webhooks {
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
    pub fn convert(&self, crd: &mut Value, namespace: &str, certificates: &Certificates<'_>) {
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
        let mut client = client_config(definition, namespace, certificates);
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
        if let Certificates::CertManager = certificates {
            cert_manager::inject_ca_from(crd, namespace, &definition.deployment);
        }
    }

    /// The Services, the Secrets (or cert-manager's Issuers and
    /// Certificates) and the webhook configurations; or a problem per
    /// Service that cannot be made.
    pub fn objects(
        &self,
        bundle: &Bundle,
        placement: &Placement,
        certificates: &Certificates<'_>,
    ) -> Result<Vec<Value>, Vec<String>> {
        let csv = &bundle.csv;
        let namespace = &placement.install_namespace;
        let mut problems = Vec::new();
        let mut objects = Vec::new();
        if let Certificates::CertManager = certificates
            && !self.is_empty()
        {
            objects.extend(cert_manager::authority(&bundle.package, namespace));
        }
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
                    // Healthy only with a ready endpoint: the apiserver calls it.
                    "metadata": {
                        "name": service,
                        "namespace": namespace,
                        "annotations": {
                            pakket_api::ownership::HEALTH_ANNOTATION:
                                pakket_runtime::kernel::apply::endpoints::READY_ENDPOINTS,
                        },
                    },
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
            let authority = match certificates {
                Certificates::Pakket(authority) => authority,
                Certificates::CertManager => {
                    objects.push(cert_manager::serving_certificate(
                        &bundle.package,
                        &deployment.name,
                        namespace,
                    ));
                    continue;
                }
            };
            let secret = Served {
                deployment: &deployment.name,
                service: &service,
                secret: &secret,
                namespace,
            };
            match serving_secret(authority, secret) {
                Ok(object) => objects.push(object),
                Err(problem) => problems.push(problem),
            }
        }
        objects.extend(self.configurations(placement, certificates));
        if problems.is_empty() {
            Ok(objects)
        } else {
            Err(problems)
        }
    }
}

impl Webhooks {
    /// The admission webhook configurations, one per validating or
    /// mutating definition (conversion webhooks live in their CRDs).
    fn configurations(&self, placement: &Placement, certificates: &Certificates<'_>) -> Vec<Value> {
        let namespace = &placement.install_namespace;
        let mut objects = Vec::new();
        for definition in &self.definitions {
            let kind = match definition.kind {
                Kind::Validating => "ValidatingWebhookConfiguration",
                Kind::Mutating => "MutatingWebhookConfiguration",
                Kind::Conversion => continue,
            };
            let mut configuration = json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": { "name": definition.name },
                "webhooks": [admission_webhook(definition, placement, certificates)],
            });
            if let Certificates::CertManager = certificates {
                cert_manager::inject_ca_from(&mut configuration, namespace, &definition.deployment);
            }
            objects.push(configuration);
        }
        objects
    }
}

/// Where one Deployment's webhooks are served: the Deployment, its
/// Service, the Secret with its serving certificate, their namespace.
#[derive(Clone, Copy)]
struct Served<'a> {
    deployment: &'a str,
    service: &'a str,
    secret: &'a str,
    namespace: &'a str,
}

/// The Secret with the serving certificate Pakket's CA issues for the
/// Service, or why it could not be issued.
fn serving_secret(authority: &Authority<'_>, served: Served<'_>) -> Result<Value, String> {
    let serving = authority
        .serving(served.deployment, served.service, served.namespace)
        .map_err(|problem| {
            format!(
                "cannot issue the serving certificate of Deployment {}: {problem}",
                served.deployment
            )
        })?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": served.secret, "namespace": served.namespace },
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": STANDARD.encode(&serving.certificate),
            "tls.key": STANDARD.encode(&serving.key),
            "ca.crt": STANDARD.encode(authority.pem()),
        },
    }))
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

/// `clientConfig`: the Service, its port and path, and the CA (unless
/// cert-manager injects it).
fn client_config(
    definition: &Definition,
    namespace: &str,
    certificates: &Certificates<'_>,
) -> Value {
    let mut service = Map::new();
    service.insert("namespace".into(), json!(namespace));
    service.insert("name".into(), json!(service_name(&definition.deployment)));
    if let Some(path) = &definition.raw.webhook_path {
        service.insert("path".into(), json!(path));
    }
    service.insert("port".into(), json!(definition.port));
    let mut client = json!({ "service": service });
    if let Certificates::Pakket(authority) = certificates {
        client["caBundle"] = json!(STANDARD.encode(authority.pem()));
    }
    client
}

/// One entry of a webhook configuration's `webhooks`.
fn admission_webhook(
    definition: &Definition,
    placement: &Placement,
    certificates: &Certificates<'_>,
) -> Value {
    let raw = &definition.raw;
    let mut webhook = Map::new();
    webhook.insert("name".into(), json!(definition.name));
    webhook.insert(
        "clientConfig".into(),
        client_config(definition, &placement.install_namespace, certificates),
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
}
