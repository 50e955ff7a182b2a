//! The resolveset provisioner (`pakket.dev/resolveset`): a Bundle whose
//! content is `resolved.bundles.json` becomes one child Instance per
//! entry, each embedding its bundle (`docker://` its image) under the
//! ProvisionerClass the class's `matchSchema` names for the entry's
//! schema. The runtime applies the children like any objects: a child
//! that leaves the set is pruned (and its own provisioner uninstalls it),
//! a child whose bundle changed pivots.
//!
//! Class parameters: `matchSchema: [{schema, class}]` (required),
//! `installNamespace` (every child's; default: a namespace named after its
//! package), `approval: AllowAll | DenyAll | Android`.
//!
//! `Android` approves a new set by itself only when it installs no package
//! the set it replaces did not (updates of installed packages, removals);
//! a set that adds a package waits for a person, its message naming what
//! is new. Each child is then approved under its own class's policy
//! (registry-v1's `UserPermission`, say), which sees its RBAC.

use std::collections::BTreeSet;

use kube::ResourceExt as _;
use pakket_runtime::approval::{Approval, ApprovalRequest};
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Map, Value, json};

use crate::input_resolve::instance_name;
use crate::resolved_set::{self, Entry};

/// The provisioner's id.
pub const ID: &str = "pakket.dev/resolveset";

/// The resolveset provisioner.
pub struct ResolveSet {
    id: String,
}

impl ResolveSet {
    /// Answers to `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

/// Which class installs entries of one schema.
fn class_for<'a>(
    parameters: Option<&'a Map<String, Value>>,
    schema: &str,
) -> Result<&'a str, ObjectsError> {
    let rules = parameters
        .and_then(|p| p.get("matchSchema"))
        .and_then(Value::as_array)
        .ok_or_else(|| ObjectsError::Config {
            field: "ProvisionerClass spec.parameters.matchSchema".into(),
            problem: "is missing: list [{schema: olm.bundle, class: registry-v1}] so each entry has a class".into(),
        })?;
    rules
        .iter()
        .find(|rule| rule.get("schema").and_then(Value::as_str) == Some(schema))
        .and_then(|rule| rule.get("class").and_then(Value::as_str))
        .ok_or_else(|| ObjectsError::Config {
            field: "ProvisionerClass spec.parameters.matchSchema".into(),
            problem: format!(
                "names no class for schema {schema}; add {{schema: {schema}, class: …}}"
            ),
        })
}

/// The set in the content.
fn read_set(request: &ObjectsRequest<'_>) -> Result<Vec<Entry>, ObjectsError> {
    let path = request.content.join(resolved_set::FILE);
    let size = std::fs::metadata(&path)
        .map_err(|_| {
            ObjectsError::Content(format!(
                "{} is missing: a resolveset Bundle holds the resolved set in that file",
                resolved_set::FILE
            ))
        })?
        .len();
    if size > request.max_object_size {
        return Err(ObjectsError::Content(format!(
            "{} is {size} bytes, over the class's maxObjectSize of {}",
            resolved_set::FILE,
            request.max_object_size
        )));
    }
    let bytes = std::fs::read(&path)
        .map_err(|error| ObjectsError::Content(format!("{}: {error}", resolved_set::FILE)))?;
    resolved_set::from_bytes(&bytes).map_err(ObjectsError::Content)
}

/// One child Instance for `entry`.
fn child(entry: &Entry, class: &str, namespace: &str) -> Value {
    let reference = if entry.image.contains("://") {
        entry.image.clone()
    } else {
        format!("docker://{}", entry.image)
    };
    json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": {
            "name": instance_name(&entry.package_name),
            "annotations": {
                "resolve.pakket.dev/package": entry.package_name,
                "resolve.pakket.dev/version": entry.version,
                "resolve.pakket.dev/catalog": entry.catalog,
            },
        },
        "spec": {
            "class": class,
            "bundle": {
                "name": entry.name,
                "spec": { "class": class, "refs": [reference] },
            },
            "config": { "installNamespace": namespace },
        },
    })
}

impl Provisioner for ResolveSet {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let entries = read_set(request)?;
        let namespace = request
            .class_parameters
            .and_then(|p| p.get("installNamespace"))
            .and_then(Value::as_str);
        entries
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                if entry.image.is_empty() {
                    return Err(ObjectsError::Content(format!(
                        "{}[{i}] ({}): the catalog names no image for it, so nothing can install it",
                        resolved_set::FILE,
                        entry.name
                    )));
                }
                let class = class_for(request.class_parameters, &entry.schema)?;
                Ok(child(entry, class, namespace.unwrap_or(&entry.package_name)))
            })
            .collect()
    }

    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "Android" => android(request),
            _ => request.wait_for_a_person(),
        }
    }
}

/// The packages a set of child Instances installs.
fn packages(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .filter_map(|o| o["metadata"]["annotations"]["resolve.pakket.dev/package"].as_str())
        .map(str::to_owned)
        .collect()
}

/// `Android`: nothing new, approved; a new package, a person decides.
fn android(request: &ApprovalRequest<'_>) -> Approval {
    let installed: BTreeSet<String> = request
        .instance
        .status
        .as_ref()
        .map(|status| {
            status
                .objects
                .iter()
                .filter(|o| o.kind == "Instance")
                .filter_map(|o| o.name.strip_prefix("rs-").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let wanted = packages(request.objects);
    let new: Vec<&String> = wanted.difference(&installed).collect();
    if new.is_empty() {
        return Approval::Approved(format!(
            "approved by policy Android: the set installs no package the installed set did not ({} packages); each is approved under its own class",
            wanted.len()
        ));
    }
    Approval::Pending {
        message: format!(
            "waiting for approval (ProvisionerClass {} has approval: Android): the set adds {} new package(s): {}; review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`",
            request.class.name_any(),
            new.len(),
            new.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            name = request.instance.name_any()
        ),
        retry: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, image: &str) -> Entry {
        Entry {
            schema: "olm.bundle".into(),
            name: format!("{package}.v1"),
            package_name: package.into(),
            version: "1.0.0".into(),
            image: image.into(),
            catalog: "c".into(),
            channel: None,
            properties: Vec::new(),
        }
    }

    #[test]
    fn each_entry_is_a_child_instance_of_the_class_its_schema_names() {
        let parameters: Map<String, Value> = serde_json::from_value(
            json!({"matchSchema": [{"schema": "olm.bundle", "class": "registry-v1"}]}),
        )
        .unwrap();
        let class = class_for(Some(&parameters), "olm.bundle").unwrap();
        let child = child(&entry("etcd", "quay.io/etcd:1"), class, "etcd");
        assert_eq!(child["metadata"]["name"], "rs-etcd");
        assert_eq!(child["spec"]["class"], "registry-v1");
        assert_eq!(
            child["spec"]["bundle"]["spec"]["refs"][0],
            "docker://quay.io/etcd:1"
        );
        assert_eq!(child["spec"]["config"]["installNamespace"], "etcd");
        let missing = class_for(Some(&parameters), "helm.chart").unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("names no class for schema helm.chart"),
            "{missing}"
        );
        assert!(
            class_for(None, "olm.bundle")
                .unwrap_err()
                .to_string()
                .contains("is missing")
        );
    }
}
