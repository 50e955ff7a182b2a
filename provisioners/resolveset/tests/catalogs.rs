//! Catalogs on the real control plane: content from an immutable
//! ConfigMap, over HTTPS and from FBC images in the real local registry,
//! served by the API over real HTTP; a new digest swapped in while
//! resolutions run; a corrupt digest that leaves the last good content
//! serving.
//!
//! Data (unedited, see ../shared/data/README.md):
//! - `fbc/community-operators-prod-v4.20/<pkg>/catalog.yaml`: verbatim
//!   `catalogs/v4.20/<pkg>/catalog.yaml` of
//!   redhat-openshift-ecosystem/community-operators-prod at 699495f2;
//! - `fbc/community-operators-prod-derived/catalog.json`: DERIVED from every
//!   bundle of the same repository and commit.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_engine::catalog::Catalog as EngineCatalog;
use pakket_resolve_client::ResolverClient;
use pakket_resolveset::api::listen::Transport;
use pakket_resolveset::catalogs::catalog::{
    Catalog, CatalogCounts, CatalogSource, ConfigMapCatalogSource, HttpsCatalogSource,
    ImageCatalogSource,
};
use pakket_resolveset::catalogs::serving::counts;
use pakket_resolveset::protocol::browse::CatalogList;
use pakket_resolveset::protocol::resolve::{Outcome, RequestItem, ResolveRequest, ResolveResponse};
use pakket_resolveset::{ConditionType, Reason};
use pakket_testkit::{Scope, data};
use sha2::Digest as _;
use support::{TestTls, catalog, condition, copy_tree, create, push_catalog, scratch, wait_for};

const V420: &str = "fbc/community-operators-prod-v4.20";
const DERIVED: &str = "fbc/community-operators-prod-derived/catalog.json";

fn loopback() -> Transport {
    Transport::from_flags("127.0.0.1:0".parse().unwrap(), true, None, None).unwrap()
}

fn client(running: &pakket_resolveset::process::Running) -> ResolverClient {
    ResolverClient::new(&format!("http://{}", running.api_address), None, None).unwrap()
}

fn counts_of(path: &Path) -> CatalogCounts {
    counts(&EngineCatalog::load(path, "expected", 0).unwrap())
}

/// A scratch dir holding `configs/<pkg>/catalog.yaml` for each of `packages`.
fn v420_subset(scope: &Scope, name: &str, packages: &[&str]) -> std::path::PathBuf {
    let dir = scratch(scope, name);
    for package in packages {
        copy_tree(
            &data(&format!("{V420}/{package}")),
            &dir.join("configs").join(package),
        );
    }
    dir
}

async fn resolve_text(client: &ResolverClient, request: &str) -> Outcome {
    client
        .resolve(&ResolveRequest {
            requests: vec![RequestItem::Text(request.to_owned())],
            installed: Vec::new(),
        })
        .await
        .unwrap_or_else(|error| panic!("resolving {request}: {error}"))
}

