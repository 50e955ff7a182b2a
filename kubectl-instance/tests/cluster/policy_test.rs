//! `policy test`: a policy on the cluster, or a draft in a file, run over
//! the inputs a provisioner kept for an Instance (written here as the
//! runtime writes them), as its requester or as someone else; what it
//! refuses to guess (an Instance not on the cluster, a file that differs
//! from it, no inputs kept); and that it writes nothing and needs the
//! right to read the kept inputs.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use pakket_api::{ApprovalPolicy, Instance};
use pakket_runtime::kernel::trust::policy::{self, DecisionRecord, Inputs, ObjectInput, Requester};
use pakket_testkit::{Scope, install_crds};
use serde_json::json;

use crate::support::{Grant, create_instance, plugin, reviewer_rules};

/// A policy refusing anyone outside team A, approving team A's etcd 0.9.x.
fn policy(scope: &Scope, name: &str) -> ApprovalPolicy {
    serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ApprovalPolicy",
        "metadata": { "name": name, "labels": scope.labels() },
        "spec": { "rules": [
            { "name": "team-a-only", "cel": "!('team-a' in requester.groups)",
              "outcome": "Deny", "message": "only team A installs here" },
            { "name": "etcd-09", "cel": "bundle.package == 'etcd' && bundle.version.startsWith('0.9.')",
              "outcome": "Approve", "message": "team A runs etcd 0.9" },
        ] },
    }))
    .unwrap()
}

