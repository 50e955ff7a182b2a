//! `pakket image push` as dev/images/build.sh runs it: the real binary
//! against a real registry (Debian's docker-registry on loopback,
//! dev/registry/start.sh), the manifest and config read back through
//! pakket-runtime's client and the layer pulled with its `ImageSource`.
//!
//! The binaries are ELF headers written by the test (a static-pie x86-64
//! executable that is never run), so the test needs no musl toolchain.

#[path = "../../dev/registry/testing.rs"]
mod registry;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pakket_runtime::kernel::source::{ImageRef, ImageSource, PlainHttp, SourceOptions};
use registry::Registry;

fn pakket(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pakket"))
        .args(args)
        .env_remove("PAKKET_REGISTRY_USERNAME")
        .env_remove("PAKKET_REGISTRY_PASSWORD")
        .output()
        .expect("pakket runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh directory inside the shared registry's, removed with it.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Registry::shared().dir.join(format!("scratch-image-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes an executable at `dir/name`: the headers of a static-pie x86-64 ELF, one PT_LOAD.
fn static_program(dir: &Path, name: &str) -> PathBuf {
    let mut bytes = vec![0u8; 64];
    bytes[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    bytes[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN (static-pie)
    bytes[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes()); // program headers right after
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
    let mut load = [0u8; 56];
    load[..4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    bytes.extend_from_slice(&load);
    // Something of the name inside, so each program's bytes differ.
    bytes.extend_from_slice(name.as_bytes());
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn ca_bundle(dir: &Path) -> PathBuf {
    let path = dir.join("ca.crt");
    std::fs::write(
        &path,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    path
}

/// Pushes; returns the digest of the printed `TARGET@sha256:…` line.
fn push(target: &str, extra: &[&str]) -> String {
    let mut args = vec!["image", "push", target, "--plain-http"];
    args.extend_from_slice(extra);
    let output = pakket(&args);
    assert!(output.status.success(), "push failed: {}", stderr(&output));
    assert_eq!(stderr(&output), "", "progress goes to a terminal only");
    let printed = stdout(&output);
    let line = printed.strip_suffix('\n').expect("one line on stdout");
    let digest = line
        .strip_prefix(&format!("{target}@"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{line}"
    );
    digest.to_owned()
}

#[tokio::test]
async fn pushes_an_image_whose_manifest_is_the_printed_digest() {
    let registry = Registry::shared();
    let dir = temp_dir("manifest");
    let server = static_program(&dir, "pakket-package");
    let helper = static_program(&dir, "helm");
    let ca = ca_bundle(&dir);
    let target = format!("{}/pakket-package:0.1.0", registry.address);
    let args = [
        "--binary",
        server.to_str().unwrap(),
        "--binary",
        helper.to_str().unwrap(),
        "--ca-certificates",
        ca.to_str().unwrap(),
    ];
    let digest = push(&target, &args);

    let source = ImageSource::new(SourceOptions {
        plain_http: PlainHttp::Loopback,
        ..SourceOptions::default()
    });
    let image = ImageRef::parse(&format!("docker://{target}")).unwrap();
    let (manifest, manifest_digest, config) = source
        .client_for(&image)
        .unwrap()
        .pull_manifest_and_config(image.as_reference(), &source.auth())
        .await
        .unwrap();
    assert_eq!(
        manifest_digest, digest,
        "the tag's manifest is the printed digest"
    );
    assert_eq!(manifest.layers.len(), 1);
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(
        config["config"],
        serde_json::json!({
            "User": "65532:65532",
            "Entrypoint": ["/usr/local/bin/pakket-package"],
            "Env": ["PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "WorkingDir": "/",
        })
    );

    let pulled = source.pull_layers(&image, 1 << 20).await.unwrap();
    assert_eq!(pulled.digest, digest);
    let gzip = flate2::read::GzDecoder::new(pulled.layers[0].reader().unwrap());
    let entries: Vec<(String, u32)> = tar::Archive::new(gzip)
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            (path, entry.header().mode().unwrap())
        })
        .collect();
    let expected = [
        ("etc", 0o755),
        ("etc/ssl", 0o755),
        ("etc/ssl/certs", 0o755),
        ("etc/ssl/certs/ca-certificates.crt", 0o644),
        ("tmp", 0o1777),
        ("usr", 0o755),
        ("usr/local", 0o755),
        ("usr/local/bin", 0o755),
        ("usr/local/bin/helm", 0o755),
        ("usr/local/bin/pakket-package", 0o755),
    ]
    .map(|(path, mode)| (path.to_owned(), mode));
    assert_eq!(entries, expected);
}

#[test]
fn the_same_inputs_give_the_same_digest_under_any_tag() {
    let registry = Registry::shared();
    let dir = temp_dir("repeat");
    let program = static_program(&dir, "pakket-plain");
    let ca = ca_bundle(&dir);
    let args = [
        "--binary",
        program.to_str().unwrap(),
        "--ca-certificates",
        ca.to_str().unwrap(),
    ];
    let first = push(&format!("{}/pakket-plain:0.1.0", registry.address), &args);
    // A copy elsewhere, written later: other mtime, same bytes and name.
    let copy = temp_dir("repeat-copy");
    let copied = static_program(&copy, "pakket-plain");
    let again = push(
        &format!("{}/other/plain:latest", registry.address),
        &[
            "--binary",
            copied.to_str().unwrap(),
            "--ca-certificates",
            ca.to_str().unwrap(),
        ],
    );
    assert_eq!(first, again);

    let as_root = push(
        &format!("{}/pakket-plain:root", registry.address),
        &[&args[..], &["--user", "0"]].concat(),
    );
    assert_ne!(first, as_root, "the user is part of the image");
}

#[test]
fn what_cannot_run_in_the_image_is_bad_input_named_with_what_to_do() {
    let registry = Registry::shared();
    let target = format!("{}/refused:v1", registry.address);
    let dir = temp_dir("refused");

    let output = pakket(&[
        "image",
        "push",
        &target,
        "--plain-http",
        "--binary",
        "/bin/true",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("binary /bin/true is dynamically linked"),
        "{message}"
    );
    assert!(
        message.contains("--target x86_64-unknown-linux-musl"),
        "{message}"
    );
    assert_eq!(stdout(&output), "");

    let one = static_program(&dir, "tool");
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let other = static_program(&other_dir, "tool");
    let output = pakket(&[
        "image",
        "push",
        &target,
        "--plain-http",
        "--binary",
        one.to_str().unwrap(),
        "--binary",
        other.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("two binaries are named tool"),
        "{}",
        stderr(&output)
    );

    let output = pakket(&[
        "image",
        "push",
        &target,
        "--plain-http",
        "--binary",
        one.to_str().unwrap(),
        "--ca-certificates",
        "/nonexistent/ca.crt",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot read CA bundle /nonexistent/ca.crt"),
        "{}",
        stderr(&output)
    );

    // The same transport rules as bundle push.
    let output = pakket(&[
        "image",
        "push",
        "quay.io/pakket/tool:v1",
        "--plain-http",
        "--binary",
        one.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("refusing --plain-http to registry quay.io"),
        "{}",
        stderr(&output)
    );
}
