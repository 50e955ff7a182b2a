//! A PackageRepository with credentials (`spec.auth.bearer`, the token in
//! a Secret of the provisioner's namespace): its index, versions, package
//! files and manifests are all read with the token, and the token goes to
//! the repository's server only, never to another host a package file
//! names. Without the right token, the repository says so in its status,
//! naming the URL, and nothing is installed. The token's Secret is offered
//! for the repository's URL; re-pointed elsewhere by someone who may edit
//! the repository but not the Secret, it sends nothing there.
//!
//! The repository is written by the test (not real data: the real
//! Glasskube repository is public).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_packages_api::{
    BearerAuth, ClusterPackage, ClusterPackageSpec, PackageInfoTemplate, PackageRepository,
    PackageRepositorySpec, RepositoryAuth, SecretKey,
};
use pakket_testkit::https::HttpsServer;
use pakket_testkit::{Scope, eventually};
use serde_json::json;

const TOKEN: &str = "s3cr3t-repository-token";

/// Every request a server saw: path, the Authorization header if any, and
/// every header as written (names and values), to look for the token
/// anywhere.
type Seen = Arc<Mutex<Vec<(String, Option<String>, String)>>>;

#[derive(Clone)]
struct Files {
    files: Arc<BTreeMap<String, String>>,
    seen: Seen,
    token: Option<&'static str>,
}

