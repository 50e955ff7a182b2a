//! An operator with admission webhooks installed on the real control plane
//! with a kwok node: node-healthcheck-operator 0.12.0 from
//! ../shared/data/bundles (verbatim from community-operators-prod
//! `operators/node-healthcheck-operator/0.12.0`, see its README), pushed to
//! the real local registry. Its ValidatingWebhookConfiguration carries the
//! CA Pakket issued, its Service is marked to be healthy only with a ready
//! endpoint, and the Instance is Healthy once the operator's Pod (kwok's)
//! stands behind it. Nothing here runs the operator's webhook server: kwok
//! runs no containers (a real node is issue 17's).

mod support;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_testkit::{
    Scope, condition_is, eventually, install_crds, wait_for_instance as wait_for,
};
use serde_json::json;

#[tokio::test]
async fn an_operator_with_webhooks_is_healthy_once_its_webhook_service_has_a_ready_endpoint() {
    let scope = Scope::new("registry-v1-webhooks").await;
    install_crds(&scope.client).await.unwrap();
    support::run_provisioner(&scope, json!({ "approval": "AllowAll" })).await;
    let bundle = pakket_testkit::data("bundles/node-healthcheck-operator/0.12.0");
    let reference = support::push(&scope, &bundle, "nhc").await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances
        .create(
            &PostParams::default(),
            &support::instance(&scope, "nhc", &reference),
        )
        .await
        .unwrap();
    let name = scope.name("nhc");
    let namespace = scope.name("nhc");
    let healthy = wait_for(&instances, &name, "installed and healthy", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    pakket_testkit::assert_readable_messages(&healthy);

    let services: Api<Service> = Api::namespaced(scope.client.clone(), &namespace);
    let marked: Vec<Service> = services
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|service| {
            service
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(pakket_api::ownership::HEALTH_ANNOTATION))
                .is_some_and(|value| value == "ready-endpoints")
        })
        .collect();
    assert_eq!(marked.len(), 1, "the webhook Service, marked: {marked:?}");
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(scope.client.clone());
    let configuration = webhooks.get("vnodehealthcheck.kb.io").await.unwrap();
    let webhook = &configuration.webhooks.unwrap()[0];
    assert!(
        webhook
            .client_config
            .ca_bundle
            .as_ref()
            .is_some_and(|bundle| !bundle.0.is_empty()),
        "the caBundle is the CA Pakket issued"
    );
    assert_eq!(
        webhook
            .client_config
            .service
            .as_ref()
            .map(|s| s.namespace.clone()),
        Some(namespace.clone())
    );

    // Uninstalled while the provisioner runs: the webhook configuration is
    // cluster-wide.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the Instance and its webhook configuration are gone",
        || async {
            instances.get_opt(&name).await.unwrap().is_none()
                && webhooks
                    .get_opt("vnodehealthcheck.kb.io")
                    .await
                    .unwrap()
                    .is_none()
        },
    )
    .await;
    scope.cleanup().await;
}