async fn catalogs(client: &ResolverClient) -> CatalogList {
    let (status, body) = client
        .call(reqwest::Method::GET, "/v1/catalogs", None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn served(catalog: &Catalog) -> bool {
    condition(
        catalog,
        ConditionType::Serving,
        "True",
        Reason::ServingLatest,
    ) && condition(
        catalog,
        ConditionType::Unpacked,
        "True",
        Reason::UnpackSucceeded,
    )
}

#[tokio::test]
async fn configmap_and_https_catalogs_are_served_with_counts_findings_and_priority() {
    let scope = Scope::new("resolveset-configmap-https").await;
    let tls = TestTls::new(&scratch(&scope, "tls"));
    let running = support::start(&scope, loopback(), vec![tls.ca_pem.clone()]).await;
    let api = client(&running);

    // An immutable ConfigMap holding two packages' catalog files.
    let packages = ["nfs-provisioner-operator", "kubevirt-wol"];
    let mut data_files = BTreeMap::new();
    for package in packages {
        let text =
            std::fs::read_to_string(data(&format!("{V420}/{package}/catalog.yaml"))).unwrap();
        data_files.insert(format!("{package}.yaml"), text);
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    // Marked as catalog content by someone who may write it, or not.
    let config_map = |name: &str, immutable, marked: bool| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: marked.then(|| {
                BTreeMap::from([(
                    pakket_resolveset::catalogs::source::CATALOG_CONTENT_LABEL.to_owned(),
                    "true".to_owned(),
                )])
            }),
            ..ObjectMeta::default()
        },
        data: Some(data_files.clone()),
        immutable: Some(immutable),
        ..ConfigMap::default()
    };
    config_maps
        .create(&PostParams::default(), &config_map("catalog", true, true))
        .await
        .unwrap();
    config_maps
        .create(&PostParams::default(), &config_map("mutable", false, true))
        .await
        .unwrap();
    // Immutable, but nobody who may write it said it is catalog content.
    config_maps
        .create(&PostParams::default(), &config_map("unmarked", true, false))
        .await
        .unwrap();
    let from_config_map = |name: &str| CatalogSource {
        config_map: Some(ConfigMapCatalogSource {
            name: name.to_owned(),
            namespace: scope.namespace.clone(),
        }),
        ..CatalogSource::default()
    };

    // The derived community catalog as a tarball over HTTPS, pinned.
    let tree = scratch(&scope, "derived");
    std::fs::create_dir_all(tree.join("configs")).unwrap();
    std::fs::copy(data(DERIVED), tree.join("configs/catalog.json")).unwrap();
    let tarball = support::tar_gz(&tree);
    let sha256 = hex::encode(sha2::Sha256::digest(&tarball));
    // And one package's catalog file as it is, not in a tarball.
    let plain_file = std::fs::read(data(&format!("{V420}/kubevirt-wol/catalog.yaml"))).unwrap();
    let base = support::https_files(
        &tls,
        BTreeMap::from([
            ("community.tar.gz".to_owned(), tarball),
            ("kubevirt-wol.yaml".to_owned(), plain_file),
        ]),
    )
    .await;
    let one_file = CatalogSource {
        https: Some(HttpsCatalogSource {
            url: format!("{base}/kubevirt-wol.yaml"),
            sha256: None,
        }),
        ..CatalogSource::default()
    };
    let over_https = CatalogSource {
        https: Some(HttpsCatalogSource {
            url: format!("{base}/community.tar.gz"),
            sha256: Some(sha256.clone()),
        }),
        ..CatalogSource::default()
    };

    let small = catalog(&scope, "small", from_config_map("catalog"), 10);
    let community = catalog(&scope, "community", over_https, 0);
    let mutable = catalog(&scope, "mutable", from_config_map("mutable"), 0);
    let unmarked = catalog(&scope, "unmarked", from_config_map("unmarked"), 0);
    let plain = catalog(&scope, "plain", one_file, -1);
    for object in [&small, &community, &mutable, &unmarked, &plain] {
        create(&scope.client, object).await;
    }

    let small = wait_for(
        &scope.client,
        &scope.name("small"),
        "the ConfigMap catalog serving",
        served,
    )
    .await;
    let status = small.status.clone().unwrap();
    let expected_dir = scratch(&scope, "expected");
    for (key, text) in &data_files {
        std::fs::write(expected_dir.join(key), text).unwrap();
    }
    assert_eq!(status.counts, Some(counts_of(&expected_dir)));
    assert!(status.digest.as_deref().unwrap().starts_with("sha256:"));
    assert!(status.last_sync_time.is_some());

    let community = wait_for(
        &scope.client,
        &scope.name("community"),
        "the https catalog serving",
        served,
    )
    .await;
    let status = community.status.clone().unwrap();
    assert_eq!(status.digest, Some(format!("sha256:{sha256}")));
    assert_eq!(status.counts, Some(counts_of(&data(DERIVED))));
    // The derived catalog's real messiness, counted and summarized.
    let findings = status.diagnostics.expect("the loader's findings");
    assert!(findings.by_code["DanglingReplaces"] > 0, "{findings:?}");
    assert!(findings.by_code["MultipleHeads"] > 0, "{findings:?}");
    assert_eq!(
        findings.first.len(),
        pakket_resolveset::catalogs::load::LISTED_DIAGNOSTICS
    );
    assert!(findings.omitted > 0);
    assert!(
        findings
            .first
            .iter()
            .all(|line| line.starts_with("configs/catalog.json:")),
        "findings name the file inside the content: {:?}",
        findings.first
    );

    let plain = wait_for(
        &scope.client,
        &scope.name("plain"),
        "the plain catalog file over https serving",
        served,
    )
    .await;
    assert_eq!(
        plain.status.unwrap().counts,
        Some(counts_of(&data(&format!("{V420}/kubevirt-wol"))))
    );

    let mutable = wait_for(
        &scope.client,
        &scope.name("mutable"),
        "the mutable ConfigMap refused",
        |c| condition(c, ConditionType::Unpacked, "False", Reason::UnpackFailed),
    )
    .await;
    let message = &mutable.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.starts_with("spec.source.configMap:") && message.contains("immutable: true"),
        "{message}"
    );
    assert!(condition(
        &mutable,
        ConditionType::Serving,
        "False",
        Reason::NothingServed
    ));

    // A Catalog cannot publish a ConfigMap on its own say-so: nothing of
    // the unmarked one is read, served or echoed.
    let unmarked = wait_for(
        &scope.client,
        &scope.name("unmarked"),
        "the unmarked ConfigMap refused",
        |c| condition(c, ConditionType::Unpacked, "False", Reason::UnpackFailed),
    )
    .await;
    let message = &unmarked.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("is not marked as catalog content")
            && message.contains(pakket_resolveset::catalogs::source::CATALOG_CONTENT_LABEL),
        "{message}"
    );
    let everything = serde_json::to_string(&unmarked).unwrap();
    assert!(
        !everything.contains("kubevirt") && unmarked.status.as_ref().unwrap().counts.is_none(),
        "{everything}"
    );

    // Served by priority: the ConfigMap's catalog (10) before the community one (0).
    let listed = catalogs(&api).await;
    let names: Vec<&str> = listed.catalogs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            scope.name("small"),
            scope.name("community"),
            scope.name("plain")
        ]
    );
    assert_eq!(listed.catalogs[1].digest, format!("sha256:{sha256}"));
    // nfs-provisioner-operator is in both; the higher priority wins.
    let Outcome::Resolved(resolved) = resolve_text(&api, "nfs-provisioner-operator").await else {
        panic!("nfs-provisioner-operator resolves");
    };
    assert_eq!(resolved.resolved[0].catalog, scope.name("small"));

    // Deleting a Catalog stops serving it.
    Api::<Catalog>::all(scope.client.clone())
        .delete(&scope.name("small"), &Default::default())
        .await
        .unwrap();
    pakket_testkit::eventually("the deleted Catalog is no longer served", || async {
        catalogs(&api).await.catalogs.len() == 2
    })
    .await;
    support::cleanup(scope).await;
}

