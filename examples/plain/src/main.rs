//! `pakket-plain`: a provisioner whose bundles are directories of plain
//! Kubernetes manifests. Everything else (watching, unpacking, approval,
//! server-side apply, pivot, status) is the shared runtime's job; this file
//! is what a third-party provisioner author writes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use pakket_runtime::approval::{self, Approval, ApprovalRequest};
use pakket_runtime::controller::{RunOptions, StoreGc};
use pakket_runtime::leader::{Elector, LeaseConfig};
use pakket_runtime::serve::{self, Metrics};
use pakket_runtime::source::SourceOptions;
use pakket_runtime::store::gc::Policy as StoreGcPolicy;
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner, controller, manifest};
use serde_json::Value;

/// The provisioner: its id, and how unpacked content becomes objects.
struct PlainManifests {
    id: String,
}

impl Provisioner for PlainManifests {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        // Every *.yaml, *.yml and *.json file, in name order; errors name the
        // file and line. Duplicates (same kind, namespace and name) are refused.
        manifest::load_objects(request.content, request.max_object_size)
            .map_err(|error| ObjectsError::Content(error.to_string()))
    }

    // Approval beyond `AllowAll`: `UserPermission` installs what the
    // Instance's creator could have installed by hand; any other policy
    // waits for `kubectl instance approve`.
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "UserPermission" => approval::user_permission(request).await,
            _ => request.wait_for_a_person(),
        }
    }
}

#[derive(Parser)]
#[command(
    version,
    about = "Pakket's plain provisioner: bundles of plain Kubernetes manifests"
)]
struct Args {
    /// The id ProvisionerClasses name in spec.provisioner.
    #[arg(long, default_value = "pakket.dev/plain")]
    id: String,
    /// Where unpacked content is kept, by digest.
    #[arg(long, default_value_os_t = std::env::temp_dir().join("pakket-plain-store"))]
    store: PathBuf,
    /// The namespace of the Lease that elects the one replica that reconciles.
    #[arg(long, default_value = "pakket-system")]
    lease_namespace: String,
    /// The Lease's name [default: from --id, e.g. pakket.dev-plain].
    #[arg(long)]
    lease_name: Option<String>,
    /// Where /healthz, /readyz and /metrics answer (plain HTTP); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    probe_address: SocketAddr,
    /// The key that verifies the admission webhook's requester records (the
    /// same Secret the webhooks mount). Without it, `approval: UserPermission`
    /// trusts no record and waits for a person.
    #[arg(long, env = "PAKKET_RECORD_KEY_FILE")]
    record_key_file: Option<PathBuf>,
    /// The most bytes of unpacked content the store keeps; content no
    /// Bundle pins goes first, pinned content is never removed.
    #[arg(long, default_value_t = controller::DEFAULT_STORE_MAX_BYTES)]
    store_max_bytes: u64,
    /// The most Bundles fetched and unpacked at once.
    #[arg(long, default_value_t = controller::DEFAULT_MAX_CONCURRENT_UNPACKS)]
    max_concurrent_unpacks: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    // In-cluster config, or $KUBECONFIG / ~/.kube/config outside a cluster.
    let client = kube::Client::try_default().await?;
    let lease_name = args
        .lease_name
        .clone()
        .unwrap_or_else(|| LeaseConfig::name_for(&args.id));
    let elector = Elector::new(
        client.clone(),
        LeaseConfig::new(args.lease_namespace, lease_name),
    );

    // Probes and metrics answer from the start, leading or not.
    let listener = tokio::net::TcpListener::bind(args.probe_address).await?;
    println!("probes and metrics on http://{}", listener.local_addr()?);
    // After that first line: tests read it to find the probes.
    let record_key = match &args.record_key_file {
        Some(path) => Some(pakket_api::RecordKey::read(path)?),
        None => {
            tracing::warn!(
                "no --record-key-file: approval: UserPermission trusts no requester record, so every Instance under it waits for a person"
            );
            None
        }
    };
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(serve::serve(listener, metrics.clone(), elector.state()));

    tracing::info!(id = %args.id, identity = %elector.config().identity, "plain provisioner started");
    // Only the leader reconciles; on SIGTERM the controller stops, then the
    // Lease is released so a standby takes over at once.
    // Pull secrets (the class parameter `pullSecrets`) are read from this
    // pod's own namespace only, given by the downward API.
    let sources = SourceOptions {
        secret_namespace: std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|namespace| !namespace.is_empty()),
        ..SourceOptions::default()
    };
    let work = || {
        let options = RunOptions {
            metrics: metrics.clone(),
            sources: sources.clone(),
            record_key: record_key.clone(),
            store_gc: StoreGc {
                policy: StoreGcPolicy {
                    max_bytes: args.store_max_bytes,
                    ..StoreGc::default().policy
                },
                ..StoreGc::default()
            },
            max_concurrent_unpacks: args.max_concurrent_unpacks,
            ..RunOptions::new(args.store.clone())
        };
        controller::run_with(
            client.clone(),
            PlainManifests {
                id: args.id.clone(),
            },
            options,
        )
    };
    if let Some(result) = elector.run(serve::shutdown_signal(), work).await? {
        result?;
    }
    Ok(())
}
