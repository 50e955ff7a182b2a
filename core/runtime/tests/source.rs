//! The OCI image source against a real registry (Debian's docker-registry on
//! loopback, started by dev/registry/start.sh): push with oci-client, then
//! resolve, pull and unpack with `ImageSource`.
//!
//! Data: `bundles/etcd/0.9.4/` of the shared test data, a verbatim registry+v1
//! bundle from redhat-openshift-ecosystem/community-operators-prod at 699495f2
//! (`operators/etcd/0.9.4/`); see ../shared/data/README.md.

mod images;
#[path = "../../../dev/registry/testing.rs"]
mod registry;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use images::{push, sha256};
use oci_client::manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE;
use pakket_runtime::kernel::archive::Limits;
use pakket_runtime::kernel::source::{
    Credentials, ImageRef, ImageSource, PlainHttp, SourceError, SourceOptions,
};
use pakket_testkit::{data, files};
use registry::Registry;

const MAX: u64 = 64 << 20;

fn etcd_bundle() -> PathBuf {
    data("bundles/etcd/0.9.4")
}

/// A gzip'd tar of the named subdirectories of `dir`.
fn layer_of(dir: &Path, subdirs: &[&str]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for subdir in subdirs {
        tar.append_dir_all(subdir, dir.join(subdir)).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A fresh directory inside the shared registry's, which the registry's
/// watchdog removes when this test binary exits.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Registry::shared().dir.join(format!("scratch-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn loopback() -> ImageSource {
    ImageSource::new(SourceOptions::default())
}

fn image(registry: &Registry, repository_and_tag: &str) -> ImageRef {
    ImageRef::parse(&registry.image(repository_and_tag)).unwrap()
}

#[tokio::test]
async fn pulls_back_the_etcd_bundle_byte_for_byte_at_the_digest_its_tag_resolves_to() {
    let registry = Registry::shared();
    let source = loopback();
    let tagged = image(registry, "bundles/etcd:v0.9.4");
    let layer = layer_of(&etcd_bundle(), &["manifests", "metadata"]);

    let started = Instant::now();
    let pushed = push(
        &source,
        &tagged,
        &[(layer.clone(), IMAGE_LAYER_GZIP_MEDIA_TYPE)],
    )
    .await;
    let push_time = started.elapsed();

    let started = Instant::now();
    let resolved = source.resolve(&tagged).await.unwrap();
    let resolve_time = started.elapsed();
    assert_eq!(resolved, pushed);

    let started = Instant::now();
    let pulled = source.pull_layers(&tagged, MAX).await.unwrap();
    let pull_time = started.elapsed();
    assert_eq!(pulled.digest, pushed);
    assert_eq!(
        pulled.pinned.to_string(),
        registry.image(&format!("bundles/etcd@{pushed}"))
    );
    assert_eq!(pulled.layers.len(), 1);
    assert_eq!(pulled.layers[0].bytes().unwrap(), layer);
    assert_eq!(pulled.layers[0].digest, sha256(&layer));

    let dest = temp_dir("etcd").join("unpacked");
    let started = Instant::now();
    let extracted = pulled.unpack(&dest, &Limits::default()).unwrap();
    let unpack_time = started.elapsed();
    let original = files(&etcd_bundle());
    assert_eq!(
        files(&dest),
        original,
        "unpacked files differ from the bundle directory"
    );
    assert_eq!(extracted.files, original.len() as u64);

    println!(
        "etcd bundle ({} files, {} bytes gzip'd): push {push_time:.1?}, resolve {resolve_time:.1?}, \
         pull {pull_time:.1?}, unpack {unpack_time:.1?}",
        original.len(),
        layer.len()
    );
    let started = Instant::now();
    for _ in 0..10 {
        source.resolve(&tagged).await.unwrap();
    }
    println!(
        "resolve a tag, mean of 10 on a warm client: {:.1?}",
        started.elapsed() / 10
    );
}

#[tokio::test]
async fn a_pinned_ref_pulls_the_same_image_and_checks_the_digest() {
    let registry = Registry::shared();
    let source = loopback();
    let tagged = image(registry, "bundles/pinned:v1");
    let layer = layer_of(&etcd_bundle(), &["metadata"]);
    let digest = push(
        &source,
        &tagged,
        &[(layer.clone(), IMAGE_LAYER_GZIP_MEDIA_TYPE)],
    )
    .await;

    let pinned = tagged.pinned(&digest);
    assert_eq!(source.resolve(&pinned).await.unwrap(), digest);
    let pulled = source.pull_layers(&pinned, MAX).await.unwrap();
    assert_eq!(pulled.digest, digest);
    assert_eq!(pulled.layers[0].bytes().unwrap(), layer);

    let absent = tagged.pinned(&format!("sha256:{}", "0".repeat(64)));
    let error = source.pull_layers(&absent, MAX).await.unwrap_err();
    assert!(matches!(error, SourceError::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn an_unknown_tag_or_repository_is_named_with_the_registrys_error_code() {
    let registry = Registry::shared();
    let source = loopback();
    let tagged = image(registry, "bundles/unknown-tag:v1");
    push(
        &source,
        &tagged,
        &[(
            layer_of(&etcd_bundle(), &["metadata"]),
            IMAGE_LAYER_GZIP_MEDIA_TYPE,
        )],
    )
    .await;

    let missing = image(registry, "bundles/unknown-tag:v9.9.9");
    for error in [
        source.resolve(&missing).await.unwrap_err(),
        source.pull_layers(&missing, MAX).await.unwrap_err(),
    ] {
        let message = error.to_string();
        println!("unknown tag: {message}");
        assert!(matches!(error, SourceError::NotFound { .. }), "{message}");
        assert!(message.contains(&missing.to_string()), "{message}");
        // The registry's code, never its own text (a status is read by
        // the requester; the registry answered the provisioner).
        assert!(
            message.contains("it answered MANIFEST_UNKNOWN"),
            "{message}"
        );
        assert!(!message.contains("manifest unknown"), "{message}");
        assert!(
            message.contains("check the repository and tag"),
            "{message}"
        );
        assert!(!error.is_terminal());
        assert_eq!(error.metric_label(), "not_found");
    }

    let nowhere = image(registry, "no/such-repository:v1");
    let message = source.resolve(&nowhere).await.unwrap_err().to_string();
    println!("unknown repository: {message}");
    // distribution 2.8 answers MANIFEST_UNKNOWN here too (NAME_UNKNOWN is for tag lists).
    assert!(
        message.contains("no image docker://127.0.0.1:"),
        "{message}"
    );
    assert!(message.contains("MANIFEST_UNKNOWN"), "{message}");
}

#[tokio::test]
async fn a_registry_that_is_down_is_a_clear_error_not_a_hang() {
    let own = Registry::start("down", None);
    let image = image(&own, "bundles/etcd:v1");
    own.stop();
    let source = loopback();
    let started = Instant::now();
    let error = source.pull_layers(&image, MAX).await.unwrap_err();
    println!("registry down ({:.1?}): {error}", started.elapsed());
    let message = error.to_string();
    assert!(
        matches!(error, SourceError::Unreachable { .. }),
        "{message}"
    );
    assert!(
        message.contains(&format!("cannot reach registry {}", own.address)),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    assert!(
        message.contains(&format!("is the registry running at {}?", own.address)),
        "{message}"
    );
    assert!(!error.is_terminal());

    // A port nothing ever listened on, through resolve.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = ImageRef::parse(&format!("docker://127.0.0.1:{port}/x/y:v1")).unwrap();
    let message = source.resolve(&closed).await.unwrap_err().to_string();
    assert!(message.contains("Connection refused"), "{message}");
}

#[tokio::test]
async fn a_registry_that_never_answers_times_out() {
    // A socket that accepts connections and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap();
    let options = SourceOptions {
        request_timeout: Duration::from_millis(700),
        ..SourceOptions::default()
    };
    let source = ImageSource::new(options);
    let image = ImageRef::parse(&format!("docker://{address}/x/y:v1")).unwrap();
    let started = Instant::now();
    let error = source.resolve(&image).await.unwrap_err();
    println!("silent registry ({:.1?}): {error}", started.elapsed());
    assert!(matches!(error, SourceError::Timeout { .. }), "{error}");
    assert!(
        error.to_string().contains("resolve docker://127.0.0.1:"),
        "{error}"
    );
    assert!(
        error.to_string().contains("timed out after 700ms"),
        "{error}"
    );
    drop(silent);
}

#[tokio::test]
async fn a_registry_that_requires_credentials_says_so_and_accepts_them() {
    let own = Registry::start("auth", Some("alice:s3cret"));
    let image = image(&own, "bundles/private:v1");
    let with = |password: &str| {
        ImageSource::new(SourceOptions {
            credentials: Some(Credentials {
                username: "alice".into(),
                password: password.into(),
            }),
            ..SourceOptions::default()
        })
    };
    let alice = with("s3cret");
    let layer = layer_of(&etcd_bundle(), &["metadata"]);
    let digest = push(&alice, &image, &[(layer, IMAGE_LAYER_GZIP_MEDIA_TYPE)]).await;
    assert_eq!(alice.pull_layers(&image, MAX).await.unwrap().digest, digest);

    for (who, source) in [("anonymous", loopback()), ("wrong password", with("guess"))] {
        let error = source.resolve(&image).await.unwrap_err();
        println!("{who}: {error}");
        let message = error.to_string();
        assert!(
            matches!(error, SourceError::Unauthorized { .. }),
            "{who}: {message}"
        );
        assert!(message.contains("401 Unauthorized"), "{message}");
        assert!(
            message.contains("give credentials that may resolve it (a pull secret"),
            "{message}"
        );
    }
    own.stop();
}

#[tokio::test]
async fn an_image_over_the_size_limit_is_refused_before_download() {
    let registry = Registry::shared();
    let source = loopback();
    let image = image(registry, "bundles/large:v1");
    let layer = layer_of(&etcd_bundle(), &["manifests", "metadata"]);
    let size = layer.len() as u64;
    push(&source, &image, &[(layer, IMAGE_LAYER_GZIP_MEDIA_TYPE)]).await;
    let error = source.pull_layers(&image, size - 1).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, SourceError::TooLarge { .. }), "{message}");
    assert!(
        message.contains(&format!("its layers declare {size} bytes")),
        "{message}"
    );
    assert!(
        message.contains(&format!("limit of {} bytes", size - 1)),
        "{message}"
    );
    assert!(error.is_terminal());
    assert!(source.pull_layers(&image, size).await.is_ok());
}

#[tokio::test]
async fn layers_pakket_cannot_unpack_are_refused_by_media_type_and_a_helm_chart_is_not_one() {
    let registry = Registry::shared();
    let source = loopback();
    // zstd: a compression Pakket does not unpack.
    let compressed = image(registry, "zstd/etcd:v1");
    let zstd = "application/vnd.oci.image.layer.v1.tar+zstd";
    push(
        &source,
        &compressed,
        &[(layer_of(&etcd_bundle(), &["metadata"]), zstd)],
    )
    .await;
    let error = source.pull_layers(&compressed, MAX).await.unwrap_err();
    assert!(
        matches!(error, SourceError::UnsupportedLayer { .. }),
        "{error}"
    );
    assert!(error.to_string().contains(zstd), "{error}");
    assert!(error.is_terminal());
    // A Helm chart pushed to a registry (`oci://` chart refs): its layer
    // is the chart's gzip'd tar, unpacked as such.
    let chart = image(registry, "charts/etcd:v1");
    let helm = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
    push(
        &source,
        &chart,
        &[(layer_of(&etcd_bundle(), &["metadata"]), helm)],
    )
    .await;
    let pulled = source.pull_layers(&chart, MAX).await.unwrap();
    assert_eq!(pulled.layers[0].media_type, helm);
}

#[tokio::test]
async fn layers_are_unpacked_in_order_into_one_tree_and_overlaps_are_refused() {
    let registry = Registry::shared();
    let source = loopback();
    // As `docker build` makes bundle images: one layer per COPY.
    let split = image(registry, "bundles/two-layers:v1");
    let layers = [
        (
            layer_of(&etcd_bundle(), &["manifests"]),
            IMAGE_LAYER_GZIP_MEDIA_TYPE,
        ),
        (
            layer_of(&etcd_bundle(), &["metadata"]),
            IMAGE_LAYER_GZIP_MEDIA_TYPE,
        ),
    ];
    push(&source, &split, &layers).await;
    let pulled = source.pull_layers(&split, MAX).await.unwrap();
    assert_eq!(pulled.layers.len(), 2);
    let dest = temp_dir("layers").join("unpacked");
    pulled.unpack(&dest, &Limits::default()).unwrap();
    assert_eq!(files(&dest), files(&etcd_bundle()));

    let overlapping = image(registry, "bundles/overlapping:v1");
    let twice = layer_of(&etcd_bundle(), &["metadata"]);
    let layers = [
        (twice.clone(), IMAGE_LAYER_GZIP_MEDIA_TYPE),
        (
            layer_of(&etcd_bundle(), &["manifests", "metadata"]),
            IMAGE_LAYER_GZIP_MEDIA_TYPE,
        ),
    ];
    push(&source, &overlapping, &layers).await;
    let pulled = source.pull_layers(&overlapping, MAX).await.unwrap();
    let dest = temp_dir("overlap").join("unpacked");
    let error = pulled.unpack(&dest, &Limits::default()).unwrap_err();
    println!("overlapping layers: {error}");
    assert!(matches!(error, SourceError::Unpack { .. }), "{error}");
    assert!(
        error.to_string().contains(&pulled.layers[1].digest),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("\"metadata/\" appears more than once"),
        "{error}"
    );
    assert!(error.is_terminal());
    assert!(!dest.exists(), "a failed unpack leaves nothing behind");
}

#[tokio::test]
async fn https_to_a_plain_http_loopback_registry_says_to_allow_plain_http() {
    let registry = Registry::shared();
    let source = ImageSource::new(SourceOptions {
        plain_http: PlainHttp::Never,
        ..SourceOptions::default()
    });
    let error = source
        .resolve(&image(registry, "bundles/etcd:v0.9.4"))
        .await
        .unwrap_err();
    println!("https to plain http: {error}");
    assert!(matches!(error, SourceError::Tls { .. }), "{error}");
    assert!(error.to_string().contains("--plain-http"), "{error}");
}
