//! `https://` tarball refs through `content::unpack`, against a real HTTPS
//! server on loopback (rustls with a CA made for the test, trusted through
//! `SourceOptions::extra_roots`), and one end to end through the controller.
//!
//! Data: `bundles/etcd/0.9.4/` of the shared test data, a verbatim
//! registry+v1 bundle from redhat-openshift-ecosystem/community-operators-prod
//! at 699495f2 (`operators/etcd/0.9.4/`); see ../shared/data/README.md.

mod support;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::os::unix::fs::MetadataExt as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pakket_api::{BundleSpec, ConditionType, UnpackPhase};
use pakket_runtime::kernel::content::{self, ContentError, ImageSources, UnpackOptions};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::kernel::store::{Digest, Store};
use pakket_testkit::{condition_is, data, files};
use serde_json::json;
use support::{Controller, HttpsServer, Scratch, config_map, tarball};

/// The etcd bundle as a release tarball would hold it: gzip'd, or plain tar.
fn etcd_tarball(gzip: bool) -> Vec<u8> {
    let dir = data("bundles/etcd/0.9.4");
    let mut tar = tar::Builder::new(Vec::new());
    tar.append_dir_all("manifests", dir.join("manifests"))
        .unwrap();
    tar.append_dir_all("metadata", dir.join("metadata"))
        .unwrap();
    let plain = tar.into_inner().unwrap();
    if !gzip {
        return plain;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, &plain).unwrap();
    encoder.finish().unwrap()
}

/// What the test server serves, and how often each tarball was downloaded.
#[derive(Clone, Default)]
struct Served {
    files: Arc<BTreeMap<&'static str, Vec<u8>>>,
    downloads: Arc<AtomicUsize>,
}

