//! Rules a catalog states in its own documents and properties, read from
//! FBC text and resolved end to end: `olm.constraint` (`all`, `any`, `not`,
//! `cel`), `olm.label.required`, deprecations (`olm.deprecations` entries for
//! bundles, channels and packages, and OLM v0's `olm.deprecated`), and what
//! an explanation says of bundles the loader left out. Catalogs are written
//! inline, each with only what its scenario needs.

use pakket_engine::catalog::{Catalog, CatalogSet, DiagnosticCode, Format};
use pakket_engine::resolve::{Installed, Request, ResolveError, Universe, resolve};
use serde_json::Value;

/// A package with one channel `stable` (its default) listing `bundles`,
/// newest first, each replacing the next.
fn package(name: &str, bundles: &[&str]) -> String {
    let mut text = format!(
        "---\nschema: olm.package\nname: {name}\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: {name}\nname: stable\nentries:\n"
    );
    for (i, version) in bundles.iter().enumerate() {
        text.push_str(&format!("- name: {name}.v{version}\n"));
        if let Some(older) = bundles.get(i + 1) {
            text.push_str(&format!("  replaces: {name}.v{older}\n"));
        }
    }
    text
}

/// A bundle `{package}.v{version}` with extra property lines (YAML flow maps).
fn bundle(package: &str, version: &str, properties: &[&str]) -> String {
    let mut text = format!(
        "---\nschema: olm.bundle\nname: {package}.v{version}\npackage: {package}\nimage: example.com/{package}:{version}\nproperties:\n- {{type: olm.package, value: {{packageName: {package}, version: {version}}}}}\n"
    );
    for property in properties {
        text.push_str(&format!("- {property}\n"));
    }
    text
}

fn catalog(yaml: &str) -> Catalog {
    Catalog::from_str(yaml, "catalog.yaml", Format::Yaml, "community", 0).unwrap()
}

fn universe(yaml: &str) -> Universe {
    Universe::from_catalogs(&CatalogSet::new(vec![catalog(yaml)]))
}

fn run(universe: &Universe, requests: &[&str]) -> Result<Value, ResolveError> {
    let requests: Vec<Request> = requests
        .iter()
        .map(|text| Request::parse_cli(text).unwrap())
        .collect();
    resolve(universe, &requests, &[]).map(|resolution| serde_json::to_value(resolution).unwrap())
}

/// `bundle` of every selection, sorted by package.
fn bundles(result: &Result<Value, ResolveError>) -> Vec<String> {
    match result {
        Ok(document) => document["resolved"]
            .as_array()
            .unwrap()
            .iter()
            .map(|selection| selection["bundle"].as_str().unwrap().to_owned())
            .collect(),
        Err(error) => panic!("expected a resolution, got:\n{error}"),
    }
}

fn explanation(result: Result<Value, ResolveError>) -> String {
    match result {
        Err(ResolveError::Unsatisfiable(explanation)) => explanation.to_string(),
        Err(other) => panic!("expected an explanation, got bad input: {other}"),
        Ok(document) => panic!("expected no solution, got {document}"),
    }
}

fn selection<'d>(document: &'d Value, package: &str) -> &'d Value {
    document["resolved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|selection| selection["package"] == package)
        .unwrap_or_else(|| panic!("no {package} in {document}"))
}

const ETCD_API: &str = "{type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}";

/// etcd 0.9.5, 0.9.4 and 0.9.2, each providing the EtcdCluster API.
fn etcd() -> String {
    package("etcd", &["0.9.5", "0.9.4", "0.9.2"])
        + &bundle("etcd", "0.9.5", &[ETCD_API])
        + &bundle("etcd", "0.9.4", &[ETCD_API])
        + &bundle("etcd", "0.9.2", &[ETCD_API])
}

// --- olm.constraint -------------------------------------------------------------

