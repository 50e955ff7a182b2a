//! Pakket from its images, as Pods, on a real node, driven the way an admin
//! and a non-admin user would drive it (the pinned kubectl, the scripts in
//! the repository):
//!
//! 1. `dev/in-cluster.sh up`: a control plane with a real node, a registry
//!    on the node's address, the images built (static musl binaries) and
//!    pushed, `deploy/install.sh` with their digests. Every Pakket Pod
//!    runs the pinned image, and the provisioners' Leases are held by Pods.
//! 2. alice, who may create Instances and use the `plain` class, installs
//!    a plain bundle from her own ConfigMap; the class wants approval, the
//!    admin gives it with `kubectl instance approve`; the plain
//!    provisioner's Pod installs it with its shipped RBAC.
//! 3. alice installs an OLM operator bundle (etcd 0.9.4, from the shared
//!    data) through registry-v1 under `approval: UserPermission`, with the
//!    roles `pakket bundle rbac` prints bound to her.
//! 4. Pakket is upgraded (`install.sh` with new digests) while an Instance
//!    is in flight: every Instance ends Installed, and nothing installed
//!    before is replaced (same UIDs).
//! 5. `deploy/uninstall.sh` refuses while Pakket manages content, then,
//!    with `--delete-content`, removes it all: content, Pakket, CRDs.
//!
//! Needs root (containerd, the node's bridge): CI runs as root.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The environment `dev/in-cluster.sh up` printed, and its folder; the
/// cluster is stopped when this goes, whatever the test did.
struct Cluster {
    dir: PathBuf,
    kubeconfig: String,
    path: String,
    registry: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("dev/in-cluster.sh"))
            .arg("down")
            .env("PAKKET_IN_CLUSTER_DIR", &self.dir)
            .status();
    }
}

