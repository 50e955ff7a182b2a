//! A Bundle's content, written into the content store by digest. The first
//! ref's scheme picks the source:
//!
//! | ref | store key | fetched when |
//! |---|---|---|
//! | `docker://` or `oci://` `REGISTRY/REPO:TAG[@DIGEST]` | the manifest digest | the digest is not stored (one manifest `HEAD` otherwise) |
//! | `https://HOST/PATH.tar.gz[#sha256=HEX]` | the sha256 of the bytes | always, unless pinned and stored |
//! | `git+https://HOST/REPO.git[?ref=REF][&path=DIR]` | a digest of `git-<commit>[-<path>]` | the resolved commit is not stored (one `ls-remote` otherwise) |
//! | `file://PATH` in a `spec.volumeMounts` ConfigMap | a digest of its keys and values | always (an API read) |
//!
//! Images are pulled (bounded by [`UnpackOptions::max_image_size`], with the
//! class's `pullSecrets`, see [`crate::source::pull_secret`]); tarballs and
//! git commits are downloaded (bounded by [`UnpackOptions::max_download_size`]);
//! all are unpacked with [`crate::archive`]'s checks into the store, all or
//! nothing. `git://` (unencrypted) is refused.
//!
//! `file://content` (or `file:///content`) with a volume mounted at
//! `/content` is the whole ConfigMap, one file per key; `file://content/x.yaml`
//! is the single key `x.yaml`. ConfigMap keys cannot hold `/`, so there is no
//! deeper path, and a key can never escape the content directory.

pub mod chart_repository;
mod file;
mod git;
mod https;
mod image;
mod registry_reach;

use std::sync::Arc;

use kube::Client;
use pakket_api::BundleSpec;

use crate::archive::Limits;
use crate::class_parameters::{self, ParameterError};
use crate::source::address::Reach;
use crate::source::git::{GitError, GitSource};
use crate::source::https::{HttpsError, HttpsSource};
use crate::source::pull_secret::PullSecretError;
use crate::source::{ImageRef, ImageSource, PlainHttp, SourceError, SourceOptions};
use crate::store::{Digest, Store};

/// How refs are fetched, from the ProvisionerClass's parameters.
#[derive(Clone, Debug)]
pub struct UnpackOptions {
    /// Limits on what the content unpacks to (`maxObjectSize` per file).
    pub limits: Limits,
    /// Most bytes an image's layers may hold, as stored (compressed).
    pub max_image_size: u64,
    /// Most bytes an `https://` tarball (as served) or a git fetch (the
    /// objects received) may hold.
    pub max_download_size: u64,
    /// Registries (`host:port`) that may be reached over plain HTTP besides
    /// loopback ones (the class parameter `insecureRegistries`).
    pub insecure_registries: Vec<String>,
    /// Secrets of type `kubernetes.io/dockerconfigjson` in the provisioner's
    /// namespace whose credentials image pulls use (the class parameter
    /// `pullSecrets`); none: the source's own credentials (anonymous).
    pub pull_secrets: Vec<String>,
    /// Whether `https://` and git refs may reach loopback, link-local,
    /// private and cluster-internal addresses (the class parameter
    /// `allowInternalAddresses`; default false).
    pub allow_internal_addresses: bool,
    /// Most objects one Bundle may hold (the class parameter `maxObjects`):
    /// past it the Bundle is refused with a condition saying so, rather
    /// than an apply the cluster and the status cannot carry.
    pub max_objects: u64,
    /// Whether a Bundle's CRDs may replace those on the cluster only when
    /// nothing stored or relied on could break (the class parameter
    /// `crdUpgradeSafety`: `Strict`, the default, or `None`).
    pub crd_upgrade_safety: bool,
    /// The ProvisionerClass these options come from, for the advice in a
    /// refusal.
    pub class: String,
    /// Where images are pulled from instead (the class parameter `mirrors`).
    pub mirrors: Vec<crate::source::mirror::Mirror>,
    /// The advice ending an internal-address refusal, where a process flag
    /// rather than a class decides (a Catalog's fetches); `None`: the
    /// class's parameter.
    pub internal_addresses_advice: Option<String>,
    /// The label (value `"true"`) a mounted ConfigMap must carry for its
    /// content to be read: [`pakket_api::BUNDLE_CONTENT_LABEL`] for
    /// Bundles. The webhook refuses a Bundle mounting an existing
    /// ConfigMap without it, but one that comes later is never seen by
    /// it (its objectSelector is that label), so the unpack checks again.
    /// A Catalog's fetch asks for its own label instead.
    pub content_label: &'static str,
}

