//! `file://` refs: the ConfigMap mounted at the ref's path.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use pakket_api::BundleSpec;
use sha2::{Digest as _, Sha256};

use super::{ContentError, Unpacked};
use crate::store::{Digest, Store};

/// A `file://` ref: the ConfigMap mounted at its path.
pub(super) async fn unpack_file(
    client: &Client,
    spec: &BundleSpec,
    store: &Store,
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
            config_map_error(
                "not found; create it (immutable: true) or fix spec.volumeMounts".into(),
            )
        })?;
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