/// What the runtime keeps after deciding for Instance `name` (alice of
/// team A asked for etcd 0.9.4, a person was asked).
async fn keep_record(scope: &Scope, name: &str, bundle: &str) -> ConfigMap {
    let mut inputs = Inputs {
        requester: Requester {
            name: "alice".into(),
            groups: vec!["team-a".into()],
        },
        objects: vec![ObjectInput {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            namespace: "etcd".into(),
            name: "etcd-operator".into(),
        }],
        ..Inputs::default()
    };
    inputs.bundle.name = bundle.into();
    inputs.bundle.digest = "sha256:aaaa".into();
    inputs.bundle.package = "etcd".into();
    inputs.bundle.version = "0.9.4".into();
    inputs.rights.all = vec!["get on pods in namespace etcd".into()];
    inputs.rights.new = inputs.rights.all.clone();
    inputs.instance.name = name.into();
    inputs.instance.class = "registry-v1".into();
    inputs.instance.config = json!({});
    // What userPermission() asks about, as the runtime keeps it: one
    // ConfigMap of the content, in the scope's namespace.
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "etcd-settings", "namespace": scope.namespace },
        "data": { "secret-ish": "never kept" },
    });
    let record = DecisionRecord {
        inputs,
        user_permission: Some(true),
        requester_owns: None,
        decided_by: "policy live".into(),
        outcome: "AskAPerson".into(),
        permission: Some(policy::PermissionInputs {
            objects: vec![policy::permission_view(&config_map)],
            removed: Vec::new(),
        }),
    };
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "name": policy::decision_record_name(name),
            "namespace": scope.namespace,
            "labels": scope.labels(),
        },
        "data": { policy::DECISION_RECORD_KEY: serde_json::to_string(&record).unwrap() },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_policy_is_tested_over_the_kept_inputs_as_anyone_and_nothing_is_written() {
    let scope = Scope::new("policy-test").await;
    install_crds(&scope.client).await.unwrap();
    let bundle = scope.name("etcd-v0-9-4");
    let name = create_instance(&scope, "etcd", &bundle).await;
    let kept = keep_record(&scope, &name, &bundle).await;
    let policy_name = scope.name("team-a");
    Api::<ApprovalPolicy>::all(scope.client.clone())
        .create(&PostParams::default(), &policy(&scope, &policy_name))
        .await
        .unwrap();
    let before: Instance = Api::all(scope.client.clone()).get(&name).await.unwrap();
    let test = |extra: &[&str]| {
        let mut args = vec![
            "policy",
            "test",
            policy_name.as_str(),
            "--instance",
            name.as_str(),
            "--records-namespace",
            scope.namespace.as_str(),
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        plugin("admin", &args).await
    };

    // As the Instance's requester: rule 2 approves it.
    let as_alice = run(test(&[])).await;
    assert_eq!(as_alice.code, 0, "{as_alice:?}");
    assert!(
        as_alice.stdout.contains(&format!(
            "ApprovalPolicy {policy_name} approves Instance {name}"
        )) && as_alice
            .stdout
            .contains("decided by rule 2 (etcd-09): team A runs etcd 0.9")
            && as_alice
                .stdout
                .contains("requested by alice (groups team-a)")
            && as_alice
                .stdout
                .contains("live, the provisioner last decided: policy live: AskAPerson"),
        "{}",
        as_alice.stdout
    );

    // As mallory of another team: rule 1 refuses, in JSON too.
    let as_mallory = run(test(&[
        "--as", "mallory", "--groups", "team-m", "-o", "json",
    ]))
    .await;
    assert_eq!(as_mallory.code, 0, "{as_mallory:?}");
    let answer: serde_json::Value = serde_json::from_str(&as_mallory.stdout).unwrap();
    assert_eq!(answer["outcome"], "Deny");
    assert_eq!(answer["rule"], "rule 1 (team-a-only)");
    assert_eq!(answer["requester"], "mallory (groups team-m)");

    // A draft in a file, not on the cluster: no rule matches, a person is asked.
    let dir = tempfile::tempdir().unwrap();
    let draft = dir.path().join("draft.yaml");
    std::fs::write(
        &draft,
        "apiVersion: core.pakket.dev/v1alpha1\nkind: ApprovalPolicy\nmetadata: {name: draft}\nspec:\n  rules:\n  - {cel: \"bundle.package == 'vault'\", outcome: Approve, message: vault only}\n",
    )
    .unwrap();
    let drafted = run({
        let mut args = test(&[]);
        args[2] = draft.display().to_string();
        args
    })
    .await;
    assert!(
        drafted.code == 0
            && drafted
                .stdout
                .contains("ApprovalPolicy draft asks a person for Instance")
            && drafted.stdout.contains("no rule decided"),
        "{drafted:?}"
    );
    // A draft the cluster would refuse is refused here, naming the rule.
    std::fs::write(
        &draft,
        "apiVersion: core.pakket.dev/v1alpha1\nkind: ApprovalPolicy\nmetadata: {name: draft}\nspec:\n  rules:\n  - {cel: \"bundle.package ==\", outcome: Approve, message: broken}\n",
    )
    .unwrap();
    let broken = run({
        let mut args = test(&[]);
        args[2] = draft.display().to_string();
        args
    })
    .await;
    assert!(
        broken.code == 1 && broken.stderr.contains("spec.rules[0].cel: not valid CEL"),
        "{broken:?}"
    );

    // A manifest that is not what the cluster runs is not guessed at.
    let manifest = dir.path().join("instance.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: core.pakket.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec: {{class: {}, bundle: {{name: {bundle}-next}}}}\n",
            scope.name("no-provisioner")
        ),
    )
    .unwrap();
    let file_args = |file: &std::path::Path| {
        vec![
            "policy".to_owned(),
            "test".into(),
            policy_name.clone(),
            "-f".into(),
            file.display().to_string(),
            "--records-namespace".into(),
            scope.namespace.clone(),
        ]
    };
    let differs = run(file_args(&manifest)).await;
    assert!(
        differs.code == 1
            && differs.stderr.contains("spec.bundle.name: the file says")
            && differs.stderr.contains("apply the file first"),
        "{differs:?}"
    );
    let absent = dir.path().join("absent.yaml");
    std::fs::write(
        &absent,
        "apiVersion: core.pakket.dev/v1alpha1\nkind: Instance\nmetadata: {name: nowhere-on-the-cluster}\nspec: {class: x, bundle: {name: y}}\n",
    )
    .unwrap();
    let not_there = run(file_args(&absent)).await;
    assert!(
        not_there.code == 1 && not_there.stderr.contains("is not on the cluster"),
        "{not_there:?}"
    );
    // An Instance whose provisioner kept nothing.
    let other = create_instance(&scope, "other", &bundle).await;
    let nothing = run(vec![
        "policy".into(),
        "test".into(),
        policy_name.clone(),
        "--instance".into(),
        other,
        "--records-namespace".into(),
        scope.namespace.clone(),
    ])
    .await;
    assert!(
        nothing.code == 1 && nothing.stderr.contains("no decision inputs are kept"),
        "{nothing:?}"
    );

    // Bob may read Instances but not the kept inputs: refused, saying what to ask for.
    let mut rules = reviewer_rules();
    rules.push(
        serde_json::from_value(json!({
            "apiGroups": ["core.pakket.dev"], "resources": ["approvalpolicies"], "verbs": ["get"],
        }))
        .unwrap(),
    );
    let grant = Grant::new(&scope, "reviewer", "bob", rules).await;
    let as_bob = {
        let args = test(&[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        plugin("bob", &args).await
    };
    assert!(
        as_bob.code == 1
            && as_bob.stderr.contains("may not get configmaps in")
            && as_bob.stderr.contains("get on configmaps"),
        "{as_bob:?}"
    );
    grant.revoke().await;

    // Nothing was written: the Instance and the kept inputs are as they were.
    let after: Instance = Api::all(scope.client.clone()).get(&name).await.unwrap();
    assert_eq!(
        before.metadata.resource_version,
        after.metadata.resource_version
    );
    let still = Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .get(&policy::decision_record_name(&name))
        .await
        .unwrap();
    assert_eq!(
        kept.metadata.resource_version,
        still.metadata.resource_version
    );
    scope.cleanup().await;
}

/// Bob may create and patch ConfigMaps (carol may not): what the
/// `userPermission()` tests ask about.
async fn bob_writes_config_maps(scope: &Scope) -> Grant {
    Grant::new(
        scope,
        "writer",
        "bob",
        vec![
            serde_json::from_value(json!({
                "apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch"],
            }))
            .unwrap(),
        ],
    )
    .await
}

#[tokio::test]
async fn testing_as_another_user_asks_the_apiserver_what_she_may_do() {
    // A rule that approves what the requester could create herself: as
    // bob, who may write ConfigMaps in the namespace, it approves; as
    // carol, who may not, it asks a person, and says which right she
    // lacks. Neither answer is alice's (the kept one).
    let scope = Scope::new("policy-test-as").await;
    install_crds(&scope.client).await.unwrap();
    let bundle = scope.name("etcd-v0-9-4");
    let name = create_instance(&scope, "etcd", &bundle).await;
    keep_record(&scope, &name, &bundle).await;
    let policy_name = scope.name("own-rights");
    let own_rights: ApprovalPolicy = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ApprovalPolicy",
        "metadata": { "name": policy_name, "labels": scope.labels() },
        "spec": { "rules": [
            { "name": "hers", "cel": "userPermission()", "outcome": "Approve",
              "message": "she could have created it herself" },
        ] },
    }))
    .unwrap();
    Api::<ApprovalPolicy>::all(scope.client.clone())
        .create(&PostParams::default(), &own_rights)
        .await
        .unwrap();
    let writes_config_maps = bob_writes_config_maps(&scope).await;
    let as_user = |user: &'static str| {
        let (policy_name, name, namespace) =
            (policy_name.clone(), name.clone(), scope.namespace.clone());
        async move {
            plugin(
                "admin",
                &[
                    "policy",
                    "test",
                    &policy_name,
                    "--instance",
                    &name,
                    "--records-namespace",
                    &namespace,
                    "--as",
                    user,
                    "-o",
                    "json",
                ],
            )
            .await
        }
    };
    let bob = as_user("bob").await;
    assert_eq!(bob.code, 0, "{bob:?}");
    let answer: serde_json::Value = serde_json::from_str(&bob.stdout).unwrap();
    assert_eq!(answer["outcome"], "Approve", "{answer}");
    assert_eq!(answer["rule"], "rule 1 (hers)");
    let carol = as_user("carol").await;
    let answer: serde_json::Value = serde_json::from_str(&carol.stdout).unwrap();
    assert_eq!(answer["outcome"], "AskAPerson", "{answer}");
    let why = answer["userPermission"].as_str().unwrap_or_default();
    assert!(
        why.contains("carol (--as) may not create ConfigMap") && why.contains("etcd-settings"),
        "{answer}"
    );
    writes_config_maps.revoke().await;
    scope.cleanup().await;
}