async fn serve(
    State(files): State<Files>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let all = format!("{headers:?}");
    files
        .seen
        .lock()
        .unwrap()
        .push((path.clone(), authorization.clone(), all));
    if let Some(token) = files.token
        && authorization.as_deref() != Some(&format!("Bearer {token}"))
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match files.files.get(&path) {
        Some(text) => text.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn server(files: BTreeMap<String, String>, token: Option<&'static str>) -> (HttpsServer, Seen) {
    let seen = Seen::default();
    let state = Files {
        files: Arc::new(files),
        seen: Arc::clone(&seen),
        token,
    };
    let router = Router::new()
        .route("/{*path}", get(serve))
        .with_state(state);
    (HttpsServer::start(router), seen)
}

#[tokio::test]
async fn a_private_repository_is_read_with_its_token_and_the_token_goes_nowhere_else() {
    let scope = Scope::new("package-private").await;
    let namespace = scope.namespace.clone();
    // The package's defaultNamespace, made with it (a package never uses a
    // namespace it did not make).
    let installed_in = scope.name("internal");
    // Another host, public, that the private package's file also names.
    let (public, public_seen) = server(
        [(
            "extra.yaml".to_owned(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private-extra\ndata: {}\n"
                .to_owned(),
        )]
        .into(),
        None,
    );
    let extra = public.url("extra.yaml");
    let (private, private_seen) = server(
        [
            ("index.yaml".to_owned(), "packages:\n  - name: internal\n    latestVersion: v1.0.0\n".to_owned()),
            ("internal/versions.yaml".to_owned(), "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n".to_owned()),
            (
                "internal/v1.0.0/package.yaml".to_owned(),
                format!("name: internal\ndefaultNamespace: {installed_in}\nmanifests:\n  - url: ./internal.yaml\n  - url: {extra}\n"),
            ),
            (
                "internal/v1.0.0/internal.yaml".to_owned(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private-internal\ndata:\n  from: the private repository\n".to_owned(),
            ),
        ]
        .into(),
        Some(TOKEN),
    );
    support::start_trusting(
        &scope,
        vec![public.ca_pem.clone(), private.ca_pem.clone()],
        "AllowAll",
        None,
    )
    .await;
    // The token, in the provisioner's own namespace (the test's here),
    // not yet offered to the repository; and a Secret that is no
    // credential at all (a key of Pakket's own, say), named by no one's
    // label.
    let repository_name = scope.name("private");
    let secrets: Api<Secret> = Api::namespaced(scope.client.clone(), &namespace);
    for (secret, token) in [
        ("repository-token", "not-the-token"),
        ("a-key-of-pakkets", TOKEN),
    ] {
        secrets
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": secret, "labels": scope.labels()},
                    "stringData": {"token": token},
                }))
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let repositories: Api<PackageRepository> = Api::all(scope.client.clone());
    // A repository naming the unmarked Secret: refused by name, and its
    // server never sees the value.
    let nosy_name = scope.name("nosy");
    repositories
        .create(
            &PostParams::default(),
            &bearer_repository(&scope, &nosy_name, public.url(""), "a-key-of-pakkets"),
        )
        .await
        .unwrap();
    eventually(
        "the repository naming an unmarked Secret is refused",
        || async {
            repositories
                .get(&nosy_name)
                .await
                .unwrap()
                .status
                .is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.type_ == "Failed"
                            && c.status == "True"
                            && c.message.contains("is not offered to this repository")
                            && c.message.contains("a-key-of-pakkets")
                    })
                })
        },
    )
    .await;
    let _ = repositories.delete(&nosy_name, &Default::default()).await;
    // The admin offers the token Secret to the private repository, but
    // for no URL: an offer that does not say where the credentials may go
    // is no offer, and the repository says how to bind it.
    secrets
        .patch(
            "repository-token",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "labels": {pakket_package::credentials::CREDENTIALS_FOR_LABEL: repository_name},
            }})),
        )
        .await
        .unwrap();
    repositories
        .create(
            &PostParams::default(),
            &bearer_repository(
                &scope,
                &repository_name,
                private.url(""),
                "repository-token",
            ),
        )
        .await
        .unwrap();
    eventually("the repository says its offer names no URL", || async {
        repositories
            .get(&repository_name)
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.status == "True"
                        && c.reason == "CredentialsUnavailable"
                        && c.message.contains("offered to this repository for no URL")
                        && c.message.contains(&format!(
                            "{}={}",
                            pakket_package::credentials::CREDENTIALS_URL_ANNOTATION,
                            private.url("")
                        ))
                })
            })
    })
    .await;
    assert!(
        private_seen.lock().unwrap().is_empty(),
        "nothing was fetched without a bound offer"
    );
    // Bound to its server's URL (and the repository looked at again).
    secrets
        .patch(
            "repository-token",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "annotations": {pakket_package::credentials::CREDENTIALS_URL_ANNOTATION: private.url("")},
            }})),
        )
        .await
        .unwrap();
    repositories
        .patch(
            &repository_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test/poke": "1"}}})),
        )
        .await
        .unwrap();
    // A wrong token: the repository says it fails, naming the URL.
    eventually("the repository says the token is refused", || async {
        repositories
            .get(&repository_name)
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.status == "True"
                        && c.reason == "SyncFailed"
                        && c.message.contains("401")
                        && c.message.contains(&private.url("index.yaml"))
                })
            })
    })
    .await;
    // The right one.
    secrets
        .patch(
            "repository-token",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"token": TOKEN}})),
        )
        .await
        .unwrap();
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let name = scope.name("internal");
    let mut internal = ClusterPackage::new(
        &name,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: "internal".into(),
                version: Some("v1.0.0".into()),
                repository_name: Some(repository_name.clone()),
            },
            values: Default::default(),
            suspend: false,
        },
    );
    internal.metadata.labels = Some(scope.labels());
    packages
        .create(&PostParams::default(), &internal)
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &installed_in);
    eventually("both manifests are installed", || async {
        config_maps
            .get_opt("private-internal")
            .await
            .unwrap()
            .is_some()
            && config_maps
                .get_opt("private-extra")
                .await
                .unwrap()
                .is_some()
    })
    .await;
    // The manifest under the repository was downloaded by the runtime
    // with the token; the other host never saw it.
    let bearer = format!("Bearer {TOKEN}");
    assert!(
        private_seen
            .lock()
            .unwrap()
            .iter()
            .any(|(path, auth, _)| path == "internal/v1.0.0/internal.yaml"
                && auth.as_deref() == Some(bearer.as_str())),
        "the manifest was read with the token: {:?}",
        private_seen.lock().unwrap()
    );
    let public_requests = public_seen.lock().unwrap().clone();
    assert!(!public_requests.is_empty(), "the public manifest was read");
    assert!(
        public_requests.iter().all(|(_, auth, _)| auth.is_none()),
        "no credentials went to another host: {public_requests:?}"
    );
    // Neither the Instance nor the Bundle carries the token.
    let instance = Api::<pakket_api::Instance>::all(scope.client.clone())
        .get(&pakket_package::names::instance(None, &name))
        .await
        .unwrap();
    assert!(!serde_json::to_string(&instance).unwrap().contains(TOKEN));

    packages
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the package and its objects are gone", || async {
        packages.get_opt(&name).await.unwrap().is_none()
            && config_maps
                .get_opt("private-internal")
                .await
                .unwrap()
                .is_none()
    })
    .await;
    repositories
        .delete(&repository_name, &DeleteParams::default())
        .await
        .unwrap();
    scope.cleanup().await;
}