#[test]
fn an_all_constraint_is_met_by_one_bundle_satisfying_every_part() {
    let constraint = r#"{type: olm.constraint, value: {failureMessage: "needs etcd 0.9.4 or later, but not 0.9.5", all: {constraints: [
        {package: {packageName: etcd, versionRange: ">=0.9.4"}},
        {gvk: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}},
        {not: {constraints: [{package: {packageName: etcd, versionRange: "0.9.5"}}]}}]}}}"#;
    let yaml = etcd() + &package("app", &["1.0.0"]) + &bundle("app", "1.0.0", &[constraint]);
    let result = run(&universe(&yaml), &["app"]);
    assert_eq!(bundles(&result), ["app.v1.0.0", "etcd.v0.9.4"]);
    let etcd = selection(result.as_ref().unwrap(), "etcd");
    assert_eq!(etcd["reason"]["of"], "app.v1.0.0");
    assert!(
        etcd["reason"]["needs"]
            .as_str()
            .unwrap()
            .starts_with("olm.constraint all of (package etcd >=0.9.4"),
        "{etcd}"
    );
}

#[test]
fn an_any_constraint_is_met_by_any_of_its_parts() {
    let constraint = r#"{type: olm.constraint, value: {any: {constraints: [
        {package: {packageName: missing, versionRange: ">=1.0.0"}},
        {package: {packageName: etcd, versionRange: "<0.9.3"}}]}}}"#;
    let yaml = etcd() + &package("app", &["1.0.0"]) + &bundle("app", "1.0.0", &[constraint]);
    assert_eq!(
        bundles(&run(&universe(&yaml), &["app"])),
        ["app.v1.0.0", "etcd.v0.9.2"]
    );
}

#[test]
fn a_cel_constraint_reads_properties_and_compares_versions_as_olm_does() {
    let certified = r#"{type: olm.constraint, value: {cel: {rule: "properties.exists(p, p.type == 'certified' && p.value == 'true')"}}}"#;
    let older = r#"{type: olm.constraint, value: {cel: {rule: "properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'etcd' && semver_compare(p.value.version, 'v0.9.3') < 0)"}}}"#;
    let yaml = etcd()
        + &package("audited", &["1.0.0"])
        + &bundle("audited", "1.0.0", &["{type: certified, value: 'true'}"])
        + &package("app", &["1.0.0"])
        + &bundle("app", "1.0.0", &[certified, older]);
    assert_eq!(
        bundles(&run(&universe(&yaml), &["app"])),
        ["app.v1.0.0", "audited.v1.0.0", "etcd.v0.9.2"]
    );
}

#[test]
fn an_unmet_constraint_is_explained_with_its_failure_message() {
    let constraint = r#"{type: olm.constraint, value: {failureMessage: "install a certified etcd first", cel: {rule: "properties.exists(p, p.type == 'certified')"}}}"#;
    let yaml = etcd() + &package("app", &["1.0.0"]) + &bundle("app", "1.0.0", &[constraint]);
    let text = explanation(run(&universe(&yaml), &["app"]));
    assert!(text.contains("install a certified etcd first"), "{text}");
    assert!(
        text.contains("but nothing fits: no bundle in the loaded catalogs satisfies it"),
        "{text}"
    );
}

#[test]
fn a_constraint_that_cannot_be_evaluated_leaves_its_bundle_out_and_says_why() {
    let unknown = r#"{type: olm.constraint, value: {label: {label: fast}}}"#;
    let broken = r#"{type: olm.constraint, value: {cel: {rule: "properties.exists(p,"}}}"#;
    let yaml = etcd()
        + &package("app", &["2.0.0", "1.0.0"])
        + &bundle("app", "2.0.0", &[unknown])
        + &bundle("app", "1.0.0", &[broken]);
    let loaded = catalog(&yaml);
    let found: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == DiagnosticCode::InvalidConstraint)
        .map(ToString::to_string)
        .collect();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].contains(r#"unknown constraint kind "label""#),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("the CEL rule does not parse"),
        "{}",
        found[1]
    );
    let text = explanation(run(&universe(&yaml), &["app"]));
    assert!(
        text.contains("every bundle of package app was left out when loading: app.v2.0.0 (catalog community): properties[1].value.label: olm.constraint: unknown constraint kind"),
        "{text}"
    );
}

// --- olm.label.required -----------------------------------------------------------

