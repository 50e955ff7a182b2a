use serde_json::{Value, json};

use super::*;

fn landing() -> Landing {
    Landing::new("default", Some(PAKKET_NAMESPACE))
}

fn deployment(namespace: Option<&str>, name: &str, pod: Value) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
        "spec": { "template": { "spec": pod } },
    })
}

fn web(namespace: &str) -> Value {
    deployment(
        Some(namespace),
        "web",
        json!({ "containers": [{ "name": "web", "image": "nginx" }] }),
    )
}

fn config_map(namespace: &str, name: &str, value: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": name, "namespace": namespace }, "data": { "v": value },
    })
}

fn binding(kind: &str, namespace: Option<&str>, role_kind: &str, role: &str) -> Value {
    let mut metadata = json!({ "name": format!("{role}-binding") });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role },
        "subjects": [{ "kind": "User", "name": "mallory" }],
    })
}

#[test]
fn what_a_change_prunes_is_a_deletion_and_no_new_rights_is_false() {
    // Someone points the Instance at harmless content: the Deployment it
    // ran would be deleted.
    let running = [web("team-a"), config_map("team-a", "settings", "1")];
    let harmless = [config_map("team-a", "settings", "1")];
    let effects = Effects::of(&harmless, Some(&running[..]), &landing());
    assert_eq!(effects.deleted.len(), 1, "{effects:?}");
    let deleted = &effects.deleted[0];
    assert_eq!(
        (
            deleted.group.as_str(),
            deleted.kind.as_str(),
            deleted.namespace.as_str(),
            deleted.name.as_str(),
            deleted.scope.as_str()
        ),
        ("apps", "Deployment", "team-a", "web", "Namespaced")
    );
    assert!(effects.created.is_empty() && effects.changed.is_empty());
    assert!(!effects.nothing_new());
    assert!(
        effects
            .sentences()
            .contains(&"deletes Deployment team-a/web".to_owned())
    );
    // The same content again is nothing new; a changed value is a change,
    // not a right.
    assert!(Effects::of(&running, Some(&running[..]), &landing()).nothing_new());
    let edited = [web("team-a"), config_map("team-a", "settings", "2")];
    let effects = Effects::of(&edited, Some(&running[..]), &landing());
    assert_eq!(effects.changed.len(), 1);
    assert_eq!(effects.changed[0].name, "settings");
    assert!(effects.nothing_new(), "{effects:?}");
    // Another version of the same kind is the same object.
    let mut moved = web("team-a");
    moved["apiVersion"] = json!("apps/v2");
    let effects = Effects::of(
        &[moved, config_map("team-a", "settings", "1")],
        Some(&running[..]),
        &landing(),
    );
    assert!(effects.deleted.is_empty() && effects.created.is_empty());
}

#[test]
fn admission_policies_and_their_bindings_are_admission_effects() {
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": "veto" },
        "spec": { "validations": [{ "expression": "false" }],
                  "matchConstraints": { "resourceRules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"] }] } },
    });
    let bound = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": "veto" },
        "spec": { "policyName": "veto", "validationActions": ["Deny"] },
    });
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
        "metadata": { "name": "rewrite" }, "spec": { "mutations": [] },
    });
    let objects = [policy.clone(), bound.clone(), mutating];
    let effects = Effects::of(&objects, Some(&[web("team-a")][..]), &landing());
    let kinds: Vec<&str> = effects
        .new
        .admission
        .iter()
        .map(|a| a.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "MutatingAdmissionPolicy"
        ]
    );
    assert_eq!(effects.new.admission[1].policy_name, "veto");
    assert!(
        effects
            .created
            .iter()
            .all(|o| o.scope == "Cluster" && o.namespace.is_empty())
    );
    assert!(!effects.nothing_new());
    // Held already: nothing new; a policy rewritten: new again.
    let same = Effects::of(&objects, Some(&objects), &landing());
    assert!(
        same.new.admission.is_empty() && same.nothing_new(),
        "{same:?}"
    );
    let mut wider = bound;
    wider["spec"]["validationActions"] = json!(["Deny", "Audit"]);
    let changed = Effects::of(&[policy.clone(), wider], Some(&objects[..2]), &landing());
    assert_eq!(changed.new.admission.len(), 1);
    assert_eq!(
        changed.new.admission[0].kind,
        "ValidatingAdmissionPolicyBinding"
    );
}

