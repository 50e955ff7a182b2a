//! `approval: Policy`: an admin's ApprovalPolicy decides, rule by rule,
//! what a class installs by itself, over inputs the runtime verified. The
//! provisioner runs with the RBAC `deploy/` ships. A requester cannot
//! change which policy applies or what it says, cannot pass as someone a
//! rule allows, cannot slip a right a rule refuses into an update, and an
//! approval is not taken back by a later edit of the policy (by design:
//! what runs stays approved; the next content is judged by the rules as
//! they are then).

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::{
    ApprovalPolicy, ApprovalPolicySpec, ApprovalRule, ConditionType, Instance, ProvisionerClass,
    RuleOutcome,
};
use pakket_runtime::kernel::trust::policy::{self, DecisionRecord};
use pakket_testkit::{eventually, reason_is};
use serde_json::json;

use crate::shipped::NAMESPACE;
use crate::support::{Stage, Webhooks, refused_with, rule};

/// The admin's policy: never a binding to cluster-admin; alice (one of
/// the test users, by name and group) installs ConfigMaps into the
/// stage's namespace by herself; anything else asks a person.
fn policy(stage: &Stage) -> ApprovalPolicy {
    let namespace = stage.namespace();
    ApprovalPolicy {
        metadata: stage.scope.meta("policy"),
        spec: ApprovalPolicySpec {
            rules: vec![
                ApprovalRule {
                    name: Some("no-cluster-admin".into()),
                    cel: "rights.new.exists(r, r.contains('ClusterRole cluster-admin'))".into(),
                    outcome: RuleOutcome::Deny,
                    message: "a binding to cluster-admin is never self-served".into(),
                },
                ApprovalRule {
                    name: Some("alice-configmaps".into()),
                    cel: format!(
                        "requester.name == 'alice' && 'pakket:test-users' in requester.groups && objects.all(o, o.kind == 'ConfigMap' && o.namespace == '{namespace}')"
                    ),
                    outcome: RuleOutcome::Approve,
                    message: "alice's team installs its own configuration".into(),
                },
            ],
        },
    }
}

/// Alice moves Instance `app` to Bundle `bundle` of content `content`.
async fn update(stage: &Stage, alice: &Client, bundle: &str, content: &str) {
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name(bundle), "spec": stage.bundle_spec(content),
    } } });
    let alices: Api<Instance> = Api::all(alice.clone());
    eventually("alice's edit is allowed", || async {
        alices
            .patch(
                &stage.scope.name("app"),
                &PatchParams::default(),
                &Patch::Merge(&change),
            )
            .await
            .is_ok()
    })
    .await;
}

