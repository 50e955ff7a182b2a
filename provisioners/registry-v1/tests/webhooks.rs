//! Bundles with webhooks rendered without a cluster and without
//! cert-manager: the Service, the TLS Secret and its mounts, the webhook
//! configurations and CRD conversion, each checked against the Secret's
//! certificate as the apiserver would.
//!
//! Data, from ../shared/data/bundles (verbatim from
//! community-operators-prod, `operators/<pkg>/<version>/`, see its
//! README; copies made here are changed, the data never):
//! - `cert-manager/1.16.5`: a validating and a mutating webhook;
//! - `node-healthcheck-operator/0.12.0`: a validating webhook, and
//!   Services of its own;
//! - `eclipse-che/7.121.0`: a conversion, a mutating and a validating
//!   webhook.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use pakket_api::{BundleTemplate, Instance, InstanceSpec};
use pakket_registry_v1::certificates::{CertificateKey, Issuance, PERIOD};
use pakket_registry_v1::{RegistryV1, bundle as registry_bundle, config, render};
use pakket_runtime::{ClusterFacts, ObjectsError, ObjectsRequest, Provisioner};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::{Value, json};

/// When the test Instance was created: 2026-01-01T00:00:00Z.
const CREATED: i64 = 1_767_225_600;
const DAY: u64 = 24 * 60 * 60;

fn bundle(path: &str) -> PathBuf {
    pakket_testkit::data(&format!("bundles/{path}"))
}

fn instance(config: Value) -> Instance {
    let mut instance = Instance::new(
        "operator",
        InstanceSpec {
            class: "registry-v1".into(),
            selector: None,
            bundle: BundleTemplate {
                name: "operator".into(),
                spec: None,
            },
            deletion_policy: Default::default(),
            config: config.as_object().cloned(),
            progress_deadline: None,
            drift: None,
        },
    );
    instance.metadata.uid = Some("6f1c7a52-0d1e-4a4f-9d55-2b1c3e0a9e11".into());
    instance.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_second(CREATED).unwrap(),
    ));
    instance
}

fn key() -> CertificateKey {
    CertificateKey::from_bytes(b"a test certificate key, 32 bytes or more").unwrap()
}

/// The objects of the bundle at `content`, `days` after the Instance was
/// created, through the provisioner's own render path.
fn render_at(content: &Path, config: Value, days: u64) -> Result<Vec<Value>, Vec<String>> {
    let bundle = registry_bundle::read(content, 4 << 20)?;
    let instance = instance(config);
    let placement = config::placement(instance.spec.config.as_ref(), None, &bundle)
        .map_err(|error| vec![format!("{}: {}", error.field, error.problem)])?;
    let key = key();
    let now = std::time::UNIX_EPOCH + Duration::from_secs(CREATED as u64 + days * DAY);
    let issuance = Issuance::new(&key, &instance, now);
    render::render(&bundle, &placement, &ClusterFacts::default(), &issuance)
}

fn render(path: &str) -> Vec<Value> {
    render_at(&bundle(path), json!({}), 10).unwrap()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| {
            object["kind"] == kind && object.pointer("/metadata/name") == Some(&json!(name))
        })
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn decode(text: &Value) -> Vec<u8> {
    STANDARD.decode(text.as_str().unwrap()).unwrap()
}

