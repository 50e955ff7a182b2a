//! Health, readiness and metrics over HTTP, for the kubelet's probes and for
//! Prometheus.
//!
//! Plain HTTP on purpose: probes come from the kubelet on the node and scrapes
//! from inside the cluster, nothing here is secret, and TLS would mean
//! certificates to rotate for no gain. Bind it to the pod IP (or 127.0.0.1
//! outside a cluster), never expose it through a Service meant for users.
//!
//! - `/healthz`: `200 ok` while the process serves HTTP at all (liveness).
//! - `/readyz`: `200` while the candidate knows its role, leading **or**
//!   standing by; `503` before it has read the Lease, while the apiserver
//!   cannot be reached, and after the election stopped. A standby counts as
//!   ready because it is a correct hot spare: were it unready, a rollout of a
//!   Deployment with two replicas would wait for it forever.
//! - `/metrics`: the [`Metrics`], OpenMetrics text (Prometheus reads it);
//!   every metric is described in `docs/metrics.md`, with the alerts of
//!   `deploy/monitoring/` that read it.

pub mod instances;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::kernel::tls::ReloadingCert;
use crate::leader::{LeaderState, Role};

/// The labels of `pakket_reconciles_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    /// `ok`, or the error's metric label.
    result: String,
}

/// The labels of `pakket_apiserver_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// `get` (a read or a list), `watch`, `create`, `update`, `patch` or
    /// `delete`.
    verb: String,
}

/// The verbs `pakket_apiserver_requests_total` counts, in its order.
pub const REQUEST_VERBS: [&str; 7] = [
    "get", "watch", "create", "update", "patch", "delete", "other",
];

/// The provisioner's metrics, shared by the controller and the `/metrics` endpoint.
pub struct Metrics {
    /// Behind a lock only so a process can add its own metrics
    /// ([`Metrics::register`]) after the runtime made these.
    registry: Mutex<Registry>,
    reconciles: Family<ReconcileLabels, Counter>,
    apiserver_requests: Family<RequestLabels, Counter>,
    reconcile_duration: Histogram,
    is_leader: Gauge,
    store_bytes: Gauge,
    store_removed: Counter,
    store_pinned_over_cap: Gauge,
    instances: instances::InstanceGauges,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "pakket_reconciles",
            "Instance reconciliations, by result (ok or the error's label)",
            reconciles.clone(),
        );
        // 1 ms to ~33 s: an apply of a large bundle can take seconds.
        let reconcile_duration = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        registry.register(
            "pakket_reconcile_duration_seconds",
            "How long Instance reconciliations take",
            reconcile_duration.clone(),
        );
        let is_leader = Gauge::default();
        registry.register(
            "pakket_is_leader",
            "1 while this replica holds the leader Lease and reconciles, else 0",
            is_leader.clone(),
        );
        let store_bytes = Gauge::default();
        registry.register(
            "pakket_store_bytes",
            "Bytes of unpacked content in the store after the last collection",
            store_bytes.clone(),
        );
        let store_removed = Counter::default();
        registry.register(
            "pakket_store_removed",
            "Content directories the store's collections removed",
            store_removed.clone(),
        );
        let store_pinned_over_cap = Gauge::default();
        registry.register(
            "pakket_store_pinned_over_cap_bytes",
            "How far content that Bundles pin is over the store's cap (0 when under it); \
             raise the cap or the volume",
            store_pinned_over_cap.clone(),
        );
        let apiserver_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "pakket_apiserver_requests",
            "Requests this process sent the apiserver, by verb (get counts lists too; \
             watch counts each watch started)",
            apiserver_requests.clone(),
        );
        let instances = instances::InstanceGauges::default();
        instances.register(&mut registry);
        Metrics {
            registry: Mutex::new(registry),
            reconciles,
            apiserver_requests,
            reconcile_duration,
            is_leader,
            store_bytes,
            store_removed,
            store_pinned_over_cap,
            instances,
        }
    }

    /// Adds a process's own metric (a provisioner's, beside the runtime's).
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.lock().register(name, help, metric);
    }

    /// Adds metrics computed at each scrape.
    pub fn register_collector(&self, collector: impl Collector) {
        self.lock().register_collector(Box::new(collector));
    }

    /// Lets the Instance gauges ([`instances`]) read the controller's
    /// caches of Instances and ProvisionerClasses instead of listing them:
    /// the controller calls it each time it starts leading.
    pub fn read_instances_from(
        &self,
        instances: kube::runtime::reflector::Store<pakket_api::Instance>,
        classes: kube::runtime::reflector::Store<pakket_api::ProvisionerClass>,
    ) {
        self.instances
            .read_from(instances::Caches { instances, classes });
    }

    /// Replaces the Instance gauges ([`instances`]) with `tally`'s.
    pub fn show_instances(&self, tally: &instances::Tally) {
        self.instances.show(tally);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .expect("metrics registry lock poisoned")
    }

    /// Counts one reconciliation: `result` is `ok` or the error's metric label.
    pub fn reconciled(&self, result: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                result: result.to_string(),
            })
            .inc();
        self.reconcile_duration.observe(took.as_secs_f64());
    }

    /// Counts one request to the apiserver by its HTTP method (and whether
    /// it starts a watch).
    pub fn apiserver_request(&self, method: &http::Method, query: Option<&str>) {
        let watches = query.is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair == "watch=true" || pair == "watch=1")
        });
        let verb = match *method {
            http::Method::GET if watches => "watch",
            http::Method::GET => "get",
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => "other",
        };
        self.apiserver_requests
            .get_or_create(&RequestLabels { verb: verb.into() })
            .inc();
    }

    /// Requests sent so far, per verb of [`REQUEST_VERBS`].
    pub fn apiserver_requests(&self) -> Vec<(&'static str, u64)> {
        REQUEST_VERBS
            .iter()
            .map(|verb| {
                let labels = RequestLabels {
                    verb: (*verb).into(),
                };
                (*verb, self.apiserver_requests.get_or_create(&labels).get())
            })
            .collect()
    }

    /// A client for `config` whose every request is counted in
    /// `pakket_apiserver_requests_total`: what a provisioner costs the
    /// apiserver, at rest and busy, from its own side.
    pub fn counted_client(
        self: &Arc<Self>,
        config: kube::Config,
    ) -> Result<kube::Client, kube::Error> {
        let metrics = self.clone();
        let count =
            tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
                metrics.apiserver_request(request.method(), request.uri().query());
                request
            });
        Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(&count)
            .build())
    }

    /// Sets the `pakket_is_leader` gauge.
    pub fn set_leader(&self, leading: bool) {
        self.is_leader.set(i64::from(leading));
    }

    /// Records a collection of the content store.
    pub fn store_collected(&self, bytes_after: u64, removed: usize, pinned_over_cap: u64) {
        self.store_bytes
            .set(i64::try_from(bytes_after).unwrap_or(i64::MAX));
        self.store_removed.inc_by(removed as u64);
        self.store_pinned_over_cap
            .set(i64::try_from(pinned_over_cap).unwrap_or(i64::MAX));
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.lock())
            .expect("writing to a String cannot fail");
        text
    }
}

