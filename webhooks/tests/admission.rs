//! The webhooks through the real apiserver, which calls them over TLS: the
//! `use` verb, the Approved guard, the creator record, Bundle immutability,
//! ConfigMap content, and what happens while the webhook is down.
//!
//! Each test registers its own server for objects with its scope label only
//! (other test binaries share the control plane), as the test users
//! `alice`, `bob`, `carol` (no RBAC until a test grants some).

mod support;

use std::collections::BTreeMap;
use std::process::Stdio;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{
    Bundle, CREATED_BY_ANNOTATION, CreatorRecord, Instance, ProvisionerClass, Reason, RecordKey,
};
use pakket_testkit::cluster;
use serde_json::json;
use support::{Harness, eventually, pakket_rule, refusal, user, writer_rules};
use tokio::io::AsyncWriteExt as _;

fn post() -> PostParams {
    PostParams::default()
}

async fn create_class(harness: &Harness, suffix: &str) -> String {
    let class = harness.class(suffix);
    Api::<ProvisionerClass>::all(harness.scope.client.clone())
        .create(&post(), &class)
        .await
        .unwrap();
    harness.scope.name(suffix)
}

/// Creates `object` once the apiserver lets it through, retrying only while
/// the refusal contains `pending` (RBAC or a grant not yet in effect).
async fn create_when_allowed<K>(api: &Api<K>, object: &K, pending: &[&str]) -> K
where
    K: Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    eventually("the create being allowed", || async {
        match api.create(&post(), object).await {
            Ok(created) => Ok(created),
            Err(error) => {
                let message = error.to_string();
                if pending.iter().any(|p| message.contains(p)) {
                    Err(message)
                } else {
                    panic!("refused for another reason: {message}")
                }
            }
        }
    })
    .await
}

/// The webhook's refusal of creating `object`, retrying while the refusal
/// is RBAC's own (the writer grant not yet in effect); panics if created.
async fn webhook_refusal<K>(api: &Api<K>, object: &K, expected: &str) -> String
where
    K: Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    eventually("the webhook's refusal", || async {
        match api.create(&post(), object).await {
            Ok(created) => panic!("created, but the webhook should refuse it: {created:?}"),
            Err(error) if error.to_string().contains(expected) => Ok(error.to_string()),
            Err(error) => Err(error.to_string()),
        }
    })
    .await
}

