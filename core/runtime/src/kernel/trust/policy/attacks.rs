//! The shipped policies (`deploy/policies/`) against the attacks issue 39
//! saw succeed: each attack is built as the runtime would compute its
//! inputs (typed effects of fixture objects, no cluster), decided by every
//! shipped policy, and must not be approved. Each also proves its guard
//! matters: the effect is present in the inputs, and the same request
//! with effects blind to the attack (only the operator, updated in place)
//! is approved by every policy (so a regression in `effects` fails here).

use std::path::Path;

use pakket_api::{ApprovalPolicy, BundleProperty, RuleOutcome};
use serde_json::{Value, json};

use super::*;
use crate::trust::effects::{Effects, Landing, PAKKET_NAMESPACE};

const SHIPPED: [&str; 4] = [
    "namespace-operators.yaml",
    "no-new-cluster-rights.yaml",
    "signed-off-catalogs.yaml",
    "team-allow-list.yaml",
];

fn shipped(file: &str) -> ApprovalPolicy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/policies")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn landing() -> Landing {
    Landing::new("default", Some(PAKKET_NAMESPACE))
}

fn deployment(namespace: &str, name: &str, pod: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "template": { "spec": pod } },
    })
}

/// etcd's operator as registry-v1 renders it into `namespace`.
fn etcd_in(namespace: &str) -> Vec<Value> {
    vec![
        deployment(
            namespace,
            "etcd-operator",
            json!({ "serviceAccountName": "etcd-operator", "containers": [{ "name": "etcd", "image": "quay.io/coreos/etcd-operator" }] }),
        ),
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "etcd-operator", "namespace": namespace } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": { "name": "etcd-operator", "namespace": namespace },
                "rules": [{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"] }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": "etcd-operator", "namespace": namespace },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "etcd-operator" },
                "subjects": [{ "kind": "ServiceAccount", "name": "etcd-operator" }] }),
    ]
}

/// team-a's requester asking for etcd 0.9.4 from a signed-off registry,
/// config naming team-a, with the effects of `proposed` over `running`.
fn request(proposed: &[Value], running: &[Value]) -> Inputs {
    let effects = Effects::of(proposed, Some(running), &landing());
    // She owns team-a, and no other namespace, as the apiserver says.
    let requester_owns = effects
        .all
        .namespaces
        .iter()
        .map(|namespace| (namespace.clone(), namespace == "team-a"))
        .collect();
    Inputs {
        requester: Requester {
            name: "mallory".into(),
            groups: vec!["team-a".into(), "system:authenticated".into()],
        },
        bundle: BundleInputs {
            name: "etcd-v0.9.4".into(),
            digest: "sha256:00".into(),
            refs: vec!["docker://quay.io/operatorhubio/etcd@sha256:00".into()],
            properties: vec![BundleProperty {
                type_: "olm.package".into(),
                value: json!({ "packageName": "etcd", "version": "0.9.4" }),
            }],
            ..BundleInputs::default()
        },
        objects: Inputs::objects_of(proposed),
        effects,
        instance: InstanceInputs {
            name: "etcd".into(),
            class: "operators".into(),
            config: json!({ "installNamespace": "team-a", "watchNamespaces": ["team-a"] }),
        },
        user_permission: Some(false),
        requester_owns: Some(requester_owns),
        ..Inputs::default()
    }
    .with_package_from_properties()
}

/// A check of an attack's effect.
type Present = fn(&Effects) -> bool;

/// `check` as a [`Present`].
fn present(check: Present) -> Present {
    check
}

