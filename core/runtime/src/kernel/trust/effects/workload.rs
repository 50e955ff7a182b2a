//! Workloads: objects that run pods, with the identity and host access
//! those pods get. A Pod, a Deployment, StatefulSet, DaemonSet, ReplicaSet,
//! ReplicationController, Job or CronJob; and any other kind whose spec
//! holds a pod template (`spec.template.spec.containers`, as Argo's
//! Rollouts or OpenKruise's kinds do), since whatever controller reads it
//! runs those pods.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Landing, PAKKET_SERVICE_ACCOUNTS, group_of};
use crate::apply::reference_of;

/// One workload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Workload {
    /// Its API group.
    pub group: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (where its pods run).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The ServiceAccount its pods run as (in `namespace`; `default` when
    /// the pod names none).
    pub service_account: String,
    /// Whether it runs in a Pakket namespace.
    pub pakket_namespace: bool,
    /// Whether it runs as one of the ServiceAccounts Pakket's provisioners
    /// and webhooks hold their rights through.
    pub pakket_service_account: bool,
    /// `hostNetwork`.
    pub host_network: bool,
    /// `hostPID`.
    #[serde(rename = "hostPID")]
    pub host_pid: bool,
    /// `hostIPC`.
    #[serde(rename = "hostIPC")]
    pub host_ipc: bool,
    /// A container (init and ephemeral ones included) is privileged, or a
    /// Windows host process.
    pub privileged: bool,
    /// The host paths its volumes mount.
    pub host_paths: Vec<String>,
    /// The capabilities its containers add.
    pub added_capabilities: Vec<String>,
    /// The host ports its containers take.
    pub host_ports: Vec<i64>,
    /// Any of the above host access.
    pub host_access: bool,
    /// In words, for people.
    pub sentence: String,
}

impl Workload {
    /// Whether `old` already ran with this identity and at least this host
    /// access (then this workload is nothing new, whatever its name).
    pub(super) fn within(&self, old: &Workload) -> bool {
        let implied = |new: bool, old: bool| !new || old;
        self.namespace == old.namespace
            && self.service_account == old.service_account
            && implied(self.host_network, old.host_network)
            && implied(self.host_pid, old.host_pid)
            && implied(self.host_ipc, old.host_ipc)
            && implied(self.privileged, old.privileged)
            && self.host_paths.iter().all(|p| old.host_paths.contains(p))
            && self
                .added_capabilities
                .iter()
                .all(|c| old.added_capabilities.contains(c))
            && self.host_ports.iter().all(|p| old.host_ports.contains(p))
    }

    /// Its longest list.
    pub(super) fn widest_collection(&self) -> usize {
        self.host_paths
            .len()
            .max(self.added_capabilities.len())
            .max(self.host_ports.len())
    }
}

/// The workloads among `objects` (placed: every namespaced object names
/// its namespace).
pub(super) fn of(objects: &[Value], landing: &Landing) -> Vec<Workload> {
    objects
        .iter()
        .filter_map(|object| workload(object, landing))
        .collect()
}

/// Where `object`'s pod spec is, if it runs pods.
fn pod_spec(object: &Value) -> Option<&Value> {
    let reference = reference_of(object);
    let known = match (group_of(&reference.api_version), reference.kind.as_str()) {
        ("", "Pod") => object.get("spec"),
        ("batch", "CronJob") => object.pointer("/spec/jobTemplate/spec/template/spec"),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job") => object.pointer("/spec/template/spec"),
        _ => None,
    };
    known.or_else(|| {
        [
            "/spec/template/spec",
            "/spec/jobTemplate/spec/template/spec",
        ]
        .into_iter()
        .filter_map(|pointer| object.pointer(pointer))
        .find(|spec| spec.get("containers").is_some_and(Value::is_array))
    })
}

/// What of the host a Pod spec's containers reach beyond the host
/// namespaces: privilege, capabilities, host paths and host ports.
struct HostAccess {
    privileged: bool,
    added_capabilities: Vec<String>,
    host_paths: Vec<String>,
    host_ports: Vec<i64>,
}

