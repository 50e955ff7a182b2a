//! `pakket resolve` as a user runs it: the real binary on real catalogs.
//!
//! Data (unedited, see ../shared/data/README.md):
//! - `fbc/community-operators-prod-derived/catalog.json`: DERIVED from every
//!   bundle of redhat-openshift-ecosystem/community-operators-prod at 699495f2;
//! - `fbc/community-operators-prod-v4.20/`: verbatim `catalogs/v4.20/<pkg>/catalog.yaml`
//!   files of the same repository and commit.

use pakket_testkit::data as data_path;
use std::path::PathBuf;
use std::process::{Command, Output};

fn derived() -> String {
    data("fbc/community-operators-prod-derived/catalog.json")
}

fn pakket(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pakket"))
        .args(args)
        .output()
        .expect("pakket runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A file named `name` in a folder of its own, removed when dropped.
struct TempFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

fn temp_file(name: &str, contents: &str) -> TempFile {
    let dir = tempfile::Builder::new()
        .prefix("pakket-cli-")
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    TempFile { _dir: dir, path }
}

#[test]
fn resolves_a_package_with_its_api_dependency_and_says_why() {
    let output = pakket(&["resolve", "--catalog", &derived(), "alloydb-omni-operator"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("PACKAGE") && lines[0].contains("WHY"),
        "{text}"
    );
    let cert_manager = lines
        .iter()
        .find(|line| line.starts_with("cert-manager "))
        .expect("cert-manager row");
    assert!(
        cert_manager.contains("alloydb-omni-operator.v1.8.0 needs API cert-manager.io/v1/"),
        "{cert_manager}"
    );
}

#[test]
fn json_output_has_the_documented_shape() {
    let output = pakket(&[
        "resolve",
        "--catalog",
        &derived(),
        "-o",
        "json",
        "etcd@clusterwide-alpha",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let resolved = document["resolved"].as_array().unwrap();
    assert_eq!(resolved.len(), 1);
    let etcd = &resolved[0];
    for field in ["package", "version", "bundle", "channel", "catalog"] {
        assert!(etcd[field].is_string(), "{field} missing in {etcd}");
    }
    assert_eq!(etcd["package"], "etcd");
    assert_eq!(etcd["channel"], "clusterwide-alpha");
    assert_eq!(etcd["catalog"], "community-operators-prod-derived");
}

#[test]
fn yaml_output_parses_back_to_the_same_selection() {
    let output = pakket(&["resolve", "--catalog", &derived(), "-o", "yaml", "etcd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_saphyr::from_str(&stdout(&output)).unwrap();
    assert_eq!(document["resolved"][0]["bundle"], "etcdoperator.v0.9.4");
}

#[test]
fn no_solution_exits_1_with_the_chain_of_requirements() {
    let output = pakket(&["resolve", "--catalog", &derived(), "eclipse-che=>=7.100.0"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with("cannot install eclipse-che >=7.100.0"),
        "{text}"
    );
    assert!(
        text.contains("needs package devworkspace-operator (>=0.11.0)"),
        "{text}"
    );
    assert!(
        text.contains("no loaded catalog has a package named devworkspace-operator"),
        "{text}"
    );

    let output = pakket(&[
        "resolve",
        "--catalog",
        &derived(),
        "-o",
        "json",
        "eclipse-che=>=7.100.0",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["error"]["message"],
        "cannot install eclipse-che >=7.100.0"
    );
    let need = &document["error"]["explanation"]["needs"][0];
    assert_eq!(need["by"], "request eclipse-che >=7.100.0");
    assert_eq!(
        need["candidates"][0]["needs"][0]["noCandidates"],
        "no loaded catalog has a package named devworkspace-operator"
    );
}

#[test]
fn an_installed_bundle_moves_up_its_graph_and_the_reason_says_so() {
    let installed = temp_file("installed.yaml", "- package: etcd\n  version: 0.9.2\n");
    let output = pakket(&[
        "resolve",
        "--catalog",
        &derived(),
        "--installed",
        installed.to_str().unwrap(),
        "etcd",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("etcdoperator.v0.9.4"), "{text}");
    assert!(
        text.contains("updates installed etcdoperator.v0.9.2"),
        "{text}"
    );
}

#[test]
fn several_catalogs_with_priorities() {
    let catalog_dir = data("fbc/community-operators-prod-v4.20");
    // kubevirt-wol is only in the 4.20 folder; etcd only in the derived catalog.
    let output = pakket(&[
        "resolve",
        "--catalog",
        &format!("{catalog_dir}@10"),
        "--catalog",
        &derived(),
        "-o",
        "json",
        "kubevirt-wol",
        "etcd",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let catalogs: Vec<(&str, &str)> = document["resolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["package"].as_str().unwrap(),
                s["catalog"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        catalogs,
        [
            ("etcd", "community-operators-prod-derived"),
            ("kubevirt-wol", "community-operators-prod-v4.20")
        ]
    );
}

#[test]
fn bad_input_exits_2_and_names_what_is_wrong() {
    let output = pakket(&["resolve", "--catalog", &derived(), "etcd=>>1"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("invalid request \"etcd=>>1\""),
        "{message}"
    );
    assert!(message.contains("position"), "{message}");

    let broken = temp_file("broken.yaml", "- package: etcd\n  version: [\n");
    let output = pakket(&[
        "resolve",
        "--catalog",
        &derived(),
        "--installed",
        broken.to_str().unwrap(),
        "etcd",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("broken.yaml") && message.contains("line 2"),
        "{message}"
    );

    let unknown = temp_file("unknown.yaml", "- package: etcd\n  version: 9.9.9\n");
    let output = pakket(&[
        "resolve",
        "--catalog",
        &derived(),
        "--installed",
        unknown.to_str().unwrap(),
        "etcd",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("installed etcd 9.9.9 is in no catalog"),
        "{}",
        stderr(&output)
    );

    let output = pakket(&["resolve", "--catalog", "/nonexistent/catalog.json", "etcd"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/nonexistent/catalog.json"),
        "{}",
        stderr(&output)
    );

    let malformed = temp_file(
        "malformed.json",
        "{\"schema\":\"olm.package\",\"name\":\"x\"}\n{\"schema\": oops}\n",
    );
    let output = pakket(&["resolve", "--catalog", malformed.to_str().unwrap(), "x"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("malformed.json:2:12"), "{message}");
}

#[test]
fn a_cell_longer_than_65535_characters_prints_instead_of_panicking() {
    // Rust's formatting refuses widths past u16::MAX; a bundle name is the
    // catalog author's to choose.
    let name = format!("long.v1.0.0-{}", "x".repeat(70_000));
    let catalog = temp_file(
        "long.json",
        &format!(
            r#"{{"schema":"olm.package","name":"long","defaultChannel":"stable"}}
{{"schema":"olm.channel","package":"long","name":"stable","entries":[{{"name":"{name}"}}]}}
{{"schema":"olm.bundle","name":"{name}","package":"long","properties":[{{"type":"olm.package","value":{{"packageName":"long","version":"1.0.0"}}}}]}}
"#
        ),
    );
    let output = pakket(&["resolve", "--catalog", catalog.to_str().unwrap(), "long"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = text.lines().nth(1).expect("a row under the header");
    assert!(
        row.starts_with("long ") && row.contains(&name),
        "{row:.200}"
    );
}

#[test]
fn deprecated_bundles_are_marked_in_text_and_json() {
    let catalog = temp_file(
        "deprecated.yaml",
        "---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
- name: etcd.v0.9.2
- name: etcd.v0.9.4
  replaces: etcd.v0.9.2
---
schema: olm.bundle
name: etcd.v0.9.4
package: etcd
properties:
- {type: olm.package, value: {packageName: etcd, version: 0.9.4}}
---
schema: olm.bundle
name: etcd.v0.9.2
package: etcd
properties:
- {type: olm.package, value: {packageName: etcd, version: 0.9.2}}
---
schema: olm.deprecations
package: etcd
entries:
- reference: {schema: olm.bundle, name: etcd.v0.9.4}
  message: etcd.v0.9.4 corrupts snapshots; stay on etcd.v0.9.2
",
    );
    let catalog = catalog.to_str().unwrap();
    let output = pakket(&["resolve", "--catalog", catalog, "etcd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("etcd.v0.9.2"),
        "{}",
        stdout(&output)
    );

    let output = pakket(&["resolve", "--catalog", catalog, "etcd=0.9.4"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("etcd.v0.9.4 (deprecated)"), "{text}");
    assert!(
        text.contains("etcd.v0.9.4 is deprecated: etcd.v0.9.4 corrupts snapshots"),
        "{text}"
    );

    let output = pakket(&["resolve", "--catalog", catalog, "-o", "json", "etcd=0.9.4"]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["resolved"][0]["deprecated"],
        "etcd.v0.9.4 corrupts snapshots; stay on etcd.v0.9.2"
    );
}

/// A path in the shared test data, as an argument (`pakket_testkit::data`).
fn data(path: &str) -> String {
    data_path(path).display().to_string()
}

/// Charts in the shapes podinfo and a cache it needs publish (written
/// here, not public data): `helm.chart` documents resolve like bundles.
const CHARTS: &str = r#"schema: helm.chart
name: web
version: 1.0.0
chart: "helm+https://charts.example/#web@1.0.0"
dependencies:
- name: cache
  version: "~0.1"
---
schema: helm.chart
name: cache
version: 0.1.4
chart: oci://registry.example/charts/cache:0.1.4
---
schema: helm.chart
name: cache
version: 0.2.0
chart: oci://registry.example/charts/cache:0.2.0
"#;

#[test]
fn a_chart_resolves_with_the_chart_it_needs_in_helms_range_and_never_down() {
    let catalog = temp_file("charts.yaml", CHARTS);
    let output = pakket(&["resolve", "--catalog", catalog.to_str().unwrap(), "web"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.lines().any(|l| l.starts_with("cache")
            && l.contains("0.1.4")
            && l.contains("web.v1.0.0 needs package cache")),
        "`~0.1` as Helm reads it keeps cache below 0.2.0:\n{text}"
    );
    // cache 0.2.0 installed: web 1.0.0 cannot have it, and nothing goes down.
    let installed = temp_file("installed.yaml", "- {package: cache, version: 0.2.0}\n");
    let output = pakket(&[
        "resolve",
        "--catalog",
        catalog.to_str().unwrap(),
        "--installed",
        installed.to_str().unwrap(),
        "web",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("cache"), "{}", stdout(&output));
}