/// Every attack: its name, its inputs, and what must be in its effects.
#[allow(
    clippy::too_many_lines,
    reason = "a table, one row per attack: splitting it would scatter the attacks a reader compares"
)]
fn attacks() -> Vec<(&'static str, Inputs, Present)> {
    let running = etcd_in("team-a");
    let with = |extra: Vec<Value>| {
        let mut proposed = etcd_in("team-a");
        proposed.extend(extra);
        proposed
    };
    let host = deployment(
        "team-a",
        "etcd-operator",
        json!({ "serviceAccountName": "etcd-operator", "hostPID": true,
                "volumes": [{ "name": "root", "hostPath": { "path": "/" } }],
                "containers": [{ "name": "etcd", "securityContext": { "privileged": true } }] }),
    );
    let mut with_host = etcd_in("team-a");
    with_host[0] = host;
    vec![
        (
            "harmless content deletes the Deployment that ran",
            request(
                &[
                    json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "harmless", "namespace": "team-a" } }),
                ],
                &running,
            ),
            present(|e| e.deleted.iter().any(|o| o.kind == "Deployment")),
        ),
        (
            "a ValidatingAdmissionPolicy and its binding veto others' writes",
            request(
                &with(vec![
                    json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                            "metadata": { "name": "veto" }, "spec": { "validations": [{ "expression": "false" }] } }),
                    json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                            "metadata": { "name": "veto" }, "spec": { "policyName": "veto", "validationActions": ["Deny"] } }),
                ]),
                &running,
            ),
            present(|e| {
                e.new
                    .admission
                    .iter()
                    .any(|a| a.kind == "ValidatingAdmissionPolicyBinding")
            }),
        ),
        (
            "a MutatingAdmissionPolicy and its binding",
            request(
                &with(vec![
                    json!({ "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
                            "metadata": { "name": "rewrite" }, "spec": { "mutations": [{ "patchType": "ApplyConfiguration" }] } }),
                    json!({ "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
                            "metadata": { "name": "rewrite" }, "spec": { "policyName": "rewrite" } }),
                ]),
                &running,
            ),
            present(|e| {
                e.new
                    .admission
                    .iter()
                    .any(|a| a.kind == "MutatingAdmissionPolicy")
            }),
        ),
        (
            "a Deployment in pakket-system as a provisioner's ServiceAccount",
            request(
                &with(vec![deployment(
                    PAKKET_NAMESPACE,
                    "innocent",
                    json!({ "serviceAccountName": "pakket-registry-v1", "containers": [{ "name": "c", "image": "evil" }] }),
                )]),
                &running,
            ),
            present(|e| e.all.workloads.iter().any(|w| w.pakket_service_account)),
        ),
        (
            "host access on the operator's Deployment",
            request(&with_host, &running),
            present(|e| {
                e.new
                    .workloads
                    .iter()
                    .any(|w| w.host_access && w.host_paths == ["/"])
            }),
        ),
        (
            "a RoleBinding to the built-in admin role in pakket-system",
            request(
                &with(vec![json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": { "name": "etcd-admin", "namespace": PAKKET_NAMESPACE },
                    "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
                    "subjects": [{ "kind": "User", "name": "mallory" }],
                })]),
                &running,
            ),
            present(|e| {
                e.new.rbac.iter().any(|g| {
                    g.type_ == "Binding"
                        && g.role_name == "admin"
                        && g.namespace == PAKKET_NAMESPACE
                })
            }),
        ),
        (
            "the same binding into a namespace that is not hers",
            request(
                &with(vec![json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": { "name": "etcd-admin", "namespace": "team-b" },
                    "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
                    "subjects": [{ "kind": "User", "name": "mallory" }],
                })]),
                &running,
            ),
            present(|e| {
                e.new
                    .rbac
                    .iter()
                    .any(|g| g.built_in_role && g.namespace == "team-b")
            }),
        ),
        (
            "config names her namespace, the content lands in another's",
            request(&etcd_in("team-b"), &[]),
            present(|e| e.all.namespaces == ["team-b"]),
        ),
    ]
}

#[test]
fn no_shipped_policy_approves_an_attack() {
    for file in SHIPPED {
        let policy = shipped(file);
        for (attack, inputs, _) in attacks() {
            let decided = decide(&policy.spec.rules, &inputs);
            assert_ne!(
                decided.outcome,
                RuleOutcome::Approve,
                "{file} approved: {attack}: {decided:?}"
            );
        }
    }
}

#[test]
fn each_attack_is_in_the_effects_and_blind_effects_would_let_it_through() {
    for (attack, inputs, present) in attacks() {
        assert!(present(&inputs.effects), "{attack}: {:?}", inputs.effects);
        // The same request, had `effects` missed what the attack does
        // (seeing only the operator updated in place): every shipped
        // policy approves it. So it is the effect that stops it.
        let operator = etcd_in("team-a");
        let blind = Inputs {
            effects: Effects::of(&operator, Some(&operator), &landing()),
            // The apiserver, asked about what the blind effects show.
            requester_owns: Some(BTreeMap::from([("team-a".to_owned(), true)])),
            ..inputs
        };
        for file in SHIPPED {
            let policy = shipped(file);
            let decided = decide(&policy.spec.rules, &blind);
            assert_eq!(
                decided.outcome,
                RuleOutcome::Approve,
                "{file}, {attack}, effects blind: {decided:?}"
            );
        }
    }
}

