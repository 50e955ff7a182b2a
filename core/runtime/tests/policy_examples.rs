//! The ApprovalPolicies in `deploy/policies/`, which admins copy: each
//! read as the apiserver would store it and decided over the inputs the
//! runtime would give it, for the requests it is meant to let through,
//! stop, and hand to a person. (How the runtime gathers and verifies those
//! inputs on a live cluster: `examples/plain/tests/trust/policy.rs`.)

use std::path::Path;

use pakket_api::{ApprovalPolicy, BundleProperty, RuleOutcome};
use pakket_runtime::kernel::trust::effects::{Effects, Landing};
use pakket_runtime::kernel::trust::policy::{
    BundleInputs, Decision, Inputs, InstanceInputs, Requester, RightsInputs, decide,
};
use serde_json::{Value, json};

fn example(file: &str) -> ApprovalPolicy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/policies")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// An operator as registry-v1 renders it into `namespace`: its
/// Deployment, ServiceAccount, and a Role allowing `verbs` on pods bound
/// to it.
fn operator(namespace: &str, verbs: &[&str]) -> Vec<Value> {
    vec![
        json!({ "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "operator", "namespace": namespace },
                "spec": { "template": { "spec": { "serviceAccountName": "operator", "containers": [{ "name": "o" }] } } } }),
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "operator", "namespace": namespace } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": { "name": "operator", "namespace": namespace },
                "rules": [{ "apiGroups": [""], "resources": ["pods"], "verbs": verbs }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": "operator", "namespace": namespace },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator" },
                "subjects": [{ "kind": "ServiceAccount", "name": "operator" }] }),
    ]
}

/// What installing `proposed` over `running` does, as the runtime
/// computes it.
fn effects(proposed: &[Value], running: Option<&[Value]>) -> Effects {
    Effects::of(
        proposed,
        running,
        &Landing::new("default", Some("pakket-system")),
    )
}

/// `objects` with `more`.
fn with(mut objects: Vec<Value>, more: &[Value]) -> Vec<Value> {
    objects.extend_from_slice(more);
    objects
}

/// A request for `package` at `version` by a member of `groups`, into
/// `namespace`, from `image`, asking for `all` rights of which `new` are
/// new.
struct Request<'a> {
    groups: &'a [&'a str],
    package: &'a str,
    version: &'a str,
    namespace: &'a str,
    image: &'a str,
    all: &'a [&'a str],
    new: &'a [&'a str],
    user_permission: bool,
}

impl Request<'_> {
    fn inputs(&self) -> Inputs {
        Inputs {
            requester: Requester {
                name: "someone".into(),
                groups: self.groups.iter().map(|g| (*g).to_owned()).collect(),
            },
            bundle: BundleInputs {
                name: format!("{}-v{}", self.package, self.version),
                digest: "sha256:00".into(),
                refs: vec![format!("docker://{}", self.image)],
                properties: vec![BundleProperty {
                    type_: "olm.package".into(),
                    value: json!({ "packageName": self.package, "version": self.version }),
                }],
                ..BundleInputs::default()
            },
            rights: RightsInputs {
                all: self.all.iter().map(|r| (*r).to_owned()).collect(),
                new: self.new.iter().map(|r| (*r).to_owned()).collect(),
            },
            // An update of the operator in `namespace` that does nothing new.
            objects: Inputs::objects_of(&operator(self.namespace, &["get"])),
            effects: effects(
                &operator(self.namespace, &["get"]),
                Some(&operator(self.namespace, &["get"])[..]),
            ),
            instance: InstanceInputs {
                name: self.package.into(),
                class: "operators".into(),
                config: json!({ "installNamespace": self.namespace }),
            },
            user_permission: Some(self.user_permission),
            // The apiserver says the requester owns the namespace the
            // request is for (an admin gave her `admin` there).
            requester_owns: Some(std::collections::BTreeMap::from([(
                self.namespace.to_owned(),
                true,
            )])),
        }
        .with_package_from_properties()
    }

    fn decided_by(&self, policy: &ApprovalPolicy) -> Decision {
        decide(&policy.spec.rules, &self.inputs())
    }

    /// Decided with the effects of `proposed` over `running` instead.
    fn doing(
        &self,
        policy: &ApprovalPolicy,
        proposed: &[Value],
        running: Option<&[Value]>,
    ) -> Decision {
        let mut inputs = self.inputs();
        inputs.effects = effects(proposed, running);
        decide(&policy.spec.rules, &inputs)
    }
}