#[tokio::test]
async fn use_verb_gates_bundles_and_instances_class_by_class() {
    let harness = Harness::start("use-verb").await;
    let class_a = create_class(&harness, "a").await;
    let class_b = create_class(&harness, "b").await;
    harness
        .grant("writer", vec![user("alice"), user("bob")], writer_rules())
        .await;
    let alice = cluster().client_as("alice").await;
    let instances: Api<Instance> = Api::all(alice.clone());
    let bundles: Api<Bundle> = Api::all(alice.clone());

    // Without `use`: refused, naming user, class, verb and the rule.
    let message = webhook_refusal(
        &instances,
        &harness.instance("i-a", &class_a),
        "may not use",
    )
    .await;
    for expected in [
        format!(r#"user "alice" may not use ProvisionerClass "{class_a}" named in spec.class"#),
        format!(r#"verb "use" on provisionerclasses.core.pakket.dev/{class_a}"#),
        format!("resources: [provisionerclasses], resourceNames: [{class_a}], verbs: [use]"),
    ] {
        assert!(message.contains(&expected), "{expected} not in {message}");
    }
    webhook_refusal(&bundles, &harness.bundle("b-a", &class_a), "may not use").await;

    // With a ClusterRoleBinding granting `use` on A: allowed.
    harness
        .grant(
            "use-a",
            vec![user("alice")],
            vec![pakket_rule(&["provisionerclasses"], &["use"], &[&class_a])],
        )
        .await;
    create_when_allowed(
        &instances,
        &harness.instance("i-a", &class_a),
        &["may not use"],
    )
    .await;
    bundles
        .create(&post(), &harness.bundle("b-a", &class_a))
        .await
        .unwrap();

    // `use` on A does not open B, neither directly nor through an embedded spec.
    let message = refusal(
        instances
            .create(&post(), &harness.instance("i-b", &class_b))
            .await,
    )
    .expect("class B refused");
    assert!(
        message.contains(&format!(r#"may not use ProvisionerClass "{class_b}""#)),
        "{message}"
    );
    let mut embedded = harness.instance("i-embedded", &class_a);
    embedded.spec.bundle.spec = Some(harness.bundle("x", &class_b).spec);
    let message = refusal(instances.create(&post(), &embedded).await).expect("embedded B refused");
    assert!(
        message.contains(&format!(r#""{class_b}" named in spec.bundle.spec.class"#)),
        "{message}"
    );

    // Without `use`, bob may still touch metadata of an Instance, not its spec.
    let bobs: Api<Instance> = Api::all(cluster().client_as("bob").await);
    let name = harness.scope.name("i-a");
    bobs.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    let message = refusal(
        bobs.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"bundle": {"name": "other"}}})),
        )
        .await,
    )
    .expect("a spec change without use is refused");
    assert!(message.contains(r#"user "bob" may not use"#), "{message}");

    harness.cleanup().await;
}

fn approved(reason: Reason, status: ConditionStatus) -> Condition {
    condition::new(reason, status, "set by the test", None, Timestamp::now())
}

async fn set_conditions(
    api: &Api<Instance>,
    name: &str,
    conditions: &[Condition],
) -> kube::Result<Instance> {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": conditions}})),
    )
    .await
}

#[tokio::test]
async fn only_holders_of_approve_change_the_approved_condition() {
    let harness = Harness::start("approval").await;
    let class = create_class(&harness, "class").await;
    let name = harness.scope.name("i");
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    admin
        .create(&post(), &harness.instance("i", &class))
        .await
        .unwrap();
    harness
        .grant("writer", vec![user("bob"), user("carol")], writer_rules())
        .await;
    harness
        .grant(
            "approver",
            vec![user("carol")],
            vec![pakket_rule(&["instances"], &["approve"], &[])],
        )
        .await;
    let bob: Api<Instance> = Api::all(cluster().client_as("bob").await);
    let carol: Api<Instance> = Api::all(cluster().client_as("carol").await);
    let approve = approved(Reason::ApprovedByUser, ConditionStatus::True);
    let unpacking = approved(Reason::Unpacking, ConditionStatus::False);

    // bob may write status, but not approve.
    let message = eventually("bob's approval refused by the webhook", || async {
        match set_conditions(&bob, &name, std::slice::from_ref(&approve)).await {
            Ok(_) => panic!("bob approved without the approve verb"),
            Err(error) if error.to_string().contains("Approved condition") => Ok(error.to_string()),
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains(&format!(
            r#"Instance "{name}": user "bob" may not change the Approved condition (from absent to True/ApprovedByUser)"#
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            r#"verb "approve" on instances.core.pakket.dev/{name}"#
        )),
        "{message}"
    );

    // A status write that leaves Approved alone needs no approve.
    set_conditions(&bob, &name, std::slice::from_ref(&unpacking))
        .await
        .unwrap();

    // carol holds approve.
    eventually("carol's approval", || async {
        set_conditions(&carol, &name, &[unpacking.clone(), approve.clone()])
            .await
            .map_err(|error| error.to_string())
    })
    .await;
    let seen = admin.get(&name).await.unwrap();
    assert_eq!(
        seen.condition(pakket_api::ConditionType::Approved)
            .unwrap()
            .reason,
        "ApprovedByUser"
    );

    // bob may not take approval away either.
    let message = refusal(set_conditions(&bob, &name, std::slice::from_ref(&unpacking)).await)
        .expect("removal refused");
    assert!(
        message.contains("from True/ApprovedByUser to absent"),
        "{message}"
    );

    // A service account holding approve (as provisioners do) may.
    let (robot, subject) = harness.service_account_client("provisioner").await;
    harness
        .grant(
            "robot",
            vec![subject],
            [
                writer_rules(),
                vec![pakket_rule(&["instances"], &["approve"], &[])],
            ]
            .concat(),
        )
        .await;
    let robot: Api<Instance> = Api::all(robot);
    let deny = approved(Reason::ApprovalDenied, ConditionStatus::False);
    eventually("the service account's decision", || async {
        set_conditions(&robot, &name, &[unpacking.clone(), deny.clone()])
            .await
            .map_err(|error| error.to_string())
    })
    .await;
    let seen = admin.get(&name).await.unwrap();
    assert_eq!(
        seen.condition(pakket_api::ConditionType::Approved)
            .unwrap()
            .reason,
        "ApprovalDenied"
    );

    harness.cleanup().await;
}

/// The runtime applies a revision's content again under the approval it
/// had (`rollbackOnFailure`), so the revisions are as much authority as
/// the approval: a user who may write status but not approve cannot plant
/// a revision of content of her choosing, or a rollback to it.
#[tokio::test]
async fn only_holders_of_approve_change_the_revisions_a_rollback_installs_from() {
    let harness = Harness::start("revisions").await;
    let class = create_class(&harness, "class").await;
    let name = harness.scope.name("i");
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    admin
        .create(&post(), &harness.instance("i", &class))
        .await
        .unwrap();
    harness
        .grant("writer", vec![user("bob"), user("carol")], writer_rules())
        .await;
    harness
        .grant(
            "approver",
            vec![user("carol")],
            vec![pakket_rule(&["instances"], &["approve"], &[])],
        )
        .await;
    let planted = json!({ "status": {
        "revisions": [{
            "number": 1,
            "bundle": "bobs-content",
            "bundleSpec": { "class": class, "refs": ["oci://registry.invalid/bob:1"] },
            "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "rendered": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
            "approvedBy": "policy AllowAll",
            "applied": "2026-01-01T00:00:00Z",
            "outcome": "Succeeded",
        }],
        "servingRevision": 1,
        "automaticRollback": {
            "from": 2, "to": 1, "generation": 1, "state": "RolledBack",
        },
    } });
    let bob: Api<Instance> = Api::all(cluster().client_as("bob").await);
    let message = eventually("bob's revisions refused by the webhook", || async {
        match bob
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&planted))
            .await
        {
            Ok(_) => panic!("bob planted revisions without the approve verb"),
            Err(error) if error.to_string().contains("status.revisions") => Ok(error.to_string()),
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains(&format!(
            r#"Instance "{name}": user "bob" may not change status.revisions"#
        )) && message.contains(&format!(
            r#"verb "approve" on instances.core.pakket.dev/{name}"#
        )),
        "{message}"
    );
    let seen = admin.get(&name).await.unwrap().status.unwrap_or_default();
    assert!(seen.revisions.is_empty() && seen.automatic_rollback.is_none());

    // Only the rollback, without a revision: refused as well.
    let rollback_only = json!({ "status": { "automaticRollback": {
        "from": 2, "to": 1, "generation": 1, "state": "RolledBack",
    } } });
    refusal(
        bob.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&rollback_only),
        )
        .await,
    )
    .expect("a planted rollback is refused");

    // carol holds approve (and could approve any content anyway).
    let carol: Api<Instance> = Api::all(cluster().client_as("carol").await);
    eventually("carol's write", || async {
        carol
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&planted))
            .await
            .map_err(|error| error.to_string())
    })
    .await;
    let seen = admin.get(&name).await.unwrap().status.unwrap_or_default();
    assert_eq!(seen.revisions.len(), 1);

    harness.cleanup().await;
}

