use super::*;
use pakket_api::condition::ConditionStatus;
use pakket_api::{BundleSpec, PolicyVerdict};

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

fn instance(conditions: &[(Reason, ConditionStatus, &str)]) -> Instance {
    let mut instance = Instance::test("web").with_bundle("web.v2");
    instance.spec.bundle.spec = Some(BundleSpec {
        class: "plain".into(),
        refs: vec!["docker://127.0.0.1:5000/web:v2".into()],
        volume_mounts: Vec::new(),
    });
    conditions
        .iter()
        .fold(instance, |instance, (reason, state, message)| {
            instance.saying(*reason, *state, message)
        })
        .changed_at(at(1_000))
}

fn known() -> Context<'static> {
    Context {
        bundle: None,
        class: None,
        class_missing: false,
        uninstall_report: None,
    }
}

use ConditionStatus::{False, True, Unknown};

#[test]
fn a_set_held_at_a_phase_says_what_holds_it_and_where_to_look() {
    let web = instance(&[
        (
            Reason::ApprovedByPolicy,
            True,
            "approved by policy AllowAll",
        ),
        (Reason::UnpackSucceeded, True, "unpacked 3 objects"),
        (
            Reason::Installing,
            False,
            "applied 2 of 3 objects of Bundle web.v2, through phase workloads; waiting for phase publishing to start: Deployment/shop/web: the smoke test has not passed (progressionProbes[0]: self.metadata.annotations['smoke'] == 'passed')",
        ),
        (
            Reason::ObjectsProgressing,
            Unknown,
            "waiting for phase publishing to start",
        ),
    ]);
    let mut web = web;
    let held = pakket_api::PhaseProgression {
        reached: "workloads".into(),
        next: "publishing".into(),
        held_by: vec!["Deployment/shop/web: the smoke test has not passed".into()],
    };
    web.status.as_mut().unwrap().progression = Some(held);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::Progressing);
    let text = render(&diagnosis, at(1_030));
    assert!(
        text.contains("installed up to phase workloads; phase publishing waits for these probes to pass: Deployment/shop/web"),
        "{text}"
    );
    assert!(
        text.contains("Deployment/shop/web"),
        "the held object: {text}"
    );
    assert!(
        text.contains("kubectl get provisionerclass ") && text.contains("progressionProbes"),
        "{text}"
    );
    assert!(
        text.contains(".progression-probes.yaml is the content author's probe"),
        "{text}"
    );
}

