//! Loading: every schema, and what each kind of mistake does.

use std::path::PathBuf;

use super::*;
use crate::{Range, Version};

fn yaml(text: &str) -> Catalog {
    Catalog::from_str(text, "test.yaml", Format::Yaml, "test", 0).unwrap()
}

fn codes(catalog: &Catalog) -> Vec<DiagnosticCode> {
    catalog.diagnostics.iter().map(|d| d.code).collect()
}

/// The first diagnostic with `code` (diagnostics are in file and line order).
fn find(catalog: &Catalog, code: DiagnosticCode) -> &Diagnostic {
    let found = catalog.diagnostics.iter().find(|d| d.code == code);
    found.unwrap_or_else(|| panic!("no {code} in {:#?}", catalog.diagnostics))
}

fn bundle_names(catalog: &Catalog) -> Vec<&str> {
    catalog.bundles.iter().map(|b| b.name.as_str()).collect()
}

const PACKAGE: &str = "
schema: olm.package
name: etcd
defaultChannel: alpha
description: A distributed key value store
";

const CHANNEL: &str = "
---
schema: olm.channel
package: etcd
name: alpha
entries:
- name: etcd.v0.9.2
- name: etcd.v0.9.4
  replaces: etcd.v0.9.2
";

/// A bundle document with extra properties appended.
fn bundle(version: &str, extra: &str) -> String {
    format!(
        "
---
schema: olm.bundle
name: etcd.v{version}
package: etcd
image: quay.io/etcd:v{version}
properties:
- {{type: olm.package, value: {{packageName: etcd, version: {version}}}}}
{extra}"
    )
}

fn etcd(extra_for_094: &str) -> String {
    format!(
        "{PACKAGE}{CHANNEL}{}{}",
        bundle("0.9.2", ""),
        bundle("0.9.4", extra_for_094)
    )
}

#[test]
fn a_clean_catalog_loads_every_schema_without_diagnostics() {
    let extra = "
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
- {type: olm.gvk.required, value: {group: cert-manager.io, version: v1, kind: Issuer}}
- {type: olm.package.required, value: {packageName: cert-manager, versionRange: '>=1.12.2'}}
- {type: olm.label, value: {label: lts}}
- {type: olm.maxOpenShiftVersion, value: '4.8'}
- type: olm.csv.metadata
  value: {displayName: etcd, keywords: [kv]}
---
schema: olm.deprecations
package: etcd
entries:
- reference: {schema: olm.bundle, name: etcd.v0.9.2}
  message: use 0.9.4
- reference: {schema: olm.channel, name: alpha}
  message: alpha ends
- reference: {schema: olm.package}
  message: etcd moves
---
schema: olm.template.basic
name: something
";
    let catalog = yaml(&etcd(extra));
    assert!(catalog.diagnostics.is_empty(), "{:#?}", catalog.diagnostics);
    let package = catalog.package("etcd").unwrap();
    assert_eq!(package.default_channel.as_deref(), Some("alpha"));
    assert_eq!(
        package.description.as_deref(),
        Some("A distributed key value store")
    );
    assert_eq!(package.origin.line, 2);
    let channel = catalog.channel("etcd", "alpha").unwrap();
    assert_eq!(channel.entries[1].replaces.as_deref(), Some("etcd.v0.9.2"));
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2", "etcd.v0.9.4"]);

    let bundle = catalog.bundle("etcd.v0.9.4").unwrap();
    assert_eq!(bundle.version, Version::new(0, 9, 4));
    assert_eq!(bundle.image, "quay.io/etcd:v0.9.4");
    assert_eq!(bundle.channels, ["alpha"]);
    assert!(bundle.is_in_channel("alpha"));
    assert_eq!(
        bundle.provided_gvks,
        [Gvk::new(
            "etcd.database.coreos.com",
            "v1beta2",
            "EtcdCluster"
        )]
    );
    assert_eq!(
        bundle.required_gvks,
        [Gvk::new("cert-manager.io", "v1", "Issuer")]
    );
    assert_eq!(bundle.required_packages[0].package, "cert-manager");
    assert_eq!(
        bundle.required_packages[0].range,
        Range::parse(">=1.12.2").unwrap()
    );
    assert_eq!(bundle.labels, ["lts"]);
    assert_eq!(
        bundle
            .csv_metadata
            .as_ref()
            .unwrap()
            .display_name
            .as_deref(),
        Some("etcd")
    );
    let kinds: Vec<_> = bundle.properties.iter().map(Property::kind).collect();
    assert_eq!(
        kinds,
        [
            "olm.package",
            "olm.gvk",
            "olm.gvk.required",
            "olm.package.required",
            "olm.label",
            "olm.maxOpenShiftVersion",
            "olm.csv.metadata",
        ]
    );
    let Some(Property::Other { value, .. }) =
        bundle.other_properties("olm.maxOpenShiftVersion").next()
    else {
        panic!("olm.maxOpenShiftVersion not kept");
    };
    assert_eq!(value.get(), "\"4.8\"");
    assert_eq!(catalog.channels_of(bundle)[0].name, "alpha");

    let deprecation = catalog.deprecation("etcd").unwrap();
    assert_eq!(deprecation.bundle_message("etcd.v0.9.2"), Some("use 0.9.4"));
    assert_eq!(deprecation.channel_message("alpha"), Some("alpha ends"));
    assert_eq!(deprecation.package_message(), Some("etcd moves"));
    assert_eq!(deprecation.bundle_message("etcd.v0.9.4"), None);

    assert_eq!(catalog.others.len(), 1);
    assert_eq!(catalog.others[0].schema, "olm.template.basic");
    let graph = catalog.graph("etcd", "alpha").unwrap();
    assert_eq!(graph.heads()[0].name, "etcd.v0.9.4");
}

