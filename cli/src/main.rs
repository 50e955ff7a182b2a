//! `pakket`: Pakket's command line.
//!
//! `pakket resolve` runs the dependency engine on catalog files alone, with
//! no cluster: what would be installed for these requests, or why nothing can be;
//! with `--server` a cluster's resolver API answers the same request.
//! `pakket bundle push` and `pakket image push` build reproducible OCI
//! images (bundles, and static programs for Pakket's own images) and push
//! them with no Docker daemon.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bundle;
mod bundle_rbac;
mod elf;
mod image;
mod oci_image;
mod registry_push;
mod resolve;

#[derive(Parser)]
#[command(
    name = "pakket",
    version,
    about = "Pakket: pluggable provisioners for Kubernetes content"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Resolve requests against File-Based Catalogs (no cluster needed), or
    /// against a cluster's Catalogs through its resolver API (--server);
    /// both print the same.
    ///
    /// Exit status: 0 resolved, 1 no solution (the explanation is printed),
    /// 2 bad input (the message names the file, line or field), or a
    /// server that refused or could not be reached.
    Resolve(resolve::ResolveArgs),
    /// Build and push bundle images (`pakket bundle push DIR REF`).
    Bundle(bundle::BundleArgs),
    /// Build and push minimal images of static programs
    /// (`pakket image push REF --binary PATH…`).
    Image(image::ImageArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Resolve(args) => resolve::run(&args),
        Command::Bundle(args) => bundle::run(&args),
        Command::Image(args) => image::run(&args),
    }
}
