//! Glasskube packages from the real repository, on the real control plane
//! with a kwok node: pinned and unpinned ClusterPackages of cloudnative-pg
//! (its release manifest a stand-in, see `support`), and a namespaced
//! Package of the real postgresql package with its values.
//!
//! Data: ../shared/data/glasskube-packages (glasskube/packages at
//! 3352e05d, unedited), served over loopback HTTPS by `support`.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::Instance;
use pakket_packages_api::{
    ClusterPackage, ClusterPackageSpec, Package, PackageInfo, PackageInfoTemplate, PackageSpec,
    ValueConfiguration,
};
use pakket_testkit::{Scope, eventually};

/// cloudnative-pg's CRD and namespace are cluster-wide: the tests that
/// install it take turns.
static CNPG: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CNPG_CRD: &str = "clusters.postgresql.cnpg.io";

fn cluster_package(
    scope: &Scope,
    suffix: &str,
    package: &str,
    version: Option<&str>,
) -> ClusterPackage {
    let mut object = ClusterPackage::new(
        &scope.name(suffix),
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: package.into(),
                version: version.map(str::to_owned),
                repository_name: Some(scope.name("glasskube")),
            },
            values: BTreeMap::new(),
            suspend: false,
        },
    );
    object.metadata.labels = Some(scope.labels());
    object
}

