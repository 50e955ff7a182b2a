//! `why` on Instances in each state a provisioner reports, with statuses
//! the test writes as a provisioner would.

use pakket_api::Reason::{self, *};
use pakket_api::condition::ConditionStatus::{False, True, Unknown};
use pakket_engine::catalog::{Catalog, CatalogSet};
use pakket_engine::resolve::{Request, ResolveError, Universe, resolve};
use pakket_testkit::{Scope, install_crds};
use serde_json::{Value, json};

use crate::support::{conditions, create_bundle, create_instance, plugin, set_status};

/// The engine's explanation for a request the derived community catalog
/// cannot satisfy: eclipse-che needs devworkspace-operator, which that
/// catalog lacks. Data: `fbc/community-operators-prod-derived/catalog.json`
/// in the shared data (DERIVED from redhat-openshift-ecosystem/
/// community-operators-prod at 699495f2, see its README), read unedited.
fn real_dependency_explanation() -> String {
    let path = pakket_testkit::data("fbc/community-operators-prod-derived/catalog.json");
    let catalog = Catalog::load(&path, "community-operators-prod-derived", 0).unwrap();
    let set = CatalogSet::new(vec![catalog]);
    let universe = Universe::from_catalogs(&set);
    let request = Request::parse_cli("eclipse-che=>=7.100.0").unwrap();
    match resolve(&universe, &[request], &[]) {
        Err(ResolveError::Unsatisfiable(explanation)) => explanation.to_string(),
        other => panic!("expected no solution, got {other:?}"),
    }
}

#[tokio::test]
async fn why_explains_approval_unpack_health_and_dependency_problems() {
    let scope = Scope::new("why").await;
    install_crds(&scope.client).await.unwrap();

    // Waiting for approval.
    let pending = create_instance(&scope, "pending", &scope.name("pending-v1")).await;
    let waiting = format!(
        "waiting for approval (ProvisionerClass x has approval: Manual); run `kubectl instance approve {pending}`"
    );
    let list: [(Reason, _, &str); 4] = [
        (ApprovalPending, False, &waiting),
        (UnpackSucceeded, True, "unpacked"),
        (InstallPending, False, "nothing is applied before approval"),
        (HealthUnknown, Unknown, "nothing installed yet"),
    ];
    set_status(&scope, &pending, json!({ "conditions": conditions(&list) })).await;
    let run = plugin("admin", &["why", &pending]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with(&format!(
        "Instance {pending} is waiting for approval to install Bundle {}.\n  Approved=False (ApprovalPending) for ",
        scope.name("pending-v1")
    )), "{}", run.stdout);
    assert!(
        run.stdout
            .contains(&format!("    kubectl instance approve {pending} ")),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("nothing installed yet"),
        "consequences are not problems:\n{}",
        run.stdout
    );
    let json_run = plugin("admin", &["why", &pending, "-o", "json"]).await;
    let document: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(document["state"], "WaitingForApproval");
    assert_eq!(document["problems"][0]["reason"], "ApprovalPending");
    assert_eq!(document["problems"][0]["message"], waiting.as_str());

    // Unpack failure: the message and the Bundle's refs.
    let broken_bundle = scope.name("broken-v1");
    let broken = create_instance(&scope, "broken", &broken_bundle).await;
    create_bundle(
        &scope,
        &broken_bundle,
        &["docker://127.0.0.1:1/web:v1"],
        &[],
        None,
    )
    .await;
    let refused =
        format!("Bundle {broken_bundle}: pulling docker://127.0.0.1:1/web:v1: connection refused");
    let list: [(Reason, _, &str); 4] = [
        (ApprovalPending, False, "not evaluated yet"),
        (UnpackFailed, False, &refused),
        (InstallPending, False, "nothing applied yet"),
        (HealthUnknown, Unknown, "nothing installed yet"),
    ];
    set_status(&scope, &broken, json!({ "conditions": conditions(&list) })).await;
    let run = plugin("admin", &["why", &broken]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let expected = format!(
        "Bundle {broken_bundle} of Instance {broken} failed to unpack.\n  Unpacked=False (UnpackFailed) for "
    );
    assert!(run.stdout.starts_with(&expected), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "    {refused}\n  Bundle {broken_bundle} reads from:\n    docker://127.0.0.1:1/web:v1\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("waiting for approval"),
        "{}",
        run.stdout
    );

    // Unhealthy objects, each listed.
    let sick = create_instance(&scope, "sick", &scope.name("sick-v1")).await;
    let unhealthy = format!(
        "Deployment/{ns}/server is not Available; ConfigMap/{ns}/settings is missing",
        ns = scope.namespace
    );
    let list: [(Reason, _, &str); 4] = [
        (ApprovedByPolicy, True, "AllowAll"),
        (UnpackSucceeded, True, "unpacked"),
        (InstallSucceeded, True, "applied 2 objects"),
        (ObjectsUnhealthy, False, &unhealthy),
    ];
    // What the runtime writes beside the message, and why reads.
    let causes = json!([{
        "type": "Healthy", "reason": "ObjectsUnhealthy", "kind": "ObjectsUnhealthy",
        "objects": [
            {"object": format!("Deployment/{}/server", scope.namespace), "problem": "is not Available"},
            {"object": format!("ConfigMap/{}/settings", scope.namespace), "problem": "is missing"},
        ],
    }]);
    set_status(
        &scope,
        &sick,
        json!({ "conditions": conditions(&list), "causes": causes }),
    )
    .await;
    let run = plugin("admin", &["why", &sick]).await;
    assert!(
        run.stdout.starts_with(&format!(
            "Instance {sick} is installed, but 2 of its objects are not healthy.\n"
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!(
        "  Not healthy:\n    - Deployment/{ns}/server is not Available\n    - ConfigMap/{ns}/settings is missing\n",
        ns = scope.namespace
    )), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "    kubectl describe deployment -n {} server\n",
            scope.namespace
        )),
        "{}",
        run.stdout
    );

    // A dependency conflict: the engine's multi-line explanation, verbatim.
    let explanation = real_dependency_explanation();
    assert!(explanation.lines().count() > 2, "{explanation}");
    let stuck = create_instance(&scope, "stuck", &scope.name("stuck-v1")).await;
    let list: [(Reason, _, &str); 4] = [
        (ApprovedByPolicy, True, "AllowAll"),
        (UnpackSucceeded, True, "unpacked"),
        (InstallFailed, False, &explanation),
        (HealthUnknown, Unknown, "nothing installed yet"),
    ];
    // A resolver's own reason says it is a dependency explanation.
    let mut written = conditions(&list);
    let installed = written.iter_mut().find(|c| c.type_ == "Installed").unwrap();
    installed.reason = "ResolutionFailed".into();
    set_status(&scope, &stuck, json!({ "conditions": written })).await;
    let run = plugin("admin", &["why", &stuck]).await;
    assert!(
        run.stdout.starts_with(&format!(
            "Instance {stuck} cannot be installed: its dependencies conflict.\n"
        )),
        "{}",
        run.stdout
    );
    let indented: String = explanation
        .lines()
        .map(|line| format!("    {line}\n"))
        .collect();
    assert!(
        run.stdout.contains(&indented),
        "explanation not verbatim:\n{}",
        run.stdout
    );
    let json_run = plugin("admin", &["why", &stuck, "-o", "yaml"]).await;
    let document: Value = serde_saphyr::from_str(&json_run.stdout).unwrap();
    assert_eq!(document["state"], "DependencyConflict");
    assert_eq!(document["problems"][0]["message"], explanation.as_str());

    scope.cleanup().await;
}
