//! The registry-v1 provisioner: OLM `registry+v1` operator bundles (a
//! ClusterServiceVersion, CRDs and other manifests) installed as plain
//! objects on the shared runtime.
//!
//! [`bundle`] reads the bundle, [`dependencies`] checks what it needs
//! against what is installed, [`config`] places it (install namespace,
//! watched namespaces, who issues webhook certificates) from the
//! Instance's `spec.config`, and [`render`] turns it into objects. The runtime does the rest: approval, apply,
//! pivot, health, uninstall.

// A function reads at once: over the threshold in clippy.toml, split it
// into named steps (or say why not in an `allow` beside it).
#![deny(clippy::too_many_lines)]

pub mod bundle;
pub mod cert_manager;
pub mod certificates;
pub mod config;
pub mod csv;
pub mod declared;
pub mod dependencies;
pub mod deployment_config;
pub mod namespace_template;
pub mod render;
pub mod webhooks;

use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::Value;

/// The provisioner id ProvisionerClasses name.
pub const ID: &str = "pakket.dev/registry-v1";

/// The registry-v1 provisioner.
#[derive(Clone, Debug)]
pub struct RegistryV1 {
    id: String,
    /// What webhook certificates are derived from.
    certificate_key: certificates::CertificateKey,
    /// How often webhook serving certificates rotate.
    certificate_period: std::time::Duration,
}

impl RegistryV1 {
    /// A provisioner answering to `id` (usually [`ID`]), with a random
    /// certificate key: webhook certificates change with every value.
    pub fn new(id: impl Into<String>) -> Self {
        Self::with_certificate_key(id, certificates::CertificateKey::random())
    }

    /// A provisioner answering to `id` that derives webhook certificates
    /// from `certificate_key` (shared by replicas, kept over restarts).
    pub fn with_certificate_key(
        id: impl Into<String>,
        certificate_key: certificates::CertificateKey,
    ) -> Self {
        Self {
            id: id.into(),
            certificate_key,
            certificate_period: certificates::PERIOD,
        }
    }

    /// The same, rotating webhook serving certificates every `period`
    /// (at least [`certificates::MIN_PERIOD`]) instead of every
    /// [`certificates::PERIOD`].
    pub fn with_certificate_period(mut self, period: std::time::Duration) -> Self {
        self.certificate_period = period;
        self
    }

    /// What `request`'s Instance's certificates are issued from, now.
    fn issuance(&self, request: &ObjectsRequest<'_>) -> certificates::Issuance<'_> {
        certificates::Issuance::new(
            &self.certificate_key,
            request.instance,
            std::time::SystemTime::now(),
        )
        .with_period(self.certificate_period)
    }
}

impl Provisioner for RegistryV1 {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let bundle = bundle::read(request.content, request.max_object_size)
            .map_err(|problems| ObjectsError::Content(problems.join("; ")))?;
        let needs = dependencies::needs(&bundle)
            .map_err(|problems| ObjectsError::Content(problems.join("; ")))?;
        dependencies::check(&bundle, &needs, request.cluster).map_err(|explanation| {
            ObjectsError::DependenciesMissing(format!(
                "ClusterServiceVersion {} needs what is not installed: {explanation}",
                bundle.csv.metadata.name
            ))
        })?;
        let placement = config::placement(request.config(), request.class_parameters, &bundle)
            .map_err(|error| ObjectsError::Config {
                field: error.field,
                problem: error.problem,
            })?;
        render::render(
            &bundle,
            &placement,
            request.cluster,
            &self.issuance(request),
        )
        .map_err(|problems| ObjectsError::Content(problems.join("; ")))
    }

    /// The bundle's package and version, the APIs its CRDs define and the
    /// properties it declares (nothing if it cannot be read).
    /// The served kinds decide what a bundle's objects may be, and the
    /// installed Instances whether its dependencies are met.
    fn needs_cluster_facts(&self) -> bool {
        true
    }

    /// Webhook serving certificates rotate each period: the next render
    /// has the next one. (Content without webhooks renders the same and
    /// is not written again.)
    fn renders_again_at(&self, request: &ObjectsRequest<'_>) -> Option<std::time::SystemTime> {
        Some(self.issuance(request).next_rotation())
    }

    /// The serving certificate and key of a webhook's TLS Secret: issued
    /// here and rotated each period ([`certificates`]); the CA in it stays
    /// and is judged.
    fn issued_material(&self, object: &serde_json::Value) -> Vec<&'static str> {
        let is_tls_secret = object["apiVersion"] == "v1"
            && object["kind"] == "Secret"
            && object["type"] == "kubernetes.io/tls";
        if is_tls_secret {
            vec!["/data/tls.crt", "/data/tls.key"]
        } else {
            Vec::new()
        }
    }

    fn properties(&self, request: &ObjectsRequest<'_>) -> Vec<pakket_api::BundleProperty> {
        bundle::read(request.content, request.max_object_size)
            .map(|bundle| dependencies::provided(&bundle))
            .unwrap_or_default()
    }
}
