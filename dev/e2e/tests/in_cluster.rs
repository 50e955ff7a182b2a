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
//!    Then alice, who may write HelmCharts in her namespace (no Instance
//!    rights needed), installs a chart pushed to the registry: the
//!    pakket-helm Pod (its image carries helm) writes its Instance as
//!    hers, a webhooks' delegate, and installs it into her namespace.
//! 4. an operator whose own admission server (the project's, in dev/e2e)
//!    is installed by registry-v1 from a bundle the test writes: its
//!    validating and mutating webhooks answer through the apiserver with
//!    the certificates Pakket issued, after Pakket rotates them, and after
//!    an upgrade of the Instance to a changed Deployment.
//! 5. Pakket is upgraded (`install.sh` with new digests) while an Instance
//!    is in flight: every Instance ends Installed, and nothing installed
//!    before is replaced (same UIDs).
//! 6. `deploy/uninstall.sh` refuses while Pakket manages content, then,
//!    with `--delete-content`, removes it all: content, Pakket, CRDs.
//! 7. Pakket again, this time through its Helm chart (`deploy/chart`,
//!    `helm install` with the same digests): every Pod runs the pinned
//!    image, alice's plain bundle installs and `kubectl wait
//!    --for=condition=Ready` sees it; `helm uninstall` then removes
//!    Pakket and leaves the CRDs, as Helm does with a chart's `crds/`,
//!    and the namespace that holds its release record.
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
            // The test operator's admission server too (step 4).
            .env("PAKKET_TEST_IMAGES", "1")
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
  labels: {core.pakket.dev/bundle-content: "true"}
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

/// The registry is on the node's address, plain HTTP: the admin lets
/// ProvisionerClass `class` fetch from it.
fn pull_from_the_registry(cluster: &Cluster, class: &str) {
    let parameters = serde_json::json!({ "spec": { "parameters": {
        "insecureRegistries": [cluster.registry],
        "allowInternalAddresses": true,
    } } });
    cluster.admin(&[
        "patch",
        "provisionerclass",
        class,
        "--type=merge",
        "-p",
        &parameters.to_string(),
    ]);
}

fn plain_instance(name: &str) -> String {
    PLAIN_CONTENT.replace("NAME", name)
}

