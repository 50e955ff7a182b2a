//! Webhooks whose certificates cert-manager issues
//! (`spec.config.certificateProvider: CertManager`), rendered without a
//! cluster: the Issuers and Certificates, the `inject-ca-from`
//! annotations instead of a `caBundle`, no certificate material of
//! Pakket's, and a cluster without cert-manager refused by name.
//!
//! Data, from ../shared/data/bundles (verbatim from
//! community-operators-prod, `operators/<pkg>/<version>/`, see its
//! README):
//! - `node-healthcheck-operator/0.12.0`: a validating webhook;
//! - `eclipse-che/7.121.0`: a conversion, a mutating and a validating
//!   webhook, and a dependency on devworkspace-operator;
//! - `etcd/0.9.4`: no webhooks.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use pakket_api::{BundleProperty, BundleTemplate, Instance, InstanceSpec};
use pakket_registry_v1::RegistryV1;
use pakket_registry_v1::cert_manager::INJECT_CA_FROM;
use pakket_registry_v1::certificates::CertificateKey;
use pakket_runtime::{ClusterFacts, InstalledContent, ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Value, json};

const CERT_MANAGER: &str = "cert-manager.io/v1";

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
    // 2026-01-01T00:00:00Z: Pakket's own certificates are then the same
    // for every render in these tests.
    instance.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_second(1_767_225_600).unwrap(),
    ));
    instance
}

/// A cluster that serves cert-manager's kinds (or not), with
/// devworkspace-operator installed (eclipse-che needs it).
fn cluster(serves_cert_manager: bool) -> ClusterFacts {
    let mut cluster = ClusterFacts {
        installed: vec![InstalledContent {
            instance: "dwo".into(),
            bundle: "dwo-v0310".into(),
            properties: vec![BundleProperty {
                type_: "olm.package".into(),
                value: json!({ "packageName": "devworkspace-operator", "version": "0.31.0" }),
            }],
        }],
        ..ClusterFacts::default()
    };
    if serves_cert_manager {
        for kind in ["Issuer", "Certificate", "ClusterIssuer"] {
            cluster
                .served
                .insert((CERT_MANAGER.to_owned(), kind.to_owned()));
        }
    }
    cluster
}

/// The objects of the bundle at `path` through the provisioner.
fn objects(path: &str, config: Value, cluster: &ClusterFacts) -> Result<Vec<Value>, ObjectsError> {
    objects_in_class(path, config, None, cluster)
}

/// The same, for an Instance of a class with `parameters`.
fn objects_in_class(
    path: &str,
    config: Value,
    parameters: Option<&serde_json::Map<String, Value>>,
    cluster: &ClusterFacts,
) -> Result<Vec<Value>, ObjectsError> {
    let content = pakket_testkit::data(&format!("bundles/{path}"));
    let instance = instance(config);
    let key = CertificateKey::from_bytes(b"a test certificate key, 32 bytes or more").unwrap();
    RegistryV1::with_certificate_key("pakket.dev/registry-v1", key).objects(&ObjectsRequest {
        content: &content,
        max_object_size: 4 << 20,
        instance: &instance,
        cluster,
        class_parameters: parameters,
    })
}

fn with_cert_manager(path: &str) -> Vec<Value> {
    objects(
        path,
        json!({ "certificateProvider": "CertManager" }),
        &cluster(true),
    )
    .unwrap()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| {
            object["kind"] == kind && object.pointer("/metadata/name") == Some(&json!(name))
        })
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// Asserts the package's self-signed Issuer, CA Certificate and CA Issuer
/// are there, in `namespace`.
fn assert_authority(objects: &[Value], package: &str, namespace: &str) {
    let self_signed = find(objects, "Issuer", &format!("{package}-selfsigned-issuer"));
    assert_eq!(self_signed["apiVersion"], CERT_MANAGER);
    assert_eq!(self_signed["metadata"]["namespace"], namespace);
    assert_eq!(self_signed["spec"], json!({ "selfSigned": {} }));
    let ca_name = format!("{package}-webhook-ca");
    let ca = find(objects, "Certificate", &ca_name);
    assert_eq!(ca["metadata"]["namespace"], namespace);
    assert_eq!(ca["spec"]["isCA"], true);
    assert_eq!(ca["spec"]["secretName"], ca_name.as_str());
    assert_eq!(
        ca["spec"]["issuerRef"],
        json!({ "name": format!("{package}-selfsigned-issuer"), "kind": "Issuer", "group": "cert-manager.io" })
    );
    let issuer = find(objects, "Issuer", &ca_name);
    assert_eq!(issuer["spec"], json!({ "ca": { "secretName": ca_name } }));
}

