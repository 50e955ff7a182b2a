//! Bringing one control plane up, finding it again, and taking it down.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde::{Deserialize, Serialize};

use crate::Binaries;
use crate::error::{Error, Result};
use crate::kubeconfig::{self, TestUser};
use crate::pki::Pki;
use crate::ports::Ports;
use crate::process::{self, Component};

/// How to start a control plane.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory for certificates, etcd data, logs and kubeconfig. Created if missing.
    pub dir: PathBuf,
    /// Stop the control plane and remove `dir` when this process exits. Tests
    /// set it; `pakket-dev up` does not, so the cluster outlives the command.
    pub stop_with_this_process: bool,
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
    /// etcd, kube-apiserver, kube-controller-manager, in start order.
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
}

/// A running control plane.
#[derive(Debug)]
pub struct ControlPlane {
    state: State,
    /// The processes this process started, reaped on `stop`.
    children: Vec<Child>,
}

const STATE_FILE: &str = "state.json";
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const ATTEMPTS: usize = 3;
/// How long a component may take to shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

impl ControlPlane {
    /// Builds the binaries if needed, starts etcd, kube-apiserver and
    /// kube-controller-manager, and returns when the API is ready and the
    /// controller manager has created the `default` ServiceAccount.
    pub async fn start(options: Options) -> Result<Self> {
        let began = Instant::now();
        let binaries = tokio::task::spawn_blocking(Binaries::ensure)
            .await
            .map_err(|error| Error::Build(error.to_string()))??;
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
                dir,
                logs: &logs,
                pki: &pki,
                token_file: &token_file,
                ports,
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
                        return Err(error);
                    }
                }
            }
        }
    }

    /// Finds the control plane whose state is in `dir`, if its apiserver still runs.
    pub fn attach(dir: &Path) -> Result<Option<Self>> {
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
        let running = state
            .components
            .iter()
            .all(|component| process::alive(component.pid));
        Ok(running.then_some(Self {
            state,
            children: Vec::new(),
        }))
    }

    /// Stops every component (controller manager first, etcd last) and the
    /// watchdog. The directory stays, with its logs, unless `remove_dir`.
    pub fn stop(mut self, remove_dir: bool) -> Result<()> {
        if let Some(watchdog) = self.state.watchdog {
            process::terminate(watchdog, Duration::from_millis(100));
        }
        if self.children.is_empty() {
            for component in self.state.components.iter().rev() {
                process::terminate(component.pid, STOP_GRACE);
            }
        } else {
            stop_children(std::mem::take(&mut self.children));
        }
        let _ = std::fs::remove_file(self.state.dir.join(STATE_FILE));
        if remove_dir {
            std::fs::remove_dir_all(&self.state.dir)
                .map_err(Error::io("removing", &self.state.dir))?;
        }
        Ok(())
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

/// A client for one context of a kubeconfig file.
pub async fn client_for(kubeconfig: &Path, context: &str) -> Result<Client> {
    let file =
        Kubeconfig::read_from(kubeconfig).map_err(|error| Error::Config(error.to_string()))?;
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|error| Error::Config(error.to_string()))?;
    Ok(Client::try_from(config)?)
}

fn stop_children(children: Vec<Child>) {
    for mut child in children.into_iter().rev() {
        process::terminate_child(&mut child, STOP_GRACE);
    }
}

/// One attempt at starting the components on one set of ports.
struct Launch<'a> {
    binaries: &'a Binaries,
    dir: &'a Path,
    logs: &'a Path,
    pki: &'a Pki,
    token_file: &'a Path,
    ports: Ports,
}

/// The processes one launch attempt has started so far.
#[derive(Default)]
struct Running {
    components: Vec<Component>,
    children: Vec<Child>,
}

impl Running {
    fn spawn(
        &mut self,
        binaries: &Binaries,
        name: &'static str,
        args: Vec<String>,
        logs: &Path,
    ) -> Result<()> {
        let (component, child) = process::spawn(name, &binaries.path(name), &args, logs)?;
        self.components.push(component);
        self.children.push(child);
        Ok(())
    }

    /// An error naming the first component that has exited, with its log's tail.
    fn check(&mut self) -> Result<()> {
        for (component, child) in self.components.iter().zip(self.children.iter_mut()) {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::Exited {
                    component: component.name.clone(),
                    status: status.to_string(),
                    log: component.log.clone(),
                    tail: process::tail(&component.log, 20),
                });
            }
        }
        Ok(())
    }
}

