//! `kubectl instance why clusterpackage/NAME` and `why
//! package/NAMESPACE/NAME` on real package objects, and `graph PACKAGE
//! --repository-url | --package-repository` on the real Glasskube
//! repository (../shared/data/glasskube-packages, glasskube/packages at
//! 3352e05d, unedited) served over loopback HTTPS. No package provisioner
//! runs: the test writes the statuses it would (a dependency installed for
//! a Package, the PackageInfo whose package file says so).

use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_packages_api::{
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
    pakket_testkit::apply_crds(&scope.client, pakket_packages_api::crd::all())
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
            pakket_packages_api::INSTALLED_AS_DEPENDENCY_ANNOTATION.to_owned(),
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

/// Serves the real repository's files, unedited.
fn serve_the_real_repository() -> pakket_testkit::https::HttpsServer {
    use axum::extract::Path;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    async fn file(Path(path): Path<String>) -> axum::response::Response {
        if path
            .split('/')
            .any(|segment| segment == ".." || segment.is_empty())
        {
            return StatusCode::BAD_REQUEST.into_response();
        }
        match std::fs::read(pakket_testkit::data("glasskube-packages/packages").join(path)) {
            Ok(bytes) => bytes.into_response(),
            Err(_) => StatusCode::NOT_FOUND.into_response(),
        }
    }
    pakket_testkit::https::HttpsServer::start(
        axum::Router::new().route("/packages/{*path}", axum::routing::get(file)),
    )
}

#[tokio::test]
async fn graph_shows_a_packages_versions_from_its_repository_and_who_runs_them() {
    let scope = Scope::new("graph-package").await;
    pakket_testkit::apply_crds(&scope.client, pakket_packages_api::crd::all())
        .await
        .unwrap();
    let server = serve_the_real_repository();
    let ca = scope.path("repository-ca.pem");
    std::fs::write(&ca, &server.ca_pem).unwrap();
    let url = server.url("packages/");
    let ca_arg = ca.display().to_string();

    // No cluster needed: the URL and its CA.
    let run = plugin(
        "admin",
        &[
            "graph",
            "kubernetes-dashboard",
            "--repository-url",
            &url,
            "--repository-ca",
            &ca_arg,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].contains("2 versions, newest first"),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].starts_with("v2.7.0+2")
            && lines[2].contains("latest")
            && lines[2].contains("helm chart kubernetes-dashboard 6.0.8 + manifests"),
        "the newest is the chart, and latest: {}",
        run.stdout
    );
    assert!(
        lines[3].starts_with("v2.7.0+1")
            && lines[3].contains("manifests")
            && !lines[3].contains("latest"),
        "{}",
        run.stdout
    );

    // From the cluster's PackageRepository, with who runs which version.
    let repositories: Api<pakket_packages_api::PackageRepository> = Api::all(scope.client.clone());
    let repository_name = scope.name("glasskube");
    let mut repository = pakket_packages_api::PackageRepository::new(
        &repository_name,
        pakket_packages_api::PackageRepositorySpec {
            url: url.clone(),
            auth: None,
        },
    );
    repository.metadata.labels = Some(scope.labels());
    repositories
        .create(&PostParams::default(), &repository)
        .await
        .unwrap();
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let name = scope.name("tracecat");
    let mut tracecat = ClusterPackage::new(
        &name,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: "tracecat".into(),
                version: Some("v0.10.1+2".into()),
                repository_name: Some(repository_name.clone()),
            },
            values: Default::default(),
            suspend: false,
        },
    );
    tracecat.metadata.labels = Some(scope.labels());
    cluster_packages
        .create(&PostParams::default(), &tracecat)
        .await
        .unwrap();
    cluster_packages
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"version": "v0.10.1+2"}})),
        )
        .await
        .unwrap();
    let run = plugin(
        "admin",
        &[
            "graph",
            "tracecat",
            "--package-repository",
            &repository_name,
            "--repository-ca",
            &ca_arg,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|line| line.starts_with("v0.10.1+2"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        row.contains(&format!("ClusterPackage {name}")),
        "{}",
        run.stdout
    );
    // Its dependency, as its package file writes it: the one range of the
    // real repository.
    assert!(row.contains("cloudnative-pg 1.x.x"), "{}", run.stdout);
    let dot = plugin(
        "admin",
        &[
            "graph",
            "tracecat",
            "--package-repository",
            &repository_name,
            "--repository-ca",
            &ca_arg,
            "--format",
            "dot",
        ],
    )
    .await;
    assert_eq!(dot.code, 0, "{dot:?}");
    assert!(
        dot.stdout.contains("\"v0.10.1+2\" -> \"v0.12.3+1\";"),
        "{}",
        dot.stdout
    );

    // A repository this machine cannot reach says so, naming the URL.
    let run = plugin(
        "admin",
        &[
            "graph",
            "tracecat",
            "--repository-url",
            "https://127.0.0.1:1/packages/",
        ],
    )
    .await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("127.0.0.1:1"), "{run:?}");

    cluster_packages
        .delete(&name, &Default::default())
        .await
        .unwrap();
    repositories
        .delete(&repository_name, &Default::default())
        .await
        .unwrap();
    let _ = std::fs::remove_file(&ca);
    scope.cleanup().await;
}
