//! registry+v1 bundles from ../shared/data/bundles (verbatim from
//! community-operators-prod, see its README) rendered to plain objects:
//! every install mode the etcd operator supports, the refusals that name
//! their field, and the bundle problems reported together.

use std::path::PathBuf;

use pakket_api::{BundleTemplate, Instance, InstanceSpec};
use pakket_registry_v1::RegistryV1;
use pakket_runtime::{ClusterFacts, ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Value, json};

/// `bundles/<name>/<version>` in the shared test data.
fn bundle(path: &str) -> PathBuf {
    pakket_testkit::data(&format!("bundles/{path}"))
}

fn instance(config: Value) -> Instance {
    Instance::new(
        "etcd",
        InstanceSpec {
            class: "registry-v1".into(),
            selector: None,
            bundle: BundleTemplate {
                name: "etcd.v0.9.4".into(),
                spec: None,
            },
            deletion_policy: Default::default(),
            config: config.as_object().cloned(),
            progress_deadline: None,
            drift: None,
        },
    )
}

fn render(path: &str, config: Value) -> Result<Vec<Value>, ObjectsError> {
    let content = bundle(path);
    let instance = instance(config);
    let cluster = ClusterFacts {
        version: Some((1, 35)),
        ..ClusterFacts::default()
    };
    RegistryV1::new("pakket.dev/registry-v1").objects(&ObjectsRequest {
        content: &content,
        max_object_size: 4 << 20,
        instance: &instance,
        cluster: &cluster,
        class_parameters: None,
    })
}

/// `Kind/namespace/name` of each object, sorted.
fn names(objects: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|object| {
            let text = |pointer: &str| {
                object
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            match text("/metadata/namespace") {
                "" => format!("{}/{}", text("/kind"), text("/metadata/name")),
                namespace => format!("{}/{namespace}/{}", text("/kind"), text("/metadata/name")),
            }
        })
        .collect();
    names.sort();
    names
}

fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects
        .iter()
        .filter(|object| object.get("kind").and_then(Value::as_str) == Some(kind))
        .collect()
}

#[test]
fn etcd_without_config_watches_its_own_namespace() {
    // etcd 0.9.4 supports OwnNamespace and SingleNamespace, not
    // AllNamespaces; it suggests no namespace, so the package names it.
    let objects = render("etcd/0.9.4", json!({})).unwrap();
    let names = names(&objects);
    for expected in [
        "CustomResourceDefinition/etcdbackups.etcd.database.coreos.com",
        "CustomResourceDefinition/etcdclusters.etcd.database.coreos.com",
        "CustomResourceDefinition/etcdrestores.etcd.database.coreos.com",
        "Deployment/etcd/etcd-operator",
        "Namespace/etcd",
        "ServiceAccount/etcd/etcd-operator",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} in {names:#?}"
        );
    }
    let deployment = find(&objects, "Deployment")[0];
    let annotations = deployment
        .pointer("/spec/template/metadata/annotations")
        .unwrap();
    assert_eq!(annotations["olm.targetNamespaces"], "etcd");
    assert_eq!(annotations["olm.operatorNamespace"], "etcd");
    // The CSV's own annotations are copied to the pod template, as OLM does.
    assert_eq!(annotations["capabilities"], "Full Lifecycle");
    assert_eq!(
        deployment.pointer("/spec/revisionHistoryLimit"),
        Some(&json!(1))
    );
    let roles = find(&objects, "Role");
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0].pointer("/metadata/namespace").unwrap(), "etcd");
    assert!(find(&objects, "ClusterRole").is_empty());
    let namespace = find(&objects, "Namespace")[0];
    assert_eq!(
        namespace.pointer("/metadata/annotations/core.pakket.dev~1create-if-absent"),
        Some(&json!("true")),
        "an existing namespace is used, not adopted"
    );
}

