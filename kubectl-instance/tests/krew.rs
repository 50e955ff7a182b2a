//! `deploy/krew/instance.yaml` and `dev/release/krew-archive.sh`: the
//! manifest names this crate's binaries and the four platforms, and the
//! script packs the real binaries in the layout the manifest reads, filling
//! in the version and that platform's sha256.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn manifest(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The binaries this crate builds, as the manifest must ship them.
const BINARIES: [&str; 2] = ["kubectl-instance", "kubectl_complete-instance"];

#[test]
fn the_manifest_ships_both_binaries_on_four_platforms() {
    let plugin = manifest(&repo().join("deploy/krew/instance.yaml"));
    assert_eq!(
        plugin["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(plugin["kind"], "Plugin");
    assert_eq!(plugin["metadata"]["name"], "instance");
    let platforms = plugin["spec"]["platforms"].as_array().unwrap();
    let mut seen = Vec::new();
    for platform in platforms {
        let labels = &platform["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().unwrap(),
            labels["arch"].as_str().unwrap(),
        );
        seen.push(format!("{os}/{arch}"));
        assert_eq!(platform["bin"], "kubectl-instance");
        let files: Vec<&str> = platform["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["from"].as_str().unwrap())
            .collect();
        assert_eq!(files, BINARIES, "{os}/{arch}");
        let uri = platform["uri"].as_str().unwrap();
        assert!(
            uri.ends_with(&format!("kubectl-instance_VERSION_{os}_{arch}.tar.gz")),
            "{uri}"
        );
        assert_eq!(
            platform["sha256"],
            format!("SHA256_{}_{}", os.to_uppercase(), arch.to_uppercase()),
            "the placeholder the release script fills"
        );
    }
    assert_eq!(
        seen,
        ["linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"]
    );
}

#[test]
fn the_release_script_packs_the_layout_and_fills_the_sha256() {
    let dist = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-instance"))
        .parent()
        .unwrap();
    assert!(bin_dir.join("kubectl_complete-instance").is_file());
    let output = Command::new(repo().join("dev/release/krew-archive.sh"))
        .args(["v0.0.1", "linux", "amd64"])
        .arg(bin_dir)
        .env("KREW_DIST", dist.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let printed = String::from_utf8(output.stdout).unwrap();
    let (sum, archive) = printed.trim().split_once("  ").unwrap();
    assert!(
        archive.ends_with("kubectl-instance_v0.0.1_linux_amd64.tar.gz"),
        "{archive}"
    );

    let listed = Command::new("tar")
        .arg("-tzf")
        .arg(archive)
        .output()
        .unwrap();
    let mut names: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    names.retain(|name| name != "LICENSE");
    assert_eq!(names, BINARIES);

    let filled = manifest(&dist.path().join("instance.yaml"));
    assert_eq!(filled["spec"]["version"], "v0.0.1");
    let linux = &filled["spec"]["platforms"][0];
    assert_eq!(linux["sha256"], sum);
    assert!(
        linux["uri"]
            .as_str()
            .unwrap()
            .ends_with("/v0.0.1/kubectl-instance_v0.0.1_linux_amd64.tar.gz"),
        "{linux}"
    );
    // Platforms not packed yet keep their placeholder.
    assert_eq!(
        filled["spec"]["platforms"][3]["sha256"],
        "SHA256_DARWIN_ARM64"
    );
}
