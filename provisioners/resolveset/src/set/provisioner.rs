//! The resolveset provisioner (`pakket.dev/resolveset`): a Bundle whose
//! content is `resolved.bundles.json` becomes one child Instance per
//! entry (`<set>-<package>`), each embedding its bundle (`docker://` its image) under the
//! ProvisionerClass the class's `matchSchema` names for the entry's
//! schema. The runtime applies the children like any objects: a child
//! that leaves the set is pruned (and its own provisioner uninstalls it),
//! a child whose bundle changed pivots.
//!
//! Class parameters: `matchSchema: [{schema, class}]` (required),
//! `installNamespace` (every child's: a name, or a pattern such as
//! `{package}-system`; default: a namespace named after its package),
//! `namespaceTemplate` (labels and annotations for a namespace registry-v1
//! creates: [`crate::set::placement`]), `approval: AllowAll | DenyAll |
//! Android`.
//!
//! `Android` ([`crate::set::set_approval`]) approves a new set by itself
//! when each package it adds is one person's request, judged as hers by
//! its own class, and it moves none to an older version. Each child is
//! then approved under its own class's policy, which sees its content:
//! registry-v1's `UserPermission`, an admin's `ApprovalPolicy`, or the
//! runtime's `Android` ([`pakket_runtime::approval::android`]), under
//! which a child's update that asks for an RBAC rule, binding, CRD or
//! webhook its running bundle did not waits for a person.

use kube::ResourceExt as _;
use pakket_engine::catalog::SCHEMA_HELM_CHART;
use pakket_runtime::approval::{Approval, ApprovalRequest};
use pakket_runtime::kernel::trust::children::PakketKind;
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Map, Value, json};

use crate::inputs::input_resolve::child_name;
use crate::set::placement;
use crate::set::resolved_set::{self, Entry};

/// The provisioner's id.
pub const ID: &str = "pakket.dev/resolveset";

/// The annotation of a team's copy of a package's operator: the namespace
/// it runs in ([`crate::set::copies`]).
pub const COPY_IN_ANNOTATION: &str = "resolve.pakket.dev/copy-in";

/// The resolveset provisioner.
pub struct ResolveSet {
    id: String,
    record_key: Option<pakket_api::RecordKey>,
}

impl ResolveSet {
    /// Answers to `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            record_key: None,
        }
    }

    /// Seals, on each child Instance, the person its entry is stamped for
    /// ([`crate::set::requested_by`]) with `key`, as the requester of the
    /// child's spec.
    pub fn with_record_key(mut self, key: Option<pakket_api::RecordKey>) -> Self {
        self.record_key = key;
        self
    }
}

/// `child` with the requester record of the person `entry` is installed
/// for, sealed for the child's name and spec, when there is one and a key.
fn on_behalf_of(mut child: Value, entry: &Entry, key: Option<&pakket_api::RecordKey>) -> Value {
    let (Some(key), Some(person)) = (key, crate::set::requested_by::of(entry)) else {
        return child;
    };
    let Ok(spec) = serde_json::from_value::<pakket_api::InstanceSpec>(child["spec"].clone()) else {
        return child;
    };
    let name = child["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let sealed = person.sealed(key, pakket_api::LAST_CHANGED_BY_ANNOTATION, &name, &spec);
    child["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
        Value::String(sealed.to_annotation());
    child
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

/// The set in the content, read as every provisioner reads a file that is
/// not a manifest: inside the content only, within the class's
/// `maxObjectSize`, errors naming the file.
fn read_set(request: &ObjectsRequest<'_>) -> Result<Vec<Entry>, ObjectsError> {
    let file = std::path::Path::new(resolved_set::FILE);
    let document =
        pakket_runtime::manifest::read_document(request.content, file, request.max_object_size)
            .map_err(|error| ObjectsError::Content(error.to_string()))?
            .ok_or_else(|| {
                ObjectsError::Content(format!(
                    "{} is missing: a resolveset Bundle holds the resolved set in that file",
                    resolved_set::FILE
                ))
            })?;
    serde_json::from_value(document)
        .map_err(|error| ObjectsError::Content(format!("{}: {error}", resolved_set::FILE)))
}

/// One child Instance for `entry` of the set whose Instance is `set`,
/// installed into `namespace` (the class's) with the class's `template`
/// merged over the owner's.
fn child(set: &str, entry: &Entry, class: &str, namespace: &str, template: Option<Value>) -> Value {
    let config = if entry.schema == SCHEMA_HELM_CHART {
        chart_config(entry, namespace)
    } else {
        // The class's namespace, under what the package's owner asked for.
        let mut config = Map::new();
        config.insert("installNamespace".into(), json!(namespace));
        config.extend(entry.config.clone().unwrap_or_default());
        if let Some(template) = template {
            config.insert("namespaceTemplate".into(), template);
        }
        config
    };
    let mut annotations = json!({
        "resolve.pakket.dev/package": entry.package_name,
        "resolve.pakket.dev/version": entry.version,
        "resolve.pakket.dev/catalog": entry.catalog,
    });
    if let Some(namespace) = entry.copy_in() {
        annotations[COPY_IN_ANNOTATION] = json!(namespace);
    }
    let reference = if entry.image.contains("://") {
        entry.image.clone()
    } else {
        format!("docker://{}", entry.image)
    };
    json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": {
            "name": child_name(set, entry),
            // `kubectl get instances -l resolve.pakket.dev/resolveset=SET`
            // lists a set's children.
            "labels": { crate::inputs::input_controller::SET_LABEL: set },
            "annotations": annotations,
        },
        "spec": {
            "class": class,
            "bundle": {
                "name": entry.name,
                "spec": { "class": class, "refs": [reference] },
            },
            "config": config,
        },
    })
}

