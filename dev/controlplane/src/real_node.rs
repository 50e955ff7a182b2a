//! A real node for the control plane (`pakket-dev up --real-node`):
//! Debian's containerd 1.6 and runc, a kubelet and kube-proxy built like the
//! control plane (`build-real-node.sh`), the bridge CNI plugin. Pods really
//! run, from images in a loopback registry, with a local pause image.
//!
//! What this machine needs, found by trying (each one's symptom in its
//! comment below): containerd `restrict_oom_score_adj` and kubelet
//! `oomScoreAdj: 0`, kubelet `failCgroupV1: false`, a node IP that is not
//! loopback (the bridge's own address), the apiserver reaching the kubelet
//! by that IP. It runs as root, one at a time per machine (the bridge has a
//! fixed name), and its Pods' traffic never leaves the machine: the bridge
//! forwards nothing to or from other interfaces, and nothing is
//! masqueraded.
//!
//! Teardown (`ControlPlane::stop`) stops the containers too, unmounts what
//! containerd and the kubelet mounted under the control plane's folder,
//! removes kube-proxy's rules, the bridge and the drop rules, and puts
//! `ip_forward` back as it was.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod image;
pub mod netfilter;

/// The bridge the node's Pods are plugged into; its address is the node's.
pub const BRIDGE: &str = "pakket0";
/// The node's IP: the bridge's address, and where the apiserver listens.
pub const NODE_IP: &str = "10.244.0.1";
/// The Pods' addresses.
pub const POD_CIDR: &str = "10.244.0.0/24";
/// The Node's name.
pub const NODE_NAME: &str = "pakket-node";
/// The sandbox image every Pod starts with, imported into containerd at
/// start (never pulled).
pub const PAUSE_IMAGE: &str = "registry.pakket.dev/pause:3.10";
/// The comment on the iptables rules this module adds, to find them again.
const RULE_COMMENT: &str = "pakket-dev real node: pod traffic stays on this machine";

/// The folder holding `kubelet`, `kube-proxy` and `pause`.
#[derive(Clone, Debug)]
pub struct RealNodeBinaries {
    dir: PathBuf,
}

const BUILD_REAL_NODE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build-real-node.sh");

impl RealNodeBinaries {
    /// Uses `$PAKKET_REAL_NODE_BIN` if set; otherwise runs
    /// `build-real-node.sh`, which returns at once when its cache already
    /// holds the pinned build (and installs the Debian packages if missing).
    pub fn ensure() -> Result<Self> {
        let dir = crate::binaries::cached_or_built("PAKKET_REAL_NODE_BIN", BUILD_REAL_NODE_SCRIPT)?;
        crate::binaries::check(
            &dir,
            &["kubelet", "kube-proxy", "pause"],
            BUILD_REAL_NODE_SCRIPT,
        )?;
        for program in [
            "containerd",
            "containerd-shim-runc-v2",
            "runc",
            "iptables",
            "ctr",
        ] {
            which(program).ok_or_else(|| Error::Build {
                script: BUILD_REAL_NODE_SCRIPT,
                detail: format!("{program} is not on PATH; run the script as root to install it"),
            })?;
        }
        Ok(Self { dir })
    }

    /// One binary by name.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// What teardown needs to know, kept in the control plane's state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RealNodeState {
    /// containerd's socket.
    pub containerd_socket: PathBuf,
    /// `net.ipv4.ip_forward` before the node set it.
    pub ip_forward_before: String,
    /// The node's folders (containerd's root and state, the kubelet's).
    pub dir: PathBuf,
    /// The kube-proxy binary (its `--cleanup` removes its rules).
    pub kube_proxy: PathBuf,
    /// crictl, which stops the Pods at teardown.
    pub crictl: PathBuf,
    /// From launching etcd to the Node Ready, in milliseconds.
    pub ready_millis: u64,
}

/// The files the node's components start from, under `dir/node`.
pub struct NodeFiles {
    /// The node's folder.
    pub dir: PathBuf,
    /// containerd's config.
    pub containerd_config: PathBuf,
    /// containerd's socket.
    pub containerd_socket: PathBuf,
    /// The kubelet's config.
    pub kubelet_config: PathBuf,
}

/// Where a starting node records what [`clear_left_by_killed`] needs if it
/// is killed before its teardown: its folder and `ip_forward` as it was.
/// Under /run, so a reboot (which clears what it would describe) clears it.
const MARKER: &str = "/run/pakket-dev-real-node.json";

/// What a node that was killed without teardown must be cleaned up from.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    /// The node's folder (`<control plane dir>/node`).
    dir: PathBuf,
    /// `net.ipv4.ip_forward` before the node set it.
    ip_forward_before: String,
}