#[test]
fn a_workload_in_pakket_system_as_a_provisioner_is_named_and_needs_a_person() {
    let attack = deployment(
        Some(PAKKET_NAMESPACE),
        "innocent",
        json!({ "serviceAccountName": "pakket-registry-v1", "containers": [{ "name": "c", "image": "x" }] }),
    );
    let effects = Effects::of(std::slice::from_ref(&attack), None, &landing());
    assert!(effects.first_install);
    let workload = &effects.new.workloads[0];
    assert_eq!(workload.service_account, "pakket-registry-v1");
    assert!(workload.pakket_service_account && workload.pakket_namespace);
    assert!(!effects.nothing_new());
    let why = needs_a_person(&effects).expect("a person decides");
    assert!(
        why.contains("Deployment pakket-system/innocent")
            && why.contains("ServiceAccount pakket-system/pakket-registry-v1"),
        "{why}"
    );
    // Even when the running content had it (approved by a person before):
    // what runs as the provisioner is a person's to approve every time.
    let again = Effects::of(
        std::slice::from_ref(&attack),
        Some(std::slice::from_ref(&attack)),
        &landing(),
    );
    assert!(again.new.workloads.is_empty());
    assert!(needs_a_person(&again).is_some());
    // A Deployment that names no namespace lands in the provisioner's
    // client's default namespace: in a cluster, Pakket's own.
    let unnamed = deployment(
        None,
        "innocent",
        json!({ "serviceAccountName": "pakket-plain", "containers": [{ "name": "c", "image": "x" }] }),
    );
    let in_cluster = Landing::new(PAKKET_NAMESPACE, Some(PAKKET_NAMESPACE));
    let effects = Effects::of(&[unnamed], None, &in_cluster);
    assert_eq!(effects.all.workloads[0].namespace, PAKKET_NAMESPACE);
    assert!(effects.all.workloads[0].pakket_service_account);
    assert!(needs_a_person(&effects).is_some());
    // The default ServiceAccount of pakket-system is Pakket's namespace
    // too (its pods can mount the record key).
    let default_sa = deployment(Some(PAKKET_NAMESPACE), "d", json!({ "containers": [] }));
    let effects = Effects::of(&[default_sa], None, &landing());
    assert!(
        effects.all.workloads[0].pakket_namespace
            && !effects.all.workloads[0].pakket_service_account
    );
    assert!(
        needs_a_person(&effects)
            .unwrap()
            .contains("Pakket's own namespace")
    );
    // Every workload kind is seen.
    for (api_version, kind, pointer) in [
        ("v1", "Pod", "/spec"),
        ("apps/v1", "StatefulSet", "/spec/template/spec"),
        ("apps/v1", "DaemonSet", "/spec/template/spec"),
        ("apps/v1", "ReplicaSet", "/spec/template/spec"),
        ("batch/v1", "Job", "/spec/template/spec"),
        (
            "batch/v1",
            "CronJob",
            "/spec/jobTemplate/spec/template/spec",
        ),
        ("argoproj.io/v1alpha1", "Rollout", "/spec/template/spec"),
    ] {
        let mut object = json!({ "apiVersion": api_version, "kind": kind, "metadata": { "name": "w", "namespace": PAKKET_NAMESPACE } });
        let mut at = &mut object;
        for part in pointer.split('/').skip(1) {
            at = at.as_object_mut().unwrap().entry(part).or_insert(json!({}));
        }
        *at = json!({ "serviceAccountName": "pakket-webhooks", "containers": [{ "name": "c" }] });
        let effects = Effects::of(&[object], None, &landing());
        assert_eq!(effects.all.workloads.len(), 1, "{kind}");
        assert!(effects.all.workloads[0].pakket_service_account, "{kind}");
    }
    // Content elsewhere, as anyone else, needs no person (a rule decides).
    assert!(needs_a_person(&Effects::of(&[web("team-a")], None, &landing())).is_none());
}