#[test]
fn the_same_operator_updated_in_its_own_namespace_is_still_approved() {
    // What the policies are for still passes: etcd for team-a, in team-a,
    // the same rights as what runs (an image bump).
    let mut proposed = etcd_in("team-a");
    proposed[0]["spec"]["template"]["spec"]["containers"][0]["image"] = json!("etcd:0.9.4");
    let inputs = request(&proposed, &etcd_in("team-a"));
    assert!(inputs.effects.nothing_new(), "{:?}", inputs.effects);
    for file in SHIPPED {
        let decided = decide(&shipped(file).spec.rules, &inputs);
        assert_eq!(decided.outcome, RuleOutcome::Approve, "{file}: {decided:?}");
    }
}

#[test]
fn no_rule_approves_what_runs_as_pakket_and_the_message_names_it() {
    let (_, inputs, _) = attacks()
        .into_iter()
        .find(|(attack, _, _)| attack.contains("provisioner's ServiceAccount"))
        .unwrap();
    let rules = vec![ApprovalRule {
        name: Some("everything".into()),
        cel: "true".into(),
        outcome: RuleOutcome::Approve,
        message: String::new(),
    }];
    let decided = decide(&rules, &inputs);
    assert_eq!(
        (decided.outcome, decided.rule),
        (RuleOutcome::AskAPerson, Some(0))
    );
    assert!(
        decided
            .message
            .contains("Deployment pakket-system/innocent")
            && decided
                .message
                .contains("ServiceAccount pakket-system/pakket-registry-v1"),
        "{}",
        decided.message
    );
    // A rule that denies still denies.
    let rules = vec![ApprovalRule {
        outcome: RuleOutcome::Deny,
        ..rules[0].clone()
    }];
    assert_eq!(decide(&rules, &inputs).outcome, RuleOutcome::Deny);
}

#[test]
fn rules_read_typed_effects_and_no_new_rights_covers_them() {
    let (_, inputs, _) = attacks()
        .into_iter()
        .find(|(attack, _, _)| attack.starts_with("a ValidatingAdmissionPolicy"))
        .unwrap();
    assert!(inputs.rights.new.is_empty(), "no right in words");
    let rule = |cel: &str| ApprovalRule {
        name: None,
        cel: cel.into(),
        outcome: RuleOutcome::Approve,
        message: String::new(),
    };
    for (cel, outcome) in [
        ("noNewRights()", RuleOutcome::AskAPerson),
        (
            "effects.new.admission.exists(a, a.kind == 'ValidatingAdmissionPolicyBinding' && a.policyName == 'veto')",
            RuleOutcome::Approve,
        ),
        (
            "effects.deleted.size() == 0 && !effects.firstInstall",
            RuleOutcome::Approve,
        ),
    ] {
        assert_eq!(decide(&[rule(cel)], &inputs).outcome, outcome, "{cel}");
    }
}

#[test]
fn the_shipped_policies_stay_within_the_cost_limit_over_a_large_operator() {
    // An operator whose Role lists 150 resources (600 RBAC entries): every
    // rule of every shipped policy is still evaluated, and the update
    // approved, not handed to a person as past the cost limit.
    let resources: Vec<String> = (0..150).map(|n| format!("r{n}")).collect();
    let mut operator = etcd_in("team-a");
    operator[2]["rules"] =
        json!([{ "apiGroups": [""], "resources": resources, "verbs": ["get", "list"] }]);
    let inputs = request(&operator, &operator);
    assert!(
        inputs.widest_collection() >= 600,
        "{}",
        inputs.widest_collection()
    );
    for file in SHIPPED {
        let decided = decide(&shipped(file).spec.rules, &inputs);
        assert_eq!(decided.outcome, RuleOutcome::Approve, "{file}: {decided:?}");
    }
}

#[test]
fn namespace_operators_asks_the_apiserver_whose_namespace_it_is_not_the_config() {
    // Everything lands in team-b, and the config names team-b: the config
    // agrees with the effects, but she does not own team-b.
    let mut inputs = request(&etcd_in("team-b"), &etcd_in("team-b"));
    inputs.instance.config = json!({ "installNamespace": "team-b", "watchNamespaces": ["team-b"] });
    let policy = shipped("namespace-operators.yaml");
    let decided = decide(&policy.spec.rules, &inputs);
    assert_ne!(decided.outcome, RuleOutcome::Approve, "{decided:?}");
    // The apiserver says she owns it: then, and only then, it is hers.
    inputs.requester_owns = Some(BTreeMap::from([("team-b".to_owned(), true)]));
    let decided = decide(&policy.spec.rules, &inputs);
    assert_eq!(decided.outcome, RuleOutcome::Approve, "{decided:?}");
    // Nothing asked (a policy test for another user): a person decides.
    inputs.requester_owns = None;
    let decided = decide(&policy.spec.rules, &inputs);
    assert_eq!(decided.outcome, RuleOutcome::AskAPerson, "{decided:?}");
}