/// Makes the network the node needs: the bridge with the node's address,
/// rules that keep Pod traffic on the bridge, forwarding on. What a node
/// killed without teardown left is removed first; a node that still runs
/// is refused. Returns `ip_forward` as it was.
pub fn network_up(node_dir: &Path, binaries: &RealNodeBinaries) -> Result<String> {
    // /proc/self belongs to the effective user.
    let root = std::fs::metadata("/proc/self")
        .map(|own| std::os::unix::fs::MetadataExt::uid(&own) == 0)
        .unwrap_or(false);
    if !root {
        return Err(Error::Config(
            "a real node runs containers and makes a bridge: run pakket-dev as root".into(),
        ));
    }
    if let Some(removed) = clear_left_by_killed(binaries)? {
        eprintln!("pakket-dev: {removed}");
    }
    if Path::new(&format!("/sys/class/net/{BRIDGE}")).exists() {
        return Err(Error::Config(format!(
            "bridge {BRIDGE} exists and could not be removed; delete it with `ip link delete {BRIDGE}`"
        )));
    }
    let forward = read_sysctl("net/ipv4/ip_forward")?;
    run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
    run(
        "ip",
        &["addr", "add", &format!("{NODE_IP}/24"), "dev", BRIDGE],
    )?;
    run("ip", &["link", "set", BRIDGE, "up"])?;
    // Pods talk to each other through the bridge (accepted even where the
    // FORWARD policy is DROP); nothing is forwarded between the bridge and
    // any other interface. Traffic to the node's own addresses (the
    // apiserver, through the `kubernetes` Service) is not forwarded at all.
    for rule in forward_rules() {
        let mut args = vec!["-w", "-I", "FORWARD", "1"];
        args.extend(rule.iter().copied());
        run("iptables", &args)?;
    }
    // Service traffic between Pods on one bridge goes through iptables
    // (kube-proxy's DNAT) only with these on.
    write_sysctl("net/bridge/bridge-nf-call-iptables", "1")?;
    let marker = Marker {
        dir: node_dir.to_owned(),
        ip_forward_before: forward.clone(),
    };
    write(
        Path::new(MARKER),
        &serde_json::to_string(&marker).expect("JSON"),
    )?;
    write_sysctl("net/ipv4/ip_forward", "1")?;
    Ok(forward)
}

/// Removes what a real node killed without teardown (SIGKILL, a machine
/// restart of the sandbox but not the kernel) left in the kernel: its
/// containers, mounts, kube-proxy's and the kubelet's rules, the bridge
/// and its drop rules, and `ip_forward` as it was before it (when its
/// marker says). A node whose kubelet or containerd still runs is not
/// touched: that is refused, naming the process. Returns what was
/// removed, or `None` when nothing was left.
pub fn clear_left_by_killed(binaries: &RealNodeBinaries) -> Result<Option<String>> {
    let marker: Option<Marker> = std::fs::read_to_string(MARKER)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    if let Some((pid, program)) = running_node(marker.as_ref().map(|marker| marker.dir.as_path())) {
        return Err(Error::Config(format!(
            "another real node runs on this machine ({program}, process {pid}); stop it with `pakket-dev --dir DIR down`"
        )));
    }
    let bridge = Path::new(&format!("/sys/class/net/{BRIDGE}")).exists();
    if !bridge && marker.is_none() {
        return Ok(None);
    }
    if let Some(marker) = &marker {
        kill_shims(&marker.dir.join("containerd/containerd.sock"))?;
        unmount_under(&marker.dir)?;
    }
    clear_network(
        &binaries.path("kube-proxy"),
        marker
            .as_ref()
            .map(|marker| marker.ip_forward_before.as_str()),
    )?;
    Ok(Some(match marker {
        Some(marker) => format!(
            "removed what a killed real node (folder {}) left: its containers, mounts, rules and bridge {BRIDGE}",
            marker.dir.display()
        ),
        None => format!("removed what a killed real node left: its rules and bridge {BRIDGE}"),
    }))
}

/// A live kubelet or kube-proxy of a real node, or a containerd started
/// from `node_dir`'s config. (Shims outlive their containerd on purpose:
/// one alone is something a killed node left, not a node.)
fn running_node(node_dir: Option<&Path>) -> Option<(i32, String)> {
    let hostname = format!("--hostname-override={NODE_NAME}");
    let node_dir = node_dir.map(|dir| dir.display().to_string());
    processes().into_iter().find_map(|(pid, words)| {
        let program = words.first().map(String::as_str).unwrap_or_default();
        let node_component = (program.ends_with("kubelet") || program.ends_with("kube-proxy"))
            && words.contains(&hostname);
        let containerd = program.ends_with("/containerd") || program == "containerd";
        let our_containerd = containerd
            && node_dir
                .as_ref()
                .is_some_and(|dir| words.iter().any(|word| word.contains(dir.as_str())));
        (node_component || our_containerd).then(|| (pid, program.to_owned()))
    })
}