#[test]
fn a_bundle_with_a_non_semver_version_is_left_out_and_the_rest_loads() {
    // Quoted: unquoted, YAML reads 0.9 as a number (a shape error instead).
    let text = format!(
        "{PACKAGE}{CHANNEL}{}{}",
        bundle("0.9.2", ""),
        bundle("'0.9'", "")
    )
    .replace("name: etcd.v'0.9'\n", "name: etcd.v0.9.4\n");
    let catalog = yaml(&text);
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2"]);
    let invalid = find(&catalog, DiagnosticCode::InvalidVersion);
    assert_eq!(invalid.object, "olm.bundle \"etcd.v0.9.4\"");
    assert_eq!(
        invalid.field.as_deref(),
        Some("properties[0].value.version")
    );
    assert!(invalid.message.contains("\"0.9\""), "{invalid}");
    assert!(invalid.origin.line > 10, "{invalid}");
    // The channel still lists it, now without a bundle.
    assert!(codes(&catalog).contains(&DiagnosticCode::EntryWithoutBundle));
}

#[test]
fn a_bad_version_range_leaves_the_bundle_out() {
    let extra = "- {type: olm.package.required, value: {packageName: x, versionRange: '>=>1'}}\n";
    let catalog = yaml(&etcd(extra));
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2"]);
    let diagnostic = find(&catalog, DiagnosticCode::InvalidVersionRange);
    assert_eq!(
        diagnostic.field.as_deref(),
        Some("properties[1].value.versionRange")
    );
}

#[test]
fn a_bad_skip_range_drops_only_the_range() {
    let text = etcd("").replace(
        "  replaces: etcd.v0.9.2\n",
        "  replaces: etcd.v0.9.2\n  skipRange: '>=0.9.0 <<0.9.4'\n",
    );
    let catalog = yaml(&text);
    assert_eq!(codes(&catalog), [DiagnosticCode::InvalidSkipRange]);
    assert_eq!(
        catalog.diagnostics[0].field.as_deref(),
        Some("entries[1].skipRange")
    );
    let entry = &catalog.channel("etcd", "alpha").unwrap().entries[1];
    assert_eq!(entry.skip_range, None);
    assert_eq!(entry.replaces.as_deref(), Some("etcd.v0.9.2"));
}

#[test]
fn package_property_problems_leave_the_bundle_out() {
    let missing = "
---
schema: olm.bundle
name: etcd.v0.9.4
package: etcd
properties: [{type: olm.gvk, value: {group: g, version: v1, kind: K}}]
";
    let catalog = yaml(&format!(
        "{PACKAGE}{CHANNEL}{}{missing}",
        bundle("0.9.2", "")
    ));
    find(&catalog, DiagnosticCode::MissingPackageProperty);
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2"]);

    let two = "- {type: olm.package, value: {packageName: etcd, version: 0.9.5}}\n";
    let catalog = yaml(&etcd(two));
    find(&catalog, DiagnosticCode::MultiplePackageProperties);

    let text = etcd("").replace(
        "packageName: etcd, version: 0.9.4",
        "packageName: other, version: 0.9.4",
    );
    let catalog = yaml(&text);
    find(&catalog, DiagnosticCode::PackageMismatch);

    let catalog = yaml(&etcd("- {type: olm.gvk, value: {group: g}}\n"));
    let invalid = find(&catalog, DiagnosticCode::InvalidProperty);
    assert_eq!(invalid.field.as_deref(), Some("properties[1].value"));
}