/// The name of the gauge [`CertificateExpiry`] shows.
pub const CERTIFICATE_EXPIRY: &str = "pakket_serving_certificate_expiration_timestamp_seconds";

/// `pakket_serving_certificate_expiration_timestamp_seconds`: when the
/// certificate a server now presents stops being valid, read at each
/// scrape, so it follows every reload. The webhooks and the resolver API
/// register one each.
#[derive(Debug)]
pub struct CertificateExpiry(pub Arc<ReloadingCert>);

impl Collector for CertificateExpiry {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(not_after) = self.0.not_after() else {
            return Ok(());
        };
        let gauge = ConstGauge::new(not_after);
        let metric = encoder.encode_descriptor(
            CERTIFICATE_EXPIRY,
            "When the serving certificate now presented expires (notAfter), Unix seconds",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(metric)
    }
}

#[derive(Clone)]
struct Shared {
    metrics: Arc<Metrics>,
    leader: LeaderState,
}

/// The `/healthz`, `/readyz` and `/metrics` routes.
pub fn router(metrics: Arc<Metrics>, leader: LeaderState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(Shared { metrics, leader })
}

/// Serves [`router`] on `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    leader: LeaderState,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, leader)).await
}

async fn readyz(State(shared): State<Shared>) -> (StatusCode, &'static str) {
    match shared.leader.role() {
        Role::Leading => (StatusCode::OK, "ok: leading"),
        Role::Standby => (StatusCode::OK, "ok: standing by"),
        Role::Unknown => (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the leader lease has not been read yet or cannot be reached",
        ),
    }
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    // Read at scrape time, so the gauge can never disagree with the elector.
    shared.metrics.set_leader(shared.leader.is_leader());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.encode(),
    )
}

/// Completes on SIGTERM (the kubelet stopping the pod) or Ctrl-C.
pub async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_text_names_every_metric() {
        let metrics = Metrics::new();
        metrics.reconciled("ok", Duration::from_millis(20));
        metrics.reconciled("apply", Duration::from_millis(3));
        metrics.set_leader(true);
        let text = metrics.encode();
        assert!(
            text.contains("pakket_reconciles_total{result=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("pakket_reconciles_total{result=\"apply\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("pakket_reconcile_duration_seconds_count 2"),
            "{text}"
        );
        assert!(text.contains("pakket_is_leader 1"), "{text}");
    }
}