#[test]
fn waiting_for_approval_says_how_to_approve() {
    let web = instance(&[
        (
            Reason::ApprovalPending,
            False,
            "waiting for approval (ProvisionerClass plain has approval: Manual)",
        ),
        (Reason::UnpackSucceeded, True, "unpacked 2 objects"),
        (
            Reason::InstallPending,
            False,
            "nothing is applied before approval",
        ),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::WaitingForApproval);
    // Install pending and health unknown are consequences, not problems.
    assert_eq!(diagnosis.problems.len(), 1);
    let text = render(&diagnosis, at(1_090));
    assert!(
        text.starts_with("Instance web is waiting for approval to install Bundle web.v2.\n"),
        "{text}"
    );
    assert!(
        text.contains("  Approved=False (ApprovalPending) for 90s:\n    waiting for approval"),
        "{text}"
    );
    assert!(text.contains("    kubectl instance approve web "), "{text}");
}

#[test]
fn unpack_failure_comes_with_the_refs_and_hides_the_approval_placeholder() {
    let web = instance(&[
        (Reason::ApprovalPending, False, "not evaluated yet"),
        (
            Reason::UnpackFailed,
            False,
            "Bundle web.v2: pulling docker://127.0.0.1:5000/web:v2: connection refused",
        ),
        (Reason::InstallPending, False, "nothing applied yet"),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::UnpackFailed);
    assert_eq!(diagnosis.problems.len(), 1, "{diagnosis:#?}");
    let problem = &diagnosis.problems[0];
    assert_eq!(problem.refs, ["docker://127.0.0.1:5000/web:v2"]);
    let text = render(&diagnosis, at(1_000));
    assert!(text.contains("connection refused"), "{text}");
    assert!(
        text.contains("  Bundle web.v2 reads from:\n    docker://127.0.0.1:5000/web:v2\n"),
        "{text}"
    );
}

#[test]
fn a_content_error_gets_advice_about_the_content_not_the_registry() {
    let web = instance(&[
        (Reason::ApprovalPending, False, "not evaluated yet"),
        (
            Reason::UnpackFailed,
            False,
            "Bundle web.v2: spec.refs[0] docker://127.0.0.1:5000/web:v2: layer sha256:1: the archive expands past its limit",
        ),
        (Reason::InstallPending, False, "nothing applied yet"),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    let web = web.because(Reason::UnpackFailed, Cause::new(CauseKind::ContentInvalid));
    let diagnosis = diagnose(&web, &known());
    let steps = diagnosis.problems[0].next_steps.join("\n");
    assert!(steps.contains("it is the content that is wrong"), "{steps}");
    assert!(!steps.contains("registry up"), "{steps}");

    let unreachable = instance(&[
        (Reason::ApprovalPending, False, "not evaluated yet"),
        (
            Reason::UnpackFailed,
            False,
            "Bundle web.v2: pulling docker://127.0.0.1:5000/web:v2: connection refused",
        ),
        (Reason::InstallPending, False, "nothing applied yet"),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    let steps = diagnose(&unreachable, &known()).problems[0]
        .next_steps
        .join("\n");
    assert!(steps.contains("registry up"), "{steps}");
}

#[test]
fn unhealthy_lists_each_object_with_a_describe_command() {
    let web = instance(&[
        (Reason::ApprovedByUser, True, "approved by alice"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallSucceeded, True, "applied 3 objects"),
        (
            Reason::ObjectsUnhealthy,
            False,
            "Deployment/web/server is not Available; CustomResourceDefinition/widgets.example.com is not Established; ConfigMap/web/settings is missing",
        ),
    ]);
    let objects = [
        ("Deployment/web/server", "is not Available"),
        (
            "CustomResourceDefinition/widgets.example.com",
            "is not Established",
        ),
        ("ConfigMap/web/settings", "is missing"),
    ]
    .map(|(object, problem)| CauseObject {
        object: object.into(),
        problem: Some(problem.into()),
    });
    let cause = Cause::new(CauseKind::ObjectsUnhealthy).with_objects(objects);
    let web = web.because(Reason::ObjectsUnhealthy, cause);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::Unhealthy);
    let problem = &diagnosis.problems[0];
    assert_eq!(problem.objects.len(), 3);
    assert_eq!(
        problem.summary,
        "Instance web is installed, but 3 of its objects are not healthy."
    );
    assert_eq!(
        problem.next_steps,
        [
            "kubectl describe deployment -n web server",
            "kubectl describe customresourcedefinition widgets.example.com",
            "kubectl describe configmap -n web settings",
        ]
    );
    let text = render(&diagnosis, at(1_000));
    assert!(
        text.contains("    - Deployment/web/server is not Available\n"),
        "{text}"
    );
}

#[test]
fn a_resolvers_dependency_explanation_is_printed_verbatim() {
    let explanation = "cannot install eclipse-che >=7.100.0:\n  request eclipse-che >=7.100.0 needs package eclipse-che (>=7.100.0)\n      but nothing fits";
    let mut web = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallFailed, False, explanation),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    // Another component's reason says what it is, not the message.
    let conditions = &mut web.status.as_mut().unwrap().conditions;
    let installed = conditions
        .iter_mut()
        .find(|c| c.type_ == "Installed")
        .unwrap();
    installed.reason = "ResolutionFailed".into();
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::DependencyConflict);
    let text = render(&diagnosis, at(1_000));
    let indented: String = explanation
        .lines()
        .map(|line| format!("    {line}\n"))
        .collect();
    assert!(text.contains(&indented), "{text}");
}

#[test]
fn content_that_cannot_render_is_not_offered_for_approval() {
    let broken = instance(&[
        (Reason::ApprovalPending, False, "waiting for approval"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (
            Reason::RenderFailed,
            False,
            "Bundle b: bad.yaml line 3: not YAML",
        ),
    ]);
    let diagnosis = diagnose(&broken, &known());
    assert_eq!(diagnosis.problems.len(), 1, "{:?}", diagnosis.problems);
    assert_eq!(diagnosis.problems[0].reason, "RenderFailed");
    let text = render(&diagnosis, at(1_000));
    assert!(!text.contains("approve"), "{text}");
}

#[test]
fn everything_true_is_ready_and_no_status_points_at_the_class() {
    let ready = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallSucceeded, True, "applied"),
        (Reason::ObjectsHealthy, True, "all healthy"),
    ]);
    let diagnosis = diagnose(&ready, &known());
    assert_eq!(diagnosis.state, Kind::Ready);
    assert_eq!(
        render(&diagnosis, at(1_000)),
        "Instance web is installed and healthy.\n"
    );

    // The decision behind what runs is named, rule and all.
    let mut by_rule = ready.clone();
    let status = by_rule.status.as_mut().unwrap();
    status.conditions[0].message =
        "approved by policy teams rule 2 (self-service): etcd 0.9.x is self-service (Bundle etcd.v0.9.4 at sha256:0123456789ab)".into();
    status.approval = Some(pakket_api::ApprovedContent {
        bundle: "etcd.v0.9.4".into(),
        digest: "sha256:0123456789abcdef".into(),
        approved_by: "policy teams rule 2 (self-service)".into(),
        rendered: None,
        generation: Some(1),
        judged: None,
    });
    assert_eq!(
        render(&diagnose(&by_rule, &known()), at(1_000)),
        "Instance web is installed and healthy.\n  approved by policy teams rule 2 (self-service): etcd 0.9.x is self-service (Bundle etcd.v0.9.4 at sha256:0123456789ab)\n"
    );

    let partial = instance(&[(Reason::ApprovedByUser, True, "approved by alice")]);
    assert_eq!(diagnose(&partial, &known()).state, Kind::Progressing);

    let mut fresh = ready.clone();
    fresh.status = None;
    let missing = Context {
        bundle: None,
        class: None,
        class_missing: true,
        uninstall_report: None,
    };
    let diagnosis = diagnose(&fresh, &missing);
    assert_eq!(diagnosis.state, Kind::NotReconciled);
    assert!(
        diagnosis.problems[0].next_steps[0].starts_with("ProvisionerClass plain does not exist")
    );
}

#[test]
fn failures_come_before_an_earlier_wait() {
    let web = instance(&[
        (Reason::ApprovalPending, False, "waiting for approval"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallSucceeded, True, "applied"),
        (
            Reason::ObjectsUnhealthy,
            False,
            "Deployment/web/server is not Available",
        ),
    ]);
    let kinds: Vec<Kind> = diagnose(&web, &known())
        .problems
        .iter()
        .map(|p| p.kind)
        .collect();
    assert_eq!(kinds, [Kind::Unhealthy, Kind::WaitingForApproval]);
}

#[test]
fn what_the_trust_model_refuses_gets_its_own_next_step() {
    let cases = [
        (CauseKind::ObjectNotManaged, "hands it over"),
        (CauseKind::ObjectOfAnotherInstance, "one owner"),
        (
            CauseKind::BundleOfAnotherInstance,
            "name a Bundle of your own",
        ),
        (CauseKind::ContentChangedAtSource, "create a new Bundle"),
        (CauseKind::InternalAddress, "internal address"),
        (CauseKind::ApprovalOfOtherContent, "approve it again"),
        (CauseKind::RequesterUnsealed, "webhooks run"),
    ];
    for (kind, expected) in cases {
        let cause = Cause::new(kind);
        let steps = trust_steps(Some(&cause), "web").unwrap_or_else(|| panic!("{kind:?}"));
        assert!(
            steps.iter().any(|step| step.contains(expected)),
            "{kind:?}: {steps:?}"
        );
    }
    // The words of a message decide nothing: without a cause there is no
    // trust advice, whatever the message says.
    assert!(trust_steps(None, "web").is_none());
    let unmanaged = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (
            Reason::InstallFailed,
            False,
            "ConfigMap/ns/x exists and is not managed by Pakket; Pakket never takes over an object silently",
        ),
    ]);
    let steps = diagnose(&unmanaged, &known()).problems[0]
        .next_steps
        .join("\n");
    assert!(!steps.contains("hands it over"), "{steps}");
    let unmanaged = unmanaged.because(
        Reason::InstallFailed,
        Cause::new(CauseKind::ObjectNotManaged),
    );
    let steps = diagnose(&unmanaged, &known()).problems[0]
        .next_steps
        .join("\n");
    assert!(steps.contains("hands it over"), "{steps}");
}