async fn serve_file(
    State(served): State<Served>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Response {
    match served.files.get(name.as_str()) {
        Some(bytes) => {
            served.downloads.fetch_add(1, Ordering::Relaxed);
            bytes.clone().into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            "<html><body><h1>404 Not Found</h1>\n<p>no such release asset</p></body></html>",
        )
            .into_response(),
    }
}

/// A body that never ends.
async fn endless() -> Response {
    let chunk = Bytes::from(vec![0u8; 64 << 10]);
    let stream = futures::stream::repeat(Ok::<_, Infallible>(chunk));
    Body::from_stream(stream).into_response()
}

/// Declares a gigabyte and sends nothing.
async fn huge() -> Response {
    let stream = futures::stream::pending::<Result<Bytes, Infallible>>();
    (
        [(header::CONTENT_LENGTH, (1u64 << 30).to_string())],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Sends headers, then nothing, forever.
async fn silent() -> Response {
    let stream = futures::stream::pending::<Result<Bytes, Infallible>>();
    Body::from_stream(stream).into_response()
}

fn server(files: BTreeMap<&'static str, Vec<u8>>) -> (HttpsServer, Served) {
    let served = Served {
        files: Arc::new(files),
        downloads: Arc::default(),
    };
    let router = Router::new()
        .route("/releases/{name}", get(serve_file))
        .route("/endless.tar.gz", get(endless))
        .route("/huge.tar.gz", get(huge))
        .route("/silent.tar.gz", get(silent))
        .with_state(served.clone());
    (HttpsServer::start(router), served)
}

/// A client for `content::unpack`'s signature; these refs never use it.
fn unused_client() -> kube::Client {
    let config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn trusting(server: &HttpsServer) -> SourceOptions {
    SourceOptions {
        extra_roots: vec![server.ca_pem.clone()],
        ..SourceOptions::default()
    }
}

fn spec(reference: &str) -> BundleSpec {
    BundleSpec {
        class: "unused".into(),
        refs: vec![reference.into()],
        volume_mounts: vec![],
    }
}

async fn unpack(
    reference: &str,
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
) -> Result<content::Unpacked, ContentError> {
    content::unpack(&unused_client(), &spec(reference), store, sources, options).await
}

#[tokio::test]
async fn unpacks_a_tarball_by_its_sha256_and_a_pinned_stored_one_is_not_downloaded() {
    let gzip = etcd_tarball(true);
    let plain = etcd_tarball(false);
    let (server, served) = server(BTreeMap::from([
        ("etcd.tar.gz", gzip.clone()),
        ("etcd.tar", plain.clone()),
    ]));
    let sources = ImageSources::new(trusting(&server));
    let scratch = Scratch::new("https-unpack");
    let store = scratch.store();
    let options = loopback();
    let reference = server.url("releases/etcd.tar.gz");

    // (a) Downloaded, keyed by the sha256 of the bytes as served.
    let started = Instant::now();
    let first = unpack(&reference, &store, &sources, &options)
        .await
        .unwrap();
    let first_time = started.elapsed();
    assert_eq!(first.digest, Digest::of(&gzip));
    assert_eq!(first.reference, reference);
    assert_eq!(first.commit, None);
    assert_eq!(files(&first.dir), files(&data("bundles/etcd/0.9.4")));
    assert_eq!(served.downloads.load(Ordering::Relaxed), 1);
    let before = std::fs::metadata(&first.dir).unwrap();

    // (b) Unpinned: downloaded again (only the bytes say what it is), but
    // the same bytes are not unpacked again.
    let second = unpack(&reference, &store, &sources, &options)
        .await
        .unwrap();
    assert_eq!(second.digest, first.digest);
    assert_eq!(served.downloads.load(Ordering::Relaxed), 2);
    let after = std::fs::metadata(&second.dir).unwrap();
    assert_eq!(
        (after.ino(), after.mtime(), after.mtime_nsec()),
        (before.ino(), before.mtime(), before.mtime_nsec()),
        "the stored content was not written again"
    );

    // (c) Pinned to a digest the store holds: not even downloaded.
    let pinned = format!("{reference}#sha256={}", first.digest.hex());
    let started = Instant::now();
    let third = unpack(&pinned, &store, &sources, &options).await.unwrap();
    let pinned_time = started.elapsed();
    assert_eq!(third.digest, first.digest);
    assert_eq!(third.dir, first.dir);
    assert_eq!(served.downloads.load(Ordering::Relaxed), 2);

    // (d) A plain (uncompressed) tar is detected and unpacks the same files.
    let plain_ref = server.url("releases/etcd.tar");
    let untarred = unpack(&plain_ref, &store, &sources, &options)
        .await
        .unwrap();
    assert_eq!(untarred.digest, Digest::of(&plain));
    assert_eq!(files(&untarred.dir), files(&first.dir));
    assert_eq!(store.digests().unwrap().len(), 2);
    println!(
        "etcd tarball ({} bytes gzip'd): download + unpack {first_time:.1?}; pinned and stored: {pinned_time:.1?}",
        gzip.len()
    );
}

#[tokio::test]
async fn a_pin_that_does_not_match_fails_before_unpacking_naming_both_digests() {
    let gzip = etcd_tarball(true);
    let (server, _) = server(BTreeMap::from([("etcd.tar.gz", gzip.clone())]));
    let sources = ImageSources::new(trusting(&server));
    let scratch = Scratch::new("https-mismatch");
    let store = scratch.store();
    let wrong = "0".repeat(64);
    let reference = format!("{}#sha256={wrong}", server.url("releases/etcd.tar.gz"));
    let error = unpack(&reference, &store, &sources, &loopback())
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("pin mismatch: {message}");
    assert!(matches!(error, ContentError::Https { .. }), "{message}");
    assert!(
        message.contains(&format!("expected sha256:{wrong}")),
        "{message}"
    );
    assert!(
        message.contains(&format!("got {}", Digest::of(&gzip))),
        "{message}"
    );
    assert!(message.starts_with("spec.refs[0] "), "{message}");
    assert!(error.is_terminal());
    assert!(store.digests().unwrap().is_empty(), "nothing was unpacked");
}

#[tokio::test]
async fn a_missing_file_names_the_status_but_never_echoes_the_servers_body() {
    let (server, _) = server(BTreeMap::new());
    let sources = ImageSources::new(trusting(&server));
    let reference = server.url("releases/nope.tar.gz");
    let error = unpack(
        &reference,
        &Scratch::new("https-404").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("404: {message}");
    assert!(
        message.contains("the server answered HTTP 404"),
        "{message}"
    );
    // The body is what the provisioner saw, not what the requester may see.
    assert!(
        !message.contains("no such release asset") && !message.contains("<html>"),
        "{message}"
    );
    assert!(message.contains("check the URL"), "{message}");
    assert!(!error.is_terminal(), "the file may be published later");
}

#[tokio::test]
async fn an_unreachable_server_and_an_untrusted_certificate_are_named() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sources = ImageSources::new(SourceOptions::default());
    let reference = format!("https://127.0.0.1:{port}/b.tar.gz");
    let error = unpack(
        &reference,
        &Scratch::new("https-down").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("unreachable: {message}");
    assert!(
        message.contains(&format!("cannot reach 127.0.0.1:{port}")),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    assert!(!error.is_terminal());

    // A server whose CA is not trusted: the system roots alone refuse it.
    let (server, served) = server(BTreeMap::from([("etcd.tar.gz", etcd_tarball(true))]));
    let reference = server.url("releases/etcd.tar.gz");
    let error = unpack(
        &reference,
        &Scratch::new("https-untrusted").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("untrusted: {message}");
    assert!(message.contains("TLS with 127.0.0.1:"), "{message}");
    assert!(message.contains("extra roots"), "{message}");
    assert_eq!(served.downloads.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn an_endless_or_oversized_body_stops_at_the_limit() {
    let (server, _) = server(BTreeMap::new());
    let sources = ImageSources::new(trusting(&server));
    let options = UnpackOptions {
        max_download_size: 1 << 20,
        ..loopback()
    };
    let error = unpack(
        &server.url("endless.tar.gz"),
        &Scratch::new("https-endless").store(),
        &sources,
        &options,
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("endless: {message}");
    assert!(
        message.contains("the server sent more than 1048576 bytes"),
        "{message}"
    );
    assert!(error.is_terminal());

    // A declared length over the limit fails before any body is read (the
    // body would never come).
    let error = unpack(
        &server.url("huge.tar.gz"),
        &Scratch::new("https-huge").store(),
        &sources,
        &options,
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("the server declares 1073741824 bytes, over the limit of 1048576"),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_goes_silent_times_out() {
    let (server, _) = server(BTreeMap::new());
    let sources = ImageSources::new(SourceOptions {
        read_timeout: Duration::from_millis(500),
        ..trusting(&server)
    });
    let error = unpack(
        &server.url("silent.tar.gz"),
        &Scratch::new("https-silent").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("silent: {message}");
    assert!(message.contains("timed out after 500ms"), "{message}");
    assert!(!error.is_terminal());
}

#[tokio::test]
async fn unsafe_archives_are_refused_by_the_extractor() {
    let escape = tarball(&[("../outside.yaml", b"kind: ConfigMap\n")]);
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_size(0);
    header.set_mode(0o777);
    tar.append_link(&mut header, "manifests/passwd.yaml", "/etc/passwd")
        .unwrap();
    let link = tar.into_inner().unwrap();
    let (server, _) = server(BTreeMap::from([
        ("escape.tar.gz", escape),
        ("link.tar", link),
    ]));
    let sources = ImageSources::new(trusting(&server));
    let scratch = Scratch::new("https-unsafe");
    let store = scratch.store();
    for (name, expected) in [
        ("escape.tar.gz", "../outside.yaml"),
        ("link.tar", "manifests/passwd.yaml"),
    ] {
        let error = unpack(
            &server.url(&format!("releases/{name}")),
            &store,
            &sources,
            &loopback(),
        )
        .await
        .unwrap_err();
        let message = error.to_string();
        println!("{name}: {message}");
        assert!(
            message.contains("cannot unpack https://127.0.0.1:"),
            "{message}"
        );
        assert!(message.contains(expected), "{message}");
        assert!(error.is_terminal(), "{message}");
    }
    assert!(store.digests().unwrap().is_empty());
    assert!(!store.root().join("outside.yaml").exists());
}

#[tokio::test]
async fn the_controller_installs_an_instance_from_a_tarball_and_pins_its_digest() {
    // The server's CA is known only once it runs, and the manifests name
    // the test's namespace, known only once the controller runs: serve
    // whatever the test puts in the shared map.
    let contents: Arc<std::sync::Mutex<Vec<u8>>> = Arc::default();
    let shared = Arc::clone(&contents);
    let router = Router::new().route(
        "/bundle.tar.gz",
        get(move || {
            let shared = Arc::clone(&shared);
            async move { shared.lock().unwrap().clone() }
        }),
    );
    let server = HttpsServer::start(router);
    let controller = Controller::start(
        "https-install",
        json!({"allowInternalAddresses": true}),
        |_| trusting(&server),
    )
    .await;
    let namespace = controller.scope.namespace.clone();
    let first = config_map(&namespace, "from-tarball", "one");
    let second = config_map(&namespace, "also-from-tarball", "two");
    let bytes = tarball(&[
        ("manifests/first.yaml", first.as_bytes()),
        ("manifests/second.yaml", second.as_bytes()),
    ]);
    *contents.lock().unwrap() = bytes.clone();
    let reference = format!(
        "{}#sha256={}",
        server.url("bundle.tar.gz"),
        Digest::of(&bytes).hex()
    );

    let started = Instant::now();
    controller
        .create("instance", "class", "bundle", &reference)
        .await;
    let installed = controller.installed("instance").await;
    println!(
        "https tarball: created to Installed in {:.1?}",
        started.elapsed()
    );
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(installed.status.as_ref().unwrap().objects.len(), 2);
    assert_eq!(
        controller.value_of("from-tarball").await.as_deref(),
        Some("one")
    );
    assert_eq!(
        controller.value_of("also-from-tarball").await.as_deref(),
        Some("two")
    );
    let status = controller.bundle_status("bundle").await;
    assert_eq!(status.unpacked, UnpackPhase::Done);
    let source = status.source.unwrap();
    assert_eq!(source.reference, reference);
    assert_eq!(source.digest.as_deref(), Some(Digest::of(&bytes).as_str()));
    assert_eq!(source.commit, None);
    controller.cleanup(&["instance"]).await;
}

/// Options for the loopback test servers: the class allows internal
/// addresses (without it, the address guard refuses them).
fn loopback() -> UnpackOptions {
    UnpackOptions {
        allow_internal_addresses: true,
        ..UnpackOptions::default()
    }
}

#[tokio::test]
async fn internal_addresses_are_refused_unless_the_class_allows_them_and_nothing_is_sent() {
    let tarball = etcd_tarball(true);
    let (server, served) = server(BTreeMap::from([("etcd.tar.gz", tarball)]));
    let sources = ImageSources::new(trusting(&server));
    let public_only = UnpackOptions {
        class: "plain".into(),
        ..UnpackOptions::default()
    };
    let by_name = server
        .url("releases/etcd.tar.gz")
        .replace("127.0.0.1", "localhost");
    for reference in [server.url("releases/etcd.tar.gz"), by_name] {
        let error = unpack(
            &reference,
            &Scratch::new("https-internal").store(),
            &sources,
            &public_only,
        )
        .await
        .unwrap_err();
        let message = error.to_string();
        println!("refused: {message}");
        assert!(
            message.contains("nothing was sent to it")
                && message.contains(
                    "ProvisionerClass plain does not allow internal addresses (set its parameter allowInternalAddresses: true"
                ),
            "{message}"
        );
        assert!(error.is_terminal(), "the same ref is refused every time");
    }
    assert_eq!(
        served.downloads.load(Ordering::Relaxed),
        0,
        "nothing reached the server"
    );

    // The class allows them: the same ref downloads.
    unpack(
        &server.url("releases/etcd.tar.gz"),
        &Scratch::new("https-internal-allowed").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap();
    assert_eq!(served.downloads.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn several_refs_are_one_content_each_under_its_index_and_any_change_is_new_content() {
    // A package's manifests from two URLs (a manifest file and a tarball):
    // both fetched, each under its position, keyed by both.
    let crd = std::fs::read(data(
        "bundles/etcd/0.9.4/manifests/etcdclusters.etcd.database.coreos.com.crd.yaml",
    ))
    .unwrap();
    let gzip = etcd_tarball(true);
    let (server, _) = server(BTreeMap::from([
        ("crd.yaml", crd.clone()),
        ("etcd.tar.gz", gzip.clone()),
        ("other.yaml", b"kind: ConfigMap\n".to_vec()),
    ]));
    let sources = ImageSources::new(trusting(&server));
    let scratch = Scratch::new("https-several");
    let store = scratch.store();
    let options = loopback();
    let refs = |first: &str| BundleSpec {
        class: "unused".into(),
        refs: vec![server.url(first), server.url("releases/etcd.tar.gz")],
        volume_mounts: vec![],
    };
    let both = content::unpack(
        &unused_client(),
        &refs("releases/crd.yaml"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read(both.dir.join("0/crd.yaml")).unwrap(), crd);
    assert_eq!(
        files(&both.dir.join("1")),
        files(&data("bundles/etcd/0.9.4"))
    );
    assert!(both.reference.contains("crd.yaml") && both.reference.contains("etcd.tar.gz"));
    let again = content::unpack(
        &unused_client(),
        &refs("releases/crd.yaml"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert_eq!(
        again.digest, both.digest,
        "the same refs and bytes are the same content"
    );
    let other = content::unpack(
        &unused_client(),
        &refs("releases/other.yaml"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert_ne!(
        other.digest, both.digest,
        "another first file is other content"
    );
    // A failing ref fails the whole content, naming its position.
    let error = content::unpack(
        &unused_client(),
        &refs("releases/missing.yaml"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap_err();
    assert!(error.to_string().starts_with("spec.refs[0]"), "{error}");
}