/// Waits until `check` holds for ClusterPackage `name`; returns it.
async fn cluster_package_when(
    api: &Api<ClusterPackage>,
    name: &str,
    what: &str,
    check: impl Fn(&ClusterPackage) -> bool,
) -> ClusterPackage {
    for _ in 0..900 {
        if let Some(package) = api.get_opt(name).await.unwrap()
            && check(&package)
        {
            return package;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "{what} did not happen within 90 s: {:#?}",
        api.get(name).await.unwrap().status
    );
}

/// Waits until cloudnative-pg's namespace is gone, so the next test that
/// installs it does not find it terminating.
async fn cnpg_namespace_gone(scope: &Scope) {
    eventually("cnpg-system is gone", || async {
        Api::<Namespace>::all(scope.client.clone())
            .get_opt("cnpg-system")
            .await
            .unwrap()
            .is_none()
    })
    .await;
}

fn ready<T>(status: Option<&pakket_packages_api::PackageStatus>, _: T) -> bool {
    status.is_some_and(|s| {
        s.conditions.iter().any(|c| {
            c.type_ == "Ready" && c.status == "True" && c.reason == "InstallationSucceeded"
        })
    })
}

#[tokio::test]
async fn a_pinned_package_installs_from_the_repository_and_leaves_with_its_package() {
    let _turn = CNPG.lock().await;
    let (scope, _repository) = support::world("package-pinned").await;
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let created = std::time::Instant::now();
    packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "cnpg", "cloudnative-pg", Some("v1.25.0+1")),
        )
        .await
        .unwrap();
    let installed = cluster_package_when(
        &packages,
        &scope.name("cnpg"),
        "cloudnative-pg installed",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    println!(
        "ClusterPackage created → InstallationSucceeded (manifests package): {:.1} s",
        created.elapsed().as_secs_f64()
    );
    let status = installed.status.unwrap();
    assert_eq!(status.version.as_deref(), Some("v1.25.0+1"));
    // The repository says it answers, and what it offers.
    let repositories: Api<pakket_packages_api::PackageRepository> = Api::all(scope.client.clone());
    eventually("the repository's status", || async {
        repositories
            .get(&scope.name("glasskube"))
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Ready"
                        && c.reason == "SyncCompleted"
                        && c.message == "index.yaml lists 32 packages"
                })
            })
    })
    .await;
    // The PackageInfo holds the package file as the repository served it.
    let info_name = &status.owned_package_infos[0];
    let info = Api::<PackageInfo>::all(scope.client.clone())
        .get(info_name)
        .await
        .unwrap();
    let info_status = info.status.unwrap();
    assert_eq!(
        info_status.manifest.as_ref().unwrap()["name"],
        "cloudnative-pg"
    );
    assert!(
        info_status
            .resolved_url
            .clone()
            .unwrap()
            .ends_with("/packages/cloudnative-pg/v1.25.0+1/package.yaml")
    );
    // Read again (any change to the PackageInfo makes it look), the file
    // is as it was: UpToDate, and the time it was read stays.
    let infos = Api::<PackageInfo>::all(scope.client.clone());
    infos
        .patch(
            info_name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"metadata": {"annotations": {"test.pakket.dev/poke": "1"}}}),
            ),
        )
        .await
        .unwrap();
    eventually("a re-read finds the file unchanged", || async {
        infos.get(info_name).await.unwrap().status.is_some_and(|s| {
            s.last_update_timestamp == info_status.last_update_timestamp
                && s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True" && c.reason == "UpToDate")
        })
    })
    .await;
    // The Instance it became, its content pinned; its objects are there,
    // in the package's defaultNamespace, which came with it.
    let instance_name = status.instance.unwrap();
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let instance = instances.get(&instance_name).await.unwrap();
    let refs = instance.spec.bundle.spec.unwrap().refs;
    assert!(
        refs[0].ends_with("/package.yaml") && refs[1].ends_with("/cnpg-1.25.0.yaml"),
        "{refs:?}"
    );
    let pinned = instance
        .status
        .unwrap()
        .embedded_bundle
        .unwrap()
        .status
        .source
        .unwrap();
    assert!(pinned.digest.is_some_and(|d| d.starts_with("sha256:")));
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(crds.get_opt(CNPG_CRD).await.unwrap().is_some());
    let release = Api::<ConfigMap>::namespaced(scope.client.clone(), "cnpg-system")
        .get("cnpg-release")
        .await
        .unwrap();
    assert_eq!(release.data.unwrap()["version"], "1.25.0");

    // The package goes: its Instance, objects, namespace and PackageInfo too.
    packages
        .delete(&scope.name("cnpg"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the ClusterPackage is gone", || async {
        packages
            .get_opt(&scope.name("cnpg"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(instances.get_opt(&instance_name).await.unwrap().is_none());
    eventually("the CRD is gone", || async {
        crds.get_opt(CNPG_CRD).await.unwrap().is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    assert!(
        Api::<PackageInfo>::all(scope.client.clone())
            .get_opt(info_name)
            .await
            .unwrap()
            .is_none(),
        "the PackageInfo went with its package"
    );
    scope.cleanup().await;
}

#[tokio::test]
async fn an_unpinned_package_moves_when_the_repository_publishes_a_newer_version() {
    let _turn = CNPG.lock().await;
    let (scope, repository) = support::world("package-latest").await;
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "cnpg", "cloudnative-pg", None),
        )
        .await
        .unwrap();
    // The repository's latestVersion (v1.25.0+1, though newer ones are
    // listed: Glasskube's latest is what the repository says).
    let first = cluster_package_when(
        &packages,
        &scope.name("cnpg"),
        "the latest installed",
        |p| {
            ready(p.status.as_ref(), ())
                && p.status.as_ref().unwrap().version.as_deref() == Some("v1.25.0+1")
        },
    )
    .await;
    let old_info = first.status.unwrap().owned_package_infos[0].clone();
    repository.publish("cloudnative-pg", "v1.27.1+1");
    let published = std::time::Instant::now();
    cluster_package_when(&packages, &scope.name("cnpg"), "moved to v1.27.1+1", |p| {
        ready(p.status.as_ref(), ())
            && p.status.as_ref().unwrap().version.as_deref() == Some("v1.27.1+1")
    })
    .await;
    println!(
        "versions.yaml names a newer latestVersion → installed (update interval 1 s): {:.1} s",
        published.elapsed().as_secs_f64()
    );
    let release = Api::<ConfigMap>::namespaced(scope.client.clone(), "cnpg-system")
        .get("cnpg-release")
        .await
        .unwrap();
    assert_eq!(
        release.data.unwrap()["version"],
        "1.27.1",
        "the objects moved too"
    );
    eventually("the old PackageInfo is cleaned up", || async {
        Api::<PackageInfo>::all(scope.client.clone())
            .get_opt(&old_info)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    packages
        .delete(&scope.name("cnpg"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the ClusterPackage is gone", || async {
        packages
            .get_opt(&scope.name("cnpg"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_namespaced_package_gets_its_values_and_bad_values_install_nothing() {
    let _turn = CNPG.lock().await;
    let (scope, _repository) = support::world("package-values").await;
    // postgresql's Cluster needs cloudnative-pg's CRD.
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    cluster_packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "cnpg", "cloudnative-pg", Some("v1.25.0+1")),
        )
        .await
        .unwrap();
    cluster_package_when(
        &cluster_packages,
        &scope.name("cnpg"),
        "cloudnative-pg installed",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    pakket_testkit::capture(
        "clusterpackage-healthy",
        "clusterpackages.packages.pakket.dev",
        &scope.name("cnpg"),
        None,
    );
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let postgresql = |values: &[(&str, &str)]| {
        let mut object = Package::new(
            "db",
            PackageSpec {
                package_info: PackageInfoTemplate {
                    name: "postgresql".into(),
                    version: Some("v16.4.0+2".into()),
                    repository_name: Some(scope.name("glasskube")),
                },
                values: values
                    .iter()
                    .map(|(k, v)| {
                        (
                            (*k).to_owned(),
                            ValueConfiguration {
                                value: Some((*v).to_owned()),
                                value_from: None,
                            },
                        )
                    })
                    .collect(),
                suspend: false,
            },
        );
        object.metadata.labels = Some(scope.labels());
        object
    };
    // Bad values: the package says which, and no Instance is made.
    packages
        .create(
            &PostParams::default(),
            &postgresql(&[("instances", "many")]),
        )
        .await
        .unwrap();
    let instance_name = pakket_package::names::instance(Some(&scope.namespace), "db");
    eventually("the bad values are named", || async {
        packages.get("db").await.unwrap().status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Failed"
                    && c.reason == "ValueConfigurationInvalid"
                    && c.message
                        .contains("spec.values.instances: \"many\" is not a whole number")
                    && c.message.contains("spec.values.databaseName: required")
            })
        })
    })
    .await;
    pakket_testkit::capture(
        "package-degraded_values",
        "packages.packages.pakket.dev",
        "db",
        Some(&scope.namespace),
    );
    let instances: Api<Instance> = Api::all(scope.client.clone());
    assert!(instances.get_opt(&instance_name).await.unwrap().is_none());
    // Fixed: installed into the Package's namespace, the values patched in.
    packages
        .replace("db", &PostParams::default(), &{
            let mut fixed = postgresql(&[("instances", "2"), ("databaseName", "shop")]);
            fixed.metadata = packages.get("db").await.unwrap().metadata;
            fixed
        })
        .await
        .unwrap();
    eventually("postgresql installed", || async {
        ready(packages.get("db").await.unwrap().status.as_ref(), ())
    })
    .await;
    pakket_testkit::capture(
        "package-healthy",
        "packages.packages.pakket.dev",
        "db",
        Some(&scope.namespace),
    );
    let clusters = support::clusters(&scope, &scope.namespace);
    let cluster = clusters.get("cluster").await.unwrap();
    assert_eq!(cluster.data["spec"]["instances"], 2);
    assert_eq!(
        cluster.data["spec"]["bootstrap"]["initdb"]["database"],
        "shop"
    );
    assert_eq!(
        cluster.data["spec"]["storage"]["size"], "10Gi",
        "the definition's default"
    );

    packages
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::capture(
        "package-progressing_deleting",
        "packages.packages.pakket.dev",
        "db",
        Some(&scope.namespace),
    );
    eventually("the Package is gone", || async {
        packages.get_opt("db").await.unwrap().is_none()
    })
    .await;
    assert!(
        clusters.get_opt("cluster").await.unwrap().is_none(),
        "its Cluster went with it"
    );
    cluster_packages
        .delete(&scope.name("cnpg"), &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::capture(
        "clusterpackage-progressing_deleting",
        "clusterpackages.packages.pakket.dev",
        &scope.name("cnpg"),
        None,
    );
    eventually("cloudnative-pg is gone", || async {
        cluster_packages
            .get_opt(&scope.name("cnpg"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    scope.cleanup().await;
}

/// Package `name` of postgresql v16.4.0+2 in `namespace`, its database
/// named.
fn postgresql_in(scope: &Scope, namespace: &str, name: &str) -> Package {
    let mut object = Package::new(
        name,
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "postgresql".into(),
                version: Some("v16.4.0+2".into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: BTreeMap::from([(
                "databaseName".to_owned(),
                ValueConfiguration {
                    value: Some("app".into()),
                    value_from: None,
                },
            )]),
            suspend: false,
        },
    );
    object.metadata.namespace = Some(namespace.to_owned());
    object.metadata.labels = Some(scope.labels());
    object
}

/// [`postgresql_in`], its database name read from ConfigMap `settings`
/// (key `database`) in its namespace.
fn postgresql_reading_a_config_map(scope: &Scope, name: &str) -> Package {
    let mut object = postgresql_in(scope, &scope.namespace, name);
    object.spec.values.insert(
        "databaseName".into(),
        serde_json::from_value(serde_json::json!({
            "valueFrom": {"configMapRef": {"name": "settings", "key": "database"}}
        }))
        .unwrap(),
    );
    object
}

#[tokio::test]
async fn branch_no_range_and_d_is_missing_installs_d_pinned_in_latest_and_it_goes_with_its_last_dependent()
 {
    // Seed 000: P requires no version range of D, and D does not exist:
    // install D pinned in latest(D). Then D stays while any package
    // depends on it, and goes with the last.
    let _turn = CNPG.lock().await;
    let (scope, _repository) = support::world("package-dependency").await;
    let second = format!("{}-b", scope.namespace);
    let namespaces: Api<Namespace> = Api::all(scope.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                serde_json::json!({"metadata": {"name": second, "labels": scope.labels()}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let first_db: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let second_db: Api<Package> = Api::namespaced(scope.client.clone(), &second);
    first_db
        .create(
            &PostParams::default(),
            &postgresql_in(&scope, &scope.namespace, "db"),
        )
        .await
        .unwrap();
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let dependency = cluster_package_when(
        &cluster_packages,
        "cloudnative-pg",
        "the dependency installed",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    assert_eq!(
        dependency.annotations()[pakket_packages_api::INSTALLED_AS_DEPENDENCY_ANNOTATION],
        "true"
    );
    assert_eq!(
        dependency.spec.package_info.version.as_deref(),
        Some("v1.25.0+1"),
        "pinned at the repository's latestVersion"
    );
    eventually("postgresql installed after its dependency", || async {
        first_db
            .get("db")
            .await
            .unwrap()
            .status
            .is_some_and(|s| ready(Some(&s), ()) && s.dependencies == ["cloudnative-pg"])
    })
    .await;
    second_db
        .create(
            &PostParams::default(),
            &postgresql_in(&scope, &second, "db"),
        )
        .await
        .unwrap();
    eventually(
        "the second postgresql installed on the same dependency",
        || async { ready(second_db.get("db").await.unwrap().status.as_ref(), ()) },
    )
    .await;

    // The first goes: cloudnative-pg stays for the second.
    first_db
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the first Package is gone", || async {
        first_db.get_opt("db").await.unwrap().is_none()
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    let kept = cluster_packages.get("cloudnative-pg").await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "still needed by the second"
    );
    // The last goes: so does the dependency, its CRD with it.
    second_db
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the dependency is gone", || async {
        cluster_packages
            .get_opt("cloudnative-pg")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    eventually("its CRD is gone", || async {
        crds.get_opt(CNPG_CRD).await.unwrap().is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    let _ = namespaces.delete(&second, &DeleteParams::default()).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_namespace_owner_cannot_install_a_cluster_package_into_her_namespace() {
    // cloudnative-pg brings a CRD (cluster-wide): as a Package in a
    // namespace it is refused, and nothing is installed.
    let (scope, _repository) = support::world("package-scope").await;
    // A repository that does not answer says so, naming its URL.
    let broken_url = "https://127.0.0.1:9/packages/";
    let mut broken = pakket_packages_api::PackageRepository::new(
        &scope.name("broken"),
        pakket_packages_api::PackageRepositorySpec {
            url: broken_url.into(),
            auth: None,
        },
    );
    broken.metadata.labels = Some(scope.labels());
    let repositories: Api<pakket_packages_api::PackageRepository> = Api::all(scope.client.clone());
    repositories
        .create(&PostParams::default(), &broken)
        .await
        .unwrap();
    eventually("the broken repository says why", || async {
        repositories
            .get(&scope.name("broken"))
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.status == "True"
                        && c.reason == "SyncFailed"
                        && c.message
                            .contains("https://127.0.0.1:9/packages/index.yaml")
                })
            })
    })
    .await;
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let mut object = Package::new(
        "cnpg",
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "cloudnative-pg".into(),
                version: Some("v1.25.0+1".into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: BTreeMap::new(),
            suspend: false,
        },
    );
    object.metadata.labels = Some(scope.labels());
    packages
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    eventually("the Package is refused", || async {
        packages.get("cnpg").await.unwrap().status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Failed"
                    && c.status == "True"
                    && c.reason == "UnsupportedFormat"
                    && c.message.contains("installs as a ClusterPackage")
            })
        })
    })
    .await;
    let instance = pakket_package::names::instance(Some(&scope.namespace), "cnpg");
    assert!(
        Api::<Instance>::all(scope.client.clone())
            .get_opt(&instance)
            .await
            .unwrap()
            .is_none()
    );
    packages
        .delete("cnpg", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Package is gone", || async {
        packages.get_opt("cnpg").await.unwrap().is_none()
    })
    .await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_packages_author_is_judged_by_her_own_rights_not_the_provisioners() {
    // The class approves by UserPermission. Mallory may write Packages and
    // nothing else: her postgresql waits for a person, and no Cluster is
    // made. Carol may also write postgresql's Clusters: hers installs by
    // itself. Neither can make the Instance claim someone else asked.
    let _turn = CNPG.lock().await;
    let (scope, _repository, hooks) =
        support::world_shipped("package-requester", "UserPermission").await;
    // The admin installs cloudnative-pg (its CRD); she may do anything, so
    // UserPermission lets it in.
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    cluster_packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "cnpg", "cloudnative-pg", Some("v1.25.0+1")),
        )
        .await
        .unwrap();
    cluster_package_when(
        &cluster_packages,
        &scope.name("cnpg"),
        "cloudnative-pg installed",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    let packages_rule = serde_json::json!({"apiGroups": ["packages.pakket.dev"], "resources": ["packages"],
        "verbs": ["get", "list", "watch", "create", "delete"]});
    support::grant(&scope, "mallory", serde_json::json!([packages_rule])).await;
    let as_mallory: Api<Package> =
        Api::namespaced(scope.cluster.client_as("mallory").await, &scope.namespace);
    // A ConfigMap mallory may not read: her Package cannot read it for her.
    let settings: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "settings", "labels": scope.labels()},
            "data": {"database": "orders"},
        }))
        .unwrap();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        scope.client.clone(),
        &scope.namespace,
    )
    .create(&PostParams::default(), &settings)
    .await
    .unwrap();
    eventually("mallory may write Packages", || async {
        as_mallory
            .create(
                &PostParams::default(),
                &postgresql_reading_a_config_map(&scope, "leak"),
            )
            .await
            .is_ok()
    })
    .await;
    let admin_packages = Api::<Package>::namespaced(scope.client.clone(), &scope.namespace);
    eventually("the read is refused, naming her", || async {
        admin_packages
            .get("leak")
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.reason == "ValueConfigurationInvalid"
                        && c.message.contains("mallory may not get configmaps")
                })
            })
    })
    .await;
    let leak = pakket_package::names::instance(Some(&scope.namespace), "leak");
    assert!(
        Api::<Instance>::all(scope.client.clone())
            .get_opt(&leak)
            .await
            .unwrap()
            .is_none(),
        "nothing made"
    );
    as_mallory
        .delete("leak", &DeleteParams::default())
        .await
        .unwrap();
    eventually("mallory may write Packages", || async {
        as_mallory
            .create(
                &PostParams::default(),
                &postgresql_in(&scope, &scope.namespace, "db"),
            )
            .await
            .is_ok()
    })
    .await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let instance_name = pakket_package::names::instance(Some(&scope.namespace), "db");
    let waiting = pakket_testkit::wait_for_instance(
        &instances,
        &instance_name,
        "mallory's waits for a person",
        |i| {
            // Past the first "not evaluated yet": the policy has answered.
            i.condition(pakket_api::ConditionType::Approved)
                .is_some_and(|c| {
                    c.reason == "ApprovalPending" && c.message.contains("UserPermission")
                })
        },
    )
    .await;
    let message = &waiting
        .condition(pakket_api::ConditionType::Approved)
        .unwrap()
        .message;
    assert!(
        message.contains("mallory"),
        "the requester is the author: {message}"
    );
    let requester = pakket_api::CreatorRecord::from_annotation(
        &waiting.metadata.annotations.as_ref().unwrap()[pakket_api::LAST_CHANGED_BY_ANNOTATION],
    )
    .unwrap();
    assert_eq!(requester.username, "mallory");
    let clusters = support::clusters(&scope, &scope.namespace);
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(
        clusters.get_opt("cluster").await.unwrap().is_none(),
        "nothing was made for mallory"
    );
    let pending = Api::<Package>::namespaced(scope.client.clone(), &scope.namespace)
        .get("db")
        .await
        .unwrap();
    assert!(
        pending
            .status
            .unwrap()
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.reason == "Pending"),
        "the Package says it waits"
    );
    pakket_testkit::capture(
        "package-progressing_approval_pending",
        "packages.packages.pakket.dev",
        "db",
        Some(&scope.namespace),
    );
    as_mallory
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("mallory's Package is gone", || async {
        as_mallory.get_opt("db").await.ok().flatten().is_none()
    })
    .await;

    // Carol may write Clusters here too: hers goes in by itself.
    support::grant(
        &scope,
        "carol",
        serde_json::json!([packages_rule, {"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    )
    .await;
    let as_carol: Api<Package> =
        Api::namespaced(scope.cluster.client_as("carol").await, &scope.namespace);
    eventually("carol may write Packages", || async {
        as_carol
            .create(
                &PostParams::default(),
                &postgresql_reading_a_config_map(&scope, "db"),
            )
            .await
            .is_ok()
    })
    .await;
    let approved =
        pakket_testkit::wait_for_instance(&instances, &instance_name, "carol's installs", |i| {
            pakket_testkit::condition_is(i, pakket_api::ConditionType::Installed, "True")
        })
        .await;
    assert_eq!(
        approved
            .condition(pakket_api::ConditionType::Approved)
            .unwrap()
            .reason,
        "ApprovedByPolicy"
    );
    let cluster = clusters.get("cluster").await.unwrap();
    assert_eq!(
        cluster.data["spec"]["bootstrap"]["initdb"]["database"], "orders",
        "read from the ConfigMap she may read"
    );
    as_carol
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("carol's Package is gone", || async {
        Api::<Package>::namespaced(scope.client.clone(), &scope.namespace)
            .get_opt("db")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    cluster_packages
        .delete(&scope.name("cnpg"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("cloudnative-pg is gone", || async {
        cluster_packages
            .get_opt(&scope.name("cnpg"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    support::revoke(&scope, "mallory").await;
    support::revoke(&scope, "carol").await;
    hooks.stop().await.unwrap();
    scope.cleanup().await;
}

#[tokio::test]
async fn a_default_namespace_someone_else_made_is_not_used_until_its_owner_offers_it() {
    let _turn = CNPG.lock().await;
    let (scope, _repository) = support::world("package-taken-namespace").await;
    cnpg_namespace_gone(&scope).await;
    // cloudnative-pg's defaultNamespace, made beforehand by someone else:
    // whoever made it could read what the package would put there.
    let namespaces: Api<Namespace> = Api::all(scope.client.clone());
    let mut taken = Namespace::default();
    taken.metadata.name = Some("cnpg-system".into());
    taken.metadata.labels = Some(scope.labels());
    namespaces
        .create(&PostParams::default(), &taken)
        .await
        .unwrap();
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "cnpg", "cloudnative-pg", Some("v1.25.0+1")),
        )
        .await
        .unwrap();
    let waiting = cluster_package_when(
        &packages,
        &scope.name("cnpg"),
        "the package waits, naming the namespace",
        |p| {
            p.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Ready"
                        && c.status == "False"
                        && c.message.contains("Namespace/cnpg-system")
                })
            })
        },
    )
    .await;
    let message = waiting
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap()
        .message
        .clone();
    assert!(
        message.contains("exists and is not managed by Pakket")
            && message.contains("core.pakket.dev/adopt-into="),
        "says how its owner offers it: {message}"
    );
    // Nothing of the package was written.
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(crds.get_opt(CNPG_CRD).await.unwrap().is_none());
    let namespace = namespaces.get("cnpg-system").await.unwrap();
    assert!(
        !namespace
            .labels()
            .contains_key(pakket_api::ownership::INSTANCE_UID_LABEL),
        "not taken over"
    );

    // Its owner offers it to the package's Instance: it installs.
    let instance = waiting.status.unwrap().instance.unwrap();
    namespaces
        .patch(
            "cnpg-system",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"annotations": {
                pakket_api::ownership::ADOPT_ANNOTATION: instance,
            }}})),
        )
        .await
        .unwrap();
    cluster_package_when(
        &packages,
        &scope.name("cnpg"),
        "installed once offered",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    assert!(crds.get_opt(CNPG_CRD).await.unwrap().is_some());
    // Adopted, it is the package's: it goes with it.
    packages
        .delete(&scope.name("cnpg"), &DeleteParams::default())
        .await
        .unwrap();
    cnpg_namespace_gone(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_package_others_depend_on_is_refused_deletion_and_kept_while_the_webhook_is_down() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, hooks) = support::world_shipped("package-in-use", "AllowAll").await;
    let databases: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    databases
        .create(
            &PostParams::default(),
            &postgresql_in(&scope, &scope.namespace, "db"),
        )
        .await
        .unwrap();
    eventually("postgresql and its dependency installed", || async {
        ready(databases.get("db").await.unwrap().status.as_ref(), ())
    })
    .await;
    // Refused, naming who needs it; nothing changes.
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let refused = cluster_packages
        .delete("cloudnative-pg", &DeleteParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(status.code, 403);
    assert!(
        status
            .message
            .contains(&format!("is needed by Package {}/db", scope.namespace)),
        "{}",
        status.message
    );
    assert!(
        cluster_packages
            .get("cloudnative-pg")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );

    // The webhooks down (they fail open for this): the delete goes
    // through, and the provisioner keeps the package, saying why.
    hooks.stop().await.unwrap();
    cluster_packages
        .delete("cloudnative-pg", &DeleteParams::default())
        .await
        .unwrap();
    eventually("kept, and saying why", || async {
        cluster_packages
            .get("cloudnative-pg")
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.message
                            .starts_with("deleted, but kept: ClusterPackage cloudnative-pg")
                })
            })
    })
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(
        crds.get_opt(CNPG_CRD).await.unwrap().is_some(),
        "its CRD stays"
    );
    assert!(ready(
        databases.get("db").await.unwrap().status.as_ref(),
        ()
    ));
    // Its dependent goes: so does it.
    databases
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the dependency is gone", || async {
        cluster_packages
            .get_opt("cloudnative-pg")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    eventually("its CRD is gone", || async {
        crds.get_opt(CNPG_CRD).await.unwrap().is_none()
    })
    .await;
    cnpg_namespace_gone(&scope).await;
    scope.cleanup().await;
}

