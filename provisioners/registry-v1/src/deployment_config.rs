//! `spec.config.deploymentConfig`: how an admin adjusts an operator's
//! Deployments (OLM's Subscription `config`), applied to every Deployment
//! of the CSV with OLM's merge rules:
//!
//! - `resources` (every container) and `nodeSelector` replace what the
//!   bundle wrote;
//! - `env` merges by name, the config's value winning;
//! - `envFrom` and `tolerations` are added after the bundle's;
//! - `volumes` merge by name and `volumeMounts` (every container) by mount
//!   path, the config's winning;
//! - `affinity` replaces each of `nodeAffinity`, `podAffinity` and
//!   `podAntiAffinity` that it sets, and leaves the others;
//! - `annotations` go on each Deployment and its pod template, where the
//!   bundle's own annotations of the same key win.
//!
//! Written in the Kubernetes types, read strictly: an unknown or
//! misspelled field, or a value of the wrong shape, is an error naming its
//! path. What the fields hold (a quantity, a hostPath) is judged where the
//! rendered Deployment is: the apiserver's dry run and the class's
//! approval policy.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::ConfigError;

/// The field it is read from.
pub const FIELD: &str = "spec.config.deploymentConfig";

/// What an admin sets for an operator's Deployments.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentConfig {
    /// Replaces the pods' node selector.
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Added to the pods' tolerations.
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
    /// Replaces every container's resources.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// Added to every container's `envFrom`.
    #[serde(default)]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Merged into every container's `env` by name.
    #[serde(default)]
    pub env: Option<Vec<EnvVar>>,
    /// Merged into the pods' volumes by name.
    #[serde(default)]
    pub volumes: Option<Vec<Volume>>,
    /// Merged into every container's mounts by mount path.
    #[serde(default)]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// Replaces the affinity kinds it sets.
    #[serde(default)]
    pub affinity: Option<Affinity>,
    /// Added to each Deployment and pod template, under the bundle's own.
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Reads `value` (the `deploymentConfig` of `spec.config`).
pub fn read(value: &Value) -> Result<DeploymentConfig, ConfigError> {
    if !value.is_object() {
        return Err(ConfigError {
            field: FIELD.into(),
            problem: format!(
                "{value} is not an object; write e.g. {{nodeSelector: {{...}}, env: [...]}}"
            ),
        });
    }
    let config: DeploymentConfig = serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." {
            FIELD.to_owned()
        } else {
            format!("{FIELD}.{path}")
        };
        ConfigError {
            field,
            problem: format!(
                "{}; deploymentConfig takes nodeSelector, tolerations, resources, env, envFrom, volumes, volumeMounts, affinity and annotations, in the Kubernetes types",
                error.inner()
            ),
        }
    })?;
    config.check()?;
    Ok(config)
}

impl DeploymentConfig {
    /// What the Kubernetes types cannot say: names present and unique,
    /// mounts of volumes that exist somewhere.
    fn check(&self) -> Result<(), ConfigError> {
        let problem = |field: String, problem: String| Err(ConfigError { field, problem });
        let mut seen = Vec::new();
        for (index, env) in self.env.iter().flatten().enumerate() {
            if env.name.is_empty() {
                return problem(
                    format!("{FIELD}.env[{index}].name"),
                    "is empty; name the variable".into(),
                );
            }
            if seen.contains(&env.name.as_str()) {
                return problem(
                    format!("{FIELD}.env[{index}].name"),
                    format!("{} is set twice", env.name),
                );
            }
            seen.push(env.name.as_str());
        }
        let mut volumes = Vec::new();
        for (index, volume) in self.volumes.iter().flatten().enumerate() {
            if volume.name.is_empty() || volumes.contains(&volume.name.as_str()) {
                return problem(
                    format!("{FIELD}.volumes[{index}].name"),
                    format!(
                        "{:?} is empty or listed twice; give each volume its own name",
                        volume.name
                    ),
                );
            }
            volumes.push(volume.name.as_str());
        }
        let mut paths = Vec::new();
        for (index, mount) in self.volume_mounts.iter().flatten().enumerate() {
            if mount.mount_path.is_empty() || paths.contains(&mount.mount_path.as_str()) {
                return problem(
                    format!("{FIELD}.volumeMounts[{index}].mountPath"),
                    format!(
                        "{:?} is empty or mounted twice; give each mount its own path",
                        mount.mount_path
                    ),
                );
            }
            paths.push(mount.mount_path.as_str());
        }
        Ok(())
    }

