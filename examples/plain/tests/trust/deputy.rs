//! The provisioner reads and fetches only on the requester's behalf, and an
//! approver sees what he approves before approving it.
//! - A Bundle may mount a ConfigMap only if its requester may `get` it:
//!   checked at admission, so the request fails at once.
//! - `https://` refs to loopback and other internal addresses are refused
//!   unless the class allows them; nothing is sent there, and no response
//!   is echoed into a status.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use pakket_api::{Bundle, ConditionType, Instance};
use pakket_testkit::{condition_is, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, refused_with, rule};

#[tokio::test]
async fn a_bundle_cannot_mount_a_config_map_its_requester_cannot_read() {
    let stage = Stage::shipped("trust-deputy-read", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    let secret = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: copied\n  namespace: {}\ndata:\n  value: the admin's secret\n",
        stage.namespace()
    );
    stage.content("private", &[("copied.yaml", secret)]).await;
    let alice = stage.client_as("alice").await;
    assert!(refused_with(
        &Api::<ConfigMap>::namespaced(alice.clone(), stage.namespace())
            .get("private")
            .await,
        403
    ));
    let refused = stage
        .create(&alice, stage.instance("reader", "reader-v1", "private"))
        .await;
    let Err(kube::Error::Api(status)) = &refused else {
        panic!("the webhook refuses: {refused:?}");
    };
    assert_eq!(status.code, 403);
    assert!(
        status.message.contains("private") && status.message.contains("get"),
        "{}",
        status.message
    );
    assert!(
        Api::<Instance>::all(stage.admin())
            .get_opt(&stage.scope.name("reader"))
            .await
            .unwrap()
            .is_none()
            && Api::<Bundle>::all(stage.admin())
                .get_opt(&stage.scope.name("reader-v1"))
                .await
                .unwrap()
                .is_none(),
        "nothing was created"
    );
    assert_eq!(stage.value_of("copied").await, None);

    // The legitimate path: once alice may read it, the same request works.
    stage
        .grant(
            "alice-reads",
            "alice",
            vec![rule("", "configmaps", &["get"], &["private"])],
        )
        .await;
    stage
        .create(&alice, stage.instance("reader", "reader-v1", "private"))
        .await
        .unwrap();
    stage.installed("reader").await;
    stage.cleanup().await;
}

/// A TCP listener on loopback that counts the connections it is offered.
fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (address, count)
}

#[tokio::test]
async fn an_https_ref_to_loopback_is_refused_and_nothing_is_sent() {
    let stage = Stage::shipped("trust-deputy-fetch", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    let (address, connections) = counting_listener();
    let alice = stage.client_as("alice").await;
    for (suffix, host) in [
        ("by-ip", address.clone()),
        ("by-name", address.replace("127.0.0.1", "localhost")),
    ] {
        let instance = json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": stage.scope.name(suffix), "labels": stage.scope.labels() },
            "spec": { "class": stage.class(), "bundle": {
                "name": stage.scope.name(&format!("{suffix}-v1")),
                "spec": { "class": stage.class(), "refs": [format!("https://{host}/internal/admin.tgz")] },
            } },
        });
        stage.create(&alice, instance).await.unwrap();
        let failed = stage
            .wait(suffix, "the fetch refused", |i| {
                reason_is(i, ConditionType::Unpacked, "UnpackFailed")
            })
            .await;
        let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
        assert!(
            (message.contains("is a loopback address")
                || message.contains("is a cluster-internal name"))
                && message.contains("nothing was sent to it")
                && message.contains("allowInternalAddresses: true"),
            "{message}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "nothing was sent to the internal address"
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn an_approver_sees_the_objects_and_rbac_before_approving() {
    let stage = Stage::shipped("trust-deputy-review", "Manual", Webhooks::On).await;
    stage.grant_approver("bob").await;
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: wide\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get, list]\n".to_owned();
    stage
        .content(
            "content",
            &[
                ("cm.yaml", stage.config_map_manifest("app", "v1")),
                ("role.yaml", role),
            ],
        )
        .await;
    stage
        .create(&stage.admin(), stage.instance("app", "app-v1", "content"))
        .await
        .unwrap();
    stage
        .wait("app", "unpacked, pending", |i| {
            condition_is(i, ConditionType::Unpacked, "True")
                && reason_is(i, ConditionType::Approved, "ApprovalPending")
        })
        .await;
    // bob, with only the shipped approver role, reads what he would approve.
    let bob = stage.client_as("bob").await;
    // The content is embedded, so what it holds is recorded in the Instance.
    let instance = Api::<Instance>::all(bob)
        .get(&stage.scope.name("app"))
        .await
        .expect("the approver role can read Instances");
    let status = instance.status.unwrap().embedded_bundle.unwrap().status;
    let objects: Vec<String> = status.objects.iter().map(ToString::to_string).collect();
    assert!(
        objects.contains(&"ClusterRole/wide".to_owned()),
        "{objects:?}"
    );
    assert_eq!(status.grants.len(), 1);
    assert_eq!(status.grants[0].grants, ["get,list on secrets (core)"]);
    assert!(
        status.source.unwrap().digest.is_some(),
        "the digest he approves"
    );
    assert_eq!(
        stage.value_of("app").await,
        None,
        "nothing installed before approval"
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn without_the_webhooks_the_provisioner_still_reads_nothing_for_an_unknown_requester() {
    let stage = Stage::shipped("trust-deputy-nowebhook", "AllowAll", Webhooks::Off).await;
    stage.grant_requester("alice").await;
    // Not valid YAML, so a parser error would quote it if it were read.
    stage
        .content(
            "private",
            &[("secret.yaml", "token: [TOKEN=hunter2".to_owned())],
        )
        .await;
    let alice = stage.client_as("alice").await;
    stage
        .create(&alice, stage.instance("reader", "reader-v1", "private"))
        .await
        .expect("without the webhooks, RBAC alone lets alice create it");
    let refused = stage
        .wait("reader", "the read refused", |i| {
            reason_is(i, ConditionType::Unpacked, "UnpackFailed")
        })
        .await;
    let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("on the requester's behalf") && message.contains("nothing was read"),
        "{message}"
    );
    // The whole Instance, its embedded Bundle's status included.
    let everything = serde_json::to_string(&refused).unwrap();
    assert!(!everything.contains("hunter2"), "{everything}");
    stage.cleanup().await;
}