/// Seed 000's tree on the cluster: cloudnative-pg installed at
/// `installed` (as ClusterPackage `<scope>-cnpg`) or not at all, then the
/// test's packages, each ClusterPackage `<scope>-<package>`. Returns the
/// scope, its repository and the ClusterPackages' API.
async fn tree_world(
    suffix: &str,
    installed: Option<&str>,
    packages: &[(&str, Option<&str>)],
) -> (Scope, support::Repository, Api<ClusterPackage>) {
    let (scope, repository) = support::world(suffix).await;
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    if let Some(version) = installed {
        cluster_packages
            .create(
                &PostParams::default(),
                &cluster_package(&scope, "cnpg", "cloudnative-pg", Some(version)),
            )
            .await
            .unwrap();
        cluster_package_when(
            &cluster_packages,
            &scope.name("cnpg"),
            "cloudnative-pg installed",
            |p| ready(p.status.as_ref(), ()),
        )
        .await;
    }
    for (package, range) in packages {
        // Each package in a namespace of its own, made with it: a package
        // never uses a namespace it did not make (the test's own included).
        repository.write_package(package, &scope.name(package), &[("cloudnative-pg", *range)]);
    }
    (scope, repository, cluster_packages)
}

/// Creates ClusterPackage `<scope>-<package>` and waits until its `Ready`
/// or `Failed` condition is true; returns that condition's message.
async fn outcome_of(
    scope: &Scope,
    packages: &Api<ClusterPackage>,
    package: &str,
) -> (String, String) {
    packages
        .create(
            &PostParams::default(),
            &cluster_package(scope, package, package, Some("v1.0.0")),
        )
        .await
        .unwrap();
    let done = cluster_package_when(packages, &scope.name(package), "a decision", |p| {
        p.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| (c.type_ == "Ready" || c.type_ == "Failed") && c.status == "True")
        })
    })
    .await;
    let condition = done
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| (c.type_ == "Ready" || c.type_ == "Failed") && c.status == "True")
        .unwrap();
    (condition.type_, condition.message)
}