#[test]
fn etcd_in_another_namespace_watching_one_other_namespace() {
    let objects = render(
        "etcd/0.9.4",
        json!({ "installNamespace": "operators", "watchNamespaces": ["team-a"] }),
    )
    .unwrap();
    let deployment = find(&objects, "Deployment")[0];
    assert_eq!(
        deployment.pointer("/metadata/namespace").unwrap(),
        "operators"
    );
    assert_eq!(
        deployment
            .pointer("/spec/template/metadata/annotations/olm.targetNamespaces")
            .unwrap(),
        "team-a"
    );
    let roles = find(&objects, "Role");
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0].pointer("/metadata/namespace").unwrap(), "team-a");
    let binding = find(&objects, "RoleBinding")[0];
    assert_eq!(
        binding.pointer("/subjects/0/namespace").unwrap(),
        "operators",
        "the role in the watched namespace is bound to the account where the operator runs"
    );
}

#[test]
fn each_invalid_watch_is_refused_naming_the_field() {
    let refused = |config: Value| match render("etcd/0.9.4", config) {
        Err(ObjectsError::Config { field, problem }) => format!("{field}: {problem}"),
        other => panic!("not a config error: {other:?}"),
    };
    let multi = refused(json!({ "watchNamespaces": ["team-a", "team-b"] }));
    assert!(
        multi.starts_with("spec.config.watchNamespaces: lists 2 namespaces")
            && multi.contains("does not support MultiNamespace"),
        "{multi}"
    );
    let twice = refused(json!({ "watchNamespaces": ["team-a", "team-a"] }));
    assert!(
        twice.starts_with("spec.config.watchNamespaces[1]: team-a is listed twice"),
        "{twice}"
    );
    let bad_name = refused(json!({ "installNamespace": "Not_A_Namespace" }));
    assert!(
        bad_name.starts_with(
            "spec.config.installNamespace: \"Not_A_Namespace\" is not a namespace name"
        ),
        "{bad_name}"
    );
    let unknown = refused(json!({ "watchNamespace": ["team-a"] }));
    assert!(
        unknown.starts_with("spec.config.watchNamespace: registry-v1 reads only"),
        "{unknown}"
    );
    let not_a_list = refused(json!({ "watchNamespaces": "team-a" }));
    assert!(not_a_list.contains("is not a list"), "{not_a_list}");
}

#[test]
fn rendering_is_deterministic() {
    let config = json!({ "watchNamespaces": ["team-a"] });
    assert_eq!(
        render("etcd/0.9.2", config.clone()).unwrap(),
        render("etcd/0.9.2", config).unwrap()
    );
}

#[test]
fn an_upgrade_keeps_the_deployment_and_names_changed_roles_anew() {
    let old = render("etcd/0.9.2", json!({})).unwrap();
    let new = render("etcd/0.9.4", json!({})).unwrap();
    let name = |objects: &[Value], kind: &str| {
        find(objects, kind)[0]
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    };
    assert_eq!(name(&old, "Deployment"), name(&new, "Deployment"));
    assert!(name(&old, "Role").starts_with("etcdoperator.v0.9.2-etcd-operator-"));
    assert!(name(&new, "Role").starts_with("etcdoperator.v0.9.4-etcd-operator-"));
}

#[test]
fn webhook_bundles_render_with_their_webhooks() {
    // cert-manager 1.16.5 (a validating and a mutating webhook); the
    // details are in tests/webhooks.rs.
    let objects = render("cert-manager/1.16.5", json!({})).unwrap();
    let names = names(&objects);
    for expected in [
        "MutatingWebhookConfiguration/mutate.webhooks.cert-manager.io",
        "Secret/cert-manager/cert-manager-webhook-service-cert",
        "Service/cert-manager/cert-manager-webhook-service",
        "ValidatingWebhookConfiguration/validate.webhooks.cert-manager.io",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} in {names:#?}"
        );
    }
}

