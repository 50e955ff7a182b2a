//! `pakket-plain`: a provisioner whose bundles are directories of plain
//! Kubernetes manifests. Everything else (watching, unpacking, approval,
//! server-side apply, pivot, status) is the shared runtime's job; this file
//! is what a third-party provisioner author writes.

use std::path::{Path, PathBuf};

use clap::Parser;
use pakket_runtime::{Provisioner, controller, manifest};
use serde_json::Value;

/// The provisioner: its id, and how unpacked content becomes objects.
struct PlainManifests {
    id: String,
}

impl Provisioner for PlainManifests {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, content: &Path, max_object_size: u64) -> Result<Vec<Value>, String> {
        // Every *.yaml, *.yml and *.json file, in name order; errors name the
        // file and line. Duplicates (same kind, namespace and name) are refused.
        let manifests =
            manifest::load_dir(content, max_object_size).map_err(|error| error.to_string())?;
        manifest::check_duplicates(&manifests).map_err(|error| error.to_string())?;
        Ok(manifests
            .into_iter()
            .map(|manifest| manifest.object)
            .collect())
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
    tracing::info!(id = %args.id, "plain provisioner started");
    controller::run(client, PlainManifests { id: args.id }, args.store).await?;
    Ok(())
}
