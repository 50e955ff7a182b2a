//! Pakket's webhooks for a cluster that does not run them: the server on
//! `127.0.0.1` in this process, a throwaway CA, and the two webhook
//! configurations registered by URL. For the demo on a loopback control
//! plane (`pakket-webhooks local`) and for tests of other crates that need
//! the real admission rules in front of the real apiserver.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), pakket_webhooks::local::Error> {
//! use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
//!
//! let labels = [("test.pakket.dev/scope".to_owned(), "t-approve-x1".to_owned())].into();
//! let webhooks = LocalWebhooks::start(client, LocalOptions::for_labels("t-approve-x1", labels)).await?;
//! // Writes of Bundles and Instances with those labels now go through the webhooks.
//! webhooks.stop().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # What is registered
//!
//! The ValidatingWebhookConfiguration and MutatingWebhookConfiguration of
//! `deploy/`, built by [`crate::config`] (same rules, failure policies,
//! `matchConditions` and timeouts), except for what a server on loopback
//! changes: the name `pakket-webhooks-<name>`, `clientConfig.url`
//! `https://127.0.0.1:PORT/…` with the CA in `caBundle`, the
//! `objectSelector` asked for, and the label
//! `app.kubernetes.io/managed-by: pakket-webhooks-local`, so leftovers of a
//! killed process are easy to find.
//!
//! The apiserver must reach `127.0.0.1:PORT` on this machine: a control plane
//! on loopback (`pakket-dev up`), not a remote cluster.
//!
//! # Ready means called
//!
//! [`LocalWebhooks::start`] returns once the apiserver has called the server
//! through both configurations (dry-run probes the server counts, see
//! `probe`), not after some delay: the first write after it is checked.
//!
//! # Going away
//!
//! [`LocalWebhooks::stop`] deletes the configurations first, waits until the
//! apiserver no longer calls the server, then stops it, so no write meets a
//! registered webhook that is gone. Dropping a `LocalWebhooks` without
//! `stop` ends the server at once and deletes the configurations on a task
//! of the current tokio runtime: best effort, done only if that runtime runs
//! on (a test that panics ends its runtime first; its configurations select
//! only its own objects, so they stay harmless, and
//! `kubectl delete validatingwebhookconfigurations,mutatingwebhookconfigurations
//! -l app.kubernetes.io/managed-by=pakket-webhooks-local` removes them).

pub(crate) mod ca;
mod error;
mod probe;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use pakket_api::{Bundle, Instance};

pub use ca::LoopbackCa;
pub use error::Error;
use probe::{CrdsMissing, Probe};

use crate::config::{self, Endpoint};
use crate::metrics::Metrics;
use crate::tls::CertFiles;
use crate::{Running, Settings};

/// The field manager of the registrations, and the value of their
/// `app.kubernetes.io/managed-by` label.
pub const MANAGED_BY: &str = "pakket-webhooks-local";

/// Time between two probes while waiting for the apiserver.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// How long [`LocalWebhooks::stop`] waits for the apiserver to stop calling.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// The certificate never changes; the reloader need not look often.
const RELOAD_INTERVAL: Duration = Duration::from_secs(60);

/// What a [`LocalWebhooks`] registers and how long it waits.
#[derive(Clone)]
pub struct LocalOptions {
    /// Suffix of the configurations' name, `pakket-webhooks-<name>`:
    /// lowercase letters, digits, `-` and `.`, starting and ending with a
    /// letter or digit. Unique per server on one cluster.
    pub name: String,
    /// Only objects these labels select are sent to the server; `None`
    /// sends all (the demo). Tests on a shared control plane must select
    /// their own objects.
    pub object_selector: Option<LabelSelector>,
    /// How long a "yes" from a SubjectAccessReview is reused (zero: never);
    /// "no" is never reused, so a fresh grant works at once.
    pub access_cache_ttl: Duration,
    /// How long to wait for the watches to sync and for the apiserver to
    /// call the server, before giving up.
    pub ready_timeout: Duration,
    /// The record key's file; `None` makes a fresh key in the server's
    /// temporary directory (see [`LocalWebhooks::record_key_file`], to hand
    /// to provisioners).
    pub record_key_file: Option<PathBuf>,
    /// User names whose writes may carry someone else's sealed record
    /// (see [`crate::rules::creator`]).
    pub delegates: Vec<String>,
    /// The identity the server reads and asks with (SubjectAccessReviews,
    /// watches, the in-use check), when it is not the client that registers
    /// the configurations: the ServiceAccount `deploy/` gives the webhooks,
    /// say, so a test meets the shipped rights. `None`: the same client.
    pub serving_client: Option<Client>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            name: "local".to_owned(),
            object_selector: None,
            access_cache_ttl: Duration::from_secs(10),
            ready_timeout: Duration::from_secs(60),
            record_key_file: None,
            delegates: Vec::new(),
            serving_client: None,
        }
    }
}