/// Deletes every ClusterPackage of the scope, dependents first, and waits
/// for cloudnative-pg to be gone.
async fn tree_cleanup(scope: Scope, packages: &Api<ClusterPackage>, names: &[&str]) {
    for name in names {
        let _ = packages
            .delete(&scope.name(name), &DeleteParams::default())
            .await;
        eventually("a ClusterPackage is gone", || async {
            packages.get_opt(&scope.name(name)).await.unwrap().is_none()
        })
        .await;
    }
    // One installed by hand is never removed for lack of dependents.
    if let Some(by_hand) = packages.get_opt(&scope.name("cnpg")).await.unwrap() {
        assert!(
            by_hand.metadata.deletion_timestamp.is_none(),
            "a hand-installed package stays"
        );
    }
    for name in [scope.name("cnpg"), "cloudnative-pg".to_owned()] {
        let _ = packages.delete(&name, &DeleteParams::default()).await;
        eventually("cloudnative-pg is gone", || async {
            packages.get_opt(&name).await.unwrap().is_none()
        })
        .await;
    }
    cnpg_namespace_gone(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn branch_p_requires_a_range_and_d_is_missing_installs_d_pinned_in_max_available() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) =
        tree_world("package-branch-install", None, &[("tool", Some("1.24.x"))]).await;
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Ready", "{message}");
    let dependency = packages.get("cloudnative-pg").await.unwrap();
    assert_eq!(
        dependency.spec.package_info.version.as_deref(),
        Some("v1.24.1+1"),
        "the highest 1.24"
    );
    tree_cleanup(scope, &packages, &["tool"]).await;
}

