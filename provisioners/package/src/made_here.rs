//! What this provisioner provably made for a package: the Instance a
//! package becomes and the component Packages it installs. Each carries a
//! seal (the record key's, over the object's identity and the package it
//! was made for), and only a sealed one is changed or deleted for that
//! package. A label, an annotation or a predictable name is something
//! anyone who may write such an object can copy; the seal is not.
//!
//! Without a record key there is nothing to seal with, and the labels are
//! all there is (the same fallback as dependency ClusterPackages).

use kube::ResourceExt as _;
use pakket_api::{Instance, RecordKey};

use crate::names;
use pakket_packages_api::Package;

/// On component Packages: the parent's `<kind>.<namespace>.<name>`. A
/// label anyone may write: only the seal beside it makes it true.
pub const PARENT_LABEL: &str = "packages.pakket.dev/component-of";

/// On a component Package: sealed for it and its parent's key.
pub const COMPONENT_SEAL_ANNOTATION: &str = "packages.pakket.dev/component-seal";
/// On a package's Instance: sealed for it and the package it installs.
pub const INSTANCE_SEAL_ANNOTATION: &str = "packages.pakket.dev/instance-seal";

/// The identity the seals name.
const MAKER: &str = "pakket-package";

/// The package an Instance is made for, as sealed: `ClusterPackage/NAME`
/// or `Package/NAMESPACE/NAME`.
pub fn package_reference(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{kind}/{namespace}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// The seal for Instance `instance` made for the package `package`
/// ([`package_reference`]).
pub fn instance_seal(key: &RecordKey, instance: &str, package: &str) -> String {
    pakket_api::generated_seal(
        key,
        INSTANCE_SEAL_ANNOTATION,
        MAKER,
        &pakket_api::record_object("Instance", instance),
        pakket_api::value_digest(&serde_json::json!(package)),
    )
}

/// Whether `instance` is the one this provisioner made for `package` (of
/// kind `kind`): sealed so with `key`; without a key, labelled and
/// annotated so.
pub fn is_instance_of(
    instance: &Instance,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    key: Option<&RecordKey>,
) -> bool {
    let Some(key) = key else {
        let annotations = instance.annotations();
        return instance.labels().get(names::KIND_LABEL).map(String::as_str) == Some(kind)
            && annotations.get(names::NAME_ANNOTATION).map(String::as_str) == Some(name)
            && annotations
                .get(names::NAMESPACE_ANNOTATION)
                .map(String::as_str)
                == namespace;
    };
    pakket_api::is_generated_by(
        instance.annotations(),
        key,
        INSTANCE_SEAL_ANNOTATION,
        MAKER,
        &pakket_api::record_object("Instance", &instance.name_any()),
        &pakket_api::value_digest(&serde_json::json!(package_reference(kind, namespace, name))),
    )
}

/// The seal for component Package `namespace/name` of the parent whose
/// key ([`crate::components::parent_key`]) is `parent`.
pub fn component_seal(key: &RecordKey, namespace: &str, name: &str, parent: &str) -> String {
    pakket_api::generated_seal(
        key,
        COMPONENT_SEAL_ANNOTATION,
        MAKER,
        &pakket_api::record_object("Package", &format!("{namespace}/{name}")),
        pakket_api::value_digest(&serde_json::json!(parent)),
    )
}

/// Whether `package` is a component this provisioner made for `parent`:
/// labelled so and, with `key`, sealed so.
pub fn is_component_of(package: &Package, parent: &str, key: Option<&RecordKey>) -> bool {
    if package.labels().get(PARENT_LABEL).map(String::as_str) != Some(parent) {
        return false;
    }
    let Some(key) = key else {
        return true;
    };
    pakket_api::is_generated_by(
        package.annotations(),
        key,
        COMPONENT_SEAL_ANNOTATION,
        MAKER,
        &pakket_api::record_object(
            "Package",
            &format!(
                "{}/{}",
                package.namespace().unwrap_or_default(),
                package.name_any()
            ),
        ),
        &pakket_api::value_digest(&serde_json::json!(parent)),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use pakket_packages_api::{PackageInfoTemplate, PackageSpec};

    fn key(byte: u8) -> RecordKey {
        RecordKey::from_bytes(&[byte; 32]).unwrap()
    }

    fn instance(name: &str, annotations: BTreeMap<String, String>) -> Instance {
        let mut instance: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": name },
            "spec": { "class": "package", "bundle": { "name": "b", "spec": { "class": "package", "refs": [] } } },
        }))
        .unwrap();
        instance.metadata.annotations = Some(annotations);
        instance
    }

    #[test]
    fn an_instance_is_the_packages_only_with_its_own_seal() {
        let package = package_reference("Package", Some("team"), "db");
        let sealed = BTreeMap::from([(
            INSTANCE_SEAL_ANNOTATION.to_owned(),
            instance_seal(&key(1), "package-team.db", &package),
        )]);
        let ours = instance("package-team.db", sealed.clone());
        assert!(is_instance_of(
            &ours,
            "Package",
            Some("team"),
            "db",
            Some(&key(1))
        ));
        // The same seal says nothing for another package, another name or
        // another key.
        assert!(!is_instance_of(
            &ours,
            "Package",
            Some("team"),
            "web",
            Some(&key(1))
        ));
        assert!(!is_instance_of(
            &ours,
            "ClusterPackage",
            None,
            "db",
            Some(&key(1))
        ));
        assert!(!is_instance_of(
            &instance("package-team.web", sealed),
            "Package",
            Some("team"),
            "db",
            Some(&key(1))
        ));
        assert!(!is_instance_of(
            &ours,
            "Package",
            Some("team"),
            "db",
            Some(&key(2))
        ));
        // Labels and annotations copied from a real one are no proof.
        let mut copied = instance(
            "package-team.db",
            BTreeMap::from([
                (names::NAME_ANNOTATION.to_owned(), "db".to_owned()),
                (names::NAMESPACE_ANNOTATION.to_owned(), "team".to_owned()),
            ]),
        );
        copied.metadata.labels = Some(BTreeMap::from([(
            names::KIND_LABEL.to_owned(),
            "Package".to_owned(),
        )]));
        assert!(!is_instance_of(
            &copied,
            "Package",
            Some("team"),
            "db",
            Some(&key(1))
        ));
        assert!(
            is_instance_of(&copied, "Package", Some("team"), "db", None),
            "without a key, labels are all there is"
        );
    }

    #[test]
    fn a_component_is_the_parents_only_with_its_label_and_seal() {
        let parent = "clusterpackage..app";
        let mut component = Package::new(
            "app-db",
            PackageSpec {
                package_info: PackageInfoTemplate {
                    name: "db".into(),
                    version: None,
                    repository_name: None,
                },
                values: BTreeMap::new(),
                suspend: false,
            },
        );
        component.metadata.namespace = Some("apps".into());
        component.metadata.labels = Some(BTreeMap::from([(
            PARENT_LABEL.to_owned(),
            parent.to_owned(),
        )]));
        assert!(
            !is_component_of(&component, parent, Some(&key(1))),
            "labelled only"
        );
        assert!(is_component_of(&component, parent, None));
        component.metadata.annotations = Some(BTreeMap::from([(
            COMPONENT_SEAL_ANNOTATION.to_owned(),
            component_seal(&key(1), "apps", "app-db", parent),
        )]));
        assert!(is_component_of(&component, parent, Some(&key(1))));
        assert!(!is_component_of(
            &component,
            "clusterpackage..other",
            Some(&key(1))
        ));
        component.metadata.namespace = Some("elsewhere".into());
        assert!(
            !is_component_of(&component, parent, Some(&key(1))),
            "sealed for another namespace"
        );
    }
}
