//! `pakket bundle push` as a user runs it: the real binary against a real
//! registry (Debian's docker-registry on loopback, dev/registry/start.sh),
//! pulled back with pakket-runtime's `ImageSource`.
//!
//! Data: `bundles/etcd/0.9.4/` of the shared test data, a verbatim registry+v1
//! bundle from redhat-openshift-ecosystem/community-operators-prod at 699495f2
//! (`operators/etcd/0.9.4/`); see ../shared/data/README.md.

#[path = "../../dev/registry/testing.rs"]
mod registry;

use pakket_testkit::files;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use oci_client::manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE;
use pakket_runtime::kernel::archive::Limits;
use pakket_runtime::kernel::source::{ImageRef, ImageSource, SourceOptions};
use registry::Registry;

/// The etcd bundle in the shared data: `$PAKKET_DATA`, else `../shared/data` beside the repository.
fn etcd_bundle() -> PathBuf {
    pakket_testkit::data("bundles/etcd/0.9.4")
}

fn pakket(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pakket"))
        .args(args)
        .env_remove("PAKKET_REGISTRY_USERNAME")
        .env_remove("PAKKET_REGISTRY_PASSWORD")
        .envs(env.iter().copied())
        .output()
        .expect("pakket runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Pushes `dir` to `target` over plain HTTP; returns the printed `REF@sha256:…` line.
fn push(dir: &Path, target: &str) -> String {
    let output = pakket(
        &[
            "bundle",
            "push",
            &dir.display().to_string(),
            target,
            "--plain-http",
        ],
        &[],
    );
    assert!(output.status.success(), "push failed: {}", stderr(&output));
    // Progress goes to a terminal only; here stderr is a pipe.
    assert_eq!(stderr(&output), "");
    let printed = stdout(&output);
    let line = printed.strip_suffix('\n').expect("one line on stdout");
    let digest = line
        .strip_prefix(&format!("{target}@sha256:"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{line}"
    );
    line.to_owned()
}

fn digest_of(printed: &str) -> &str {
    &printed[printed.find("@sha256:").unwrap() + 1..]
}

/// A fresh directory inside the shared registry's, which the registry's
/// watchdog removes when this test binary exits.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Registry::shared().dir.join(format!("scratch-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn pushes_the_etcd_bundle_and_it_pulls_back_byte_identical() {
    let registry = Registry::shared();
    let target = format!("{}/bundles/etcd:v0.9.4", registry.address);
    let started = Instant::now();
    let printed = push(&etcd_bundle(), &target);
    let push_time = started.elapsed();
    let digest = digest_of(&printed);

    let source = ImageSource::new(SourceOptions::default());
    let tagged = ImageRef::parse(&format!("docker://{target}")).unwrap();
    let started = Instant::now();
    assert_eq!(
        source.resolve(&tagged).await.unwrap(),
        digest,
        "the tag resolves to the printed digest"
    );
    let resolve_time = started.elapsed();

    // The printed ref is pinned: it pulls the same image.
    let pinned = ImageRef::parse(&format!("docker://{printed}")).unwrap();
    let started = Instant::now();
    let pulled = source.pull_layers(&pinned, 64 << 20).await.unwrap();
    let pull_time = started.elapsed();
    assert_eq!(pulled.digest, digest);
    assert_eq!(pulled.layers.len(), 1);
    assert_eq!(pulled.layers[0].media_type, IMAGE_LAYER_GZIP_MEDIA_TYPE);

    // Entries: directories before their contents, byte order, owner 0:0, mtime 0.
    let gzip = flate2::read::GzDecoder::new(pulled.layers[0].reader().unwrap());
    let mut archive = tar::Archive::new(gzip);
    let entries: Vec<(String, u32)> = archive
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let header = entry.header();
            assert_eq!(
                (
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                    header.mtime().unwrap()
                ),
                (0, 0, 0)
            );
            (
                entry.path().unwrap().display().to_string(),
                header.mode().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("manifests".to_owned(), 0o755),
            (
                "manifests/etcdbackups.etcd.database.coreos.com.crd.yaml".to_owned(),
                0o644
            ),
            (
                "manifests/etcdclusters.etcd.database.coreos.com.crd.yaml".to_owned(),
                0o644
            ),
            (
                "manifests/etcdoperator.v0.9.4.clusterserviceversion.yaml".to_owned(),
                0o644
            ),
            (
                "manifests/etcdrestores.etcd.database.coreos.com.crd.yaml".to_owned(),
                0o644
            ),
            ("metadata".to_owned(), 0o755),
            ("metadata/annotations.yaml".to_owned(), 0o644),
        ]
    );

    let dest = temp_dir("etcd").join("unpacked");
    pulled.unpack(&dest, &Limits::default()).unwrap();
    assert_eq!(
        files(&dest),
        files(&etcd_bundle()),
        "pulled files differ from the bundle directory"
    );
    println!(
        "etcd bundle: `pakket bundle push` {push_time:.1?} (whole process), resolve {resolve_time:.1?}, \
         pull {pull_time:.1?} ({} bytes)",
        pulled.size()
    );
}

#[test]
fn pushing_the_same_directory_twice_gives_the_same_digest() {
    let registry = Registry::shared();
    let first = push(
        &etcd_bundle(),
        &format!("{}/bundles/repeat:a", registry.address),
    );
    let again = push(
        &etcd_bundle(),
        &format!("{}/bundles/repeat:a", registry.address),
    );
    let elsewhere = push(
        &etcd_bundle(),
        &format!("{}/other/repo:b", registry.address),
    );
    // A copy of the directory, with fresh mtimes and its own inode order.
    let copy = temp_dir("copy");
    for (path, bytes) in files(&etcd_bundle()) {
        let file = copy.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
    let copied = push(&copy, &format!("{}/bundles/repeat:copy", registry.address));
    assert_eq!(digest_of(&first), digest_of(&again));
    assert_eq!(digest_of(&first), digest_of(&elsewhere));
    assert_eq!(digest_of(&first), digest_of(&copied));
}

#[test]
fn a_missing_directory_or_a_bad_ref_is_bad_input_named_in_the_message() {
    let registry = Registry::shared();
    let target = format!("{}/bundles/x:v1", registry.address);
    let output = pakket(
        &[
            "bundle",
            "push",
            "/nonexistent/bundle",
            &target,
            "--plain-http",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot read bundle directory /nonexistent/bundle"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "");

    let dir = etcd_bundle().display().to_string();
    let output = pakket(
        &[
            "bundle",
            "push",
            &dir,
            "127.0.0.1:5000/Bundles/X:v1",
            "--plain-http",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("is not a valid image ref"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn plain_http_is_refused_off_loopback_unless_forced() {
    let dir = etcd_bundle().display().to_string();
    let output = pakket(
        &[
            "bundle",
            "push",
            &dir,
            "quay.io/pakket/etcd:v1",
            "--plain-http",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("refusing --plain-http to registry quay.io"),
        "{message}"
    );
    assert!(message.contains("--insecure-plain-http"), "{message}");
}

#[test]
fn https_to_the_plain_http_registry_says_to_add_plain_http() {
    let registry = Registry::shared();
    let dir = etcd_bundle().display().to_string();
    let target = format!("{}/bundles/tls:v1", registry.address);
    let output = pakket(&["bundle", "push", &dir, &target], &[]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("TLS with registry {} failed", registry.address)),
        "{message}"
    );
    assert!(message.contains("--plain-http"), "{message}");
}

#[test]
fn a_registry_that_is_down_is_named_with_what_to_check() {
    let own = Registry::start("down", None);
    own.stop();
    let dir = etcd_bundle().display().to_string();
    let target = format!("{}/bundles/etcd:v1", own.address);
    let started = Instant::now();
    let output = pakket(&["bundle", "push", &dir, &target, "--plain-http"], &[]);
    println!(
        "push to a stopped registry failed in {:.1?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("cannot reach registry {}", own.address)),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    assert!(message.contains("is the registry running"), "{message}");
}

#[test]
fn a_registry_with_basic_auth_takes_the_username_and_the_password_from_the_environment() {
    let own = Registry::start("auth", Some("bob:hunter2"));
    let dir = etcd_bundle().display().to_string();
    let target = format!("{}/private/etcd:v1", own.address);

    let output = pakket(&["bundle", "push", &dir, &target, "--plain-http"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("without valid credentials"),
        "{}",
        stderr(&output)
    );

    let output = pakket(
        &[
            "bundle",
            "push",
            &dir,
            &target,
            "--plain-http",
            "--username",
            "bob",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("set PAKKET_REGISTRY_PASSWORD"),
        "{}",
        stderr(&output)
    );

    let password = [("PAKKET_REGISTRY_PASSWORD", "hunter2")];
    let output = pakket(
        &[
            "bundle",
            "push",
            &dir,
            &target,
            "--plain-http",
            "--username",
            "bob",
        ],
        &password,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with(&format!("{target}@sha256:")));
    own.stop();
}

#[test]
fn bundle_rbac_reads_an_image_ref_as_it_reads_the_directory() {
    let registry = Registry::shared();
    let target = registry.image("cli/rbac-etcd:v0.9.4");
    let pushed = push(&etcd_bundle(), &target);
    let from_dir = pakket(
        &[
            "bundle",
            "rbac",
            &etcd_bundle().display().to_string(),
            "--install-namespace",
            "operators",
        ],
        &[],
    );
    let from_ref = pakket(
        &[
            "bundle",
            "rbac",
            pushed.trim(),
            "--install-namespace",
            "operators",
        ],
        &[],
    );
    assert!(from_dir.status.success(), "{}", stderr(&from_dir));
    assert!(from_ref.status.success(), "{}", stderr(&from_ref));
    // The first line names what was read; the roles are the same.
    let roles = |output: &Output| {
        stdout(output)
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(roles(&from_ref), roles(&from_dir));
    assert!(
        roles(&from_ref).contains("kind: ClusterRole"),
        "{}",
        stdout(&from_ref)
    );

    // Neither a directory nor a ref: bad input, said in words.
    let neither = pakket(&["bundle", "rbac", "no/such/dir"], &[]);
    assert_eq!(neither.status.code(), Some(2));
    assert!(
        stderr(&neither).contains("no/such/dir is neither a bundle directory nor an image ref"),
        "{}",
        stderr(&neither)
    );
    // A ref nothing answers: the pull's own error, exit 2.
    let down = pakket(&["bundle", "rbac", "docker://127.0.0.1:1/nothing:v1"], &[]);
    assert_eq!(down.status.code(), Some(2));
    assert!(stderr(&down).contains("127.0.0.1:1"), "{}", stderr(&down));
}
