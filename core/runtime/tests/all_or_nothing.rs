//! All or nothing, on the real control plane: a pivot the apiserver would
//! refuse part-way (an immutable field) is found by the dry run of the
//! whole set and writes nothing; a write that fails after others were made
//! (refused only for real, not in the dry run: a race, played here by a
//! ValidatingAdmissionPolicy that lets dry runs through) is rolled back to
//! the running revision, so the Instance never runs a mix of two.
//! Content whose objects the apiserver checks against each other (a Pod
//! and the ServiceAccount it runs as) is not refused by that dry run.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::{ConditionType, Instance, RevisionOutcome};
use pakket_testkit::{
    condition_is, eventually, message_of, reason_is, wait_for_instance as wait_for,
};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

/// A ConfigMap manifest in the fixture's namespace, `immutable` or not.
fn config_map(fixture: &Fixture, name: &str, value: &str, immutable: bool) -> (String, String) {
    (
        format!("{name}.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {}\nimmutable: {immutable}\ndata:\n  value: {value}\n",
            fixture.scope.namespace
        ),
    )
}

async fn content(fixture: &Fixture, name: &str, files: &[(String, String)]) {
    let files: Vec<(&str, String)> = files
        .iter()
        .map(|(file, text)| (file.as_str(), text.clone()))
        .collect();
    fixture.files(name, &files).await;
}

/// Installs content v1: ConfigMap `a` (value `one`) and `second`.
async fn install_v1(fixture: &Fixture, second: (String, String)) -> (kube::Api<Instance>, String) {
    content(
        fixture,
        "v1",
        &[config_map(fixture, "a", "one", false), second],
    )
    .await;
    fixture.install("v1", "v1").await
}