fn approved_by(instance: &Instance) -> String {
    instance
        .status
        .as_ref()
        .and_then(|status| status.approval.as_ref())
        .map(|approval| approval.approved_by.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_policy_approves_what_its_rules_allow_and_nothing_a_requester_writes_changes_that() {
    let stage = Stage::shipped("trust-policy", "Policy", Webhooks::On).await;
    let policies: Api<ApprovalPolicy> = Api::all(stage.admin());
    let approval_policy = policies
        .create(&PostParams::default(), &policy(&stage))
        .await
        .unwrap();
    let policy_name = stage.scope.name("policy");
    let classes: Api<ProvisionerClass> = Api::all(stage.admin());
    classes
        .patch(
            &stage.class(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "parameters": { "approvalPolicy": policy_name } } })),
        )
        .await
        .unwrap();
    for user in ["alice", "mallory"] {
        stage.grant_requester(user).await;
        stage
            .grant(
                &format!("{user}-content"),
                user,
                vec![rule("", "configmaps", &["get"], &["v1", "v2", "v3"])],
            )
            .await;
    }
    stage
        .grant(
            "alice-edits",
            "alice",
            vec![rule(
                pakket_api::GROUP,
                "instances",
                &["patch"],
                &[&stage.scope.name("app")],
            )],
        )
        .await;
    let alice = stage.client_as("alice").await;
    let mallory = stage.client_as("mallory").await;
    stage.config_map_content("v1", &[("marker", "v1")]).await;
    stage.config_map_content("v2", &[("marker", "v2")]).await;
    let admin_binding = stage.scope.name("operator-admin");
    let escalation = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {admin_binding}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: operator\n  namespace: {}\n",
        stage.namespace()
    );
    stage
        .content(
            "v3",
            &[
                ("marker.yaml", stage.config_map_manifest("marker", "v3")),
                ("escalation.yaml", escalation),
            ],
        )
        .await;

    // The rule that allows it approves, and says which rule it was.
    stage
        .create(&alice, stage.instance("app", "app-v1", "v1"))
        .await
        .unwrap();
    let installed = stage.installed("app").await;
    assert_eq!(
        approved_by(&installed),
        format!("policy {policy_name} rule 2 (alice-configmaps)")
    );
    let approved = installed.condition(ConditionType::Approved).unwrap();
    assert!(
        approved.reason == "ApprovedByPolicy"
            && approved
                .message
                .contains("alice's team installs its own configuration"),
        "{approved:?}"
    );
    assert_eq!(stage.value_of("marker").await.as_deref(), Some("v1"));

    // Mallory asks for the same content: no rule is hers, a person
    // decides, nothing is written, and she cannot approve it herself.
    stage
        .create(&mallory, stage.instance("other", "other-v1", "v2"))
        .await
        .unwrap();
    let waiting = stage
        .wait("other", "mallory's request waiting", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!("policy {policy_name} asks a person"))
            && message.contains("no rule matched"),
        "{message}"
    );
    assert!(stage.approve_as(&mallory, "other").await.is_err());
    assert_eq!(
        stage.value_of("marker").await.as_deref(),
        Some("v1"),
        "mallory's content wrote nothing"
    );

    // What the policy saw is kept for `kubectl instance policy test`, in
    // the provisioner's own namespace (under the Role deploy/ ships),
    // owned by the Instance; mallory can neither read nor change it.
    let record_name = policy::decision_record_name(&stage.scope.name("other"));
    let records: Api<ConfigMap> = Api::namespaced(stage.admin(), NAMESPACE);
    let kept = records.get(&record_name).await.unwrap();
    let record: DecisionRecord =
        serde_json::from_str(&kept.data.as_ref().unwrap()[policy::DECISION_RECORD_KEY]).unwrap();
    assert_eq!(record.inputs.requester.name, "mallory");
    assert_eq!(record.outcome, "AskAPerson");
    assert_eq!(record.decided_by, format!("policy {policy_name}"));
    assert_eq!(record.inputs.bundle.name, stage.scope.name("other-v1"));
    assert!(
        record
            .inputs
            .objects
            .iter()
            .any(|object| object.kind == "ConfigMap" && object.name == "marker"),
        "{:?}",
        record.inputs.objects
    );
    assert_eq!(
        kept.metadata.owner_references.as_ref().unwrap()[0].uid,
        waiting.metadata.uid.clone().unwrap()
    );
    let mallorys: Api<ConfigMap> = Api::namespaced(mallory.clone(), NAMESPACE);
    assert!(refused_with(&mallorys.get(&record_name).await, 403));
    assert!(refused_with(
        &mallorys
            .patch(
                &record_name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": { policy::DECISION_RECORD_KEY: "{}" } })),
            )
            .await,
        403
    ));

    // Neither can change which policy applies, nor what it says.
    for user in [&alice, &mallory] {
        let theirs: Api<ApprovalPolicy> = Api::all(user.clone());
        let mut edited = approval_policy.clone();
        edited.spec.rules[1].cel = "true".into();
        edited.metadata.resource_version = None;
        assert!(refused_with(
            &theirs
                .replace(&policy_name, &PostParams::default(), &edited)
                .await,
            403
        ));
        let their_classes: Api<ProvisionerClass> = Api::all(user.clone());
        assert!(refused_with(
            &their_classes
                .patch(
                    &stage.class(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "spec": { "parameters": { "approval": "AllowAll" } } })),
                )
                .await,
            403
        ));
    }

    // Alice slips a binding to cluster-admin into an update: the first
    // rule refuses it, nothing of it is written, v1 keeps running.
    update(&stage, &alice, "app-v3", "v3").await;
    let refused = stage
        .wait("app", "the escalation refused", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.spec.bundle.name == stage.scope.name("app-v3")
        })
        .await;
    let message = &refused.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!(
            "refused by policy {policy_name} rule 1 (no-cluster-admin)"
        )) && message.contains("never self-served"),
        "{message}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        Api::<ClusterRoleBinding>::all(stage.admin())
            .get_opt(&admin_binding)
            .await
            .unwrap()
            .is_none(),
        "no binding to cluster-admin was written"
    );
    assert_eq!(stage.value_of("marker").await.as_deref(), Some("v1"));

    // Back to v2, approved by her rule; then the admin takes the rule
    // away. The approval named the policy at the generation that decided,
    // and the provisioner watches ApprovalPolicies: the edit alone (no
    // change to the Instance, no restart; an approved Instance has no
    // recheck) judges v2 again by the narrowed rules. No rule matches, so
    // it waits for a person, and what runs stays: a policy edit never
    // uninstalls.
    update(&stage, &alice, "app-v2", "v2").await;
    eventually("v2 installed by the policy", || async {
        stage.value_of("marker").await.as_deref() == Some("v2")
    })
    .await;
    let mut narrowed = policies.get(&policy_name).await.unwrap();
    narrowed.spec.rules[1].cel = "false".into();
    policies
        .replace(&policy_name, &PostParams::default(), &narrowed)
        .await
        .unwrap();
    // The edit may reach a reconcile whose cached Instance does not show
    // v2's approval yet (it is judged again once it does): wait for the
    // judgement that names both the narrowed rules and the change.
    stage
        .wait("app", "v2 judged again by the narrowed policy", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.spec.bundle.name == stage.scope.name("app-v2")
                && i.condition(ConditionType::Approved).is_some_and(|c| {
                    c.message.contains("no rule matched")
                        && c.message
                            .contains("the ApprovalPolicy or its generation changed since")
                })
        })
        .await;
    assert_eq!(stage.value_of("marker").await.as_deref(), Some("v2"));
    update(&stage, &alice, "app-v1b", "v1").await;
    let asked = stage
        .wait("app", "new content under the narrowed policy", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.spec.bundle.name == stage.scope.name("app-v1b")
        })
        .await;
    assert!(
        asked
            .condition(ConditionType::Approved)
            .unwrap()
            .message
            .contains("no rule matched"),
        "{:?}",
        asked.condition(ConditionType::Approved)
    );
    assert_eq!(stage.value_of("marker").await.as_deref(), Some("v2"));

    stage.delete_instance("app").await;
    stage.delete_instance("other").await;
    // The policy goes with the stage's cleanup (it carries its labels).
    stage.cleanup().await;
}