#[test]
fn missing_dependencies_say_what_to_install_not_that_they_conflict() {
    let message = "ClusterServiceVersion eclipse-che.v7.121.0 needs what is not installed: cannot install bundle eclipse-che.v7.121.0: ... but nothing fits: no installed Instance has a package named devworkspace-operator; nothing is applied until what it needs is installed";
    let che = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::DependenciesMissing, False, message),
        (Reason::HealthUnknown, Unknown, "nothing installed yet"),
    ]);
    let diagnosis = diagnose(&che, &known());
    assert_eq!(diagnosis.state, Kind::InstallFailed);
    let text = render(&diagnosis, at(1_000));
    assert!(
        text.starts_with("Instance web needs packages or APIs that nothing installed provides"),
        "{text}"
    );
    assert!(text.contains("devworkspace-operator"), "{text}");
    assert!(
        text.contains("installs on its own once it is there"),
        "{text}"
    );
}

#[test]
fn objects_still_getting_ready_are_progress_not_a_failure() {
    let web = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallSucceeded, True, "applied 2 objects"),
        (
            Reason::ObjectsProgressing,
            Unknown,
            "waiting for Deployment/web/server to become Available",
        ),
    ]);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::Progressing);
    let text = render(&diagnosis, at(1_000));
    assert!(
        text.starts_with("Instance web is installed and its objects are still getting ready"),
        "{text}"
    );
}

