//! `pakket resolve --server` and the resolver API against `pakket resolve`
//! on the same files: two FBC images pushed with `pakket bundle push` to
//! the real local registry, served as Catalogs by the resolveset process
//! (run in this test process) on the real control plane, and a table of
//! requests answered three ways (files, `--server`, a raw HTTP POST) that
//! must print the same bytes.
//!
//! Data (unedited, see ../shared/data/README.md):
//! - `fbc/community-operators-prod-derived/catalog.json`: DERIVED from every
//!   bundle of redhat-openshift-ecosystem/community-operators-prod at 699495f2;
//! - `fbc/community-operators-prod-v4.20/`: verbatim `catalogs/v4.20/<pkg>/catalog.yaml`
//!   files of the same repository and commit.

#[path = "../../dev/registry/testing.rs"]
mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_resolve_api::catalog::{Catalog, CatalogSource, CatalogSpec, ImageCatalogSource};
use pakket_resolve_api::protocol::browse::{PackageDetail, QueryResult};
use pakket_resolve_client::ResolverClient;
use pakket_resolveset::api::listen::Transport;
use pakket_resolveset::process::{self, Options};
use pakket_runtime::kernel::serve::Metrics;
use pakket_testkit::{Scope, data};
use registry::Registry;

fn pakket(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pakket"))
        .args(args)
        .env_remove("PAKKET_TOKEN")
        .output()
        .expect("pakket runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Copies the files under `from` into `to` (writable: the data is read-only).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

/// Pushes `dir` with `pakket bundle push`; returns the printed `REF@sha256:…`.
fn push(dir: &Path, target: &str) -> String {
    let output = pakket(&[
        "bundle",
        "push",
        &dir.display().to_string(),
        target,
        "--plain-http",
    ]);
    assert!(output.status.success(), "push: {}", text(&output.stderr));
    text(&output.stdout).trim().to_owned()
}

async fn install_crd(client: &kube::Client) {
    pakket_testkit::apply_crds(client, pakket_resolveset::crd::all())
        .await
        .unwrap();
}

/// Waits until Catalog `name` serves `digest`.
async fn wait_serving(client: &kube::Client, name: &str, digest: &str) {
    let api: Api<Catalog> = Api::all(client.clone());
    let mut last = None;
    for _ in 0..900 {
        let catalog = api.get(name).await.unwrap();
        let serving = catalog
            .condition(pakket_resolve_api::ConditionType::Serving)
            .is_some_and(|c| c.status == "True");
        if serving && catalog.status.as_ref().and_then(|s| s.digest.as_deref()) == Some(digest) {
            return;
        }
        last = catalog.status;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Catalog {name} did not serve {digest} within 90 s: {last:#?}");
}

/// One way of asking: its exit code, stdout (json) and stdout (text).
#[derive(Debug, PartialEq, Eq)]
struct Printed {
    code: Option<i32>,
    json: String,
    text: String,
}

fn ask(common: &[String], requests: &[&str]) -> Printed {
    let run = |format: &str| {
        let mut args: Vec<&str> = vec!["resolve"];
        args.extend(common.iter().map(String::as_str));
        args.extend(["-o", format]);
        args.extend(requests);
        pakket(&args)
    };
    let (json, plain) = (run("json"), run("text"));
    assert_eq!(json.status.code(), plain.status.code());
    Printed {
        code: json.status.code(),
        json: text(&json.stdout),
        text: text(&plain.stdout),
    }
}

// Several threads: the test runs `pakket` synchronously while the
// in-process server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_and_resolve_server_print_what_resolve_prints_on_the_same_files() {
    let scope = Scope::new("resolve-server").await;
    install_crd(&scope.client).await;
    let running = process::start(
        scope.client.clone(),
        Options {
            store: scope.path("cli-store"),
            sources: Default::default(),
            // The catalog images are in the test registry, on loopback.
            allow_internal_addresses: true,
            max_catalog_file: process::DEFAULT_MAX_CATALOG_FILE,
            api_address: "127.0.0.1:0".parse().unwrap(),
            transport: Transport::from_flags("127.0.0.1:0".parse().unwrap(), true, None, None)
                .unwrap(),
            leader: None,
            selector: Some(scope.selector()),
            metrics: Arc::new(Metrics::new()),
            set: Default::default(),
            store_gc: Default::default(),
            record_key: None,
        },
    )
    .await
    .unwrap();
    let server = format!("http://{}", running.api_address);

    // Each catalog in a folder named as its Catalog, holding configs/ (OLM's
    // image layout): `pakket resolve --catalog FOLDER` names it alike.
    let root = Registry::shared().dir.join(format!("scratch-{}", scope.id));
    let community = root.join(scope.name("community"));
    let v420 = root.join(scope.name("v420"));
    std::fs::create_dir_all(community.join("configs")).unwrap();
    std::fs::copy(
        data("fbc/community-operators-prod-derived/catalog.json"),
        community.join("configs/catalog.json"),
    )
    .unwrap();
    copy_tree(
        &data("fbc/community-operators-prod-v4.20"),
        &v420.join("configs"),
    );

    let registry = Registry::shared();
    let mut served = Vec::new();
    for (dir, suffix, priority) in [(&community, "community", 0), (&v420, "v420", 10)] {
        let pinned = push(
            dir,
            &format!("{}/catalogs/{}-{suffix}:v1", registry.address, scope.id),
        );
        let digest = pinned.rsplit_once('@').unwrap().1.to_owned();
        let mut catalog = Catalog::new(
            &scope.name(suffix),
            CatalogSpec {
                source: CatalogSource {
                    image: Some(ImageCatalogSource { reference: pinned }),
                    ..CatalogSource::default()
                },
                priority,
                poll_interval: None,
            },
        );
        catalog.metadata.labels = Some(scope.labels());
        Api::<Catalog>::all(scope.client.clone())
            .create(&PostParams::default(), &catalog)
            .await
            .unwrap();
        served.push((scope.name(suffix), digest));
    }
    for (name, digest) in &served {
        wait_serving(&scope.client, name, digest).await;
    }

    let installed = root.join("installed.yaml");
    std::fs::write(&installed, "- package: etcd\n  version: 0.9.2\n").unwrap();
    let unknown = root.join("unknown.yaml");
    std::fs::write(&unknown, "- bundle: etcdoperator.v0.0.1\n").unwrap();
    let files = vec![
        "--catalog".to_owned(),
        format!("{}@10", v420.display()),
        "--catalog".to_owned(),
        community.display().to_string(),
    ];
    let remote = vec!["--server".to_owned(), server.clone()];
    let with = |base: &[String], file: &PathBuf| {
        let mut args = base.to_vec();
        args.extend(["--installed".to_owned(), file.display().to_string()]);
        args
    };
    // (installed file, requests, exit code expected)
    let table: Vec<(Option<&PathBuf>, Vec<&str>, i32)> = vec![
        (None, vec!["etcd"], 0),
        (None, vec!["etcd@clusterwide-alpha"], 0),
        (None, vec!["etcd@singlenamespace-alpha=<0.9.4"], 0),
        // An API dependency (cert-manager) pulled in.
        (None, vec!["alloydb-omni-operator"], 0),
        // Exact-version package dependencies.
        (None, vec!["kuadrant-operator"], 0),
        // In both catalogs: the v4.20 folder (priority 10) wins.
        (None, vec!["nfs-provisioner-operator"], 0),
        (None, vec!["kubevirt-wol", "etcd", "hive-operator"], 0),
        // No solution: the explanation's chain.
        (None, vec!["eclipse-che=>=7.100.0"], 1),
        (None, vec!["no-such-package"], 1),
        (None, vec!["etcd=>=99.0.0"], 1),
        // Installed bundles move up their graph.
        (Some(&installed), vec!["etcd"], 0),
        // The engine's own bad input: an installed bundle no catalog has.
        (Some(&unknown), vec!["etcd"], 2),
    ];
    let client = ResolverClient::new(&server, None, None).unwrap();
    for (installed, requests, code) in &table {
        let (local_args, remote_args) = match installed {
            Some(file) => (with(&files, file), with(&remote, file)),
            None => (files.clone(), remote.clone()),
        };
        let local = ask(&local_args, requests);
        let answered = ask(&remote_args, requests);
        assert_eq!(local.code, Some(*code), "{requests:?}: {}", local.json);
        assert_eq!(answered, local, "{requests:?}: --server differs from files");

        // The raw API answer is the very same bytes.
        let body = serde_json::json!({
            "requests": requests,
            "installed": installed.map(|file| {
                serde_saphyr::from_str::<serde_json::Value>(&std::fs::read_to_string(file).unwrap()).unwrap()
            }).unwrap_or_else(|| serde_json::json!([])),
        });
        let (status, raw) = client
            .call(
                reqwest::Method::POST,
                "/v1/resolve",
                Some(serde_json::to_vec(&body).unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(
            status,
            if *code == 2 { 400 } else { 200 },
            "{requests:?}: {raw}"
        );
        assert_eq!(
            raw, local.json,
            "{requests:?}: the API's body differs from files"
        );
    }

    // Bad request text: refused both ways (exit 2), the API naming the field.
    let local = ask(&files, &["etcd=>=x"]);
    let answered = ask(&remote, &["etcd=>=x"]);
    assert_eq!((local.code, answered.code), (Some(2), Some(2)));
    let message = |json: &str| {
        serde_json::from_str::<serde_json::Value>(json).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        message(&answered.json),
        format!("requests[0]: {}", message(&local.json))
    );

    // Each etcd channel's head (from the API's update graph) is what a
    // fresh install of that channel resolves to.
    let (status, body) = client
        .call(reqwest::Method::GET, "/v1/packages/etcd", None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let detail: PackageDetail = serde_json::from_str(&body).unwrap();
    let etcd = &detail.catalogs[0];
    assert_eq!(etcd.catalog, scope.name("community"));
    assert!(!etcd.edges.is_empty());
    for channel in etcd.channels.iter().filter(|c| c.heads.len() == 1) {
        let printed = ask(&files, &[&format!("etcd@{}", channel.name)]);
        let document: serde_json::Value = serde_json::from_str(&printed.json).unwrap();
        assert_eq!(
            document["resolved"][0]["bundle"], channel.heads[0],
            "channel {}",
            channel.name
        );
    }

    // A query for a package lists exactly the bundles the catalog file has
    // for it, read here from the file itself.
    let (status, body) = client
        .call(
            reqwest::Method::POST,
            "/v1/query",
            Some(br#"{"type": "olm.package", "value": {"packageName": "etcd"}}"#.to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let result: QueryResult = serde_json::from_str(&body).unwrap();
    let mut listed: Vec<&str> = result.bundles.iter().map(|b| b.name.as_str()).collect();
    listed.sort_unstable();
    let file = std::fs::read_to_string(community.join("configs/catalog.json")).unwrap();
    let mut expected: Vec<String> = file
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|doc| doc["schema"] == "olm.bundle" && doc["package"] == "etcd")
        .map(|doc| doc["name"].as_str().unwrap().to_owned())
        .collect();
    expected.sort_unstable();
    assert_eq!(listed, expected);

    let _ = Api::<Catalog>::all(scope.client.clone())
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&scope.selector()),
        )
        .await;
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(scope.path("cli-store"));
    scope.cleanup().await;
}

#[test]
fn server_and_catalog_flags_exclude_each_other_and_a_dead_server_is_named() {
    let output = pakket(&[
        "resolve",
        "--server",
        "http://127.0.0.1:9",
        "--catalog",
        "x.json",
        "etcd",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("cannot be used with"),
        "{}",
        text(&output.stderr)
    );

    let output = pakket(&["resolve", "--server", "http://127.0.0.1:9", "etcd"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("error: --server http://127.0.0.1:9: cannot reach"),
        "{stderr}"
    );
}
