//! The core API against a real kube-apiserver + etcd: CRDs install, objects
//! round-trip with their status subresources, the apiserver's own CEL rules
//! refuse bad Bundles, and real kubectl shows the printer columns.

use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{
    Bundle, BundleSpec, BundleStatus, BundleTemplate, ConditionType, Instance, InstanceSpec,
    InstanceStatus, ObjectRef, PinnedSource, ProvisionerClass, ProvisionerClassSpec, Reason,
    UnpackPhase,
};
use pakket_testkit::{Scope, install_crds};
use serde_json::json;

const DIGEST: &str = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945";

fn class(scope: &Scope) -> ProvisionerClass {
    let mut parameters = serde_json::Map::new();
    parameters.insert("approval".into(), json!("DenyAll"));
    parameters.insert(
        "matchBundle".into(),
        json!([{ "selector": ".schema == olm.bundle", "class": "olm" }]),
    );
    ProvisionerClass {
        metadata: scope.meta("class"),
        spec: ProvisionerClassSpec {
            provisioner: "pakket.dev/plain".into(),
            parameters: Some(parameters),
        },
        status: None,
    }
}

fn bundle(scope: &Scope, suffix: &str) -> Bundle {
    Bundle {
        metadata: scope.meta(suffix),
        spec: BundleSpec {
            class: scope.name("class"),
            refs: vec!["docker://quay.io/openshift-community-operators/etcd:v0.9.4".into()],
            volume_mounts: Vec::new(),
        },
        status: None,
    }
}

fn instance(scope: &Scope) -> Instance {
    Instance {
        metadata: scope.meta("instance"),
        spec: InstanceSpec {
            class: scope.name("class"),
            selector: None,
            deletion_policy: Default::default(),
            config: None,
            bundle: BundleTemplate {
                name: scope.name("bundle"),
                spec: None,
            },
            progress_deadline: None,
            drift: None,
        },
        status: None,
    }
}

fn status_patch<S: serde::Serialize>(kind: &str, status: S) -> Patch<serde_json::Value> {
    Patch::Apply(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": kind,
        "status": status,
    }))
}

#[tokio::test]
async fn crds_install_and_become_established() {
    let scope = Scope::new("crds-established").await;
    let installed = install_crds(&scope.client).await.unwrap();
    let mut kinds: Vec<String> = installed
        .iter()
        .map(|crd| crd.spec.names.kind.clone())
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        ["ApprovalPolicy", "Bundle", "Instance", "ProvisionerClass"]
    );
    for crd in &installed {
        let conditions = crd
            .status
            .as_ref()
            .and_then(|status| status.conditions.clone())
            .unwrap_or_default();
        for wanted in ["Established", "NamesAccepted"] {
            let found = conditions
                .iter()
                .find(|condition| condition.type_ == wanted);
            assert_eq!(
                found.map(|c| c.status.as_str()),
                Some("True"),
                "{} {wanted}",
                crd.spec.names.kind
            );
        }
    }
    scope.cleanup().await;
}