#[test]
fn bad_csv_metadata_is_a_warning_and_the_value_is_kept_raw() {
    let catalog = yaml(&etcd("- {type: olm.csv.metadata, value: {keywords: 5}}\n"));
    assert_eq!(codes(&catalog), [DiagnosticCode::InvalidCsvMetadata]);
    let bundle = catalog.bundle("etcd.v0.9.4").unwrap();
    assert!(bundle.csv_metadata.is_none());
    assert!(matches!(bundle.properties[1], Property::Other { .. }));
}

#[test]
fn objects_naming_an_unknown_package_are_left_out() {
    let text = format!(
        "{}{}",
        CHANNEL.replace("package: etcd", "package: nope"),
        "\n---\nschema: olm.deprecations\npackage: nope\nentries: []\n"
    );
    let catalog = yaml(&format!(
        "{PACKAGE}{text}{}",
        bundle("0.9.2", "")
            .replace("package: etcd", "package: nope")
            .replace("packageName: etcd", "packageName: nope")
    ));
    let unknown = codes(&catalog)
        .iter()
        .filter(|&&c| c == DiagnosticCode::UnknownPackage)
        .count();
    assert_eq!(unknown, 3, "{:#?}", catalog.diagnostics);
    assert!(catalog.bundles.is_empty());
    assert!(catalog.package("etcd").unwrap().channels.is_empty());
    assert!(catalog.deprecations.is_empty());
}

