//! Manifests from a directory: small fixtures written here for each rule,
//! and every manifest of the real OLM bundles in the shared data.

use std::fs;
use std::path::{Path, PathBuf};

use pakket_runtime::manifest::{self, DEFAULT_MAX_OBJECT_SIZE, Format, ManifestError, ObjectKey};

/// Writes `files` (relative path, text) under a fresh temp dir.
fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = temp.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    temp
}

fn load(dir: &Path) -> Result<Vec<manifest::Manifest>, ManifestError> {
    manifest::load_dir(dir, DEFAULT_MAX_OBJECT_SIZE)
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n";

#[test]
fn walks_sorted_splits_streams_and_skips_the_rest() {
    let dir = fixture(&[
        ("b.yaml", CONFIG_MAP),
        (
            "a/multi.yml",
            "# leading comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n---\n\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ns\n",
        ),
        (
            "c.JSON",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
        ),
        ("README.md", "not a manifest"),
        (".hidden.yaml", "not: [valid"),
        (".git/config.yaml", "not: [valid"),
    ]);
    let manifests = load(dir.path()).unwrap();
    let seen: Vec<(String, usize, usize, String)> = manifests
        .iter()
        .map(|m| {
            let key = m.key().unwrap();
            (
                m.file.display().to_string(),
                m.document,
                m.line,
                key.to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("a/multi.yml".into(), 0, 3, "v1 Namespace ns".into()),
            (
                "a/multi.yml".into(),
                1,
                10,
                "apps/v1 Deployment ns/web".into()
            ),
            ("b.yaml".into(), 0, 1, "v1 ConfigMap one".into()),
            ("c.JSON".into(), 0, 1, "v1 Secret s".into()),
        ]
    );
    let key = manifests[1].key().unwrap();
    assert_eq!(
        key,
        ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        }
    );
    assert_eq!(key.group(), "apps");
    assert_eq!(manifests[0].key().unwrap().group(), "");
}

#[test]
fn missing_fields_name_the_file_line_and_field() {
    for (text, field) in [
        ("kind: ConfigMap\nmetadata: {name: a}\n", "apiVersion"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "kind"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
            "metadata.name",
        ),
        ("apiVersion: v1\nkind: ConfigMap\n", "metadata.name"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n",
            "metadata.name",
        ),
        (
            "apiVersion: 1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "apiVersion",
        ),
    ] {
        let dir = fixture(&[("m.yaml", &format!("{CONFIG_MAP}---\n{text}"))]);
        let error = load(dir.path()).unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, ManifestError::MissingField { at, field: f } if at.line == 6 && *f == field),
            "{message}"
        );
        assert!(message.starts_with("m.yaml:6: "), "{message}");
        assert!(
            message.contains(field) && message.contains("add it"),
            "{message}"
        );
    }
}

