//! `deploy/chart/`: the Helm chart installs what `deploy/install.sh`
//! applies. With its default values `helm template` renders exactly the
//! objects `kubectl kustomize deploy/` builds; with `certManager.enabled`,
//! exactly install.sh's cert-manager overlay; a provisioner switched off
//! takes exactly the objects of its files in `deploy/` away; `helm lint
//! --strict` is clean; and the chart's `crds/` is the repository's.
//!
//! Pure: the pinned helm and kubectl render, no apiserver is asked.
//! `webhooks/tests/deploy.rs` dry-runs deploy/'s objects against one, and
//! these tests make the chart's the same objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A pinned binary: in the folder `$VARIABLE` names (dev/test.sh sets it),
/// otherwise in the one `script` builds, or finds built, and prints.
fn pinned(variable: &str, script: &str, binary: &str) -> PathBuf {
    let dir = match std::env::var_os(variable) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let output = Command::new(repo_path(script)).output().unwrap();
            assert!(
                output.status.success(),
                "{script} (for ${variable}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
            PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
        }
    };
    dir.join(binary)
}

fn helm() -> Command {
    Command::new(pinned(
        "PAKKET_HELM_BIN",
        "dev/controlplane/build-helm.sh",
        "helm",
    ))
}

fn kubectl() -> Command {
    Command::new(pinned(
        "PAKKET_CONTROLPLANE_BIN",
        "dev/controlplane/build.sh",
        "kubectl",
    ))
}

/// Runs `command`, which must succeed; its stdout.
fn run(mut command: Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// An object's identity: kind, namespace (empty for cluster objects), name.
type Key = (String, String, String);

fn key_text((kind, namespace, name): &Key) -> String {
    if namespace.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}/{namespace}/{name}")
    }
}

/// The objects of a YAML stream by identity; two with one identity fail.
fn objects(yaml: &str, source: &str) -> BTreeMap<Key, Value> {
    let mut objects = BTreeMap::new();
    let documents = serde_saphyr::from_multiple::<Value>(yaml)
        .unwrap_or_else(|error| panic!("{source}: not YAML: {error}"));
    for object in documents.into_iter().filter(|o| !o.is_null()) {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let key = (
            text(&object["kind"]),
            text(&object["metadata"]["namespace"]),
            text(&object["metadata"]["name"]),
        );
        assert!(
            !key.0.is_empty() && !key.2.is_empty(),
            "{source}: a document without kind or name: {object}"
        );
        let shown = key_text(&key);
        assert!(
            objects.insert(key, object).is_none(),
            "{source}: {shown} twice"
        );
    }
    objects
}

/// `helm template` of deploy/chart with `--set` values.
fn chart(values: &[&str]) -> BTreeMap<Key, Value> {
    let mut command = helm();
    command
        .args(["template", "pakket"])
        .arg(repo_path("deploy/chart"))
        .args(["--namespace", "pakket-system"]);
    for value in values {
        command.args(["--set", value]);
    }
    objects(&run(command), &format!("helm template --set {values:?}"))
}

/// `kubectl kustomize DIR`.
fn kustomized(dir: &Path) -> BTreeMap<Key, Value> {
    let mut command = kubectl();
    command.arg("kustomize").arg(dir);
    objects(
        &run(command),
        &format!("kubectl kustomize {}", dir.display()),
    )
}

/// The paths where `left` and `right` differ, one line each.
fn differences(path: &str, left: &Value, right: &Value, out: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for key in keys {
                let at = format!("{path}.{key}");
                match (l.get(key), r.get(key)) {
                    (Some(a), Some(b)) => differences(&at, a, b, out),
                    (Some(a), None) => out.push(format!("- {at}: {a}")),
                    (None, Some(b)) => out.push(format!("+ {at}: {b}")),
                    (None, None) => unreachable!(),
                }
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (index, (a, b)) in l.iter().zip(r).enumerate() {
                differences(&format!("{path}[{index}]"), a, b, out);
            }
        }
        _ if left == right => {}
        _ => {
            out.push(format!("- {path}: {left}"));
            out.push(format!("+ {path}: {right}"));
        }
    }
}