impl LocalOptions {
    /// Options named `name` for the objects that carry all of `labels`
    /// (a test's scope label, say).
    pub fn for_labels(name: impl Into<String>, labels: BTreeMap<String, String>) -> Self {
        Self {
            name: name.into(),
            object_selector: Some(LabelSelector {
                match_labels: Some(labels),
                ..LabelSelector::default()
            }),
            ..Self::default()
        }
    }
}

/// Pakket's webhook server on `127.0.0.1`, registered with the apiserver.
pub struct LocalWebhooks {
    client: Client,
    options: LocalOptions,
    configuration: String,
    ca: LoopbackCa,
    settings: Settings,
    server: Option<Running>,
    /// Whether configurations may exist that [`stop`](Self::stop) or `Drop`
    /// must delete.
    registered: bool,
    key_file: PathBuf,
    _cert_dir: tempfile::TempDir,
}

impl LocalWebhooks {
    /// Makes a CA and a serving certificate for 127.0.0.1, starts the server
    /// on a port the kernel picks, registers both configurations pointing at
    /// it, and returns once the apiserver calls it through both.
    ///
    /// Needs Pakket's CRDs installed and a client that may register webhooks
    /// (a cluster admin). On failure nothing stays registered.
    pub async fn start(client: Client, options: LocalOptions) -> Result<Self, Error> {
        let configuration = configuration_name(&options.name)?;
        require_crds(&client).await?;
        let ca = LoopbackCa::new(&format!("{configuration} CA"))?;
        let cert_dir = tempfile::Builder::new()
            .prefix("pakket-webhooks-local-")
            .tempdir()
            .map_err(Error::TempDir)?;
        let cert = CertFiles {
            cert: cert_dir.path().join("tls.crt"),
            key: cert_dir.path().join("tls.key"),
        };
        ca.issue(&cert, &configuration)?;
        let key_file = match &options.record_key_file {
            Some(file) => file.clone(),
            None => {
                let file = cert_dir.path().join("record-key");
                std::fs::write(&file, pakket_api::RecordKey::generate().1).map_err(|source| {
                    Error::WriteFile {
                        path: file.clone(),
                        source,
                    }
                })?;
                file
            }
        };
        let record_key = pakket_api::RecordKey::read(&key_file)
            .map_err(|error| Error::RecordKey(error.to_string()))?;
        let settings = Settings {
            listen: (Ipv4Addr::LOCALHOST, 0).into(),
            cert,
            reload_interval: RELOAD_INTERVAL,
            access_cache_ttl: options.access_cache_ttl,
            record_key,
            delegates: options.delegates.clone(),
        };
        let mut webhooks = Self {
            client,
            options,
            configuration,
            ca,
            settings,
            server: None,
            registered: false,
            key_file,
            _cert_dir: cert_dir,
        };
        webhooks.serve().await?;
        let registered = match webhooks.register().await {
            Ok(()) => webhooks.wait_until_called().await,
            Err(error) => Err(error),
        };
        if let Err(error) = registered {
            // Never leave a fail-closed registration behind a server that goes away.
            if let Err(cleanup) = webhooks.unregister().await {
                tracing::warn!(%cleanup, "after a failed start");
            }
            webhooks.stop_server().await;
            return Err(error);
        }
        tracing::info!(
            url = %webhooks.url(),
            configuration = %webhooks.configuration,
            "local webhooks registered and called by the apiserver"
        );
        Ok(webhooks)
    }

    /// The file holding the record key the server seals with: give it to
    /// provisioners (`--record-key-file`) so they trust its records.
    pub fn record_key_file(&self) -> &Path {
        &self.key_file
    }

    /// The record key the server seals with.
    pub fn record_key(&self) -> pakket_api::RecordKey {
        self.settings.record_key.clone()
    }

    /// Where the server listens (the same across [`restart_server`](Self::restart_server)).
    pub fn addr(&self) -> SocketAddr {
        self.settings.listen
    }

