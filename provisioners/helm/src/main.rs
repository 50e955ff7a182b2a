//! `pakket-helm`: Helm charts, rendered by the pinned `helm template` and
//! installed on the shared runtime.

use std::path::PathBuf;

use clap::Parser;
use pakket_helm::ID;
use pakket_helm::provisioner::HelmCharts;
use pakket_helm::template::Helm;
use pakket_runtime::cli::{self, ProvisionerArgs};

/// jemalloc with its background thread, not the system allocator, as in
/// pakket-plain (`examples/plain/src/main.rs`, measured there).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "pakket-helm",
    about = "Pakket's helm provisioner: Helm charts from chart repositories and OCI registries"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
    /// The helm binary that renders charts (`helm template`, no network);
    /// found on PATH unless a path is given.
    #[arg(long, env = "PAKKET_HELM", default_value = "helm")]
    helm: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    let helm = Helm::new(args.helm);
    cli::run(args.provisioner, ID, move |id| {
        HelmCharts::new(id, helm.clone())
    })
    .await
}
