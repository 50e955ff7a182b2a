//! `approve` and `deny`: who may, what is written, and what a refused user
//! is told.
//!
//! These tests run without Pakket's admission webhook (webhooks/), so what
//! stops a user here is RBAC on `instances/status`. With the webhook in
//! front, a user who may patch `instances/status` but lacks the `approve`
//! verb is refused by the webhook instead: see `webhook_approval`.

use pakket_api::ConditionType;
use pakket_testkit::{Scope, install_crds};

use crate::support::{
    Grant, PENDING_DIGEST, approver_rules, get_instance, pending_instance, plugin, reviewer_rules,
};

#[tokio::test]
async fn an_approver_approves_and_denies_leaving_the_other_conditions_alone() {
    let scope = Scope::new("approve").await;
    install_crds(&scope.client).await.unwrap();
    let (name, bundle) = pending_instance(&scope, "web").await;
    let before = get_instance(&scope, &name).await;
    let grant = Grant::new(&scope, "approver", "alice", approver_rules()).await;

    let run = plugin("alice", &["approve", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("instance {name} approved (Bundle {bundle} at {PENDING_DIGEST}, by alice)\n")
    );
    let after = get_instance(&scope, &name).await;
    // The approval names the content it covers.
    let content = after
        .status
        .clone()
        .unwrap()
        .approval
        .expect("status.approval");
    assert_eq!(
        (
            content.bundle.as_str(),
            content.digest.as_str(),
            content.approved_by.as_str()
        ),
        (bundle.as_str(), PENDING_DIGEST, "alice")
    );
    // And the spec it was given on: a later change is a new request.
    assert_eq!(content.generation, after.metadata.generation);
    let approved = after.condition(ConditionType::Approved).unwrap();
    assert_eq!(approved.status, "True");
    assert_eq!(approved.reason, "ApprovedByUser");
    assert!(
        approved.message.starts_with("approved by alice at ")
            && approved.message.ends_with(&format!(" for Bundle {bundle}")),
        "{}",
        approved.message
    );
    assert_eq!(approved.observed_generation, after.metadata.generation);
    for kind in [
        ConditionType::Unpacked,
        ConditionType::Installed,
        ConditionType::Healthy,
    ] {
        assert_eq!(
            after.condition(kind),
            before.condition(kind),
            "{}",
            kind.as_str()
        );
    }
    let managers = after.metadata.managed_fields.clone().unwrap_or_default();
    assert!(
        managers
            .iter()
            .any(|entry| entry.manager.as_deref() == Some("kubectl-instance")
                && entry.subresource.as_deref() == Some("status")
                && entry.operation.as_deref() == Some("Apply")),
        "{managers:#?}"
    );

    // Approving again writes nothing and says so.
    let again = plugin("alice", &["approve", &name]).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again
            .stdout
            .starts_with(&format!("instance {name} is already approved")),
        "{again:?}"
    );
    let unchanged = get_instance(&scope, &name).await;
    assert_eq!(
        unchanged.metadata.resource_version,
        after.metadata.resource_version
    );

    let deny = plugin("alice", &["deny", &name, "-m", "not this week"]).await;
    assert_eq!(deny.code, 0, "{deny:?}");
    let denied = get_instance(&scope, &name).await;
    let condition = denied.condition(ConditionType::Approved).unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "ApprovalDenied")
    );
    assert!(
        condition.message.starts_with("denied by alice at "),
        "{}",
        condition.message
    );
    assert!(
        condition.message.ends_with(": not this week"),
        "{}",
        condition.message
    );

    grant.revoke().await;
    scope.cleanup().await;
}

#[tokio::test]
async fn approve_refuses_content_not_unpacked_or_not_the_digest_reviewed() {
    let scope = Scope::new("approve-digest").await;
    install_crds(&scope.client).await.unwrap();
    let (name, bundle) = pending_instance(&scope, "web").await;
    let grant = Grant::new(&scope, "approver", "alice", approver_rules()).await;
    let before = get_instance(&scope, &name).await;

    // --digest names other content: nothing is written.
    let other = format!("sha256:{}", "2".repeat(64));
    let run = plugin("alice", &["approve", &name, "--digest", &other]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "Bundle {bundle} has content {PENDING_DIGEST}, not {other}; nothing was approved"
        )),
        "{run:?}"
    );
    // A Bundle not unpacked yet: there is no content to approve.
    let unpacked_not = scope.name("web-v2");
    crate::support::create_bundle(
        &scope,
        &unpacked_not,
        &["docker://registry.example/web:v2"],
        &[],
        None,
    )
    .await;
    let patch = serde_json::json!({"spec": {"bundle": {"name": unpacked_not}}});
    kube::Api::<pakket_api::Instance>::all(scope.client.clone())
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    let moved = get_instance(&scope, &name).await;
    let run = plugin("alice", &["approve", &name]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "Bundle {unpacked_not} is not unpacked yet, so there is no content to approve"
        )),
        "{run:?}"
    );
    let after = get_instance(&scope, &name).await;
    assert_eq!(
        after.metadata.resource_version,
        moved.metadata.resource_version
    );
    assert!(before.status.unwrap().approval.is_none());
    assert!(after.status.unwrap().approval.is_none());
    grant.revoke().await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_user_without_rbac_on_instances_status_is_told_what_to_ask_for() {
    let scope = Scope::new("refused").await;
    install_crds(&scope.client).await.unwrap();
    let (name, _) = pending_instance(&scope, "web").await;
    let before = get_instance(&scope, &name).await;
    // bob may read Instances and Bundles but not write status.
    let grant = Grant::new(&scope, "reader", "bob", reviewer_rules()).await;

    for verb in ["approve", "deny"] {
        let run = plugin("bob", &[verb, &name]).await;
        assert_eq!(run.code, 1, "{run:?}");
        let stderr = &run.stderr;
        assert!(
            stderr.starts_with(&format!(
                "error: you (bob) may not {verb} Instance {name}: "
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains(r#"cannot patch resource "instances/status""#),
            "{stderr}"
        );
        assert!(
            stderr.contains("ask an admin for verb approve on instances.core.pakket.dev and verbs update, patch on instances/status"),
            "{stderr}"
        );
        assert!(stderr.contains("pakket-instance-approver"), "{stderr}");
        assert!(run.stdout.is_empty(), "{run:?}");
    }
    let after = get_instance(&scope, &name).await;
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );

    // carol may not even read it; she is told what approving takes.
    let run = plugin("carol", &["approve", &name]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with(&format!("error: you (carol) may not get Instance {name}: ")),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("ask an admin for verb approve on instances.core.pakket.dev"),
        "{run:?}"
    );

    grant.revoke().await;
    scope.cleanup().await;
}

#[tokio::test]
async fn an_unknown_instance_is_not_found_with_exit_status_one() {
    let scope = Scope::new("unknown").await;
    install_crds(&scope.client).await.unwrap();
    let missing = scope.name("missing");
    for command in ["approve", "deny", "describe", "why"] {
        let run = plugin("admin", &[command, &missing]).await;
        assert_eq!(run.code, 1, "{command}: {run:?}");
        assert_eq!(
            run.stderr,
            format!("error: instance \"{missing}\" not found\n"),
            "{command}"
        );
        assert!(run.stdout.is_empty(), "{command}: {run:?}");
    }
    scope.cleanup().await;
}