#[tokio::test]
async fn objects_round_trip_with_their_status_subresources() {
    let scope = Scope::new("round-trip").await;
    install_crds(&scope.client).await.unwrap();
    let classes: Api<ProvisionerClass> = Api::all(scope.client.clone());
    let bundles: Api<Bundle> = Api::all(scope.client.clone());
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let post = PostParams::default();

    let created_class = classes.create(&post, &class(&scope)).await.unwrap();
    assert_eq!(
        created_class.spec,
        class(&scope).spec,
        "parameters are kept as written"
    );
    assert_eq!(created_class.parameter_str("approval"), Some("DenyAll"));

    let created_bundle = bundles
        .create(&post, &bundle(&scope, "bundle"))
        .await
        .unwrap();
    assert_eq!(created_bundle.spec, bundle(&scope, "bundle").spec);
    assert!(
        created_bundle.status.is_none(),
        "a new Bundle has no status until a provisioner writes one"
    );

    let bundle_status = BundleStatus {
        unpacked: UnpackPhase::Done,
        source: Some(PinnedSource {
            reference: created_bundle.spec.refs[0].clone(),
            digest: Some(DIGEST.into()),
            commit: None,
        }),
        objects: vec![ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "etcd-operator".into(),
            namespace: Some("operators".into()),
        }],
        // Free-form values, kept as written.
        properties: vec![
            pakket_api::BundleProperty {
                type_: "olm.package".into(),
                value: serde_json::json!({"packageName": "etcd", "version": "0.9.4"}),
            },
            pakket_api::BundleProperty {
                type_: "olm.maxOpenShiftVersion".into(),
                value: serde_json::json!("4.18"),
            },
        ],
        // A list cut short: the count and the kinds tell the rest.
        object_count: Some(1_500),
        object_kinds: vec![pakket_api::KindCount {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            count: 1_500,
        }],
        grants: vec![pakket_api::RbacGrant {
            object: ObjectRef {
                api_version: "rbac.authorization.k8s.io/v1".into(),
                kind: "ClusterRole".into(),
                name: "etcd-operator".into(),
                namespace: None,
            },
            grants: vec!["get,list on pods (core)".into()],
        }],
        conditions: vec![condition::new(
            Reason::UnpackSucceeded,
            ConditionStatus::True,
            "unpacked 4 objects",
            Some(1),
            Timestamp::from_second(1_700_000_000).unwrap(),
        )],
        observed_generation: Some(1),
    };
    let apply = PatchParams::apply("pakket-test").force();
    let name = scope.name("bundle");
    bundles
        .patch_status(&name, &apply, &status_patch("Bundle", &bundle_status))
        .await
        .unwrap();
    let read = bundles.get(&name).await.unwrap();
    assert_eq!(read.status.as_ref(), Some(&bundle_status));

    instances.create(&post, &instance(&scope)).await.unwrap();
    let now = Timestamp::from_second(1_700_000_100).unwrap();
    let instance_status = InstanceStatus {
        conditions: vec![
            condition::new(
                Reason::ApprovalPending,
                ConditionStatus::False,
                "run `kubectl instance approve`",
                Some(1),
                now,
            ),
            condition::new(
                Reason::UnpackSucceeded,
                ConditionStatus::True,
                "bundle unpacked",
                Some(1),
                now,
            ),
            condition::new(
                Reason::InstallPending,
                ConditionStatus::False,
                "waiting for approval",
                Some(1),
                now,
            ),
            condition::new(
                Reason::HealthUnknown,
                ConditionStatus::Unknown,
                "nothing installed yet",
                Some(1),
                now,
            ),
        ],
        // A cause round-trips with every field the schema has.
        causes: vec![
            pakket_api::Cause::new(pakket_api::CauseKind::PolicyRefused)
                .with_objects([pakket_api::CauseObject {
                    object: "ClusterRoleBinding/admin".into(),
                    problem: Some("binds cluster-admin".into()),
                }])
                .with_owner("other")
                .with_policy(pakket_api::PolicyVerdict {
                    name: "teams".into(),
                    rule: Some(2),
                    rule_name: Some("no-cluster-admin".into()),
                    refused: true,
                }),
        ],
        active_bundle: None,
        objects: Vec::new(),
        object_count: None,
        object_kinds: Vec::new(),
        approval: Some(pakket_api::ApprovedContent {
            bundle: "etcd-operator.v0.9.4".into(),
            digest: DIGEST.into(),
            approved_by: "alice".into(),
            rendered: None,
            generation: Some(1),
            judged: Some(judged()),
        }),
        // The request waiting for a decision round-trips too.
        pending_request: Some(judged()),
        decision_told: Some("0123456789abcdef".into()),
        // An embedded Bundle's status, as a Bundle object would carry it.
        embedded_bundle: Some(pakket_api::EmbeddedBundleStatus {
            name: "etcd-operator.v0.9.4".into(),
            status: bundle_status.clone(),
        }),
        // What it provides round-trips too.
        provides: vec!["etcd.database.coreos.com/v1beta2 EtcdCluster".into()],
        // A revision, embedded spec and all, round-trips through the schema.
        revisions: vec![pakket_api::Revision {
            number: 1,
            bundle: "etcd-operator.v0.9.4".into(),
            bundle_spec: Some(bundle(&scope, "bundle").spec),
            digest: DIGEST.into(),
            rendered: Some(DIGEST.into()),
            approved_by: "alice".into(),
            applied: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
            outcome: pakket_api::RevisionOutcome::RollingOut,
            ended: None,
            message: "waiting for Deployment/etcd/etcd-operator".into(),
        }],
        serving_revision: None,
        automatic_rollback: Some(pakket_api::AutomaticRollback {
            from: 2,
            to: 1,
            generation: 1,
            state: pakket_api::RollbackState::NotPossible,
            message: "revision 1's content is no longer in the store".into(),
        }),
        progression: Some(pakket_api::PhaseProgression {
            reached: "workloads".into(),
            next: "publishing".into(),
            held_by: vec!["Deployment/etcd/etcd-operator: not Available yet".into()],
        }),
        observed_generation: Some(1),
    };
    let instance_name = scope.name("instance");
    instances
        .patch_status(
            &instance_name,
            &apply,
            &status_patch("Instance", &instance_status),
        )
        .await
        .unwrap();
    let read = instances.get(&instance_name).await.unwrap();
    assert_eq!(read.status.as_ref(), Some(&instance_status));
    for kind in ConditionType::INSTANCE {
        assert!(read.condition(kind).is_some(), "{} missing", kind.as_str());
    }

    // With a status subresource, status written through the main resource is
    // dropped: only the status endpoint (which the approval webhook guards) can change it.
    let mut tampered = read.clone();
    let approved = condition::new(
        Reason::ApprovedByUser,
        ConditionStatus::True,
        "self-approved",
        Some(1),
        now,
    );
    condition::set(&mut tampered.status.as_mut().unwrap().conditions, approved);
    let replaced = instances
        .replace(&instance_name, &post, &tampered)
        .await
        .unwrap();
    assert_eq!(
        replaced.condition(ConditionType::Approved).unwrap().status,
        "False"
    );

    scope.cleanup().await;
}