#[tokio::test]
async fn branch_p_requires_a_range_and_dv_is_inside_pdv_is_fulfilled() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-inside",
        Some("v1.25.0+1"),
        &[("tool", Some(">=1.25.0"))],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Ready", "{message}");
    let status = packages
        .get(&scope.name("tool"))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(
        status.dependencies,
        [scope.name("cnpg")],
        "the installed one serves"
    );
    assert!(
        packages.get_opt("cloudnative-pg").await.unwrap().is_none(),
        "nothing else installed"
    );
    tree_cleanup(scope, &packages, &["tool"]).await;
}

#[tokio::test]
async fn branch_dv_below_pdv_is_a_conflict_resolvable_by_updating_d() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-below",
        Some("v1.25.0+1"),
        &[("tool", Some(">=1.26.0"))],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Failed");
    assert!(
        message.contains("dependency conflict, resolvable by updating to v1.27.1+1")
            && message.contains(&format!(
                "update ClusterPackage {} to v1.27.1+1",
                scope.name("cnpg")
            )),
        "{message}"
    );
    let installed = packages.get(&scope.name("cnpg")).await.unwrap();
    assert_eq!(
        installed.status.unwrap().version.as_deref(),
        Some("v1.25.0+1"),
        "never changed by itself"
    );
    tree_cleanup(scope, &packages, &["tool"]).await;
}

