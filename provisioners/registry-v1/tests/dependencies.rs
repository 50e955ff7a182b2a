//! A registry+v1 bundle's dependencies checked against what is installed.
//!
//! Real data: eclipse-che 7.121.0 from ../shared/data/bundles (verbatim from
//! community-operators-prod `operators/eclipse-che/7.121.0`, see its
//! README), whose `metadata/dependencies.yaml` needs package
//! devworkspace-operator >=0.11.0, and the etcd 0.9.4 operator bundle (the
//! same source). The `dependent` bundles below are written by this test:
//! the smallest registry+v1 bundles that need etcd in the ways a bundle can
//! say it.
//!
//! Without a cluster, the check itself; on the real control plane, with
//! bundles pushed to the real local registry: eclipse-che waits with
//! `DependenciesMissing` and the engine's explanation, nothing applied;
//! etcd installed, its Bundle records what it provides, and a bundle that
//! needs it installs while one that needs a newer etcd waits.

mod support;

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_api::{BundleProperty, ConditionType, Instance};
use pakket_registry_v1::{bundle, dependencies};
use pakket_runtime::{ClusterFacts, InstalledContent};
use pakket_testkit::{
    Scope, assert_readable_messages, condition_is, eventually, install_crds, reason_is,
    wait_for_instance as wait_for,
};
use serde_json::json;
use support::{OperatorBundle, instance, push, run_provisioner};

/// A registry+v1 bundle that needs what `dependencies` (the text of
/// `metadata/dependencies.yaml`) says: one CSV with one Deployment.
fn dependent(name: &str, dependencies: &str) -> tempfile::TempDir {
    OperatorBundle::new(name)
        .all_namespaces()
        .needing(dependencies)
        .write()
}

const NEEDS_ETCD: &str = "dependencies:
- type: olm.package
  value: {packageName: etcd, version: '>=0.9.0'}
- type: olm.gvk
  value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}
- type: olm.constraint
  value:
    failureMessage: etcd must be installed and nothing named forbidden
    all:
      constraints:
      - package: {packageName: etcd, versionRange: '>=0.9.4'}
      - not:
          constraints:
          - package: {packageName: forbidden, versionRange: '>=0.0.0'}
";

const NEEDS_NEWER_ETCD: &str = "dependencies:
- type: olm.package
  value: {packageName: etcd, version: '>=1.0.0'}
";

fn etcd_installed() -> InstalledContent {
    InstalledContent {
        instance: "etcd".into(),
        bundle: "etcd-v094".into(),
        properties: vec![
            BundleProperty {
                type_: "olm.package".into(),
                value: json!({ "packageName": "etcd", "version": "0.9.4" }),
            },
            BundleProperty {
                type_: "olm.gvk".into(),
                value: json!({ "group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster" }),
            },
        ],
    }
}

fn check(dir: &Path, installed: Vec<InstalledContent>) -> Result<(), String> {
    let read = bundle::read(dir, 4 << 20).unwrap();
    let needs = dependencies::needs(&read).unwrap();
    let cluster = ClusterFacts {
        installed,
        ..ClusterFacts::default()
    };
    dependencies::check(&read, &needs, &cluster)
}

fn eclipse_che() -> PathBuf {
    pakket_testkit::data("bundles/eclipse-che/7.121.0")
}

#[test]
fn eclipse_che_needs_devworkspace_operator_and_the_engine_says_so() {
    let why = check(&eclipse_che(), vec![etcd_installed()]).unwrap_err();
    assert!(
        why.contains("package devworkspace-operator (>=0.11.0)")
            && why.contains("no installed Instance has a package named devworkspace-operator"),
        "{why}"
    );
    assert!(!why.contains('\n'), "one line: {why}");
    // An old devworkspace-operator is named with why it misses.
    let old = InstalledContent {
        instance: "dwo".into(),
        bundle: "dwo-v0100".into(),
        properties: vec![BundleProperty {
            type_: "olm.package".into(),
            value: json!({ "packageName": "devworkspace-operator", "version": "0.10.0" }),
        }],
    };
    let why = check(&eclipse_che(), vec![old.clone()]).unwrap_err();
    assert!(why.contains("0.10.0"), "{why}");
    let mut new = old;
    new.properties[0].value =
        json!({ "packageName": "devworkspace-operator", "version": "0.31.0" });
    assert_eq!(check(&eclipse_che(), vec![new]), Ok(()));
}