#[tokio::test]
async fn apiserver_refuses_a_changed_bundle_spec_with_a_clear_message() {
    let scope = Scope::new("immutable-spec").await;
    install_crds(&scope.client).await.unwrap();
    let bundles: Api<Bundle> = Api::all(scope.client.clone());
    let name = scope.name("bundle");
    bundles
        .create(&PostParams::default(), &bundle(&scope, "bundle"))
        .await
        .unwrap();

    let change = Patch::Merge(
        json!({ "spec": { "refs": ["docker://quay.io/openshift-community-operators/etcd:v0.9.2"] } }),
    );
    let error = bundles
        .patch(&name, &PatchParams::default(), &change)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("expected an API error, got {error}");
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("Bundle spec is immutable"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("create a new Bundle"),
        "{}",
        status.message
    );

    // Metadata stays editable: labels are how Instances select Bundles to pivot from.
    let relabel =
        Patch::Merge(json!({ "metadata": { "labels": { "pakket.dev/package": "etcd" } } }));
    let relabelled = bundles
        .patch(&name, &PatchParams::default(), &relabel)
        .await
        .unwrap();
    assert_eq!(relabelled.spec, bundle(&scope, "bundle").spec);
    scope.cleanup().await;
}

#[tokio::test]
async fn apiserver_refuses_bundles_without_refs_or_with_unknown_schemes() {
    let scope = Scope::new("bad-refs").await;
    install_crds(&scope.client).await.unwrap();
    let bundles: Api<Bundle> = Api::all(scope.client.clone());
    let cases = [
        (vec![], "spec.refs needs at least one source"),
        (
            vec!["http://plain.example/bundle.tgz".to_owned()],
            "must start with docker://",
        ),
        (
            vec!["quay.io/no/scheme:v1".to_owned()],
            "must start with docker://",
        ),
    ];
    for (index, (refs, expected)) in cases.into_iter().enumerate() {
        let mut bad = bundle(&scope, &format!("bad-{index}"));
        bad.spec.refs = refs.clone();
        let error = bundles
            .create(&PostParams::default(), &bad)
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("expected an API error for {refs:?}, got {error}");
        };
        assert_eq!(status.code, 422, "{refs:?}");
        assert!(
            status.message.contains(expected),
            "{refs:?}: {}",
            status.message
        );
    }
    scope.cleanup().await;
}

