//! `approve operatorrequest/NAMESPACE/NAME`: the Instance that installs a
//! namespace owner's request is found through the Operator written for it
//! (whose status only pakket-resolveset writes; here the test writes it as
//! the process would), approved as any Instance is; a request that was
//! not accepted, or has no Instance yet, is refused saying why. `why` and
//! `describe` of a request tell its requester, who may read only the
//! request, where it stands.

use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_operators_api::request::operator_name;
use pakket_operators_api::{Operator, OperatorRequest};
use pakket_testkit::{Scope, install_crds};
use serde_json::json;

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::support::{Grant, PENDING_DIGEST, get_instance, pending_instance, plugin};

/// Request `name` in the scope's namespace, its `Accepted` condition as
/// the controller would write it.
async fn request(scope: &Scope, name: &str, accepted: &str) {
    let requests: Api<OperatorRequest> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let request: OperatorRequest = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "OperatorRequest",
        "metadata": { "name": name, "namespace": scope.namespace, "labels": scope.labels() },
        "spec": { "catalog": { "name": "operatorhubio", "package": "etcd" } },
    }))
    .unwrap();
    requests
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    requests
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "conditions": [{
                "type": "Accepted", "status": accepted, "reason": "Test",
                "message": "as the controller says", "lastTransitionTime": "2026-11-28T10:00:00Z",
            }] } })),
        )
        .await
        .unwrap();
}

/// The name of the Operator written for request `name` (it carries the
/// request's UID).
async fn written_name(scope: &Scope, name: &str) -> String {
    let requests: Api<OperatorRequest> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let uid = requests.get(name).await.unwrap().metadata.uid.unwrap();
    operator_name(&scope.namespace, name, &uid)
}

/// The Operator written for request `name`, its status listing `instance`.
async fn operator(scope: &Scope, name: &str, instance: Option<&str>) {
    let operators: Api<Operator> = Api::all(scope.client.clone());
    let written = written_name(scope, name).await;
    let operator: Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": written, "labels": scope.labels() },
        "spec": { "catalog": { "name": "operatorhubio", "package": "etcd" } },
    }))
    .unwrap();
    operators
        .create(&PostParams::default(), &operator)
        .await
        .unwrap();
    let mut components = vec![json!({"kind": "Input", "name": written, "state": "Resolved"})];
    if let Some(instance) = instance {
        components.push(json!({"kind": "Instance", "name": instance, "state": "ApprovalPending"}));
    }
    operators
        .patch_status(
            &written,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "components": components } })),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_operator_request_is_approved_through_the_instance_its_operator_installs() {
    let scope = Scope::new("approve-request").await;
    install_crds(&scope.client).await.unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_resolveset::crd::all())
        .await
        .unwrap();
    let (instance, bundle) = pending_instance(&scope, "etcd").await;
    request(&scope, "etcd", "True").await;
    operator(&scope, "etcd", Some(&instance)).await;

    let named = format!("operatorrequest/{}/etcd", scope.namespace);
    let run = plugin("admin", &["approve", &named]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "instance {instance} approved (Bundle {bundle} at {PENDING_DIGEST}"
        )),
        "{run:?}"
    );
    let approval = get_instance(&scope, &instance)
        .await
        .status
        .unwrap()
        .approval
        .expect("status.approval");
    assert_eq!(approval.digest, PENDING_DIGEST);

    // Not accepted: nothing of it waits, nothing is approved.
    request(&scope, "refused", "False").await;
    let refused = plugin(
        "admin",
        &[
            "approve",
            &format!("operatorrequest/{}/refused", scope.namespace),
        ],
    )
    .await;
    assert!(
        refused.code == 1
            && refused
                .stderr
                .contains("was not accepted (Test: as the controller says)"),
        "{refused:?}"
    );
    // Accepted, its operator not installing anything yet.
    request(&scope, "early", "True").await;
    operator(&scope, "early", None).await;
    let early = plugin(
        "admin",
        &[
            "deny",
            &format!("operatorrequest/{}/early", scope.namespace),
        ],
    )
    .await;
    assert!(
        early.code == 1 && early.stderr.contains("has no Instance to approve yet"),
        "{early:?}"
    );
    let missing = plugin("admin", &["approve", "operatorrequest/nowhere"]).await;
    assert!(
        missing.code == 1 && missing.stderr.contains("NAMESPACE/NAME"),
        "{missing:?}"
    );
    for name in ["etcd", "early"] {
        let _ = Api::<Operator>::all(scope.client.clone())
            .delete(&written_name(&scope, name).await, &Default::default())
            .await;
    }
    scope.cleanup().await;
}