#[test]
fn packages_apis_and_constraints_are_met_by_what_is_installed() {
    let needs_etcd = dependent("dependent", NEEDS_ETCD);
    let why = check(needs_etcd.path(), Vec::new()).unwrap_err();
    assert!(why.contains("package etcd (>=0.9.0)"), "{why}");
    assert!(
        why.contains("olm.constraint all of (package etcd >=0.9.4, none of (package forbidden >=0.0.0)) is not met: etcd must be installed"),
        "{why}"
    );
    assert_eq!(check(needs_etcd.path(), vec![etcd_installed()]), Ok(()));
    // The formula is about one bundle, as OLM reads it: `not` says what the
    // bundle meeting it must not be, not that nothing else may exist.
    let forbidden = InstalledContent {
        instance: "forbidden".into(),
        bundle: "forbidden-v1".into(),
        properties: vec![BundleProperty {
            type_: "olm.package".into(),
            value: json!({ "packageName": "forbidden", "version": "1.0.0" }),
        }],
    };
    assert_eq!(
        check(needs_etcd.path(), vec![etcd_installed(), forbidden.clone()]),
        Ok(())
    );
    let why = check(needs_etcd.path(), vec![forbidden]).unwrap_err();
    assert!(why.contains("none of (package forbidden >=0.0.0)"), "{why}");
    // An API the cluster serves counts, whoever installed it.
    let needs_api = dependent(
        "api-user",
        "dependencies:\n- type: olm.gvk\n  value: {group: apps, version: v1, kind: Deployment}\n",
    );
    let read = bundle::read(needs_api.path(), 4 << 20).unwrap();
    let needs = dependencies::needs(&read).unwrap();
    let mut cluster = ClusterFacts::default();
    assert!(dependencies::check(&read, &needs, &cluster).is_err());
    cluster
        .served
        .insert(("apps/v1".into(), "Deployment".into()));
    assert_eq!(dependencies::check(&read, &needs, &cluster), Ok(()));
}

#[test]
fn a_cel_constraint_is_evaluated_over_one_installed_bundle_at_a_time() {
    // OLM's own example shape: a version of a package, compared with
    // semver_compare over the bundle's properties.
    let needs = "dependencies:
- type: olm.constraint
  value:
    failureMessage: needs etcd 0.9.4 or later
    cel:
      rule: 'properties.exists(p, p.type == \"olm.package\" && p.value.packageName == \"etcd\" && semver_compare(p.value.version, \"0.9.4\") >= 0)'
";
    let dir = dependent("cel-user", needs);
    let why = check(dir.path(), Vec::new()).unwrap_err();
    assert!(
        why.contains("is not met: needs etcd 0.9.4 or later"),
        "{why}"
    );
    assert_eq!(check(dir.path(), vec![etcd_installed()]), Ok(()));
    let mut old = etcd_installed();
    old.properties[0].value = json!({ "packageName": "etcd", "version": "0.9.2" });
    assert!(check(dir.path(), vec![old]).is_err());
}

#[test]
fn an_all_constraint_needs_one_bundle_to_meet_every_part() {
    // etcd provides the API, another package is the version: no single
    // bundle is both, so `all` is not met (OLM's reading, not "each part by
    // someone").
    let needs = "dependencies:
- type: olm.constraint
  value:
    all:
      constraints:
      - gvk: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}
      - package: {packageName: other, versionRange: '>=1.0.0'}
";
    let dir = dependent("all-user", needs);
    let other = InstalledContent {
        instance: "other".into(),
        bundle: "other-v1".into(),
        properties: vec![BundleProperty {
            type_: "olm.package".into(),
            value: json!({ "packageName": "other", "version": "1.0.0" }),
        }],
    };
    let why = check(dir.path(), vec![etcd_installed(), other]).unwrap_err();
    assert!(why.contains("olm.constraint all of"), "{why}");
}

#[test]
fn a_malformed_dependency_is_named_by_file_and_field() {
    let bad = dependent(
        "bad",
        "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: 'not a range'}\n- type: olm.constraint\n  value: {cel: {rule: 'properties.exists('}}\n",
    );
    let read = bundle::read(bad.path(), 4 << 20).unwrap();
    let problems = dependencies::needs(&read).unwrap_err();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("metadata/dependencies.yaml: dependencies[0]: value.version"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("dependencies[1]: value.cel.rule"),
        "{problems:?}"
    );
}