#[test]
fn a_required_label_pulls_in_a_bundle_carrying_it() {
    let yaml = package("lib", &["1.0.0"])
        + &bundle(
            "lib",
            "1.0.0",
            &["{type: olm.label, value: {label: shared-cache}}"],
        )
        + &package("app", &["1.0.0"])
        + &bundle(
            "app",
            "1.0.0",
            &["{type: olm.label.required, value: {label: shared-cache}}"],
        );
    let result = run(&universe(&yaml), &["app"]);
    assert_eq!(bundles(&result), ["app.v1.0.0", "lib.v1.0.0"]);
    assert_eq!(
        selection(result.as_ref().unwrap(), "lib")["reason"]["needs"],
        "label shared-cache"
    );
}

#[test]
fn a_required_label_nothing_carries_is_explained() {
    let yaml = package("app", &["1.0.0"])
        + &bundle(
            "app",
            "1.0.0",
            &["{type: olm.label.required, value: {label: shared-cache}}"],
        );
    let text = explanation(run(&universe(&yaml), &["app"]));
    assert!(
        text.contains("needs a bundle labelled shared-cache")
            && text.contains("no bundle in the loaded catalogs carries label shared-cache"),
        "{text}"
    );
}

// --- deprecations -----------------------------------------------------------------

const DEPRECATE_0_9_5: &str = "---
schema: olm.deprecations
package: etcd
entries:
- reference: {schema: olm.bundle, name: etcd.v0.9.5}
  message: etcd.v0.9.5 loses data; use etcd.v0.9.4
";

#[test]
fn a_deprecated_bundle_is_chosen_only_when_nothing_else_fits() {
    let universe = universe(&(etcd() + DEPRECATE_0_9_5));
    let result = run(&universe, &["etcd"]);
    assert_eq!(bundles(&result), ["etcd.v0.9.4"]);
    assert!(selection(result.as_ref().unwrap(), "etcd")["deprecated"].is_null());

    let result = run(&universe, &["etcd=>=0.9.5"]);
    assert_eq!(bundles(&result), ["etcd.v0.9.5"]);
    assert_eq!(
        selection(result.as_ref().unwrap(), "etcd")["deprecated"],
        "etcd.v0.9.5 loses data; use etcd.v0.9.4"
    );
}

#[test]
fn olm_v0s_deprecated_property_deprecates_the_bundle() {
    let yaml = package("etcd", &["0.9.5", "0.9.4"])
        + &bundle("etcd", "0.9.5", &["{type: olm.deprecated, value: {}}"])
        + &bundle("etcd", "0.9.4", &[]);
    let universe = universe(&yaml);
    assert_eq!(bundles(&run(&universe, &["etcd"])), ["etcd.v0.9.4"]);
    let result = run(&universe, &["etcd=0.9.5"]);
    let deprecated = &selection(result.as_ref().unwrap(), "etcd")["deprecated"];
    assert!(
        deprecated.as_str().unwrap().contains("olm.deprecated"),
        "{deprecated}"
    );
}

#[test]
fn a_deprecated_package_provides_an_api_only_when_no_other_does() {
    let api = "{type: olm.gvk, value: {group: example.com, version: v1, kind: Cache}}";
    let needs = "{type: olm.gvk.required, value: {group: example.com, version: v1, kind: Cache}}";
    let yaml = package("a-cache", &["1.0.0"])
        + &bundle("a-cache", "1.0.0", &[api])
        + "---\nschema: olm.deprecations\npackage: a-cache\nentries:\n- reference: {schema: olm.package}\n  message: a-cache is no longer maintained\n"
        + &package("b-cache", &["1.0.0"])
        + &bundle("b-cache", "1.0.0", &[api])
        + &package("app", &["1.0.0"])
        + &bundle("app", "1.0.0", &[needs]);
    assert_eq!(
        bundles(&run(&universe(&yaml), &["app"])),
        ["app.v1.0.0", "b-cache.v1.0.0"]
    );
}