/// A provisioner whose content is Kubernetes manifests, run in the test
/// (the runtime with this one method is a whole provisioner).
struct Manifests(String);

impl pakket_runtime::Provisioner for Manifests {
    fn id(&self) -> &str {
        &self.0
    }

    fn objects(
        &self,
        request: &pakket_runtime::ObjectsRequest<'_>,
    ) -> Result<Vec<serde_json::Value>, pakket_runtime::ObjectsError> {
        pakket_runtime::manifest::load_objects(request.content, request.max_object_size)
            .map_err(|error| pakket_runtime::ObjectsError::Content(error.to_string()))
    }
}

#[tokio::test]
async fn a_request_nobody_made_yet_is_tested_as_a_trial_its_provisioner_renders_and_never_applies()
{
    // The admin has an Instance manifest (a ConfigMap for team A) and a
    // draft policy, and asks what the policy would say if bob asked for
    // it. The provisioner, with the webhooks and the record key as
    // deployed, renders the manifest as a policy trial: the verdict is
    // over its real objects, userPermission() is asked for bob, nothing
    // is applied, and the trial Instance is gone afterwards.
    use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
    let scope = Scope::new("policy-trial").await;
    install_crds(&scope.client).await.unwrap();
    let webhooks = LocalWebhooks::start(
        scope.client.clone(),
        LocalOptions::for_labels(scope.id.clone(), scope.labels()),
    )
    .await
    .unwrap();
    let id = format!("test.pakket.dev/{}", scope.id);
    let class: pakket_api::ProvisionerClass = serde_json::from_value(json!({
        "metadata": { "name": scope.name("class"), "labels": scope.labels() },
        "spec": { "provisioner": id, "parameters": { "approval": "UserPermission" } },
    }))
    .unwrap();
    Api::<pakket_api::ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    // The provisioner's own namespace, where it keeps decisions' inputs
    // (content written there is never a rule's to approve).
    let own = scope.name("pakket");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(scope.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({ "metadata": { "name": own, "labels": scope.labels() } }),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let options = pakket_runtime::kernel::controller::RunOptions {
        record_key: Some(webhooks.record_key()),
        decision_records: Some(own.clone()),
        ..pakket_runtime::kernel::controller::RunOptions::new(scope.path("store"))
    };
    let client = scope.client.clone();
    let provisioner = tokio::spawn(pakket_runtime::kernel::controller::run_with(
        client,
        Manifests(id.clone()),
        options,
    ));
    let mut labels = scope.labels();
    labels.insert(pakket_api::BUNDLE_CONTENT_LABEL.into(), "true".into());
    let content: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "content", "namespace": scope.namespace, "labels": labels },
        "immutable": true,
        "data": { "settings.yaml": format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: team-a-settings, namespace: {}}}\ndata: {{mode: fast}}\n",
            scope.namespace
        ) },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let name = scope.name("settings");
    let manifest = dir.path().join("instance.yaml");
    std::fs::write(
        &manifest,
        serde_json::to_string(&json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": name, "labels": scope.labels() },
            "spec": { "class": scope.name("class"), "bundle": {
                "name": scope.name("settings-v1"),
                "spec": { "class": scope.name("class"), "refs": ["file://content"],
                    "volumeMounts": [{ "mountPath": "/content",
                        "configMap": { "name": "content", "namespace": scope.namespace } }] },
            } },
        }))
        .unwrap(),
    )
    .unwrap();
    let draft = dir.path().join("draft.yaml");
    std::fs::write(
        &draft,
        "apiVersion: core.pakket.dev/v1alpha1\nkind: ApprovalPolicy\nmetadata: {name: draft}\nspec:\n  rules:\n  - {name: only-configmaps, cel: \"objects.all(o, o.kind == 'ConfigMap') && userPermission()\", outcome: Approve, message: settings its requester could write}\n",
    )
    .unwrap();
    let writes = bob_writes_config_maps(&scope).await;
    let trial = |user: &'static str| {
        let (draft, manifest, namespace) = (
            draft.display().to_string(),
            manifest.display().to_string(),
            own.clone(),
        );
        async move {
            plugin(
                "admin",
                &[
                    "policy",
                    "test",
                    &draft,
                    "-f",
                    &manifest,
                    "--trial",
                    "--records-namespace",
                    &namespace,
                    "--as",
                    user,
                ],
            )
            .await
        }
    };
    let bob = trial("bob").await;
    assert_eq!(bob.code, 0, "{bob:?}");
    assert!(
        bob.stdout
            .contains(&format!("ApprovalPolicy draft approves Instance {name}"))
            && bob.stdout.contains("decided by rule 1 (only-configmaps)")
            && bob.stdout.contains("policy trial Instance"),
        "{}",
        bob.stdout
    );
    let carol = trial("carol").await;
    assert!(
        carol.stdout.contains("asks a person for")
            && carol
                .stdout
                .contains("carol (--as) may not create ConfigMap"),
        "{carol:?}"
    );
    // Nothing was applied, and the trial is gone.
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(
        config_maps
            .get_opt("team-a-settings")
            .await
            .unwrap()
            .is_none()
    );
    pakket_testkit::eventually("the trial Instance is gone", || async {
        Api::<Instance>::all(scope.client.clone())
            .get_opt(&name)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    writes.revoke().await;
    provisioner.abort();
    webhooks.stop().await.unwrap();
    let _ = namespaces
        .delete(&own, &kube::api::DeleteParams::default())
        .await;
    scope.cleanup().await;
}
