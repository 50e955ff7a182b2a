//! The one control plane a test process uses.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kube::Client;
use pakket_controlplane::{Binaries, ControlPlane, Options};

/// A running control plane as tests see it.
#[derive(Debug)]
pub struct TestCluster {
    kubeconfig: PathBuf,
    bin_dir: PathBuf,
    /// Held so the control plane this process started lives as long as the
    /// process; its watchdog stops it when the process exits.
    _owned: Option<ControlPlane>,
}

static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();

/// The shared control plane: the one named by `PAKKET_TEST_KUBECONFIG`, or one
/// this process starts on first use (stopped by a watchdog when it exits).
///
/// Panics with the start-up error, which names the component and its log.
pub fn cluster() -> &'static TestCluster {
    let result = CLUSTER.get_or_init(|| {
        // Starting is async but tests each run on their own runtime; a thread
        // with a runtime of its own keeps the start-up independent of both.
        std::thread::spawn(connect_or_start)
            .join()
            .unwrap_or_else(|_| Err("control plane start-up panicked".to_owned()))
    });
    match result {
        Ok(cluster) => cluster,
        Err(error) => panic!("no control plane for tests: {error}"),
    }
}

fn connect_or_start() -> Result<TestCluster, String> {
    if let Some(kubeconfig) = std::env::var_os("PAKKET_TEST_KUBECONFIG") {
        let binaries = Binaries::ensure().map_err(|error| error.to_string())?;
        return Ok(TestCluster {
            kubeconfig: PathBuf::from(kubeconfig),
            bin_dir: binaries.dir().to_path_buf(),
            _owned: None,
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let dir = std::env::temp_dir().join(format!("pakket-test-{}", std::process::id()));
    // One fake node (kube-scheduler + kwok), as `dev/test.sh` starts the
    // shared control plane, so tests that wait for Deployments to become
    // Available behave the same either way.
    let options = Options {
        dir,
        stop_with_this_process: true,
        nodes: 1,
        real_node: false,
    };
    let control_plane = runtime
        .block_on(ControlPlane::start(options))
        .map_err(|error| error.to_string())?;
    Ok(TestCluster {
        kubeconfig: control_plane.kubeconfig().to_path_buf(),
        bin_dir: control_plane.state().bin_dir.clone(),
        _owned: Some(control_plane),
    })
}

impl TestCluster {
    /// The kubeconfig (contexts `admin`, `alice`, `bob`, `carol`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client with `system:masters` rights, bound to the calling runtime.
    pub async fn admin(&self) -> Client {
        self.client_as(pakket_controlplane::ADMIN_CONTEXT).await
    }

    /// The client configuration of one of the users or `admin`, for a
    /// client built with layers of its own.
    pub async fn config_as(&self, context: &str) -> kube::Config {
        pakket_controlplane::config_for(&self.kubeconfig, context)
            .await
            .unwrap_or_else(|error| panic!("configuration for context {context}: {error}"))
    }

    /// A client acting as one of the users (`alice`, `bob`, `carol`) or `admin`.
    pub async fn client_as(&self, context: &str) -> Client {
        pakket_controlplane::client_for(&self.kubeconfig, context)
            .await
            .unwrap_or_else(|error| panic!("client for context {context}: {error}"))
    }

    /// The pinned kubectl, pointed at this control plane.
    pub fn kubectl(&self) -> Command {
        let mut command = Command::new(self.bin_dir.join("kubectl"));
        command.env("KUBECONFIG", &self.kubeconfig);
        command
    }
}