/// Fails, naming every object missing, extra or different, with the paths
/// that differ (`-` what `expected_source` has, `+` what the chart renders).
fn assert_same_objects(
    expected: &BTreeMap<Key, Value>,
    rendered: &BTreeMap<Key, Value>,
    expected_source: &str,
    rendered_source: &str,
) {
    let mut report = Vec::new();
    for (key, object) in expected {
        match rendered.get(key) {
            None => report.push(format!("missing from the chart: {}", key_text(key))),
            Some(chart_object) => {
                let mut lines = Vec::new();
                differences("", object, chart_object, &mut lines);
                if !lines.is_empty() {
                    report.push(format!(
                        "{} differs:\n  {}",
                        key_text(key),
                        lines.join("\n  ")
                    ));
                }
            }
        }
    }
    for key in rendered.keys().filter(|key| !expected.contains_key(*key)) {
        report.push(format!("only in the chart: {}", key_text(key)));
    }
    assert!(
        report.is_empty(),
        "{rendered_source} is not {expected_source} (- {expected_source}, + the chart; \
         change deploy/chart/templates/ with deploy/):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_charts_defaults_render_the_kustomization_install_applies() {
    let expected = kustomized(&repo_path("deploy"));
    assert!(expected.len() > 50, "only {} objects", expected.len());
    assert_same_objects(
        &expected,
        &chart(&[]),
        "kubectl kustomize deploy",
        "helm template deploy/chart",
    );
}

/// install.sh's overlay for `--cert-manager`: deploy/, deploy/cert-manager/
/// and the patch of the webhooks' Deployment, read from install.sh itself
/// (its here-document) so that the test cannot drift from it.
fn cert_manager_overlay(dir: &Path) {
    let script = std::fs::read_to_string(repo_path("deploy/install.sh")).unwrap();
    let patches = script
        .split_once("cat <<'EOF'\n")
        .and_then(|(_, rest)| rest.split_once("\nEOF\n"))
        .map(|(patches, _)| patches)
        .expect("deploy/install.sh: the cert-manager patch (a here-document, cat <<'EOF')");
    assert!(patches.starts_with("patches:"), "{patches}");
    let deploy = repo_path("deploy").canonicalize().unwrap();
    // Kustomize takes relative paths only.
    let up = "../".repeat(dir.canonicalize().unwrap().components().count() - 1);
    let deploy = format!("{up}{}", deploy.strip_prefix("/").unwrap().display());
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
         resources:\n- {deploy}\n- {deploy}/cert-manager\n{patches}\n"
    );
    std::fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
}

#[test]
fn with_cert_manager_the_chart_renders_install_shs_cert_manager_overlay() {
    let overlay = tempfile::tempdir().unwrap();
    cert_manager_overlay(overlay.path());
    let expected = kustomized(overlay.path());
    assert!(
        expected.contains_key(&(
            "Certificate".to_owned(),
            "pakket-system".to_owned(),
            "pakket-webhooks".to_owned()
        )),
        "{:?}",
        expected.keys()
    );
    assert_same_objects(
        &expected,
        &chart(&["certManager.enabled=true"]),
        "install.sh --cert-manager's overlay",
        "helm template deploy/chart --set certManager.enabled=true",
    );
}

/// The objects of the kustomization's files under `deploy/DIR/`.
fn objects_of(dir: &str) -> BTreeMap<Key, Value> {
    let kustomization = std::fs::read_to_string(repo_path("deploy/kustomization.yaml")).unwrap();
    let prefix = format!("- {dir}/");
    let mut found = BTreeMap::new();
    for line in kustomization.lines().filter(|l| l.starts_with(&prefix)) {
        let file = &line[2..];
        let text = std::fs::read_to_string(repo_path(&format!("deploy/{file}"))).unwrap();
        found.extend(objects(&text, file));
    }
    assert!(
        !found.is_empty(),
        "deploy/kustomization.yaml lists nothing under {dir}/"
    );
    found
}