const ETCD_FOR_TEAM_A: Request<'static> = Request {
    groups: &["team-a", "system:authenticated"],
    package: "etcd",
    version: "0.9.4",
    namespace: "team-a",
    image: "quay.io/operatorhubio/etcd@sha256:00",
    all: &["the rule get pods in namespace team-a"],
    new: &["the rule get pods in namespace team-a"],
    user_permission: false,
};

fn label(policy: &ApprovalPolicy, decision: &Decision) -> String {
    decision.by(policy.metadata.name.as_deref().unwrap(), &policy.spec.rules)
}

#[test]
fn the_team_allow_list_lets_each_team_install_its_packages_and_versions_into_its_namespace() {
    let policy = example("team-allow-list.yaml");
    let approved = ETCD_FOR_TEAM_A.decided_by(&policy);
    assert_eq!(approved.outcome, RuleOutcome::Approve);
    assert_eq!(
        label(&policy, &approved),
        "policy team-allow-list rule 3 (team-a-etcd)"
    );
    // Another version, another team, another namespace: a person decides.
    for other in [
        Request {
            version: "0.10.0",
            ..ETCD_FOR_TEAM_A
        },
        Request {
            groups: &["team-b"],
            ..ETCD_FOR_TEAM_A
        },
        Request {
            namespace: "kube-system",
            ..ETCD_FOR_TEAM_A
        },
    ] {
        let decided = other.decided_by(&policy);
        assert_eq!(
            (decided.outcome, decided.rule),
            (RuleOutcome::AskAPerson, None)
        );
    }
    let postgres = Request {
        groups: &["team-b"],
        package: "cloudnative-pg",
        version: "1.25.1",
        namespace: "team-b",
        ..ETCD_FOR_TEAM_A
    };
    assert_eq!(postgres.decided_by(&policy).outcome, RuleOutcome::Approve);
    // Cluster-wide rights are a person's to grant, even for an allowed package.
    let wider = with(
        operator("team-a", &["get"]),
        &[json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": "etcd" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "etcd-operator" },
            "subjects": [{ "kind": "ServiceAccount", "name": "operator", "namespace": "team-a" }],
        })],
    );
    let decided = ETCD_FOR_TEAM_A.doing(&policy, &wider, Some(&operator("team-a", &["get"])[..]));
    assert_eq!(
        (decided.outcome, decided.rule),
        (RuleOutcome::AskAPerson, Some(1))
    );
    // What lands in another team's namespace is not team-a's, whatever
    // the config says.
    let elsewhere = ETCD_FOR_TEAM_A.doing(&policy, &operator("team-b", &["get"]), None);
    assert_eq!(
        (elsewhere.outcome, elsewhere.rule),
        (RuleOutcome::AskAPerson, None)
    );
    // What the change deletes is a person's to review.
    let pruned = ETCD_FOR_TEAM_A.doing(
        &policy,
        &operator("team-a", &["get"])[1..],
        Some(&operator("team-a", &["get"])[..]),
    );
    assert_eq!(
        (pruned.outcome, pruned.rule),
        (RuleOutcome::AskAPerson, Some(0))
    );
}