#[tokio::test]
async fn on_the_cluster_a_bundle_waits_for_what_it_needs_and_installs_once_it_is_there() {
    let scope = Scope::new("registry-v1-deps").await;
    install_crds(&scope.client).await.unwrap();
    // eclipse-che's CheCluster CRD is a 2 MB file.
    let parameters = json!({ "approval": "AllowAll", "maxObjectSize": "4Mi" });
    run_provisioner(&scope, parameters).await;
    let instances: Api<Instance> = Api::all(scope.client.clone());

    // eclipse-che: devworkspace-operator is nowhere; nothing is applied.
    let che = push(&scope, &eclipse_che(), "eclipse-che").await;
    instances
        .create(&PostParams::default(), &instance(&scope, "che", &che))
        .await
        .unwrap();
    let waiting = wait_for(&instances, &scope.name("che"), "che waits", |i| {
        reason_is(i, ConditionType::Installed, "DependenciesMissing")
    })
    .await;
    let message = &waiting.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("ClusterServiceVersion eclipse-che.v7.121.0 needs what is not installed")
            && message.contains("package devworkspace-operator (>=0.11.0)")
            && message.contains("nothing is applied until what it needs is installed"),
        "{message}"
    );
    assert!(condition_is(&waiting, ConditionType::Unpacked, "True"));
    assert_readable_messages(&waiting);
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(
        crds.get_opt("checlusters.org.eclipse.che")
            .await
            .unwrap()
            .is_none(),
        "nothing of eclipse-che is applied"
    );

    // etcd installed: its Bundle records what it provides.
    let etcd = push(&scope, &pakket_testkit::data("bundles/etcd/0.9.4"), "etcd").await;
    instances
        .create(&PostParams::default(), &instance(&scope, "etcd", &etcd))
        .await
        .unwrap();
    wait_for(&instances, &scope.name("etcd"), "etcd installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let recorded = pakket_testkit::bundle_status(&scope.client, &scope.name("etcd-bundle"))
        .await
        .expect("the Bundle's status is recorded")
        .properties;
    assert!(
        recorded.iter().any(|p| p.type_ == "olm.package"
            && p.value == json!({ "packageName": "etcd", "version": "0.9.4" })),
        "{recorded:?}"
    );
    assert!(
        recorded.iter().any(|p| p.type_ == "olm.gvk"
            && p.value["kind"] == "EtcdCluster"
            && p.value["version"] == "v1beta2"),
        "{recorded:?}"
    );

    // What needs etcd installs; what needs a newer one waits, saying why.
    let needs_etcd = dependent("dependent", NEEDS_ETCD);
    let needs_etcd = push(&scope, needs_etcd.path(), "dependent").await;
    instances
        .create(
            &PostParams::default(),
            &instance(&scope, "dependent", &needs_etcd),
        )
        .await
        .unwrap();
    wait_for(
        &instances,
        &scope.name("dependent"),
        "the dependent installs",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    let needs_newer = dependent("newer", NEEDS_NEWER_ETCD);
    let needs_newer = push(&scope, needs_newer.path(), "newer").await;
    instances
        .create(
            &PostParams::default(),
            &instance(&scope, "newer", &needs_newer),
        )
        .await
        .unwrap();
    let waiting = wait_for(&instances, &scope.name("newer"), "newer waits", |i| {
        reason_is(i, ConditionType::Installed, "DependenciesMissing")
    })
    .await;
    let message = &waiting.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("package etcd (>=1.0.0)") && message.contains("0.9.4"),
        "the installed etcd is named with why it does not fit: {message}"
    );

    // Uninstalled while this test's provisioner runs: etcd's CRDs are
    // cluster-wide, and other tests install etcd too.
    for name in ["newer", "dependent", "che", "etcd"] {
        instances
            .delete(&scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("every Instance is gone, with etcd's CRDs", || async {
        instances
            .list(&ListParams::default().labels(&scope.selector()))
            .await
            .unwrap()
            .items
            .is_empty()
            && crds
                .get_opt("etcdclusters.etcd.database.coreos.com")
                .await
                .unwrap()
                .is_none()
    })
    .await;
    scope.cleanup().await;
}