/// Every process's pid and command line words.
fn processes() -> Vec<(i32, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let words = cmdline
                .split(|byte| *byte == 0)
                .filter(|word| !word.is_empty())
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect();
            Some((pid, words))
        })
        .collect()
}

/// The FORWARD rules [`network_up`] adds, as iptables arguments after the
/// chain.
fn forward_rules() -> Vec<Vec<&'static str>> {
    let tail = ["-m", "comment", "--comment", RULE_COMMENT];
    let mut rules = vec![
        vec!["-i", BRIDGE, "!", "-o", BRIDGE, "-j", "DROP"],
        vec!["-o", BRIDGE, "!", "-i", BRIDGE, "-j", "DROP"],
        vec!["-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"],
    ];
    for rule in &mut rules {
        rule.extend(tail);
    }
    rules
}

/// Writes the configs of containerd, CNI and the kubelet under `dir/node`.
pub fn write_files(dir: &Path, ca_cert: &Path) -> Result<NodeFiles> {
    let node = dir.join("node");
    let cni = node.join("cni");
    let hosts = node.join("containerd/certs.d");
    for folder in [&node, &cni, &hosts] {
        std::fs::create_dir_all(folder).map_err(Error::io("creating", folder))?;
    }
    let files = NodeFiles {
        containerd_config: node.join("containerd.toml"),
        containerd_socket: node.join("containerd/containerd.sock"),
        kubelet_config: node.join("kubelet.yaml"),
        dir: node.clone(),
    };
    let containerd = format!(
        r#"version = 2
root = "{root}"
state = "{state}"
# Snapshotters this machine has no use for would only log their failures.
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{socket}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # This VM refuses a negative oom_score_adj; without it runc fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # One folder per registry host (`trust_plain_http_registry`).
    config_path = "{hosts}"
"#,
        root = node.join("containerd/root").display(),
        state = node.join("containerd/state").display(),
        socket = files.containerd_socket.display(),
        cni = cni.display(),
        hosts = hosts.display(),
    );
    write(&files.containerd_config, &containerd)?;
    let network = serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "pakket",
        "plugins": [{
            "type": "bridge",
            "bridge": BRIDGE,
            "isGateway": true,
            // Nothing is masqueraded: Pod traffic is not meant to leave.
            "ipMasq": false,
            "hairpinMode": true,
            "ipam": {
                "type": "host-local",
                "ranges": [[{ "subnet": POD_CIDR, "gateway": NODE_IP }]],
                // Through the node: Service addresses (kube-proxy's DNAT)
                // and the node's own; nothing beyond is forwarded.
                "routes": [{ "dst": "0.0.0.0/0" }],
                "dataDir": node.join("cni-ipam").display().to_string(),
            },
        }],
    });
    write(
        &cni.join("10-pakket.conflist"),
        &serde_json::to_string_pretty(&network).expect("JSON"),
    )?;
    let kubelet = format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: {NODE_IP}
healthzPort: 10248
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: "{ca}"}}
authorization: {{mode: Webhook}}
containerRuntimeEndpoint: "unix://{socket}"
cgroupDriver: cgroupfs
# The host is on cgroup v1, which the kubelet refuses unless told.
failCgroupV1: false
failSwapOn: false
# The kubelet's own -999 is refused here, as containerd's would be.
oomScoreAdj: 0
podCIDR: {POD_CIDR}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
rotateCertificates: false
# A shared development disk is often fuller than a node's: evict only
# when it is nearly out, and keep images.
evictionHard: {{memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
shutdownGracePeriod: 0s
"#,
        ca = ca_cert.display(),
        socket = files.containerd_socket.display(),
    );
    write(&files.kubelet_config, &kubelet)?;
    Ok(files)
}