#[tokio::test]
async fn a_new_digest_is_picked_up_while_resolutions_stream_and_none_fails() {
    let scope = Scope::new("resolveset-update").await;
    let running = support::start(&scope, loopback(), Vec::new()).await;
    let api = Arc::new(client(&running));

    let first = v420_subset(&scope, "v1", &["nfs-provisioner-operator", "kubevirt-wol"]);
    let (reference, first_digest) = push_catalog(&scope, &first, "update", "latest").await;
    let mut object = catalog(
        &scope,
        "update",
        CatalogSource {
            image: Some(ImageCatalogSource {
                reference: reference.clone(),
            }),
            ..CatalogSource::default()
        },
        0,
    );
    object.spec.poll_interval = Some("1s".into());
    create(&scope.client, &object).await;
    wait_for(
        &scope.client,
        &scope.name("update"),
        "the first digest serving",
        |c| served(c) && c.status.as_ref().and_then(|s| s.digest.as_deref()) == Some(&first_digest),
    )
    .await;
    assert!(matches!(
        resolve_text(&api, "dotvirt-operator").await,
        Outcome::NoSolution(_)
    ));

    // A stream of resolutions, each of which must succeed.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let stream = {
        let (api, stop, answered) = (Arc::clone(&api), Arc::clone(&stop), Arc::clone(&answered));
        tokio::spawn(async move {
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match resolve_text(&api, "nfs-provisioner-operator").await {
                    Outcome::Resolved(resolved) if resolved.resolved.len() == 1 => {}
                    other => failures.push(format!("{:?}", other.response())),
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
            failures
        })
    };

    let second = v420_subset(
        &scope,
        "v2",
        &[
            "nfs-provisioner-operator",
            "kubevirt-wol",
            "dotvirt-operator",
        ],
    );
    let (_, second_digest) = push_catalog(&scope, &second, "update", "latest").await;
    assert_ne!(first_digest, second_digest);
    let updated = wait_for(
        &scope.client,
        &scope.name("update"),
        "the new digest serving",
        |c| {
            served(c) && c.status.as_ref().and_then(|s| s.digest.as_deref()) == Some(&second_digest)
        },
    )
    .await;
    assert_eq!(
        updated.status.unwrap().counts,
        Some(counts_of(&second.join("configs")))
    );
    assert!(matches!(
        resolve_text(&api, "dotvirt-operator").await,
        Outcome::Resolved(_)
    ));
    // The swap is an Event naming the new digest.
    let name = scope.name("update");
    pakket_testkit::eventually("a ServingLatest Event names the new digest", || async {
        pakket_testkit::cluster_object_events(&scope.client, "Catalog", &name)
            .await
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("ServingLatest")
                    && event.type_.as_deref() == Some("Normal")
                    && event
                        .message
                        .as_deref()
                        .is_some_and(|m| m.contains(&second_digest))
            })
    })
    .await;
    // The old digest leaves this process's store; the served one stays.
    let store = pakket_runtime::kernel::store::Store::open(support::store_dir(&scope)).unwrap();
    let digest = |d: &str| pakket_runtime::kernel::store::Digest::parse(d).unwrap();
    pakket_testkit::eventually("the old digest is collected", || async {
        store.get(&digest(&first_digest)).is_none()
    })
    .await;
    assert!(store.get(&digest(&second_digest)).is_some());
    // Polls (every second) that find nothing new write nothing.
    let catalogs_api: Api<Catalog> = Api::all(scope.client.clone());
    let version = catalogs_api.get(&name).await.unwrap().resource_version();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        catalogs_api.get(&name).await.unwrap().resource_version(),
        version,
        "an unchanged status is not rewritten on every poll"
    );
    // Let the stream run on the new content too before stopping it.
    let seen = answered.load(Ordering::Relaxed);
    pakket_testkit::eventually("more resolutions after the swap", || async {
        answered.load(Ordering::Relaxed) >= seen + 20
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let failures = stream.await.unwrap();
    assert!(
        failures.is_empty(),
        "resolutions failed during the swap: {failures:?}"
    );
    support::cleanup(scope).await;
}

#[tokio::test]
async fn a_corrupt_new_digest_keeps_the_last_good_content_serving() {
    let scope = Scope::new("resolveset-corrupt").await;
    let running = support::start(&scope, loopback(), Vec::new()).await;
    let api = client(&running);

    let good = v420_subset(&scope, "good", &["nfs-provisioner-operator"]);
    let (reference, good_digest) = push_catalog(&scope, &good, "corrupt", "latest").await;
    let mut object = catalog(
        &scope,
        "corrupt",
        CatalogSource {
            image: Some(ImageCatalogSource { reference }),
            ..CatalogSource::default()
        },
        0,
    );
    object.spec.poll_interval = Some("1s".into());
    create(&scope.client, &object).await;
    wait_for(
        &scope.client,
        &scope.name("corrupt"),
        "the good digest serving",
        served,
    )
    .await;

    // The same tag now holds a catalog cut off mid-document.
    let bad = scratch(&scope, "bad");
    let text = std::fs::read_to_string(data(&format!(
        "{V420}/nfs-provisioner-operator/catalog.yaml"
    )))
    .unwrap();
    std::fs::create_dir_all(bad.join("configs")).unwrap();
    std::fs::write(
        bad.join("configs/catalog.json"),
        format!(
            "{{\"schema\": \"olm.package\", \"name\": \"x\"}}\n{{\"schema\": {}",
            text.len()
        ),
    )
    .unwrap();
    let (_, bad_digest) = push_catalog(&scope, &bad, "corrupt", "latest").await;

    let kept = wait_for(
        &scope.client,
        &scope.name("corrupt"),
        "the corrupt digest refused",
        |c| condition(c, ConditionType::Unpacked, "False", Reason::CatalogInvalid),
    )
    .await;
    let unpacked = kept.condition(ConditionType::Unpacked).unwrap();
    assert!(
        unpacked
            .message
            .starts_with("spec.source.image.ref: configs/catalog.json:2:"),
        "names the field and the file: {}",
        unpacked.message
    );
    assert!(
        unpacked.message.contains("fix the syntax"),
        "{}",
        unpacked.message
    );
    let serving = kept.condition(ConditionType::Serving).unwrap();
    assert_eq!(
        (serving.status.as_str(), serving.reason.as_str()),
        ("True", Reason::ServingPrevious.as_str())
    );
    assert!(
        serving.message.contains(&good_digest),
        "{}",
        serving.message
    );
    let status = kept.status.clone().unwrap();
    assert_eq!(status.digest.as_deref(), Some(good_digest.as_str()));
    assert_ne!(good_digest, bad_digest);
    assert_eq!(status.counts, Some(counts_of(&good.join("configs"))));

    // The API still answers from the good content.
    assert!(matches!(
        resolve_text(&api, "nfs-provisioner-operator").await,
        Outcome::Resolved(_)
    ));
    let listed = catalogs(&api).await;
    assert_eq!(listed.catalogs[0].digest, good_digest);

    // A fixed push is picked up and serves again.
    let (_, fixed_digest) = push_catalog(
        &scope,
        &v420_subset(
            &scope,
            "fixed",
            &["nfs-provisioner-operator", "kubevirt-wol"],
        ),
        "corrupt",
        "latest",
    )
    .await;
    wait_for(
        &scope.client,
        &scope.name("corrupt"),
        "the fixed digest serving",
        |c| served(c) && c.status.as_ref().and_then(|s| s.digest.as_deref()) == Some(&fixed_digest),
    )
    .await;
    support::cleanup(scope).await;
}

#[tokio::test]
async fn the_api_over_tls_refuses_callers_without_a_token_or_the_right_to_read_catalogs() {
    let scope = Scope::new("resolveset-auth").await;
    let tls = TestTls::new(&scratch(&scope, "tls"));
    let running = support::start(
        &scope,
        tls.transport("127.0.0.1:0".parse().unwrap()),
        Vec::new(),
    )
    .await;
    let ca = scratch(&scope, "ca").join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let url = format!("https://{}", running.api_address);
    let as_user = |token: Option<String>| ResolverClient::new(&url, token, Some(&ca)).unwrap();
    let get = |client: ResolverClient| async move {
        client
            .call(reqwest::Method::GET, "/v1/catalogs", None)
            .await
            .unwrap()
    };

    let (status, body) = get(as_user(None)).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer TOKEN"), "{body}");
    let (status, body) = get(as_user(Some("not-a-token".into()))).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("does not accept this bearer token"), "{body}");

    let alice = support::token_of(&scope, "alice");
    let (status, body) = get(as_user(Some(alice.clone()))).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("user alice may not get catalogs.resolve.pakket.dev"),
        "{body}"
    );
    // A refused resolution is refused the same way, before any work.
    let refused = as_user(Some(alice.clone()))
        .resolve(&ResolveRequest {
            requests: vec![RequestItem::Text("etcd".into())],
            installed: Vec::new(),
        })
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");
    // So is a plan: it shows what the catalogs would give, so it asks the
    // same right.
    let refused = as_user(Some(alice.clone()))
        .plan(&pakket_resolveset::protocol::plan::PlanRequest {
            set: "resolveset".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");

    // Granted `get` on Catalogs, alice is let in at once; bob still is not.
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": scope.name("catalog-reader"), "labels": scope.labels()},
        "rules": [{"apiGroups": ["resolve.pakket.dev"], "resources": ["catalogs"], "verbs": ["get"]}],
    });
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": scope.name("alice-reads-catalogs"), "labels": scope.labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": scope.name("catalog-reader")},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    });
    let params = PatchParams::apply("pakket-resolveset-tests");
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(scope.client.clone());
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> =
        Api::all(scope.client.clone());
    roles
        .patch(&scope.name("catalog-reader"), &params, &Patch::Apply(&role))
        .await
        .unwrap();
    bindings
        .patch(
            &scope.name("alice-reads-catalogs"),
            &params,
            &Patch::Apply(&binding),
        )
        .await
        .unwrap();
    let (status, body) = get(as_user(Some(alice))).await;
    assert_eq!(status, 200, "{body}");
    let listed: CatalogList = serde_json::from_str(&body).unwrap();
    assert!(listed.catalogs.is_empty());
    let (status, body) = get(as_user(Some(support::token_of(&scope, "bob")))).await;
    assert_eq!(status, 403, "{body}");

    // The OpenAPI document is public, generated from the types.
    let (status, body) = as_user(None)
        .call(reqwest::Method::GET, "/openapi.json", None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let document: serde_json::Value = serde_json::from_str(&body).unwrap();
    for path in [
        "/v1/catalogs",
        "/v1/packages",
        "/v1/packages/{name}",
        "/v1/query",
        "/v1/resolve",
        "/v1/plan",
    ] {
        assert!(document["paths"][path].is_object(), "{path} in {body}");
    }
    assert!(document["components"]["schemas"]["ResolveResponse"].is_object());

    let _ = roles
        .delete(&scope.name("catalog-reader"), &Default::default())
        .await;
    let _ = bindings
        .delete(&scope.name("alice-reads-catalogs"), &Default::default())
        .await;
    support::cleanup(scope).await;
}

