//! A Bundle's content from `file://` refs inside ConfigMaps named in
//! `spec.volumeMounts`, written into the content store by digest.
//!
//! `file://content` (or `file:///content`) with a volume mounted at
//! `/content` is the whole ConfigMap, one file per key; `file://content/x.yaml`
//! is the single key `x.yaml`. ConfigMap keys cannot hold `/`, so there is no
//! deeper path, and a key can never escape the content directory.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use pakket_api::BundleSpec;
use sha2::{Digest as _, Sha256};

use crate::store::{Digest, Store};

/// Content unpacked into the store.
#[derive(Clone, Debug)]
pub struct Unpacked {
    /// The ref the content came from.
    pub reference: String,
    /// Digest of the content (sha256 over the sorted keys and values).
    pub digest: Digest,
    /// The directory holding it, inside the store.
    pub dir: std::path::PathBuf,
}

/// Why content could not be unpacked; the message names the Bundle's field.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// A ref scheme this runtime does not fetch yet.
    #[error(
        "spec.refs[{index}] {reference}: this provisioner cannot fetch {scheme}:// content yet; use a file:// ref with a ConfigMap in spec.volumeMounts"
    )]
    Unsupported {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// Its scheme.
        scheme: String,
    },
    /// A file:// ref outside every volume mount.
    #[error(
        "spec.refs[{index}] {reference}: no spec.volumeMounts entry is mounted at {path}; add one or fix the path"
    )]
    NoMount {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// The path it names.
        path: String,
    },
    /// The ConfigMap is missing or unreadable.
    #[error("ConfigMap {namespace}/{name} (spec.volumeMounts): {message}")]
    ConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// A key the ref names is not in the ConfigMap.
    #[error("spec.refs[{index}] {reference}: ConfigMap {namespace}/{name} has no key {key}")]
    MissingKey {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// ConfigMap namespace.
        namespace: String,
        /// ConfigMap name.
        name: String,
        /// The missing key.
        key: String,
    },
    /// Writing the content failed.
    #[error("writing content: {0}")]
    Store(#[from] crate::store::StoreError),
    /// Writing a file failed.
    #[error("writing content file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Fetches the Bundle's first ref into the store.
pub async fn unpack(
    client: &Client,
    spec: &BundleSpec,
    store: &Store,
) -> Result<Unpacked, ContentError> {
    let index = 0;
    let reference = spec.refs.first().cloned().unwrap_or_default();
    let Some(path) = reference.strip_prefix("file://") else {
        let scheme = reference.split("://").next().unwrap_or_default().to_owned();
        return Err(ContentError::Unsupported {
            index,
            reference,
            scheme,
        });
    };
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
        .map_err(|error| config_map_error(error.to_string()))?
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
