//! `pakket-package`: Glasskube packages from HTTP package repositories,
//! installed on the shared runtime.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use pakket_package::ID;
use pakket_package::process::{self, Options};
use pakket_runtime::cli::{self, ProvisionerArgs};
use pakket_runtime::kernel::controller::RunOptions;
use pakket_runtime::kernel::serve;
use pakket_runtime::kernel::source::SourceOptions;

/// jemalloc with its background thread, not the system allocator, as in
/// pakket-plain (`examples/plain/src/main.rs`, measured there): glibc's
/// malloc keeps the pages freed after a burst of Instances as RSS;
/// jemalloc gives them back to the system within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "pakket-package",
    about = "Pakket's package provisioner: Glasskube packages from HTTP package repositories"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
    /// The ProvisionerClass the packages' Instances name.
    #[arg(long, default_value = "package")]
    class: String,
    /// How often an unpinned package looks for a newer version.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    update_interval: Duration,
    /// Let repositories (and their manifests) be read from loopback,
    /// private and cluster-internal addresses.
    #[arg(long)]
    allow_internal_addresses: bool,
    /// More CA certificates (PEM) to trust for repositories.
    #[arg(long = "extra-ca-file")]
    extra_ca_files: Vec<PathBuf>,
    /// The helm binary that renders Helm packages (`helm template`, no
    /// network); found on PATH unless a path is given.
    #[arg(long, default_value = "helm")]
    helm: PathBuf,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text}: write a number and s, m or h"))?;
    match unit {
        "s" | "" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number * 60)),
        "h" => Ok(Duration::from_secs(number * 3600)),
        _ => Err(format!("{text}: write a number and s, m or h")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    let extra_roots = cli::read_extra_roots(&args.extra_ca_files)?;
    let cli::Started {
        id,
        store,
        client,
        elector,
        metrics,
        record_key,
    } = cli::start(&args.provisioner, ID).await?;
    let namespace = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|namespace| !namespace.is_empty())
        .unwrap_or_else(|| "pakket-system".into());
    let sources = SourceOptions {
        extra_roots,
        secret_namespace: Some(namespace.clone()),
        ..SourceOptions::default()
    };
    tracing::info!(%id, class = %args.class, "package provisioner started");
    let work = || {
        let runtime = RunOptions {
            metrics: Arc::clone(&metrics),
            sources: sources.clone(),
            record_key: record_key.clone(),
            store_gc: args.provisioner.store_gc(),
            max_concurrent_unpacks: args.provisioner.max_concurrent_unpacks,
            resync: args.provisioner.resync(),
            // Policy decisions' inputs, beside its Lease.
            decision_records: Some(args.provisioner.lease_namespace.clone()),
            ..RunOptions::new(store.clone())
        };
        process::run(
            client.clone(),
            Options {
                id: id.clone(),
                class: args.class.clone(),
                sources: sources.clone(),
                allow_internal_addresses: args.allow_internal_addresses,
                helm: Some(args.helm.clone()),
                namespace: namespace.clone(),
                update_interval: args.update_interval,
                resync: Duration::from_secs(300),
                selector: None,
                runtime,
            },
        )
    };
    if let Some(result) = elector.run(serve::shutdown_signal(), work).await? {
        result?;
    }
    Ok(())
}
