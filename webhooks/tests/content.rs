//! Bundle content ConfigMaps through the real apiserver, with the webhooks
//! registered as `deploy/` registers them (scoped to this test's objects):
//! only ConfigMaps labelled `core.pakket.dev/bundle-content: "true"` reach
//! the webhook, a Bundle may mount only such a one, and while it is mounted
//! the ConfigMap's writer can neither delete it nor take the label away.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{BUNDLE_CONTENT_LABEL, Bundle, Instance, ProvisionerClass};
use serde_json::json;
use support::{Harness, eventually, refusal};

fn post() -> PostParams {
    PostParams::default()
}

/// A ConfigMap of this test (scope label), labelled as Bundle content when
/// `content`.
fn config_map(harness: &Harness, name: &str, immutable: bool, content: bool) -> ConfigMap {
    let mut labels = harness.scope.labels();
    if content {
        labels.insert(BUNDLE_CONTENT_LABEL.to_owned(), "true".to_owned());
    }
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

async fn create_class(harness: &Harness) -> String {
    Api::<ProvisionerClass>::all(harness.scope.client.clone())
        .create(&post(), &harness.class("class"))
        .await
        .unwrap();
    harness.scope.name("class")
}

/// A Bundle of this test mounting ConfigMap `config_map` at `/content`.
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

/// A ServiceAccount of this test (no user another test shares) that may
/// create, update, patch and delete ConfigMaps in the test's namespace: what
/// an ordinary writer of content holds, nothing of Pakket's.
async fn content_writer(harness: &Harness) -> Client {
    let (client, subject) = harness.service_account_client("writer").await;
    let namespace = &harness.scope.namespace;
    let role = Role {
        metadata: kube::api::ObjectMeta {
            name: Some("content-writer".into()),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            verbs: ["get", "create", "update", "patch", "delete"]
                .map(str::to_owned)
                .to_vec(),
            ..PolicyRule::default()
        }]),
    };
    Api::<Role>::namespaced(harness.scope.client.clone(), namespace)
        .create(&post(), &role)
        .await
        .unwrap();
    let binding = RoleBinding {
        metadata: role.metadata.clone(),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "content-writer".into(),
        },
        subjects: Some(vec![subject]),
    };
    Api::<RoleBinding>::namespaced(harness.scope.client.clone(), namespace)
        .create(&post(), &binding)
        .await
        .unwrap();
    client
}

fn unlabel() -> Patch<serde_json::Value> {
    Patch::Merge(json!({"metadata": {"labels": {BUNDLE_CONTENT_LABEL: null}}}))
}

#[tokio::test]
async fn an_ordinary_config_map_never_reaches_the_webhook() {
    let harness = Harness::start("content-unselected").await;
    let metrics = harness.webhooks.metrics().unwrap().clone();
    let config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);
    let before = metrics.answered("validate", "configmaps");

    // A mutable ConfigMap without the label (but with the test's scope
    // label, which the registration selects): created, changed, deleted.
    config_maps
        .create(&post(), &config_map(&harness, "ordinary", false, false))
        .await
        .unwrap();
    config_maps
        .patch(
            "ordinary",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"more": "yes"}})),
        )
        .await
        .unwrap();
    config_maps
        .delete("ordinary", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        metrics.answered("validate", "configmaps"),
        before,
        "no ordinary ConfigMap write or delete reached the webhook"
    );

    // The same writes of Bundle content do: the webhook answers each one
    // (none is mounted, so all are allowed). Called synchronously, so the
    // count has moved by the time each write returns.
    config_maps
        .create(&post(), &config_map(&harness, "content", false, true))
        .await
        .unwrap();
    let created = metrics.answered("validate", "configmaps");
    assert_eq!(created, before + 1, "a labelled, mutable create is checked");
    // Labelling a frozen ConfigMap leaves nothing to check (it is
    // immutable and labelled): the matchConditions skip it.
    config_maps
        .create(&post(), &config_map(&harness, "frozen", true, false))
        .await
        .unwrap();
    config_maps
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {BUNDLE_CONTENT_LABEL: "true"}}})),
        )
        .await
        .unwrap();
    assert_eq!(metrics.answered("validate", "configmaps"), created);
    // Unlabelling and deleting are seen through the old object's label.
    config_maps
        .patch("frozen", &PatchParams::default(), &unlabel())
        .await
        .unwrap();
    assert_eq!(
        metrics.answered("validate", "configmaps"),
        created + 1,
        "the label's removal is checked"
    );
    config_maps
        .delete("content", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        metrics.answered("validate", "configmaps"),
        created + 2,
        "a labelled delete is checked"
    );
    harness.cleanup().await;
}