/// Objects a Bundle may hold unless its class says otherwise: each is a
/// read and a write at apply, and the Instance and Bundle statuses list at
/// most [`pakket_api::LISTED_OBJECTS_MAX`] of them.
pub const DEFAULT_MAX_OBJECTS: u64 = 20_000;

impl Default for UnpackOptions {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            limits,
            max_image_size: limits.max_total_size,
            max_download_size: limits.max_total_size,
            insecure_registries: Vec::new(),
            pull_secrets: Vec::new(),
            allow_internal_addresses: false,
            max_objects: DEFAULT_MAX_OBJECTS,
            crd_upgrade_safety: true,
            class: String::new(),
            mirrors: Vec::new(),
            internal_addresses_advice: None,
            content_label: pakket_api::BUNDLE_CONTENT_LABEL,
        }
    }
}

impl UnpackOptions {
    /// The options a class's `parameters` ask for: `maxObjectSize` (bytes
    /// per file, `default_object_size` if unset), `insecureRegistries`
    /// (a list of `host:port` allowed plain HTTP; loopback always is),
    /// `pullSecrets` (a list of Secret names) and `mirrors`
    /// ([`crate::source::mirror`]). A value of the wrong shape is
    /// an error naming the parameter (see [`class_parameters`]).
    pub fn from_parameters(
        parameters: Option<&serde_json::Map<String, serde_json::Value>>,
        default_object_size: u64,
    ) -> Result<Self, ParameterError> {
        let mut options = Self::default();
        options.limits.max_file_size =
            class_parameters::size(parameters, "maxObjectSize", default_object_size)?;
        options.insecure_registries = class_parameters::strings(parameters, "insecureRegistries")?;
        options.pull_secrets = class_parameters::strings(parameters, "pullSecrets")?;
        options.mirrors = crate::source::mirror::from_parameters(parameters)?;
        options.allow_internal_addresses =
            class_parameters::boolean(parameters, "allowInternalAddresses", false)?;
        options.max_objects =
            class_parameters::count(parameters, "maxObjects", DEFAULT_MAX_OBJECTS)?;
        options.crd_upgrade_safety = match class_parameters::string(parameters, "crdUpgradeSafety")?
        {
            None | Some("Strict") => true,
            Some("None") => false,
            Some(other) => {
                return Err(ParameterError {
                    name: "crdUpgradeSafety".into(),
                    problem: format!("{other:?} is not a policy; write Strict or None"),
                });
            }
        };
        Ok(options)
    }

    /// Where `https://` and git fetches may connect.
    pub fn reach(&self) -> Reach {
        if self.allow_internal_addresses {
            Reach::Any
        } else {
            Reach::Public {
                advice: self
                    .internal_addresses_advice
                    .clone()
                    .unwrap_or_else(|| crate::source::address::advice(&self.class)),
            }
        }
    }
}

/// The sources a controller shares across reconciles: images (one per
/// plain-HTTP policy), `https://` tarballs and git, so connections and
/// tokens are reused; and where pull secrets are read from.
pub struct ImageSources {
    loopback: ImageSource,
    everywhere: ImageSource,
    https: HttpsSource,
    git: GitSource,
    secret_namespace: Option<String>,
}

impl Default for ImageSources {
    fn default() -> Self {
        Self::new(SourceOptions::default())
    }
}

impl ImageSources {
    /// Sources with `options`' timeouts, roots and credentials; plain HTTP
    /// to registries is decided per registry by
    /// [`UnpackOptions::insecure_registries`] (tarballs and git are HTTPS only).
    pub fn new(options: SourceOptions) -> Self {
        Self {
            loopback: ImageSource::new(SourceOptions {
                plain_http: PlainHttp::Loopback,
                ..options.clone()
            }),
            everywhere: ImageSource::new(SourceOptions {
                plain_http: PlainHttp::Everywhere,
                ..options.clone()
            }),
            https: HttpsSource::new(options.clone()),
            git: GitSource::new(options.clone()),
            secret_namespace: options.secret_namespace,
        }
    }

    /// The `https://` tarball source.
    pub fn https(&self) -> &HttpsSource {
        &self.https
    }

    /// The git source.
    pub fn git(&self) -> &GitSource {
        &self.git
    }

