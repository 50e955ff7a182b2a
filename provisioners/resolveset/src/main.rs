//! `pakket-resolveset`: serves the cluster's Catalogs to the resolver API.
//! Thin wiring: flags, logging, the Lease (only the leader writes Catalog
//! status; every replica loads and answers), probes and metrics, then
//! [`pakket_resolveset::process::start`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use pakket_resolveset::api::listen::Transport;
use pakket_resolveset::process::{self, DEFAULT_MAX_CATALOG_FILE, Options};
use pakket_resolveset::set::provisioner::ResolveSet;
use pakket_runtime::cli::{self, ProvisionerArgs};
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::serve;
use pakket_runtime::kernel::source::SourceOptions;

/// jemalloc with its background thread, not the system allocator: a
/// catalog swap frees a whole catalog's worth of small allocations, which
/// glibc's malloc kept as RSS (81 MiB after one swap of the community
/// catalog, 45 MiB before it); jemalloc returns them within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const DEFAULT_ID: &str = "pakket.dev/resolveset";

#[derive(Parser)]
#[command(
    name = "pakket-resolveset",
    about = "Pakket's resolveset process: the cluster's Catalogs and the resolver API"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
    /// Where the resolver API answers (HTTPS unless --api-insecure-loopback).
    #[arg(long, default_value = "0.0.0.0:8443")]
    api_address: SocketAddr,
    /// The API's certificate chain (PEM).
    #[arg(long, value_name = "FILE")]
    api_tls_cert: Option<PathBuf>,
    /// The API's private key (PEM).
    #[arg(long, value_name = "FILE")]
    api_tls_key: Option<PathBuf>,
    /// Serve the API over plain HTTP without authentication, for local use:
    /// only with a loopback --api-address.
    #[arg(long)]
    api_insecure_loopback: bool,
    /// Let `https` Catalog sources reach loopback, private and
    /// cluster-internal addresses (off: only public ones).
    #[arg(long)]
    allow_internal_addresses: bool,
    /// CA certificates (PEM) trusted besides the system's, for registries
    /// and `https` sources a private CA signed.
    #[arg(long = "extra-ca-file", value_name = "FILE")]
    extra_ca_files: Vec<PathBuf>,
    /// Serve only Catalogs whose labels match this selector (`key=value,…`).
    #[arg(long, value_name = "SELECTOR")]
    catalog_selector: Option<String>,
    /// Most bytes one catalog file may unpack to.
    #[arg(long, default_value_t = DEFAULT_MAX_CATALOG_FILE)]
    max_catalog_file_size: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    let transport = Transport::from_flags(
        args.api_address,
        args.api_insecure_loopback,
        args.api_tls_cert.as_deref(),
        args.api_tls_key.as_deref(),
    )?;
    let extra_roots = cli::read_extra_roots(&args.extra_ca_files)?;
    let cli::Started {
        id,
        store,
        client,
        elector,
        metrics,
        record_key,
    } = cli::start(&args.provisioner, DEFAULT_ID).await?;
    let provisioner_metrics = Arc::clone(&metrics);
    let running = process::start(
        client.clone(),
        Options {
            store: store.clone(),
            sources: SourceOptions {
                extra_roots,
                secret_namespace: std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|namespace| !namespace.is_empty()),
                ..SourceOptions::default()
            },
            allow_internal_addresses: args.allow_internal_addresses,
            max_catalog_file: args.max_catalog_file_size,
            api_address: args.api_address,
            transport,
            leader: Some(elector.state()),
            selector: args.catalog_selector,
            metrics,
            set: pakket_resolveset::process::SetOptions {
                namespace: std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|namespace| !namespace.is_empty())
                    .unwrap_or_else(|| "pakket-system".into()),
                ..Default::default()
            },
            store_gc: args.provisioner.store_gc(),
            record_key: record_key.clone(),
        },
    )
    .await?;
    println!("resolver API on {}", running.api_address);
    tracing::info!(%id, api = %running.api_address, "resolveset started");
    // Every replica serves; leading only means writing status, so taking
    // the Lease asks for every Catalog to be reconciled (and its status
    // written) at once.
    // The resolveset provisioner (the set's child Instances) runs on the
    // leader only, like every provisioner; its content store is its own.
    let resync = running.resync.clone();
    let provisioner_store = store.join("resolveset-provisioner");
    let work = || {
        let _ = resync.unbounded_send(());
        let options = RunOptions {
            metrics: Arc::clone(&provisioner_metrics),
            record_key: record_key.clone(),
            max_concurrent_unpacks: args.provisioner.max_concurrent_unpacks,
            resync: args.provisioner.resync(),
            // Policy decisions' inputs, beside its Lease.
            decision_records: Some(args.provisioner.lease_namespace.clone()),
            ..RunOptions::new(provisioner_store.clone())
        };
        let provisioner = ResolveSet::new(id.clone()).with_record_key(record_key.clone());
        controller::run_with(client.clone(), provisioner, options)
    };
    if let Some(result) = elector.run(serve::shutdown_signal(), work).await? {
        result?;
    }
    Ok(())
}