    /// `https://127.0.0.1:PORT`, the base of the registered URLs.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr())
    }

    /// The name of both configurations, `pakket-webhooks-<name>`.
    pub fn configuration_name(&self) -> &str {
        &self.configuration
    }

    /// The CA certificate (PEM) the configurations' `caBundle` holds.
    pub fn ca_pem(&self) -> String {
        self.ca.ca_pem()
    }

    /// The running server's metrics; `None` while it is stopped.
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.server.as_ref().map(|server| &server.metrics)
    }

    /// The running server's watch cache of the APIs Instances installed;
    /// `None` while it is stopped.
    pub fn api_cache(&self) -> Option<&crate::apis::ApiCache> {
        self.server.as_ref().map(|server| &server.apis)
    }

    /// Deletes the configurations, waits until the apiserver no longer calls
    /// the server (at most 10 s), then stops the server.
    pub async fn stop(mut self) -> Result<(), Error> {
        let unregistered = self.unregister().await;
        if unregistered.is_ok() {
            tracing::debug!("configurations deleted");
            self.wait_until_not_called().await;
            tracing::debug!("the apiserver no longer calls the server");
        }
        self.stop_server().await;
        tracing::debug!("server stopped");
        unregistered
    }

    /// Stops the server but leaves the configurations registered, so the
    /// apiserver's calls fail as they would in an outage (for tests of the
    /// failure policies). [`restart_server`](Self::restart_server) ends it.
    pub async fn stop_server(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }

    /// Starts the server again on the same address with the same
    /// certificate, and returns once the apiserver calls it again.
    pub async fn restart_server(&mut self) -> Result<(), Error> {
        if self.server.is_none() {
            self.serve().await?;
        }
        self.wait_until_called().await
    }

    /// Starts the server on `settings.listen` and waits for its watches.
    async fn serve(&mut self) -> Result<(), Error> {
        let client = self
            .options
            .serving_client
            .clone()
            .unwrap_or_else(|| self.client.clone());
        let running = crate::start(client, self.settings.clone()).await?;
        let waited = self.options.ready_timeout;
        if tokio::time::timeout(waited, running.index.wait_ready())
            .await
            .is_err()
        {
            running.stop().await;
            return Err(Error::NotSynced { waited });
        }
        self.settings.listen = running.addr;
        self.server = Some(running);
        Ok(())
    }

    /// What [`config`] needs to build this server's configurations.
    fn config_options(&self) -> config::Options {
        config::Options {
            name: self.configuration.clone(),
            endpoint: Endpoint::Url {
                base: self.url(),
                ca_pem: self.ca.ca_pem().into_bytes(),
            },
            object_selector: self.options.object_selector.clone(),
            annotations: BTreeMap::new(),
        }
    }

    /// Server-side applies both configurations (replacing what a killed
    /// earlier run of the same name left).
    async fn register(&mut self) -> Result<(), Error> {
        let options = self.config_options();
        let params = PatchParams::apply(MANAGED_BY).force();
        let mut validating = config::validating(&options);
        label(&mut validating.metadata);
        let mut mutating = config::mutating(&options);
        label(&mut mutating.metadata);
        self.registered = true;
        let name = &self.configuration;
        let failed = |kind: &'static str| {
            move |source| Error::Register {
                kind,
                name: name.clone(),
                source,
            }
        };
        Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .patch(name, &params, &Patch::Apply(&validating))
            .await
            .map_err(failed("ValidatingWebhookConfiguration"))?;
        Api::<MutatingWebhookConfiguration>::all(self.client.clone())
            .patch(name, &params, &Patch::Apply(&mutating))
            .await
            .map_err(failed("MutatingWebhookConfiguration"))?;
        Ok(())
    }

    async fn unregister(&mut self) -> Result<(), Error> {
        unregister(&self.client, &self.configuration).await?;
        self.registered = false;
        Ok(())
    }

    fn probe(&self) -> (Probe, Arc<Metrics>) {
        let probe = Probe::new(
            &self.client,
            &self.configuration,
            self.options.object_selector.as_ref(),
        );
        let metrics = self
            .server
            .as_ref()
            .expect("probing a running server")
            .metrics
            .clone();
        (probe, metrics)
    }

    /// Probes until the server answers for both configurations.
    async fn wait_until_called(&self) -> Result<(), Error> {
        let (probe, metrics) = self.probe();
        let started = Instant::now();
        loop {
            let round = probe
                .round(&metrics)
                .await
                .map_err(|CrdsMissing(source)| Error::CrdsMissing(source))?;
            if round.mutating && round.validating {
                return Ok(());
            }
            if started.elapsed() >= self.options.ready_timeout {
                return Err(Error::NotCalled {
                    url: self.url(),
                    waited: self.options.ready_timeout,
                    last: round.answers,
                });
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    /// Probes until the server answers for neither configuration (the
    /// apiserver dropped them), at most [`DRAIN_LIMIT`].
    async fn wait_until_not_called(&self) {
        if self.server.is_none() {
            return;
        }
        let (probe, metrics) = self.probe();
        let started = Instant::now();
        while started.elapsed() < DRAIN_LIMIT {
            match probe.round(&metrics).await {
                Ok(round) if round.mutating || round.validating => {
                    tokio::time::sleep(PROBE_INTERVAL).await;
                }
                _ => return,
            }
        }
        tracing::warn!(
            configuration = %self.configuration,
            "the apiserver still called the webhooks {DRAIN_LIMIT:?} after their configurations were deleted"
        );
    }
}

impl Drop for LocalWebhooks {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
        if !self.registered {
            return;
        }
        let (client, name) = (self.client.clone(), self.configuration.clone());
        tracing::warn!(
            configuration = %name,
            "LocalWebhooks dropped without stop(); deleting its configurations in the background"
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = unregister(&client, &name).await {
                    tracing::warn!(%error, "deleting the configurations of dropped local webhooks");
                }
            });
        }
    }
}