#[test]
fn no_new_cluster_rights_passes_updates_within_what_runs_and_stops_the_rest() {
    let policy = example("no-new-cluster-rights.yaml");
    let running = operator("team-a", &["get"]);
    // More namespaced RBAC where it already runs: passes.
    let update = operator("team-a", &["get", "list"]);
    let decided = ETCD_FOR_TEAM_A.doing(&policy, &update, Some(&running[..]));
    assert_eq!(decided.outcome, RuleOutcome::Approve, "{decided:?}");
    let cluster_reader = [
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": { "name": "reader" },
                "rules": [{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": { "name": "reader" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader" },
                "subjects": [{ "kind": "ServiceAccount", "name": "operator", "namespace": "team-a" }] }),
    ];
    let crd = [
        json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                       "metadata": { "name": "etcdclusters.etcd.database.coreos.com" } }),
    ];
    let webhook = [
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                           "metadata": { "name": "v" }, "webhooks": [{ "name": "v.example.com" }] }),
    ];
    let admission_policy = [
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                                    "metadata": { "name": "veto" }, "spec": { "policyName": "veto" } }),
    ];
    let admin_elsewhere = [
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                   "metadata": { "name": "admin", "namespace": "team-b" },
                                   "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
                                   "subjects": [{ "kind": "User", "name": "someone" }] }),
    ];
    for asks_more in [
        &cluster_reader[..],
        &crd[..],
        &webhook[..],
        &admission_policy[..],
        &admin_elsewhere[..],
    ] {
        let proposed = with(running.clone(), asks_more);
        let decided = ETCD_FOR_TEAM_A.doing(&policy, &proposed, Some(&running[..]));
        assert_eq!(
            (decided.outcome, decided.rule),
            (RuleOutcome::AskAPerson, Some(2)),
            "{asks_more:?}"
        );
    }
    let first = ETCD_FOR_TEAM_A.doing(&policy, &running, None);
    assert_eq!(first.rule, Some(0), "a first install");
    let pruned = ETCD_FOR_TEAM_A.doing(&policy, &running[1..], Some(&running[..]));
    assert_eq!(pruned.rule, Some(1), "a deletion");
    let mut other_identity = running.clone();
    other_identity[0]["spec"]["template"]["spec"]["serviceAccountName"] = json!("default");
    let decided = ETCD_FOR_TEAM_A.doing(&policy, &other_identity, Some(&running[..]));
    assert_eq!(decided.rule, Some(3), "a new workload identity");
}

#[test]
fn signed_off_catalogs_refuse_content_from_elsewhere() {
    let policy = example("signed-off-catalogs.yaml");
    let signed = Request {
        user_permission: true,
        ..ETCD_FOR_TEAM_A
    };
    assert_eq!(signed.decided_by(&policy).outcome, RuleOutcome::Approve);
    let elsewhere = Request {
        image: "docker.io/someone/etcd@sha256:00",
        ..signed
    };
    let refused = elsewhere.decided_by(&policy);
    assert_eq!(
        (refused.outcome, refused.rule),
        (RuleOutcome::Deny, Some(0))
    );
    assert!(
        refused.message.contains("signed-off registries"),
        "{}",
        refused.message
    );
    // Signed off, but asking for rights its requester lacks: a person.
    let beyond = Request {
        user_permission: false,
        ..ETCD_FOR_TEAM_A
    };
    assert_eq!(beyond.decided_by(&policy).outcome, RuleOutcome::AskAPerson);
}

