//! `list` and `describe` (and `why` for a reader) on Instances whose statuses the tests
//! write as a provisioner would.

use jiff::{Timestamp, ToSpan};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use pakket_api::Reason::{self, *};
use pakket_api::condition::ConditionStatus::{False, True};
use pakket_testkit::{Scope, install_crds};
use serde_json::{Value, json};

use crate::support::{
    Grant, conditions, create_bundle, create_instance, plugin, reader_rules, set_status,
};

#[tokio::test]
async fn list_prints_a_table_or_a_list_document_filtered_by_selector() {
    let scope = Scope::new("list").await;
    install_crds(&scope.client).await.unwrap();
    let first = create_instance(&scope, "a", &scope.name("a-v1")).await;
    let second = create_instance(&scope, "b", &scope.name("b-v1")).await;
    let list: [(Reason, _, &str); 4] = [
        (ApprovedByUser, True, "approved by alice"),
        (UnpackSucceeded, True, "unpacked"),
        (InstallSucceeded, True, "applied"),
        (ObjectsUnhealthy, False, "ConfigMap/x/y is missing"),
    ];
    set_status(
        &scope,
        &first,
        json!({ "conditions": conditions(&list), "activeBundle": scope.name("a-v0") }),
    )
    .await;
    let selector = scope.selector();

    let table = plugin("admin", &["list", "-l", &selector]).await;
    assert_eq!(table.code, 0, "{table:?}");
    let rows: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{}", table.stdout);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "CLASS",
            "BUNDLE",
            "APPROVED",
            "INSTALLED",
            "HEALTHY",
            "AGE"
        ]
    );
    let a_v0 = scope.name("a-v0");
    let a_v1 = scope.name("a-v1");
    assert_eq!(
        &rows[1][..8],
        [
            first.as_str(),
            &scope.name("no-provisioner"),
            &a_v0,
            "→",
            &a_v1,
            "True",
            "True",
            "False"
        ]
    );
    assert_eq!(
        &rows[2][..6],
        [
            second.as_str(),
            &scope.name("no-provisioner"),
            &scope.name("b-v1"),
            "<none>",
            "<none>",
            "<none>"
        ]
    );

    let json_run = plugin("admin", &["list", "-l", &selector, "-o", "json"]).await;
    assert_eq!(json_run.code, 0, "{json_run:?}");
    let document: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(document["kind"], "List");
    let names: Vec<&str> = document["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [first.as_str(), second.as_str()]);
    assert!(
        document["items"][0]["metadata"]
            .get("managedFields")
            .is_none()
    );

    // As `kubectl get -o name`: what kubectl takes back.
    let name_run = plugin("admin", &["list", "-l", &selector, "-o", "name"]).await;
    assert_eq!(name_run.code, 0, "{name_run:?}");
    assert_eq!(
        name_run.stdout,
        format!("instance.core.pakket.dev/{first}\ninstance.core.pakket.dev/{second}\n")
    );

    let yaml_run = plugin("admin", &["list", "-l", &selector, "-o", "yaml"]).await;
    let document: Value = serde_saphyr::from_str(&yaml_run.stdout).unwrap();
    assert_eq!(
        document["items"][0]["status"]["conditions"][3]["reason"],
        "ObjectsUnhealthy"
    );

    let none = plugin(
        "admin",
        &["list", "-l", &format!("{selector},absent=label")],
    )
    .await;
    assert_eq!((none.code, none.stdout.as_str()), (0, ""), "{none:?}");
    assert_eq!(none.stderr, "No Instances found.\n");
    scope.cleanup().await;
}