/// Asserts the serving Certificate of `deployment` is signed by the CA
/// Issuer, for the Service's names, written to the Secret the Deployment
/// mounts.
fn assert_serving(objects: &[Value], package: &str, deployment: &str, namespace: &str) {
    let secret = format!("{deployment}-service-cert");
    let service = format!("{deployment}-service.{namespace}");
    let certificate = find(objects, "Certificate", &secret);
    assert_eq!(certificate["metadata"]["namespace"], namespace);
    let mut expected = json!({
        "secretName": secret,
        "dnsNames": [
            service,
            format!("{service}.svc"),
            format!("{service}.svc.cluster.local"),
        ],
        "usages": ["server auth"],
        "isCA": false,
        "duration": "17520h0m0s",
        "renewBefore": "24h0m0s",
        "issuerRef": { "name": format!("{package}-webhook-ca"), "kind": "Issuer", "group": "cert-manager.io" },
    });
    // cert-manager refuses a commonName over 64 characters.
    if service.len() <= 64 {
        expected["commonName"] = json!(service);
    }
    assert_eq!(certificate["spec"], expected);
    let volumes = &find(objects, "Deployment", deployment)["spec"]["template"]["spec"]["volumes"];
    for volume in ["webhook-cert", "apiservice-cert"] {
        let mounted = volumes
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == volume)
            .unwrap();
        assert_eq!(mounted["secret"]["secretName"], secret.as_str(), "{volume}");
    }
}

/// Asserts `object` asks cainjector for `deployment`'s CA.
fn assert_injected(object: &Value, namespace: &str, deployment: &str) {
    assert_eq!(
        object["metadata"]["annotations"][INJECT_CA_FROM],
        format!("{namespace}/{deployment}-service-cert"),
        "{}",
        object["metadata"]["name"]
    );
}

/// Asserts no Secret carries a certificate or key Pakket made, and no
/// webhook has a `caBundle`.
fn assert_no_pakket_material(objects: &[Value]) {
    for object in objects {
        if object["kind"] == "Secret" {
            let data = object.get("data").and_then(Value::as_object);
            for key in ["tls.crt", "tls.key", "ca.crt"] {
                assert!(
                    data.is_none_or(|data| !data.contains_key(key)),
                    "Secret {} holds {key}",
                    object["metadata"]["name"]
                );
            }
        }
        let text = object.to_string();
        assert!(
            !text.contains("caBundle"),
            "{} {} has a caBundle",
            object["kind"],
            object["metadata"]["name"]
        );
    }
}

#[test]
fn node_healthcheck_gets_issuers_a_certificate_and_an_injected_webhook() {
    let objects = with_cert_manager("node-healthcheck-operator/0.12.0");
    let namespace = "openshift-workload-availability";
    let deployment = "node-healthcheck-controller-manager";
    assert_authority(&objects, "node-healthcheck-operator", namespace);
    assert_serving(&objects, "node-healthcheck-operator", deployment, namespace);
    let configuration = find(
        &objects,
        "ValidatingWebhookConfiguration",
        "vnodehealthcheck.kb.io",
    );
    assert_injected(configuration, namespace, deployment);
    assert_eq!(
        configuration["webhooks"][0]["clientConfig"],
        json!({ "service": {
            "namespace": namespace,
            "name": "node-healthcheck-controller-manager-service",
            "path": "/validate-remediation-medik8s-io-v1alpha1-nodehealthcheck",
            "port": 443,
        } })
    );
    find(
        &objects,
        "Service",
        "node-healthcheck-controller-manager-service",
    );
    assert_no_pakket_material(&objects);
    let cert_manager_objects = objects
        .iter()
        .filter(|object| object["apiVersion"] == CERT_MANAGER)
        .count();
    assert_eq!(cert_manager_objects, 4, "two Issuers, two Certificates");
}

#[test]
fn eclipse_che_converts_and_admits_through_cert_managers_ca() {
    let objects = with_cert_manager("eclipse-che/7.121.0");
    let namespace = "openshift-operators";
    assert_authority(&objects, "eclipse-che", namespace);
    assert_serving(&objects, "eclipse-che", "che-operator", namespace);
    let crd = find(
        &objects,
        "CustomResourceDefinition",
        "checlusters.org.eclipse.che",
    );
    assert_injected(crd, namespace, "che-operator");
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"],
        json!({ "service": {
            "namespace": namespace,
            "name": "che-operator-service",
            "path": "/convert",
            "port": 443,
        } })
    );
    for (kind, name) in [
        ("MutatingWebhookConfiguration", "mchecluster.kb.io"),
        ("ValidatingWebhookConfiguration", "vchecluster.kb.io"),
    ] {
        assert_injected(find(&objects, kind, name), namespace, "che-operator");
    }
    assert_no_pakket_material(&objects);
}