/// Lets the node pull from the plain-HTTP registry at `host_port` (a
/// loopback registry of the tests or the demo). containerd reads these
/// files at each pull, so a registry started later is trusted at once.
pub fn trust_plain_http_registry(dir: &Path, host_port: &str) -> Result<()> {
    let folder = dir.join("node/containerd/certs.d").join(host_port);
    std::fs::create_dir_all(&folder).map_err(Error::io("creating", &folder))?;
    write(
        &folder.join("hosts.toml"),
        &format!(
            "server = \"http://{host_port}\"\n\n[host.\"http://{host_port}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    )
}

/// containerd's arguments.
pub fn containerd_args(files: &NodeFiles) -> Vec<String> {
    vec![
        format!("--config={}", files.containerd_config.display()),
        "--log-level=warn".into(),
    ]
}

/// The kubelet's arguments.
pub fn kubelet_args(files: &NodeFiles, kubeconfig: &Path) -> Vec<String> {
    vec![
        format!("--config={}", files.kubelet_config.display()),
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--root-dir={}", files.dir.join("kubelet").display()),
        format!("--cert-dir={}", files.dir.join("kubelet-pki").display()),
        format!("--node-ip={NODE_IP}"),
        format!("--hostname-override={NODE_NAME}"),
        "--v=1".into(),
    ]
}

/// kube-proxy's arguments (iptables mode).
pub fn kube_proxy_args(kubeconfig: &Path) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        "--proxy-mode=iptables".into(),
        format!("--hostname-override={NODE_NAME}"),
        format!("--cluster-cidr={POD_CIDR}"),
        format!("--bind-address={NODE_IP}"),
        format!("--healthz-bind-address={NODE_IP}:10256"),
        format!("--metrics-bind-address={NODE_IP}:10249"),
        // Leave the host's conntrack settings alone.
        "--conntrack-max-per-core=0".into(),
        "--conntrack-tcp-timeout-established=0".into(),
        "--conntrack-tcp-timeout-close-wait=0".into(),
        "--v=1".into(),
    ]
}

/// Imports the pause image into containerd's `k8s.io` namespace.
pub fn import_pause(files: &NodeFiles, binaries: &RealNodeBinaries) -> Result<()> {
    let pause = binaries.path("pause");
    let program = std::fs::read(&pause).map_err(Error::io("reading", &pause))?;
    // Kubernetes' own pause image runs as 65535 too.
    import(
        &files.containerd_socket,
        &files.dir,
        PAUSE_IMAGE,
        "pause",
        &program,
        65535,
    )
}

/// Imports image `name`, holding the static `program` at `/<file>` (its
/// entrypoint, run as `user`), into the node's containerd: for Pods whose
/// image no registry serves (`imagePullPolicy: Never`).
pub fn import_image(
    state: &RealNodeState,
    name: &str,
    file: &str,
    program: &[u8],
    user: u32,
) -> Result<()> {
    import(
        &state.containerd_socket,
        &state.dir,
        name,
        file,
        program,
        user,
    )
}

fn import(
    socket: &Path,
    scratch: &Path,
    name: &str,
    file: &str,
    program: &[u8],
    user: u32,
) -> Result<()> {
    let archive = scratch.join(format!("{file}.oci.tar"));
    std::fs::write(&archive, image::oci_archive(name, file, program, user))
        .map_err(Error::io("writing", &archive))?;
    let socket = socket.display().to_string();
    let archive_path = archive.display().to_string();
    let imported = run(
        "ctr",
        &[
            "--address",
            &socket,
            "--namespace",
            "k8s.io",
            "images",
            "import",
            &archive_path,
        ],
    );
    let _ = std::fs::remove_file(&archive);
    imported
}

/// Stops and removes every Pod sandbox through the CRI (their containers,
/// network namespaces and addresses with them), while containerd still
/// runs and after the kubelet has stopped (or it would start them again).
pub fn stop_pods(state: &RealNodeState) -> Result<()> {
    let endpoint = format!("unix://{}", state.containerd_socket.display());
    run(
        &state.crictl.display().to_string(),
        &[
            "--runtime-endpoint",
            &endpoint,
            "--timeout",
            "20s",
            "rmp",
            "--force",
            "--all",
        ],
    )
}

/// Undoes [`network_up`] and what the node's components leave: running
/// containers, mounts under `state.dir`, kube-proxy's rules. Best effort:
/// each step runs even if one before failed; the first failure is returned.
pub fn teardown(state: &RealNodeState) -> Result<()> {
    let mut first_error: Option<Error> = None;
    let mut note = |result: Result<()>| {
        if let Err(error) = result
            && first_error.is_none()
        {
            first_error = Some(error);
        }
    };
    note(kill_shims(&state.containerd_socket));
    note(unmount_under(&state.dir));
    note(clear_network(
        &state.kube_proxy,
        Some(state.ip_forward_before.as_str()),
    ));
    first_error.map_or(Ok(()), Err)
}