/// An events.k8s.io/v1 Event regarding Instance `name`, `ago` in the past,
/// in `default` where Events about cluster-scoped objects go.
async fn record_event(scope: &Scope, suffix: &str, name: &str, ago: i64, reason: &str, note: &str) {
    let event = Event {
        metadata: ObjectMeta {
            name: Some(scope.name(suffix)),
            namespace: Some("default".into()),
            labels: Some(scope.labels()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(Timestamp::now() - ago.seconds())),
        reporting_controller: Some("pakket.dev/test".into()),
        reporting_instance: Some("test-1".into()),
        action: Some("Reconcile".into()),
        reason: Some(reason.into()),
        note: Some(note.into()),
        type_: Some("Normal".into()),
        regarding: Some(ObjectReference {
            api_version: Some("core.pakket.dev/v1alpha1".into()),
            kind: Some("Instance".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }),
        ..Event::default()
    };
    Api::<Event>::namespaced(scope.client.clone(), "default")
        .create(&PostParams::default(), &event)
        .await
        .expect("creating an Event");
}

#[tokio::test]
async fn describe_shows_conditions_bundle_objects_pivot_history_and_events() {
    let scope = Scope::new("describe").await;
    install_crds(&scope.client).await.unwrap();
    let (v1, v2, v3) = (scope.name("v1"), scope.name("v2"), scope.name("v3"));
    let name = create_instance(&scope, "web", &v3).await;
    // The runtime labels each Bundle it pivoted away from with its successor.
    create_bundle(
        &scope,
        &v1,
        &["docker://registry.test/web:v1"],
        &[("core.pakket.dev/replaced-by", &v2)],
        None,
    )
    .await;
    create_bundle(
        &scope,
        &v2,
        &["docker://registry.test/web:v2"],
        &[("core.pakket.dev/replaced-by", &v3)],
        None,
    )
    .await;
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    create_bundle(
        &scope,
        &v3,
        &["docker://registry.test/web:v3"],
        &[],
        Some(json!({
            "unpacked": "Done",
            "source": { "ref": "docker://registry.test/web:v3", "digest": digest },
            "objects": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": scope.namespace }],
        })),
    )
    .await;
    let list: [(Reason, _, &str); 4] = [
        (
            ApprovedByPolicy,
            True,
            "ProvisionerClass x approves every Instance (approval: AllowAll)",
        ),
        (UnpackSucceeded, True, "unpacked 1 objects"),
        (InstallSucceeded, True, "applied 1 objects"),
        (ObjectsHealthy, True, "all 1 objects are healthy"),
    ];
    set_status(
        &scope,
        &name,
        json!({
            "conditions": conditions(&list),
            "activeBundle": v3,
            "objects": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": scope.namespace }],
        }),
    )
    .await;
    // Created newest first: the output must still list the oldest first.
    record_event(
        &scope,
        "ev-new",
        &name,
        10,
        "ObjectsHealthy",
        "Healthy: all 1 objects are healthy",
    )
    .await;
    record_event(
        &scope,
        "ev-old",
        &name,
        600,
        "ApprovedByPolicy",
        "Approved: approves every Instance",
    )
    .await;
    let quiet = create_instance(&scope, "quiet", &scope.name("quiet-v1")).await;
    record_event(&scope, "ev-other", &quiet, 5, "Other", "not about web").await;

    let run = plugin("admin", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = &run.stdout;
    for expected in [
        format!("Name:          {name}\n"),
        format!("Bundle:        {v3} (a Bundle object of its own)\n"),
        format!("Active Bundle: {v3}\n"),
        "  Unpacked:    Done\n".to_owned(),
        format!("  Pinned:      docker://registry.test/web:v3 @ {digest}\n"),
        format!("  ConfigMap/{}/settings (v1)\n", scope.namespace),
        format!("Pivot history (oldest first):\n  {v1} → {v2} → {v3} (active)\n"),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in\n{text}");
    }
    let condition_rows: Vec<&str> = text
        .lines()
        .filter(|line| {
            ["  Approved ", "  Unpacked ", "  Installed ", "  Healthy "]
                .iter()
                .any(|p| line.starts_with(p))
        })
        .collect();
    assert_eq!(condition_rows.len(), 4, "{text}");
    assert!(
        condition_rows[3].contains("ObjectsHealthy")
            && condition_rows[3].ends_with("all 1 objects are healthy"),
        "{text}"
    );
    let old = text.find("Approved: approves every Instance").expect(text);
    let new = text.find("Healthy: all 1 objects are healthy").expect(text);
    assert!(old < new, "events are oldest first:\n{text}");
    assert!(!text.contains("not about web"), "{text}");

    let json_run = plugin("admin", &["describe", &name, "-o", "json"]).await;
    let document: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(document["bundle"]["embedded"], false);
    assert_eq!(
        document["bundle"]["object"]["status"]["source"]["digest"],
        digest
    );
    assert_eq!(
        document["pivotHistory"],
        json!([
            { "bundle": v1, "replacedBy": v2 },
            { "bundle": v2, "replacedBy": v3 },
        ])
    );
    assert_eq!(document["events"].as_array().unwrap().len(), 2);

    let quiet_run = plugin("admin", &["describe", &quiet]).await;
    assert!(
        quiet_run
            .stdout
            .contains("Conditions:\n  <none> (no provisioner has written status yet)\n"),
        "{quiet_run:?}"
    );
    assert!(
        quiet_run.stdout.contains("Pivot history: <none>\n"),
        "{quiet_run:?}"
    );

    let events: Api<Event> = Api::namespaced(scope.client.clone(), "default");
    let _ = events
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&scope.selector()),
        )
        .await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_user_who_may_read_only_instances_still_gets_describe_and_why() {
    let scope = Scope::new("reader").await;
    install_crds(&scope.client).await.unwrap();
    let bundle = scope.name("web-v1");
    let name = create_instance(&scope, "web", &bundle).await;
    create_bundle(
        &scope,
        &bundle,
        &["docker://registry.test/web:v1"],
        &[],
        None,
    )
    .await;
    let grant = Grant::new(&scope, "reader", "dave", reader_rules()).await;

    let run = plugin("dave", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with(&format!("Name:          {name}\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!(
            "Note: reading Bundle {bundle}: bundles.core.pakket.dev \"{bundle}\" is forbidden: User \"dave\" cannot get resource \"bundles\""
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("Note: listing Events regarding Instance"),
        "{}",
        run.stdout
    );
    let why = plugin("dave", &["why", &name]).await;
    assert_eq!(why.code, 0, "{why:?}");
    assert!(
        why.stdout.starts_with(&format!(
            "No provisioner has acted on Instance {name} yet.\n"
        )),
        "{}",
        why.stdout
    );

    grant.revoke().await;
    scope.cleanup().await;
}

#[tokio::test]
async fn describe_shows_what_approving_the_pending_content_would_do() {
    let scope = Scope::new("pending").await;
    install_crds(&scope.client).await.unwrap();
    let (name, bundle) = crate::support::pending_instance(&scope, "web").await;
    let uid = crate::support::get_instance(&scope, &name)
        .await
        .metadata
        .uid
        .unwrap();
    let namespace = scope.namespace.clone();
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(scope.client.clone(), &namespace);
    // One written by hand, one Pakket installed for this Instance.
    let by_hand = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-hand"}});
    config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(by_hand).unwrap(),
        )
        .await
        .unwrap();
    let ours = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ours", "labels": {pakket_api::ownership::INSTANCE_UID_LABEL: uid}},
    });
    config_maps
        .patch(
            "ours",
            &kube::api::PatchParams::apply(pakket_api::ownership::FIELD_MANAGER),
            &kube::api::Patch::Apply(&ours),
        )
        .await
        .unwrap();
    let object = |kind: &str, name: &str, namespaced: bool| {
        json!({"apiVersion": if kind == "ClusterRole" { "rbac.authorization.k8s.io/v1" } else { "v1" },
               "kind": kind, "name": name,
               "namespace": if namespaced { Some(&namespace) } else { None }})
    };
    let status = json!({
        "unpacked": "Done",
        "source": {"ref": "docker://registry.example/web:v1", "digest": crate::support::PENDING_DIGEST},
        "objects": [
            object("ConfigMap", "fresh", true),
            object("ConfigMap", "by-hand", true),
            object("ConfigMap", "ours", true),
            object("ClusterRole", &scope.name("reader"), false),
        ],
        "grants": [{"object": object("ClusterRole", &scope.name("reader"), false),
                    "grants": ["get,list on secrets (core)"]}],
    });
    Api::<pakket_api::Bundle>::all(scope.client.clone())
        .patch_status(
            &bundle,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap();

    // A record written by hand (no webhook in this test): shown, and said untrusted.
    let record = json!({"metadata": {"annotations": {
        pakket_api::CREATED_BY_ANNOTATION: r#"{"username":"alice"}"#,
    }}});
    Api::<pakket_api::Instance>::all(scope.client.clone())
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&record),
        )
        .await
        .unwrap();
    let run = plugin("admin", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = &run.stdout;
    for line in [
        format!(
            "Pending content: Bundle {bundle} at {} (what an approval covers)",
            crate::support::PENDING_DIGEST
        ),
        format!("    ConfigMap/{namespace}/fresh: create"),
        format!("    ConfigMap/{namespace}/by-hand: conflict: not managed by Pakket"),
        format!("    ConfigMap/{namespace}/ours: update"),
        format!("    ClusterRole/{}: create", scope.name("reader")),
        format!(
            "    ClusterRole/{}: get,list on secrets (core)",
            scope.name("reader")
        ),
        "Created by:    alice; not sealed by Pakket's webhook, so not trusted".to_owned(),
    ] {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }

    // An approver with the shipped role sees the objects and the grants
    // (what his rights cannot read, it says so).
    let grant = Grant::new(
        &scope,
        "approver",
        "mallory",
        crate::support::approver_rules(),
    )
    .await;
    let run = plugin("mallory", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "    ConfigMap/{namespace}/by-hand: cannot read it with your rights"
        )) && run.stdout.contains("get,list on secrets (core)"),
        "{}",
        run.stdout
    );
    grant.revoke().await;
    scope.cleanup().await;
}
