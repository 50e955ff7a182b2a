//! `--server URL [--token T] [--server-ca FILE]`: a cluster's resolver API,
//! as `graph` and `why` ask it (the same flags as `pakket resolve --server`).

use std::path::{Path, PathBuf};

use clap::Args;
use pakket_resolve_client::{ClientError, ResolverClient};

/// The flags that point at a resolver API.
#[derive(Args, Clone, Debug, Default)]
pub struct ResolverArgs {
    /// Ask a cluster's resolver API (`https://HOST:PORT`): `graph` reads the
    /// cluster's Catalogs instead of files; `why` asks what would satisfy
    /// missing or conflicting dependencies.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The bearer token sent to --server (a cluster user's token).
    #[arg(
        long,
        env = "PAKKET_TOKEN",
        hide_env_values = true,
        requires = "server"
    )]
    pub token: Option<String>,
    /// A CA certificate (PEM) to trust for --server besides the system's.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub server_ca: Option<PathBuf>,
}

/// A resolver API to call.
pub struct Server<'a> {
    /// `https://HOST:PORT` (or `http://` on loopback).
    pub url: &'a str,
    token: Option<&'a str>,
    ca: Option<&'a Path>,
}

impl ResolverArgs {
    /// The server the flags name, if they name one.
    pub fn server(&self) -> Option<Server<'_>> {
        Some(Server {
            url: self.server.as_deref()?,
            token: self.token.as_deref(),
            ca: self.server_ca.as_deref(),
        })
    }
}

impl Server<'_> {
    /// A client of it.
    pub fn client(&self) -> Result<ResolverClient, ClientError> {
        ResolverClient::new(self.url, self.token.map(str::to_owned), self.ca)
    }
}