#[tokio::test]
async fn kubectl_get_shows_the_printer_columns() {
    let scope = Scope::new("printer-columns").await;
    install_crds(&scope.client).await.unwrap();
    let post = PostParams::default();
    let apply = PatchParams::apply("pakket-test").force();
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&post, &class(&scope))
        .await
        .unwrap();
    let bundles: Api<Bundle> = Api::all(scope.client.clone());
    bundles
        .create(&post, &bundle(&scope, "bundle"))
        .await
        .unwrap();
    let mut unpacked = Vec::new();
    let ready = pakket_api::Standing::ready("UnpackSucceeded", "unpacked");
    pakket_api::readiness::write(&mut unpacked, Some(1), &ready, Timestamp::now());
    let status = json!({
        "unpacked": "Done",
        "source": { "ref": "docker://x/y:v1", "digest": DIGEST },
        "conditions": unpacked,
    });
    bundles
        .patch_status(
            &scope.name("bundle"),
            &apply,
            &status_patch("Bundle", status),
        )
        .await
        .unwrap();
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances.create(&post, &instance(&scope)).await.unwrap();
    let now = Timestamp::now();
    let status = InstanceStatus {
        conditions: vec![
            condition::new(
                Reason::ApprovedByPolicy,
                ConditionStatus::True,
                "AllowAll",
                Some(1),
                now,
            ),
            condition::new(
                Reason::InstallSucceeded,
                ConditionStatus::True,
                "applied",
                Some(1),
                now,
            ),
        ],
        active_bundle: Some(scope.name("bundle")),
        ..InstanceStatus::default()
    };
    let mut status = status;
    let ready = pakket_api::Standing::ready("InstallSucceeded", "installed and healthy");
    pakket_api::readiness::write(&mut status.conditions, Some(1), &ready, now);
    instances
        .patch_status(
            &scope.name("instance"),
            &apply,
            &status_patch("Instance", status),
        )
        .await
        .unwrap();

    let output = scope
        .cluster
        .kubectl()
        .args([
            "get",
            "instances,bundles,provisionerclasses",
            "-l",
            &scope.selector(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let row = |name: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|line| line.contains(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{text}"));
        line.split_whitespace().map(str::to_owned).collect()
    };
    let headers: Vec<Vec<String>> = text
        .lines()
        .filter(|line| line.starts_with("NAME"))
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        headers[0],
        ["NAME", "CLASS", "BUNDLE", "READY", "REASON", "AGE"],
        "{text}"
    );
    assert_eq!(
        headers[1],
        ["NAME", "CLASS", "UNPACKED", "READY", "DIGEST", "AGE"],
        "{text}"
    );
    // CLAIMED is empty until the provisioner claims the class (none runs here).
    assert_eq!(
        headers[2],
        ["NAME", "PROVISIONER", "CLAIMED", "AGE"],
        "{text}"
    );

    let instance_row = row(&format!(
        "instance.core.pakket.dev/{}",
        scope.name("instance")
    ));
    assert_eq!(
        instance_row[1..5],
        [
            scope.name("class"),
            scope.name("bundle"),
            "True".into(),
            "InstallSucceeded".into()
        ]
    );
    let bundle_row = row(&format!("bundle.core.pakket.dev/{}", scope.name("bundle")));
    assert_eq!(
        bundle_row[1..5],
        [
            scope.name("class"),
            "Done".into(),
            "True".into(),
            DIGEST.into()
        ]
    );
    let class_row = row(&format!(
        "provisionerclass.core.pakket.dev/{}",
        scope.name("class")
    ));
    assert_eq!(class_row[1], "pakket.dev/plain");

    // Short names and the category work as well.
    let output = scope
        .cluster
        .kubectl()
        .args(["get", "pakket", "-l", &scope.selector(), "-o", "name"])
        .output()
        .unwrap();
    let names = String::from_utf8(output.stdout).unwrap();
    assert_eq!(names.lines().count(), 3, "{names}");
    for short in ["inst", "bdl", "provclass"] {
        let output = scope
            .cluster
            .kubectl()
            .args(["get", short, "-l", &scope.selector(), "-o", "name"])
            .output()
            .unwrap();
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "kubectl get {short}"
        );
    }
    scope.cleanup().await;
}

#[tokio::test]
async fn an_instance_points_at_new_content_only_under_a_new_bundle_name() {
    let scope = Scope::new("embedded-pivot").await;
    install_crds(&scope.client).await.unwrap();
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let mut embedded = instance(&scope);
    embedded.spec.bundle.spec = Some(bundle(&scope, "bundle").spec);
    instances
        .create(&PostParams::default(), &embedded)
        .await
        .unwrap();
    let name = scope.name("instance");

    let same_name = json!({ "spec": { "bundle": { "spec": { "refs": ["docker://quay.io/openshift-community-operators/etcd:v0.9.2"] } } } });
    let error = instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(same_name))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("expected an API error, got {error}")
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("needs a new spec.bundle.name"),
        "{}",
        status.message
    );

    let new_name = json!({ "spec": { "bundle": {
        "name": scope.name("bundle-v2"),
        "spec": { "refs": ["docker://quay.io/openshift-community-operators/etcd:v0.9.2"] },
    } } });
    let pivoted = instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(new_name))
        .await
        .unwrap();
    assert_eq!(pivoted.spec.bundle.name, scope.name("bundle-v2"));
    scope.cleanup().await;
}

/// A decision key with every part set.
fn judged() -> pakket_api::Judged {
    pakket_api::Judged {
        class: "registry-v1 provisioner pakket.dev/registry-v1 parameters sha256:01".into(),
        policy: "team-allow-list generation 3".into(),
        requester: "alice groups sha256:02".into(),
        config: "sha256:03".into(),
        effects: "sha256:04".into(),
        deletes: vec!["0123456789abcdef".into()],
    }
}
