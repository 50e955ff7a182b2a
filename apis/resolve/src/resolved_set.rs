//! `resolved.bundles.json`: the set the cluster installs, as the resolveset
//! provisioner reads it. One entry per package, sorted by package, in the
//! seed's shape (`schema`, `packageName`, `version`, `image`, `properties`
//! with `pivotFrom`), plus where each came from and who needs it. Written
//! the same way every time, so the same set is the same bytes and the same
//! ConfigMap name (a digest of the bytes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::input::ResolvedInstance;
use crate::protocol::resolve::Selection;

/// The file name the provisioner reads.
pub const FILE: &str = "resolved.bundles.json";

/// One bundle of the set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `olm.bundle`: which provisioner class installs it (`matchSchema`).
    pub schema: String,
    /// The bundle's name.
    pub name: String,
    /// Its package.
    pub package_name: String,
    /// Its version.
    pub version: String,
    /// Its image (`docker://` is added by the provisioner).
    pub image: String,
    /// The catalog it comes from.
    pub catalog: String,
    /// The channel it was chosen through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `olm.package`, the `olm.gvk`s it provides, `pivotFrom` (the bundle
    /// of the same package in the set it replaces) and
    /// `pakket.dev/neededBy` (the Inputs and Instances it is there for).
    pub properties: Vec<Value>,
    /// The `spec.config` its Instance gets: the owning Input's
    /// (the package's owner among them); none for a dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Map<String, Value>>,
}

/// The property naming who needs an entry (`Input x`, `Instance y`).
pub const NEEDED_BY: &str = "pakket.dev/neededBy";

/// The property of a team's own copy of a package's operator: the
/// namespace it runs in and watches. The package's other entry (no such
/// property) owns its CRDs, which the copies share.
pub const COPY_IN: &str = "pakket.dev/copyIn";

impl Entry {
    /// The namespace of this copy of the package's operator; `None` for
    /// the package's own entry.
    pub fn copy_in(&self) -> Option<&str> {
        self.properties
            .iter()
            .find(|property| property["type"] == COPY_IN)
            .and_then(|property| property["value"].as_str())
    }

    /// Who the set records as needing this entry (`Input x`, `Instance y`).
    pub fn needed_by(&self) -> Vec<&str> {
        self.properties
            .iter()
            .filter(|property| property["type"] == NEEDED_BY)
            .filter_map(|property| property["value"].as_array())
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }
}

/// The property `trace` adds: why the resolution chose the bundle.
pub const TRACE: &str = "pakket.dev/trace";

/// Adds [`TRACE`] to the entries the `traced` Inputs brought in: the
/// resolution's reason for the bundle (requested, a dependency of which
/// bundle and through what, an upgrade from which, kept as installed) and
/// which of those Inputs it is for, with what each relation meets.
pub fn trace(
    entries: &mut [Entry],
    set: &[Selection],
    answers: &BTreeMap<String, Vec<ResolvedInstance>>,
    traced: &[&str],
) {
    for entry in entries.iter_mut() {
        let mut inputs = Vec::new();
        for input in traced {
            let Some(instances) = answers.get(*input) else {
                continue;
            };
            if let Some(instance) = instances.iter().find(|i| i.bundle == entry.name) {
                inputs.push(json!({
                    "input": input,
                    "satisfies": instance.satisfies,
                    "dependencies": instance.dependencies,
                }));
            }
        }
        if inputs.is_empty() {
            continue;
        }
        let reason = set
            .iter()
            .find(|selection| selection.bundle == entry.name)
            .map(|selection| json!(selection.reason))
            .unwrap_or(Value::Null);
        entry.properties.push(json!({
            "type": TRACE,
            "value": { "reason": reason, "for": inputs },
        }));
    }
}

/// The file's bytes: pretty JSON and a newline.
pub fn to_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(entries).expect("plain data serializes");
    text.push(b'\n');
    text
}

/// The ConfigMap that holds `bytes`: named after their digest.
pub fn config_map_name(bytes: &[u8]) -> String {
    let digest = hex::encode(Sha256::digest(bytes));
    format!("resolveset-{}", &digest[..16])
}

/// The ConfigMap a resolveset Instance mounts (its namespace and name),
/// where the set it installs is.
pub fn mounted(instance: &pakket_api::Instance) -> Option<&pakket_api::ConfigMapSource> {
    instance
        .spec
        .bundle
        .spec
        .as_ref()
        .and_then(|spec| spec.volume_mounts.first())
        .map(|mount| &mount.config_map)
}

/// The set a resolveset ConfigMap holds (none when it has no file).
pub fn in_config_map(
    config_map: &k8s_openapi::api::core::v1::ConfigMap,
) -> Result<Vec<Entry>, String> {
    let text = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(FILE))
        .map(String::as_str)
        .unwrap_or_default();
    from_bytes(text.as_bytes())
}

/// Reads the file back (what the set held before).
pub fn from_bytes(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    serde_json::from_slice(bytes).map_err(|error| format!("{FILE}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_set_is_the_same_bytes_and_name_and_reads_back() {
        let entry = Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: "etcd.v0.9.4".into(),
            package_name: "etcd".into(),
            version: "0.9.4".into(),
            image: "quay.io/etcd:0.9.4".into(),
            catalog: "community".into(),
            channel: Some("alpha".into()),
            properties: vec![json!({"type": "pivotFrom", "value": "etcd.v0.9.2"})],
        };
        let bytes = to_bytes(std::slice::from_ref(&entry));
        assert_eq!(bytes, to_bytes(std::slice::from_ref(&entry)));
        assert_eq!(
            config_map_name(&bytes),
            config_map_name(&to_bytes(std::slice::from_ref(&entry)))
        );
        assert!(config_map_name(&bytes).starts_with("resolveset-"));
        assert_eq!(from_bytes(&bytes).unwrap(), vec![entry]);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\"packageName\": \"etcd\""), "{text}");
    }

    #[test]
    fn trace_records_why_each_bundle_of_a_traced_input_was_chosen() {
        use crate::input::Relation;
        use crate::protocol::resolve::SelectionReason;
        let entry = |package: &str| Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: format!("{package}.v1"),
            package_name: package.into(),
            version: "1.0.0".into(),
            image: String::new(),
            catalog: "c".into(),
            channel: None,
            properties: Vec::new(),
        };
        let mut entries = vec![entry("app"), entry("other")];
        let set = vec![Selection {
            package: "app".into(),
            version: "1.0.0".into(),
            bundle: "app.v1".into(),
            channel: None,
            catalog: "c".into(),
            reason: SelectionReason::Installed,
            deprecated: None,
        }];
        let answers = BTreeMap::from([(
            "traced".to_owned(),
            vec![ResolvedInstance {
                bundle: "app.v1".into(),
                satisfies: vec![Relation {
                    kind: "Input".into(),
                    name: "traced".into(),
                    meets: vec!["app".into()],
                }],
                ..ResolvedInstance::default()
            }],
        )]);
        trace(&mut entries, &set, &answers, &["traced"]);
        let traced = &entries[0].properties[0];
        assert_eq!(traced["type"], TRACE);
        assert_eq!(traced["value"]["reason"]["kind"], "installed");
        assert_eq!(traced["value"]["for"][0]["input"], "traced");
        assert!(
            entries[1].properties.is_empty(),
            "only the traced Input's bundles"
        );
    }
}