/// `pakket-webhooks-<name>`, if `name` makes a valid object name.
fn configuration_name(name: &str) -> Result<String, Error> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.len() > 200 {
        Some("is longer than 200 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        Some("may hold only lowercase letters, digits, '-' and '.'")
    } else if !(name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric()))
    {
        Some("must start and end with a letter or digit")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::Name {
            name: name.to_owned(),
            problem,
        }),
        None => Ok(format!("{}-{name}", config::NAME)),
    }
}

fn label(meta: &mut ObjectMeta) {
    meta.labels.get_or_insert_default().insert(
        "app.kubernetes.io/managed-by".to_owned(),
        MANAGED_BY.to_owned(),
    );
}

/// Fails early, with what to do, when Pakket's kinds are not served: the
/// watches would otherwise retry until the ready timeout.
async fn require_crds(client: &Client) -> Result<(), Error> {
    let params = ListParams::default().limit(1);
    let bundles = Api::<Bundle>::all(client.clone())
        .list_metadata(&params)
        .await
        .map(drop);
    let instances = Api::<Instance>::all(client.clone())
        .list_metadata(&params)
        .await
        .map(drop);
    for (what, result) in [("Bundles", bundles), ("Instances", instances)] {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {
                return Err(Error::CrdsMissing(kube::Error::Api(status)));
            }
            Err(source) => return Err(Error::Cluster { what, source }),
        }
    }
    Ok(())
}

/// Deletes both configurations called `name`; absent ones are fine.
async fn unregister(client: &Client, name: &str) -> Result<(), Error> {
    let gone = |result: kube::Result<_>| match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    };
    let params = DeleteParams::default();
    gone(
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .delete(name, &params)
            .await
            .map(drop),
    )
    .map_err(|source| Error::Unregister {
        resource: "validatingwebhookconfiguration",
        name: name.to_owned(),
        source,
    })?;
    gone(
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .delete(name, &params)
            .await
            .map(drop),
    )
    .map_err(|source| Error::Unregister {
        resource: "mutatingwebhookconfiguration",
        name: name.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_becomes_a_valid_configuration_name_or_is_refused() {
        assert_eq!(
            configuration_name("t-approve-x1").unwrap(),
            "pakket-webhooks-t-approve-x1"
        );
        assert_eq!(
            configuration_name("local").unwrap(),
            "pakket-webhooks-local"
        );
        for (bad, problem) in [
            ("", "is empty"),
            ("Demo", "lowercase letters"),
            ("my_test", "lowercase letters"),
            ("-x", "start and end"),
            ("x.", "start and end"),
        ] {
            let message = configuration_name(bad).unwrap_err().to_string();
            assert!(message.contains(problem), "{bad:?}: {message}");
            assert!(message.contains("pakket-webhooks-<name>"), "{message}");
        }
    }

    #[test]
    fn options_for_labels_select_exactly_those_labels() {
        let labels = BTreeMap::from([("test.pakket.dev/scope".to_owned(), "t-1".to_owned())]);
        let options = LocalOptions::for_labels("t-1", labels.clone());
        assert_eq!(options.name, "t-1");
        let selector = options.object_selector.unwrap();
        assert_eq!(selector.match_labels, Some(labels));
        assert!(selector.match_expressions.is_none());
    }
}