#[tokio::test]
async fn branch_dv_above_pdv_is_a_conflict_not_resolvable() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-above",
        Some("v1.25.0+1"),
        &[("tool", Some("<1.25.0"))],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Failed");
    assert!(
        message.contains("dependency conflict, not resolvable: tool does not support using cloudnative-pg in 1.25.0+1 yet"),
        "{message}"
    );
    tree_cleanup(scope, &packages, &["tool"]).await;
}

#[tokio::test]
async fn branch_others_require_ranges_and_dv_below_pdv_might_be_resolvable() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-others",
        Some("v1.24.1+1"),
        &[("older", Some(">=1.24.0")), ("newer", Some(">=1.25.0"))],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "older").await;
    assert_eq!(kind, "Ready", "{message}");
    let (kind, message) = outcome_of(&scope, &packages, "newer").await;
    assert_eq!(kind, "Failed");
    assert!(
        message.contains("dependency conflict, might be resolvable")
            && message.contains("v1.27.1+1 is available there"),
        "{message}"
    );
    tree_cleanup(scope, &packages, &["newer", "older"]).await;
}

/// Both `tool` and another package `first` are created in turn; both
/// must be Ready, served by the installed cloudnative-pg, and nothing else
/// is installed.
async fn both_fulfilled(suffix: &str, installed: &str, first: Option<&str>, tool: Option<&str>) {
    let (scope, _repository, packages) =
        tree_world(suffix, Some(installed), &[("first", first), ("tool", tool)]).await;
    for package in ["first", "tool"] {
        let (kind, message) = outcome_of(&scope, &packages, package).await;
        assert_eq!(kind, "Ready", "{package}: {message}");
        let status = packages
            .get(&scope.name(package))
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(
            status.dependencies,
            [scope.name("cnpg")],
            "{package}: the installed one serves"
        );
    }
    assert!(
        packages.get_opt("cloudnative-pg").await.unwrap().is_none(),
        "nothing else installed"
    );
    tree_cleanup(scope, &packages, &["tool", "first"]).await;
}

