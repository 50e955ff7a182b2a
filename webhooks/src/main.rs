//! `pakket-webhooks`: the admission server.
//!
//! ```text
//! pakket-webhooks serve --cert /tls/tls.crt --key /tls/tls.key   serve over TLS on :8443
//! pakket-webhooks configurations                                 print deploy/'s webhook configurations
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use pakket_webhooks::{Settings, config, tls};

#[derive(Parser)]
#[command(version, about = "Pakket's admission webhooks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve AdmissionReview v1 over TLS, with /healthz, /readyz and /metrics.
    Serve {
        /// Address to listen on.
        #[arg(long, env = "PAKKET_WEBHOOKS_LISTEN", default_value = "0.0.0.0:8443")]
        listen: SocketAddr,
        /// PEM certificate chain (reloaded when it changes).
        #[arg(long, env = "PAKKET_WEBHOOKS_CERT", default_value = "/tls/tls.crt")]
        cert: PathBuf,
        /// PEM private key (reloaded when it changes).
        #[arg(long, env = "PAKKET_WEBHOOKS_KEY", default_value = "/tls/tls.key")]
        key: PathBuf,
        /// Seconds between checks of the certificate files.
        #[arg(long, default_value_t = 5)]
        reload_seconds: u64,
        /// Seconds a "yes" from a SubjectAccessReview is reused (0: never).
        #[arg(long, default_value_t = 10)]
        access_cache_seconds: u64,
    },
    /// Print the Validating- and MutatingWebhookConfiguration of deploy/.
    Configurations,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    match Cli::parse().command {
        Command::Configurations => print!("{}", config::deployed_yaml()?),
        Command::Serve {
            listen,
            cert,
            key,
            reload_seconds,
            access_cache_seconds,
        } => {
            let client = kube::Client::try_default()
                .await
                .context("connecting to the apiserver (in-cluster config or KUBECONFIG)")?;
            let settings = Settings {
                listen,
                cert: tls::CertFiles { cert, key },
                reload_interval: Duration::from_secs(reload_seconds.max(1)),
                access_cache_ttl: Duration::from_secs(access_cache_seconds),
            };
            let mut running = pakket_webhooks::start(client, settings).await?;
            tokio::select! {
                () = shutdown_signal() => tracing::info!("stopping"),
                () = running.wait() => anyhow::bail!("the server stopped on its own"),
            }
            running.stop().await;
        }
    }
    Ok(())
}

/// Completes on SIGTERM (the kubelet stopping the pod) or Ctrl-C.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