#[tokio::test]
async fn a_pivot_the_apiserver_would_refuse_part_way_writes_nothing_and_names_the_field() {
    let fixture = Fixture::new("dry-run", "AllowAll").await;
    let (instances, name) = install_v1(&fixture, config_map(&fixture, "locked", "one", true)).await;
    // v2 changes `a` (applied first), changes the immutable `locked` (which
    // the apiserver refuses) and adds `fresh`.
    content(
        &fixture,
        "v2",
        &[
            config_map(&fixture, "a", "two", false),
            config_map(&fixture, "fresh", "new", false),
            config_map(&fixture, "locked", "two", true),
        ],
    )
    .await;
    fixture.pivot("v2", "v2").await;
    let refused = wait_for(&instances, &name, "the pivot refused", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = message_of(&refused, ConditionType::Installed);
    assert!(
        message.contains("ConfigMap") && message.contains("locked"),
        "names the object: {message}"
    );
    assert!(
        message.contains("immutable") && message.contains("nothing was applied"),
        "names the field and says nothing was written: {message}"
    );
    assert_eq!(fixture.value_of("a").await.as_deref(), Some("one"));
    assert_eq!(fixture.value_of("locked").await.as_deref(), Some("one"));
    assert!(
        fixture
            .config_maps()
            .get_opt("fresh")
            .await
            .unwrap()
            .is_none(),
        "nothing of v2 was created"
    );
    assert!(
        condition_is(&refused, ConditionType::Healthy, "True"),
        "v1 runs whole: {:?}",
        refused.condition(ConditionType::Healthy)
    );
    // The refused pivot is revision 2, failed; revision 1 serves, and
    // Progressing says the apply is tried again.
    let status = refused.status.clone().unwrap();
    let outcomes: Vec<(i64, RevisionOutcome)> = status
        .revisions
        .iter()
        .map(|revision| (revision.number, revision.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (1, RevisionOutcome::Succeeded),
            (2, RevisionOutcome::Failed)
        ]
    );
    assert!(status.revisions[1].message.contains("immutable"));
    assert_eq!(status.serving_revision, Some(1));
    assert!(reason_is(&refused, ConditionType::Progressing, "Retrying"));
    let progressing = refused.condition(ConditionType::Progressing).unwrap();
    assert!(
        progressing.message.contains("revision 1 still serves"),
        "{}",
        progressing.message
    );
    fixture.scope.cleanup().await;
}

/// A ValidatingAdmissionPolicy `name` on ConfigMaps for `operations`,
/// refusing with `message` what fails `expression`, and its binding.
async fn config_map_policy(
    fixture: &Fixture,
    name: &str,
    operations: &[&str],
    expression: String,
    message: &str,
) {
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": fixture.scope.labels() },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": operations, "resources": ["configmaps"],
            }] },
            "validations": [{ "expression": expression, "message": message }],
        },
    }))
    .unwrap();
    Api::<ValidatingAdmissionPolicy>::all(fixture.scope.client.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": fixture.scope.labels() },
        "spec": { "policyName": name, "validationActions": ["Deny"] },
    }))
    .unwrap();
    Api::<ValidatingAdmissionPolicyBinding>::all(fixture.scope.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// A policy refusing, outside dry runs, ConfigMaps in `namespace` named
/// `late` or `probe` whose value is `two`; its binding. Named `name`.
async fn refuse_late_writes(fixture: &Fixture, name: &str) {
    let namespace = &fixture.scope.namespace;
    config_map_policy(
        fixture,
        name,
        &["CREATE", "UPDATE"],
        format!(
            "request.dryRun == true || object.metadata.namespace != '{namespace}' || !(object.metadata.name in ['late', 'probe']) || !has(object.data) || !('value' in object.data) || object.data['value'] != 'two'"
        ),
        "refused by the test's policy (late writes)",
    )
    .await;
    // In force once a real write of `probe` is refused.
    let probe: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "probe", "namespace": namespace },
        "data": { "value": "two" },
    }))
    .unwrap();
    eventually("the policy is in force", || async {
        let config_maps = fixture.config_maps();
        match config_maps.create(&PostParams::default(), &probe).await {
            Ok(_) => {
                // Not yet: take it away and try again.
                config_maps
                    .delete("probe", &DeleteParams::default())
                    .await
                    .unwrap();
                false
            }
            Err(kube::Error::Api(status)) => status.message.contains("late writes"),
            Err(error) => panic!("creating the probe: {error}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_write_that_fails_after_others_is_rolled_back_to_the_running_revision() {
    let fixture = Fixture::new("roll-back", "AllowAll").await;
    let (instances, name) = install_v1(&fixture, config_map(&fixture, "late", "one", false)).await;
    wait_for(&instances, &name, "v1 healthy", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    let policy = fixture.scope.name("late-writes");
    refuse_late_writes(&fixture, &policy).await;
    // v2: `a` and `fresh` are written, then `late` is refused for real
    // (its dry run passed).
    content(
        &fixture,
        "v2",
        &[
            config_map(&fixture, "a", "two", false),
            config_map(&fixture, "fresh", "new", false),
            config_map(&fixture, "late", "two", false),
        ],
    )
    .await;
    fixture.pivot("v2", "v2").await;
    let failed = wait_for(
        &instances,
        &name,
        "the pivot fails and is rolled back",
        |i| {
            reason_is(i, ConditionType::Installed, "InstallFailed")
                && message_of(i, ConditionType::Installed).contains("rolled back")
        },
    )
    .await;
    let message = message_of(&failed, ConditionType::Installed);
    assert!(message.contains("late"), "names the object: {message}");
    assert!(
        message.contains(&format!("put back to Bundle {}", fixture.scope.name("v1"))),
        "{message}"
    );
    // v1 runs whole: `a` is back at v1, `fresh` is gone, `late` untouched.
    assert_eq!(fixture.value_of("a").await.as_deref(), Some("one"));
    assert_eq!(fixture.value_of("late").await.as_deref(), Some("one"));
    assert!(
        fixture
            .config_maps()
            .get_opt("fresh")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        condition_is(&failed, ConditionType::Healthy, "True"),
        "one revision runs: {:?}",
        failed.condition(ConditionType::Healthy)
    );

    // The cause goes: the retry installs v2 whole.
    Api::<ValidatingAdmissionPolicyBinding>::all(fixture.scope.client.clone())
        .delete(&policy, &DeleteParams::default())
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicy>::all(fixture.scope.client.clone())
        .delete(&policy, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&instances, &name, "v2 installed on the retry", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status.as_ref().and_then(|s| s.active_bundle.as_deref())
                == Some(fixture.scope.name("v2").as_str())
    })
    .await;
    assert_eq!(fixture.value_of("a").await.as_deref(), Some("two"));
    assert_eq!(fixture.value_of("late").await.as_deref(), Some("two"));
    assert_eq!(fixture.value_of("fresh").await.as_deref(), Some("new"));
    fixture.scope.cleanup().await;
}

/// A policy refusing DELETE of ConfigMap `stays` (and `delete-probe`) in
/// the fixture's namespace; its binding. Named `name`.
async fn refuse_deletes(fixture: &Fixture, name: &str) {
    let namespace = &fixture.scope.namespace;
    config_map_policy(
        fixture,
        name,
        &["DELETE"],
        format!(
            "oldObject.metadata.namespace != '{namespace}' || !(oldObject.metadata.name in ['stays', 'delete-probe'])"
        ),
        "refused by the test's policy (deletes)",
    )
    .await;
    // In force once deleting `delete-probe` is refused.
    let probe: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "delete-probe", "namespace": namespace },
    }))
    .unwrap();
    let config_maps = fixture.config_maps();
    config_maps
        .create(&PostParams::default(), &probe)
        .await
        .unwrap();
    eventually("the policy is in force", || async {
        match config_maps
            .delete("delete-probe", &DeleteParams::default())
            .await
        {
            Ok(_) => {
                config_maps
                    .create(&PostParams::default(), &probe)
                    .await
                    .unwrap();
                false
            }
            Err(kube::Error::Api(status)) => status.message.contains("(deletes)"),
            Err(error) => panic!("deleting the probe: {error}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_pivot_whose_prune_fails_says_the_new_revision_is_applied_and_not_done() {
    let fixture = Fixture::new("prune-fails", "AllowAll").await;
    let (instances, name) = install_v1(&fixture, config_map(&fixture, "stays", "one", false)).await;
    wait_for(&instances, &name, "revision 1 rolled out", |i| {
        reason_is(i, ConditionType::Progressing, "Succeeded")
    })
    .await;
    let policy = fixture.scope.name("deletes");
    refuse_deletes(&fixture, &policy).await;
    // v2 drops `stays`, which the policy keeps from being deleted.
    content(&fixture, "v2", &[config_map(&fixture, "a", "two", false)]).await;
    fixture.pivot("v2", "v2").await;
    let stuck = wait_for(&instances, &name, "the prune refused", |i| {
        reason_is(i, ConditionType::Progressing, "Retrying")
    })
    .await;
    let progressing = stuck.condition(ConditionType::Progressing).unwrap();
    assert!(
        progressing
            .message
            .contains("deleting what the revision before it alone had failed")
            && progressing.message.contains("revision 1 serves in part"),
        "{}",
        progressing.message
    );
    assert!(reason_is(&stuck, ConditionType::Installed, "InstallFailed"));
    let status = stuck.status.clone().unwrap();
    let outcomes: Vec<(i64, RevisionOutcome)> = status
        .revisions
        .iter()
        .map(|revision| (revision.number, revision.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (1, RevisionOutcome::Succeeded),
            (2, RevisionOutcome::RollingOut)
        ],
        "revision 2 is applied, not done"
    );
    assert_eq!(status.serving_revision, Some(1));
    assert_eq!(fixture.value_of("a").await.as_deref(), Some("two"));

    // The policy gone, the next try deletes `stays` and revision 2 serves.
    Api::<ValidatingAdmissionPolicyBinding>::all(fixture.scope.client.clone())
        .delete(&policy, &DeleteParams::default())
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicy>::all(fixture.scope.client.clone())
        .delete(&policy, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&instances, &name, "revision 2 serves", |i| {
        i.status
            .as_ref()
            .is_some_and(|status| status.serving_revision == Some(2))
    })
    .await;
    assert_eq!(fixture.value_of("stays").await, None);
    fixture.scope.cleanup().await;
}

/// A Pod in the fixture's namespace that runs as `account`.
fn pod_running_as(fixture: &Fixture, account: &str) -> (String, String) {
    (
        "pod.yaml".into(),
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\n  namespace: {}\nspec:\n  serviceAccountName: {account}\n  containers:\n  - name: app\n    image: registry.example/app:1\n",
            fixture.scope.namespace
        ),
    )
}

#[tokio::test]
async fn a_pod_running_as_a_service_account_of_the_same_content_installs() {
    let fixture = Fixture::new("sa-pod", "AllowAll").await;
    let account = (
        "account.yaml".to_owned(),
        format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n  namespace: {}\n",
            fixture.scope.namespace
        ),
    );
    // The Pod comes first in the files: apply order, not file order,
    // decides what exists when it is written.
    content(
        &fixture,
        "app",
        &[pod_running_as(&fixture, "runner"), account],
    )
    .await;
    let (instances, name) = fixture
        .create_instance("app", fixture.bundle_spec("app", "file://content"))
        .await;
    let installed = wait_for(
        &instances,
        &name,
        "installed, not refused by the dry run",
        |i| {
            condition_is(i, ConditionType::Installed, "True")
                || reason_is(i, ConditionType::Installed, "InstallFailed")
        },
    )
    .await;
    assert!(
        condition_is(&installed, ConditionType::Installed, "True"),
        "the ServiceAccount the Pod runs as comes with it: {}",
        message_of(&installed, ConditionType::Installed)
    );
    let namespace = &fixture.scope.namespace;
    let pod = Api::<Pod>::namespaced(fixture.scope.client.clone(), namespace)
        .get("app")
        .await
        .unwrap();
    assert_eq!(
        pod.spec.unwrap().service_account_name.as_deref(),
        Some("runner")
    );
    assert!(
        Api::<ServiceAccount>::namespaced(fixture.scope.client.clone(), namespace)
            .get_opt("runner")
            .await
            .unwrap()
            .is_some()
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_pod_running_as_an_account_nothing_brings_is_refused_and_leaves_nothing() {
    let fixture = Fixture::new("sa-missing", "AllowAll").await;
    // The ConfigMap is written before the Pod, so the Pod's refusal can
    // only come from its own write: what came before is removed again.
    content(
        &fixture,
        "app",
        &[
            config_map(&fixture, "settings", "one", false),
            pod_running_as(&fixture, "nobody"),
        ],
    )
    .await;
    let (instances, name) = fixture
        .create_instance("app", fixture.bundle_spec("app", "file://content"))
        .await;
    let refused = wait_for(&instances, &name, "the Pod refused", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = message_of(&refused, ConditionType::Installed);
    assert!(
        message.contains("Pod") && message.contains("app") && message.contains("nobody"),
        "names the Pod and the account it cannot find: {message}"
    );
    assert!(message.contains("rolled back"), "{message}");
    let namespace = &fixture.scope.namespace;
    assert!(
        fixture
            .config_maps()
            .get_opt("settings")
            .await
            .unwrap()
            .is_none(),
        "what was written before the Pod is gone"
    );
    assert!(
        Api::<Pod>::namespaced(fixture.scope.client.clone(), namespace)
            .get_opt("app")
            .await
            .unwrap()
            .is_none()
    );
    fixture.scope.cleanup().await;
}