#[tokio::test]
async fn why_an_operator_request_says_where_it_stands_and_its_next_step_works() {
    let scope = Scope::new("why-request").await;
    install_crds(&scope.client).await.unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_resolveset::crd::all())
        .await
        .unwrap();
    let (instance, _bundle) = pending_instance(&scope, "etcd").await;
    request(&scope, "etcd", "True").await;
    operator(&scope, "etcd", Some(&instance)).await;
    // The status as pakket-resolveset mirrors it: accepted, the Instance
    // installing it waiting for a person.
    let written = written_name(&scope, "etcd").await;
    Api::<OperatorRequest>::namespaced(scope.client.clone(), &scope.namespace)
        .patch_status(
            "etcd",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": {
                "operator": written, "instance": instance,
                "conditions": [
                    { "type": "Accepted", "status": "True", "reason": "OperatorWritten",
                      "message": format!("Operator {written} asks for it on your behalf"),
                      "lastTransitionTime": "2026-11-28T10:00:00Z" },
                    { "type": "Approved", "status": "False", "reason": "ApprovalPending",
                      "message": "the class asks a person", "lastTransitionTime": "2026-11-28T10:00:00Z" },
                ],
            } })),
        )
        .await
        .unwrap();
    let named = format!("operatorrequest/{}/etcd", scope.namespace);

    let why = plugin("admin", &["why", &named]).await;
    assert_eq!(why.code, 0, "{why:?}");
    assert!(
        why.stdout.starts_with(&format!(
            "OperatorRequest {}/etcd: waits for approval of Instance {instance}, which installs it\n",
            scope.namespace
        )),
        "{why:?}"
    );
    assert!(
        why.stdout
            .contains("  - Approved is False (ApprovalPending): the class asks a person"),
        "{why:?}"
    );
    // The command it names is the one that approves it.
    let next = why
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("Next: "))
        .expect("a next step");
    let command = next
        .rsplit('`')
        .nth(1)
        .and_then(|command| command.strip_prefix("kubectl instance "))
        .expect("a kubectl instance command");
    assert_eq!(command, format!("approve {named}"));
    let args: Vec<&str> = command.split(' ').collect();
    let approved = plugin("admin", &args).await;
    assert_eq!(approved.code, 0, "{approved:?}");
    assert!(
        get_instance(&scope, &instance)
            .await
            .status
            .unwrap()
            .approval
            .is_some(),
        "the named command approved Instance {instance}"
    );

    // JSON says the same.
    let json_run = plugin("admin", &["why", &named, "-o", "json"]).await;
    let parsed: serde_json::Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(
        parsed["summary"],
        format!("waits for approval of Instance {instance}, which installs it")
    );

    // describe, as the requester would run it: alice may read requests
    // (as deploy/rbac/examples.yaml lets a namespace owner), not Instances,
    // and still sees what she asked for, where it stands, and its names.
    let requester = Grant::new(
        &scope,
        "request-reader",
        "alice",
        vec![PolicyRule {
            api_groups: Some(vec!["operators.pakket.dev".into()]),
            resources: Some(vec![
                "operatorrequests".into(),
                "operatorrequests/status".into(),
            ]),
            verbs: vec!["get".into()],
            ..PolicyRule::default()
        }],
    )
    .await;
    let described = plugin("alice", &["describe", &named]).await;
    assert_eq!(described.code, 0, "{described:?}");
    // The conditions' table: its header, and the Approved row with type,
    // status, reason, then (after its age) the message.
    assert!(
        described.stdout.lines().any(|line| line
            .split_whitespace()
            .eq(["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"])),
        "{described:?}"
    );
    let approved_row = described
        .stdout
        .lines()
        .find(|line| line.starts_with("  Approved "))
        .unwrap_or_else(|| panic!("no Approved row: {described:?}"));
    let words: Vec<&str> = approved_row.split_whitespace().collect();
    assert_eq!(
        &words[..3],
        ["Approved", "False", "ApprovalPending"],
        "{approved_row}"
    );
    assert!(
        approved_row.ends_with("   the class asks a person"),
        "{approved_row}"
    );
    for line in [
        format!("Namespace:        {}\n", scope.namespace),
        "Package:          etcd\n".to_owned(),
        "Catalog:          operatorhubio\n".to_owned(),
        format!("State:            waits for approval of Instance {instance}, which installs it\n"),
        format!("Operator:         {written}\n"),
        format!("Instance:         {instance}\n"),
    ] {
        assert!(
            described.stdout.contains(&line),
            "{line:?} missing: {described:?}"
        );
    }
    // And why, with the same rights: the whole answer, the approver's
    // step named as someone else's.
    let why = plugin("alice", &["why", &named]).await;
    assert!(
        why.code == 0
            && why.stdout.contains(&format!(
                "waits for approval of Instance {instance}, which installs it"
            ))
            && why.stdout.contains("someone who may approve Instances"),
        "{why:?}"
    );
    let as_json = plugin("alice", &["describe", &named, "-o", "json"]).await;
    let parsed: serde_json::Value = serde_json::from_str(&as_json.stdout).unwrap();
    assert_eq!(parsed["spec"]["catalog"]["package"], "etcd", "{as_json:?}");
    assert_eq!(
        parsed["status"]["instance"],
        instance.as_str(),
        "{as_json:?}"
    );
    requester.revoke().await;

    // Refused: nothing written, and why.
    request(&scope, "refused", "False").await;
    let refused = plugin(
        "admin",
        &[
            "why",
            &format!("operatorrequest/{}/refused", scope.namespace),
        ],
    )
    .await;
    assert!(
        refused.code == 0
            && refused
                .stdout
                .contains("refused (Test): nothing was written for it"),
        "{refused:?}"
    );
    // Someone who may not read requests there is told which right to ask for.
    let carol = plugin("carol", &["why", &named]).await;
    assert!(
        carol.code == 1 && carol.stderr.contains("operatorrequests"),
        "{carol:?}"
    );
    let carol = plugin("carol", &["describe", &named]).await;
    assert!(
        carol.code == 1 && carol.stderr.contains("operatorrequests"),
        "{carol:?}"
    );
    let _ = Api::<Operator>::all(scope.client.clone())
        .delete(&written, &Default::default())
        .await;
    scope.cleanup().await;
}
