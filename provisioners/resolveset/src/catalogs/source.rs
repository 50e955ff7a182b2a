//! A Catalog's source through the runtime's content fetchers and store:
//! `image` is a `docker://` ref, `configMap` a `file://` ref over a
//! ConfigMap volume mount, `https` an `https://` ref to a tarball or one
//! catalog file (pinned with
//! `#sha256=` when the Catalog gives one). The runtime pins the content
//! (manifest digest, tarball sha256, digest of the ConfigMap's data),
//! unpacks it safely and keeps it in the store by that digest.

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt as _};
use pakket_api::{BundleSpec, ConfigMapSource, VolumeMount};
use pakket_runtime::kernel::content::{self, ContentError, ImageSources, UnpackOptions};
use pakket_runtime::kernel::store::{Digest, Store};

use crate::Error;
use crate::catalogs::catalog::{Catalog, CatalogSource};

/// The label by which someone who may write a ConfigMap lets Catalogs
/// serve it (`"true"`).
pub const CATALOG_CONTENT_LABEL: &str = "resolve.pakket.dev/catalog-content";

/// Where a ConfigMap's keys appear, for the `file://` ref.
const MOUNT: &str = "/catalog";

/// Content fetched into the store.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// The pinned digest.
    pub digest: Digest,
    /// The unpacked content.
    pub dir: PathBuf,
}

/// What the fetch needs from the process.
pub struct Fetcher {
    /// Reads ConfigMaps.
    pub client: Client,
    /// The content store.
    pub store: Arc<Store>,
    /// Registries, tarball servers.
    pub sources: ImageSources,
    /// Limits and reach.
    pub options: UnpackOptions,
}

impl Fetcher {
    /// Fetches the Catalog's source into the store.
    pub async fn fetch(&self, catalog: &Catalog) -> Result<Fetched, Error> {
        let source = &catalog.spec.source;
        let spec = self.bundle_spec(source).await?;
        let unpacked = content::unpack(
            &self.client,
            &spec,
            &self.store,
            &self.sources,
            &self.options,
        )
        .await
        .map_err(|error| fetch_error(source, &spec.refs[0], &error))?;
        Ok(Fetched {
            digest: unpacked.digest,
            dir: unpacked.dir,
        })
    }

    /// The Bundle spec the runtime unpacks for `source`.
    async fn bundle_spec(&self, source: &CatalogSource) -> Result<BundleSpec, Error> {
        let spec = |reference: String, volume_mounts| BundleSpec {
            class: String::new(),
            refs: vec![reference],
            volume_mounts,
        };
        if let Some(image) = &source.image {
            let reference = image.reference.trim();
            let reference = if reference.starts_with("docker://") || reference.starts_with("oci://")
            {
                reference.to_owned()
            } else {
                format!("docker://{reference}")
            };
            return Ok(spec(reference, Vec::new()));
        }
        if let Some(config_map) = &source.config_map {
            self.check_immutable(&config_map.namespace, &config_map.name)
                .await?;
            let mount = VolumeMount {
                mount_path: MOUNT.to_owned(),
                config_map: ConfigMapSource {
                    name: config_map.name.clone(),
                    namespace: config_map.namespace.clone(),
                },
            };
            return Ok(spec(format!("file://{MOUNT}"), vec![mount]));
        }
        if let Some(https) = &source.https {
            let reference = match &https.sha256 {
                Some(hex) => format!("{}#sha256={hex}", https.url),
                None => https.url.clone(),
            };
            return Ok(spec(reference, Vec::new()));
        }
        Err(Error::Fetch {
            message: "spec.source names no source; set one of image, configMap or https".into(),
            terminal: true,
        })
    }

    /// A Catalog serves content that cannot change under it: the ConfigMap
    /// must exist and be immutable. And this process reads ConfigMaps with
    /// its own rights, for anyone who may read Catalogs: so it reads only
    /// one that someone who may write it marked as catalog content
    /// ([`CATALOG_CONTENT_LABEL`]). Otherwise creating a Catalog would
    /// publish any ConfigMap in the cluster, its creator's to read or not.
    async fn check_immutable(&self, namespace: &str, name: &str) -> Result<(), Error> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let found = api.get_opt(name).await.map_err(|error| Error::Fetch {
            message: format!(
                "spec.source.configMap: reading ConfigMap {namespace}/{name}: {}",
                pakket_runtime::kernel::apply::api_message(&error)
            ),
            terminal: false,
        })?;
        let Some(config_map) = found else {
            return Err(Error::Fetch {
                message: format!(
                    "spec.source.configMap: ConfigMap {namespace}/{name} not found; create it with immutable: true, or fix the name"
                ),
                terminal: false,
            });
        };
        if config_map
            .labels()
            .get(CATALOG_CONTENT_LABEL)
            .map(String::as_str)
            != Some("true")
        {
            return Err(Error::Fetch {
                message: format!(
                    "spec.source.configMap: ConfigMap {namespace}/{name} is not marked as catalog content, so nothing of it is read; someone who may write it marks it: `kubectl -n {namespace} label configmap {name} {CATALOG_CONTENT_LABEL}=true` (a Catalog never publishes a ConfigMap on its own say-so)"
                ),
                terminal: false,
            });
        }
        if config_map.immutable != Some(true) {
            return Err(Error::Fetch {
                message: format!(
                    "spec.source.configMap: ConfigMap {namespace}/{} is not immutable; create the catalog as a new ConfigMap with immutable: true and point spec.source.configMap at it (content that can change in place cannot be pinned)",
                    config_map.name_any()
                ),
                terminal: true,
            });
        }
        Ok(())
    }
}

/// The runtime's error in the Catalog's words: its messages name a
/// Bundle's `spec.refs[0]` and `spec.volumeMounts`, which a Catalog does
/// not have.
fn fetch_error(source: &CatalogSource, reference: &str, error: &ContentError) -> Error {
    let text = error.to_string();
    let field = source.field();
    let text = match text.strip_prefix(&format!("spec.refs[0] {reference}: ")) {
        // The cause names the address itself: say it once.
        Some(cause) if cause.contains(reference.split('#').next().unwrap_or(reference)) => {
            format!("{field}: {cause}")
        }
        Some(cause) => format!("{field}: {reference}: {cause}"),
        None => match text.strip_prefix("spec.refs[0] ") {
            Some(rest) => format!("{field} {rest}"),
            None => text.replace("(spec.volumeMounts)", "(spec.source.configMap)"),
        },
    };
    let text = text.replace("fix spec.volumeMounts", "fix spec.source.configMap");
    Error::Fetch {
        message: text,
        terminal: error.is_terminal(),
    }
}