#[test]
fn duplicates_keep_the_first_and_report_the_rest() {
    let text = format!(
        "{PACKAGE}\n---{PACKAGE}{CHANNEL}{CHANNEL}{}{}",
        bundle("0.9.2", ""),
        bundle("0.9.2", "")
    )
    .replace(
        "- name: etcd.v0.9.4\n  replaces: etcd.v0.9.2\n",
        "- name: etcd.v0.9.2\n",
    );
    let catalog = yaml(&text);
    let found = codes(&catalog);
    for code in [
        DiagnosticCode::DuplicatePackage,
        DiagnosticCode::DuplicateChannel,
        DiagnosticCode::DuplicateEntry,
        DiagnosticCode::DuplicateBundle,
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2"]);
    assert_eq!(catalog.channel("etcd", "alpha").unwrap().entries.len(), 1);
    let duplicate = find(&catalog, DiagnosticCode::DuplicatePackage);
    assert!(duplicate.message.contains("test.yaml:2"), "{duplicate}");
}

#[test]
fn a_bundle_in_two_channels_knows_both() {
    let second = "
---
schema: olm.channel
package: etcd
name: stable
entries:
- name: etcd.v0.9.4
";
    let catalog = yaml(&format!("{}{second}", etcd("")));
    assert!(catalog.diagnostics.is_empty(), "{:#?}", catalog.diagnostics);
    assert_eq!(
        catalog.bundle("etcd.v0.9.4").unwrap().channels,
        ["alpha", "stable"]
    );
    assert_eq!(catalog.bundle("etcd.v0.9.2").unwrap().channels, ["alpha"]);
    // Each channel's graph stands alone.
    assert_eq!(
        catalog.graph("etcd", "stable").unwrap().heads()[0].name,
        "etcd.v0.9.4"
    );
    assert_eq!(catalog.graph("etcd", "stable").unwrap().ordered().len(), 1);
}

#[test]
fn membership_problems_are_warnings() {
    let text = format!(
        "{PACKAGE}{CHANNEL}{}{}",
        bundle("0.9.2", ""),
        bundle("1.0.0", "")
    )
    .replace("defaultChannel: alpha", "defaultChannel: beta");
    let catalog = yaml(&text);
    let found = codes(&catalog);
    assert!(
        found.contains(&DiagnosticCode::EntryWithoutBundle),
        "{found:?}"
    );
    assert!(
        found.contains(&DiagnosticCode::BundleNotInChannel),
        "{found:?}"
    );
    assert!(
        found.contains(&DiagnosticCode::UnknownDefaultChannel),
        "{found:?}"
    );
    assert!(
        catalog
            .diagnostics
            .iter()
            .all(|d| d.severity() == Severity::Warning)
    );
    assert_eq!(catalog.bundles.len(), 2);
}

#[test]
fn graph_problems_are_reported_at_load() {
    let text = etcd("").replace("replaces: etcd.v0.9.2", "replaces: etcd.v0.9.0");
    let catalog = yaml(&text);
    assert_eq!(
        codes(&catalog),
        [
            DiagnosticCode::MultipleHeads,
            DiagnosticCode::DanglingReplaces
        ]
    );
}

#[test]
fn bad_deprecation_entries_are_left_out() {
    let deprecations = "
---
schema: olm.deprecations
package: etcd
entries:
- reference: {schema: olm.bundle, name: etcd.v9}
  message: gone
- reference: {schema: olm.channel}
  message: which?
- reference: {schema: olm.package, name: etcd}
  message: named
- reference: {schema: olm.thing, name: x}
  message: what
- reference: {schema: olm.channel, name: alpha}
  message: ''
- reference: {schema: olm.channel, name: alpha}
  message: kept
";
    let catalog = yaml(&format!("{}{deprecations}", etcd("")));
    assert_eq!(codes(&catalog), vec![DiagnosticCode::InvalidDeprecation; 5]);
    let deprecation = catalog.deprecation("etcd").unwrap();
    assert_eq!(deprecation.entries.len(), 1);
    assert_eq!(deprecation.channel_message("alpha"), Some("kept"));
}

#[test]
fn syntax_errors_are_hard_errors_naming_the_line() {
    let text = format!("{}\n---\nschema: olm.bundle\nname: [oops\n", etcd(""));
    let error = Catalog::from_str(&text, "bad.yaml", Format::Yaml, "test", 0).unwrap_err();
    let CatalogError::Syntax { line, .. } = error else {
        panic!("{error}");
    };
    assert!(line > 20, "{line}");
    let error = Catalog::from_str("{\"schema\": }", "bad.json", Format::Json, "t", 0).unwrap_err();
    assert!(
        error.to_string().starts_with("bad.json:1:12: invalid JSON"),
        "{error}"
    );
    assert_eq!(error.reason(), "CatalogInvalid");
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("pakket-catalog-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_directory_is_walked_recursively_in_path_order_reading_only_catalog_files() {
    let dir = Scratch::new("walk");
    // The channel comes before its package in path order: that is fine.
    dir.write("a/channel.yml", CHANNEL);
    dir.write(
        "b/package.json",
        r#"{"schema":"olm.package","name":"etcd","defaultChannel":"alpha"}"#,
    );
    dir.write(
        "b/nested/bundles.yaml",
        format!("{}{}", bundle("0.9.2", ""), bundle("0.9.4", "")),
    );
    dir.write("README.md", "# not a catalog {");
    dir.write("c/.indexignore", "*");
    let catalog = Catalog::load(&dir.0, "dir", 3).unwrap();
    assert!(catalog.diagnostics.is_empty(), "{:#?}", catalog.diagnostics);
    assert_eq!((catalog.name.as_str(), catalog.priority), ("dir", 3));
    assert_eq!(bundle_names(&catalog), ["etcd.v0.9.2", "etcd.v0.9.4"]);
    let origin = &catalog.bundles[0].origin;
    assert!(origin.file.ends_with("b/nested/bundles.yaml"), "{origin}");
    // One file can be loaded alone too.
    let alone = Catalog::load(&dir.0.join("b/package.json"), "one", 0).unwrap();
    assert_eq!(alone.packages.len(), 1);
}

#[test]
fn unreadable_and_non_utf8_input_are_hard_errors() {
    let dir = Scratch::new("bad-input");
    let error = Catalog::load(&dir.0.join("missing"), "gone", 0).unwrap_err();
    assert!(matches!(error, CatalogError::Read { .. }), "{error}");
    assert!(error.to_string().contains("\"gone\""), "{error}");
    let readme = dir.write("README.md", "hi");
    assert!(matches!(
        Catalog::load(&readme, "c", 0),
        Err(CatalogError::Read { .. })
    ));
    dir.write("x/catalog.json", b"{}\n{\"a\": \"\xff\"}");
    let error = Catalog::load(&dir.0.join("x"), "c", 0).unwrap_err();
    let CatalogError::NotUtf8 { line, offset, .. } = error else {
        panic!("{error}");
    };
    assert_eq!((line, offset), (2, 10));
}

#[test]
fn empty_input_is_an_empty_catalog() {
    for format in [Format::Json, Format::Yaml] {
        let catalog = Catalog::from_str("", "empty", format, "e", 0).unwrap();
        assert!(catalog.packages.is_empty() && catalog.diagnostics.is_empty());
    }
}