#[test]
fn a_provisioner_switched_off_takes_exactly_its_objects_away() {
    let all = kustomized(&repo_path("deploy"));
    for (value, dir) in [
        ("plain", "plain"),
        ("registryV1", "registry-v1"),
        ("package", "package"),
        ("helm", "helm"),
        ("resolveset", "resolveset"),
    ] {
        let gone = objects_of(dir);
        let mut expected = all.clone();
        expected.retain(|key, _| !gone.contains_key(key));
        assert_eq!(expected.len(), all.len() - gone.len(), "{dir}: {gone:?}");
        assert_same_objects(
            &expected,
            &chart(&[&format!("{value}.enabled=false")]),
            &format!("kubectl kustomize deploy without deploy/{dir}/"),
            &format!("helm template deploy/chart --set {value}.enabled=false"),
        );
    }
}

#[test]
fn images_are_pinned_by_digest_and_a_bad_digest_is_refused() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let rendered = chart(&[
        "plain.image.repository=registry.example/pakket-plain",
        &format!("plain.image.digest={digest}"),
        "helm.image.tag=0.2.0",
    ]);
    let image = |name: &str| {
        let key = (
            "Deployment".to_owned(),
            "pakket-system".to_owned(),
            name.to_owned(),
        );
        rendered[&key]["spec"]["template"]["spec"]["containers"][0]["image"].clone()
    };
    assert_eq!(
        image("pakket-plain"),
        format!("registry.example/pakket-plain@{digest}")
    );
    assert_eq!(image("pakket-helm"), "pakket-helm:0.2.0");
    assert_eq!(image("pakket-webhooks"), "pakket-webhooks:0.1.0");

    let output = helm()
        .args(["template", "pakket"])
        .arg(repo_path("deploy/chart"))
        .args(["--set", "webhooks.image.digest=latest"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("is not sha256:"),
        "{stderr}"
    );
}

#[test]
fn helm_lint_strict_is_clean() {
    let mut command = helm();
    command
        .args(["lint", "--strict"])
        .arg(repo_path("deploy/chart"));
    let said = run(command);
    assert!(said.contains("0 chart(s) failed"), "{said}");
    assert!(
        !said.contains("[WARNING]") && !said.contains("[ERROR]"),
        "{said}"
    );
}

/// deploy/chart/crds is a link to crds/ (generated from the Rust types), so
/// Helm installs exactly the CRDs install.sh applies; `helm package` puts
/// their contents in the archive.
#[test]
fn the_charts_crds_are_the_repositorys_and_helm_packages_them() {
    let link = repo_path("deploy/chart/crds");
    assert_eq!(
        std::fs::read_link(&link).ok(),
        Some(PathBuf::from("../../crds")),
        "deploy/chart/crds must stay a link to ../../crds (the CRDs are generated there)"
    );
    let out = tempfile::tempdir().unwrap();
    let mut command = helm();
    command
        .arg("package")
        .arg(repo_path("deploy/chart"))
        .arg("--destination")
        .arg(out.path());
    run(command);
    let archive = out.path().join("pakket-0.1.0.tgz");
    let mut command = Command::new("tar");
    command.arg("-xzf").arg(&archive).arg("-C").arg(out.path());
    run(command);
    let packaged = files_in(&out.path().join("pakket/crds"));
    let generated = files_in(&repo_path("crds"));
    assert_eq!(
        packaged.keys().collect::<Vec<_>>(),
        generated.keys().collect::<Vec<_>>(),
        "the packaged chart's crds/ and crds/ hold other files"
    );
    for (name, text) in &generated {
        assert!(
            packaged[name] == *text,
            "the packaged chart's crds/{name} is not crds/{name}"
        );
    }
    // The packaged chart renders with no link left to follow.
    let mut command = helm();
    command
        .args(["template", "pakket"])
        .arg(&archive)
        .arg("--include-crds");
    let rendered = objects(&run(command), "helm template of the packaged chart");
    let crds = rendered
        .keys()
        .filter(|(kind, _, _)| kind == "CustomResourceDefinition")
        .count();
    assert_eq!(crds, generated.len());
}

/// The files in `dir` (a folder of files) by name, with their text.
fn files_in(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}
