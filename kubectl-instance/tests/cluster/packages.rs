//! `kubectl instance why clusterpackage/NAME` and `why
//! package/NAMESPACE/NAME` on real package objects. No package provisioner
//! runs: the test writes the statuses it would (a dependency installed for
//! a Package, the PackageInfo whose package file says so).

use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_package::api::{
    ClusterPackage, ClusterPackageSpec, Package, PackageInfo, PackageInfoSpec, PackageInfoTemplate,
    PackageSpec,
};
use pakket_testkit::Scope;
use serde_json::json;

use crate::support::plugin;

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-11-26T00:00:00Z"})
}

#[tokio::test]
async fn why_a_package_names_its_version_its_dependents_and_the_next_step() {
    let scope = Scope::new("why-package").await;
    pakket_testkit::apply_crds(&scope.client, pakket_package::crd::all())
        .await
        .unwrap();
    let patch = PatchParams::default();
    // The dependent's package file (as the PackageInfo controller stores
    // it) needs cloudnative-pg 1.24.x.
    let infos: Api<PackageInfo> = Api::all(scope.client.clone());
    let info_name = scope.name("tool-info");
    let mut info = PackageInfo::new(
        &info_name,
        PackageInfoSpec {
            name: "tool".into(),
            version: Some("v1.0.0".into()),
            repository_name: None,
        },
    );
    info.metadata.labels = Some(scope.labels());
    infos.create(&PostParams::default(), &info).await.unwrap();
    infos
        .patch_status(
            &info_name,
            &patch,
            &Patch::Merge(json!({"status": {"manifest": {
                "name": "tool",
                "dependencies": [{"name": "cloudnative-pg", "version": "1.24.x"}],
            }}})),
        )
        .await
        .unwrap();
    // The dependency, installed for it.
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let cnpg = scope.name("cnpg");
    let mut dependency = ClusterPackage::new(
        &cnpg,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: "cloudnative-pg".into(),
                version: Some("v1.24.1+1".into()),
                repository_name: None,
            },
            values: Default::default(),
            suspend: false,
        },
    );
    dependency.metadata.labels = Some(scope.labels());
    dependency.metadata.annotations = Some(
        [(
            pakket_package::api::INSTALLED_AS_DEPENDENCY_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]
        .into(),
    );
    cluster_packages
        .create(&PostParams::default(), &dependency)
        .await
        .unwrap();
    cluster_packages
        .patch_status(
            &cnpg,
            &patch,
            &Patch::Merge(json!({"status": {"version": "v1.24.1+1",
                "conditions": [condition("Ready", "True", "InstallationSucceeded", "installed")]}})),
        )
        .await
        .unwrap();
    // The dependent, failing on a value.
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let mut tool = Package::new(
        "tool",
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "tool".into(),
                version: None,
                repository_name: None,
            },
            values: Default::default(),
            suspend: false,
        },
    );
    tool.metadata.labels = Some(scope.labels());
    packages
        .create(&PostParams::default(), &tool)
        .await
        .unwrap();
    packages
        .patch_status(
            "tool",
            &patch,
            &Patch::Merge(json!({"status": {
                "version": "v1.0.0",
                "ownedPackageInfos": [info_name],
                "dependencies": [cnpg],
                "conditions": [
                    condition("Ready", "False", "ValueConfigurationInvalid", "spec.values.mode: \"fast\" is not one of the options: safe, slow"),
                    condition("Failed", "True", "ValueConfigurationInvalid", "spec.values.mode: \"fast\" is not one of the options: safe, slow"),
                ],
            }})),
        )
        .await
        .unwrap();

    let run = plugin("admin", &["why", &format!("clusterpackage/{cnpg}")]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with(&format!("ClusterPackage {cnpg}: installed at v1.24.1+1")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("installed as a dependency"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("Package {}/tool (needs 1.24.x)", scope.namespace)),
        "the dependent, from its package file: {}",
        run.stdout
    );

    let run = plugin(
        "admin",
        &[
            "why",
            &format!("package/{}/tool", scope.namespace),
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let diagnosis: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(diagnosis["summary"], "failed (ValueConfigurationInvalid)");
    assert_eq!(diagnosis["next"], "fix spec.values as the message says");
    assert!(
        diagnosis["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("latestVersion")),
        "{diagnosis}"
    );

    // Someone who may not read packages is told so, in words.
    let run = plugin("alice", &["why", &format!("clusterpackage/{cnpg}")]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("alice"), "{run:?}");

    cluster_packages
        .delete(&cnpg, &Default::default())
        .await
        .unwrap();
    infos.delete(&info_name, &Default::default()).await.unwrap();
    scope.cleanup().await;
}