fn host_access(spec: &Value, containers: &[&Value]) -> HostAccess {
    let security = |container: &Value, pointer: &str| {
        container
            .pointer(&format!("/securityContext{pointer}"))
            .cloned()
    };
    let privileged = containers.iter().any(|container| {
        security(container, "/privileged") == Some(Value::Bool(true))
            || security(container, "/windowsOptions/hostProcess") == Some(Value::Bool(true))
    }) || spec.pointer("/securityContext/windowsOptions/hostProcess")
        == Some(&Value::Bool(true));
    let mut added_capabilities: Vec<String> = containers
        .iter()
        .filter_map(|container| security(container, "/capabilities/add"))
        .filter_map(|added| added.as_array().cloned())
        .flatten()
        .filter_map(|capability| capability.as_str().map(str::to_owned))
        .collect();
    added_capabilities.sort();
    added_capabilities.dedup();
    let mut host_paths: Vec<String> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|volume| volume.pointer("/hostPath/path"))
        .filter_map(|path| path.as_str().map(str::to_owned))
        .collect();
    host_paths.sort();
    host_paths.dedup();
    let mut host_ports: Vec<i64> = containers
        .iter()
        .filter_map(|container| container.get("ports").and_then(Value::as_array))
        .flatten()
        .filter_map(|port| port.get("hostPort").and_then(Value::as_i64))
        .filter(|port| *port != 0)
        .collect();
    host_ports.sort_unstable();
    host_ports.dedup();
    HostAccess {
        privileged,
        added_capabilities,
        host_paths,
        host_ports,
    }
}

fn workload(object: &Value, landing: &Landing) -> Option<Workload> {
    let spec = pod_spec(object)?;
    let reference = reference_of(object);
    let flag = |field: &str| spec.get(field).and_then(Value::as_bool).unwrap_or(false);
    let text = |value: &Value, field: &str| {
        value
            .get(field)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let service_account = text(spec, "serviceAccountName")
        .or_else(|| text(spec, "serviceAccount"))
        .unwrap_or_else(|| "default".to_owned());
    let namespace = reference.namespace.clone().unwrap_or_default();
    let containers: Vec<&Value> = ["containers", "initContainers", "ephemeralContainers"]
        .into_iter()
        .filter_map(|field| spec.get(field).and_then(Value::as_array))
        .flatten()
        .collect();
    let HostAccess {
        privileged,
        added_capabilities,
        host_paths,
        host_ports,
    } = host_access(spec, &containers);
    let pakket_namespace = landing.pakket_namespaces.contains(&namespace);
    let mut made = Workload {
        group: group_of(&reference.api_version).to_owned(),
        kind: reference.kind,
        name: reference.name,
        pakket_service_account: pakket_namespace
            && PAKKET_SERVICE_ACCOUNTS.contains(&service_account.as_str()),
        pakket_namespace,
        namespace,
        service_account,
        host_network: flag("hostNetwork"),
        host_pid: flag("hostPID"),
        host_ipc: flag("hostIPC"),
        privileged,
        host_paths,
        added_capabilities,
        host_ports,
        ..Workload::default()
    };
    made.host_access = made.host_network
        || made.host_pid
        || made.host_ipc
        || made.privileged
        || !made.host_paths.is_empty()
        || !made.added_capabilities.is_empty()
        || !made.host_ports.is_empty();
    made.sentence = sentence(&made);
    Some(made)
}

fn sentence(workload: &Workload) -> String {
    let mut access = Vec::new();
    for (set, what) in [
        (workload.host_network, "the host's network"),
        (workload.host_pid, "the host's processes"),
        (workload.host_ipc, "the host's IPC"),
        (workload.privileged, "privileged containers"),
    ] {
        if set {
            access.push(what.to_owned());
        }
    }
    access.extend(
        workload
            .host_paths
            .iter()
            .map(|path| format!("host path {path}")),
    );
    if !workload.added_capabilities.is_empty() {
        access.push(format!(
            "capabilities {}",
            workload.added_capabilities.join(", ")
        ));
    }
    access.extend(
        workload
            .host_ports
            .iter()
            .map(|port| format!("host port {port}")),
    );
    let mut text = format!(
        "{} {}/{} runs as ServiceAccount {}/{}",
        workload.kind,
        workload.namespace,
        workload.name,
        workload.namespace,
        workload.service_account
    );
    if workload.pakket_service_account {
        text.push_str(" (a Pakket provisioner's or webhook's own identity)");
    } else if workload.pakket_namespace {
        text.push_str(" (in Pakket's own namespace)");
    }
    if !access.is_empty() {
        text.push_str(&format!(" with {}", access.join(", ")));
    }
    text
}