#[test]
fn malformed_yaml_and_json_name_the_file_and_line() {
    let dir = fixture(&[(
        "bad.yaml",
        &format!("{CONFIG_MAP}---\na: 1\nb: [unclosed\nc: 2\n"),
    )]);
    let error = load(dir.path()).unwrap_err();
    let ManifestError::Syntax { at, format, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(
        (at.file.as_path(), *format),
        (Path::new("bad.yaml"), "YAML")
    );
    assert!(at.line >= 7, "{error}");
    assert!(error.to_string().contains("fix the syntax"), "{error}");

    let dir = fixture(&[(
        "bad.json",
        "{\n  \"apiVersion\": \"v1\",\n  \"kind\" \"x\"\n}",
    )]);
    let error = load(dir.path()).unwrap_err();
    assert!(
        matches!(&error, ManifestError::Syntax { at, format: "JSON", .. } if at.line == 3),
        "{error}"
    );

    let dir = fixture(&[("dup.yaml", "apiVersion: v1\napiVersion: v2\n")]);
    assert!(matches!(
        load(dir.path()),
        Err(ManifestError::Syntax { .. })
    ));
}

#[test]
fn other_shapes_are_refused() {
    let dir = fixture(&[("list.yaml", "- a\n- b\n")]);
    let error = load(dir.path()).unwrap_err();
    assert!(
        matches!(
            error,
            ManifestError::NotAnObject {
                found: "a list",
                ..
            }
        ),
        "{error}"
    );

    let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n";
    let dir = fixture(&[("list.yaml", list)]);
    let error = load(dir.path()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("write each item as its own document"),
        "{error}"
    );

    let dir = fixture(&[(
        "ns.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: [x]}\n",
    )]);
    let error = load(dir.path()).unwrap_err();
    assert!(
        matches!(error, ManifestError::InvalidNamespace { .. }),
        "{error}"
    );

    let error = manifest::parse(Path::new("x.yaml"), b"a: \xff\n", Format::Yaml, 100).unwrap_err();
    assert!(matches!(error, ManifestError::NotUtf8 { .. }), "{error}");
}

#[test]
fn objects_over_the_size_limit_are_refused() {
    let big = format!("{CONFIG_MAP}data:\n  blob: {}\n", "x".repeat(2000));
    let manifests =
        manifest::parse(Path::new("big.yaml"), big.as_bytes(), Format::Yaml, 4096).unwrap();
    assert_eq!(manifests.len(), 1);
    let error =
        manifest::parse(Path::new("big.yaml"), big.as_bytes(), Format::Yaml, 1000).unwrap_err();
    assert!(
        matches!(error, ManifestError::TooLarge { size, limit: 1000, .. } if size > 2000 && size < 2100),
        "{error}"
    );
    assert!(error.to_string().contains("maxObjectSize"), "{error}");
}

#[test]
fn duplicates_name_both_places() {
    let dir = fixture(&[
        ("a.yaml", CONFIG_MAP),
        (
            "b.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: one}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n",
        ),
    ]);
    let manifests = load(dir.path()).unwrap();
    let error = manifest::check_duplicates(&manifests).unwrap_err();
    assert_eq!(
        error.to_string(),
        "v1 ConfigMap one is defined twice, at a.yaml:1 and at b.yaml:5; remove one of them"
    );

    // Same group, kind and name at another version: one object in a cluster.
    let dir = fixture(&[
        (
            "a.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\n",
        ),
        (
            "b.yaml",
            "apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: d, namespace: x}\n",
        ),
        (
            "c.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: other}\n",
        ),
    ]);
    let manifests = load(dir.path()).unwrap();
    let error = manifest::check_duplicates(&manifests).unwrap_err();
    assert!(matches!(error, ManifestError::Duplicate { .. }), "{error}");
    manifest::check_duplicates(&[manifests[0].clone(), manifests[2].clone()]).unwrap();
}

#[test]
fn symlinks_are_followed_only_to_files_inside() {
    // A mounted ConfigMap: visible links into a hidden, versioned folder.
    let dir = fixture(&[("..2024_01_01/cm.yaml", CONFIG_MAP)]);
    std::os::unix::fs::symlink("..2024_01_01", dir.path().join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/cm.yaml", dir.path().join("cm.yaml")).unwrap();
    let manifests = load(dir.path()).unwrap();
    assert_eq!(manifests.len(), 1);
    assert_eq!(manifests[0].file, PathBuf::from("cm.yaml"));

    let outside = fixture(&[("secret.yaml", CONFIG_MAP)]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.yaml"),
        dir.path().join("leak.yaml"),
    )
    .unwrap();
    let error = load(dir.path()).unwrap_err();
    assert!(matches!(error, ManifestError::Link { .. }), "{error}");
}

/// Every manifest of the real registry+v1 bundles under
/// `bundles/<package>/<version>/manifests/`: verbatim copies from
/// redhat-openshift-ecosystem/community-operators-prod at commit
/// 699495f2ff526f9679a0d9d54688f09c683eff2c (see shared/data/README.md).
#[test]
fn real_olm_bundle_manifests_parse() {
    let bundles = pakket_testkit::data_root().join("bundles");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&bundles)
        .unwrap_or_else(|e| panic!("{}: {e}; set PAKKET_DATA", bundles.display()))
        .flat_map(|package| fs::read_dir(package.unwrap().path()).unwrap())
        .map(|version| version.unwrap().path().join("manifests"))
        .filter(|dir| dir.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "found {dirs:?}");
    let mut objects = 0;
    for dir in &dirs {
        let manifests = load(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let yaml_files = fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "yaml")
            })
            .count();
        assert!(manifests.len() >= yaml_files, "{}", dir.display());
        for manifest in &manifests {
            let key = manifest.key().unwrap();
            assert!(!key.api_version.is_empty() && !key.kind.is_empty() && !key.name.is_empty());
            assert!(manifest.line >= 1);
        }
        assert!(
            manifests
                .iter()
                .any(|m| m.object["kind"] == "ClusterServiceVersion"),
            "{}",
            dir.display()
        );
        manifest::check_duplicates(&manifests).unwrap();
        objects += manifests.len();
    }
    assert!(objects >= 31, "{objects} objects");
}
