//! `pakket-helm`: Helm charts, rendered by the pinned `helm template` and
//! installed on the shared runtime, and namespace owners' HelmCharts.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use pakket_helm::ID;
use pakket_helm::helmchart_controller::{self, ChartsContext};
use pakket_helm::provisioner::HelmCharts;
use pakket_helm::template::Helm;
use pakket_runtime::cli::{self, ProvisionerArgs};
use pakket_runtime::kernel::controller;
use pakket_runtime::kernel::serve;
use pakket_runtime::secret_values::SecretValues;

/// jemalloc with its background thread, not the system allocator, as in
/// pakket-plain (`examples/plain/src/main.rs`, measured there).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "pakket-helm",
    about = "Pakket's helm provisioner: Helm charts from chart repositories and OCI registries, and namespace owners' HelmCharts"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
    /// The helm binary that renders charts (`helm template`, no network);
    /// found on PATH unless a path is given.
    #[arg(long, env = "PAKKET_HELM", default_value = "helm")]
    helm: PathBuf,
    /// The ProvisionerClass the Instances written for HelmCharts name.
    #[arg(long, default_value = "helm")]
    class: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    let cli::Started {
        id,
        store,
        client,
        elector,
        metrics,
        record_key,
    } = cli::start(&args.provisioner, ID).await?;
    tracing::info!(%id, class = %args.class, "helm provisioner started");
    let sources = cli::pod_sources();
    let helm = Helm::new(args.helm.clone());
    let secret_values = Arc::new(SecretValues::new(
        "pakket-helm's HelmChart controller",
        pakket_helm::values_from::field,
    ));
    // Only the leader reconciles, both the Instances and the HelmCharts.
    let work = || {
        let options = cli::run_options(&args.provisioner, &store, &metrics, &record_key, &sources);
        let charts = Arc::new(ChartsContext {
            client: client.clone(),
            class: args.class.clone(),
            record_key: record_key.clone(),
            selector: None,
            secret_values: Arc::clone(&secret_values),
        });
        let provisioner = HelmCharts::new(&id, helm.clone(), Arc::clone(&secret_values));
        let client = client.clone();
        async move {
            tokio::select! {
                result = controller::run_with(client, provisioner, options) => result.map_err(anyhow::Error::from),
                result = helmchart_controller::run(charts) => result.map_err(anyhow::Error::from),
            }
        }
    };
    if let Some(result) = elector.run(serve::shutdown_signal(), work).await? {
        result?;
    }
    Ok(())
}
