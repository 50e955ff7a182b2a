//! Bringing one control plane up, finding it again, and taking it down.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::{Deserialize, Serialize};

use crate::binaries::{Binaries, NodeBinaries};
use crate::error::{Error, Result};
use crate::kubeconfig::{self, TestUser};
use crate::launch::Launch;
use crate::nodes;
use crate::pki::Pki;
use crate::ports::Ports;
use crate::process::{self, Component};
use crate::real_node::RealNodeBinaries;

/// How to start a control plane.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory for certificates, etcd data, logs and kubeconfig. Created if missing.
    pub dir: PathBuf,
    /// Stop the control plane and remove `dir` when this process exits. Tests
    /// set it; `pakket-dev up` does not, so the cluster outlives the command.
    pub stop_with_this_process: bool,
    /// How many fake nodes to run. With 0 (the default) there is no
    /// scheduler and Pods stay Pending; with N > 0 kube-scheduler and kwok
    /// start too, and `start` returns once N nodes are Ready.
    pub nodes: usize,
    /// Run a real node too ([`crate::real_node`]): containerd, a kubelet
    /// and kube-proxy, so Pods really run. Needs root; the apiserver then
    /// listens on the node's address instead of loopback. Not with
    /// `stop_with_this_process` (its watchdog cannot unmount containers).
    pub real_node: bool,
}

/// Everything needed to use or stop a running control plane, kept in
/// `<dir>/state.json` so another process (`pakket-dev down`) can find it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    /// The control plane's directory.
    pub dir: PathBuf,
    /// Kubeconfig with the `admin` context and one context per test user.
    pub kubeconfig: PathBuf,
    /// The apiserver URL.
    pub server: String,
    /// The loopback ports in use.
    pub ports: Ports,
    /// etcd, kube-apiserver, kube-controller-manager, then kube-scheduler
    /// and kwok when there are nodes; in start order.
    pub components: Vec<Component>,
    /// The non-admin users.
    pub users: Vec<TestUser>,
    /// The folder of the pinned binaries, kubectl included.
    pub bin_dir: PathBuf,
    /// Pid of the watchdog that stops everything when the owner exits.
    pub watchdog: Option<u32>,
    /// Wall time from the call to `start` to ready, in milliseconds.
    pub start_millis: u64,
    /// Of which: from launching etcd to the apiserver's `/readyz` answering `ok`.
    #[serde(default)]
    pub apiserver_ready_millis: u64,
    /// The fake nodes kwok plays (`kwok-node-0` …); empty without `--nodes`.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// The folder of kube-scheduler and kwok, when there are nodes.
    #[serde(default)]
    pub nodes_bin_dir: Option<PathBuf>,
    /// From launching etcd to every node Ready; 0 without nodes.
    #[serde(default)]
    pub nodes_ready_millis: u64,
    /// The real node, when one runs.
    #[serde(default)]
    pub real_node: Option<crate::real_node::RealNodeState>,
}

/// A running control plane.
#[derive(Debug)]
pub struct ControlPlane {
    state: State,
    /// The processes this process started, reaped on `stop`.
    children: Vec<Child>,
}

const STATE_FILE: &str = "state.json";
const ATTEMPTS: usize = 3;
/// How long a component may take to shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

