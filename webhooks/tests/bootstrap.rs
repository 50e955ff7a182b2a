//! `pakket-webhooks bootstrap` against a real apiserver: the record key, CA
//! and serving certificate made once and reused by every later start (no
//! replica rotates another's key away), a certificate near its end issued
//! again by the same CA, the CA injected as caBundle into every webhook of
//! the named configurations without touching anything else in them, and
//! the pair written where the server reads it.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_testkit::Scope;
use pakket_webhooks::bootstrap::{self, NOT_AFTER_ANNOTATION, Request};
use serde_json::json;

fn data(secret: &Secret, key: &str) -> Vec<u8> {
    secret.data.as_ref().unwrap()[key].0.clone()
}

#[tokio::test]
async fn bootstrap_makes_once_renews_when_due_and_injects_the_ca() {
    let scope = Scope::new("bootstrap").await;
    let configuration = scope.name("hooks");
    let hooks: Api<ValidatingWebhookConfiguration> = Api::all(scope.client.clone());
    let webhook = |name: &str| {
        json!({
            "name": format!("{name}.test.pakket.dev"),
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            // Never called: nothing has the label.
            "failurePolicy": "Ignore",
            "objectSelector": { "matchLabels": { "never": scope.id.clone() } },
            "clientConfig": { "service": { "name": "pakket-webhooks", "namespace": scope.namespace.clone(), "port": 443 } },
            "rules": [{ "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"] }],
        })
    };
    hooks
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": configuration, "labels": scope.labels() },
                "webhooks": [webhook("first"), webhook("second")],
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    let folder = scope.path("bootstrap");
    let request = Request {
        namespace: scope.namespace.clone(),
        services: vec!["pakket-webhooks".into(), "pakket-resolveset".into()],
        write_to: Some(folder.clone()),
        record_key_to: Some(folder.join("record-key")),
        configurations: vec![configuration.clone()],
    };
    let first = bootstrap::run(&scope.client, &request).await.unwrap();
    assert_eq!(
        first.written,
        [
            "pakket-record-key",
            "pakket-registry-v1-certificate-key",
            "pakket-ca",
            "pakket-webhooks-tls",
            "pakket-resolveset-tls"
        ]
    );
    let secrets: Api<Secret> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let ca = secrets.get("pakket-ca").await.unwrap();
    let serving = secrets.get("pakket-webhooks-tls").await.unwrap();
    let record_key = secrets.get("pakket-record-key").await.unwrap();
    assert!(
        pakket_api::RecordKey::from_bytes(data(&record_key, "key").trim_ascii()).is_ok(),
        "a record key the provisioners accept"
    );
    assert!(
        pakket_api::RecordKey::read(&folder.join("record-key/key")).is_ok(),
        "and the webhooks' copy of it"
    );
    // registry-v1's certificate key: as strong, and not the record key.
    let certificate_key = secrets
        .get("pakket-registry-v1-certificate-key")
        .await
        .unwrap();
    let certificate_key = data(&certificate_key, "key");
    assert!(certificate_key.trim_ascii().len() >= 32);
    assert_ne!(certificate_key, data(&record_key, "key"));
    assert_eq!(
        std::fs::read(folder.join("record-key/key")).unwrap(),
        data(&record_key, "key")
    );
    assert_eq!(
        std::fs::read(folder.join("tls.crt")).unwrap(),
        data(&serving, "tls.crt"),
        "the pair is written where the server reads it"
    );
    let found = hooks.get(&configuration).await.unwrap();
    for webhook in found.webhooks.as_ref().unwrap() {
        assert_eq!(
            webhook.client_config.ca_bundle.as_ref().unwrap().0,
            data(&ca, "tls.crt"),
            "{} trusts the CA",
            webhook.name
        );
        assert_eq!(
            webhook.failure_policy.as_deref(),
            Some("Ignore"),
            "nothing else is changed"
        );
    }

    // A second start (another replica, a restart) makes nothing new.
    let again = bootstrap::run(&scope.client, &request).await.unwrap();
    assert!(again.written.is_empty(), "{:?}", again.written);
    assert_eq!(
        data(
            &secrets.get("pakket-webhooks-tls").await.unwrap(),
            "tls.key"
        ),
        data(&serving, "tls.key"),
        "the key is reused"
    );

    // A certificate with ten days left is issued again, by the same CA.
    let soon = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(240))
        .unwrap()
        .to_string();
    secrets
        .patch(
            "pakket-webhooks-tls",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { NOT_AFTER_ANNOTATION: soon } } })),
        )
        .await
        .unwrap();
    let renewed = bootstrap::run(&scope.client, &request).await.unwrap();
    assert_eq!(renewed.written, ["pakket-webhooks-tls"]);
    let now = secrets.get("pakket-webhooks-tls").await.unwrap();
    assert_ne!(
        data(&now, "tls.key"),
        data(&serving, "tls.key"),
        "a new key"
    );
    assert_eq!(
        data(&secrets.get("pakket-ca").await.unwrap(), "tls.crt"),
        data(&ca, "tls.crt"),
        "the same CA"
    );
    assert_eq!(
        std::fs::read(folder.join("tls.key")).unwrap(),
        data(&now, "tls.key")
    );
    let annotations: BTreeMap<String, String> = now.metadata.annotations.unwrap_or_default();
    assert_ne!(annotations[NOT_AFTER_ANNOTATION], soon);

    // Rotating the record key: the admin keeps the old one as
    // `key.previous` and writes a new `key`; bootstrap writes both where
    // the webhooks read them, and records sealed with either verify.
    let old_key = data(&record_key, "key");
    let (_, new_key) = pakket_api::RecordKey::generate();
    secrets
        .patch(
            "pakket-record-key",
            &PatchParams::default(),
            &Patch::Merge(json!({ "stringData": {
                "key": new_key,
                "key.previous": String::from_utf8(old_key.clone()).unwrap(),
            } })),
        )
        .await
        .unwrap();
    bootstrap::run(&scope.client, &request).await.unwrap();
    let key_file = folder.join("record-key").join("key");
    let window = pakket_api::RecordKey::read(&key_file).unwrap();
    let old = pakket_api::RecordKey::from_bytes(old_key.trim_ascii()).unwrap();
    let alice = pakket_api::CreatorRecord::new("alice", None, vec![]);
    let by_old = alice.sealed_for(&old, pakket_api::CREATED_BY_ANNOTATION, "x", "d".into());
    assert!(
        by_old
            .verify_for(&window, pakket_api::CREATED_BY_ANNOTATION, "x", "d")
            .is_ok(),
        "a record of the old key verifies during the window"
    );
    // The window closes: the previous key leaves the Secret and the folder.
    secrets
        .patch(
            "pakket-record-key",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "key.previous": null } })),
        )
        .await
        .unwrap();
    bootstrap::run(&scope.client, &request).await.unwrap();
    assert!(!folder.join("record-key").join("key.previous").exists());
    let after = pakket_api::RecordKey::read(&key_file).unwrap();
    assert!(
        by_old
            .verify_for(&after, pakket_api::CREATED_BY_ANNOTATION, "x", "d")
            .is_err(),
        "after the window the old key's records are untrusted"
    );

    let _ = hooks.delete(&configuration, &DeleteParams::default()).await;
    let _ = std::fs::remove_dir_all(&folder);
    scope.cleanup().await;
}