/// Removes kube-proxy's and the kubelet's rules, the drop rules and the
/// bridge, puts `ip_forward` back (when known) and removes the marker.
/// Best effort like [`teardown`]: every step runs; the first failure is
/// returned.
fn clear_network(kube_proxy: &Path, ip_forward_before: Option<&str>) -> Result<()> {
    let mut first_error: Option<Error> = None;
    let _ = Command::new(kube_proxy)
        .args(["--cleanup", "--v=0"])
        .output();
    remove_kubelet_chains();
    for rule in forward_rules() {
        let mut args = vec!["-w", "-D", "FORWARD"];
        args.extend(rule.iter().copied());
        let _ = run("iptables", &args);
    }
    if Path::new(&format!("/sys/class/net/{BRIDGE}")).exists()
        && let Err(error) = run("ip", &["link", "delete", BRIDGE])
    {
        first_error.get_or_insert(error);
    }
    if let Some(before) = ip_forward_before
        && let Err(error) = write_sysctl("net/ipv4/ip_forward", before)
    {
        first_error.get_or_insert(error);
    }
    let _ = std::fs::remove_file(MARKER);
    first_error.map_or(Ok(()), Err)
}

/// Removes the chains the kubelet makes (kube-proxy's `--cleanup` leaves
/// them): the jumps to them, then the chains, for IPv4 and IPv6.
fn remove_kubelet_chains() {
    for program in ["iptables", "ip6tables"] {
        for chain in ["INPUT", "OUTPUT"] {
            let _ = run(program, &["-w", "-D", chain, "-j", "KUBE-FIREWALL"]);
        }
        for (table, chain) in [
            ("filter", "KUBE-FIREWALL"),
            ("filter", "KUBE-KUBELET-CANARY"),
            ("nat", "KUBE-KUBELET-CANARY"),
            ("mangle", "KUBE-KUBELET-CANARY"),
            ("mangle", "KUBE-IPTABLES-HINT"),
        ] {
            let _ = run(program, &["-w", "-t", table, "-F", chain]);
            let _ = run(program, &["-w", "-t", table, "-X", chain]);
        }
    }
}

/// Kills the runc shims of containerd at `socket` (and so their
/// containers): they outlive containerd on purpose, so stopping it is not
/// enough.
fn kill_shims(socket: &Path) -> Result<()> {
    let wanted = socket.display().to_string();
    for (pid, words) in processes() {
        let is_shim = words
            .first()
            .is_some_and(|program| program.ends_with("containerd-shim-runc-v2"));
        if is_shim && words.iter().any(|word| word.contains(&wanted)) {
            // Its containers first: killing a shim leaves them running.
            for child in children_of(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(child),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    // Their containers, children of the shims, go with them; give the
    // kernel a moment before their mounts are taken down.
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(())
}

/// The processes whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let ppid: i32 = status
                .lines()
                .find_map(|line| line.strip_prefix("PPid:"))?
                .trim()
                .parse()
                .ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// Unmounts (lazily, deepest first) every mount under `dir`.
fn unmount_under(dir: &Path) -> Result<()> {
    let table = Path::new("/proc/self/mountinfo");
    let text = std::fs::read_to_string(table).map_err(Error::io("reading", table))?;
    let prefix = dir.display().to_string();
    let mut points: Vec<String> = text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_mount_point)
        .filter(|point| point.starts_with(&prefix))
        .collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.len()));
    points.dedup();
    for point in points {
        let _ = run("umount", &["-l", &point]);
    }
    Ok(())
}

/// `/proc/self/mountinfo` escapes spaces and a few others as `\NNN`.
fn unescape_mount_point(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let digits: String = chars.by_ref().take(3).collect();
            match u8::from_str_radix(&digits, 8) {
                Ok(byte) => out.push(byte as char),
                Err(_) => {
                    out.push('\\');
                    out.push_str(&digits);
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn read_sysctl(name: &str) -> Result<String> {
    let path = PathBuf::from("/proc/sys").join(name);
    std::fs::read_to_string(&path)
        .map(|value| value.trim().to_owned())
        .map_err(Error::io("reading", &path))
}

fn write_sysctl(name: &str, value: &str) -> Result<()> {
    let path = PathBuf::from("/proc/sys").join(name);
    std::fs::write(&path, value).map_err(Error::io("writing", &path))
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(Error::io("writing", path))
}

/// Runs `program` with `args`; an error carries its output.
fn run(program: &str, args: &[&str]) -> Result<()> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(Error::io("running", program))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Config(format!(
        "`{program} {}` failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape_mount_point(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(unescape_mount_point("/plain"), "/plain");
    }

    #[test]
    fn every_forward_rule_is_marked_for_teardown() {
        for rule in forward_rules() {
            assert!(rule.contains(&RULE_COMMENT), "{rule:?}");
        }
    }
}