#[test]
fn a_deprecated_channel_is_used_only_when_asked_for() {
    let yaml = "---
schema: olm.package
name: etcd
defaultChannel: alpha
---
schema: olm.channel
package: etcd
name: alpha
entries:
- name: etcd.v0.9.5
---
schema: olm.channel
package: etcd
name: beta
entries:
- name: etcd.v0.9.4
---
schema: olm.deprecations
package: etcd
entries:
- reference: {schema: olm.channel, name: alpha}
  message: the alpha channel is frozen; subscribe to beta
"
    .to_owned()
        + &bundle("etcd", "0.9.5", &[])
        + &bundle("etcd", "0.9.4", &[]);
    let universe = universe(&yaml);
    let result = run(&universe, &["etcd"]);
    assert_eq!(bundles(&result), ["etcd.v0.9.4"]);
    let result = run(&universe, &["etcd@alpha"]);
    let etcd = selection(result.as_ref().unwrap(), "etcd");
    assert_eq!(
        (etcd["bundle"].as_str(), etcd["channel"].as_str()),
        (Some("etcd.v0.9.5"), Some("alpha"))
    );
    assert_eq!(
        etcd["deprecated"],
        "the alpha channel is frozen; subscribe to beta"
    );
}

#[test]
fn explanations_mark_deprecated_bundles() {
    let needs_old =
        r#"{type: olm.package.required, value: {packageName: etcd, versionRange: ">=0.9.5"}}"#;
    let yaml = etcd()
        + DEPRECATE_0_9_5
        + &package("app", &["1.0.0"])
        + &bundle("app", "1.0.0", &[needs_old]);
    let text = explanation(run(&universe(&yaml), &["app", "etcd=<0.9.5"]));
    assert!(
        text.contains("etcd.v0.9.5 0.9.5 (community, deprecated)"),
        "{text}"
    );
}

// --- what the loader left out ------------------------------------------------------

#[test]
fn a_package_whose_bundles_were_all_left_out_says_why() {
    let yaml = package("broken", &["1.0.0"])
        + "---\nschema: olm.bundle\nname: broken.v1.0.0\npackage: broken\nproperties:\n- {type: olm.package, value: {packageName: broken, version: not-semver}}\n";
    let text = explanation(run(&universe(&yaml), &["broken"]));
    assert!(!text.contains("nothing fits: \n"), "{text}");
    assert!(
        text.contains("but nothing fits: every bundle of package broken was left out when loading: broken.v1.0.0 (catalog community): properties[0].value.version: invalid version \"not-semver\""),
        "{text}"
    );
}

// --- identity and channels ------------------------------------------------------------

#[test]
fn build_metadata_tells_installed_bundles_apart() {
    // 2.0.0 and 2.0.0+1 are two bundles; only 2.0.0+1 has an update.
    let yaml = "---
schema: olm.package
name: x
defaultChannel: stable
---
schema: olm.channel
package: x
name: stable
entries:
- name: x.v2.0.0
- name: x.v2.0.0+1
- name: x.v3.0.0
  replaces: x.v2.0.0+1
"
    .to_owned()
        + &bundle("x", "2.0.0", &[])
        + &bundle("x", "2.0.0+1", &[]);
    let yaml = yaml + &bundle("x", "3.0.0", &[]);
    let universe = universe(&yaml);
    let installed = [Installed::Version {
        package: "x".into(),
        version: pakket_engine::Version::parse("2.0.0+1").unwrap(),
    }];
    let resolution = resolve(&universe, &[Request::package("x")], &installed).unwrap();
    assert_eq!(resolution.resolved[0].bundle, "x.v3.0.0");

    let installed = [Installed::Version {
        package: "x".into(),
        version: pakket_engine::Version::parse("2.0.0+7").unwrap(),
    }];
    let Err(ResolveError::BadInput(message)) =
        resolve(&universe, &[Request::package("x")], &installed)
    else {
        panic!("2.0.0+7 is no bundle of x");
    };
    assert!(message.contains("2.0.0+1"), "{message}");
}

#[test]
fn the_result_names_the_requested_channel() {
    let yaml = "---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
- name: etcd.v0.9.4
---
schema: olm.channel
package: etcd
name: alpha
entries:
- name: etcd.v0.9.4
"
    .to_owned()
        + &bundle("etcd", "0.9.4", &[]);
    let universe = universe(&yaml);
    let result = run(&universe, &["etcd@alpha"]);
    assert_eq!(
        selection(result.as_ref().unwrap(), "etcd")["channel"],
        "alpha"
    );
    let result = run(&universe, &["etcd"]);
    assert_eq!(
        selection(result.as_ref().unwrap(), "etcd")["channel"],
        "stable"
    );
}