#[test]
fn host_access_is_a_workload_effect_and_more_of_it_is_new() {
    let pod = |extra: Value| {
        let mut spec = json!({ "containers": [{ "name": "c", "image": "x" }] });
        for (key, value) in extra.as_object().unwrap() {
            spec[key] = value.clone();
        }
        deployment(Some("team-a"), "agent", spec)
    };
    let plain = pod(json!({}));
    let hostile = pod(json!({
        "hostNetwork": true, "hostPID": true, "hostIPC": true,
        "volumes": [{ "name": "root", "hostPath": { "path": "/" } }],
        "containers": [{ "name": "c", "securityContext": { "privileged": true, "capabilities": { "add": ["SYS_ADMIN"] } },
                         "ports": [{ "containerPort": 80, "hostPort": 80 }] }],
    }));
    // The same Deployment, same ServiceAccount: only the host access is new.
    let effects = Effects::of(
        std::slice::from_ref(&hostile),
        Some(std::slice::from_ref(&plain)),
        &landing(),
    );
    assert!(effects.deleted.is_empty() && effects.new.rbac.is_empty());
    let workload = &effects.new.workloads[0];
    assert!(
        workload.host_access && workload.host_network && workload.host_pid && workload.host_ipc
    );
    assert!(workload.privileged);
    assert_eq!(workload.host_paths, ["/"]);
    assert_eq!(workload.added_capabilities, ["SYS_ADMIN"]);
    assert_eq!(workload.host_ports, [80]);
    assert!(
        workload.sentence.contains("host path /"),
        "{}",
        workload.sentence
    );
    assert!(!effects.nothing_new());
    assert!(
        needs_a_person(&effects).is_none(),
        "a rule may still decide, seeing it"
    );
    // Less host access than ran, or a rename with the same identity: nothing new.
    assert!(
        Effects::of(
            std::slice::from_ref(&plain),
            Some(std::slice::from_ref(&hostile)),
            &landing()
        )
        .new
        .workloads
        .is_empty()
    );
    let mut renamed = plain.clone();
    renamed["metadata"]["name"] = json!("agent-v2");
    let effects = Effects::of(&[renamed], Some(std::slice::from_ref(&plain)), &landing());
    assert!(effects.new.workloads.is_empty());
    // Another ServiceAccount is a new identity.
    let other = pod(json!({ "serviceAccountName": "operator" }));
    let effects = Effects::of(&[other], Some(std::slice::from_ref(&plain)), &landing());
    assert_eq!(effects.new.workloads[0].service_account, "operator");
    assert!(!effects.nothing_new());
}

#[test]
fn a_binding_to_a_built_in_role_is_typed_with_its_scope_and_namespace() {
    // The attack: a RoleBinding to `admin` in pakket-system, then read the
    // record key. No words to match; typed fields say what it is.
    let attack = binding(
        "RoleBinding",
        Some(PAKKET_NAMESPACE),
        "ClusterRole",
        "admin",
    );
    let effects = Effects::of(
        std::slice::from_ref(&attack),
        Some(&[web("team-a")][..]),
        &landing(),
    );
    let grant = &effects.new.rbac[0];
    assert_eq!(
        (
            grant.type_.as_str(),
            grant.subject_kind.as_str(),
            grant.subject_name.as_str(),
            grant.scope.as_str(),
            grant.namespace.as_str(),
            grant.role_kind.as_str(),
            grant.role_name.as_str(),
            grant.built_in_role
        ),
        (
            "Binding",
            "User",
            "mallory",
            "Namespace",
            PAKKET_NAMESPACE,
            "ClusterRole",
            "admin",
            true
        )
    );
    assert_eq!(effects.new.namespaces, [PAKKET_NAMESPACE]);
    assert!(
        needs_a_person(&effects)
            .unwrap()
            .contains("RoleBinding pakket-system/admin-binding")
    );
    // A RoleBinding that names no namespace lands where the provisioner's
    // client puts it, and says so.
    let unnamed = binding("RoleBinding", None, "ClusterRole", "edit");
    let effects = Effects::of(&[unnamed], None, &Landing::new(PAKKET_NAMESPACE, None));
    assert_eq!(effects.new.rbac[0].namespace, PAKKET_NAMESPACE);
    assert!(needs_a_person(&effects).is_some());
    // Cluster-wide, to a role of the cluster.
    let wide = binding("ClusterRoleBinding", None, "ClusterRole", "cluster-admin");
    let effects = Effects::of(&[wide], None, &landing());
    assert_eq!(effects.new.rbac[0].scope, "Cluster");
    assert!(effects.new.rbac[0].built_in_role);
}