impl Launch<'_> {
    async fn run(&self, users: &[TestUser]) -> Result<(State, Vec<Child>), (Error, Vec<Child>)> {
        let mut running = Running::default();
        match self.run_with(users, &mut running).await {
            Ok(state) => Ok((state, running.children)),
            Err(error) => Err((error, running.children)),
        }
    }

    async fn run_with(&self, users: &[TestUser], running: &mut Running) -> Result<State> {
        let launched = Instant::now();
        running.spawn(self.binaries, "etcd", self.etcd_args(), self.logs)?;
        running.spawn(
            self.binaries,
            "kube-apiserver",
            self.apiserver_args(),
            self.logs,
        )?;

        let server = format!("https://127.0.0.1:{}", self.ports.apiserver);
        let kubeconfig = self.dir.join("kubeconfig");
        kubeconfig::write_user_kubeconfig(&kubeconfig, &server, self.pki, users)?;
        let manager_kubeconfig = self.dir.join("kube-controller-manager.kubeconfig");
        kubeconfig::write_component_kubeconfig(
            &manager_kubeconfig,
            &server,
            self.pki,
            &self.pki.controller_manager,
        )?;
        let client = client_for(&kubeconfig, crate::ADMIN_CONTEXT).await?;
        self.wait_ready(&client, running).await?;
        let apiserver_ready_millis = launched.elapsed().as_millis() as u64;

        let manager_args = self.controller_manager_args(&manager_kubeconfig);
        running.spawn(
            self.binaries,
            "kube-controller-manager",
            manager_args,
            self.logs,
        )?;
        self.wait_controller_manager(&client, running).await?;

        Ok(State {
            dir: self.dir.to_path_buf(),
            kubeconfig,
            server,
            ports: self.ports,
            components: running.components.clone(),
            users: users.to_vec(),
            bin_dir: self.binaries.dir().to_path_buf(),
            watchdog: None,
            start_millis: 0,
            apiserver_ready_millis,
        })
    }

    fn etcd_args(&self) -> Vec<String> {
        let client_url = format!("https://127.0.0.1:{}", self.ports.etcd_client);
        let peer_url = format!("http://127.0.0.1:{}", self.ports.etcd_peer);
        let pki = self.pki;
        vec![
            "--name=pakket".into(),
            format!("--data-dir={}", self.dir.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=pakket={peer_url}"),
            format!("--cert-file={}", pki.etcd_server.cert.display()),
            format!("--key-file={}", pki.etcd_server.key.display()),
            format!("--trusted-ca-file={}", pki.ca_cert.display()),
            "--client-cert-auth=true".into(),
            // A throwaway cluster: durability buys nothing, fsync costs seconds.
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
        ]
    }

    fn apiserver_args(&self) -> Vec<String> {
        let pki = self.pki;
        vec![
            format!(
                "--etcd-servers=https://127.0.0.1:{}",
                self.ports.etcd_client
            ),
            format!("--etcd-cafile={}", pki.ca_cert.display()),
            format!("--etcd-certfile={}", pki.etcd_client.cert.display()),
            format!("--etcd-keyfile={}", pki.etcd_client.key.display()),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={}", self.ports.apiserver),
            format!("--cert-dir={}", self.dir.join("apiserver").display()),
            format!("--tls-cert-file={}", pki.apiserver_server.cert.display()),
            format!(
                "--tls-private-key-file={}",
                pki.apiserver_server.key.display()
            ),
            format!("--client-ca-file={}", pki.ca_cert.display()),
            format!("--token-auth-file={}", self.token_file.display()),
            "--authorization-mode=RBAC".into(),
            "--anonymous-auth=false".into(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!(
                "--service-account-key-file={}",
                pki.service_account_pub.display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                pki.service_account_key.display()
            ),
            format!("--service-cluster-ip-range={}", crate::SERVICE_RANGE),
            "--allow-privileged=true".into(),
            "--profiling=false".into(),
            "--v=1".into(),
        ]
    }

    fn controller_manager_args(&self, kubeconfig: &Path) -> Vec<String> {
        let pki = self.pki;
        vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--authentication-kubeconfig={}", kubeconfig.display()),
            format!("--authorization-kubeconfig={}", kubeconfig.display()),
            // No serving port: nothing scrapes it, and it would need a fourth port.
            "--secure-port=0".into(),
            "--leader-elect=false".into(),
            "--use-service-account-credentials=true".into(),
            format!(
                "--service-account-private-key-file={}",
                pki.service_account_key.display()
            ),
            format!("--root-ca-file={}", pki.ca_cert.display()),
            format!("--service-cluster-ip-range={}", crate::SERVICE_RANGE),
            "--v=1".into(),
        ]
    }

    /// Polls `/readyz` until it answers `ok`, failing fast if a component exits.
    async fn wait_ready(&self, client: &Client, running: &mut Running) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            running.check()?;
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("static request");
            let last = match client.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(error) => error.to_string(),
            };
            if Instant::now() > deadline {
                return Err(self.not_ready("kube-apiserver /readyz", last));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits for the controller manager to do some work: its service-account
    /// controller creates `default/default`. Proves the controllers that
    /// garbage collection and namespace deletion rely on are running.
    async fn wait_controller_manager(&self, client: &Client, running: &mut Running) -> Result<()> {
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            running.check()?;
            match accounts.get_opt("default").await {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {}
                Err(error) => return Err(error.into()),
            }
            if Instant::now() > deadline {
                return Err(self.not_ready(
                    "kube-controller-manager",
                    "ServiceAccount default/default never appeared".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn not_ready(&self, what: &'static str, detail: String) -> Error {
        Error::NotReady {
            what,
            seconds: READY_TIMEOUT.as_secs(),
            detail,
            logs: self.logs.to_path_buf(),
        }
    }
}
