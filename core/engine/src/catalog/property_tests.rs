use super::*;

fn raw(kind: &str, value: &str) -> RawProperty {
    RawProperty {
        kind: kind.to_owned(),
        value: RawValue::from_string(value.to_owned()).unwrap(),
    }
}

fn decoded(kind: &str, value: &str) -> Property {
    decode(raw(kind, value)).unwrap()
}

fn failed(kind: &str, value: &str) -> PropertyError {
    decode(raw(kind, value)).unwrap_err()
}

#[test]
fn olm_package_gives_the_package_and_a_semver_version() {
    let Property::Package { package, version } =
        decoded(TYPE_PACKAGE, r#"{"packageName":"etcd","version":"0.9.4"}"#)
    else {
        panic!("not a package property");
    };
    assert_eq!(package, "etcd");
    assert_eq!(version, Version::new(0, 9, 4));
}

#[test]
fn olm_package_with_a_non_semver_version_is_an_invalid_version() {
    let error = failed(TYPE_PACKAGE, r#"{"packageName":"etcd","version":"0.9"}"#);
    assert_eq!(error.code, DiagnosticCode::InvalidVersion);
    assert_eq!(error.field, "value.version");
    assert!(error.message.contains("\"0.9\""), "{}", error.message);
}

#[test]
fn olm_package_with_a_missing_or_mistyped_field_names_the_field() {
    let error = failed(TYPE_PACKAGE, r#"{"packageName":"etcd"}"#);
    assert_eq!(error.code, DiagnosticCode::InvalidProperty);
    assert!(error.message.contains("version"), "{}", error.message);
    let error = failed(TYPE_PACKAGE, r#"{"packageName":"etcd","version":5}"#);
    assert_eq!(error.field, "value.version");
    assert!(!error.message.contains(" at line "), "{}", error.message);
    let error = failed(TYPE_PACKAGE, r#"{"packageName":"","version":"1.0.0"}"#);
    assert_eq!(error.field, "value.packageName");
}

#[test]
fn olm_package_required_keeps_the_package_and_range() {
    let Property::PackageRequired(requirement) = decoded(
        TYPE_PACKAGE_REQUIRED,
        r#"{"packageName":"devworkspace-operator","versionRange":">=0.11.0"}"#,
    ) else {
        panic!("not a requirement");
    };
    assert_eq!(requirement.package, "devworkspace-operator");
    assert_eq!(requirement.range, Range::parse(">=0.11.0").unwrap());
}

#[test]
fn olm_package_required_without_a_range_is_invalid() {
    let error = failed(TYPE_PACKAGE_REQUIRED, r#"{"packageName":"x"}"#);
    assert_eq!(error.code, DiagnosticCode::InvalidProperty);
    assert!(error.message.contains("versionRange"), "{}", error.message);
}

#[test]
fn olm_gvk_and_gvk_required_read_group_version_kind() {
    let expected = Gvk::new("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
    let json = r#"{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}"#;
    assert_eq!(decoded(TYPE_GVK, json), Property::Gvk(expected.clone()));
    assert_eq!(
        decoded(TYPE_GVK_REQUIRED, json),
        Property::GvkRequired(expected)
    );
    // The core group is empty and may be left out.
    assert_eq!(
        decoded(TYPE_GVK, r#"{"kind":"Pod","version":"v1"}"#),
        Property::Gvk(Gvk::new("", "v1", "Pod"))
    );
    let error = failed(TYPE_GVK, r#"{"group":"g","kind":"","version":"v1"}"#);
    assert_eq!(error.field, "value.kind");
    let error = failed(TYPE_GVK, r#"["g","v1","K"]"#);
    assert_eq!(error.code, DiagnosticCode::InvalidProperty);
}

#[test]
fn olm_label_accepts_an_object_or_a_bare_string() {
    assert_eq!(
        decoded(TYPE_LABEL, r#"{"label":"lts"}"#),
        Property::Label("lts".into())
    );
    assert_eq!(
        decoded(TYPE_LABEL, r#""LTS""#),
        Property::Label("LTS".into())
    );
    assert_eq!(
        failed(TYPE_LABEL, "7").code,
        DiagnosticCode::InvalidProperty
    );
}

#[test]
fn olm_csv_metadata_keeps_the_descriptive_fields() {
    let json = r#"{
        "displayName": "etcd", "description": "A key value store",
        "keywords": ["etcd", "kv"], "maturity": "alpha", "minKubeVersion": "1.16.0",
        "provider": {"name": "CNCF"},
        "installModes": [{"type": "OwnNamespace", "supported": true},
                         {"type": "AllNamespaces", "supported": false}],
        "annotations": {"capabilities": "Basic Install", "certified": false},
        "labels": {"a": "b"},
        "crdDescriptions": {"owned": []}
    }"#;
    let Property::CsvMetadata(metadata) = decoded(TYPE_CSV_METADATA, json) else {
        panic!("not csv metadata");
    };
    assert_eq!(metadata.display_name.as_deref(), Some("etcd"));
    assert_eq!(metadata.keywords, ["etcd", "kv"]);
    assert_eq!(metadata.provider.as_deref(), Some("CNCF"));
    assert_eq!(metadata.min_kube_version.as_deref(), Some("1.16.0"));
    assert_eq!(metadata.install_modes.len(), 2);
    assert!(metadata.install_modes[0].supported);
    assert_eq!(metadata.annotations["certified"], "false");
    assert_eq!(metadata.labels["a"], "b");
    let error = failed(TYPE_CSV_METADATA, r#"{"keywords": "not a list"}"#);
    assert_eq!(error.code, DiagnosticCode::InvalidCsvMetadata);
    assert_eq!(error.field, "value.keywords");
    assert_eq!(
        error.fallback.map(|p| p.kind().to_owned()).as_deref(),
        Some(TYPE_CSV_METADATA)
    );
}

#[test]
fn olm_bundle_object_keeps_only_its_size() {
    let json = r#"{"data":"eyJraW5kIjoiQ3VzdG9tUmVzb3VyY2VEZWZpbml0aW9uIn0="}"#;
    assert_eq!(
        decoded(TYPE_BUNDLE_OBJECT, json),
        Property::BundleObject { size: json.len() }
    );
}

#[test]
fn unknown_types_are_kept_with_their_raw_value() {
    let property = decoded("olm.maxOpenShiftVersion", r#""4.8""#);
    assert_eq!(property.kind(), "olm.maxOpenShiftVersion");
    let Property::Other { value, .. } = property else {
        panic!("not kept raw");
    };
    assert_eq!(value.get(), r#""4.8""#);
}

#[test]
fn only_a_trailing_position_is_stripped() {
    assert_eq!(
        strip_position("expected value at line 3 column 10"),
        "expected value"
    );
    assert_eq!(
        strip_position("unclosed bracket at line 3, column 6"),
        "unclosed bracket"
    );
    let nested = "budget breached at line 1, column 13 (used at line 6, column 15)";
    assert_eq!(strip_position(nested), nested);
    assert_eq!(strip_position("no position"), "no position");
}

#[test]
fn requirements_beyond_packages_and_apis_are_typed() {
    assert_eq!(
        decoded(TYPE_LABEL_REQUIRED, r#"{"label":"shared-cache"}"#),
        Property::LabelRequired("shared-cache".into())
    );
    let error = failed(TYPE_LABEL_REQUIRED, r#"{"label":""}"#);
    assert_eq!(
        (error.code, error.field.as_str()),
        (DiagnosticCode::InvalidProperty, "value.label")
    );
    assert_eq!(decoded(TYPE_DEPRECATED, "{}"), Property::Deprecated);
    let Property::Constraint { constraint, .. } = decoded(
        TYPE_CONSTRAINT,
        r#"{"failureMessage":"needs etcd","package":{"packageName":"etcd","versionRange":">=0.9.0"}}"#,
    ) else {
        panic!("not a constraint");
    };
    assert_eq!(constraint.to_string(), "package etcd >=0.9.0");
    let error = failed(
        TYPE_CONSTRAINT,
        r#"{"cel":{"rule":"properties.exists(p,"}}"#,
    );
    assert_eq!(
        (error.code, error.field.as_str()),
        (DiagnosticCode::InvalidConstraint, "value.cel.rule")
    );
}

#[test]
fn values_are_written_back_as_cel_rules_see_them() {
    let package = decoded(TYPE_PACKAGE, r#"{"packageName":"etcd","version":"v0.9.4"}"#);
    assert_eq!(
        package.value_json(),
        serde_json::json!({"packageName": "etcd", "version": "v0.9.4"})
    );
    let constraint = r#"{"gvk":{"group":"","version":"v1","kind":"Pod"}}"#;
    let value = decoded(TYPE_CONSTRAINT, constraint).value_json();
    assert_eq!(value["gvk"]["kind"], "Pod");
    let other = decoded("olm.maxOpenShiftVersion", "4.12");
    assert_eq!(other.value_json(), serde_json::json!(4.12));
}