#[tokio::test]
async fn branch_no_range_and_d_exists_with_no_other_dependent_is_fulfilled() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-exists",
        Some("v1.24.1+1"),
        &[("tool", None)],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Ready", "{message}");
    let installed = packages.get(&scope.name("cnpg")).await.unwrap();
    assert_eq!(
        installed.status.unwrap().version.as_deref(),
        Some("v1.24.1+1"),
        "an old D does for a P that names no range: not updated"
    );
    assert!(packages.get_opt("cloudnative-pg").await.unwrap().is_none());
    tree_cleanup(scope, &packages, &["tool"]).await;
}

#[tokio::test]
async fn branch_no_range_and_others_require_no_range_is_fulfilled() {
    let _turn = CNPG.lock().await;
    both_fulfilled("package-branch-norange", "v1.25.0+1", None, None).await;
}

#[tokio::test]
async fn branch_no_range_and_others_require_ranges_is_fulfilled() {
    let _turn = CNPG.lock().await;
    both_fulfilled(
        "package-branch-others-ranged",
        "v1.25.0+1",
        Some(">=1.25.0"),
        None,
    )
    .await;
}

#[tokio::test]
async fn branch_others_require_ranges_and_dv_inside_pdv_is_fulfilled() {
    let _turn = CNPG.lock().await;
    both_fulfilled(
        "package-branch-others-inside",
        "v1.25.0+1",
        Some(">=1.24.0"),
        Some(">=1.25.0"),
    )
    .await;
}

#[tokio::test]
async fn branch_others_require_ranges_and_dv_above_pdv_is_a_conflict_not_resolvable() {
    let _turn = CNPG.lock().await;
    let (scope, _repository, packages) = tree_world(
        "package-branch-others-above",
        Some("v1.25.0+1"),
        &[("first", Some(">=1.24.0")), ("tool", Some("<1.25.0"))],
    )
    .await;
    let (kind, message) = outcome_of(&scope, &packages, "first").await;
    assert_eq!(kind, "Ready", "{message}");
    let (kind, message) = outcome_of(&scope, &packages, "tool").await;
    assert_eq!(kind, "Failed");
    assert!(
        message.contains("dependency conflict, not resolvable: tool does not support using cloudnative-pg in 1.25.0+1 yet"),
        "{message}"
    );
    tree_cleanup(scope, &packages, &["tool", "first"]).await;
}