impl ControlPlane {
    /// Builds the binaries if needed, starts etcd, kube-apiserver and
    /// kube-controller-manager (and, with `options.nodes > 0`, kube-scheduler
    /// and kwok), and returns when the API is ready, the controller manager
    /// has created the `default` ServiceAccount and every node is Ready.
    pub async fn start(options: Options) -> Result<Self> {
        let began = Instant::now();
        if options.real_node && options.stop_with_this_process {
            return Err(Error::Config(
                "a real node is stopped with `stop`, never by the watchdog (which cannot unmount its containers)".into(),
            ));
        }
        let binaries = ensure(Binaries::ensure, "build.sh").await?;
        let node_binaries = match (options.nodes, options.real_node) {
            (0, false) => None,
            _ => Some(ensure(NodeBinaries::ensure, "build-nodes.sh").await?),
        };
        let real_node_binaries = match options.real_node {
            true => Some(ensure(RealNodeBinaries::ensure, "build-real-node.sh").await?),
            false => None,
        };
        // The bridge first: the apiserver listens on its address.
        let ip_forward_before = match &real_node_binaries {
            Some(binaries) => Some(crate::real_node::network_up(
                &options.dir.join("node"),
                binaries,
            )?),
            None => None,
        };
        let node_names = nodes::names(options.nodes);
        let dir = &options.dir;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(Error::io("creating", &logs))?;
        let pki = Pki::generate(&dir.join("pki"))?;
        let users = kubeconfig::test_users();
        let token_file = dir.join("tokens.csv");
        kubeconfig::write_token_file(&token_file, &users)?;

        let mut attempt = 0;
        loop {
            attempt += 1;
            let ports = Ports::pick().map_err(Error::io("choosing ports on", "127.0.0.1"))?;
            let launch = Launch {
                binaries: &binaries,
                nodes: node_binaries
                    .as_ref()
                    .map(|found| (found, node_names.as_slice())),
                dir,
                logs: &logs,
                pki: &pki,
                token_file: &token_file,
                ports,
                real_node: real_node_binaries
                    .as_ref()
                    .zip(ip_forward_before.as_deref()),
            };
            match launch.run(&users).await {
                Ok((mut state, children)) => {
                    let pids: Vec<u32> = state
                        .components
                        .iter()
                        .map(|component| component.pid)
                        .collect();
                    if options.stop_with_this_process {
                        state.watchdog = Some(process::watchdog(std::process::id(), &pids, dir)?);
                    }
                    state.start_millis = began.elapsed().as_millis() as u64;
                    let control_plane = Self { state, children };
                    control_plane.save()?;
                    return Ok(control_plane);
                }
                Err((error, children)) => {
                    stop_children(children);
                    let lost_port_race = matches!(&error, Error::Exited { tail, .. } if tail.contains("address already in use"));
                    if !lost_port_race || attempt == ATTEMPTS {
                        if let (Some(binaries), Some(before)) =
                            (&real_node_binaries, &ip_forward_before)
                        {
                            let _ = crate::real_node::teardown(&crate::real_node::RealNodeState {
                                containerd_socket: dir.join("node/containerd/containerd.sock"),
                                ip_forward_before: before.clone(),
                                dir: dir.join("node"),
                                kube_proxy: binaries.path("kube-proxy"),
                                crictl: binaries.path("crictl"),
                                ready_millis: 0,
                            });
                        }
                        return Err(error);
                    }
                }
            }
        }
    }

    /// Finds the control plane whose state is in `dir`, if all of its
    /// components still run.
    pub fn attach(dir: &Path) -> Result<Option<Self>> {
        Ok(Self::load(dir)?.filter(|found| found.exited().is_empty()))
    }

