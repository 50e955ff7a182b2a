//! The Operator porcelain on the real control plane: the Operator
//! controller of the resolveset process (run in this test process) writes
//! the Input an Operator stands for, reports its components, and lists the
//! updates the served Catalog offers beyond the Operator's version, in its
//! channel and in others; the Input goes with the Operator.
//!
//! Data (unedited, see ../shared/data/README.md):
//! `fbc/community-operators-prod-derived/catalog.json` (DERIVED from
//! redhat-openshift-ecosystem/community-operators-prod at 699495f2): the
//! documents of package etcd (channels singlenamespace-alpha and
//! clusterwide-alpha, 0.9.0 to 0.9.4), selected by their `package`/`name`
//! fields.

mod support;

use std::collections::BTreeMap;

use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_resolveset::inputs::input::InputClassParameters;
use pakket_resolveset::{Input, InputClass, InputClassSpec, Operator};
use pakket_testkit::{Scope, eventually};
use serde_json::json;

/// Waits until Operator `name`'s status meets `check`; returns it.
async fn operator_when(
    scope: &Scope,
    name: &str,
    what: &str,
    check: impl Fn(&Operator) -> bool,
) -> Operator {
    let api: Api<Operator> = Api::all(scope.client.clone());
    for _ in 0..600 {
        let operator = api.get(name).await.unwrap();
        if check(&operator) {
            return operator;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "{what} did not happen within 60 s: {:#?}",
        api.get(name).await.unwrap().status
    );
}

#[tokio::test]
async fn an_operator_writes_its_input_and_reports_updates_in_and_beyond_its_channel() {
    let scope = Scope::new("resolveset-operator").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    support::serve_files(
        &scope,
        "etcd-catalog",
        BTreeMap::from([(
            "catalog.json".to_owned(),
            pakket_testkit::derived_package("etcd"),
        )]),
    )
    .await;
    let name = scope.name("etcd-catalog");
    let mut class = InputClass::new(
        &scope.name("subscription"),
        InputClassSpec {
            parameters: InputClassParameters::default(),
        },
    );
    class.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();

    // Pinned to 0.9.2 in the single-namespace channel.
    let operators: Api<Operator> = Api::all(scope.client.clone());
    let apply = |version: &str| {
        json!({
            "apiVersion": "operators.pakket.dev/v1alpha1",
            "kind": "Operator",
            "metadata": { "name": scope.name("etcd"), "labels": scope.labels() },
            "spec": {
                "inputClass": scope.name("subscription"),
                "catalog": { "name": name, "package": "etcd", "channel": "singlenamespace-alpha" },
                "version": version,
            },
        })
    };
    operators
        .patch(
            &scope.name("etcd"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(apply("0.9.2")),
        )
        .await
        .unwrap();
    let pinned = operator_when(&scope, &scope.name("etcd"), "0.9.2 resolved", |o| {
        o.status
            .as_ref()
            .is_some_and(|s| s.installed_version.as_deref() == Some("0.9.2"))
    })
    .await;
    let status = pinned.status.clone().unwrap();
    // The Input it stands for, owned by it.
    let input = Api::<Input>::all(scope.client.clone())
        .get(&scope.name("etcd"))
        .await
        .unwrap();
    assert_eq!(input.owner_references()[0].uid, pinned.uid().unwrap());
    assert_eq!(input.spec.constraints[0].type_, "olm.catalog");
    assert_eq!(input.spec.constraints[1].value["version"], "0.9.2");
    // Newer: 0.9.4 in its channel (outside its version), and the
    // cluster-wide 0.9.4 only in another channel.
    let update = |bundle: &str| status.updates.iter().find(|u| u.bundle == bundle).cloned();
    let in_channel = update("etcdoperator.v0.9.4").expect("0.9.4 is listed");
    assert!(
        !in_channel.cross_channel && !in_channel.allowed,
        "{in_channel:?}"
    );
    let other =
        update("etcdoperator.v0.9.4-clusterwide").expect("the cluster-wide 0.9.4 is listed");
    assert!(other.cross_channel, "{other:?}");
    let available = pinned.condition("UpdateAvailable").unwrap();
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("True", "UpdateOutsideVersion")
    );
    assert!(
        available.message.contains("widen spec.version"),
        "{}",
        available.message
    );
    let kinds: Vec<(&str, &str)> = status
        .components
        .iter()
        .map(|c| (c.kind.as_str(), c.state.as_str()))
        .collect();
    assert_eq!(kinds[0], ("Input", "Resolved"));
    assert_eq!(kinds[1].0, "Instance", "{kinds:?}");

    // Widened: it moves to 0.9.4, and nothing newer is left in its channel.
    operators
        .patch(
            &scope.name("etcd"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(apply(">=0.9.2")),
        )
        .await
        .unwrap();
    let widened = operator_when(&scope, &scope.name("etcd"), "0.9.4 resolved", |o| {
        o.status
            .as_ref()
            .is_some_and(|s| s.installed_version.as_deref() == Some("0.9.4"))
    })
    .await;
    let available = widened.condition("UpdateAvailable").unwrap();
    assert_eq!(available.reason, "UpToDate", "{:?}", widened.status);

    // Mallory, who may write Operators and nothing else, names one after
    // an Input of someone else's: the Operator controller (which may write
    // Inputs) does not take it over for her; the Operator says so.
    support::grant(
        &scope,
        "mallory",
        json!([{"apiGroups": ["operators.pakket.dev"], "resources": ["operators"],
                "verbs": ["get", "create", "patch", "delete"]}]),
    )
    .await;
    let as_mallory: Api<Operator> = Api::all(scope.cluster.client_as("mallory").await);
    let theirs: Input = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1",
        "kind": "Input",
        "metadata": { "name": scope.name("taken"), "labels": scope.labels() },
        "spec": {
            "inputClass": scope.name("subscription"),
            "constraints": [{"type": "olm.name", "value": "etcdoperator.v0.9.0"}],
        },
    }))
    .unwrap();
    let inputs: Api<Input> = Api::all(scope.client.clone());
    inputs
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    let mut taken = apply("0.9.4");
    taken["metadata"]["name"] = json!(scope.name("taken"));
    as_mallory
        .patch(
            &scope.name("taken"),
            &PatchParams::apply("mallory").force(),
            &Patch::Apply(taken),
        )
        .await
        .unwrap();
    let refused = operator_when(&scope, &scope.name("taken"), "the conflict reported", |o| {
        o.condition("UpdateAvailable")
            .is_some_and(|c| c.reason == "InputNotOurs")
    })
    .await;
    assert!(
        refused
            .condition("UpdateAvailable")
            .unwrap()
            .message
            .contains("is not this Operator's"),
        "{:?}",
        refused.status
    );
    pakket_testkit::capture(
        "operator-degraded_input_not_ours",
        "operators.operators.pakket.dev",
        &scope.name("taken"),
        None,
    );
    let kept = inputs.get(&scope.name("taken")).await.unwrap();
    assert_eq!(kept.spec.constraints[0].value, json!("etcdoperator.v0.9.0"));
    assert!(kept.owner_references().is_empty());
    assert!(
        !kept.managed_fields().iter().any(|f| f.manager.as_deref()
            == Some(pakket_resolveset::operators::operator_controller::MANAGER)),
        "the Operator controller wrote nothing to it"
    );
    operators
        .delete(&scope.name("taken"), &DeleteParams::default())
        .await
        .unwrap();

    support::revoke(&scope, "mallory").await;

    // The Input goes with the Operator.
    operators
        .delete(&scope.name("etcd"), &DeleteParams::foreground())
        .await
        .unwrap();
    pakket_testkit::capture(
        "operator-progressing_deleting",
        "operators.operators.pakket.dev",
        &scope.name("etcd"),
        None,
    );
    eventually("the Operator's Input is gone", || async {
        inputs.get_opt(&scope.name("etcd")).await.unwrap().is_none()
    })
    .await;
    support::cleanup(scope).await;
}
