//! The HTTP layer, kept thin: `POST /validate` and `POST /mutate` take an
//! AdmissionReview and answer one; `/healthz`, `/readyz` and `/metrics` are
//! for the kubelet and Prometheus. Everything is served over TLS on one port
//! (probes use `scheme: HTTPS`), so a broken TLS listener fails liveness.
//!
//! The accept loop is the runtime's (tokio-rustls + hyper-util) rather than
//! axum-server's so the certificate comes from [`crate::tls::ReloadingCert`]
//! on every handshake, and connections are capped below the file limit.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionResponse, AdmissionReview};
use pakket_runtime::kernel::tls_accept::{self, AcceptLimits};
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::admission::{Admission, Webhook, respond};
use crate::metrics::Metrics;
use crate::review::{Request, Target};

/// A review holds the object and the old object; a ConfigMap may be 1 MiB
/// each, so 2 MiB (axum's default) is too small. 16 MiB bounds memory per
/// request while fitting anything the apiserver accepts.
const MAX_REVIEW_BYTES: usize = 16 << 20;
/// A client that has not sent a request's headers by then is dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
struct Shared {
    admission: Admission,
    metrics: Arc<Metrics>,
}

/// The routes.
pub fn router(admission: Admission, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .route("/mutate", post(mutate))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .layer(DefaultBodyLimit::max(MAX_REVIEW_BYTES))
        .with_state(Shared { admission, metrics })
}

async fn validate(State(shared): State<Shared>, body: Bytes) -> Response {
    review(shared, Webhook::Validate, body).await
}

async fn mutate(State(shared): State<Shared>, body: Bytes) -> Response {
    review(shared, Webhook::Mutate, body).await
}

async fn review(shared: Shared, webhook: Webhook, body: Bytes) -> Response {
    let started = Instant::now();
    let parsed: Result<AdmissionReview<DynamicObject>, _> = serde_json::from_slice(&body);
    let request: Request = match parsed.map_err(|e| e.to_string()).and_then(|review| {
        review
            .try_into()
            .map_err(|_| "the AdmissionReview has no request".to_owned())
    }) {
        Ok(request) => request,
        Err(problem) => {
            shared
                .metrics
                .admitted(webhook.label(), "other", "error", started.elapsed());
            let answer =
                AdmissionResponse::invalid(format!("not an AdmissionReview v1: {problem}"));
            return (StatusCode::BAD_REQUEST, axum::Json(answer.into_review())).into_response();
        }
    };
    let verdict = shared.admission.answer(webhook, &request).await;
    let result = if verdict.is_allowed() {
        "allowed"
    } else {
        "denied"
    };
    let resource = Target::of(&request).metric_label();
    if !verdict.is_allowed() {
        tracing::info!(
            webhook = webhook.label(),
            resource,
            name = %request.name,
            user = ?request.user_info.username,
            message = %verdict.message(),
            "denied"
        );
    }
    let answer = respond(&request, verdict);
    shared
        .metrics
        .admitted(webhook.label(), resource, result, started.elapsed());
    axum::Json(answer.into_review()).into_response()
}

async fn readyz(State(shared): State<Shared>) -> (StatusCode, &'static str) {
    if shared.admission.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the Bundle and ProvisionerClass watches have not synced",
        )
    }
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.encode(),
    )
}

/// Serves `router` over TLS on `listener` until `shutdown` completes, then
/// lets open connections finish (up to 10 s). The accept loop (handshake
/// timeout, connection cap, rate-limited warnings) is the runtime's
/// [`pakket_runtime::kernel::tls_accept`], shared with the resolver API.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A client that sends no request headers within the limit is dropped
    // (hyper needs a timer to enforce it).
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // Each connection holds a receiver: it finishes its request and closes
    // when told to stop, and the sender sees when every one is gone.
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let limits = AcceptLimits::from_file_limit();
    tracing::info!(
        max_connections = limits.max_connections,
        "serving admission reviews"
    );
    let connection = move |tls| {
        let (builder, mut stop) = (builder.clone(), stop.clone());
        let service = TowerToHyperService::new(router.clone());
        async move {
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stopped(&mut stop) => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "connection ended with an error");
            }
        }
    };
    tls_accept::accept_tls(&listener, acceptor, limits, shutdown, connection).await;
    drop(listener);
    let _ = stopping.send(true);
    if tokio::time::timeout(Duration::from_secs(10), stopping.closed())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10 s; closing them");
    }
}

/// Resolves once `stop` says true (or its sender is gone).
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`: dropped here, not held.
    let _ = stop.wait_for(|stop| *stop).await.map(|_| ());
}
