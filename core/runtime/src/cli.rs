//! The flags and the process every provisioner binary shares: leader
//! election on a Lease, `/healthz`, `/readyz` and `/metrics`, the record
//! key, the content store and its limits. A provisioner's `main` is a few
//! lines: parse [`ProvisionerArgs`] (flattened into its own clap parser)
//! and call [`run`] with its [`Provisioner`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::Provisioner;
use crate::controller::{self, RunOptions, StoreGc};
use crate::leader::{Elector, LeaseConfig};
use crate::serve::{self, Metrics};
use crate::source::SourceOptions;
use crate::store::gc::Policy;

/// The flags of every provisioner binary.
#[derive(clap::Args, Clone, Debug)]
pub struct ProvisionerArgs {
    /// The id ProvisionerClasses name in spec.provisioner [default: the
    /// provisioner's own, e.g. pakket.dev/plain].
    #[arg(long)]
    pub id: Option<String>,
    /// Where unpacked content is kept, by digest [default: a folder named
    /// after the provisioner in the temporary directory].
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// The namespace of the Lease that elects the one replica that reconciles.
    #[arg(long, default_value = "pakket-system")]
    pub lease_namespace: String,
    /// The Lease's name [default: from --id, e.g. pakket.dev-plain].
    #[arg(long)]
    pub lease_name: Option<String>,
    /// Seconds a Lease not renewed stays with its holder: how long a
    /// standby (or a restarted process) waits after the leader dies. The
    /// renew deadline and retry period follow at OLM v1's ratios (137 s,
    /// 107 s, 26 s, as its operator-controller and OpenShift use): a
    /// leader survives a minute of apiserver downtime, renews with one
    /// write every 26 s, and a graceful shutdown hands over within 26 s
    /// (the Lease is released); only a crash waits the whole duration.
    #[arg(long, default_value_t = 137, value_parser = clap::value_parser!(u64).range(2..=600))]
    pub lease_duration: u64,
    /// Where /healthz, /readyz and /metrics answer (plain HTTP); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub probe_address: SocketAddr,
    /// The key that verifies the admission webhook's requester records (the
    /// same Secret the webhooks mount). Without it, no policy approves an
    /// Instance whose requester is not recorded, and `UserPermission`
    /// waits for a person.
    #[arg(long, env = "PAKKET_RECORD_KEY_FILE")]
    pub record_key_file: Option<PathBuf>,
    /// The most bytes of unpacked content the store keeps; content no
    /// Bundle pins goes first, pinned content is never removed.
    #[arg(long, default_value_t = controller::DEFAULT_STORE_MAX_BYTES)]
    pub store_max_bytes: u64,
    /// The most Bundles fetched and unpacked at once.
    #[arg(long, default_value_t = controller::DEFAULT_MAX_CONCURRENT_UNPACKS)]
    pub max_concurrent_unpacks: usize,
    /// Seconds between two looks at an installed, healthy Instance that
    /// nothing said changed: the safety net under the drift watches
    /// [default: an hour]. Shorter only to measure what a period costs
    /// (the `lean` benchmark) or in tests; every look costs the apiserver.
    #[arg(long, value_parser = clap::value_parser!(u64).range(10..))]
    pub resync: Option<u64>,
}

impl ProvisionerArgs {
    /// How often an installed Instance is looked at again, from `--resync`.
    pub fn resync(&self) -> std::time::Duration {
        self.resync
            .map_or(controller::RESYNC, std::time::Duration::from_secs)
    }

    /// How the content store is collected, from `--store-max-bytes`.
    pub fn store_gc(&self) -> StoreGc {
        StoreGc {
            policy: Policy {
                max_bytes: self.store_max_bytes,
                ..StoreGc::default().policy
            },
            ..StoreGc::default()
        }
    }
}

/// Runs a provisioner process until SIGTERM or SIGINT: probes and metrics
/// from the start, the controller while this replica leads. `provisioner`
/// makes the provisioner for an id (`default_id` unless `--id` says).
pub async fn run<P: Provisioner>(
    args: ProvisionerArgs,
    default_id: &str,
    provisioner: impl Fn(&str) -> P,
) -> anyhow::Result<()> {
    let Started {
        id,
        store,
        client,
        elector,
        metrics,
        record_key,
    } = start(&args, default_id).await?;
    tracing::info!(%id, identity = %elector.config().identity, "provisioner started");
    let sources = pod_sources();
    // Only the leader reconciles; on SIGTERM the controller stops, then the
    // Lease is released so a standby takes over at once.
    let work = || {
        let options = run_options(&args, &store, &metrics, &record_key, &sources);
        controller::run_with(client.clone(), provisioner(&id), options)
    };
    if let Some(result) = elector.run(serve::shutdown_signal(), work).await? {
        result?;
    }
    Ok(())
}

