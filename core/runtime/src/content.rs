//! A Bundle's content, written into the content store by digest: `file://`
//! refs inside ConfigMaps named in `spec.volumeMounts`, and `docker://` or
//! `oci://` image refs pulled from a registry.
//!
//! An image ref is resolved to its manifest digest first; if the store holds
//! that digest already nothing is pulled, so a second Bundle with the same
//! digest costs one manifest `HEAD`. Otherwise the layers are pulled (bounded
//! by [`UnpackOptions::max_image_size`]) and unpacked with [`crate::archive`]'s
//! checks into the store under the manifest digest, all or nothing.
//!
//! `file://content` (or `file:///content`) with a volume mounted at
//! `/content` is the whole ConfigMap, one file per key; `file://content/x.yaml`
//! is the single key `x.yaml`. ConfigMap keys cannot hold `/`, so there is no
//! deeper path, and a key can never escape the content directory.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use pakket_api::BundleSpec;
use sha2::{Digest as _, Sha256};

use crate::archive::Limits;
use crate::source::{ImageRef, ImageSource, PlainHttp, SourceError, SourceOptions};
use crate::store::{Digest, Store};

/// How image refs are fetched, from the ProvisionerClass's parameters.
#[derive(Clone, Debug)]
pub struct UnpackOptions {
    /// Limits on what the layers unpack to (`maxObjectSize` per file).
    pub limits: Limits,
    /// Most bytes an image's layers may hold, as stored (compressed).
    pub max_image_size: u64,
    /// Registries (`host:port`) that may be reached over plain HTTP besides
    /// loopback ones (the class parameter `insecureRegistries`).
    pub insecure_registries: Vec<String>,
}

impl Default for UnpackOptions {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            limits,
            max_image_size: limits.max_total_size,
            insecure_registries: Vec::new(),
        }
    }
}

impl UnpackOptions {
    /// The options a class's `parameters` ask for: `maxObjectSize` (bytes
    /// per file, `default_object_size` if unset) and `insecureRegistries`
    /// (a list of `host:port` allowed plain HTTP; loopback always is).
    pub fn from_parameters(
        parameters: Option<&serde_json::Map<String, serde_json::Value>>,
        default_object_size: u64,
    ) -> Self {
        let get = |name: &str| parameters.and_then(|parameters| parameters.get(name));
        let mut options = Self::default();
        options.limits.max_file_size = get("maxObjectSize")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(default_object_size);
        options.insecure_registries = get("insecureRegistries")
            .and_then(serde_json::Value::as_array)
            .map(|hosts| {
                hosts
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        options
    }
}

/// The image sources a controller shares across reconciles, one per
/// plain-HTTP policy, so connections and tokens are reused.
pub struct ImageSources {
    loopback: ImageSource,
    everywhere: ImageSource,
}

impl Default for ImageSources {
    fn default() -> Self {
        Self::new(SourceOptions::default())
    }
}

impl ImageSources {
    /// Sources with `options`' timeouts and credentials; plain HTTP is
    /// decided per registry by [`UnpackOptions::insecure_registries`].
    pub fn new(options: SourceOptions) -> Self {
        Self {
            loopback: ImageSource::new(SourceOptions {
                plain_http: PlainHttp::Loopback,
                ..options.clone()
            }),
            everywhere: ImageSource::new(SourceOptions {
                plain_http: PlainHttp::Everywhere,
                ..options
            }),
        }
    }

    /// The source for `image`: plain HTTP only to loopback and to the
    /// registries `options` list.
    pub fn for_image(&self, image: &ImageRef, options: &UnpackOptions) -> &ImageSource {
        let registry = image.registry();
        if options.insecure_registries.iter().any(|r| r == registry) {
            &self.everywhere
        } else {
            &self.loopback
        }
    }
}

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
    /// Resolving, pulling or unpacking an image failed.
    #[error("spec.refs[{index}] {reference}: {source}")]
    Image {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// The source's error, with the registry's own words (boxed: it is large).
        source: Box<SourceError>,
    },
    /// The unpacking task died.
    #[error("spec.refs[{index}] {reference}: unpacking stopped: {cause}")]
    Task {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// Why.
        cause: String,
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

impl ContentError {
    /// Whether retrying the same Bundle cannot help.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Unsupported { .. } => true,
            Self::Image { source, .. } => source.is_terminal(),
            _ => false,
        }
    }
}

/// Fetches the Bundle's first ref into the store, dispatching on its scheme.
pub async fn unpack(
    client: &Client,
    spec: &BundleSpec,
    store: &Arc<Store>,
    images: &ImageSources,
    options: &UnpackOptions,
) -> Result<Unpacked, ContentError> {
    let index = 0;
    let reference = spec.refs.first().cloned().unwrap_or_default();
    let scheme = reference.split("://").next().unwrap_or_default().to_owned();
    match scheme.as_str() {
        "file" => unpack_file(client, spec, store, index, reference).await,
        "docker" | "oci" => unpack_image(store, images, options, index, reference).await,
        _ => Err(ContentError::Unsupported {
            index,
            reference,
            scheme,
        }),
    }
}

/// An image ref: resolve, and pull and unpack only a digest the store lacks.
async fn unpack_image(
    store: &Arc<Store>,
    images: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let image_error = |source: SourceError| ContentError::Image {
        index,
        reference: reference.clone(),
        source: Box::new(source),
    };
    let image = ImageRef::parse(&reference).map_err(image_error)?;
    let source = images.for_image(&image, options);
    let resolved = source.resolve(&image).await.map_err(image_error)?;
    let digest = Digest::parse(&resolved).map_err(|error| {
        image_error(SourceError::Registry {
            registry: image.registry().to_owned(),
            action: "resolve",
            image: image.to_string(),
            registry_says: format!("answered with digest {resolved:?}: {error}"),
        })
    })?;
    if let Some(dir) = store.get(&digest) {
        tracing::debug!(%reference, digest = digest.as_str(), "already in the store; nothing to pull");
        return Ok(Unpacked {
            reference,
            digest,
            dir,
        });
    }
    // Pull what the digest names, so the content is the digest's even if
    // the tag moves meanwhile.
    let pinned = image.pinned(digest.as_str());
    let pulled = source
        .pull_layers(&pinned, options.max_image_size)
        .await
        .map_err(image_error)?;
    let limits = options.limits;
    let task_store = Arc::clone(store);
    let task_digest = digest.clone();
    // Unpacking is blocking file IO.
    let dir = tokio::task::spawn_blocking(move || {
        task_store.insert_with(&task_digest, |dir| -> Result<(), ContentError> {
            // `unpack` wants a destination that does not exist yet; the
            // store renames whatever is at `dir` into place.
            std::fs::remove_dir(dir).map_err(|source| ContentError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            pulled
                .unpack(dir, &limits)
                .map(|_| ())
                .map_err(|source| ContentError::Image {
                    index,
                    reference: pulled.pinned.to_string(),
                    source: Box::new(source),
                })
        })
    })
    .await
    .map_err(|error| ContentError::Task {
        index,
        reference: reference.clone(),
        cause: error.to_string(),
    })??;
    Ok(Unpacked {
        reference,
        digest,
        dir,
    })
}

/// A `file://` ref: the ConfigMap mounted at its path.
async fn unpack_file(
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
