//! Pakket's admission webhooks: who may name a ProvisionerClass, who may
//! approve an Instance, who created it, and what a Bundle may hold.
//!
//! # What is checked
//!
//! | rule | on | needs |
//! |---|---|---|
//! | [`rules::use_verb`] | Bundle / Instance CREATE, and UPDATE that changes the spec | `use` on `provisionerclasses/<class>` for every class named (an Instance's embedded Bundle spec included) |
//! | [`rules::approval`] | Instance (and `instances/status`) writes that change what decides approval ([`pakket_api::ApprovalState`]: `Approved` status and reason, `status.approval`) | `approve` on `instances/<name>` |
//! | [`rules::creator`] | Instance CREATE (mutating + validating) and UPDATE | `core.pakket.dev/created-by` is the requester's, sealed for the spec, and never changes; a spec change writes `core.pakket.dev/last-changed-by` (the requester, sealed for the new spec); neither is written by hand |
//! | [`rules::creator`] | Input and Operator CREATE and UPDATE (and their status) | the same records, sealed for `Input/<name>` or `Operator/<name>` and the digest of the spec as JSON; a delegate's (`--delegate`) write may carry someone else's `last-changed-by` when its seal verifies for that object and spec |
//! | [`rules::bundle`] | Bundle UPDATE; Bundle / Instance CREATE | spec immutable (refused in the mutating phase, before CEL, with a message naming the change); refs parse |
//! | [`rules::content`] | Bundle CREATE (and an Instance's embedded spec); ConfigMap CREATE/UPDATE/DELETE of Bundle content (labelled `core.pakket.dev/bundle-content: "true"`, before or after) | the requester may `get` every mounted ConfigMap; mounted ConfigMaps are `immutable: true` and labelled, and neither deleted nor unlabelled while mounted |
//!
//! A class that does not exist is a warning, not a denial: GitOps tools apply
//! in any order, and nothing acts on the object until the class appears.
//!
//! # Shape
//!
//! The rules are pure functions over decoded objects ([`rules`]), tested
//! without HTTP. [`admission`] asks the cluster what they need asked
//! ([`authz`] for SubjectAccessReviews, [`index`] for watched Bundles and
//! classes, [`apis`] for the watched CRDs and APIServices Instances
//! installed, a GET for a mounted ConfigMap) and merges their answers.
//! [`server`] is the thin HTTP layer over TLS ([`tls`], certificates reloaded
//! when their files change). [`config`] builds the webhook configurations
//! for `deploy/`; [`local`] runs the server on 127.0.0.1 and registers it
//! by URL, for the demo on a loopback control plane and for tests.
//!
//! # Permission answers are cached briefly
//!
//! "Yes" answers are kept 10 s per (full identity, verb, resource, name);
//! "no" is never kept, so a fresh grant works at once. See [`authz`]. With
//! that, the steady state (status writes, repeated creates by the same
//! users) costs no apiserver round trip, and `matchConditions` keep status
//! writes that leave approval alone ([`pakket_api::ApprovalState`]) from
//! calling the webhook at all.
//!
//! # The requester records
//!
//! [`pakket_api::CREATED_BY_ANNOTATION`] and
//! [`pakket_api::LAST_CHANGED_BY_ANNOTATION`] hold [`pakket_api::CreatorRecord`]
//! JSON (user name, uid, sorted groups; not `extra`, which describes the
//! credential rather than the user), sealed with the record key
//! (`--record-key-file`) for the Instance's name and spec. Provisioners
//! verify the seal ([`pakket_api::requester`]) before any policy approves,
//! and `approval: UserPermission` asks about that requester's rights.

pub mod admission;
pub mod apis;
pub mod authz;
pub mod bootstrap;
pub mod config;
mod error;
pub mod index;
pub mod local;
pub mod metrics;
pub mod review;
pub mod rules;
pub mod server;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use error::Error;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How to run the server.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Address to listen on (port 0: the kernel picks one).
    pub listen: SocketAddr,
    /// The serving certificate's files.
    pub cert: tls::CertFiles,
    /// How often to look for a new certificate.
    pub reload_interval: Duration,
    /// How long a "yes" from a SubjectAccessReview is kept (zero: never).
    pub access_cache_ttl: Duration,
    /// The key that seals requester records (the provisioners verify with it).
    pub record_key: pakket_api::RecordKey,
    /// User names whose writes may carry someone else's sealed record
    /// (controllers that write on people's behalf, such as
    /// pakket-resolveset's ServiceAccount); see [`rules::creator`].
    pub delegates: Vec<String>,
}

/// A server started by [`start`].
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its metrics.
    pub metrics: Arc<metrics::Metrics>,
    /// Its watches of Bundles and classes.
    pub index: index::Index,
    /// Its watches of the CRDs and APIServices Instances installed.
    pub apis: apis::ApiCache,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    watcher: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, lets open requests finish, and returns when done.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        self.watcher.abort();
        self.index.stop();
        self.apis.stop();
    }

    /// Ends everything at once, open connections included: for a `Drop`,
    /// where there is no waiting for [`stop`](Self::stop).
    pub fn abort(self) {
        self.task.abort();
        self.watcher.abort();
        self.index.stop();
        self.apis.stop();
    }

    /// Completes when the server stops on its own (it does not, normally).
    pub async fn wait(&mut self) {
        let _ = (&mut self.task).await;
    }
}

/// Loads the certificate, starts the watches and serves, all on the current
/// tokio runtime. `client` makes the SubjectAccessReviews and the watches.
pub async fn start(client: kube::Client, settings: Settings) -> Result<Running, StartError> {
    let cert = tls::ReloadingCert::load(settings.cert.clone()).map_err(Error::from)?;
    let mut metrics = metrics::Metrics::new();
    metrics.show_certificate_expiry(cert.clone());
    let metrics = Arc::new(metrics);
    let tls_config = cert.server_config(tls::ALPN);
    let reloads = metrics.clone();
    let watcher = tokio::spawn(cert.watch(settings.reload_interval, move |outcome| {
        reloads.certificate_reloaded(if outcome.is_ok() { "ok" } else { "error" });
    }));
    let index = index::Index::spawn(client.clone());
    let apis = apis::ApiCache::spawn(client.clone());
    let authorizer =
        authz::Authorizer::new(client.clone(), settings.access_cache_ttl, metrics.clone());
    let admission = admission::Admission::new(
        client,
        authorizer,
        admission::Caches {
            index: index.clone(),
            apis: apis.clone(),
        },
        metrics.clone(),
        settings.record_key.clone(),
        settings.delegates.clone(),
    );
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: settings.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: settings.listen,
        source,
    })?;
    let router = server::router(admission, metrics.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, tls_config, router, async {
        let _ = stopped.await;
    }));
    tracing::info!(%addr, "serving admission reviews");
    Ok(Running {
        addr,
        metrics,
        index,
        apis,
        stop,
        task,
        watcher,
    })
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The certificate could not be loaded.
    #[error(transparent)]
    Certificate(#[from] Error),
    /// The address could not be bound.
    #[error("listening on {addr}: {source}; is another process on that port?")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}