/// Issue 39, "nobody runs as the provisioner": under an admin's policy
/// that approves everything, content that runs a Deployment in
/// pakket-system as pakket-plain (which holds `*`, `escalate`, `bind`)
/// waits for a person, the condition naming the Deployment and the
/// ServiceAccount, and nothing is written. The same policy approves
/// harmless content (so it is the guard that stops the attack).
#[tokio::test]
async fn no_rule_lets_content_run_as_the_provisioner() {
    let stage = Stage::shipped("trust-policy-pakket", "Policy", Webhooks::On).await;
    let policies: Api<ApprovalPolicy> = Api::all(stage.admin());
    let mut everything = policy(&stage);
    everything.spec.rules = vec![ApprovalRule {
        name: Some("everything".into()),
        cel: "true".into(),
        outcome: RuleOutcome::Approve,
        message: "the admin approves everything".into(),
    }];
    policies
        .create(&PostParams::default(), &everything)
        .await
        .unwrap();
    let classes: Api<ProvisionerClass> = Api::all(stage.admin());
    classes
        .patch(
            &stage.class(),
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "parameters": { "approvalPolicy": stage.scope.name("policy") } } }),
            ),
        )
        .await
        .unwrap();
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["harmless", "attack"])],
        )
        .await;
    let alice = stage.client_as("alice").await;
    let deployment = stage.scope.name("innocent");
    stage
        .config_map_content("harmless", &[("marker", "v1")])
        .await;
    as_the_provisioner_content(&stage, &deployment).await;

    stage
        .create(&alice, stage.instance("attack", "attack-v1", "attack"))
        .await
        .unwrap();
    let waiting = waits_for_a_person(&stage).await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("asks a person")
            && message.contains(&format!("Deployment {NAMESPACE}/{deployment}"))
            && message.contains(&format!("ServiceAccount {NAMESPACE}/pakket-plain")),
        "{message}"
    );
    nothing_runs_as_the_provisioner(&stage, &deployment).await;

    // The same policy lets harmless content in.
    stage
        .create(
            &alice,
            stage.instance("harmless", "harmless-v1", "harmless"),
        )
        .await
        .unwrap();
    stage.installed("harmless").await;

    stage.delete_instance("attack").await;
    stage.delete_instance("harmless").await;
    stage.cleanup().await;
}