    /// The namespace pull secrets are read from (the provisioner's own).
    pub fn secret_namespace(&self) -> Option<&str> {
        self.secret_namespace.as_deref()
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
    /// The content's store key: the image manifest digest, the tarball's
    /// sha256, a digest of the git commit and path, or of a ConfigMap's
    /// sorted keys and values.
    pub digest: Digest,
    /// The directory holding it, inside the store.
    pub dir: std::path::PathBuf,
    /// The commit a git ref resolved to; `None` for other sources.
    pub commit: Option<String>,
}

/// Why content could not be unpacked; the message names the Bundle's field.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// A ref scheme this runtime does not fetch yet.
    #[error(
        "spec.refs[{index}] {reference}: this provisioner cannot fetch {scheme}:// content; use a docker://, oci://, https://, helm+https://, git+https:// or file:// ref"
    )]
    Unsupported {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// Its scheme.
        scheme: String,
    },
    /// A chart a `helm+https://` ref names cannot be found or pinned.
    #[error("spec.refs[{index}] {reference}: {problem}")]
    Chart {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// What is wrong, naming the index and what to do.
        problem: String,
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
    /// The mounted ConfigMap is not marked as content: nothing of it is
    /// read. Not terminal: labelling it (which leaves its data alone) is
    /// enough, and the next try reads it.
    #[error(
        "ConfigMap {namespace}/{name} (spec.volumeMounts) is not labelled {label}=true, so nothing of it is read: \
         only someone who may write a ConfigMap says it is content; if it is, label it: \
         `kubectl -n {namespace} label configmap {name} {label}=true`"
    )]
    Unlabelled {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The label it lacks.
        label: &'static str,
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
    /// The registry refused the credentials used (or their absence).
    #[error("spec.refs[{index}] {reference}: {}; {advice}", refusal(source))]
    Unauthorized {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// The registry's refusal.
        source: Box<SourceError>,
        /// Which pull secret was refused, or how to give one.
        advice: String,
    },
    /// The image's registry is an internal address the class does not
    /// allow: nothing was sent to it.
    #[error("spec.refs[{index}] {reference}: {problem}")]
    InternalRegistry {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// What was refused and what to do.
        problem: String,
    },
    /// The class's pull secrets gave no credentials for the image.
    #[error("spec.refs[{index}] {reference}: {source}")]
    PullSecret {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// What is wrong with the Secrets.
        source: Box<PullSecretError>,
    },
    /// Downloading or unpacking an `https://` tarball failed.
    #[error("spec.refs[{index}] {reference}: {source}")]
    Https {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// The source's error, with the server's own words.
        source: Box<HttpsError>,
    },
    /// Resolving, fetching or unpacking a git ref failed.
    #[error("spec.refs[{index}] {reference}: {source}")]
    Git {
        /// Position in spec.refs.
        index: usize,
        /// The ref.
        reference: String,
        /// The source's error, with git's own words.
        source: Box<GitError>,
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
    /// What kind of problem it is, for tools, when it is one they advise
    /// on by itself: an address the class does not allow, or content that
    /// is wrong whatever the way to it (its archive, its size).
    pub fn cause(&self) -> Option<pakket_api::CauseKind> {
        use pakket_api::CauseKind::{ContentInvalid, InternalAddress};
        let (internal, content) = match self {
            Self::Image { source, .. } => (
                false,
                matches!(
                    **source,
                    SourceError::Unpack { .. } | SourceError::TooLarge { .. }
                ),
            ),
            Self::Https { source, .. } => (
                matches!(**source, HttpsError::Internal { .. }),
                matches!(
                    **source,
                    HttpsError::Unpack { .. }
                        | HttpsError::TooLarge { .. }
                        | HttpsError::FileTooLarge { .. }
                ),
            ),
            Self::InternalRegistry { .. } => (true, false),
            Self::Git { source, .. } => (
                matches!(**source, GitError::Internal { .. }),
                matches!(
                    **source,
                    GitError::Unpack { .. } | GitError::TooLarge { .. }
                ),
            ),
            _ => (false, false),
        };
        if internal {
            Some(InternalAddress)
        } else {
            content.then_some(ContentInvalid)
        }
    }

    /// Whether retrying the same Bundle cannot help.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Unsupported { .. } => true,
            Self::Image { source, .. } => source.is_terminal(),
            Self::Https { source, .. } => source.is_terminal(),
            Self::Git { source, .. } => source.is_terminal(),
            // Nothing was sent; the same ref is refused the same way.
            Self::InternalRegistry { .. } => true,
            _ => false,
        }
    }
}

/// A registry's refusal without the generic advice, which `advice` replaces.
fn refusal(source: &SourceError) -> String {
    match source {
        SourceError::Unauthorized {
            registry,
            action,
            image,
            registry_says,
        } => format!(
            "registry {registry} refused to let us {action} {image} without valid credentials: {registry_says}"
        ),
        other => other.to_string(),
    }
}

