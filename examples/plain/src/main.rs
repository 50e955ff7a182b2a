//! `pakket-plain`: a provisioner whose bundles are directories of plain
//! Kubernetes manifests. Everything else (watching, unpacking, approval,
//! server-side apply, pivot, status, leader election, probes and metrics)
//! is the shared runtime's job; this file is what a third-party
//! provisioner author writes.

use clap::Parser;
use pakket_runtime::cli::{self, ProvisionerArgs};
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner, manifest};
use serde_json::Value;

/// jemalloc with its background thread, not the system allocator: after
/// 1,000 Instances were installed and deleted, glibc's malloc still held
/// 47.9 MiB at rest (32.4 MiB at the start); jemalloc gives freed pages
/// back to the system within seconds and came back to 42.2 MiB (35.5 MiB
/// at the start), `tests/soak.rs` with 1,000 Instances.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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

    // Approval is the runtime's: `AllowAll`, `UserPermission`, `Android`,
    // and a person for anything else. Override `approve` only to add a
    // policy of your own.
}

#[derive(Parser)]
#[command(
    name = "pakket-plain",
    about = "Pakket's plain provisioner: bundles of plain Kubernetes manifests"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    cli::run(args.provisioner, "pakket.dev/plain", |id| PlainManifests {
        id: id.to_owned(),
    })
    .await
}
