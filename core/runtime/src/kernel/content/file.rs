//! `file://` refs: the ConfigMap mounted at the ref's path.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use pakket_api::{BundleSpec, ConfigMapSource};
use sha2::{Digest as _, Sha256};

use super::{ContentError, Unpacked};
use crate::store::{Digest, Store};

/// A `file://` ref: the ConfigMap mounted at its path.
pub(super) async fn unpack_file(
    client: &Client,
    spec: &BundleSpec,
    store: &Store,
    options: &super::UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let path = reference.strip_prefix("file://").unwrap_or_default();
    let path = format!("/{}", path.trim_start_matches('/'));
    let (mount, key) = spec
        .volume_mounts
        .iter()
        .find_map(|mount| {
            let root = mount.mount_path.trim_end_matches('/');
            let rest = path.strip_prefix(root)?;
            match rest.trim_start_matches('/') {
                "" => Some((mount, None)),
                key if rest.starts_with('/') => Some((mount, Some(key.to_owned()))),
                _ => None,
            }
        })
        .ok_or_else(|| ContentError::NoMount {
            index,
            reference: reference.clone(),
            path: path.clone(),
        })?;
    let source = &mount.config_map;
    let config_map = read_content(client, source, options.content_label).await?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (name, value) in config_map.data.unwrap_or_default() {
        files.insert(name, value.into_bytes());
    }
    for (name, value) in config_map.binary_data.unwrap_or_default() {
        files.insert(name, value.0);
    }
    if let Some(key) = &key {
        let Some(value) = files.remove(key) else {
            return Err(ContentError::MissingKey {
                index,
                reference,
                namespace: source.namespace.clone(),
                name: source.name.clone(),
                key: key.clone(),
            });
        };
        files = BTreeMap::from([(key.clone(), value)]);
    }
    let digest = digest_of(&files);
    let dir = store.insert_with(&digest, |dir| -> Result<(), ContentError> {
        for (name, value) in &files {
            // ConfigMap keys are [-._a-zA-Z0-9]+: no separator, no escape.
            let path = dir.join(name);
            std::fs::write(&path, value).map_err(|source| ContentError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    })?;
    Ok(Unpacked {
        reference,
        digest,
        dir,
        commit: None,
    })
}

/// The ConfigMap `source`, if it exists and carries `label` (`"true"`):
/// the label is looked at before anything else of it, so an unlabelled
/// ConfigMap's data never reaches the store, a status or a log.
async fn read_content(
    client: &Client,
    source: &ConfigMapSource,
    label: &'static str,
) -> Result<ConfigMap, ContentError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &source.namespace);
    let config_map_error = |message: String| ContentError::ConfigMap {
        namespace: source.namespace.clone(),
        name: source.name.clone(),
        message,
    };
    let config_map = api
        .get_opt(&source.name)
        .await
        .map_err(|error| config_map_error(crate::apply::api_message(&error)))?
        .ok_or_else(|| {
            config_map_error(format!(
                "not found; create it (immutable: true, labelled {label}=true) or fix spec.volumeMounts"
            ))
        })?;
    let labelled = config_map
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(label))
        .is_some_and(|value| value == "true");
    if !labelled {
        return Err(ContentError::Unlabelled {
            namespace: source.namespace.clone(),
            name: source.name.clone(),
            label,
        });
    }
    Ok(config_map)
}

/// sha256 over each key and value, length-prefixed so no two contents collide.
fn digest_of(files: &BTreeMap<String, Vec<u8>>) -> Digest {
    let mut hasher = Sha256::new();
    for (name, value) in files {
        hasher.update((name.len() as u64).to_be_bytes());
        hasher.update(name.as_bytes());
        hasher.update((value.len() as u64).to_be_bytes());
        hasher.update(value);
    }
    Digest::from_sha256(hasher.finalize().into())
}