/// Whether the Secret's certificate chains to `ca_bundle` (base64 PEM) for
/// `name`, as the apiserver checks a webhook's certificate.
fn verifies(ca_bundle: &Value, secret: &Value, name: &str, days: u64) -> Result<(), String> {
    let ca_pem = decode(ca_bundle);
    let ca = CertificateDer::from_pem_slice(&ca_pem).map_err(|e| e.to_string())?;
    let leaf_pem = decode(&secret["data"]["tls.crt"]);
    let leaf = CertificateDer::from_pem_slice(&leaf_pem).map_err(|e| e.to_string())?;
    let anchor = webpki::anchor_from_trusted_cert(&ca).map_err(|e| e.to_string())?;
    let leaf = webpki::EndEntityCert::try_from(&leaf).map_err(|e| e.to_string())?;
    let at = UnixTime::since_unix_epoch(Duration::from_secs(CREATED as u64 + days * DAY));
    leaf.verify_for_usage(
        &[webpki::ring::ED25519],
        &[anchor],
        &[],
        at,
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(|e| e.to_string())?;
    leaf.verify_is_valid_for_subject_name(&ServerName::try_from(name).unwrap())
        .map_err(|e| e.to_string())
}

/// Copies the bundle at `path` to a temporary directory with `edit`
/// applied to the text of every file.
fn edited(path: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    let source = bundle(path);
    for dir in ["manifests", "metadata"] {
        std::fs::create_dir(copy.path().join(dir)).unwrap();
        for entry in std::fs::read_dir(source.join(dir)).unwrap() {
            let entry = entry.unwrap();
            let text = edit(std::fs::read_to_string(entry.path()).unwrap());
            std::fs::write(copy.path().join(dir).join(entry.file_name()), text).unwrap();
        }
    }
    copy
}

/// Asserts the Deployment `name` mounts `secret` where OLM does, in every
/// container.
fn assert_mounted(deployment: &Value, secret: &str) {
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let webhook = volumes
        .iter()
        .find(|v| v["name"] == "webhook-cert")
        .unwrap();
    assert_eq!(
        webhook["secret"],
        json!({ "secretName": secret, "items": [
            { "key": "tls.crt", "path": "tls.crt" },
            { "key": "tls.key", "path": "tls.key" },
        ] })
    );
    let apiservice = volumes
        .iter()
        .find(|v| v["name"] == "apiservice-cert")
        .unwrap();
    assert_eq!(
        apiservice["secret"]["items"],
        json!([
            { "key": "tls.crt", "path": "apiserver.crt" },
            { "key": "tls.key", "path": "apiserver.key" },
        ])
    );
    for container in deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
    {
        let mounts = container["volumeMounts"].as_array().unwrap();
        assert!(mounts.contains(&json!({
            "name": "webhook-cert",
            "mountPath": "/tmp/k8s-webhook-server/serving-certs",
        })));
        assert!(mounts.contains(&json!({
            "name": "apiservice-cert",
            "mountPath": "/apiserver.local.config/certificates",
        })));
    }
}

#[test]
fn cert_manager_gets_its_webhook_service_certificate_and_configurations() {
    let objects = render("cert-manager/1.16.5");
    let service = find(&objects, "Service", "cert-manager-webhook-service");
    assert_eq!(service["metadata"]["namespace"], "cert-manager");
    assert_eq!(
        service["spec"],
        json!({
            "ports": [{ "name": "443", "port": 443, "targetPort": "https" }],
            "selector": {
                "app.kubernetes.io/component": "webhook",
                "app.kubernetes.io/instance": "cert-manager",
                "app.kubernetes.io/name": "webhook",
            },
        }),
        "one port for both webhooks, the Deployment's selector"
    );
    let secret = find(&objects, "Secret", "cert-manager-webhook-service-cert");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(secret["metadata"]["namespace"], "cert-manager");
    for key in ["tls.crt", "tls.key", "ca.crt"] {
        assert!(
            String::from_utf8(decode(&secret["data"][key]))
                .unwrap()
                .starts_with("-----BEGIN"),
            "{key}"
        );
    }
    assert_mounted(
        find(&objects, "Deployment", "cert-manager-webhook"),
        "cert-manager-webhook-service-cert",
    );
    let controller = find(&objects, "Deployment", "cert-manager");
    assert!(
        controller.pointer("/spec/template/spec/volumes").is_none(),
        "a Deployment without webhooks is left alone"
    );

    let validating = find(
        &objects,
        "ValidatingWebhookConfiguration",
        "validate.webhooks.cert-manager.io",
    );
    let webhook = &validating["webhooks"][0];
    assert_eq!(webhook["name"], "validate.webhooks.cert-manager.io");
    assert_eq!(
        webhook["clientConfig"]["service"],
        json!({
            "namespace": "cert-manager",
            "name": "cert-manager-webhook-service",
            "path": "/validate",
            "port": 443,
        })
    );
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["matchPolicy"], "Equivalent");
    assert_eq!(webhook["sideEffects"], "None");
    assert_eq!(webhook["timeoutSeconds"], 30);
    assert_eq!(webhook["admissionReviewVersions"], json!(["v1"]));
    assert_eq!(webhook["rules"][0]["resources"], json!(["*/*"]));
    assert!(
        webhook.get("namespaceSelector").is_none(),
        "an operator watching every namespace admits everywhere"
    );
    let ca_bundle = &webhook["clientConfig"]["caBundle"];
    assert_eq!(decode(ca_bundle), decode(&secret["data"]["ca.crt"]));
    for name in [
        "cert-manager-webhook-service.cert-manager",
        "cert-manager-webhook-service.cert-manager.svc",
        "cert-manager-webhook-service.cert-manager.svc.cluster.local",
    ] {
        verifies(ca_bundle, secret, name, 10).unwrap();
    }
    assert!(
        verifies(
            ca_bundle,
            secret,
            "cert-manager-webhook.cert-manager.svc",
            10
        )
        .is_err()
    );

    let mutating = find(
        &objects,
        "MutatingWebhookConfiguration",
        "mutate.webhooks.cert-manager.io",
    );
    assert_eq!(
        mutating["webhooks"][0]["clientConfig"]["service"]["path"],
        "/mutate"
    );
    assert_eq!(
        mutating["webhooks"][0]["clientConfig"]["caBundle"],
        *ca_bundle
    );
}

