//! `approve` and `deny`: who may, what is written, and what a refused user
//! is told.
//!
//! These tests run without Pakket's admission webhook (webhooks/), so what
//! stops a user here is RBAC on `instances/status`. With the webhook in
//! front, a user who may patch `instances/status` but lacks the `approve`
//! verb is refused by the webhook instead: see `webhook_approval`.

use pakket_api::ConditionType;
use pakket_testkit::{Scope, install_crds};

use crate::support::{Grant, approver_rules, get_instance, pending_instance, plugin, reader_rules};

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
        format!("instance {name} approved (Bundle {bundle}, by alice)\n")
    );
    let after = get_instance(&scope, &name).await;
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
async fn a_user_without_rbac_on_instances_status_is_told_what_to_ask_for() {
    let scope = Scope::new("refused").await;
    install_crds(&scope.client).await.unwrap();
    let (name, _) = pending_instance(&scope, "web").await;
    let before = get_instance(&scope, &name).await;
    // bob may read Instances but not write their status.
    let grant = Grant::new(&scope, "reader", "bob", reader_rules()).await;

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