#[test]
fn all_namespaces_turns_permissions_into_cluster_roles_that_may_read_namespaces() {
    // No bundle in the shared data supports AllNamespaces without
    // webhooks, so this one is etcd 0.9.4 copied to a temporary directory
    // with AllNamespaces marked supported (the copy, not the data, is
    // changed).
    let copy = tempfile::tempdir().unwrap();
    let source = bundle("etcd/0.9.4");
    for dir in ["manifests", "metadata"] {
        std::fs::create_dir(copy.path().join(dir)).unwrap();
        for entry in std::fs::read_dir(source.join(dir)).unwrap() {
            let entry = entry.unwrap();
            let mut text = std::fs::read_to_string(entry.path()).unwrap();
            text = text.replace(
                "- supported: false\n    type: AllNamespaces",
                "- supported: true\n    type: AllNamespaces",
            );
            std::fs::write(copy.path().join(dir).join(entry.file_name()), text).unwrap();
        }
    }
    let instance = instance(json!({}));
    let cluster = ClusterFacts::default();
    let objects = RegistryV1::new("pakket.dev/registry-v1")
        .objects(&ObjectsRequest {
            content: copy.path(),
            max_object_size: 4 << 20,
            instance: &instance,
            cluster: &cluster,
            class_parameters: None,
        })
        .unwrap();
    let deployment = find(&objects, "Deployment")[0];
    assert_eq!(
        deployment
            .pointer("/spec/template/metadata/annotations/olm.targetNamespaces")
            .unwrap(),
        "",
        "AllNamespaces is the empty target list"
    );
    assert!(find(&objects, "Role").is_empty());
    let roles = find(&objects, "ClusterRole");
    assert_eq!(roles.len(), 1);
    let rules = roles[0]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|rule| {
        rule["resources"] == json!(["namespaces"])
            && rule["verbs"] == json!(["get", "list", "watch"])
    }));
    let binding = find(&objects, "ClusterRoleBinding")[0];
    assert_eq!(binding.pointer("/subjects/0/namespace").unwrap(), "etcd");
}

#[test]
fn a_copy_omits_the_crds_and_the_crds_can_be_kept_alone() {
    // etcd 0.9.4: three CRDs, no webhooks, nothing else cluster-wide.
    let config = |crds: &str| json!({"installNamespace": "team-b", "watchNamespaces": ["team-b"], "crds": crds});
    let whole = names(&render("etcd/0.9.4", config("Include")).unwrap());
    let copy = names(&render("etcd/0.9.4", config("Omit")).unwrap());
    let kept = names(&render("etcd/0.9.4", config("Only")).unwrap());
    let crds: Vec<&String> = whole
        .iter()
        .filter(|name| name.starts_with("CustomResourceDefinition/"))
        .collect();
    assert_eq!(crds.len(), 3, "{whole:#?}");
    assert!(
        copy.iter()
            .all(|name| !name.starts_with("CustomResourceDefinition/")),
        "{copy:#?}"
    );
    assert!(copy.contains(&"Deployment/team-b/etcd-operator".to_owned()));
    assert_eq!(
        kept.iter().collect::<Vec<_>>(),
        crds,
        "the CRDs and nothing else, not even the namespace"
    );
    let mut both = copy.clone();
    both.extend(kept);
    both.sort();
    assert_eq!(both, whole, "a copy and the kept CRDs are the whole bundle");
}

#[test]
fn a_bundle_with_webhooks_cannot_run_as_a_copy_and_says_why() {
    // cert-manager 1.16.5: its webhook configurations are cluster-wide.
    let error = render("cert-manager/1.16.5", json!({"crds": "Omit"}))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("spec.config.crds")
            && error.contains("webhooks")
            && error.contains("crds: Include"),
        "{error}"
    );
    let error = render("etcd/0.9.4", json!({"crds": "Some"}))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("spec.config.crds") && error.contains("\"Some\" is not one of Include"),
        "{error}"
    );
}