/// Issue 39, item 4: a class that approves everything (`AllowAll`) still
/// never lets content run as a Pakket provisioner: it waits for a person,
/// naming the workload and the ServiceAccount, and nothing runs.
#[tokio::test]
async fn allow_all_does_not_let_content_run_as_the_provisioner() {
    let stage = Stage::shipped("trust-allowall-pakket", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["attack"])],
        )
        .await;
    let alice = stage.client_as("alice").await;
    let deployment = stage.scope.name("innocent");
    as_the_provisioner_content(&stage, &deployment).await;
    stage
        .create(&alice, stage.instance("attack", "attack-v1", "attack"))
        .await
        .unwrap();
    let waiting = waits_for_a_person(&stage).await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("approval: AllowAll")
            && message.contains(&format!("Deployment {NAMESPACE}/{deployment}"))
            && message.contains(&format!("ServiceAccount {NAMESPACE}/pakket-plain")),
        "{message}"
    );
    nothing_runs_as_the_provisioner(&stage, &deployment).await;
    stage.delete_instance("attack").await;
    stage.cleanup().await;
}

/// Content ConfigMap `attack`: a Deployment `name` in pakket-system that
/// runs as pakket-plain.
async fn as_the_provisioner_content(stage: &Stage, name: &str) {
    stage
        .content(
            "attack",
            &[(
                "deployment.yaml",
                format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\nspec:\n  selector:\n    matchLabels: {{app: innocent}}\n  template:\n    metadata:\n      labels: {{app: innocent}}\n    spec:\n      serviceAccountName: pakket-plain\n      containers:\n      - name: c\n        image: registry.example.com/evil\n"
                ),
            )],
        )
        .await;
}

/// Waits until Instance `attack` waits for a person, naming a
/// ServiceAccount.
async fn waits_for_a_person(stage: &Stage) -> Instance {
    stage
        .wait("attack", "the attack waiting for a person", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.condition(ConditionType::Approved)
                    .is_some_and(|c| c.message.contains("ServiceAccount"))
        })
        .await
}

/// Deployment `name` was never created in pakket-system (given the
/// provisioner two seconds more to do it, if it were going to).
async fn nothing_runs_as_the_provisioner(stage: &Stage, name: &str) {
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(stage.admin(), NAMESPACE);
    assert!(
        deployments.get_opt(name).await.unwrap().is_none(),
        "nothing runs as the provisioner"
    );
}