#[tokio::test]
async fn a_packages_components_install_with_their_values_and_go_with_it() {
    // Two small packages written here: `suite` (cluster-wide) has the
    // namespaced `part` as a component named `p`, with a value for it.
    let (scope, repository) = support::world("package-components").await;
    // The suite's defaultNamespace, made with it (a package never uses a
    // namespace it did not make).
    let suite_namespace = scope.name("suite");
    repository.write_file(
        "part/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "part/v1.0.0/package.yaml",
        "name: part\nscope: Namespaced\nmanifests:\n  - url: ./part.yaml\nvalueDefinitions:\n  greeting:\n    type: text\n    targets:\n      - resource: {apiGroup: v1, kind: ConfigMap, name: part}\n        patch: {op: add, path: /data/greeting}\n",
    );
    repository.write_file(
        "part/v1.0.0/part.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: part}\ndata: {}\n",
    );
    repository.write_file(
        "suite/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "suite/v1.0.0/package.yaml",
        &format!(
            "name: suite\ndefaultNamespace: {}\ncomponents:\n  - name: part\n    installedName: p\n    version: 1.x.x\n    values:\n      greeting:\n        value: hello\nmanifests:\n  - url: ./suite.yaml\n",
            suite_namespace
        ),
    );
    repository.write_file(
        "suite/v1.0.0/suite.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: suite}\n",
    );
    let cluster_packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    cluster_packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, "suite", "suite", Some("v1.0.0")),
        )
        .await
        .unwrap();
    cluster_package_when(
        &cluster_packages,
        &scope.name("suite"),
        "the suite and its part installed",
        |p| ready(p.status.as_ref(), ()),
    )
    .await;
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &suite_namespace);
    let part = packages
        .get(&format!("{}-p", scope.name("suite")))
        .await
        .unwrap();
    assert_eq!(part.spec.package_info.version.as_deref(), Some("v1.0.0"));
    assert_eq!(
        part.annotations()[pakket_packages_api::INSTALLED_AS_DEPENDENCY_ANNOTATION],
        "true"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &suite_namespace);
    let made = config_maps.get("part").await.unwrap();
    assert_eq!(
        made.data.unwrap()["greeting"],
        "hello",
        "the parent's value for it"
    );
    assert!(config_maps.get_opt("suite").await.unwrap().is_some());

    cluster_packages
        .delete(&scope.name("suite"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the suite is gone", || async {
        cluster_packages
            .get_opt(&scope.name("suite"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(
        packages
            .get_opt(&format!("{}-p", scope.name("suite")))
            .await
            .unwrap()
            .is_none(),
        "its part went first"
    );
    assert!(config_maps.get_opt("part").await.unwrap().is_none());
    scope.cleanup().await;
}

/// A namespaced package written here: one ConfigMap.
fn write_note_package(repository: &support::Repository) {
    repository.write_file(
        "note/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "note/v1.0.0/package.yaml",
        "name: note\nscope: Namespaced\nmanifests:\n  - url: ./note.yaml\n",
    );
    repository.write_file(
        "note/v1.0.0/note.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note}\ndata: {text: hello}\n",
    );
}

fn note_package(scope: &Scope, name: &str) -> Package {
    let mut package = Package::new(
        name,
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "note".into(),
                version: Some("v1.0.0".into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: BTreeMap::new(),
            suspend: false,
        },
    );
    package.metadata.labels = Some(scope.labels());
    package
}

#[tokio::test]
async fn an_instance_named_and_labelled_as_a_packages_is_not_taken_over_or_deleted() {
    // The provisioner and webhooks run with deploy/'s RBAC. Mallory may
    // create Instances (of a class of her own) and knows the name a
    // Package's Instance gets. She makes that Instance first, with
    // the labels and annotations the package provisioner writes on its
    // own. None of that is proof: the package says the name is taken (a
    // condition and an Event), changes nothing of hers and, deleted, does
    // not delete her Instance. Once she removes it, the package installs.
    let (scope, repository, hooks) =
        support::world_shipped("package-instance-taken", "AllowAll").await;
    write_note_package(&repository);
    let mallory_class = scope.name("mallory-class");
    support::grant(
        &scope,
        "mallory",
        serde_json::json!([
            {"apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "create", "delete"]},
            {"apiGroups": ["core.pakket.dev"], "resources": ["provisionerclasses"], "resourceNames": [mallory_class], "verbs": ["use"]},
        ]),
    )
    .await;
    let as_mallory: Api<Instance> = Api::all(scope.cluster.client_as("mallory").await);
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let mut taken = Vec::new();
    for name in ["kept", "dropped"] {
        let instance_name = pakket_package::names::instance(Some(&scope.namespace), name);
        let forged: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": {
                "name": instance_name,
                "labels": scope.labels().into_iter()
                    .chain([(pakket_package::names::KIND_LABEL.to_owned(), "Package".to_owned())])
                    .collect::<BTreeMap<_, _>>(),
                "annotations": {
                    pakket_package::names::NAME_ANNOTATION: name,
                    pakket_package::names::NAMESPACE_ANNOTATION: scope.namespace,
                },
            },
            "spec": { "class": mallory_class, "bundle": { "name": "x", "spec": { "class": mallory_class, "refs": ["docker://example.com/x:1"] } } },
        }))
        .unwrap();
        let create = PostParams::default();
        let made = eventually_ok("mallory may create Instances", || {
            as_mallory.create(&create, &forged)
        })
        .await;
        taken.push((name, instance_name, made.resource_version()));
        packages
            .create(&PostParams::default(), &note_package(&scope, name))
            .await
            .unwrap();
    }
    for (name, instance_name, _) in &taken {
        eventually("the package says the name is taken", || async {
            packages.get(name).await.unwrap().status.is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.reason == pakket_package::package_controller::NAME_TAKEN
                        && c.message
                            .contains(&format!("Instance {instance_name} exists"))
                })
            })
        })
        .await;
    }
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(scope.client.clone(), &scope.namespace);
    eventually("a Warning Event NameTaken on the package", || async {
        events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some(pakket_package::package_controller::NAME_TAKEN)
                    && e.type_.as_deref() == Some("Warning")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("kept")
            })
    })
    .await;
    for (_, instance_name, version) in &taken {
        let instance = instances.get(instance_name).await.unwrap();
        assert_eq!(
            instance.resource_version(),
            *version,
            "nothing of hers changed"
        );
        assert_eq!(instance.spec.class, mallory_class);
        assert!(
            !instance
                .annotations()
                .contains_key(pakket_package::made_here::INSTANCE_SEAL_ANNOTATION)
        );
    }

    // Deleting the package leaves her Instance alone.
    packages
        .delete("dropped", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the package is gone", || async {
        packages.get_opt("dropped").await.unwrap().is_none()
    })
    .await;
    let (_, dropped_instance, _) = &taken[1];
    assert!(
        instances.get_opt(dropped_instance).await.unwrap().is_some(),
        "her Instance was not the package's to delete"
    );

    // The legitimate path: she removes hers, the package installs into an
    // Instance it seals as its own.
    let (_, kept_instance, _) = &taken[0];
    as_mallory
        .delete(kept_instance, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the package installs", || async {
        ready(packages.get("kept").await.unwrap().status.as_ref(), ())
    })
    .await;
    let sealed = instances.get(kept_instance).await.unwrap();
    assert_eq!(sealed.spec.class, scope.name("package"));
    assert!(
        sealed
            .annotations()
            .contains_key(pakket_package::made_here::INSTANCE_SEAL_ANNOTATION)
    );
    packages
        .delete("kept", &DeleteParams::default())
        .await
        .unwrap();
    eventually("its own Instance goes with it", || async {
        instances.get_opt(kept_instance).await.unwrap().is_none()
    })
    .await;
    as_mallory
        .delete(dropped_instance, &DeleteParams::default())
        .await
        .unwrap();
    support::revoke(&scope, "mallory").await;
    hooks.stop().await.unwrap();
    scope.cleanup().await;
}

/// Retries `attempt` (RBAC takes a moment to reach the authorizer) until it
/// succeeds, for up to 30 s; its value.
async fn eventually_ok<T, E: std::fmt::Debug, F: std::future::Future<Output = Result<T, E>>>(
    what: &str,
    attempt: impl Fn() -> F,
) -> T {
    let mut last = None;
    for _ in 0..300 {
        match attempt().await {
            Ok(value) => return value,
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what}: still failing after 30 s: {last:?}");
}