/// Mallory may edit PackageRepositories (nothing else: no Secrets) and
/// re-points the admin's private repository at a server of hers. The
/// token Secret is offered to the repository for the admin's server only,
/// so the credentials are dropped: her server never sees the token (no
/// request is made to it with them, nor for the package a ClusterPackage
/// then asks of the repository), and the repository's status says so,
/// naming the repository, the Secret, both URLs and what to do. Only when
/// the Secret's owner offers it for her URL does the token go there.
#[tokio::test]
async fn a_repository_repointed_by_someone_who_may_not_read_its_secret_sends_her_no_credentials() {
    let scope = Scope::new("package-repoint").await;
    let namespace = scope.namespace.clone();
    let files = |from: &str| -> BTreeMap<String, String> {
        [
            (
                "index.yaml".to_owned(),
                format!("packages:\n  - name: internal\n    latestVersion: v1.0.0\n# {from}\n"),
            ),
            (
                "internal/versions.yaml".to_owned(),
                "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n".to_owned(),
            ),
            (
                "internal/v1.0.0/package.yaml".to_owned(),
                format!(
                    "name: internal\ndefaultNamespace: {}\nmanifests: []\n",
                    scope.name("internal")
                ),
            ),
        ]
        .into()
    };
    let (admins, admins_seen) = server(files("the admin"), Some(TOKEN));
    // Hers answers anyone, and writes down every header it is sent; by
    // name (`localhost`), not the admin's address, and on its own port.
    let (hers, hers_seen) = server(files("mallory"), None);
    let admins_url = admins.url("");
    let hers_url = format!("https://localhost:{}/", hers.address.port());
    support::start_trusting(
        &scope,
        vec![admins.ca_pem.clone(), hers.ca_pem.clone()],
        "AllowAll",
        None,
    )
    .await;
    let repository_name = scope.name("team");
    let secret_name = "team-token";
    let secrets: Api<Secret> = Api::namespaced(scope.client.clone(), &namespace);
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {
                    "name": secret_name,
                    "labels": scope.labels().into_iter()
                        .chain([(pakket_package::credentials::CREDENTIALS_FOR_LABEL.to_owned(), repository_name.clone())])
                        .collect::<BTreeMap<_, _>>(),
                    "annotations": {pakket_package::credentials::CREDENTIALS_URL_ANNOTATION: admins_url},
                },
                "stringData": {"token": TOKEN},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let repositories: Api<PackageRepository> = Api::all(scope.client.clone());
    repositories
        .create(
            &PostParams::default(),
            &bearer_repository(&scope, &repository_name, admins_url.clone(), secret_name),
        )
        .await
        .unwrap();
    // At the URL it is offered for, it is read with the token.
    let bearer = format!("Bearer {TOKEN}");
    eventually("the admin's repository answers with its token", || async {
        repositories
            .get(&repository_name)
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
    })
    .await;
    assert!(
        admins_seen
            .lock()
            .unwrap()
            .iter()
            .any(|(path, auth, _)| path == "index.yaml" && auth.as_deref() == Some(bearer.as_str())),
        "the admin's server was sent the token"
    );

    // Mallory may edit PackageRepositories, and nothing else.
    support::grant(
        &scope,
        "mallory",
        json!([{"apiGroups": ["packages.pakket.dev"], "resources": ["packagerepositories"],
            "verbs": ["get", "list", "watch", "update", "patch"]}]),
    )
    .await;
    let as_mallory = scope.cluster.client_as("mallory").await;
    let her_repositories: Api<PackageRepository> = Api::all(as_mallory.clone());
    eventually(
        "mallory re-points the admin's repository at her server",
        || async {
            her_repositories
                .patch(
                    &repository_name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"url": hers_url}})),
                )
                .await
                .is_ok()
        },
    )
    .await;
    assert!(
        Api::<Secret>::namespaced(as_mallory, &namespace)
            .get(secret_name)
            .await
            .is_err(),
        "mallory may not read the Secret herself"
    );
    // Her server must never hear the token: checked at every step, so that
    // a leak fails at once rather than as a timeout.
    let no_leak = || {
        let seen = hers_seen.lock().unwrap();
        assert!(
            seen.iter()
                .all(|(_, auth, all)| auth.is_none() && !all.contains(TOKEN)),
            "mallory's server was sent the token: {seen:?}"
        );
    };
    let refused = |s: &pakket_packages_api::PackageRepositoryStatus| {
        s.conditions.iter().any(|c| {
            c.type_ == "Failed"
                && c.status == "True"
                && c.reason == "CredentialsUnavailable"
                && [
                    repository_name.as_str(),
                    &format!("Secret {namespace}/{secret_name}"),
                    &format!("offered to this repository for {admins_url} only"),
                    &format!("spec.url is now {hers_url}"),
                    "credentials were dropped",
                    &format!("Set spec.url back under {admins_url}"),
                    &format!(
                        "{}={hers_url}",
                        pakket_package::credentials::CREDENTIALS_URL_ANNOTATION
                    ),
                ]
                .iter()
                .all(|words| c.message.contains(words))
        })
    };
    eventually(
        "the repository says its credentials were dropped",
        || async {
            no_leak();
            repositories
                .get(&repository_name)
                .await
                .unwrap()
                .status
                .is_some_and(|s| refused(&s))
        },
    )
    .await;
    // A package asked of the repository now is not read with the token
    // either; it says why.
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let package_name = scope.name("internal");
    let mut internal = ClusterPackage::new(
        &package_name,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: "internal".into(),
                version: Some("v1.0.0".into()),
                repository_name: Some(repository_name.clone()),
            },
            values: Default::default(),
            suspend: false,
        },
    );
    internal.metadata.labels = Some(scope.labels());
    packages
        .create(&PostParams::default(), &internal)
        .await
        .unwrap();
    eventually("the package is refused for the same reason", || async {
        no_leak();
        packages
            .get(&package_name)
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.status == "True"
                        && c.reason == "CredentialsUnavailable"
                        && c.message.contains(&format!("spec.url is now {hers_url}"))
                })
            })
    })
    .await;
    no_leak();
    assert!(
        hers_seen.lock().unwrap().is_empty(),
        "nothing at all was fetched from her server for a repository whose credentials were dropped"
    );

    // Only the Secret's owner can send the credentials there: once she
    // offers them for that URL, they go (and the recorder sees them).
    secrets
        .patch(
            secret_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                pakket_package::credentials::CREDENTIALS_URL_ANNOTATION: hers_url,
            }}})),
        )
        .await
        .unwrap();
    repositories
        .patch(
            &repository_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test/poke": "1"}}})),
        )
        .await
        .unwrap();
    eventually("offered anew, the token goes to the new URL", || async {
        hers_seen
            .lock()
            .unwrap()
            .iter()
            .any(|(_, auth, _)| auth.as_deref() == Some(bearer.as_str()))
    })
    .await;

    packages
        .delete(&package_name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the package is gone", || async {
        packages.get_opt(&package_name).await.unwrap().is_none()
    })
    .await;
    repositories
        .delete(&repository_name, &DeleteParams::default())
        .await
        .unwrap();
    support::revoke(&scope, "mallory").await;
    scope.cleanup().await;
}

/// PackageRepository `name` at `url`, its bearer token named as key
/// `token` of Secret `secret`.
fn bearer_repository(scope: &Scope, name: &str, url: String, secret: &str) -> PackageRepository {
    let mut repository = PackageRepository::new(
        name,
        PackageRepositorySpec {
            url,
            auth: Some(RepositoryAuth {
                basic: None,
                bearer: Some(BearerAuth {
                    token_secret_ref: SecretKey {
                        name: secret.into(),
                        key: "token".into(),
                    },
                }),
            }),
        },
    );
    repository.metadata.labels = Some(scope.labels());
    repository
}