#[tokio::test]
async fn bad_input_is_refused_with_400_naming_the_field() {
    let scope = Scope::new("resolveset-bad-input").await;
    let running = support::start(&scope, loopback(), Vec::new()).await;
    let api = client(&running);
    let cases = [
        (
            "/v1/resolve",
            r#"{"requests": ["etcd=>=x"]}"#,
            "requests[0]: invalid request",
        ),
        (
            "/v1/resolve",
            r#"{"requests": [{"package": "etcd"}]}"#,
            "requests[0]: a request is text",
        ),
        (
            "/v1/resolve",
            r#"{"requests": ["etcd"], "installed": [{"package": "etcd", "version": "one"}]}"#,
            "installed[0].version:",
        ),
        ("/v1/resolve", "not json", "body:"),
        (
            "/v1/query",
            r#"{"type": "olm.package", "value": {"packageName": "etcd", "versionRange": "~>1"}}"#,
            "body.value.versionRange:",
        ),
        (
            "/v1/query",
            r#"{"type": "olm.rego", "value": "x"}"#,
            "unknown variant",
        ),
    ];
    for (path, body, expected) in cases {
        let (status, text) = api
            .call(reqwest::Method::POST, path, Some(body.as_bytes().to_vec()))
            .await
            .unwrap();
        assert_eq!(status, 400, "{path} {body}: {text}");
        let message = serde_json::from_str::<serde_json::Value>(&text).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains(expected), "{path} {body}: {message}");
        if path == "/v1/resolve" {
            // The same document shape `pakket resolve -o json` prints for bad input.
            let parsed: ResolveResponse = serde_json::from_str(&text).unwrap();
            assert!(matches!(parsed, ResolveResponse::Failed(f) if f.error.explanation.is_none()));
        }
    }
    let (status, text) = api
        .call(reqwest::Method::GET, "/v1/packages/no-such-package", None)
        .await
        .unwrap();
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("GET /v1/packages lists them"), "{text}");
    support::cleanup(scope).await;
}