#[test]
fn rules_a_subject_gets_are_typed_per_subject() {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": { "name": "reader" },
        "rules": [{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }],
    });
    let mut bound = binding("ClusterRoleBinding", None, "ClusterRole", "reader");
    bound["subjects"] = json!([{ "kind": "ServiceAccount", "name": "op", "namespace": "team-a" }]);
    let effects = Effects::of(&[role, bound], None, &landing());
    let held = effects
        .new
        .rbac
        .iter()
        .find(|grant| grant.type_ == "Held")
        .expect("the subject holds the rule");
    assert_eq!(
        (
            held.subject_kind.as_str(),
            held.subject_namespace.as_str(),
            held.subject_name.as_str(),
            held.verb.as_str(),
            held.resource.as_str(),
            held.scope.as_str()
        ),
        (
            "ServiceAccount",
            "team-a",
            "op",
            "get",
            "secrets",
            "Cluster"
        )
    );
    assert!(effects.new.rbac.iter().any(|grant| grant.type_ == "Rule"));
}

#[test]
fn crds_webhooks_and_api_services_are_typed() {
    let objects = [
        json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": { "name": "things.example.com" },
                "spec": { "conversion": { "strategy": "Webhook", "webhook": { "clientConfig": { "url": "https://x" } } } } }),
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": { "name": "op" }, "webhooks": [{ "name": "m.example.com" }] }),
        json!({ "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": { "name": "v1.metrics.example.com" } }),
    ];
    let effects = Effects::of(&objects, None, &landing());
    assert_eq!(effects.new.crds.len(), 2);
    assert!(effects.new.crds.iter().any(|crd| crd.conversion));
    assert_eq!(effects.new.admission[0].webhook, "m.example.com");
    assert_eq!(effects.new.api_services[0].name, "v1.metrics.example.com");
    assert!(Effects::of(&objects, Some(&objects), &landing()).nothing_new());
}

#[test]
fn the_shape_rules_read_is_camel_case_and_stable() {
    let effects = Effects::of(
        &[
            binding("RoleBinding", Some("team-a"), "ClusterRole", "view"),
            deployment(
                Some("team-a"),
                "w",
                json!({ "hostPID": true, "containers": [] }),
            ),
        ],
        Some(&[web("team-a")][..]),
        &landing(),
    );
    let value = serde_json::to_value(&effects).unwrap();
    for pointer in [
        "/firstInstall",
        "/created",
        "/changed",
        "/deleted/0/kind",
        "/new/namespaces",
        "/new/rbac/0/type",
        "/new/rbac/0/subjectKind",
        "/new/rbac/0/roleName",
        "/new/rbac/0/builtInRole",
        "/new/workloads/0/serviceAccount",
        "/new/workloads/0/hostPID",
        "/new/workloads/0/hostPaths",
        "/new/workloads/0/hostAccess",
        "/new/workloads/0/pakketServiceAccount",
        "/new/admission",
        "/new/crds",
        "/all/apiServices",
    ] {
        assert!(value.pointer(pointer).is_some(), "{pointer} in {value}");
    }
    let back: Effects = serde_json::from_value(value).unwrap();
    assert_eq!(back, effects);
}

#[test]
fn a_cluster_scoped_object_naming_no_namespace_lands_in_none() {
    // In a cluster the client's default namespace is Pakket's: an Instance
    // (or a kind the cluster serves cluster-scoped) a provisioner renders
    // is not written there, and needs no person.
    let mut in_cluster = Landing::new(PAKKET_NAMESPACE, Some(PAKKET_NAMESPACE));
    let child = json!({ "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance", "metadata": { "name": "child" } });
    let cluster =
        json!({ "apiVersion": "example.com/v1", "kind": "Cluster", "metadata": { "name": "c" } });
    let effects = Effects::of(&[child.clone(), cluster.clone()], None, &in_cluster);
    assert_eq!(effects.created[0].scope, "Cluster");
    // A kind nobody says is cluster-scoped is taken as namespaced: where it lands.
    assert_eq!(effects.created[1].namespace, PAKKET_NAMESPACE);
    assert!(needs_a_person(&effects).is_some());
    in_cluster
        .cluster_scoped
        .insert(("example.com".into(), "Cluster".into()));
    let effects = Effects::of(&[child, cluster], None, &in_cluster);
    assert!(effects.all.namespaces.is_empty(), "{effects:?}");
    assert!(needs_a_person(&effects).is_none());
}
