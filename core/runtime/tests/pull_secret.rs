//! Pull secrets for image refs, against a real registry that requires
//! credentials (Debian's docker-registry with htpasswd, dev/registry) and
//! real Secrets on the real control plane: through `content::unpack`, and
//! end to end through the controller.
//!
//! The images hold ConfigMap manifests written by the test.

mod images;
#[path = "../../../dev/registry/testing.rs"]
mod registry;
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use pakket_api::{BundleSpec, ConditionType, UnpackPhase};
use pakket_runtime::kernel::content::{self, ContentError, ImageSources, UnpackOptions};
use pakket_runtime::kernel::source::{Credentials, ImageSource, SourceOptions};
use pakket_testkit::{Scope, condition_is};
use registry::Registry;
use serde_json::json;
use support::{Controller, Scratch, config_map, tarball};

const USER: &str = "alice";
const PASSWORD: &str = "s3cret";

/// Pushes a one-layer image as `USER`; returns the manifest digest.
async fn push(image: &str, layer: Vec<u8>) -> String {
    let source = ImageSource::new(SourceOptions {
        credentials: Some(Credentials {
            username: USER.into(),
            password: PASSWORD.into(),
        }),
        ..SourceOptions::default()
    });
    images::push_gzip_layer(&source, image, layer).await
}

/// A Secret `name` in `namespace` of `kind` holding a docker config whose
/// `auths` are `auths`.
async fn secret(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kind: &str,
    auths: serde_json::Value,
) {
    let config = json!({ "auths": auths });
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        type_: Some(kind.into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            ByteString(serde_json::to_vec(&config).unwrap()),
        )])),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