fn uid(cluster: &Cluster, args: &[&str]) -> String {
    cluster.json(args)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The CSV of the test operator: one Deployment running the project's
/// admission server (`IMAGE`, answering as `VERSION`), and its webhooks
/// declared as real bundles declare them (cert-manager's 1.16.5 bundle in
/// the shared data has the same shape): a validating and a mutating
/// webhook for ConfigMaps that opt in with a label, each on the
/// Deployment's `https` port.
const ADMISSION_CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: e2e-admission.vVERSION
spec:
  displayName: Pakket e2e admission
  version: VERSION
  installModes:
  - {type: OwnNamespace, supported: false}
  - {type: SingleNamespace, supported: false}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: e2e-admission
        spec:
          replicas: 1
          selector: {matchLabels: {app: e2e-admission}}
          template:
            metadata: {labels: {app: e2e-admission}}
            spec:
              containers:
              - name: server
                image: IMAGE
                args: [--version-label, "vVERSION"]
                ports: [{name: https, containerPort: 9443}]
  webhookdefinitions:
  - type: ValidatingAdmissionWebhook
    generateName: validate.e2e.pakket.dev
    deploymentName: e2e-admission
    containerPort: 443
    targetPort: https
    webhookPath: /validate
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    objectSelector: {matchLabels: {e2e.pakket.dev/webhooks: "on"}}
    rules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  - type: MutatingAdmissionWebhook
    generateName: mutate.e2e.pakket.dev
    deploymentName: e2e-admission
    containerPort: 443
    targetPort: https
    webhookPath: /mutate
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    objectSelector: {matchLabels: {e2e.pakket.dev/webhooks: "on"}}
    rules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
"#;

/// Writes the test operator's bundle at `version` running `image`, pushes
/// it, and returns its reference.
fn push_admission_bundle(cluster: &Cluster, image: &str, version: &str) -> String {
    let dir = cluster.dir.with_extension(format!("bundle-{version}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(
        dir.join("manifests/e2e-admission.clusterserviceversion.yaml"),
        ADMISSION_CSV
            .replace("IMAGE", image)
            .replace("VERSION", version),
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: e2e-admission\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
    let reference = format!("{}/bundles/e2e-admission:v{version}", cluster.registry);
    checked(
        cluster
            .command("pakket")
            .args(["bundle", "push"])
            .arg(&dir)
            .args([&reference, "--insecure-plain-http"])
            .output()
            .unwrap(),
        "pakket bundle push (e2e-admission)",
    );
    // Pushed: the registry holds it now.
    let _ = std::fs::remove_dir_all(&dir);
    reference
}

/// Step 3b: a chart (a ConfigMap, written here) packaged by the pinned
/// helm and pushed to the registry as an OCI chart; alice, allowed to
/// write HelmCharts in her namespace, asks for it there; the helm class
/// may fetch from the registry (plain HTTP, the node's address), as the
/// admin lets registry-v1's. Installed as hers, by the pakket-helm Pod.
fn alice_installs_a_helm_chart(cluster: &Cluster) {
    let files = [
        (
            "Chart.yaml",
            "apiVersion: v2\nname: notes\nversion: 1.0.0\n",
        ),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message | quote }}\n",
        ),
    ];
    let (packaged, archive) =
        pakket_testkit::charts::with_chart(&Default::default(), &files, "http://127.0.0.1/");
    let work = tempfile_dir(cluster, "chart");
    let file = work.join(&archive);
    std::fs::write(&file, &packaged[&archive]).unwrap();
    let helm = pakket_controlplane::helm().expect("the pinned helm");
    checked(
        Command::new(helm)
            .args([
                "push".as_ref(),
                file.as_os_str(),
                format!("oci://{}/charts", cluster.registry).as_ref(),
                "--plain-http".as_ref(),
            ])
            .env("HOME", &work)
            .output()
            .unwrap(),
        "helm push (notes)",
    );
    pull_from_the_registry(cluster, "helm");
    cluster.apply_as(
        "admin",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-alice-helmcharts, namespace: alice}
rules:
- {apiGroups: [helm.pakket.dev], resources: [helmcharts], verbs: [get, list, watch, create, update, patch, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-alice-helmcharts, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-alice-helmcharts}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#,
    );
    cluster.apply_as(
        "alice",
        &format!(
            r#"apiVersion: helm.pakket.dev/v1alpha1
kind: HelmChart
metadata: {{name: notes, namespace: alice}}
spec:
  chart: oci://{}/charts/notes:1.0.0
  values: {{message: "alice's chart"}}
"#,
            cluster.registry
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let chart = cluster.json(&["get", "helmchart", "notes", "-n", "alice"]);
        let installed = chart["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Installed" && c["status"] == "True");
        if installed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "alice's HelmChart not installed in 180 s: {}",
            chart["status"]
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let config_map = cluster.json(&["get", "configmap", "notes", "-n", "alice"]);
    assert_eq!(config_map["data"]["message"], "alice's chart");
}

/// A fresh folder under the cluster's, for files a step writes.
fn tempfile_dir(cluster: &Cluster, name: &str) -> PathBuf {
    let dir = cluster.dir.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Instance that installs the test operator at `version`.
fn admission_instance(reference: &str, version: &str) -> String {
    format!(
        r#"apiVersion: core.pakket.dev/v1alpha1
kind: Instance
metadata: {{name: webhooks}}
spec:
  class: registry-v1
  config: {{installNamespace: e2e-admission}}
  bundle:
    name: e2e-admission-v{version}
    spec: {{class: registry-v1, refs: ["docker://{reference}"]}}
"#
    )
}

/// Creates a ConfigMap in `default` that asks for the test operator's
/// webhooks (and to be refused, when `deny`): what the apiserver said, and
/// the object it stored.
fn through_the_webhooks(cluster: &Cluster, deny: bool) -> Result<Value, String> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let verdict = if deny { "deny" } else { "allow" };
    let yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-webhooks-{n}\n  namespace: default\n  labels: {{e2e.pakket.dev/webhooks: \"on\", e2e.pakket.dev/verdict: {verdict}}}\ndata: {{n: \"{n}\"}}\n"
    );
    let output = cluster.kubectl_as("admin", &["create", "-o", "json", "-f", "-"], Some(&yaml));
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Polls the validating webhook (a ConfigMap it must refuse) until its
/// refusal satisfies `done`; returns the refusal.
fn refusal_until(
    cluster: &Cluster,
    within: Duration,
    what: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let said = match through_the_webhooks(cluster, true) {
            Ok(stored) => panic!("a ConfigMap labelled to be refused was stored: {stored}"),
            Err(said) => said,
        };
        if done(&said) {
            return said;
        }
        assert!(
            Instant::now() < deadline,
            "{what} after {within:?}; the apiserver said: {said}"
        );
        std::thread::sleep(Duration::from_secs(3));
    }
}

/// The serving certificate named in a webhook's answer.
fn certificate_in(answer: &str) -> String {
    answer
        .split("with certificate ")
        .nth(1)
        .map(|rest| rest.chars().take(16).collect())
        .unwrap_or_default()
}

/// Step 4: a registry+v1 bundle the test writes, whose operator is the
/// project's own admission server (`pakket-e2e-admission`, pushed with
/// `pakket image push` by dev/images/build.sh), installed by registry-v1:
/// its validating and mutating webhooks answer through the apiserver with
/// the certificates Pakket issued, keep answering after Pakket rotates the
/// serving certificate (the class's provisioner set to rotate every two
/// minutes), and after the Instance is upgraded to a changed Deployment;
/// deleting the Instance removes the webhooks.
fn operator_webhooks_answer(cluster: &Cluster, images: &str) {
    let image = images
        .lines()
        .find_map(|line| line.strip_prefix("pakket-e2e-admission="))
        .expect("dev/images/build.sh pushed pakket-e2e-admission (PAKKET_TEST_IMAGES=1)")
        .to_owned();
    // Certificates that rotate every two minutes rather than every 90 days.
    cluster.admin(&[
        "-n",
        "pakket-system",
        "set",
        "env",
        "deployment/pakket-registry-v1",
        "PAKKET_CERTIFICATE_PERIOD_SECONDS=120",
    ]);
    cluster.admin(&[
        "-n",
        "pakket-system",
        "rollout",
        "status",
        "deployment/pakket-registry-v1",
        "--timeout=180s",
    ]);
    let v1 = push_admission_bundle(cluster, &image, "0.1.0");
    cluster.admin(&["create", "namespace", "e2e-admission"]);
    cluster.apply_as("admin", &admission_instance(&v1, "0.1.0"));
    cluster.wait_condition("webhooks", "Installed", "True", Duration::from_secs(180));
    cluster.wait_condition("webhooks", "Healthy", "True", Duration::from_secs(180));
    let ca_bundle = |kind: &str, name: &str| {
        cluster.json(&["get", kind, name])["webhooks"][0]["clientConfig"]["caBundle"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let ca = ca_bundle("validatingwebhookconfiguration", "validate.e2e.pakket.dev");
    assert!(!ca.is_empty(), "the caBundle Pakket issued");
    assert_eq!(
        ca_bundle("mutatingwebhookconfiguration", "mutate.e2e.pakket.dev"),
        ca
    );

    // Refused, through the apiserver, by the operator's own server.
    let refused = refusal_until(cluster, Duration::from_secs(60), "no refusal", |said| {
        said.contains("refused by the e2e operator's webhook v0.1.0")
    });
    let first = certificate_in(&refused);
    assert_eq!(first.len(), 16, "{refused}");
    // Mutated: the annotation the server adds, with the same certificate.
    let stored = through_the_webhooks(cluster, false).expect("an allowed ConfigMap is stored");
    assert_eq!(
        stored["metadata"]["annotations"]["e2e.pakket.dev/mutated-by"],
        format!("v0.1.0 with certificate {first}"),
        "{stored}"
    );

    // Pakket rotates the serving certificate; the Pod reads the new one
    // from its Secret; the apiserver still trusts it (the CA stays).
    let began = Instant::now();
    let rotated = refusal_until(
        cluster,
        Duration::from_secs(360),
        "the serving certificate was not rotated",
        |said| {
            said.contains("refused by the e2e operator's webhook") && certificate_in(said) != first
        },
    );
    println!(
        "webhook serving certificate rotated and served {:.0} s after the first answer",
        began.elapsed().as_secs_f64()
    );
    let second = certificate_in(&rotated);
    assert_eq!(
        ca_bundle("validatingwebhookconfiguration", "validate.e2e.pakket.dev"),
        ca,
        "the caBundle never changes"
    );
    let stored = through_the_webhooks(cluster, false).expect("an allowed ConfigMap is stored");
    assert_eq!(
        stored["metadata"]["annotations"]["e2e.pakket.dev/mutated-by"],
        format!("v0.1.0 with certificate {second}")
    );

    // An upgrade to a changed Deployment: the new server answers.
    let v2 = push_admission_bundle(cluster, &image, "0.2.0");
    cluster.apply_as("admin", &admission_instance(&v2, "0.2.0"));
    refusal_until(
        cluster,
        Duration::from_secs(180),
        "the upgraded server does not answer",
        |said| said.contains("refused by the e2e operator's webhook v0.2.0"),
    );
    let upgraded = cluster.wait_condition("webhooks", "Healthy", "True", Duration::from_secs(180));
    assert_eq!(
        upgraded["status"]["activeBundle"], "e2e-admission-v0.2.0",
        "{upgraded}"
    );
    let stored = through_the_webhooks(cluster, false).expect("an allowed ConfigMap is stored");
    assert!(
        stored["metadata"]["annotations"]["e2e.pakket.dev/mutated-by"]
            .as_str()
            .is_some_and(|by| by.starts_with("v0.2.0 with certificate ")),
        "{stored}"
    );

    // Uninstalled: the webhooks go with it, and nothing is refused.
    cluster.admin(&["delete", "instance", "webhooks", "--timeout=180s"]);
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        let name = if kind.starts_with("validating") {
            "validate.e2e.pakket.dev"
        } else {
            "mutate.e2e.pakket.dev"
        };
        assert!(
            !cluster
                .kubectl_as("admin", &["get", kind, name], None)
                .status
                .success(),
            "{kind} {name} is gone with the Instance"
        );
    }
    through_the_webhooks(cluster, true).expect("no webhook refuses once uninstalled");
    cluster.admin(&[
        "delete",
        "configmaps",
        "-n",
        "default",
        "-l",
        "e2e.pakket.dev/webhooks=on",
    ]);
}

#[test]
fn pakket_from_its_images_serves_a_non_admin_upgrades_in_flight_and_uninstalls_clean() {
    let cluster = Cluster::up();
    let images = std::fs::read_to_string(format!("{}.images.env", cluster.dir.display())).unwrap();
    let first_images = cluster.pakket_pods_run(&images);
    assert_eq!(
        first_images.len(),
        6,
        "six Pakket images run (webhooks, plain, registry-v1, resolveset, package, helm): {first_images:?}"
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
    pull_from_the_registry(&cluster, "registry-v1");
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

    // 3b. alice's HelmChart, installed by the pakket-helm Pod as hers.
    alice_installs_a_helm_chart(&cluster);

    // 4. An operator's own webhooks, answering through the apiserver.
    operator_webhooks_answer(&cluster, &images);

    // 5. Upgrade Pakket (new digests) with an Instance in flight.
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

    // 6. Uninstall: refused while Pakket manages content, then complete.
    let refused = cluster
        .command(repo().join("deploy/uninstall.sh"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("instance.core.pakket.dev/hello")
            && said.contains("helmchart.helm.pakket.dev/notes"),
        "{said}"
    );
    // hello, etcd, during, and the Instance of alice's HelmChart.
    assert_eq!(
        cluster.json(&["get", "instances"])["items"]
            .as_array()
            .unwrap()
            .len(),
        4
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

    // 7. Pakket again, through its Helm chart.
    helm_installs_pakket(&cluster, &new_images);
}

/// The `--set` flags that pin each Pakket image of an images file in the
/// chart's values (`pakket-registry-v1=REG/pakket-registry-v1@sha256:…` is
/// `registryV1.image.repository` and `registryV1.image.digest`), as the
/// chart's README shows; the test operator's image is not Pakket's.
fn chart_image_values(images: &str) -> Vec<String> {
    let mut set = Vec::new();
    for line in images.lines() {
        let Some((name, reference)) = line.split_once('=') else {
            continue;
        };
        let Some(component) = name.strip_prefix("pakket-") else {
            continue;
        };
        if component == "e2e-admission" {
            continue;
        }
        let key = if component == "registry-v1" {
            "registryV1"
        } else {
            component
        };
        let (repository, digest) = reference
            .split_once('@')
            .unwrap_or_else(|| panic!("{name} is not pinned by digest: {reference}"));
        set.push("--set".to_owned());
        set.push(format!("{key}.image.repository={repository}"));
        set.push("--set".to_owned());
        set.push(format!("{key}.image.digest={digest}"));
    }
    set
}

/// Step 7: `helm install` of deploy/chart on the cluster uninstall.sh left
/// clean, with the images of the upgrade; alice's plain bundle, approved,
/// is Ready; `helm uninstall` takes Pakket away and leaves the CRDs and
/// the `pakket-system` namespace (`helm.sh/resource-policy: keep`).
fn helm_installs_pakket(cluster: &Cluster, images: &str) {
    let helm = pakket_controlplane::helm().expect("the pinned helm");
    let work = tempfile_dir(cluster, "helm-home");
    let helm_run = |args: &[&str], what: &str| {
        let began = Instant::now();
        checked(
            cluster
                .command(&helm)
                .args(args)
                .args(["--kube-context", "admin"])
                .env("HOME", &work)
                .output()
                .unwrap(),
            what,
        );
        println!("{what}: {:.0} s", began.elapsed().as_secs_f64());
    };
    let mut install = vec![
        "install",
        "pakket",
        "deploy/chart",
        "--namespace",
        "pakket-system",
        "--create-namespace",
        "--wait",
        "--timeout",
        "300s",
    ];
    let values = chart_image_values(images);
    install.extend(values.iter().map(String::as_str));
    helm_run(&install, "helm install pakket deploy/chart");
    let running = cluster.pakket_pods_run(images);
    assert_eq!(
        running.len(),
        6,
        "the chart runs the six Pakket images it was given: {running:?}"
    );

    // The CRDs came from the chart's crds/ (uninstall.sh deleted them).
    cluster.apply_as("admin", ALICE);
    cluster.apply_as("alice", &plain_instance("charted"));
    cluster.wait_condition("charted", "Unpacked", "True", Duration::from_secs(120));
    checked(
        cluster
            .command("kubectl")
            .args(["instance", "approve", "charted"])
            .output()
            .unwrap(),
        "kubectl instance approve charted",
    );
    checked(
        cluster
            .command("kubectl")
            .args([
                "--context",
                "admin",
                "wait",
                "--for=condition=Ready",
                "instance/charted",
                "--timeout=120s",
            ])
            .output()
            .unwrap(),
        "kubectl wait --for=condition=Ready instance/charted",
    );
    let greeting = cluster.json(&["-n", "alice", "get", "configmap", "charted-greeting"]);
    assert_eq!(
        greeting["data"]["message"],
        "hello from alice's plain bundle"
    );

    // Content first (its finalizers need the provisioners), then Pakket.
    cluster.admin(&["delete", "instance", "charted", "--wait", "--timeout=120s"]);
    helm_run(
        &[
            "uninstall",
            "pakket",
            "--namespace",
            "pakket-system",
            "--wait",
            "--timeout",
            "300s",
        ],
        "helm uninstall pakket",
    );
    for gone in [
        vec!["get", "validatingwebhookconfiguration", "pakket-webhooks"],
        vec!["get", "mutatingwebhookconfiguration", "pakket-webhooks"],
        vec!["get", "clusterrole", "pakket-plain"],
        vec![
            "-n",
            "pakket-system",
            "get",
            "deployment",
            "pakket-webhooks",
        ],
    ] {
        let output = cluster.kubectl_as("admin", &gone, None);
        assert!(
            !output.status.success(),
            "still there after helm uninstall: kubectl {}",
            gone.join(" ")
        );
    }
    // Helm never deletes a chart's crds/, and keeps the namespace that
    // holds its release record (the chart's README says why).
    cluster.admin(&["get", "crd", "instances.core.pakket.dev"]);
    cluster.admin(&["get", "namespace", "pakket-system"]);
}
