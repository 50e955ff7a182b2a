//! Fetching a Bundle's content, pinned: OCI images (this file), `https://`
//! tarballs ([`https`]), git repositories ([`git`]), and registry
//! credentials from pull secrets ([`pull_secret`]).
//!
//! A Bundle names image content with a ref such as
//! `docker://quay.io/openshift-community-operators/etcd:v0.9.4`.
//! [`ImageSource::resolve`] turns the tag into the manifest digest, and
//! [`ImageSource::pull_layers`] fetches the layers of the manifest it
//! resolved, so the digest a Bundle's status reports is the one whose
//! content was unpacked, even if the tag moves meanwhile.
//!
//! Security choices:
//! - **HTTPS by default; plain HTTP only on loopback** (`localhost`,
//!   `127.0.0.0/8`, `::1`, see [`PlainHttp`]) unless explicitly allowed
//!   for every registry. TLS is rustls on the ring provider.
//! - **Every request is bounded in time**: a connect timeout, a read
//!   timeout (the longest silence mid-transfer), a limit per small exchange
//!   (resolving, fetching a manifest) and one for a whole pull. A dead or
//!   stalled registry fails the reconcile with a message; it never hangs it.
//! - **Size limits before and during download**: the layer sizes a manifest
//!   declares must fit the caller's limit before any layer is fetched, and
//!   the bytes actually received are counted so a registry that lies about
//!   sizes is cut off at the limit.
//! - **Content is verified**: each layer against its digest (and the
//!   manifest against the digest of a pinned ref) while it streams;
//!   a mismatch is an error, never content.
//! - Only tar and gzip'd tar layers are accepted; unpacking them is
//!   [`crate::archive`]'s job, which treats them as untrusted.
//! - Credentials go only to the registry they belong to (`oci_client`
//!   drops them on redirects to other hosts) and are never printed. Each
//!   set of credentials gets an `oci_client` client of its own (see
//!   [`ImageSource::resolve_as`]), so tokens one class's pull secret earned
//!   never authorize another class's pull.
//!
//! Known limit: the manifest body itself is read whole by `oci_client`,
//! bounded only by the request timeout.

pub mod address;
pub mod authorizations;
mod error;
pub mod git;
pub mod https;
mod image;
pub mod mirror;
mod options;
pub mod pull_secret;
mod reference;

use std::collections::HashMap;
use std::fs::File;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt as _;
use oci_client::Client;
use oci_client::client::ClientProtocol;
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;

pub use error::SourceError;
pub use image::{Layer, PulledImage, layer_compression};
pub use options::{Credentials, PlainHttp, SourceOptions};
pub use reference::{ImageRef, is_loopback_registry};

/// How many clients for per-call credentials an [`ImageSource`] keeps
/// before it starts afresh; a provisioner sees a handful of pull secrets.
const MAX_CREDENTIAL_CLIENTS: usize = 64;

/// Fetches images from OCI registries under one set of [`SourceOptions`].
///
/// Holds one HTTP client per transport, built on first use, so connections
/// and tokens are reused across pulls; share it behind an `Arc`.
pub struct ImageSource {
    options: SourceOptions,
    https: OnceLock<Result<Client, String>>,
    http: OnceLock<Result<Client, String>>,
    /// Clients for credentials given per call, by (plain HTTP, credentials).
    /// `oci_client` keeps the first credentials a client is given for a
    /// registry, and the tokens they earn, so a client shared across
    /// credentials would authorize one Bundle's pull with another's secret.
    per_credentials: Mutex<HashMap<ClientKey, Arc<Client>>>,
}

/// Which client serves a call: plain HTTP or not, and whose credentials.
type ClientKey = (bool, Option<Credentials>);

/// An `oci_client` client: the source's own, or one for per-call credentials.
enum ClientRef<'a> {
    Own(&'a Client),
    PerCredentials(Arc<Client>),
}

impl Deref for ClientRef<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        match self {
            Self::Own(client) => client,
            Self::PerCredentials(client) => client,
        }
    }
}

impl ImageSource {
    /// A source with these options.
    pub fn new(options: SourceOptions) -> Self {
        options::install_ring_provider();
        Self {
            options,
            https: OnceLock::new(),
            http: OnceLock::new(),
            per_credentials: Mutex::new(HashMap::new()),
        }
    }

    /// The options this source was made with.
    pub fn options(&self) -> &SourceOptions {
        &self.options
    }

