//! `pakket-dev`: a real local control plane for the demo and for hacking.
//!
//! ```text
//! pakket-dev up       start (or find) the control plane; prints `export` lines
//!   --nodes N         also kube-scheduler and kwok with N fake nodes, so Pods run
//!   --real-node       also a real node (containerd, kubelet, kube-proxy; root)
//! pakket-dev trust-registry HOST:PORT
//!                     let the real node pull from that plain-HTTP registry
//! pakket-dev env      print the `export` lines again (eval "$(pakket-dev env)")
//! pakket-dev status   components, pids, memory, start time
//! pakket-dev down     stop it
//! pakket-dev build    build the pinned binaries into the cache; print their folder
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use pakket_controlplane::{Binaries, Component, ControlPlane, Options, State, rss_kib};

#[derive(Parser)]
#[command(
    version,
    about = "A real etcd + kube-apiserver + kube-controller-manager on loopback (and kube-scheduler + kwok with --nodes)"
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
    Up {
        /// Also run kube-scheduler and kwok with this many fake nodes, so
        /// Deployments become Available (kwok reports their Pods Running and
        /// Ready; nothing is pulled or run). 0: no scheduler, Pods stay Pending.
        #[arg(long, default_value_t = 0)]
        nodes: usize,
        /// Also run a real node: containerd 1.6 and runc (Debian's), a
        /// kubelet and kube-proxy, Pods on a local bridge whose traffic
        /// never leaves this machine. Needs root. The apiserver then
        /// listens on the node's address (10.244.0.1), not loopback.
        #[arg(long)]
        real_node: bool,
    },
    /// Let the real node pull images from the plain-HTTP registry at
    /// HOST:PORT (a loopback registry, `dev/registry/start.sh`).
    TrustRegistry {
        /// The registry's address, e.g. 127.0.0.1:5000.
        address: String,
    },
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
        Command::Up { nodes, real_node } => {
            if let Some(running) = ControlPlane::attach(&cli.dir)? {
                eprintln!("already running in {}", cli.dir.display());
                let running_nodes = running.state().nodes.len();
                if running_nodes < nodes {
                    // Scripts rely on the nodes they asked for: a silent
                    // shortfall would surface later as Pods stuck Pending.
                    // More nodes than asked for serve them just as well.
                    bail!(
                        "the control plane in {} runs with {running_nodes} node(s), fewer than {nodes}; \
                         stop it with `pakket-dev down` and start it again with --nodes {nodes}",
                        cli.dir.display()
                    );
                }
                if real_node && running.state().real_node.is_none() {
                    bail!(
                        "the control plane in {} runs without a real node; stop it with `pakket-dev down` and start it again with --real-node",
                        cli.dir.display()
                    );
                }
                print_env(running.state());
                return Ok(());
            }
            if let Some(leftover) = ControlPlane::load(&cli.dir)? {
                // A control plane with a dead component: stop what survives
                // rather than leave it running unseen beside the new one.
                leftover.stop(false)?;
            }
            if cli.dir.exists() {
                // Left over from a control plane that is no longer running.
                std::fs::remove_dir_all(&cli.dir)
                    .with_context(|| format!("removing stale {}", cli.dir.display()))?;
            }
            let options = Options {
                dir: cli.dir.clone(),
                stop_with_this_process: false,
                nodes,
                real_node,
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
        Command::TrustRegistry { address } => {
            let control_plane = require(&cli.dir)?;
            if control_plane.state().real_node.is_none() {
                bail!(
                    "the control plane in {} has no real node (start it with --real-node)",
                    cli.dir.display()
                );
            }
            pakket_controlplane::real_node::trust_plain_http_registry(&cli.dir, &address)?;
        }
        Command::Status => status(&cli.dir)?,
        Command::Down { keep } => match ControlPlane::load(&cli.dir)? {
            Some(control_plane) => {
                let exited = names(&control_plane.exited());
                control_plane.stop(!keep)?;
                eprintln!("stopped the control plane in {}", cli.dir.display());
                if !exited.is_empty() {
                    eprintln!("({exited} had already exited)");
                }
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

/// Prints the status, also of a control plane with a dead component (which
/// `attach` would not find), and fails naming the dead.
fn status(dir: &Path) -> anyhow::Result<()> {
    let Some(control_plane) = ControlPlane::load(dir)? else {
        bail!(
            "no control plane is running in {}; start one with `pakket-dev up`",
            dir.display()
        );
    };
    let exited = control_plane.exited();
    print_status(control_plane.state(), &exited);
    if !exited.is_empty() {
        bail!(
            "{} exited (see its log); restart with `pakket-dev down` and `pakket-dev up`",
            names(&exited)
        );
    }
    Ok(())
}

fn names(components: &[&Component]) -> String {
    components
        .iter()
        .map(|component| component.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_env(state: &State) {
    println!("export KUBECONFIG={}", state.kubeconfig.display());
    println!("export PATH={}:$PATH", state.bin_dir.display());
}

fn print_status(state: &State, exited: &[&Component]) {
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
            .map(|u| match u.groups.get(1..).unwrap_or_default() {
                [] => u.name.clone(),
                teams => format!("{} ({})", u.name, teams.join(", ")),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !state.nodes.is_empty() {
        println!(
            "nodes       {} (kwok; all Ready after {} ms)",
            state.nodes.join(", "),
            state.nodes_ready_millis
        );
    }
    if let Some(node) = &state.real_node {
        println!(
            "real node   {} at {} (Ready after {} ms; containerd at {})",
            pakket_controlplane::real_node::NODE_NAME,
            pakket_controlplane::real_node::NODE_IP,
            node.ready_millis,
            node.containerd_socket.display()
        );
    }
    let mut total = 0;
    for component in &state.components {
        if exited.iter().any(|dead| dead.pid == component.pid) {
            println!(
                "{:<24} pid {:<8} EXITED        log {}",
                component.name,
                component.pid,
                component.log.display()
            );
            continue;
        }
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