    /// Mounts of volumes that neither the config nor any Deployment of
    /// the bundle (`bundle_volumes`, with the webhook certificates') has:
    /// the first, as an error naming it.
    pub fn check_mounts(&self, bundle_volumes: &[String]) -> Result<(), ConfigError> {
        let known = |name: &str| {
            bundle_volumes.iter().any(|volume| volume == name)
                || self
                    .volumes
                    .iter()
                    .flatten()
                    .any(|volume| volume.name == name)
        };
        match self
            .volume_mounts
            .iter()
            .flatten()
            .enumerate()
            .find(|(_, mount)| !known(&mount.name))
        {
            Some((index, mount)) => Err(ConfigError {
                field: format!("{FIELD}.volumeMounts[{index}].name"),
                problem: format!(
                    "mounts volume {:?}, which neither {FIELD}.volumes nor the operator's pods have; add it to {FIELD}.volumes",
                    mount.name
                ),
            }),
            None => Ok(()),
        }
    }

    /// Applies the config to a Deployment (`metadata` and `spec` as
    /// rendered so far).
    pub fn apply(&self, metadata: &mut Map<String, Value>, spec: &mut Value) {
        if let Some(annotations) = &self.annotations {
            add_missing(metadata, annotations);
            if let Some(Value::Object(template)) = spec.pointer_mut("/template/metadata") {
                add_missing(template, annotations);
            }
        }
        let Some(pod) = spec
            .pointer_mut("/template/spec")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        if let Some(selector) = &self.node_selector {
            pod.insert("nodeSelector".into(), json(selector));
        }
        if let Some(tolerations) = &self.tolerations {
            append(pod, "tolerations", tolerations.iter().map(json));
        }
        if let Some(volumes) = &self.volumes {
            merge_by(pod, "volumes", "name", volumes.iter().map(json));
        }
        if let Some(affinity) = &self.affinity {
            let current = pod
                .entry("affinity")
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Value::Object(current), Value::Object(new)) = (current, json(affinity)) {
                // Only the kinds it sets: the others stay the bundle's.
                current.extend(new);
            }
        }
        let containers = pod
            .get_mut("containers")
            .and_then(Value::as_array_mut)
            .map(|containers| containers.iter_mut().filter_map(Value::as_object_mut));
        for container in containers.into_iter().flatten() {
            if let Some(resources) = &self.resources {
                container.insert("resources".into(), json(resources));
            }
            if let Some(env) = &self.env {
                merge_by(container, "env", "name", env.iter().map(json));
            }
            if let Some(env_from) = &self.env_from {
                append(container, "envFrom", env_from.iter().map(json));
            }
            if let Some(mounts) = &self.volume_mounts {
                merge_by(
                    container,
                    "volumeMounts",
                    "mountPath",
                    mounts.iter().map(json),
                );
            }
        }
    }
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `annotations` added to `metadata.annotations` where the key is not set.
fn add_missing(metadata: &mut Map<String, Value>, annotations: &BTreeMap<String, String>) {
    let current = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(current) = current {
        for (key, value) in annotations {
            current
                .entry(key.clone())
                .or_insert_with(|| Value::String(value.clone()));
        }
    }
}

/// `items` after the list at `key`.
fn append(object: &mut Map<String, Value>, key: &str, items: impl Iterator<Item = Value>) {
    let list = object
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = list {
        list.extend(items);
    }
}