#[test]
fn node_healthcheck_keeps_its_own_services_and_targets_the_webhook_port() {
    let objects = render("node-healthcheck-operator/0.12.0");
    let namespace = "openshift-workload-availability";
    let service = find(
        &objects,
        "Service",
        "node-healthcheck-controller-manager-service",
    );
    assert_eq!(service["metadata"]["namespace"], namespace);
    assert_eq!(
        service["spec"]["ports"],
        json!([{ "name": "443", "port": 443, "targetPort": 9443 }])
    );
    // The bundle's own Services are installed as they are.
    find(&objects, "Service", "node-healthcheck-webhook-service");
    let secret = find(
        &objects,
        "Secret",
        "node-healthcheck-controller-manager-service-cert",
    );
    assert_mounted(
        find(
            &objects,
            "Deployment",
            "node-healthcheck-controller-manager",
        ),
        "node-healthcheck-controller-manager-service-cert",
    );
    let plugin = find(
        &objects,
        "Deployment",
        "node-healthcheck-node-remediation-console-plugin",
    );
    assert_eq!(
        plugin["spec"]["template"]["spec"]["volumes"],
        json!([{ "name": "nrc-plugin-cert", "secret": { "defaultMode": 420, "secretName": "nrc-plugin-cert" } }]),
        "the console plugin serves no webhook: its volumes are its own"
    );
    let webhook = &find(
        &objects,
        "ValidatingWebhookConfiguration",
        "vnodehealthcheck.kb.io",
    )["webhooks"][0];
    assert_eq!(
        webhook["clientConfig"]["service"]["name"],
        "node-healthcheck-controller-manager-service"
    );
    verifies(
        &webhook["clientConfig"]["caBundle"],
        secret,
        &format!("node-healthcheck-controller-manager-service.{namespace}.svc"),
        10,
    )
    .unwrap();
}

#[test]
fn a_webhook_of_an_operator_watching_its_own_namespace_admits_only_there() {
    // node-healthcheck-operator 0.12.0 with OwnNamespace marked supported
    // (in a copy).
    let copy = edited("node-healthcheck-operator/0.12.0", |text| {
        text.replace(
            "- supported: false\n      type: OwnNamespace",
            "- supported: true\n      type: OwnNamespace",
        )
    });
    let objects = render_at(
        copy.path(),
        json!({ "installNamespace": "nhc", "watchNamespaces": ["nhc"] }),
        10,
    )
    .unwrap();
    let webhook = &find(
        &objects,
        "ValidatingWebhookConfiguration",
        "vnodehealthcheck.kb.io",
    )["webhooks"][0];
    assert_eq!(
        webhook["namespaceSelector"],
        json!({ "matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "In",
            "values": ["nhc"],
        }] })
    );
}

#[test]
fn eclipse_che_converts_its_crd_through_its_webhook() {
    let objects = render("eclipse-che/7.121.0");
    let namespace = "openshift-operators";
    let crd = find(
        &objects,
        "CustomResourceDefinition",
        "checlusters.org.eclipse.che",
    );
    let conversion = &crd["spec"]["conversion"];
    assert_eq!(conversion["strategy"], "Webhook");
    assert_eq!(
        conversion["webhook"]["clientConfig"]["service"],
        json!({
            "namespace": namespace,
            "name": "che-operator-service",
            "path": "/convert",
            "port": 443,
        }),
        "the bundle's own clientConfig (namespace eclipse-che, no port) is replaced"
    );
    assert_eq!(
        conversion["webhook"]["conversionReviewVersions"],
        json!(["v1", "v2"])
    );
    let secret = find(&objects, "Secret", "che-operator-service-cert");
    verifies(
        &conversion["webhook"]["clientConfig"]["caBundle"],
        secret,
        &format!("che-operator-service.{namespace}.svc"),
        10,
    )
    .unwrap();
    let service = find(&objects, "Service", "che-operator-service");
    assert_eq!(
        service["spec"]["ports"],
        json!([{ "name": "443", "port": 443, "targetPort": 9443 }]),
        "three webhooks on one port: one Service port"
    );
    find(
        &objects,
        "MutatingWebhookConfiguration",
        "mchecluster.kb.io",
    );
    find(
        &objects,
        "ValidatingWebhookConfiguration",
        "vchecluster.kb.io",
    );
    assert!(
        !objects
            .iter()
            .any(|object| object["metadata"]["name"] == "ccheclusters.kb.io"),
        "a conversion webhook has no configuration object"
    );
}

