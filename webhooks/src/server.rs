//! The HTTP layer, kept thin: `POST /validate` and `POST /mutate` take an
//! AdmissionReview and answer one; `/healthz`, `/readyz` and `/metrics` are
//! for the kubelet and Prometheus. Everything is served over TLS on one port
//! (probes use `scheme: HTTPS`), so a broken TLS listener fails liveness.
//!
//! The accept loop is ours (tokio-rustls + hyper-util) rather than
//! axum-server's so the certificate comes from [`crate::tls::ReloadingCert`]
//! on every handshake.

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
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionResponse, AdmissionReview};
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
/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A client that has not sent a request's headers by then is dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// At most one warning per this long about failed accepts.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

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
/// lets open connections finish (up to 10 s).
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A client that sends no request headers within the limit is dropped
    // (hyper needs a timer to enforce it).
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let mut failed_since_warning = 0u64;
    let mut last_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off, go on,
                    // warning at most every ACCEPT_WARN_EVERY.
                    failed_since_warning += 1;
                    if last_warning.is_none_or(|at| at.elapsed() >= ACCEPT_WARN_EVERY) {
                        tracing::warn!(%error, failed = failed_since_warning, "accept failed; backing off");
                        failed_since_warning = 0;
                        last_warning = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10 s; closing them");
    }
}