/// A chart's config, as the helm provisioner reads it: released as its
/// package's name into the class's namespace (made if missing, as `helm
/// install --create-namespace`), under what the package's owner asked for
/// (`values`, or another `namespace`; an owner's `installNamespace`, the
/// field Inputs write for operators, names the namespace too).
fn chart_config(entry: &Entry, namespace: &str) -> Map<String, Value> {
    let mut config = Map::new();
    config.insert("namespace".into(), json!(namespace));
    config.insert("createNamespace".into(), json!(true));
    config.insert("releaseName".into(), json!(entry.package_name));
    for (key, value) in entry.config.clone().unwrap_or_default() {
        let key = if key == "installNamespace" {
            "namespace".to_owned()
        } else {
            key
        };
        config.insert(key, value);
    }
    config
}

impl Provisioner for ResolveSet {
    fn id(&self) -> &str {
        &self.id
    }

    /// Child Instances, one per entry of the set.
    fn pakket_kinds(&self) -> &[PakketKind] {
        &[PakketKind::INSTANCE]
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let entries = read_set(request)?;
        let parameters = request.class_parameters;
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
                let set = request.instance.name_any();
                let namespace = placement::install_namespace(parameters, &entry.package_name)?;
                let own = entry.config.as_ref().and_then(|own| own.get("namespaceTemplate"));
                let template = placement::namespace_template(parameters, own)?;
                let made = child(&set, entry, class, &namespace, template);
                Ok(on_behalf_of(made, entry, self.record_key.as_ref()))
            })
            .collect()
    }

    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "Android" => crate::set::set_approval::android(request).await,
            _ => pakket_runtime::approval::standard(request).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(package: &str, image: &str) -> Entry {
        Entry {
            config: None,
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
        let child = child(
            "resolveset",
            &entry("etcd", "quay.io/etcd:1"),
            class,
            "etcd",
            None,
        );
        assert_eq!(child["metadata"]["name"], "resolveset-etcd");
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

    #[test]
    fn a_charts_child_goes_to_the_helm_class_released_by_its_package_into_its_namespace() {
        let parameters: Map<String, Value> = serde_json::from_value(json!({"matchSchema": [
            {"schema": "olm.bundle", "class": "registry-v1"},
            {"schema": "helm.chart", "class": "helm"},
        ]}))
        .unwrap();
        let chart = Entry {
            schema: SCHEMA_HELM_CHART.into(),
            config: serde_json::from_value(json!({"values": {"replicaCount": 2}})).unwrap(),
            ..entry("podinfo", "helm+https://charts.example/#podinfo@6.7.1")
        };
        let class = class_for(Some(&parameters), &chart.schema).unwrap();
        let child = child("resolveset", &chart, class, "podinfo", None);
        assert_eq!(child["spec"]["class"], "helm");
        assert_eq!(
            child["spec"]["bundle"]["spec"]["refs"][0],
            "helm+https://charts.example/#podinfo@6.7.1",
            "a chart's ref is used as written"
        );
        assert_eq!(
            child["spec"]["config"],
            json!({
                "namespace": "podinfo",
                "createNamespace": true,
                "releaseName": "podinfo",
                "values": {"replicaCount": 2},
            }),
            "nothing the helm provisioner does not read"
        );
        // An owner's installNamespace names the release's namespace.
        let elsewhere = Entry {
            config: serde_json::from_value(json!({"installNamespace": "team-a"})).unwrap(),
            ..chart
        };
        let moved = super::child("resolveset", &elsewhere, class, "podinfo", None);
        assert_eq!(moved["spec"]["config"]["namespace"], "team-a");
        assert!(moved["spec"]["config"].get("installNamespace").is_none());
    }

    #[test]
    fn the_set_is_read_inside_the_content_within_the_limit() {
        let content = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let instance = pakket_api::Instance::new(
            "resolveset",
            serde_json::from_value(json!({"class": "resolveset", "bundle": {"name": "b"}}))
                .unwrap(),
        );
        let cluster = pakket_runtime::provisioner::ClusterFacts::default();
        let request = |max_object_size| ObjectsRequest {
            content: content.path(),
            max_object_size,
            instance: &instance,
            cluster: &cluster,
            class_parameters: None,
        };
        let missing = read_set(&request(1 << 20)).unwrap_err().to_string();
        assert!(missing.contains("is missing"), "{missing}");

        let bytes = resolved_set::to_bytes(&[entry("etcd", "quay.io/etcd:1")]);
        std::fs::write(outside.path().join(resolved_set::FILE), &bytes).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join(resolved_set::FILE),
            content.path().join(resolved_set::FILE),
        )
        .unwrap();
        let out = read_set(&request(1 << 20)).unwrap_err().to_string();
        assert!(out.contains(resolved_set::FILE), "{out}");
        assert!(
            out.contains("leaves the content"),
            "a link out of the content is not followed: {out}"
        );

        std::fs::remove_file(content.path().join(resolved_set::FILE)).unwrap();
        std::fs::write(content.path().join(resolved_set::FILE), &bytes).unwrap();
        assert_eq!(read_set(&request(1 << 20)).unwrap()[0].package_name, "etcd");
        let large = read_set(&request(16)).unwrap_err().to_string();
        assert!(
            large.contains(resolved_set::FILE) && large.contains("16"),
            "{large}"
        );
    }
}
