//! `pakket-webhooks`: the admission server.
//!
//! ```text
//! pakket-webhooks serve --cert /tls/tls.crt --key /tls/tls.key \
//!     --record-key-file /etc/pakket/record-key/key               serve over TLS on :8443
//! pakket-webhooks configurations                                 print deploy/'s webhook configurations
//! pakket-webhooks bootstrap --service pakket-webhooks --write-to /tls \
//!     --configuration pakket-webhooks                            the record key, CA and serving certificates
//! pakket-webhooks local [--name NAME] [--context CTX]             serve on 127.0.0.1, registered by URL
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kube::config::{Config, KubeConfigOptions};
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
use pakket_webhooks::{Settings, config, tls};
use tokio::signal::unix::{Signal, SignalKind, signal};

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
        /// The key that seals requester records (at least 32 bytes; the
        /// same Secret the provisioners mount).
        #[arg(long, env = "PAKKET_RECORD_KEY_FILE")]
        record_key_file: PathBuf,
        /// A user whose writes may carry someone else's sealed requester
        /// record (a controller that writes on people's behalf, such as
        /// `system:serviceaccount:pakket-system:pakket-resolveset`);
        /// repeatable.
        #[arg(long = "delegate", value_name = "USER")]
        delegates: Vec<String>,
    },
    /// Print the Validating- and MutatingWebhookConfiguration of deploy/.
    Configurations,
    /// Make (once) or reuse what an installation needs and no manifest may
    /// carry: the record key, a private CA, a serving certificate per
    /// Service (issued again within 30 days of its end), and the CA as
    /// caBundle of the named webhook configurations. The webhook Pods run
    /// it as an init container.
    Bootstrap {
        /// The namespace of the Secrets and Services.
        #[arg(long, env = "POD_NAMESPACE", default_value = "pakket-system")]
        namespace: String,
        /// A Service that gets a serving certificate (Secret
        /// `<service>-tls`); repeatable. The first one's pair is written to
        /// --write-to. None (and no --configuration): the record key only,
        /// for certificates from cert-manager.
        #[arg(long = "service", value_name = "NAME")]
        services: Vec<String>,
        /// The folder that gets the first Service's tls.crt, tls.key and
        /// ca.crt (the server's --cert and --key).
        #[arg(long)]
        write_to: Option<PathBuf>,
        /// The folder that gets the record key (file `key`, the server's
        /// --record-key-file).
        #[arg(long)]
        record_key_to: Option<PathBuf>,
        /// Webhook configurations (Validating and Mutating of that name)
        /// that get the CA as caBundle; repeatable.
        #[arg(long = "configuration", value_name = "NAME")]
        configurations: Vec<String>,
    },
    /// Serve on 127.0.0.1 for a cluster without the in-cluster deployment
    /// (a loopback control plane): a throwaway CA, configurations registered
    /// by URL, removed again on SIGTERM or Ctrl-C.
    ///
    /// Prints one line once the apiserver calls the server:
    /// `webhooks on https://127.0.0.1:PORT, registered as ...`.
    Local {
        /// Suffix of the configurations' name: pakket-webhooks-<NAME>.
        #[arg(long, default_value = "local")]
        name: String,
        /// The kubeconfig context (default: its current context); the
        /// kubeconfig is $KUBECONFIG or ~/.kube/config, as for kubectl.
        #[arg(long)]
        context: Option<String>,
        /// Only objects with these labels go to the webhooks
        /// (`key=value[,key=value]`); default: all.
        #[arg(long, short = 'l', value_name = "LABELS", value_parser = parse_labels)]
        selector: Option<BTreeMap<String, String>>,
        /// Seconds a "yes" from a SubjectAccessReview is reused (0: never).
        #[arg(long, default_value_t = 10)]
        access_cache_seconds: u64,
        /// The key that seals requester records; default: a fresh one,
        /// whose file is printed so provisioners can be given it.
        #[arg(long)]
        record_key_file: Option<PathBuf>,
        /// A user whose writes may carry someone else's sealed requester
        /// record (a controller run by hand that writes on people's
        /// behalf, as the package provisioner does); repeatable.
        #[arg(long = "delegate", value_name = "USER")]
        delegates: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs on stderr: stdout is for what `configurations` and `local` print.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Configurations => print!("{}", config::deployed_yaml()?),
        Command::Bootstrap {
            namespace,
            services,
            write_to,
            record_key_to,
            configurations,
        } => {
            let client = kube::Client::try_default()
                .await
                .context("connecting to the apiserver (in-cluster config or KUBECONFIG)")?;
            let request = pakket_webhooks::bootstrap::Request {
                namespace,
                services,
                write_to,
                record_key_to,
                configurations,
            };
            let outcome = pakket_webhooks::bootstrap::run(&client, &request).await?;
            tracing::info!(
                written = ?outcome.written,
                configurations = ?outcome.configurations,
                "bootstrap done"
            );
        }
        Command::Serve {
            listen,
            cert,
            key,
            reload_seconds,
            access_cache_seconds,
            record_key_file,
            delegates,
        } => {
            let record_key = pakket_api::RecordKey::read(&record_key_file)
                .context("the record key (--record-key-file)")?;
            let client = kube::Client::try_default()
                .await
                .context("connecting to the apiserver (in-cluster config or KUBECONFIG)")?;
            let settings = Settings {
                listen,
                cert: tls::CertFiles { cert, key },
                reload_interval: Duration::from_secs(reload_seconds.max(1)),
                access_cache_ttl: Duration::from_secs(access_cache_seconds),
                record_key,
                delegates,
            };
            let mut shutdown = Shutdown::listen()?;
            let mut running = pakket_webhooks::start(client, settings).await?;
            tokio::select! {
                () = shutdown.wait() => tracing::info!("stopping"),
                () = running.wait() => anyhow::bail!("the server stopped on its own"),
            }
            running.stop().await;
        }
        Command::Local {
            name,
            context,
            selector,
            access_cache_seconds,
            record_key_file,
            delegates,
        } => {
            let mut options = match selector {
                Some(labels) => LocalOptions::for_labels(name, labels),
                None => LocalOptions {
                    name,
                    ..LocalOptions::default()
                },
            };
            options.access_cache_ttl = Duration::from_secs(access_cache_seconds);
            options.record_key_file = record_key_file;
            options.delegates = delegates;
            local(context, options).await?
        }
    }
    Ok(())
}