#[tokio::test]
async fn a_catalog_cannot_make_the_process_fetch_from_internal_addresses() {
    // The attacker may create Catalogs and aims the process at what only
    // the cluster can reach (here a server on loopback, as a metadata
    // service or an internal API would be); the admin did not pass
    // --allow-internal-addresses.
    let scope = Scope::new("resolveset-internal").await;
    let tls = TestTls::new(&scratch(&scope, "tls"));
    let running =
        support::start_with_reach(&scope, loopback(), vec![tls.ca_pem.clone()], false).await;
    let api = client(&running);
    let secret = b"{\"schema\":\"olm.package\",\"name\":\"internal-only\"}".to_vec();
    let (base, requests) =
        support::https_files_counted(&tls, BTreeMap::from([("catalog.json".to_owned(), secret)]))
            .await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let mut names = Vec::new();
    for (suffix, url) in [
        ("loopback", format!("{base}/catalog.json")),
        (
            "localhost",
            format!("https://localhost:{port}/catalog.json"),
        ),
    ] {
        let object = catalog(
            &scope,
            suffix,
            CatalogSource {
                https: Some(HttpsCatalogSource { url, sha256: None }),
                ..CatalogSource::default()
            },
            0,
        );
        create(&scope.client, &object).await;
        names.push(scope.name(suffix));
    }
    for name in &names {
        let refused = wait_for(&scope.client, name, "the internal address refused", |c| {
            condition(c, ConditionType::Unpacked, "False", Reason::UnpackFailed)
        })
        .await;
        let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
        assert!(
            message.starts_with("spec.source.https.url:") && message.contains("internal"),
            "names the field and why: {message}"
        );
        assert!(
            message.contains("--allow-internal-addresses") && !message.contains("ProvisionerClass"),
            "the advice is the process flag, not a class parameter: {message}"
        );
        assert_eq!(
            message.matches("/catalog.json").count(),
            1,
            "the address once: {message}"
        );
        assert!(
            !serde_json::to_string(&refused)
                .unwrap()
                .contains("internal-only"),
            "nothing of the content is echoed"
        );
    }
    assert_eq!(
        requests.load(Ordering::Relaxed),
        0,
        "no request reached the internal server"
    );
    assert!(
        catalogs(&api).await.catalogs.is_empty(),
        "nothing is served"
    );
    support::cleanup(scope).await;
}