fn checked(output: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

impl Cluster {
    fn up() -> Self {
        let dir = std::env::temp_dir().join(format!("pakket-e2e-{}", std::process::id()));
        let began = Instant::now();
        let output = Command::new(repo().join("dev/in-cluster.sh"))
            .arg("up")
            .env("PAKKET_IN_CLUSTER_DIR", &dir)
            .output()
            .expect("running dev/in-cluster.sh");
        // The Drop above needs the folder even if `up` failed half-way.
        let mut cluster = Self {
            dir,
            kubeconfig: String::new(),
            path: String::new(),
            registry: String::new(),
        };
        // What the scripts said (image sizes, how long install took).
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        let exports = checked(output, "dev/in-cluster.sh up");
        for line in exports.lines() {
            let Some((name, value)) = line
                .strip_prefix("export ")
                .and_then(|rest| rest.split_once('='))
            else {
                continue;
            };
            match name {
                "KUBECONFIG" => cluster.kubeconfig = value.to_owned(),
                "PATH" => cluster.path = value.to_owned(),
                "PAKKET_REGISTRY" => cluster.registry = value.to_owned(),
                _ => {}
            }
        }
        assert!(!cluster.kubeconfig.is_empty(), "no KUBECONFIG in {exports}");
        println!(
            "dev/in-cluster.sh up (control plane, real node, images, install) took {:.0} s",
            began.elapsed().as_secs_f64()
        );
        cluster
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PATH", &self.path)
            .current_dir(repo());
        command
    }

    /// kubectl as `context` (admin, alice …), stdin from `input`.
    fn kubectl_as(&self, context: &str, args: &[&str], input: Option<&str>) -> Output {
        let mut command = self.command("kubectl");
        command.arg("--context").arg(context).args(args);
        match input {
            None => command.output().expect("running kubectl"),
            Some(text) => {
                use std::io::Write as _;
                command
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                let mut child = command.spawn().expect("running kubectl");
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            }
        }
    }

    fn admin(&self, args: &[&str]) -> String {
        checked(
            self.kubectl_as("admin", args, None),
            &format!("kubectl {}", args.join(" ")),
        )
    }

    fn apply_as(&self, context: &str, yaml: &str) {
        checked(
            self.kubectl_as(context, &["apply", "-f", "-"], Some(yaml)),
            &format!("kubectl --context {context} apply"),
        );
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.admin(&all)).unwrap()
    }

    /// Waits until Instance `name` has condition `kind` = `status`.
    fn wait_condition(&self, name: &str, kind: &str, status: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let instance = self.json(&["get", "instance", name]);
            let found = instance["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == kind)
                .cloned();
            if found.as_ref().is_some_and(|c| c["status"] == status) {
                return instance;
            }
            assert!(
                Instant::now() < deadline,
                "Instance {name}: {kind} is not {status} after {within:?}: {found:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Every Pakket Deployment's Pods: Ready, and running the image the
    /// images file pins. Returns the images seen.
    fn pakket_pods_run(&self, images: &str) -> Vec<String> {
        let pinned: Vec<&str> = images
            .lines()
            .filter_map(|line| line.split_once('=').map(|(_, image)| image))
            .collect();
        let pods = self.json(&["-n", "pakket-system", "get", "pods"]);
        let mut seen = Vec::new();
        for pod in pods["items"].as_array().unwrap() {
            if pod["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            let name = pod["metadata"]["name"].as_str().unwrap();
            for container in pod["spec"]["containers"].as_array().unwrap() {
                let image = container["image"].as_str().unwrap().to_owned();
                assert!(
                    pinned.contains(&image.as_str()),
                    "Pod {name} runs {image}, not one of {pinned:?}"
                );
                seen.push(image);
            }
            let ready = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            assert!(ready, "Pod {name} is not Ready: {}", pod["status"]);
        }
        seen.sort();
        seen.dedup();
        seen
    }
}

const PLAIN_CONTENT: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME-content
  namespace: alice
immutable: true
data:
  hello.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: NAME-greeting
      namespace: alice
    data:
      message: "hello from alice's plain bundle"
---
apiVersion: core.pakket.dev/v1alpha1
kind: Instance
metadata:
  name: NAME
spec:
  class: plain
  bundle:
    name: NAME-v1
    spec:
      class: plain
      refs: [file://content]
      volumeMounts:
      - mountPath: /content
        configMap: {name: NAME-content, namespace: alice}
"#;

/// What alice may do: her namespace's ConfigMaps, Instances, `use` on the
/// plain and registry-v1 classes. Nothing else.
const ALICE: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-alice-instances}
rules:
- {apiGroups: [core.pakket.dev], resources: [instances], verbs: [get, list, watch, create]}
- {apiGroups: [core.pakket.dev], resources: [provisionerclasses], resourceNames: [plain, registry-v1], verbs: [use]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-alice-instances}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-alice-instances}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: core.pakket.dev/v1alpha1
kind: ProvisionerClass
metadata: {name: plain}
spec:
  provisioner: pakket.dev/plain
  parameters: {approval: DenyAll}
"#;

fn plain_instance(name: &str) -> String {
    PLAIN_CONTENT.replace("NAME", name)
}

fn uid(cluster: &Cluster, args: &[&str]) -> String {
    cluster.json(args)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn pakket_from_its_images_serves_a_non_admin_upgrades_in_flight_and_uninstalls_clean() {
    let cluster = Cluster::up();
    let images = std::fs::read_to_string(format!("{}.images.env", cluster.dir.display())).unwrap();
    let first_images = cluster.pakket_pods_run(&images);
    assert_eq!(
        first_images.len(),
        5,
        "five Pakket images run: {first_images:?}"
    );
    for lease in ["pakket.dev-plain", "pakket.dev-registry-v1"] {
        // A replica is Ready before it leads: give the election a moment.
        let deadline = Instant::now() + Duration::from_secs(30);
        let holder = loop {
            let found = cluster.kubectl_as(
                "admin",
                &["-n", "pakket-system", "get", "lease", lease, "-o", "json"],
                None,
            );
            let holder = serde_json::from_slice::<Value>(&found.stdout)
                .ok()
                .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
                .unwrap_or_default();
            if !holder.is_empty() || Instant::now() > deadline {
                break holder;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        assert!(
            holder.starts_with("pakket-"),
            "Lease {lease} is held by a Pod (its hostname), not a host process: {holder:?}"
        );
    }

    // 2. alice's plain bundle, approved by the admin.
    cluster.apply_as("admin", ALICE);
    cluster.apply_as("alice", &plain_instance("hello"));
    // Approvable once its content is unpacked (the approval names its digest).
    cluster.wait_condition("hello", "Unpacked", "True", Duration::from_secs(60));
    cluster.wait_condition("hello", "Approved", "False", Duration::from_secs(60));
    checked(
        cluster
            .command("kubectl")
            .args(["instance", "approve", "hello"])
            .output()
            .unwrap(),
        "kubectl instance approve hello",
    );
    cluster.wait_condition("hello", "Installed", "True", Duration::from_secs(60));
    let greeting = cluster.json(&[
        "-n",
        "alice",
        "get",
        "configmap",
        "hello-greeting",
        "--show-managed-fields",
    ]);
    let managers: Vec<&str> = greeting["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(
        managers.contains(&"pakket.dev/runtime"),
        "written by the provisioner: {managers:?}"
    );
    let greeting_uid = uid(
        &cluster,
        &["-n", "alice", "get", "configmap", "hello-greeting"],
    );

    // 3. An operator bundle through registry-v1, under UserPermission.
    let etcd = pakket_testkit::data("bundles/etcd/0.9.4");
    let reference = format!("{}/bundles/etcd:v0.9.4", cluster.registry);
    checked(
        cluster
            .command("pakket")
            .args(["bundle", "push"])
            .arg(&etcd)
            .args([&reference, "--insecure-plain-http"])
            .output()
            .unwrap(),
        "pakket bundle push",
    );
    cluster.admin(&["create", "namespace", "etcd-operator"]);
    let roles = checked(
        cluster
            .command("pakket")
            .args(["bundle", "rbac"])
            .arg(&etcd)
            .args([
                "--install-namespace",
                "etcd-operator",
                "--name",
                "e2e-alice-etcd",
            ])
            .output()
            .unwrap(),
        "pakket bundle rbac",
    );
    cluster.apply_as("admin", &roles);
    cluster.apply_as(
        "admin",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-alice-etcd}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-alice-etcd}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-alice-etcd, namespace: etcd-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-alice-etcd}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#,
    );
    // The registry is on the node's address, plain HTTP: the admin lets
    // the class fetch from it.
    let parameters = serde_json::json!({ "spec": { "parameters": {
        "insecureRegistries": [cluster.registry],
        "allowInternalAddresses": true,
    } } });
    cluster.admin(&[
        "patch",
        "provisionerclass",
        "registry-v1",
        "--type=merge",
        "-p",
        &parameters.to_string(),
    ]);
    cluster.apply_as(
        "alice",
        &format!(
            r#"apiVersion: core.pakket.dev/v1alpha1
kind: Instance
metadata: {{name: etcd}}
spec:
  class: registry-v1
  config: {{installNamespace: etcd-operator}}
  bundle:
    name: etcd-v0.9.4
    spec: {{class: registry-v1, refs: ["docker://{reference}"]}}
"#
        ),
    );
    cluster.wait_condition("etcd", "Installed", "True", Duration::from_secs(120));
    let crd_uid = uid(
        &cluster,
        &["get", "crd", "etcdclusters.etcd.database.coreos.com"],
    );

    // 4. Upgrade Pakket (new digests) with an Instance in flight.
    cluster.apply_as("alice", &plain_instance("during"));
    let upgrade = Command::new(repo().join("dev/in-cluster.sh"))
        .arg("images")
        .env("PAKKET_IN_CLUSTER_DIR", &cluster.dir)
        .env("PAKKET_IMAGE_LABEL", "e2e-upgrade")
        .output()
        .unwrap();
    let new_images_file = checked(upgrade, "dev/in-cluster.sh images");
    let new_images = std::fs::read_to_string(new_images_file.trim()).unwrap();
    assert_ne!(new_images, images, "new digests");
    let began = Instant::now();
    checked(
        cluster
            .command(repo().join("deploy/install.sh"))
            .args(["--images", new_images_file.trim()])
            .output()
            .unwrap(),
        "deploy/install.sh (upgrade)",
    );
    println!(
        "upgrade: install.sh with new digests done in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    let upgraded = cluster.pakket_pods_run(&new_images);
    assert!(
        upgraded.iter().all(|image| !first_images.contains(image)),
        "every Pod runs a new image: {upgraded:?}"
    );
    cluster.wait_condition("during", "Unpacked", "True", Duration::from_secs(120));
    checked(
        cluster
            .command("kubectl")
            .args(["instance", "approve", "during"])
            .output()
            .unwrap(),
        "kubectl instance approve during",
    );
    for name in ["hello", "etcd", "during"] {
        cluster.wait_condition(name, "Installed", "True", Duration::from_secs(120));
    }
    assert_eq!(
        uid(
            &cluster,
            &["-n", "alice", "get", "configmap", "hello-greeting"]
        ),
        greeting_uid,
        "hello's ConfigMap was not replaced"
    );
    assert_eq!(
        uid(
            &cluster,
            &["get", "crd", "etcdclusters.etcd.database.coreos.com"]
        ),
        crd_uid,
        "etcd's CRD was not replaced"
    );

    // 5. Uninstall: refused while Pakket manages content, then complete.
    let refused = cluster
        .command(repo().join("deploy/uninstall.sh"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("instance.core.pakket.dev/hello"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        cluster.json(&["get", "instances"])["items"]
            .as_array()
            .unwrap()
            .len()
            == 3
    );
    let began = Instant::now();
    checked(
        cluster
            .command(repo().join("deploy/uninstall.sh"))
            .arg("--delete-content")
            .output()
            .unwrap(),
        "deploy/uninstall.sh --delete-content",
    );
    println!(
        "uninstall with content: {:.0} s",
        began.elapsed().as_secs_f64()
    );
    for gone in [
        vec!["-n", "alice", "get", "configmap", "hello-greeting"],
        vec!["get", "crd", "etcdclusters.etcd.database.coreos.com"],
        vec!["get", "crd", "instances.core.pakket.dev"],
        vec!["get", "namespace", "pakket-system"],
        vec!["get", "validatingwebhookconfiguration", "pakket-webhooks"],
        vec!["get", "clusterrole", "pakket-plain"],
    ] {
        let output = cluster.kubectl_as("admin", &gone, None);
        assert!(
            !output.status.success(),
            "still there after uninstall: kubectl {}",
            gone.join(" ")
        );
    }
}