fn record_of(instance: &Instance) -> CreatorRecord {
    CreatorRecord::of(instance.metadata.annotations.as_ref())
        .expect("a creator record")
        .expect("a well-formed creator record")
}

#[tokio::test]
async fn the_creator_is_recorded_and_cannot_be_forged() {
    let harness = Harness::start("creator").await;
    let class = create_class(&harness, "class").await;
    harness
        .grant(
            "alice",
            vec![user("alice")],
            [
                writer_rules(),
                vec![pakket_rule(&["provisionerclasses"], &["use"], &[&class])],
            ]
            .concat(),
        )
        .await;
    let alice: Api<Instance> = Api::all(cluster().client_as("alice").await);
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());

    let created = create_when_allowed(
        &alice,
        &harness.instance("mine", &class),
        &["forbidden", "may not use"],
    )
    .await;
    let alices = CreatorRecord::new(
        "alice",
        Some("alice".into()),
        vec![
            "pakket:test-users".into(),
            "system:authenticated".into(),
            "team-a".into(),
        ],
    );
    let sealed_for = |instance: &Instance| {
        pakket_api::requester(instance, Some(&harness.webhooks.record_key()))
            .expect("a record the webhook sealed for this spec")
            .0
    };
    assert!(record_of(&created).same_identity(&alices));
    assert!(sealed_for(&created).same_identity(&alices));

    // A record naming someone else is refused, for users and admins alike.
    let mut forged = harness.instance("forged", &class);
    let admins = CreatorRecord::new("pakket-admin", None, vec!["system:masters".into()]);
    forged.metadata.annotations = Some(BTreeMap::from([(
        CREATED_BY_ANNOTATION.into(),
        admins.to_annotation(),
    )]));
    let message = refusal(alice.create(&post(), &forged).await).expect("forged record refused");
    assert!(
        message.contains("the request comes from user \"alice\""),
        "{message}"
    );
    forged.metadata.annotations = Some(BTreeMap::from([(
        CREATED_BY_ANNOTATION.into(),
        alices.to_annotation(),
    )]));
    let message =
        refusal(admin.create(&post(), &forged).await).expect("admin forging alice refused");
    assert!(
        message.contains("the request comes from user \"pakket-admin\""),
        "{message}"
    );

    // A sealed-looking record naming the admin is refused just the same,
    // whether its seal is made up (another key) or genuine (copied from an
    // Instance the admin created): the identity is not the requester's.
    for key in [RecordKey::generate().0, harness.webhooks.record_key()] {
        let sealed = admins.sealed(
            &key,
            CREATED_BY_ANNOTATION,
            &harness.scope.name("forged"),
            &forged.spec,
        );
        forged.metadata.annotations = Some(BTreeMap::from([(
            CREATED_BY_ANNOTATION.into(),
            sealed.to_annotation(),
        )]));
        let message = refusal(alice.create(&post(), &forged).await)
            .expect("a sealed-looking forged record refused");
        assert!(
            message.contains("the request comes from user \"alice\""),
            "{message}"
        );
    }
    assert!(
        admin
            .get_opt(&harness.scope.name("forged"))
            .await
            .unwrap()
            .is_none(),
        "nothing was created"
    );
    // Her own record with a seal of another key: replaced by a fresh seal.
    let mut own = harness.instance("own", &class);
    let foreign = alices.sealed(
        &RecordKey::generate().0,
        CREATED_BY_ANNOTATION,
        &harness.scope.name("own"),
        &own.spec,
    );
    own.metadata.annotations = Some(BTreeMap::from([(
        CREATED_BY_ANNOTATION.into(),
        foreign.to_annotation(),
    )]));
    let resealed = alice.create(&post(), &own).await.unwrap();
    assert!(sealed_for(&resealed).same_identity(&alices));
    assert_ne!(record_of(&resealed).seal, foreign.seal);

    // Changing the record later is refused.
    let name = harness.scope.name("mine");
    let change =
        json!({"metadata": {"annotations": {CREATED_BY_ANNOTATION: admins.to_annotation()}}});
    let message = refusal(
        alice
            .patch(&name, &PatchParams::default(), &Patch::Merge(change))
            .await,
    )
    .expect("changed record refused");
    assert!(
        message.contains("cannot be added, changed or removed"),
        "{message}"
    );

    // Replacing the object without the record keeps the record.
    let mut replacement = alice.get(&name).await.unwrap();
    replacement.metadata.annotations = None;
    let replaced = alice.replace(&name, &post(), &replacement).await.unwrap();
    assert_eq!(record_of(&replaced), record_of(&created));

    // So does server-side apply of a manifest without it, twice.
    let manifest = harness.instance("applied", &class);
    let apply = PatchParams::apply("webhook-test");
    let first = alice
        .patch(
            &harness.scope.name("applied"),
            &apply,
            &Patch::Apply(&manifest),
        )
        .await
        .unwrap();
    let second = alice
        .patch(
            &harness.scope.name("applied"),
            &apply,
            &Patch::Apply(&manifest),
        )
        .await
        .unwrap();
    assert!(sealed_for(&first).same_identity(&alices));
    assert_eq!(record_of(&second), record_of(&first));

    harness.cleanup().await;
}