/// Where content comes from for a provisioner in a pod: pull secrets (the
/// class parameter `pullSecrets`) are read from this pod's own namespace
/// only, given by the downward API (`POD_NAMESPACE`).
pub fn pod_sources() -> SourceOptions {
    SourceOptions {
        secret_namespace: std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|namespace| !namespace.is_empty()),
        ..SourceOptions::default()
    }
}

/// The runtime's options from the flags and what [`start`] made, for a
/// process that runs more than the runtime (its own controllers beside it)
/// and so cannot use [`run`].
pub fn run_options(
    args: &ProvisionerArgs,
    store: &std::path::Path,
    metrics: &Arc<Metrics>,
    record_key: &Option<pakket_api::RecordKey>,
    sources: &SourceOptions,
) -> RunOptions {
    RunOptions {
        metrics: metrics.clone(),
        sources: sources.clone(),
        record_key: record_key.clone(),
        store_gc: args.store_gc(),
        max_concurrent_unpacks: args.max_concurrent_unpacks,
        resync: args.resync(),
        // Policy decisions' inputs, beside its Lease.
        decision_records: Some(args.lease_namespace.clone()),
        ..RunOptions::new(store.to_path_buf())
    }
}

/// What a provisioner process has once it started, before it works.
pub struct Started {
    /// Its id (`--id`, else its own).
    pub id: String,
    /// Its content store (`--store`, else a folder named after the id).
    pub store: PathBuf,
    /// The apiserver (in-cluster, else `$KUBECONFIG`).
    pub client: kube::Client,
    /// The Lease election; only the leader reconciles.
    pub elector: Elector,
    /// What `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// The key that verifies requester records, if `--record-key-file`.
    pub record_key: Option<pakket_api::RecordKey>,
}

/// Starts what every provisioner process runs from its first second:
/// the client, the election, and `/healthz`, `/readyz` and `/metrics`
/// (whose address is printed first: tests read that line).
pub async fn start(args: &ProvisionerArgs, default_id: &str) -> anyhow::Result<Started> {
    let id = args.id.clone().unwrap_or_else(|| default_id.to_owned());
    let store = args.store.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pakket-store-{}", LeaseConfig::name_for(&id)))
    });
    let metrics = Arc::new(Metrics::new());
    // In-cluster config, or $KUBECONFIG / ~/.kube/config outside a cluster;
    // every request counted in /metrics.
    let client = metrics.counted_client(kube::Config::infer().await?)?;
    let lease_name = args
        .lease_name
        .clone()
        .unwrap_or_else(|| LeaseConfig::name_for(&id));
    let elector = Elector::new(
        client.clone(),
        LeaseConfig::new(args.lease_namespace.clone(), lease_name)
            .with_lease_duration(std::time::Duration::from_secs(args.lease_duration)),
    );
    // Probes and metrics answer from the start, leading or not.
    let listener = tokio::net::TcpListener::bind(args.probe_address).await?;
    println!("probes and metrics on http://{}", listener.local_addr()?);
    let record_key = match &args.record_key_file {
        Some(path) => Some(pakket_api::RecordKey::read(path)?),
        None => {
            tracing::warn!(
                "no --record-key-file: approval: UserPermission trusts no requester record, so every Instance under it waits for a person"
            );
            None
        }
    };
    tokio::spawn(serve::serve(listener, metrics.clone(), elector.state()));
    // The Instance gauges, from the controller's caches (see serve::instances).
    tokio::spawn(serve::instances::keep_current(
        id.clone(),
        metrics.clone(),
        elector.state(),
    ));
    Ok(Started {
        id,
        store,
        client,
        elector,
        metrics,
        record_key,
    })
}

/// The PEM text of every `--extra-ca-file`; the error names the file.
pub fn read_extra_roots(paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    paths
        .iter()
        .map(|path| {
            std::fs::read_to_string(path)
                .map_err(|error| anyhow::anyhow!("--extra-ca-file {}: {error}", path.display()))
        })
        .collect()
}

/// Logs to stderr at `RUST_LOG`'s levels (default `info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
}
