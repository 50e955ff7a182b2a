//! `approve` with Pakket's admission webhooks in front of the apiserver
//! (`pakket_webhooks::local`, registered for this test's objects only, on
//! the control plane other tests share): RBAC on `instances/status` is not
//! enough, the webhook asks for the `approve` verb, and the plugin tells
//! the user so.

use pakket_api::ConditionType;
use pakket_testkit::{Scope, install_crds};
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};

use crate::support::{
    Grant, PENDING_DIGEST, approve_verb_rules, get_instance, pending_instance, plugin,
    status_writer_rules,
};

#[tokio::test]
async fn the_webhook_refuses_an_approval_without_the_approve_verb_until_it_is_granted() {
    let scope = Scope::new("webhook-approve").await;
    install_crds(&scope.client).await.unwrap();
    let webhooks = LocalWebhooks::start(
        scope.client.clone(),
        LocalOptions::for_labels(scope.id.clone(), scope.labels()),
    )
    .await
    .unwrap();
    let (name, bundle) = pending_instance(&scope, "web").await;
    let before = get_instance(&scope, &name).await;
    // Created as admin through the mutating webhook, which recorded the creator.
    let creator = before
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(pakket_api::CREATED_BY_ANNOTATION));
    assert!(
        creator.is_some_and(|record| record.contains(r#""username":"pakket-admin""#)),
        "{creator:?}"
    );
    // erin may write instances/status as far as RBAC goes, but lacks `approve`.
    let status_writer = Grant::new(&scope, "status-writer", "erin", status_writer_rules()).await;

    let run = plugin("erin", &["approve", &name]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    let stderr = &run.stderr;
    assert!(
        stderr.starts_with(&format!(
            "error: you (erin) may not approve Instance {name}: refused by admission webhook \
             instance-approval.validate.core.pakket.dev: Instance {name:?}: user \"erin\" may not \
             change the Approved condition (from False/ApprovalPending to True/ApprovedByUser \
             for Bundle {bundle} at {PENDING_DIGEST}): "
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            r#"verb "approve" on instances.core.pakket.dev/{name}"#
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("{apiGroups: [core.pakket.dev], resources: [instances], verbs: [approve]}"),
        "{stderr}"
    );
    assert!(stderr.contains("pakket-instance-approver"), "{stderr}");
    // One line, and no RBAC advice erin has already followed.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("update, patch"), "{stderr}");
    // Denying changes the Approved condition too, so it needs the same verb.
    let run = plugin("erin", &["deny", &name]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "error: you (erin) may not deny Instance {name}: refused by admission webhook "
        )) && run.stderr.contains(&format!(
            "(from False/ApprovalPending to False/ApprovalDenied for Bundle {bundle} at \
             {PENDING_DIGEST}): that needs verb \"approve\""
        )),
        "{run:?}"
    );
    let refused = get_instance(&scope, &name).await;
    assert_eq!(
        refused.condition(ConditionType::Approved),
        before.condition(ConditionType::Approved)
    );
    assert_eq!(
        refused.metadata.resource_version,
        before.metadata.resource_version
    );

    // The webhook never keeps a "no": the grant works on the next try.
    let approver = Grant::new(&scope, "approve-verb", "erin", approve_verb_rules()).await;
    let run = plugin("erin", &["approve", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("instance {name} approved (Bundle {bundle} at {PENDING_DIGEST}, by erin)\n")
    );
    let approved = get_instance(&scope, &name).await;
    let condition = approved.condition(ConditionType::Approved).unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "ApprovedByUser")
    );
    assert!(
        condition.message.starts_with("approved by erin at "),
        "{}",
        condition.message
    );

    approver.revoke().await;
    status_writer.revoke().await;
    webhooks.stop().await.unwrap();
    scope.cleanup().await;
}