#[tokio::test]
async fn a_spec_change_records_who_made_it_and_nothing_else_moves_the_record() {
    let harness = Harness::start("last-changed").await;
    let class = create_class(&harness, "class").await;
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    let created = admin
        .create(&post(), &harness.instance("shared", &class))
        .await
        .unwrap();
    let name = harness.scope.name("shared");
    let key = harness.webhooks.record_key();
    let (creator, annotation) = pakket_api::requester(&created, Some(&key)).unwrap();
    assert_eq!(
        (creator.username.as_str(), annotation),
        ("pakket-admin", CREATED_BY_ANNOTATION)
    );
    // bob may edit this one Instance and use the class.
    harness
        .grant(
            "bob",
            vec![user("bob")],
            vec![
                pakket_rule(&["instances"], &["get", "update", "patch"], &[&name]),
                pakket_rule(&["provisionerclasses"], &["use"], &[&class]),
            ],
        )
        .await;
    let bob: Api<Instance> = Api::all(cluster().client_as("bob").await);
    let change = json!({"spec": {"bundle": {"name": harness.scope.name("shared-v2")}}});
    let changed = eventually("bob's grant", || async {
        bob.patch(&name, &PatchParams::default(), &Patch::Merge(&change))
            .await
            .map_err(|error| error.to_string())
    })
    .await;
    let (changer, annotation) = pakket_api::requester(&changed, Some(&key)).unwrap();
    assert_eq!(
        (changer.username.as_str(), annotation),
        ("bob", pakket_api::LAST_CHANGED_BY_ANNOTATION)
    );
    // A label (no spec change) leaves the record as it was.
    let label = json!({"metadata": {"labels": {"touched": "yes"}}});
    let labelled = admin
        .patch(&name, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    assert_eq!(
        pakket_api::requester(&labelled, Some(&key))
            .unwrap()
            .0
            .username,
        "bob"
    );
    // Status writes leave it too: one the webhook never sees (approval
    // untouched) and one it checks (the admin approving).
    for written in [
        approved(Reason::Unpacking, ConditionStatus::False),
        approved(Reason::ApprovedByUser, ConditionStatus::True),
    ] {
        let reported = set_conditions(&admin, &name, &[written]).await.unwrap();
        assert_eq!(
            pakket_api::requester(&reported, Some(&key))
                .unwrap()
                .0
                .username,
            "bob"
        );
    }
    // Writing the record by hand is refused, admin or not.
    let forged = json!({"metadata": {"annotations": {
        pakket_api::LAST_CHANGED_BY_ANNOTATION: r#"{"username":"someone-else"}"#,
    }}});
    let message = refusal(
        admin
            .patch(&name, &PatchParams::default(), &Patch::Merge(&forged))
            .await,
    )
    .expect("a hand-written record is refused");
    assert!(
        message.contains("cannot be added, changed or removed by hand"),
        "{message}"
    );
    harness.cleanup().await;
}

#[tokio::test]
async fn the_approved_content_is_guarded_like_the_condition() {
    let harness = Harness::start("approval-content").await;
    let class = create_class(&harness, "class").await;
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    admin
        .create(&post(), &harness.instance("guarded", &class))
        .await
        .unwrap();
    let name = harness.scope.name("guarded");
    harness
        .grant(
            "bob",
            vec![user("bob")],
            vec![
                pakket_rule(&["instances"], &["get"], &[&name]),
                pakket_rule(&["instances/status"], &["update", "patch"], &[&name]),
            ],
        )
        .await;
    let bob: Api<Instance> = Api::all(cluster().client_as("bob").await);
    let content = json!({"status": {"approval": {
        "bundle": harness.scope.name("guarded-v1"), "digest": format!("sha256:{}", "a".repeat(64)),
        "approvedBy": "bob",
    }}});
    let message = eventually("bob's grant, then the webhook's refusal", || async {
        match bob
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&content))
            .await
        {
            Ok(_) => panic!("status.approval written without the approve verb"),
            Err(error)
                if error
                    .to_string()
                    .contains("may not change the Approved condition") =>
            {
                Ok(error.to_string())
            }
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    assert!(message.contains("for Bundle"), "{message}");
    let unchanged = admin.get(&name).await.unwrap();
    assert!(
        unchanged
            .status
            .and_then(|status| status.approval)
            .is_none()
    );

    // With `approve`, the same write goes through.
    harness
        .grant(
            "bob-approves",
            vec![user("bob")],
            vec![pakket_rule(&["instances"], &["approve"], &[&name])],
        )
        .await;
    eventually("bob's approve grant", || async {
        bob.patch_status(&name, &PatchParams::default(), &Patch::Merge(&content))
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    })
    .await;
    harness.cleanup().await;
}

#[tokio::test]
async fn a_bundle_spec_update_is_refused_with_the_webhooks_message() {
    let harness = Harness::start("bundle-immutable").await;
    let class = create_class(&harness, "class").await;
    let bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    let name = harness.scope.name("b");
    bundles
        .create(&post(), &harness.bundle("b", &class))
        .await
        .unwrap();

    let change = json!({"spec": {"refs": ["docker://quay.io/pakket/hello:v2"]}});
    let message = refusal(
        bundles
            .patch(&name, &PatchParams::default(), &Patch::Merge(change))
            .await,
    )
    .expect("spec change refused");
    assert!(
        message.contains(&format!(
            r#"Bundle "{name}": spec is immutable, but this update changes spec.refs (from ["docker://quay.io/pakket/hello:v1"] to ["docker://quay.io/pakket/hello:v2"])"#
        )),
        "{message}"
    );
    // Labels are not spec.
    bundles
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();

    // What CEL lets through but no provisioner could follow is refused, by field.
    let bad = harness.bundle_with_refs(
        "bad",
        &class,
        &["file://content/x.yaml", "docker://quay.io/A/B:v1"],
    );
    let message = refusal(bundles.create(&post(), &bad).await).expect("bad refs refused");
    assert!(message.contains(r#"spec.refs[0] "file://content/x.yaml": /content/x.yaml is not under any spec.volumeMounts"#), "{message}");
    assert!(
        message.contains(r#"spec.refs[1] "docker://quay.io/A/B:v1""#),
        "{message}"
    );

    harness.cleanup().await;
}

/// A ConfigMap of this test labelled as Bundle content (`content.rs`
/// tests the label itself).
fn config_map(harness: &Harness, name: &str, immutable: bool) -> ConfigMap {
    let mut labels = harness.scope.labels();
    labels.insert(
        pakket_api::BUNDLE_CONTENT_LABEL.to_owned(),
        "true".to_owned(),
    );
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(harness.scope.namespace.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        immutable: Some(immutable),
        data: Some(BTreeMap::from([(
            "hello.yaml".to_owned(),
            "kind: List\n".to_owned(),
        )])),
        ..ConfigMap::default()
    }
}

fn mounting(harness: &Harness, suffix: &str, class: &str, config_map: &str) -> Bundle {
    let mut bundle = harness.bundle_with_refs(suffix, class, &["file://content"]);
    bundle.spec.volume_mounts = vec![
        serde_json::from_value(json!({
            "mountPath": "/content",
            "configMap": {"name": config_map, "namespace": harness.scope.namespace},
        }))
        .unwrap(),
    ];
    bundle
}

#[tokio::test]
async fn a_bundle_may_mount_only_a_config_map_its_requester_may_read() {
    let harness = Harness::start("content-read").await;
    let class = create_class(&harness, "class").await;
    let config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);
    config_maps
        .create(&post(), &config_map(&harness, "private", true))
        .await
        .unwrap();
    harness
        .grant(
            "alice",
            vec![user("alice")],
            vec![
                pakket_rule(&["bundles"], &["create", "get"], &[]),
                pakket_rule(&["provisionerclasses"], &["use"], &[&class]),
            ],
        )
        .await;
    let alice: Api<Bundle> = Api::all(cluster().client_as("alice").await);
    let bundle = mounting(&harness, "reads-private", &class, "private");
    let message = webhook_refusal(&alice, &bundle, "may not read").await;
    assert!(
        message.contains(&format!(
            "spec.volumeMounts[0].configMap names ConfigMap {}/private, which user \"alice\" may not read",
            harness.scope.namespace
        )) && message.contains("resources: [configmaps], resourceNames: [private], verbs: [get]"),
        "{message}"
    );
    let admin_bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    assert!(
        admin_bundles
            .get_opt(&harness.scope.name("reads-private"))
            .await
            .unwrap()
            .is_none(),
        "nothing was created"
    );
    harness
        .grant(
            "alice-reads",
            vec![user("alice")],
            vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["configmaps".into()]),
                resource_names: Some(vec!["private".into()]),
                verbs: vec!["get".into()],
                ..PolicyRule::default()
            }],
        )
        .await;
    create_when_allowed(&alice, &bundle, &["may not read"]).await;
    harness.cleanup().await;
}

#[tokio::test]
async fn config_map_content_is_immutable_and_stays_while_mounted() {
    let harness = Harness::start("content").await;
    let class = create_class(&harness, "class").await;
    let bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    let config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);

    config_maps
        .create(&post(), &config_map(&harness, "mutable", false))
        .await
        .unwrap();
    let message = refusal(
        bundles
            .create(
                &post(),
                &mounting(&harness, "on-mutable", &class, "mutable"),
            )
            .await,
    )
    .expect("mutable content refused");
    assert!(
        message.contains(&format!(
            "ConfigMap {}/mutable, but it is not immutable",
            harness.scope.namespace
        )),
        "{message}"
    );

    config_maps
        .create(&post(), &config_map(&harness, "frozen", true))
        .await
        .unwrap();
    bundles
        .create(&post(), &mounting(&harness, "on-frozen", &class, "frozen"))
        .await
        .unwrap();
    let bundle = harness.scope.name("on-frozen");
    let message = eventually("the delete guard seeing the Bundle", || async {
        match config_maps.delete("frozen", &DeleteParams::default()).await {
            Ok(_) => panic!("mounted content deleted"),
            Err(error) if error.to_string().contains("is the content of Bundle") => {
                Ok(error.to_string())
            }
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains(&format!(r#"Bundle "{bundle}""#)),
        "{message}"
    );
    bundles
        .delete(&bundle, &DeleteParams::default())
        .await
        .unwrap();
    eventually("deleting unmounted content", || async {
        config_maps
            .delete("frozen", &DeleteParams::default())
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    })
    .await;

    // Content that does not exist yet: allowed, with a warning kubectl prints.
    let later = mounting(&harness, "on-later", &class, "later");
    // Through tokio: the webhook serves on this test's runtime meanwhile.
    let mut kubectl = tokio::process::Command::from(cluster().kubectl());
    let mut kubectl = kubectl
        .args(["create", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let manifest = serde_json::to_vec(&later).unwrap();
    kubectl
        .stdin
        .take()
        .unwrap()
        .write_all(&manifest)
        .await
        .unwrap();
    let output = kubectl.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Warning: Bundle \"{}\"",
            harness.scope.name("on-later")
        )) && stderr.contains("which does not exist yet; create it with immutable: true"),
        "{stderr}"
    );
    // ... and when it comes, it must come immutable.
    let message = eventually("the ConfigMap guard seeing the Bundle", || async {
        match config_maps
            .create(&post(), &config_map(&harness, "later", false))
            .await
        {
            Ok(created) => {
                let _ = config_maps.delete("later", &DeleteParams::default()).await;
                Err(format!(
                    "created {:?} before the index saw the Bundle",
                    created.metadata.name
                ))
            }
            Err(error) => Ok(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains("must be immutable: set immutable: true"),
        "{message}"
    );
    config_maps
        .create(&post(), &config_map(&harness, "later", true))
        .await
        .unwrap();

    harness.cleanup().await;
}

#[tokio::test]
async fn content_an_instance_embeds_stays_while_the_instance_mounts_it() {
    // An embedded Bundle has no object of its own: the Instance is its record.
    let harness = Harness::start("embedded-content").await;
    let class = create_class(&harness, "class").await;
    let config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);
    config_maps
        .create(&post(), &config_map(&harness, "embedded", true))
        .await
        .unwrap();
    let mut instance = harness.instance("embeds", &class);
    instance.spec.bundle.spec = Some(mounting(&harness, "unused", &class, "embedded").spec);
    let instances: Api<Instance> = Api::all(harness.scope.client.clone());
    instances.create(&post(), &instance).await.unwrap();
    let message = eventually("the delete guard seeing the Instance", || async {
        match config_maps
            .delete("embedded", &DeleteParams::default())
            .await
        {
            Ok(_) => panic!("content an Instance embeds was deleted"),
            Err(error) if error.to_string().contains("is the content of Bundle") => {
                Ok(error.to_string())
            }
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains(&format!(
            "embedded in Instance {}",
            harness.scope.name("embeds")
        )),
        "{message}"
    );
    harness.cleanup().await;
}

#[tokio::test]
async fn with_the_webhook_down_writes_are_refused_whole_and_work_again_after() {
    let mut harness = Harness::start("webhook-down").await;
    let class = create_class(&harness, "class").await;
    harness
        .grant(
            "alice",
            vec![user("alice")],
            [
                writer_rules(),
                vec![pakket_rule(&["provisionerclasses"], &["use"], &[&class])],
            ]
            .concat(),
        )
        .await;
    let alice: Api<Instance> = Api::all(cluster().client_as("alice").await);
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    create_when_allowed(
        &alice,
        &harness.instance("before", &class),
        &["forbidden", "may not use"],
    )
    .await;

    harness.stop_server().await;
    let message = refusal(
        alice
            .create(&post(), &harness.instance("during", &class))
            .await,
    )
    .expect("create refused while the webhook is down");
    assert!(message.contains("failed calling webhook"), "{message}");
    assert!(
        admin
            .get_opt(&harness.scope.name("during"))
            .await
            .unwrap()
            .is_none(),
        "half-written"
    );
    let bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    assert!(
        refusal(
            bundles
                .create(&post(), &harness.bundle("during", &class))
                .await
        )
        .is_some()
    );

    // Status writes that leave Approved alone never call the webhook.
    let before = harness.scope.name("before");
    let unpacking = approved(Reason::Unpacking, ConditionStatus::False);
    set_conditions(&admin, &before, std::slice::from_ref(&unpacking))
        .await
        .unwrap();
    let approve = approved(Reason::ApprovedByUser, ConditionStatus::True);
    let message = refusal(set_conditions(&admin, &before, &[unpacking, approve]).await)
        .expect("approval refused while the webhook is down");
    assert!(message.contains("failed calling webhook"), "{message}");

    harness.start_server().await;
    create_when_allowed(
        &alice,
        &harness.instance("during", &class),
        &["failed calling webhook"],
    )
    .await;

    harness.cleanup().await;
}

#[tokio::test]
async fn a_new_instance_carries_the_finalizer_of_a_provisioner_that_claimed_its_class() {
    let harness = Harness::start("finalizer").await;
    let class = create_class(&harness, "class").await;
    let classes: Api<ProvisionerClass> = Api::all(harness.scope.client.clone());
    let admin: Api<Instance> = Api::all(harness.scope.client.clone());
    let finalizer = support::NO_PROVISIONER;

    // Another class, claimed by its provisioner (as the runtime does when
    // it runs). Once the webhook's index has the claim, it has the first
    // class too (its watch delivers changes in order).
    let claimed = create_class(&harness, "claimed").await;
    let claim = json!({ "status": { "claimed": {
        "provisioner": support::NO_PROVISIONER, "claimedAt": "2026-11-27T00:00:00Z",
    } } });
    classes
        .patch_status(&claimed, &PatchParams::default(), &Patch::Merge(&claim))
        .await
        .unwrap();
    let created = eventually("the claim reaching the webhook's index", || async {
        let created = admin
            .create(&post(), &harness.instance("with", &claimed))
            .await
            .unwrap();
        if created.finalizers().iter().any(|f| f == finalizer) {
            Ok(created)
        } else {
            admin
                .delete(&created.name_any(), &Default::default())
                .await
                .unwrap();
            Err(format!("finalizers: {:?}", created.finalizers()))
        }
    })
    .await;
    assert_eq!(
        created.finalizers(),
        [finalizer],
        "added once, by the webhook"
    );

    // The first class names the same id but was never claimed (for the
    // webhook, no provisioner with that id serves it: a typo, say). Its
    // Instances get no finalizer, so deleting one does not hang on a
    // finalizer nobody would remove.
    let unclaimed = admin
        .create(&post(), &harness.instance("unclaimed", &class))
        .await
        .unwrap();
    assert!(
        unclaimed.finalizers().is_empty(),
        "{:?}",
        unclaimed.finalizers()
    );
    admin
        .delete(&unclaimed.name_any(), &Default::default())
        .await
        .unwrap();
    assert!(
        admin
            .get_opt(&unclaimed.name_any())
            .await
            .unwrap()
            .is_none(),
        "deleted at once"
    );

    // A class that does not exist names no provisioner: no finalizer.
    let orphan = admin
        .create(&post(), &harness.instance("classless", "no-such-class"))
        .await
        .unwrap();
    assert!(orphan.finalizers().is_empty(), "{:?}", orphan.finalizers());

    // What the webhook added does not stop the Instance from being deleted
    // by hand when no provisioner serves it.
    let unblock = json!({ "metadata": { "finalizers": null } });
    for name in [created.name_any(), orphan.name_any()] {
        admin
            .patch(&name, &PatchParams::default(), &Patch::Merge(&unblock))
            .await
            .unwrap();
        admin.delete(&name, &Default::default()).await.unwrap();
    }
    harness.cleanup().await;
}

#[tokio::test]
async fn an_approval_policy_whose_rules_do_not_compile_is_refused_naming_the_rule() {
    let harness = Harness::start("approval-policy").await;
    let policies: Api<pakket_api::ApprovalPolicy> = Api::all(harness.scope.client.clone());
    let rule = |cel: &str| pakket_api::ApprovalRule {
        name: None,
        cel: cel.into(),
        outcome: pakket_api::RuleOutcome::Approve,
        message: String::new(),
    };
    let mut policy = pakket_api::ApprovalPolicy {
        metadata: harness.scope.meta("policy"),
        spec: pakket_api::ApprovalPolicySpec {
            rules: vec![rule("bundle.package == 'etcd'"), rule("bundle.version ==")],
        },
    };
    let message = webhook_refusal(&policies, &policy, "spec.rules[1].cel").await;
    assert!(
        message.contains("not valid CEL") && message.contains(&harness.scope.name("policy")),
        "{message}"
    );
    policy.spec.rules[1] = rule("bundle.version.startsWith('0.9.')");
    let created = create_when_allowed(&policies, &policy, &["spec.rules"]).await;
    // A broken edit is refused too, and the stored rules stay.
    let mut edited = created.clone();
    edited.spec.rules[0] = rule("requester.name in");
    let refused = policies
        .replace(&created.name_any(), &post(), &edited)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("spec.rules[0].cel"),
        "{refused}"
    );
    let stored = policies.get(&created.name_any()).await.unwrap();
    assert_eq!(stored.spec, created.spec);
    harness.cleanup().await;
}