#[test]
fn an_automatic_rollback_is_a_failure_that_says_what_runs_and_how_to_try_again() {
    let web = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (
            Reason::RolledBack,
            False,
            "Bundle web.v2 is not installed: revision 2 (Bundle web.v2) did not roll out (pods unschedulable), so revision 1's content (Bundle web.v1) runs again under the approval it had (the class's rollbackOnFailure). Revision 1's objects run; change the spec to try again",
        ),
        (Reason::ObjectsHealthy, True, "all 2 objects are healthy"),
    ]);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::InstallFailed);
    let text = render(&diagnosis, at(1_000));
    assert!(
        text.contains("did not roll out and was rolled back automatically")
            && text.contains("pods unschedulable")
            && text.contains("kubectl instance history web")
            && text.contains("kubectl instance rollback web"),
        "{text}"
    );
}

#[test]
fn a_rollout_past_its_deadline_is_a_failure_that_points_at_history_and_rollback() {
    let web = instance(&[
        (Reason::ApprovedByPolicy, True, "AllowAll"),
        (Reason::UnpackSucceeded, True, "unpacked"),
        (Reason::InstallSucceeded, True, "applied 2 objects"),
        (
            Reason::ProgressDeadlineExceeded,
            False,
            "revision 2 (Bundle web.v2) did not roll out within its progress deadline of 10m (the class's progressDeadline): waiting for Deployment/web/server",
        ),
    ]);
    let diagnosis = diagnose(&web, &known());
    assert_eq!(diagnosis.state, Kind::Unhealthy);
    let text = render(&diagnosis, at(1_000));
    assert!(
        text.contains("did not roll out within its progress deadline")
            && text.contains("kubectl instance history web")
            && text.contains("kubectl instance rollback web"),
        "{text}"
    );
}

