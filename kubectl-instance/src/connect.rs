//! Reaching the cluster the way kubectl does: `--kubeconfig` (else
//! `$KUBECONFIG`, else `~/.kube/config`, else in-cluster), `--context`,
//! `--request-timeout`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use crate::error::Error;

/// The kubectl-style flags that choose the cluster and the identity.
#[derive(Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,
    /// How long to wait for one server response: `0` (no limit), `30s`, `2m`, `1h`.
    #[arg(long, global = true, value_name = "DURATION", default_value = "0", value_parser = parse_timeout)]
    request_timeout: Timeout,
}

/// A `--request-timeout`; `None` waits as long as the server takes.
#[derive(Clone, Copy, Debug)]
pub struct Timeout(Option<Duration>);

/// Parses kubectl's duration form: a number with `s`, `m` or `h`, bare
/// numbers being seconds.
fn parse_timeout(text: &str) -> Result<Timeout, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; write e.g. 30s, 2m or 0"))?;
    let seconds = match unit {
        "s" => value,
        "m" => value.saturating_mul(60),
        "h" => value.saturating_mul(3600),
        _ => return Err(format!("{text:?}: unit {unit:?} is not one of s, m, h")),
    };
    Ok(Timeout((seconds > 0).then(|| Duration::from_secs(seconds))))
}

impl ClusterArgs {
    /// A client for the chosen cluster, context and identity.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        let mut config = match (&self.kubeconfig, &self.context) {
            (Some(path), _) => {
                let file = Kubeconfig::read_from(path).map_err(|error| {
                    Error::Config(format!("--kubeconfig {}: {error}", path.display()))
                })?;
                Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|error| {
                        Error::Config(format!("--kubeconfig {}: {error}", path.display()))
                    })?
            }
            (None, Some(context)) => Config::from_kubeconfig(&options).await.map_err(|error| {
                Error::Config(format!(
                    "--context {context}: {error} (is $KUBECONFIG or ~/.kube/config the file that has it?)"
                ))
            })?,
            (None, None) => Config::infer().await.map_err(|error| {
                Error::Config(format!(
                    "no cluster configured: {error}; pass --kubeconfig or set $KUBECONFIG"
                ))
            })?,
        };
        if let Timeout(Some(limit)) = self.request_timeout {
            config.read_timeout = Some(limit);
            config.write_timeout = Some(limit);
            config.connect_timeout = Some(limit);
        }
        kube::Client::try_from(config)
            .map_err(|error| Error::Config(format!("building the API client: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_like_kubectl() {
        assert_eq!(parse_timeout("0").unwrap().0, None);
        assert_eq!(
            parse_timeout("30").unwrap().0,
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_timeout("2m").unwrap().0,
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_timeout("1h").unwrap().0,
            Some(Duration::from_secs(3600))
        );
        assert!(parse_timeout("5d").unwrap_err().contains("unit"));
        assert!(parse_timeout("soon").is_err());
    }
}
