//! `pakket-dev`: a real local control plane for the demo and for hacking.
//!
//! ```text
//! pakket-dev up       start (or find) the control plane; prints `export` lines
//! pakket-dev env      print the `export` lines again (eval "$(pakket-dev env)")
//! pakket-dev status   components, pids, memory, start time
//! pakket-dev down     stop it
//! pakket-dev build    build the pinned binaries into the cache; print their folder
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use pakket_controlplane::{Binaries, ControlPlane, Options, State, rss_kib};

#[derive(Parser)]
#[command(
    version,
    about = "A real etcd + kube-apiserver + kube-controller-manager on loopback"
)]
struct Cli {
    /// Where the control plane keeps its certificates, data, logs and kubeconfig.
    #[arg(long, global = true, env = "PAKKET_DEV_DIR", default_value_os_t = default_dir())]
    dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the control plane, or report the one already running in --dir.
    Up,
    /// Print shell `export` lines for KUBECONFIG and the pinned kubectl.
    Env,
    /// Show what runs, its memory and how long it took to start.
    Status,
    /// Stop the control plane.
    Down {
        /// Keep the directory (logs, etcd data) after stopping.
        #[arg(long)]
        keep: bool,
    },
    /// Build the pinned binaries (if not cached) and print their folder.
    Build,
}

fn default_dir() -> PathBuf {
    std::env::temp_dir().join("pakket-dev")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Build => println!("{}", Binaries::ensure()?.dir().display()),
        Command::Up => {
            if let Some(running) = ControlPlane::attach(&cli.dir)? {
                eprintln!("already running in {}", cli.dir.display());
                print_env(running.state());
                return Ok(());
            }
            if cli.dir.exists() {
                // Left over from a control plane that is no longer running.
                std::fs::remove_dir_all(&cli.dir)
                    .with_context(|| format!("removing stale {}", cli.dir.display()))?;
            }
            let options = Options {
                dir: cli.dir.clone(),
                stop_with_this_process: false,
            };
            let control_plane = ControlPlane::start(options).await?;
            let state = control_plane.state();
            eprintln!(
                "control plane ready at {} in {} ms",
                state.server, state.start_millis
            );
            print_env(state);
        }
        Command::Env => print_env(require(&cli.dir)?.state()),
        Command::Status => print_status(require(&cli.dir)?.state()),
        Command::Down { keep } => match ControlPlane::attach(&cli.dir)? {
            Some(control_plane) => {
                control_plane.stop(!keep)?;
                eprintln!("stopped the control plane in {}", cli.dir.display());
            }
            None => eprintln!("no control plane is running in {}", cli.dir.display()),
        },
    }
    Ok(())
}

fn require(dir: &Path) -> anyhow::Result<ControlPlane> {
    match ControlPlane::attach(dir)? {
        Some(control_plane) => Ok(control_plane),
        None => bail!(
            "no control plane is running in {}; start one with `pakket-dev up`",
            dir.display()
        ),
    }
}

fn print_env(state: &State) {
    println!("export KUBECONFIG={}", state.kubeconfig.display());
    println!("export PATH={}:$PATH", state.bin_dir.display());
}

fn print_status(state: &State) {
    println!("server      {}", state.server);
    println!("kubeconfig  {}", state.kubeconfig.display());
    println!(
        "started in  {} ms (apiserver ready after {} ms)",
        state.start_millis, state.apiserver_ready_millis
    );
    println!(
        "users       admin (system:masters), {}",
        state
            .users
            .iter()
            .map(|u| u.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut total = 0;
    for component in &state.components {
        let rss = rss_kib(component.pid).unwrap_or(0);
        total += rss;
        println!(
            "{:<24} pid {:<8} rss {:>6.1} MiB  log {}",
            component.name,
            component.pid,
            rss as f64 / 1024.0,
            component.log.display()
        );
    }
    println!(
        "{:<24} {:<12} rss {:>6.1} MiB",
        "total",
        "",
        total as f64 / 1024.0
    );
}