#[test]
fn a_deletion_held_by_a_provisioner_that_never_claimed_its_class_says_removing_it_is_safe() {
    let mut held = instance(&[(Reason::UnpackPending, Unknown, "not acted on")]);
    held.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        at(2_000),
    ));
    held.metadata.finalizers = Some(vec!["pakket.dev/plian-uninstall".into()]);
    let typo: ProvisionerClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "ProvisionerClass",
        "metadata": { "name": "plain" },
        "spec": { "provisioner": "pakket.dev/plian" },
    }))
    .unwrap();
    let context = Context {
        bundle: None,
        class: Some(&typo),
        class_missing: false,
        uninstall_report: None,
    };
    let diagnosis = diagnose(&held, &context);
    assert_eq!(diagnosis.state, Kind::DeletionHeld);
    let steps = &diagnosis.problems[0].next_steps;
    assert!(
        steps[0].contains("has ever claimed ProvisionerClass plain")
            && steps[0].contains("pakket.dev/plian"),
        "{steps:?}"
    );
    assert!(
        steps[1].contains("removing the finalizer is safe")
            && steps[1].contains("kubectl patch instance web"),
        "{steps:?}"
    );

    // Objects installed: removing it by hand would leave them running.
    let mut claimed = typo.clone();
    claimed.status = Some(pakket_api::ProvisionerClassStatus {
        claimed: Some(pakket_api::ClassClaim {
            provisioner: "pakket.dev/plian".into(),
            claimed_at: "2026-11-27T00:00:00Z".into(),
        }),
        conditions: Vec::new(),
    });
    held.status.as_mut().unwrap().object_count = Some(3);
    let context = Context {
        bundle: None,
        class: Some(&claimed),
        class_missing: false,
        uninstall_report: None,
    };
    let steps = diagnose(&held, &context).problems[0].next_steps.clone();
    assert!(
        steps[0].contains("check that the provisioner is running")
            && steps[0].contains("kubectl instance describe web")
            && steps[0].contains("UninstallWaiting"),
        "{steps:?}"
    );
    assert!(
        steps[1].contains("installed 3 objects") && steps[1].contains("leaves them running"),
        "{steps:?}"
    );
}

#[test]
fn a_deletion_the_provisioner_reports_on_says_what_holds_it_not_that_the_provisioner_is_down() {
    let mut held = instance(&[(Reason::InstallSucceeded, True, "applied 8 objects")]);
    held.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        at(2_000),
    ));
    held.metadata.finalizers = Some(vec!["pakket.dev/registry-v1".into()]);
    held.status.as_mut().unwrap().object_count = Some(8);
    let class: ProvisionerClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "ProvisionerClass",
        "metadata": { "name": "registry-v1" },
        "spec": { "provisioner": "pakket.dev/registry-v1" },
        "status": { "claimed": {
            "provisioner": "pakket.dev/registry-v1", "claimedAt": "2026-11-27T00:00:00Z",
        } },
    }))
    .unwrap();
    let report = |reason: &str, message: &str| crate::events::EventLine {
        kind: "Normal".into(),
        reason: reason.into(),
        message: message.into(),
        from: "pakket.dev/registry-v1".into(),
        time: Some(at(2_005)),
        count: 3,
    };
    let waiting = report(
        "UninstallWaiting",
        "deleted 8 installed objects; the Instance stays until the API server has finished deleting 1 of its CRDs and their custom resources: etcdclusters.etcd.database.coreos.com (InstanceDeletionCheck: could not confirm zero CustomResources remaining)",
    );
    let context = Context {
        bundle: None,
        class: Some(&class),
        class_missing: false,
        uninstall_report: Some(&waiting),
    };
    let diagnosis = diagnose(&held, &context);
    assert_eq!(diagnosis.state, Kind::DeletionHeld);
    let text = render(&diagnosis, at(2_010));
    for expected in [
        "UninstallWaiting: deleted 8 installed objects",
        "etcdclusters.etcd.database.coreos.com (InstanceDeletionCheck",
        "waits for the API server to finish deleting the CRDs named above",
        "kubectl get KIND -A",
        "leaves what remains of its 8 objects behind",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    assert!(
        !text.contains("check that the provisioner is running")
            && !text.contains("start its provisioner"),
        "{text}"
    );

    let refused = report(
        "UninstallIncomplete",
        "could not remove 1 of the installed objects yet (first: ConfigMap web/guarded: guarded by the test)",
    );
    let context = Context {
        uninstall_report: Some(&refused),
        ..context
    };
    let text = render(&diagnose(&held, &context), at(2_010));
    assert!(
        text.contains("UninstallIncomplete: could not remove 1 of the installed objects")
            && text.contains("cannot delete the object named above yet"),
        "{text}"
    );
}