#[tokio::test]
async fn mounted_content_cannot_be_deleted_unfrozen_or_unlabelled_by_its_writer() {
    let harness = Harness::start("content-guarded").await;
    let class = create_class(&harness).await;
    let admin_config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);
    admin_config_maps
        .create(&post(), &config_map(&harness, "guarded", true, true))
        .await
        .unwrap();
    let bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    bundles
        .create(
            &post(),
            &mounting(&harness, "on-guarded", &class, "guarded"),
        )
        .await
        .unwrap();
    let bundle = harness.scope.name("on-guarded");
    let writer = content_writer(&harness).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(writer, &harness.scope.namespace);

    // Deleting: refused naming the Bundle (once RBAC lets the writer try
    // and the webhook's index has seen the Bundle).
    let message = eventually("the delete guard refusing the writer", || async {
        match config_maps
            .delete("guarded", &DeleteParams::default())
            .await
        {
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

    // Taking the label away, or setting it to anything but "true".
    for (patch, what) in [
        (unlabel(), "removed"),
        (
            Patch::Merge(json!({"metadata": {"labels": {BUNDLE_CONTENT_LABEL: "false"}}})),
            "set to false",
        ),
    ] {
        let message = refusal(
            config_maps
                .patch("guarded", &PatchParams::default(), &patch)
                .await,
        )
        .unwrap_or_else(|| panic!("the label {what} while mounted"));
        assert!(
            message.contains(&format!(
                r#"ConfigMap {}/guarded is the content of Bundle "{bundle}" and must keep the label {BUNDLE_CONTENT_LABEL}: "true" while it is mounted"#,
                harness.scope.namespace
            )),
            "{message}"
        );
    }
    // Unfreezing an immutable ConfigMap the apiserver refuses itself.
    assert!(
        refusal(
            config_maps
                .patch(
                    "guarded",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"immutable": false})),
                )
                .await
        )
        .is_some(),
        "unfrozen"
    );
    let kept = admin_config_maps.get("guarded").await.unwrap();
    assert_eq!(kept.immutable, Some(true));
    assert!(pakket_api::is_bundle_content(
        kept.metadata.labels.as_ref().unwrap()
    ));

    // Content a Bundle waits for cannot arrive mutable, whoever writes it.
    bundles
        .create(&post(), &mounting(&harness, "on-later", &class, "later"))
        .await
        .unwrap();
    let message = eventually("the write guard seeing the Bundle", || async {
        match config_maps
            .create(&post(), &config_map(&harness, "later", false, true))
            .await
        {
            Ok(_) => {
                let _ = admin_config_maps
                    .delete("later", &DeleteParams::default())
                    .await;
                Err("created before the index saw the Bundle".to_owned())
            }
            Err(error) => Ok(error.to_string()),
        }
    })
    .await;
    assert!(
        message.contains(&format!(
            r#"is the content of Bundle "{}" and must be immutable: set immutable: true"#,
            harness.scope.name("on-later")
        )),
        "{message}"
    );

    // Unmounted, it is the writer's again: label off, then gone.
    bundles
        .delete(&bundle, &DeleteParams::default())
        .await
        .unwrap();
    eventually("unlabelling unmounted content", || async {
        config_maps
            .patch("guarded", &PatchParams::default(), &unlabel())
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    })
    .await;
    config_maps
        .delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    harness.cleanup().await;
}

#[tokio::test]
async fn a_bundle_may_mount_only_a_config_map_labelled_as_content() {
    let harness = Harness::start("content-label").await;
    let class = create_class(&harness).await;
    let config_maps: Api<ConfigMap> =
        Api::namespaced(harness.scope.client.clone(), &harness.scope.namespace);
    config_maps
        .create(&post(), &config_map(&harness, "unmarked", true, false))
        .await
        .unwrap();
    let namespace = &harness.scope.namespace;
    let bundles: Api<Bundle> = Api::all(harness.scope.client.clone());
    let message = refusal(
        bundles
            .create(
                &post(),
                &mounting(&harness, "on-unmarked", &class, "unmarked"),
            )
            .await,
    )
    .expect("mounting unlabelled content refused");
    assert!(
        message.contains(&format!(
            r#"Bundle "{}": spec.volumeMounts[0].configMap names ConfigMap {namespace}/unmarked, but it is not labelled {BUNDLE_CONTENT_LABEL}: "true""#,
            harness.scope.name("on-unmarked")
        )) && message.contains(&format!(
            "kubectl -n {namespace} label configmap unmarked {BUNDLE_CONTENT_LABEL}=true"
        )) && !message.contains("not immutable"),
        "{message}"
    );
    // An Instance's embedded spec is held to the same rule, naming its field.
    let mut instance = harness.instance("embeds", &class);
    instance.spec.bundle.spec = Some(mounting(&harness, "unused", &class, "unmarked").spec);
    let instances: Api<Instance> = Api::all(harness.scope.client.clone());
    let message = refusal(instances.create(&post(), &instance).await)
        .expect("embedding unlabelled content refused");
    assert!(
        message.contains("spec.bundle.spec.volumeMounts[0].configMap names ConfigMap")
            && message.contains("not labelled"),
        "{message}"
    );
    let (bundle, embedding) = (
        harness.scope.name("on-unmarked"),
        harness.scope.name("embeds"),
    );
    assert!(bundles.get_opt(&bundle).await.unwrap().is_none());
    assert!(instances.get_opt(&embedding).await.unwrap().is_none());

    // Labelled (its data untouched), it may be mounted.
    config_maps
        .patch(
            "unmarked",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {BUNDLE_CONTENT_LABEL: "true"}}})),
        )
        .await
        .unwrap();
    bundles
        .create(
            &post(),
            &mounting(&harness, "on-unmarked", &class, "unmarked"),
        )
        .await
        .unwrap();
    instances.create(&post(), &instance).await.unwrap();
    harness.cleanup().await;
}
