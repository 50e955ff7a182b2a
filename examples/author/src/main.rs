//! `pakket-properties`: the provisioner's binary. `cli::run` gives it the
//! flags every provisioner has (`--id`, `--store`, `--lease-namespace`,
//! ...), the kube client, the content store, leader election, probes and
//! metrics, and runs the controller while this replica leads.

use clap::Parser;
use pakket_example_properties::Properties;
use pakket_runtime::cli::{self, ProvisionerArgs};

#[derive(Parser)]
#[command(
    name = "pakket-properties",
    about = "A Pakket provisioner: Bundles of .properties files, each a ConfigMap"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    cli::run(args.provisioner, "example.com/properties", |id| {
        Properties { id: id.to_owned() }
    })
    .await
}