#[test]
fn a_policy_decision_names_the_policy_and_rule_and_where_to_read_it() {
    let refused = instance(&[
        (
            Reason::ApprovalPending,
            False,
            "refused by policy teams rule 1 (no-cluster-admin): a binding to cluster-admin is never self-served; nothing is applied. Change the request, or a person with the approve verb decides: `kubectl instance approve web`",
        ),
        (Reason::UnpackSucceeded, True, "unpacked 3 objects"),
        (
            Reason::InstallPending,
            False,
            "nothing is applied before approval",
        ),
    ]);
    let verdict = PolicyVerdict {
        name: "teams".into(),
        rule: Some(1),
        rule_name: Some("no-cluster-admin".into()),
        refused: true,
    };
    let cause = Cause::new(CauseKind::PolicyRefused).with_policy(verdict);
    let refused = refused.because(Reason::ApprovalPending, cause);
    let text = render(&diagnose(&refused, &known()), at(1_030));
    assert!(
        text.contains("was refused by policy teams rule 1 (no-cluster-admin)"),
        "{text}"
    );
    assert!(
        text.contains("kubectl get approvalpolicy teams -o yaml"),
        "{text}"
    );

    let asked = instance(&[
        (
            Reason::ApprovalPending,
            False,
            "policy teams asks a person: no rule matched, so a person decides; review with `kubectl instance describe web`",
        ),
        (Reason::UnpackSucceeded, True, "unpacked 3 objects"),
        (
            Reason::InstallPending,
            False,
            "nothing is applied before approval",
        ),
    ]);
    let unexplained = render(&diagnose(&asked, &known()), at(1_030));
    let verdict = PolicyVerdict {
        name: "teams".into(),
        rule: None,
        rule_name: None,
        refused: false,
    };
    let cause = Cause::new(CauseKind::PolicyAsksPerson).with_policy(verdict);
    let asked = asked.because(Reason::ApprovalPending, cause);
    let text = render(&diagnose(&asked, &known()), at(1_030));
    assert!(
        text.contains("waiting for a person: policy teams did not approve"),
        "{text}"
    );
    // Without the cause the words of the message are not taken for a
    // policy's decision.
    assert!(
        !unexplained.contains("did not approve") && !unexplained.contains("approvalpolicy"),
        "{unexplained}"
    );
}

/// `why` leads with the condition `Ready` names, and says Ready exactly
/// when `Ready` is True, for every mix of the four conditions' states.
#[test]
fn why_and_the_ready_condition_name_the_same_reason_in_every_state() {
    let approved = [
        (Reason::ApprovalPending, False),
        (Reason::ApprovalDenied, False),
        (Reason::ApprovedByPolicy, True),
    ];
    let unpacked = [
        (Reason::Unpacking, False),
        (Reason::UnpackFailed, False),
        (Reason::UnpackSucceeded, True),
    ];
    let installed = [
        (Reason::InstallPending, False),
        (Reason::Installing, False),
        (Reason::InstallFailed, False),
        (Reason::InvalidConfig, False),
        (Reason::DependenciesMissing, False),
        (Reason::RolledBack, False),
        (Reason::InstallSucceeded, True),
    ];
    let healthy = [
        (Reason::HealthUnknown, Unknown),
        (Reason::ObjectsProgressing, Unknown),
        (Reason::ObjectsUnhealthy, False),
        (Reason::ProgressDeadlineExceeded, False),
        (Reason::ObjectsHealthy, True),
    ];
    let mut checked = 0;
    for a in approved {
        for u in unpacked {
            for i in installed {
                for h in healthy {
                    let case = [
                        (a.0, a.1, "a"),
                        (u.0, u.1, "u"),
                        (i.0, i.1, "i"),
                        (h.0, h.1, "h"),
                    ];
                    let instance = instance(&case);
                    let standing = readiness::of_instance(&instance).unwrap();
                    let diagnosis = diagnose(&instance, &known());
                    match diagnosis.problems.first() {
                        Some(first) => assert_eq!(first.reason, standing.reason(), "{case:?}"),
                        None => assert!(
                            matches!(diagnosis.state, Kind::Ready | Kind::Progressing),
                            "{case:?}"
                        ),
                    }
                    assert_eq!(
                        diagnosis.state == Kind::Ready,
                        matches!(standing, pakket_api::Standing::Ready { .. }),
                        "{case:?}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 3 * 3 * 7 * 5);
}
