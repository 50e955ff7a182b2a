//! One attempt at starting the component processes on one set of ports,
//! and the waits that tell each of them works.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::ListParams;
use kube::{Api, Client};

use crate::binaries::{Binaries, NodeBinaries};
use crate::error::{Error, Result};
use crate::kubeconfig::{self, TestUser};
use crate::nodes;
use crate::pki::Pki;
use crate::ports::Ports;
use crate::process::{self, Component};
use crate::real_node::{self, RealNodeBinaries, RealNodeState};
use crate::start::{State, client_for};

const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// One attempt at starting the components on one set of ports.
pub(crate) struct Launch<'a> {
    pub(crate) binaries: &'a Binaries,
    /// The scheduler and kwok binaries and the node names, when there are nodes.
    pub(crate) nodes: Option<(&'a NodeBinaries, &'a [String])>,
    pub(crate) dir: &'a Path,
    pub(crate) logs: &'a Path,
    pub(crate) pki: &'a Pki,
    pub(crate) token_file: &'a Path,
    pub(crate) ports: Ports,
    /// The kubelet, kube-proxy and pause, and `ip_forward` as it was
    /// before the network was made, when a real node runs.
    pub(crate) real_node: Option<(&'a RealNodeBinaries, &'a str)>,
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
        name: &'static str,
        program: &Path,
        args: Vec<String>,
        logs: &Path,
    ) -> Result<()> {
        let (component, child) = process::spawn(name, program, &args, logs)?;
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
    pub(crate) async fn run(
        &self,
        users: &[TestUser],
    ) -> Result<(State, Vec<Child>), (Error, Vec<Child>)> {
        let mut running = Running::default();
        match self.run_with(users, &mut running).await {
            Ok(state) => Ok((state, running.children)),
            Err(error) => Err((error, running.children)),
        }
    }

    async fn run_with(&self, users: &[TestUser], running: &mut Running) -> Result<State> {
        let launched = Instant::now();
        running.spawn(
            "etcd",
            &self.binaries.path("etcd"),
            self.etcd_args(),
            self.logs,
        )?;
        running.spawn(
            "kube-apiserver",
            &self.binaries.path("kube-apiserver"),
            self.apiserver_args(),
            self.logs,
        )?;

        let server = format!("https://{}:{}", self.listen_address(), self.ports.apiserver);
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
            "kube-controller-manager",
            &self.binaries.path("kube-controller-manager"),
            manager_args,
            self.logs,
        )?;
        // The scheduler and kwok start while the controller manager warms
        // up: they only need the API, and the nodes' readiness needs the
        // controller manager anyway (it lifts the not-ready taint).
        if let Some((binaries, names)) = self.nodes {
            self.start_nodes(&server, &client, binaries, names, running)
                .await?;
        }
        let real_node = match self.real_node {
            Some((binaries, forward)) => Some(
                self.start_real_node(&server, binaries, forward, running)
                    .await?,
            ),
            None => None,
        };
        self.wait_controller_manager(&client, running).await?;
        let nodes_ready_millis = match self.nodes {
            Some((_, names)) => {
                self.wait_nodes(&client, names, running).await?;
                launched.elapsed().as_millis() as u64
            }
            None => 0,
        };
        let real_node = match real_node {
            Some(mut state) => {
                self.wait_real_node(&client, running).await?;
                state.ready_millis = launched.elapsed().as_millis() as u64;
                Some(state)
            }
            None => None,
        };

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
            nodes: self
                .nodes
                .map(|(_, names)| names.to_vec())
                .unwrap_or_default(),
            nodes_bin_dir: self.nodes.map(|(binaries, _)| binaries.dir().to_path_buf()),
            nodes_ready_millis,
            real_node,
        })
    }

    /// Where the apiserver listens: loopback, or the real node's address
    /// (Pods reach it there, through the `kubernetes` Service).
    fn listen_address(&self) -> &'static str {
        match self.real_node {
            Some(_) => real_node::NODE_IP,
            None => "127.0.0.1",
        }
    }

    /// Starts containerd (and imports the pause image), the kubelet and
    /// kube-proxy.
    async fn start_real_node(
        &self,
        server: &str,
        binaries: &RealNodeBinaries,
        ip_forward_before: &str,
        running: &mut Running,
    ) -> Result<RealNodeState> {
        let files = real_node::write_files(self.dir, &self.pki.ca_cert)?;
        running.spawn(
            "containerd",
            Path::new("containerd"),
            real_node::containerd_args(&files),
            self.logs,
        )?;
        let deadline = Instant::now() + READY_TIMEOUT;
        while !files.containerd_socket.exists() {
            running.check()?;
            if Instant::now() > deadline {
                return Err(self.not_ready(
                    "containerd",
                    format!("no socket at {}", files.containerd_socket.display()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        real_node::import_pause(&files, binaries)?;
        let kubelet_kubeconfig = self.dir.join("kubelet.kubeconfig");
        let proxy_kubeconfig = self.dir.join("kube-proxy.kubeconfig");
        kubeconfig::write_component_kubeconfig(
            &kubelet_kubeconfig,
            server,
            self.pki,
            &self.pki.kubelet,
        )?;
        kubeconfig::write_component_kubeconfig(
            &proxy_kubeconfig,
            server,
            self.pki,
            &self.pki.kube_proxy,
        )?;
        running.spawn(
            "kubelet",
            &binaries.path("kubelet"),
            real_node::kubelet_args(&files, &kubelet_kubeconfig),
            self.logs,
        )?;
        running.spawn(
            "kube-proxy",
            &binaries.path("kube-proxy"),
            real_node::kube_proxy_args(&proxy_kubeconfig),
            self.logs,
        )?;
        Ok(RealNodeState {
            containerd_socket: files.containerd_socket,
            ip_forward_before: ip_forward_before.to_owned(),
            dir: files.dir,
            kube_proxy: binaries.path("kube-proxy"),
            crictl: binaries.path("crictl"),
            ready_millis: 0,
        })
    }

    /// Waits until the real node is Ready.
    async fn wait_real_node(&self, client: &Client, running: &mut Running) -> Result<()> {
        let nodes: Api<Node> = Api::all(client.clone());
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            running.check()?;
            let found = nodes.get_opt(real_node::NODE_NAME).await?;
            let last = match found {
                Some(node) => match nodes::all_ready(&[node], &[real_node::NODE_NAME.to_owned()]) {
                    Ok(()) => return Ok(()),
                    Err(why) => why,
                },
                None => format!("Node {} is not registered yet", real_node::NODE_NAME),
            };
            if Instant::now() > deadline {
                return Err(self.not_ready("the real node (containerd, kubelet)", last));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts kube-scheduler and kwok and registers the nodes kwok plays.
    ///
    /// Both act with the admin identity (`system:masters`): the simplest
    /// thing that works on a throwaway cluster. A dedicated scheduler
    /// certificate would only matter to a test of the scheduler's RBAC.
    async fn start_nodes(
        &self,
        server: &str,
        client: &Client,
        binaries: &NodeBinaries,
        names: &[String],
        running: &mut Running,
    ) -> Result<()> {
        let scheduler_kubeconfig = self.dir.join("kube-scheduler.kubeconfig");
        let kwok_kubeconfig = self.dir.join("kwok.kubeconfig");
        for path in [&scheduler_kubeconfig, &kwok_kubeconfig] {
            kubeconfig::write_component_kubeconfig(path, server, self.pki, &self.pki.admin)?;
        }
        let stages = self.dir.join("kwok-stages.yaml");
        std::fs::write(&stages, nodes::STAGES).map_err(Error::io("writing", &stages))?;
        running.spawn(
            "kube-scheduler",
            &binaries.path("kube-scheduler"),
            nodes::scheduler_args(
                &scheduler_kubeconfig,
                &self.pki.ca_cert,
                self.ports.scheduler,
                &self.dir.join("kube-scheduler"),
            ),
            self.logs,
        )?;
        if names.is_empty() {
            // A real node alone needs the scheduler, not kwok.
            return Ok(());
        }
        running.spawn(
            "kwok",
            &binaries.path("kwok"),
            nodes::kwok_args(&kwok_kubeconfig, &stages),
            self.logs,
        )?;
        nodes::create(client, names).await
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
            format!("--bind-address={}", self.listen_address()),
            format!("--advertise-address={}", self.listen_address()),
            format!("--secure-port={}", self.ports.apiserver),
            format!("--cert-dir={}", self.dir.join("apiserver").display()),
            format!("--tls-cert-file={}", pki.apiserver_server.cert.display()),
            format!(
                "--tls-private-key-file={}",
                pki.apiserver_server.key.display()
            ),
            format!("--client-ca-file={}", pki.ca_cert.display()),
            format!("--token-auth-file={}", self.token_file.display()),
            // Node: a real node's kubelet reads only what its Pods need.
            "--authorization-mode=Node,RBAC".into(),
            // A real node's kubelet by its IP (never a DNS lookup of the
            // node's name), with the apiserver's own client certificate.
            "--kubelet-preferred-address-types=InternalIP".into(),
            format!(
                "--kubelet-client-certificate={}",
                pki.apiserver_kubelet_client.cert.display()
            ),
            format!(
                "--kubelet-client-key={}",
                pki.apiserver_kubelet_client.key.display()
            ),
            // Webhooks and aggregated APIs are called at their endpoints'
            // addresses, not through a ClusterIP only kube-proxy could route.
            "--enable-aggregator-routing=true".into(),
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
            profiling_flag(),
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

    /// Waits until every node is Ready and untainted (kwok and the node
    /// lifecycle controller at work) and the scheduler listens on its port
    /// (so it did not lose the port race).
    async fn wait_nodes(
        &self,
        client: &Client,
        names: &[String],
        running: &mut Running,
    ) -> Result<()> {
        let all: Api<Node> = Api::all(client.clone());
        let (key, value) = nodes::NODE_TYPE_LABEL;
        let selector = ListParams::default().labels(&format!("{key}={value}"));
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            running.check()?;
            let found = all.list(&selector).await?.items;
            let last = match nodes::all_ready(&found, names) {
                Ok(()) => match std::net::TcpStream::connect(("127.0.0.1", self.ports.scheduler)) {
                    Ok(_) => return running.check(),
                    Err(error) => format!(
                        "kube-scheduler does not listen on 127.0.0.1:{}: {error}",
                        self.ports.scheduler
                    ),
                },
                Err(missing) => missing,
            };
            if Instant::now() > deadline {
                return Err(self.not_ready("fake nodes (kwok, kube-scheduler)", last));
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

/// `--profiling`: off, as a hardened cluster runs it, unless
/// `PAKKET_APISERVER_PROFILING=true` asks for `/debug/pprof` (a benchmark
/// finding out where the apiserver's CPU goes; docs/figures.md).
fn profiling_flag() -> String {
    let wanted = std::env::var("PAKKET_APISERVER_PROFILING").is_ok_and(|value| value == "true");
    format!("--profiling={wanted}")
}