/// Whether `spec`'s content is read from ConfigMaps through the apiserver
/// (a `file://` ref) rather than downloaded. Such content is bounded by the
/// apiserver's own object size limit and needs no download on disk, so it
/// is unpacked under a wider limit than downloads are.
pub fn from_config_maps(spec: &BundleSpec) -> bool {
    spec.refs
        .first()
        .is_some_and(|reference| reference.starts_with("file://"))
}

/// Fetches the Bundle's content into the store. One ref is the content;
/// several (a package's manifests from several URLs, say) are each fetched
/// as one ref is, and the content is all of them, ref `i` under directory
/// `i/` (`0/`, `1/`, … in the order written), stored under a digest of
/// every ref and its own digest: any of them changing is new content.
pub async fn unpack(
    client: &Client,
    spec: &BundleSpec,
    store: &Arc<Store>,
    images: &ImageSources,
    options: &UnpackOptions,
) -> Result<Unpacked, ContentError> {
    if spec.refs.len() <= 1 {
        let reference = spec.refs.first().cloned().unwrap_or_default();
        return unpack_one(client, spec, store, images, options, 0, reference).await;
    }
    let mut parts = Vec::with_capacity(spec.refs.len());
    for (index, reference) in spec.refs.iter().enumerate() {
        parts.push(
            unpack_one(
                client,
                spec,
                store,
                images,
                options,
                index,
                reference.clone(),
            )
            .await?,
        );
    }
    combine(store, parts).await
}

/// The content of several unpacked refs as one store entry.
async fn combine(store: &Arc<Store>, parts: Vec<Unpacked>) -> Result<Unpacked, ContentError> {
    use sha2::{Digest as _, Sha256};
    let mut hasher = Sha256::new();
    for part in &parts {
        hasher.update(format!("{} {}\n", part.reference, part.digest.as_str()));
    }
    let digest = Digest::from_sha256(hasher.finalize().into());
    let reference = parts
        .iter()
        .map(|part| part.reference.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let task_store = Arc::clone(store);
    let task_digest = digest.clone();
    let dirs: Vec<std::path::PathBuf> = parts.iter().map(|part| part.dir.clone()).collect();
    let dir = blocking(0, &reference.clone(), move || {
        task_store.insert_with(&task_digest, |dir| -> Result<(), ContentError> {
            for (index, from) in dirs.iter().enumerate() {
                copy_tree(from, &dir.join(index.to_string())).map_err(|source| {
                    ContentError::Store(crate::store::StoreError::Create {
                        path: from.clone(),
                        source,
                    })
                })?;
            }
            Ok(())
        })
    })
    .await?;
    Ok(Unpacked {
        reference,
        digest,
        dir,
        commit: None,
    })
}

/// Copies the regular files and directories under `from` into `to` (the
/// store holds nothing else: unpacking refuses links and devices).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Fetches ref `index` into the store, dispatching on its scheme.
async fn unpack_one(
    client: &Client,
    spec: &BundleSpec,
    store: &Arc<Store>,
    images: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let scheme = reference.split("://").next().unwrap_or_default().to_owned();
    match scheme.as_str() {
        "file" => file::unpack_file(client, spec, store, options, index, reference).await,
        "docker" | "oci" => {
            registry_reach::check(&reference, options)
                .await
                .map_err(|problem| ContentError::InternalRegistry {
                    index,
                    reference: reference.clone(),
                    problem,
                })?;
            // Pulled from the mirror, and recorded as pulled from it.
            let reference = match crate::source::mirror::rewrite(&reference, &options.mirrors) {
                Some(mirrored) => {
                    tracing::debug!(%reference, %mirrored, "pulling through a mirror");
                    mirrored
                }
                None => reference,
            };
            image::unpack_image(client, store, images, options, index, reference).await
        }
        "https" => https::unpack_tarball(store, images, options, index, reference).await,
        chart_repository::SCHEME => {
            chart_repository::unpack_chart(client, store, images, options, index, reference).await
        }
        // `git://` is parsed to be refused with a message saying why.
        "git+https" | "git" => git::unpack_git(store, images, options, index, reference).await,
        _ => Err(ContentError::Unsupported {
            index,
            reference,
            scheme,
        }),
    }
}

/// Runs blocking `work` (file IO, child processes) off the async threads.
async fn blocking<T: Send + 'static>(
    index: usize,
    reference: &str,
    work: impl FnOnce() -> Result<T, ContentError> + Send + 'static,
) -> Result<T, ContentError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ContentError::Task {
            index,
            reference: reference.to_owned(),
            cause: error.to_string(),
        })?
}