/// `pakket-webhooks local`: runs [`LocalWebhooks`] until a signal, then
/// removes its configurations.
async fn local(context: Option<String>, options: LocalOptions) -> anyhow::Result<()> {
    let kubeconfig = KubeConfigOptions {
        context: context.clone(),
        ..KubeConfigOptions::default()
    };
    let client_config = Config::from_kubeconfig(&kubeconfig)
        .await
        .with_context(|| {
            format!(
                "reading the kubeconfig ($KUBECONFIG or ~/.kube/config{})",
                context
                    .map(|c| format!(", context {c}"))
                    .unwrap_or_default()
            )
        })?;
    let client = kube::Client::try_from(client_config).context("building the API client")?;
    let mut shutdown = Shutdown::listen()?;
    let webhooks = LocalWebhooks::start(client, options).await?;
    let name = webhooks.configuration_name();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "webhooks on {}, registered as validatingwebhookconfiguration/{name} and mutatingwebhookconfiguration/{name}; record key in {}",
        webhooks.url(),
        webhooks.record_key_file().display()
    )?;
    stdout.flush()?;
    drop(stdout);
    shutdown.wait().await;
    tracing::info!("removing the webhook configurations, then stopping");
    webhooks.stop().await?;
    Ok(())
}

/// `key=value[,key=value]`, as in `kubectl -l` but equality only.
fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    text.split(',')
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() && !key.ends_with('!') => {
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            }
            _ => Err(format!(
                "{pair:?} is not key=value; write e.g. --selector test.pakket.dev/scope=demo"
            )),
        })
        .collect()
}

/// SIGTERM (the kubelet stopping the pod) and SIGINT (Ctrl-C), caught from
/// the moment this is made: one that arrives while starting waits for
/// [`Shutdown::wait`] instead of killing the process half-registered.
struct Shutdown {
    term: Signal,
    interrupt: Signal,
}

impl Shutdown {
    fn listen() -> anyhow::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate()).context("installing a SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing a SIGINT handler")?,
        })
    }

    /// Completes on the first SIGTERM or SIGINT.
    async fn wait(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse_as_equality_pairs_only() {
        assert_eq!(
            parse_labels("test.pakket.dev/scope=t-1,tier=web").unwrap(),
            BTreeMap::from([
                ("test.pakket.dev/scope".to_owned(), "t-1".to_owned()),
                ("tier".to_owned(), "web".to_owned()),
            ])
        );
        for bad in ["tier", "tier!=web", "=web", "a=b,"] {
            assert!(
                parse_labels(bad).unwrap_err().contains("is not key=value"),
                "{bad}"
            );
        }
    }
}