#[test]
fn invalid_definitions_are_reported_naming_the_field() {
    let copy = edited("node-healthcheck-operator/0.12.0", |text| {
        text.replace(
            "deploymentName: node-healthcheck-controller-manager",
            "deploymentName: no-such-deployment",
        )
        .replace(
            "type: ValidatingAdmissionWebhook",
            "type: ValidatingWebhook",
        )
    });
    let problems = render_at(copy.path(), json!({}), 10).unwrap_err();
    let csv = "ClusterServiceVersion node-healthcheck-operator.v0.12.0";
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with(&format!(
            "{csv}: spec.webhookdefinitions[0].deploymentName \"no-such-deployment\" is not among spec.install.spec.deployments"
        )),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with(&format!(
            "{csv}: spec.webhookdefinitions[0].type is \"ValidatingWebhook\"; write ValidatingAdmissionWebhook"
        )),
        "{problems:#?}"
    );
    let missing = edited("node-healthcheck-operator/0.12.0", |text| {
        text.replace(
            "      deploymentName: node-healthcheck-controller-manager\n",
            "",
        )
    });
    let problems = render_at(missing.path(), json!({}), 10).unwrap_err();
    assert!(
        problems[0].contains("spec.webhookdefinitions[0].deploymentName is missing"),
        "{problems:#?}"
    );
}

#[test]
fn a_conversion_webhook_for_a_crd_not_in_the_bundle_names_the_field() {
    let copy = edited("eclipse-che/7.121.0", |text| {
        text.replace(
            "conversionCRDs:\n        - checlusters.org.eclipse.che",
            "conversionCRDs:\n        - nothings.org.eclipse.che",
        )
    });
    let problems = render_at(copy.path(), json!({}), 10).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains(
            "spec.webhookdefinitions[0].conversionCRDs[0] names nothings.org.eclipse.che, which is not a CRD of this bundle"
        ),
        "{problems:#?}"
    );
}

#[test]
fn conversion_webhooks_need_an_operator_that_supports_all_namespaces_only() {
    // As OLM v0 (isSingletonOperator) and operator-controller
    // (CheckConversionWebhookSupport) refuse it.
    let copy = edited("eclipse-che/7.121.0", |text| {
        text.replace(
            "- supported: false\n      type: OwnNamespace",
            "- supported: true\n      type: OwnNamespace",
        )
    });
    let problems = render_at(copy.path(), json!({}), 10).unwrap_err();
    assert!(
        problems[0].contains("spec.webhookdefinitions[0] is a ConversionWebhook")
            && problems[0].contains("AllNamespaces only"),
        "{problems:#?}"
    );
}

#[test]
fn rendering_twice_gives_identical_objects_and_only_the_serving_secret_rotates() {
    for path in [
        "cert-manager/1.16.5",
        "node-healthcheck-operator/0.12.0",
        "eclipse-che/7.121.0",
    ] {
        let content = bundle(path);
        let once = render_at(&content, json!({}), 10).unwrap();
        assert_eq!(once, render_at(&content, json!({}), 10).unwrap(), "{path}");
        assert_eq!(once, render_at(&content, json!({}), 89).unwrap(), "{path}");
        let later = render_at(&content, json!({}), PERIOD.as_secs() / DAY).unwrap();
        let changed: Vec<String> = once
            .iter()
            .zip(&later)
            .filter(|(a, b)| a != b)
            .map(|(object, _)| format!("{}/{}", object["kind"], object["metadata"]["name"]))
            .collect();
        assert!(
            !changed.is_empty() && changed.iter().all(|name| name.starts_with("\"Secret\"")),
            "{path}: {changed:?}"
        );
    }
}

#[test]
fn the_provisioner_renders_webhooks_with_its_certificate_key() {
    let content = bundle("cert-manager/1.16.5");
    let instance = instance(json!({}));
    let cluster = ClusterFacts::default();
    let request = ObjectsRequest {
        content: &content,
        max_object_size: 4 << 20,
        instance: &instance,
        cluster: &cluster,
        class_parameters: None,
    };
    let provisioner = RegistryV1::with_certificate_key("pakket.dev/registry-v1", key());
    let objects: Result<Vec<Value>, ObjectsError> = provisioner.objects(&request);
    let objects = objects.unwrap();
    let ca = |objects: &[Value]| {
        find(objects, "Secret", "cert-manager-webhook-service-cert")["data"]["ca.crt"].clone()
    };
    // Another replica with the same key issues the same CA.
    let again = RegistryV1::with_certificate_key("pakket.dev/registry-v1", key())
        .objects(&request)
        .unwrap();
    assert_eq!(ca(&objects), ca(&again));
}