#[test]
fn cert_manager_objects_do_not_depend_on_the_time_or_the_key() {
    let once = with_cert_manager("eclipse-che/7.121.0");
    assert_eq!(once, with_cert_manager("eclipse-che/7.121.0"));
    let content = pakket_testkit::data("bundles/eclipse-che/7.121.0");
    let instance = instance(json!({ "certificateProvider": "CertManager" }));
    let cluster = cluster(true);
    let other_key = RegistryV1::new("pakket.dev/registry-v1")
        .objects(&ObjectsRequest {
            content: &content,
            max_object_size: 4 << 20,
            instance: &instance,
            cluster: &cluster,
            class_parameters: None,
        })
        .unwrap();
    assert_eq!(once, other_key);
}

#[test]
fn a_cluster_without_cert_manager_is_refused_naming_the_setting() {
    for path in ["node-healthcheck-operator/0.12.0", "eclipse-che/7.121.0"] {
        let refused = objects(
            path,
            json!({ "certificateProvider": "CertManager" }),
            &cluster(false),
        );
        let Err(ObjectsError::Content(message)) = refused else {
            panic!("{path}: not refused: {refused:?}");
        };
        assert!(
            message.contains("spec.config.certificateProvider is CertManager")
                && message.contains("cert-manager.io/v1")
                && message.contains("install cert-manager first"),
            "{path}: {message}"
        );
    }
    // Without webhooks there is nothing to issue, and nothing to refuse.
    let etcd = objects(
        "etcd/0.9.4",
        json!({ "certificateProvider": "CertManager" }),
        &cluster(false),
    )
    .unwrap();
    assert!(
        etcd.iter()
            .all(|object| object["apiVersion"] != CERT_MANAGER)
    );
}

#[test]
fn pakket_stays_the_default_and_other_providers_are_refused() {
    let pakket = objects(
        "node-healthcheck-operator/0.12.0",
        json!({ "certificateProvider": "Pakket" }),
        &cluster(true),
    )
    .unwrap();
    assert_eq!(
        pakket,
        objects(
            "node-healthcheck-operator/0.12.0",
            json!({}),
            &cluster(true)
        )
        .unwrap()
    );
    assert!(
        pakket
            .iter()
            .all(|object| object["apiVersion"] != CERT_MANAGER)
    );
    find(
        &pakket,
        "Secret",
        "node-healthcheck-controller-manager-service-cert",
    );
    for value in [json!("certManager"), json!("Vault"), json!(true)] {
        let refused = objects(
            "node-healthcheck-operator/0.12.0",
            json!({ "certificateProvider": value }),
            &cluster(true),
        );
        let Err(ObjectsError::Config { field, problem }) = refused else {
            panic!("{value}: not a config error: {refused:?}");
        };
        assert_eq!(field, "spec.config.certificateProvider");
        assert!(
            problem.contains("write Pakket (the default) or CertManager"),
            "{problem}"
        );
    }
}

#[test]
fn a_class_sets_the_provider_for_its_instances_and_an_instance_may_choose_its_own() {
    let class = json!({ "certificateProvider": "CertManager" });
    let class = class.as_object();
    let by_class = objects_in_class(
        "node-healthcheck-operator/0.12.0",
        json!({}),
        class,
        &cluster(true),
    )
    .unwrap();
    assert_eq!(
        by_class,
        with_cert_manager("node-healthcheck-operator/0.12.0"),
        "the class's setting is the Instance's default"
    );
    let own = objects_in_class(
        "node-healthcheck-operator/0.12.0",
        json!({ "certificateProvider": "Pakket" }),
        class,
        &cluster(true),
    )
    .unwrap();
    assert!(
        !own.iter().any(|object| object["kind"] == "Certificate"),
        "the Instance's own setting wins"
    );
    let bad = json!({ "certificateProvider": "Vault" });
    let Err(ObjectsError::Config { field, .. }) = objects_in_class(
        "node-healthcheck-operator/0.12.0",
        json!({}),
        bad.as_object(),
        &cluster(true),
    ) else {
        panic!("a bad class value is refused");
    };
    assert_eq!(field, "the ProvisionerClass parameter certificateProvider");
}
