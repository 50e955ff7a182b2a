//! `pakket-registry-v1`: OLM registry+v1 operator bundles installed as
//! plain objects, on the shared runtime.

use clap::Parser;
use pakket_registry_v1::{ID, RegistryV1};
use pakket_runtime::cli::{self, ProvisionerArgs};

#[derive(Parser)]
#[command(
    name = "pakket-registry-v1",
    about = "Pakket's registry-v1 provisioner: OLM operator bundles (registry+v1)"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    cli::run(args.provisioner, ID, |id| RegistryV1::new(id)).await
}