/// `items` into the list at `key`: one with the same `by` replaces the
/// existing one in place, others are added at the end.
fn merge_by(
    object: &mut Map<String, Value>,
    key: &str,
    by: &str,
    items: impl Iterator<Item = Value>,
) {
    let list = object
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(list) = list else {
        return;
    };
    for item in items {
        let same = list
            .iter()
            .position(|existing| existing.get(by).is_some() && existing.get(by) == item.get(by));
        match same {
            Some(index) => list[index] = item,
            None => list.push(item),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> (Map<String, Value>, Value) {
        let metadata = json!({"name": "op", "annotations": {"kept": "bundle"}});
        let spec = json!({"template": {
            "metadata": {"annotations": {"kept": "bundle"}},
            "spec": {
                "nodeSelector": {"old": "1"},
                "tolerations": [{"key": "a", "operator": "Exists"}],
                "affinity": {"podAffinity": {"kept": true}, "nodeAffinity": {"old": true}},
                "volumes": [{"name": "certs", "secret": {"secretName": "old"}}],
                "containers": [
                    {"name": "manager", "env": [{"name": "LEVEL", "value": "info"}, {"name": "KEEP", "value": "1"}],
                     "resources": {"limits": {"cpu": "1"}}},
                    {"name": "proxy"},
                ],
            },
        }});
        (metadata.as_object().unwrap().clone(), spec)
    }

    #[test]
    fn the_config_is_applied_with_olms_merge_rules() {
        let config = read(&json!({
            "nodeSelector": {"infra": "true"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
            "resources": {"requests": {"memory": "256Mi"}},
            "env": [{"name": "LEVEL", "value": "debug"}, {"name": "NEW", "value": "x"}],
            "envFrom": [{"configMapRef": {"name": "settings"}}],
            "volumes": [{"name": "certs", "secret": {"secretName": "new"}}, {"name": "cache", "emptyDir": {}}],
            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
            "annotations": {"kept": "config", "added": "yes"},
        }))
        .unwrap();
        let (mut metadata, mut spec) = deployment();
        config.apply(&mut metadata, &mut spec);
        // Annotations: the bundle's win, new ones are added, on both.
        assert_eq!(
            metadata["annotations"],
            json!({"kept": "bundle", "added": "yes"})
        );
        assert_eq!(
            spec["template"]["metadata"]["annotations"],
            json!({"kept": "bundle", "added": "yes"})
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["nodeSelector"], json!({"infra": "true"}));
        assert_eq!(pod["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(pod["tolerations"][1]["key"], "dedicated");
        // Affinity: the kind it sets is replaced, the other kept.
        assert_eq!(pod["affinity"]["podAffinity"], json!({"kept": true}));
        assert!(pod["affinity"]["nodeAffinity"].get("old").is_none());
        // Volumes by name: replaced in place, new ones added.
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], "new");
        assert_eq!(pod["volumes"][1]["name"], "cache");
        for container in pod["containers"].as_array().unwrap() {
            assert_eq!(
                container["resources"],
                json!({"requests": {"memory": "256Mi"}})
            );
            assert_eq!(container["envFrom"][0]["configMapRef"]["name"], "settings");
            assert_eq!(
                container["volumeMounts"],
                json!([{"name": "cache", "mountPath": "/cache"}])
            );
        }
        assert_eq!(
            pod["containers"][0]["env"],
            json!([{"name": "LEVEL", "value": "debug"}, {"name": "KEEP", "value": "1"}, {"name": "NEW", "value": "x"}])
        );
        assert_eq!(
            pod["containers"][1]["env"],
            json!([{"name": "LEVEL", "value": "debug"}, {"name": "NEW", "value": "x"}])
        );
    }

    #[test]
    fn a_wrong_field_is_named_with_its_path() {
        let misspelled = read(&json!({"nodeSelectors": {"a": "b"}})).unwrap_err();
        assert_eq!(
            misspelled.field,
            "spec.config.deploymentConfig.nodeSelectors"
        );
        assert!(
            misspelled.problem.contains("nodeSelectors"),
            "{}",
            misspelled.problem
        );
        let shape = read(&json!({"tolerations": [{"key": 5}]})).unwrap_err();
        assert_eq!(
            shape.field,
            "spec.config.deploymentConfig.tolerations[0].key"
        );
        let twice = read(&json!({"env": [{"name": "A"}, {"name": "A"}]})).unwrap_err();
        assert_eq!(twice.field, "spec.config.deploymentConfig.env[1].name");
        let not_object = read(&json!(["env"])).unwrap_err();
        assert!(not_object.problem.contains("not an object"));
    }

    #[test]
    fn a_mount_of_a_volume_nobody_has_is_refused_naming_it() {
        let config = read(&json!({
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "volumeMounts": [{"name": "cache", "mountPath": "/c"}, {"name": "certs", "mountPath": "/certs"}, {"name": "ghost", "mountPath": "/g"}],
        }))
        .unwrap();
        let error = config.check_mounts(&["certs".to_owned()]).unwrap_err();
        assert_eq!(
            error.field,
            "spec.config.deploymentConfig.volumeMounts[2].name"
        );
        assert!(error.problem.contains("\"ghost\""), "{}", error.problem);
        let fine =
            read(&json!({"volumeMounts": [{"name": "certs", "mountPath": "/certs"}]})).unwrap();
        assert!(fine.check_mounts(&["certs".to_owned()]).is_ok());
    }
}