    /// The control plane whose state is in `dir`, whether or not all of its
    /// components still run: with one of five dead, `stop` must still reach
    /// the other four.
    pub fn load(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(STATE_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let state: State = serde_json::from_str(&text).map_err(|error| {
            Error::Config(format!(
                "{}: {error}; it was written by another version of pakket-dev: \
                 stop the processes it lists and remove {}",
                path.display(),
                dir.display()
            ))
        })?;
        Ok(Some(Self {
            state,
            children: Vec::new(),
        }))
    }

    /// The components that no longer run.
    pub fn exited(&self) -> Vec<&Component> {
        self.state
            .components
            .iter()
            .filter(|component| !process::runs(component.pid, &component.name))
            .collect()
    }

    /// Stops every component (the last started first: kwok, scheduler,
    /// controller manager, apiserver, etcd) and the watchdog. The directory
    /// stays, with its logs, unless `remove_dir`.
    pub fn stop(mut self, remove_dir: bool) -> Result<()> {
        if let Some(watchdog) = self.state.watchdog {
            process::terminate(watchdog, Duration::from_millis(100));
        }
        if let Some(node) = &self.state.real_node {
            // The kubelet first (it would start the Pods again), then the
            // Pods, through containerd, which still runs.
            if let Some(kubelet) = self.state.components.iter().find(|c| c.name == "kubelet")
                && process::runs(kubelet.pid, "kubelet")
            {
                match self
                    .children
                    .iter()
                    .position(|child| child.id() == kubelet.pid)
                {
                    Some(at) => {
                        let mut child = self.children.remove(at);
                        process::terminate_child(&mut child, STOP_GRACE);
                    }
                    None => process::terminate(kubelet.pid, STOP_GRACE),
                }
            }
            if let Err(error) = crate::real_node::stop_pods(node) {
                eprintln!("stopping the real node's Pods: {error}; killing them instead");
            }
        }
        if self.children.is_empty() {
            // Only pids still running their component's binary: the pid of
            // one that died long ago may belong to another process by now.
            for component in self.state.components.iter().rev() {
                if process::runs(component.pid, &component.name) {
                    process::terminate(component.pid, STOP_GRACE);
                }
            }
        } else {
            stop_children(std::mem::take(&mut self.children));
        }
        // Containers, mounts and the network go before the folder does.
        let real_node = self
            .state
            .real_node
            .as_ref()
            .map(crate::real_node::teardown);
        let _ = std::fs::remove_file(self.state.dir.join(STATE_FILE));
        if remove_dir {
            // A control plane whose folder sits inside this one (dev/test.sh
            // keeps its second there) would lose its state with the folder
            // and run on unseen: it is stopped first.
            stop_nested(&self.state.dir)?;
            std::fs::remove_dir_all(&self.state.dir)
                .map_err(Error::io("removing", &self.state.dir))?;
        }
        real_node.unwrap_or(Ok(()))
    }

    /// Stops component `name` (`etcd`, `kube-apiserver`, …) and starts it
    /// again with the command line it had, then waits until the apiserver
    /// answers `/readyz` again: what a crash and a restart by a supervisor
    /// look like to everything using the cluster. Returns how long it
    /// took. Fault tests use it; nothing else should.
    pub async fn restart(&mut self, name: &str) -> Result<Duration> {
        let began = Instant::now();
        let index = self
            .state
            .components
            .iter()
            .position(|component| component.name == name)
            .ok_or_else(|| Error::Config(format!("no component {name} runs here")))?;
        let old = self.state.components[index].clone();
        let cmdline_path = PathBuf::from(format!("/proc/{}/cmdline", old.pid));
        let cmdline = std::fs::read(&cmdline_path).map_err(Error::io("reading", &cmdline_path))?;
        let mut words = cmdline
            .split(|byte| *byte == 0)
            .filter(|word| !word.is_empty())
            .map(|word| String::from_utf8_lossy(word).into_owned());
        let program = PathBuf::from(
            words
                .next()
                .ok_or_else(|| Error::Config(format!("{name} has no command line")))?,
        );
        let args: Vec<String> = words.collect();
        match self.children.iter().position(|child| child.id() == old.pid) {
            Some(at) => {
                let mut child = self.children.remove(at);
                process::terminate_child(&mut child, STOP_GRACE);
            }
            None => process::terminate(old.pid, STOP_GRACE),
        }
        let logs = old
            .log
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.state.dir.join("logs"));
        let known: &'static str = match name {
            "etcd" => "etcd",
            "kube-apiserver" => "kube-apiserver",
            "kube-controller-manager" => "kube-controller-manager",
            "kube-scheduler" => "kube-scheduler",
            "kwok" => "kwok",
            other => return Err(Error::Config(format!("{other} is not a component"))),
        };
        let (component, child) = process::spawn(known, &program, &args, &logs)?;
        self.children.push(child);
        self.state.components[index] = component;
        // The watchdog knows the old pid: give it the new one.
        if let Some(watchdog) = self.state.watchdog {
            process::terminate(watchdog, Duration::from_millis(100));
            let pids: Vec<u32> = self.state.components.iter().map(|c| c.pid).collect();
            self.state.watchdog = Some(process::watchdog(
                std::process::id(),
                &pids,
                &self.state.dir,
            )?);
        }
        self.save()?;
        let client = self.client("admin").await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|error| Error::Config(error.to_string()))?;
            if let Ok(answer) = client.request_text(request).await
                && answer.trim() == "ok"
            {
                return Ok(began.elapsed());
            }
            if Instant::now() > deadline {
                return Err(Error::Config(format!(
                    "the apiserver did not answer /readyz within 60 s of restarting {name}: {}",
                    process::tail(&self.state.components[index].log, 20)
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// What is running and where.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The kubeconfig file (contexts `admin`, `alice`, `bob`, `carol`).
    pub fn kubeconfig(&self) -> &Path {
        &self.state.kubeconfig
    }

    /// A client acting as the kubeconfig context `context`.
    pub async fn client(&self, context: &str) -> Result<Client> {
        client_for(&self.state.kubeconfig, context).await
    }

    fn save(&self) -> Result<()> {
        let path = self.state.dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(&self.state)
            .map_err(|error| Error::Config(error.to_string()))?;
        std::fs::write(&path, text).map_err(Error::io("writing", &path))
    }
}

/// Runs a blocking binaries lookup (which may build for minutes) off the runtime.
async fn ensure<T: Send + 'static>(find: fn() -> Result<T>, script: &'static str) -> Result<T> {
    tokio::task::spawn_blocking(find)
        .await
        .map_err(|error| Error::Build {
            script,
            detail: error.to_string(),
        })?
}

/// A client for one context of a kubeconfig file.
pub async fn client_for(kubeconfig: &Path, context: &str) -> Result<Client> {
    Ok(Client::try_from(config_for(kubeconfig, context).await?)?)
}

/// The client configuration of `context` in `kubeconfig`, for a client
/// built with layers of its own (a provisioner's, which counts requests).
pub async fn config_for(kubeconfig: &Path, context: &str) -> Result<Config> {
    let file =
        Kubeconfig::read_from(kubeconfig).map_err(|error| Error::Config(error.to_string()))?;
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|error| Error::Config(error.to_string()))
}

/// Stops, folder and all, every control plane whose state is in a direct
/// subfolder of `dir` (deeper ones go with theirs, by the same rule).
fn stop_nested(dir: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir()
            && let Some(nested) = ControlPlane::load(&path)?
        {
            nested.stop(true)?;
        }
    }
    Ok(())
}

fn stop_children(children: Vec<Child>) {
    for mut child in children.into_iter().rev() {
        process::terminate_child(&mut child, STOP_GRACE);
    }
}
