//! `decide input/NAME`: what is written, what an earlier decision gives
//! up, and what a user without the rights or an Input without a conflict
//! is told. Run without the webhooks and the Input controller, so the
//! statuses are the test's; the webhooks' guard on `status.decision` is
//! played in provisioners/resolveset/tests/install.rs
//! (`conflicting_requests_both_wait_until_a_person_chooses_and_no_writer_steers_it`).

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_resolve_api::Input;
use pakket_testkit::Scope;
use serde_json::json;

use crate::support::{Grant, plugin};

async fn input(scope: &Scope, suffix: &str) -> Input {
    let input: Input = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
        "metadata": { "name": scope.name(suffix), "labels": scope.labels() },
        "spec": { "inputClass": "subscription", "constraints": [
            {"type": "olm.catalog", "value": {"name": "c", "package": "db"}}] },
    }))
    .unwrap();
    Api::<Input>::all(scope.client.clone())
        .create(&PostParams::default(), &input)
        .await
        .unwrap()
}

async fn set_status(scope: &Scope, name: &str, status: serde_json::Value) {
    Api::<Input>::all(scope.client.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_decider_chooses_one_conflicting_input_and_an_earlier_choice_gives_it_up() {
    let scope = Scope::new("decide").await;
    pakket_testkit::apply_crds(&scope.client, pakket_resolveset::crd::all())
        .await
        .unwrap();
    let (a, b, lone) = (
        input(&scope, "a").await,
        input(&scope, "b").await,
        input(&scope, "lone").await,
    );
    let uid = |input: &Input| input.metadata.uid.clone().unwrap();
    let name = |input: &Input| input.metadata.name.clone().unwrap();
    // a was chosen over b before; both now say they conflict.
    set_status(
        &scope,
        &name(&a),
        json!({ "conflict": {"standing": "Waiting", "with": [uid(&b)]},
                "decision": {"chosenBy": "admin", "generation": 1, "over": [uid(&b)]} }),
    )
    .await;
    set_status(
        &scope,
        &name(&b),
        json!({ "conflict": {"standing": "NotChosen", "with": [uid(&a)]} }),
    )
    .await;
    let rules: Vec<PolicyRule> = serde_json::from_value(pakket_testkit::shipped::example_rules(
        "pakket-input-decider",
    ))
    .unwrap();
    let grant = Grant::new(&scope, "decider", "carol", rules).await;

    let target = format!("input/{}", name(&b));
    let run = plugin("carol", &["decide", &target]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "input/{}: its decision (by admin) no longer covers input/{}",
            name(&a),
            name(&b)
        )),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(&format!(
            "input/{} chosen over 1 conflicting request(s) by carol, for generation 1",
            name(&b)
        )),
        "{run:?}"
    );
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let chosen = inputs.get(&name(&b)).await.unwrap().status.unwrap();
    let decision = chosen.decision.unwrap();
    assert_eq!(
        (
            decision.chosen_by.as_str(),
            decision.generation,
            decision.over
        ),
        ("carol", 1, vec![uid(&a)])
    );
    assert!(
        inputs
            .get(&name(&a))
            .await
            .unwrap()
            .status
            .unwrap()
            .decision
            .is_none()
    );

    // Nothing to choose: said so, nothing written.
    let run = plugin("carol", &["decide", &name(&lone)]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("nothing to choose"), "{run:?}");
    // Bob may read Inputs, not choose: told what to ask for, and nothing
    // written, not even the earlier decision a's (given back to it here)
    // that his choice would take b out of.
    set_status(
        &scope,
        &name(&a),
        json!({ "decision": {"chosenBy": "admin", "generation": 1, "over": [uid(&b)]} }),
    )
    .await;
    let reader: Vec<PolicyRule> = serde_json::from_value(json!([
        {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs"], "verbs": ["get", "list"]},
    ]))
    .unwrap();
    let read_only = Grant::new(&scope, "reader", "bob", reader).await;
    let run = plugin("bob", &["decide", &target]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("pakket-input-decider"), "{run:?}");
    let earlier = inputs
        .get(&name(&a))
        .await
        .unwrap()
        .status
        .unwrap()
        .decision;
    assert_eq!(
        earlier.map(|d| d.over),
        Some(vec![uid(&b)]),
        "a refused choice takes nothing out of another decision"
    );
    assert_eq!(
        inputs
            .get(&name(&b))
            .await
            .unwrap()
            .status
            .unwrap()
            .decision
            .unwrap()
            .chosen_by,
        "carol"
    );
    read_only.revoke().await;
    grant.revoke().await;
    for input in [&a, &b, &lone] {
        let _ = inputs.delete(&name(input), &Default::default()).await;
    }
}