fn basic(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

#[tokio::test]
async fn the_classs_pull_secret_is_used_and_every_mistake_is_named() {
    let own = Registry::start("auth", Some(&format!("{USER}:{PASSWORD}")));
    let scope = Scope::new("pull-secret-unpack").await;
    let namespace = scope.namespace.clone();
    let reference = own.image("bundles/private:v1");
    let layer = tarball(&[(
        "manifests/a.yaml",
        config_map(&namespace, "a", "one").as_bytes(),
    )]);
    let pushed = push(&reference, layer).await;
    let registry = own.address.clone();

    secret(
        &scope.client,
        &namespace,
        "registry-creds",
        "kubernetes.io/dockerconfigjson",
        json!({ format!("http://{registry}/v1/"): { "auth": basic(USER, PASSWORD) } }),
    )
    .await;
    secret(
        &scope.client,
        &namespace,
        "stale-creds",
        "kubernetes.io/dockerconfigjson",
        json!({ registry.clone(): { "username": USER, "password": "old" } }),
    )
    .await;
    secret(
        &scope.client,
        &namespace,
        "other-registry",
        "kubernetes.io/dockerconfigjson",
        json!({ "quay.io": { "auth": basic("bob", "x") } }),
    )
    .await;
    secret(&scope.client, &namespace, "opaque", "Opaque", json!({})).await;

    let sources = ImageSources::new(SourceOptions {
        secret_namespace: Some(namespace.clone()),
        ..SourceOptions::default()
    });
    let spec = BundleSpec {
        class: "unused".into(),
        refs: vec![reference.clone()],
        volume_mounts: vec![],
    };
    let with = |secrets: &[&str]| UnpackOptions {
        pull_secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
        // The test registry is on loopback.
        allow_internal_addresses: true,
        ..UnpackOptions::default()
    };
    let scratch = Scratch::new("pull-secret-unpack");
    let store = scratch.store();
    let unpack = async |options: UnpackOptions, sources: &ImageSources| {
        content::unpack(&scope.client, &spec, &store, sources, &options).await
    };

    // No pull secret: the registry's refusal says how to give one.
    let error = unpack(with(&[]), &sources).await.unwrap_err();
    let message = error.to_string();
    println!("anonymous: {message}");
    assert!(
        matches!(error, ContentError::Unauthorized { .. }),
        "{message}"
    );
    assert!(message.contains("401 Unauthorized"), "{message}");
    assert!(
        message.contains("the ProvisionerClass names no pullSecrets"),
        "{message}"
    );
    assert!(
        message.contains(&format!("in namespace {namespace} (the provisioner's)")),
        "{message}"
    );

    // Each mistake names the Secret, the namespace and what to do.
    let cases: [(&[&str], String); 5] = [
        (
            &["missing"],
            format!(
                "pull secret {namespace}/missing (the class's pullSecrets) does not exist; create it"
            ),
        ),
        (
            &["opaque"],
            format!(
                "pull secret {namespace}/opaque has type \"Opaque\"; pull secrets must have type kubernetes.io/dockerconfigjson"
            ),
        ),
        (
            &["other-registry"],
            format!(
                "none of the pull secrets [\"other-registry\"] in namespace {namespace} has credentials for registry {registry} (their auths entries: [\"quay.io\"])"
            ),
        ),
        (
            &["stale-creds"],
            format!(
                "the registry refused the credentials of pull secret {namespace}/stale-creds (its auths entry \"{registry}\")"
            ),
        ),
        (
            // The first Secret with an entry for the registry wins.
            &["other-registry", "stale-creds", "registry-creds"],
            format!("pull secret {namespace}/stale-creds"),
        ),
    ];
    for (secrets, expected) in cases {
        let error = unpack(with(secrets), &sources).await.unwrap_err();
        let message = error.to_string();
        println!("{secrets:?}: {message}");
        assert!(message.contains(&expected), "{secrets:?}: {message}");
        assert!(
            message.starts_with(&format!("spec.refs[0] {reference}: ")),
            "{message}"
        );
        assert!(!error.is_terminal());
    }

    // The right Secret: pulled and unpacked.
    let started = Instant::now();
    let unpacked = unpack(with(&["other-registry", "registry-creds"]), &sources)
        .await
        .unwrap();
    println!("pull with a pull secret: {:.1?}", started.elapsed());
    assert_eq!(unpacked.digest.as_str(), pushed);
    assert!(unpacked.dir.join("manifests/a.yaml").exists());

    // Its credentials stay with it: an anonymous pull from the same
    // sources is still refused (no token or auth carried over).
    let error = unpack(with(&[]), &sources).await.unwrap_err();
    assert!(
        matches!(error, ContentError::Unauthorized { .. }),
        "{error}"
    );

    // A provisioner that does not know its namespace says so.
    let nowhere: &'static ImageSources =
        Box::leak(Box::new(ImageSources::new(SourceOptions::default())));
    let message = unpack(with(&["registry-creds"]), nowhere)
        .await
        .unwrap_err()
        .to_string();
    assert!(message.contains("does not know its namespace"), "{message}");
    assert!(message.contains("POD_NAMESPACE"), "{message}");
    own.stop();
    scope.cleanup().await;
}

#[tokio::test]
async fn the_controller_installs_from_a_registry_that_requires_credentials() {
    let own = Registry::start("auth-controller", Some(&format!("{USER}:{PASSWORD}")));
    // The Secrets live in the test's namespace, which plays the
    // provisioner's: the only one the controller reads them from.
    let controller = Controller::start(
        "pull-secret-install",
        // The test registry is on loopback.
        json!({ "pullSecrets": ["registry-creds"], "allowInternalAddresses": true }),
        |namespace| SourceOptions {
            secret_namespace: Some(namespace.to_owned()),
            ..SourceOptions::default()
        },
    )
    .await;
    let namespace = controller.scope.namespace.clone();
    controller
        .class("anonymous", json!({ "allowInternalAddresses": true }))
        .await;
    let reference = own.image(&format!("bundles/{}:v1", controller.scope.id));
    let layer = tarball(&[(
        "manifests/private.yaml",
        config_map(&namespace, "from-private-registry", "authorized").as_bytes(),
    )]);
    let pushed = push(&reference, layer).await;
    secret(
        &controller.scope.client,
        &namespace,
        "registry-creds",
        "kubernetes.io/dockerconfigjson",
        json!({ own.address.clone(): { "auth": basic(USER, PASSWORD) } }),
    )
    .await;

    // A class without pullSecrets: refused, and the status says what to do.
    controller
        .create("anonymous", "anonymous", "anonymous-bundle", &reference)
        .await;
    let message = controller.unpack_failed("anonymous").await;
    println!("anonymous: {message}");
    assert!(message.contains("401 Unauthorized"), "{message}");
    assert!(message.contains("names no pullSecrets"), "{message}");
    assert_eq!(
        controller.bundle_status("anonymous-bundle").await.unpacked,
        UnpackPhase::Failed
    );

    // The class with the pull secret installs it.
    let started = Instant::now();
    controller
        .create("instance", "class", "bundle", &reference)
        .await;
    let installed = controller.installed("instance").await;
    println!(
        "authenticated registry: created to Installed in {:.1?}",
        started.elapsed()
    );
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(
        controller
            .value_of("from-private-registry")
            .await
            .as_deref(),
        Some("authorized")
    );
    let source = controller.bundle_status("bundle").await.source.unwrap();
    assert_eq!(source.digest.as_deref(), Some(pushed.as_str()));
    controller.cleanup(&["instance", "anonymous"]).await;
    own.stop();
}
