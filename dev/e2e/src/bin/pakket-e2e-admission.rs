//! `pakket-e2e-admission`: the admission server of the operator the
//! in-cluster test installs through registry-v1 (its bundle is written by
//! the test). It stands for a real operator's webhook: it serves TLS with
//! the certificate Pakket mounted where OLM mounts it, reloads it when the
//! file changes, and answers for ConfigMaps through the apiserver:
//!
//! - `POST /validate` refuses a ConfigMap labelled
//!   `e2e.pakket.dev/verdict: deny`;
//! - `POST /mutate` annotates a new ConfigMap with
//!   `e2e.pakket.dev/mutated-by`.
//!
//! Both answers name the server's version (`--version-label`, set in the
//! CSV's Deployment, so an upgrade is visible) and the SHA-256 of the
//! serving certificate it answered with (so a rotation is visible).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use clap::Parser;
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use pakket_runtime::kernel::tls::{CertFiles, ReloadingCert};
use sha2::{Digest as _, Sha256};

/// The label that makes `/validate` refuse a ConfigMap.
const VERDICT_LABEL: &str = "e2e.pakket.dev/verdict";
/// The annotation `/mutate` adds.
const MUTATED_BY: &str = "e2e.pakket.dev/mutated-by";

#[derive(Parser)]
#[command(
    name = "pakket-e2e-admission",
    about = "The in-cluster test operator's admission server"
)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "0.0.0.0:9443")]
    listen: SocketAddr,
    /// The serving certificate (where OLM, and Pakket, mount it).
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs/tls.crt")]
    cert: PathBuf,
    /// Its key.
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs/tls.key")]
    key: PathBuf,
    /// Named in every answer.
    #[arg(long, default_value = "v1")]
    version_label: String,
}

#[derive(Clone)]
struct Server {
    cert: Arc<ReloadingCert>,
    version: String,
}

impl Server {
    /// Who answers: the version and the certificate in use.
    fn signature(&self) -> String {
        let certificate = self.cert.current();
        let leaf = certificate
            .cert
            .first()
            .map(AsRef::as_ref)
            .unwrap_or_default();
        let fingerprint = hex::encode(Sha256::digest(leaf));
        format!("{} with certificate {}", self.version, &fingerprint[..16])
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    pakket_runtime::cli::init_logging();
    let args = Args::parse();
    let files = CertFiles {
        cert: args.cert,
        key: args.key,
    };
    let cert = ReloadingCert::load(files).context("reading the serving certificate")?;
    tokio::spawn(cert.clone().watch(Duration::from_secs(2), |_| {
        tracing::info!("serving certificate reloaded");
    }));
    let tls = cert.server_config(&[b"h2", b"http/1.1"]);
    let server = Server {
        cert,
        version: args.version_label,
    };
    let router = Router::new()
        .route("/validate", post(validate))
        .route("/mutate", post(mutate))
        .with_state(server);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(listen = %args.listen, "serving");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    pakket_webhooks::server::serve(listener, tls, router, stop).await;
    Ok(())
}

type Review = Json<AdmissionReview<DynamicObject>>;

/// The review's answer: `decide`'s, or an invalid-request answer when the
/// review holds no request.
fn answer(
    review: AdmissionReview<DynamicObject>,
    decide: impl FnOnce(&AdmissionRequest<DynamicObject>) -> AdmissionResponse,
) -> Review {
    let request: Result<AdmissionRequest<DynamicObject>, _> = review.try_into();
    let response = match request {
        Ok(request) => decide(&request),
        Err(error) => AdmissionResponse::invalid(error.to_string()),
    };
    Json(response.into_review())
}

async fn validate(State(server): State<Server>, Json(review): Review) -> Review {
    answer(review, |request| {
        let response = AdmissionResponse::from(request);
        let refused = request
            .object
            .as_ref()
            .and_then(|object| object.metadata.labels.as_ref())
            .and_then(|labels| labels.get(VERDICT_LABEL))
            .is_some_and(|verdict| verdict == "deny");
        if refused {
            response.deny(format!(
                "refused by the e2e operator's webhook {}",
                server.signature()
            ))
        } else {
            response
        }
    })
}

async fn mutate(State(server): State<Server>, Json(review): Review) -> Review {
    answer(review, |request| {
        let response = AdmissionResponse::from(request);
        let has_annotations = request
            .object
            .as_ref()
            .is_some_and(|object| object.metadata.annotations.is_some());
        let value = server.signature();
        let operation = if has_annotations {
            AddOperation {
                path: PointerBuf::from_tokens(["metadata", "annotations", MUTATED_BY]),
                value: value.into(),
            }
        } else {
            AddOperation {
                path: PointerBuf::from_tokens(["metadata", "annotations"]),
                value: serde_json::json!({ MUTATED_BY: value }),
            }
        };
        let patch = json_patch::Patch(vec![PatchOperation::Add(operation)]);
        match response.clone().with_patch(patch) {
            Ok(patched) => patched,
            Err(error) => response.deny(format!("building the patch: {error}")),
        }
    })
}