#[test]
fn namespace_operators_watch_their_own_namespace_and_only_listed_packages_install_by_themselves() {
    let policy = example("namespace-operators.yaml");
    // As pakket-resolveset writes a request's config: into and watching
    // the request's namespace.
    let requested = |watching: serde_json::Value, request: &Request<'_>| {
        let mut inputs = request.inputs();
        inputs.instance.config = json!({
            "installNamespace": request.namespace,
            "watchNamespaces": watching,
        });
        decide(&policy.spec.rules, &inputs)
    };
    let own = requested(json!(["team-a"]), &ETCD_FOR_TEAM_A);
    assert_eq!(own.outcome, RuleOutcome::Approve);
    assert_eq!(
        label(&policy, &own),
        "policy namespace-operators rule 5 (self-service)"
    );
    // The same request from someone the apiserver says does not own the
    // namespace: the config naming it proves nothing.
    let mut not_hers = ETCD_FOR_TEAM_A.inputs();
    not_hers.instance.config =
        json!({ "installNamespace": "team-a", "watchNamespaces": ["team-a"] });
    not_hers.requester_owns = Some(std::collections::BTreeMap::from([(
        "team-a".to_owned(),
        false,
    )]));
    assert_ne!(
        decide(&policy.spec.rules, &not_hers).outcome,
        RuleOutcome::Approve
    );
    // Watching every namespace, or two: refused with the rule's words.
    for watching in [json!([]), json!(["team-a", "team-b"])] {
        let wider = requested(watching, &ETCD_FOR_TEAM_A);
        assert_eq!((wider.outcome, wider.rule), (RuleOutcome::Deny, Some(3)));
        assert!(wider.message.contains("watches the one namespace"));
    }
    let mut everywhere = ETCD_FOR_TEAM_A.inputs();
    everywhere.instance.config = json!({ "installNamespace": "team-a" });
    assert_eq!(
        decide(&policy.spec.rules, &everywhere).outcome,
        RuleOutcome::Deny
    );
    // Another package, or run elsewhere than it watches: a person decides.
    let vault = Request {
        package: "vault",
        ..ETCD_FOR_TEAM_A
    };
    let other = requested(json!(["team-a"]), &vault);
    assert_eq!((other.outcome, other.rule), (RuleOutcome::AskAPerson, None));
    let elsewhere = requested(json!(["team-b"]), &ETCD_FOR_TEAM_A);
    assert_eq!(elsewhere.outcome, RuleOutcome::AskAPerson);
    // A team the policy does not list is refused, with the rule's words.
    let team_c = Request {
        groups: &["team-c", "system:authenticated"],
        ..ETCD_FOR_TEAM_A
    };
    let refused = requested(json!(["team-a"]), &team_c);
    assert_eq!(
        (refused.outcome, refused.rule),
        (RuleOutcome::Deny, Some(2))
    );
    assert!(
        refused.message.contains("only the teams"),
        "{}",
        refused.message
    );
    // A cluster admin's Operator watching everything passes.
    let admin = Request {
        groups: &["system:masters"],
        ..ETCD_FOR_TEAM_A
    };
    assert_eq!(requested(json!([]), &admin).outcome, RuleOutcome::Approve);
}

#[test]
fn namespace_operators_keep_the_crds_alone_for_copies_and_nothing_more() {
    // When the team whose install owns etcd's CRDs leaves while another
    // team's copy runs, pakket-resolveset (no team's member) changes that
    // install to its CRDs alone: its operator goes, the CRDs stay as they
    // are. The rule approves that and nothing that creates, changes or
    // writes into a namespace.
    let policy = example("namespace-operators.yaml");
    let crd = |served: &str| {
        json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": { "name": "etcdclusters.etcd.database.coreos.com" },
                "spec": { "group": "etcd.database.coreos.com", "scope": "Namespaced",
                          "names": { "kind": "EtcdCluster", "plural": "etcdclusters" },
                          "versions": [{ "name": served, "served": true, "storage": true }] } })
    };
    let running = with(operator("team-a", &["get"]), &[crd("v1beta2")]);
    let resolveset = Request {
        groups: &[
            "system:serviceaccounts",
            "system:serviceaccounts:pakket-system",
        ],
        ..ETCD_FOR_TEAM_A
    };
    let decided = |proposed: &[Value], running: Option<&[Value]>, crds: &str| {
        let mut inputs = resolveset.inputs();
        inputs.effects = effects(proposed, running);
        inputs.objects = Inputs::objects_of(proposed);
        inputs.instance.config = json!({ "installNamespace": "team-a", "crds": crds });
        decide(&policy.spec.rules, &inputs)
    };
    let kept = decided(&[crd("v1beta2")], Some(&running[..]), "Only");
    assert_eq!(
        (kept.outcome, label(&policy, &kept).as_str()),
        (
            RuleOutcome::Approve,
            "policy namespace-operators rule 2 (crds-kept-for-copies)"
        )
    );
    // A changed CRD, a first install of CRDs alone, or the same change
    // without `crds: Only`: not this rule's (listed-teams refuses
    // pakket-resolveset's own request; a person may still approve).
    for (proposed, running, crds) in [
        (vec![crd("v1")], Some(&running[..]), "Only"),
        (vec![crd("v1beta2")], None, "Only"),
        (vec![crd("v1beta2")], Some(&running[..]), "Include"),
    ] {
        let other = decided(&proposed, running, crds);
        assert_eq!(
            (other.outcome, other.rule),
            (RuleOutcome::Deny, Some(2)),
            "{proposed:?} {crds}"
        );
    }
}