    /// The `oci_client` client for `image`'s registry under the plain-HTTP
    /// policy. `pakket bundle push` pushes through it, so pushes and pulls
    /// share one transport policy and one set of timeouts.
    pub fn client_for(&self, image: &ImageRef) -> Result<&Client, SourceError> {
        let (cell, protocol) = if self.options.plain_http.applies_to(image.registry()) {
            (&self.http, ClientProtocol::Http)
        } else {
            (&self.https, ClientProtocol::Https)
        };
        cell.get_or_init(|| self.build_client(protocol))
            .as_ref()
            .map_err(|cause| SourceError::Client {
                cause: cause.clone(),
            })
    }

    fn build_client(&self, protocol: ClientProtocol) -> Result<Client, String> {
        Client::try_from(self.options.client_config(protocol)?).map_err(|error| error.to_string())
    }

    /// The client for `image` acting as the holder of `credentials`: the
    /// source's own if they are the source's, else one kept for them.
    fn client_as(
        &self,
        image: &ImageRef,
        credentials: Option<&Credentials>,
    ) -> Result<ClientRef<'_>, SourceError> {
        if credentials == self.options.credentials.as_ref() {
            return self.client_for(image).map(ClientRef::Own);
        }
        let plain = self.options.plain_http.applies_to(image.registry());
        let key = (plain, credentials.cloned());
        let mut clients = self
            .per_credentials
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(ClientRef::PerCredentials(Arc::clone(client)));
        }
        let protocol = if plain {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let client = Arc::new(
            self.build_client(protocol)
                .map_err(|cause| SourceError::Client { cause })?,
        );
        if clients.len() >= MAX_CREDENTIAL_CLIENTS {
            // Rotated secrets leave old entries behind; dropping them all
            // costs only new connections and tokens.
            clients.clear();
        }
        clients.insert(key, Arc::clone(&client));
        Ok(ClientRef::PerCredentials(client))
    }

    /// The credentials for `oci_client` calls.
    pub fn auth(&self) -> RegistryAuth {
        self.options.registry_auth()
    }

    /// Runs `work` under `limit`, turning the timeout into a [`SourceError::Timeout`].
    pub async fn within<T>(
        &self,
        limit: Duration,
        action: &'static str,
        image: &ImageRef,
        work: impl Future<Output = Result<T, SourceError>>,
    ) -> Result<T, SourceError> {
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(SourceError::Timeout {
                registry: image.registry().to_owned(),
                action,
                image: image.to_string(),
                after: limit,
            })
        })
    }

    /// The digest `image` points at now (`sha256:…`): its tag resolved by the
    /// registry, or checked against the registry if the ref is pinned.
    pub async fn resolve(&self, image: &ImageRef) -> Result<String, SourceError> {
        self.resolve_as(image, self.options.credentials.as_ref())
            .await
    }

    /// [`ImageSource::resolve`] with `credentials` (anonymous if `None`)
    /// instead of the source's own, e.g. from a class's pull secret.
    pub async fn resolve_as(
        &self,
        image: &ImageRef,
        credentials: Option<&Credentials>,
    ) -> Result<String, SourceError> {
        let work = async {
            self.client_as(image, credentials)?
                .fetch_manifest_digest(image.as_reference(), &options::registry_auth(credentials))
                .await
                .map_err(|error| SourceError::from_registry(error, "resolve", image))
        };
        self.within(self.options.request_timeout, "resolve", image, work)
            .await
    }

    /// Pulls `image`'s layers, at most `max_total` bytes in all (as stored,
    /// i.e. compressed), each verified against its digest.
    pub async fn pull_layers(
        &self,
        image: &ImageRef,
        max_total: u64,
    ) -> Result<PulledImage, SourceError> {
        self.pull_layers_as(image, max_total, self.options.credentials.as_ref())
            .await
    }

    /// [`ImageSource::pull_layers`] with `credentials` (anonymous if `None`)
    /// instead of the source's own.
    pub async fn pull_layers_as(
        &self,
        image: &ImageRef,
        max_total: u64,
        credentials: Option<&Credentials>,
    ) -> Result<PulledImage, SourceError> {
        let work = self.pull(image, max_total, credentials);
        self.within(self.options.pull_timeout, "pull", image, work)
            .await
    }

    async fn pull(
        &self,
        image: &ImageRef,
        max_total: u64,
        credentials: Option<&Credentials>,
    ) -> Result<PulledImage, SourceError> {
        let client = self.client_as(image, credentials)?;
        let client = &*client;
        let reference = image.as_reference();
        let registry_error = |error| SourceError::from_registry(error, "pull", image);

        let auth = options::registry_auth(credentials);
        let manifest_request = client.pull_image_manifest_and_list_digest(reference, &auth);
        let (manifest, manifest_digest, index_digest) = self
            .within(self.options.request_timeout, "pull", image, async {
                manifest_request.await.map_err(registry_error)
            })
            .await?;
        let digest = index_digest.unwrap_or(manifest_digest);

        let mut kinds = Vec::with_capacity(manifest.layers.len());
        let mut declared: u64 = 0;
        for layer in &manifest.layers {
            // Layer digests are quoted in errors from here on; a malformed
            // one could be any text the registry chose.
            if oci_client::Reference::try_from(format!("x/y@{}", layer.digest)).is_err() {
                return Err(SourceError::Registry {
                    registry: image.registry().to_owned(),
                    action: "pull",
                    image: image.to_string(),
                    registry_says: "its manifest names a layer by a malformed digest".into(),
                });
            }
            let compression = layer_compression(&layer.media_type).ok_or_else(|| {
                SourceError::UnsupportedLayer {
                    image: image.to_string(),
                    digest: layer.digest.clone(),
                    media_type: error::media_type_words(&layer.media_type),
                }
            })?;
            kinds.push(compression);
            let size = u64::try_from(layer.size).map_err(|_| SourceError::Registry {
                registry: image.registry().to_owned(),
                action: "pull",
                image: image.to_string(),
                registry_says: format!("the manifest gives layer {} a negative size", layer.digest),
            })?;
            declared = declared.saturating_add(size);
        }
        if declared > max_total {
            return Err(SourceError::TooLarge {
                image: image.to_string(),
                detail: format!("its layers declare {declared} bytes"),
                limit: max_total,
            });
        }
        if manifest.layers.is_empty() {
            return Err(SourceError::Registry {
                registry: image.registry().to_owned(),
                action: "pull",
                image: image.to_string(),
                registry_says: "the image has no layers, so there is no content to unpack".into(),
            });
        }

        let mut layers = Vec::with_capacity(manifest.layers.len());
        let mut received: u64 = 0;
        for (descriptor, compression) in manifest.layers.iter().zip(kinds) {
            let (file, size) = self
                .pull_layer(client, image, descriptor, max_total, &mut received)
                .await?;
            layers.push(Layer {
                digest: descriptor.digest.clone(),
                media_type: descriptor.media_type.clone(),
                compression,
                size,
                file: std::sync::Arc::new(file),
            });
        }
        Ok(PulledImage {
            pinned: image.pinned(&digest),
            digest,
            layers,
        })
    }

    /// Streams one layer to an unnamed temporary file, cutting it off past
    /// the overall limit; the stream verifies the digest when it ends.
    /// Memory holds one chunk at a time, whatever the layer's size.
    async fn pull_layer(
        &self,
        client: &Client,
        image: &ImageRef,
        descriptor: &OciDescriptor,
        max_total: u64,
        received: &mut u64,
    ) -> Result<(File, u64), SourceError> {
        use tokio::io::AsyncWriteExt as _;
        let mut stream = client
            .pull_blob_stream(image.as_reference(), descriptor)
            .await
            .map_err(|error| SourceError::from_registry(error, "pull", image))?;
        let expected = u64::try_from(descriptor.size).unwrap_or(0);
        let spool_error = |error: std::io::Error| SourceError::Spool {
            image: image.to_string(),
            cause: error.to_string(),
        };
        let spool = tempfile::tempfile().map_err(spool_error)?;
        let mut writer = tokio::fs::File::from_std(spool.try_clone().map_err(spool_error)?);
        let mut written: u64 = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|error| layer_error(error, image))?;
            *received += chunk.len() as u64;
            written += chunk.len() as u64;
            // The declared sizes fit the limit, so holding each layer to its
            // own declared size keeps the spool within the limit too.
            if *received > max_total || written > expected {
                return Err(SourceError::TooLarge {
                    image: image.to_string(),
                    detail: format!(
                        "layer {} sends more than the {} bytes its manifest declares",
                        descriptor.digest, descriptor.size
                    ),
                    limit: max_total,
                });
            }
            writer.write_all(&chunk).await.map_err(spool_error)?;
        }
        writer.flush().await.map_err(spool_error)?;
        if written != expected {
            return Err(SourceError::DigestMismatch {
                registry: image.registry().to_owned(),
                image: image.to_string(),
                cause: format!(
                    "layer {} has {written} bytes, its manifest says {}",
                    descriptor.digest, descriptor.size
                ),
            });
        }
        Ok((spool, written))
    }
}

/// A failure while streaming a layer: a digest mismatch found at its end,
/// or a transport error.
fn layer_error(error: std::io::Error, image: &ImageRef) -> SourceError {
    let digest = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<oci_client::errors::DigestError>());
    match digest {
        Some(mismatch) => SourceError::DigestMismatch {
            registry: image.registry().to_owned(),
            image: image.to_string(),
            cause: mismatch.to_string(),
        },
        None => SourceError::from_transport(&error, "pull", image),
    }
}
