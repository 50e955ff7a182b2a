//! `pakket-registry-v1`: OLM registry+v1 operator bundles installed as
//! plain objects, on the shared runtime.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Parser;
use pakket_registry_v1::certificates::{self, CertificateKey};
use pakket_registry_v1::{ID, RegistryV1};
use pakket_runtime::cli::{self, ProvisionerArgs};

/// jemalloc with its background thread, not the system allocator, as in
/// pakket-plain (`examples/plain/src/main.rs`, measured there): glibc's
/// malloc keeps the pages freed after a burst of Instances as RSS;
/// jemalloc gives them back to the system within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "pakket-registry-v1",
    about = "Pakket's registry-v1 provisioner: OLM operator bundles (registry+v1)"
)]
struct Args {
    #[command(flatten)]
    provisioner: ProvisionerArgs,
    /// A file with at least 32 bytes from which webhook certificates are
    /// derived; every replica must read the same [default: random per
    /// process]. Never the record key (each key has one purpose).
    #[arg(long, env = "PAKKET_CERTIFICATE_KEY_FILE")]
    certificate_key_file: Option<PathBuf>,
    /// Seconds between rotations of webhook serving certificates; each is
    /// valid for two periods and the CA never changes. At least 60.
    #[arg(long, env = "PAKKET_CERTIFICATE_PERIOD_SECONDS", default_value_t = certificates::PERIOD.as_secs(), value_parser = clap::value_parser!(u64).range(certificates::MIN_PERIOD.as_secs()..))]
    certificate_period_seconds: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_logging();
    let args = Args::parse();
    let key = certificate_key(&args)?;
    let period = std::time::Duration::from_secs(args.certificate_period_seconds);
    cli::run(args.provisioner, ID, move |id| {
        RegistryV1::with_certificate_key(id, key.clone()).with_certificate_period(period)
    })
    .await
}

/// The certificate key: its own file (deploy/ mounts the one the webhooks'
/// bootstrap makes), else random, with a warning. Never the record key:
/// each key has one purpose.
fn certificate_key(args: &Args) -> anyhow::Result<CertificateKey> {
    if let Some(path) = &args.certificate_key_file {
        return CertificateKey::read(path).map_err(|problem| anyhow!(problem));
    }
    tracing::warn!(
        "no --certificate-key-file: webhook certificates are derived from a random key, so they change at every restart and differ between replicas; mount Secret pakket-registry-v1-certificate-key (made by `pakket-webhooks bootstrap`) and pass its file"
    );
    Ok(CertificateKey::random())
}
