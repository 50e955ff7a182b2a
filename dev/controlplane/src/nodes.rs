//! Fake nodes: kube-scheduler places Pods and kwok plays the kubelet of N
//! Node objects, so Deployments on the loopback control plane become
//! Available without a container runtime.
//!
//! What kwok does with a node or pod is driven by its stages
//! (`kwok-stages.yaml`, embedded here); the Node objects themselves are
//! created by us, as a kubelet would register itself, with the annotation
//! kwok is told to manage.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use crate::error::Result;

/// The annotation kwok selects its nodes by (`--manage-nodes-with-annotation-selector`).
pub const KWOK_ANNOTATION: &str = "kwok.x-k8s.io/node";
/// Its value on our nodes.
pub const KWOK_ANNOTATION_VALUE: &str = "fake";
/// The label on every fake node (`type=kwok`), for tests that want to select them.
pub const NODE_TYPE_LABEL: (&str, &str) = ("type", "kwok");

/// kwok's stages, shipped with the crate so `pakket-dev` works from any directory.
pub const STAGES: &str = include_str!("../kwok-stages.yaml");

/// The names of `count` fake nodes: `kwok-node-0` ….
pub fn names(count: usize) -> Vec<String> {
    (0..count)
        .map(|index| format!("kwok-node-{index}"))
        .collect()
}

/// A Node as a kubelet would register it. Roomy enough that no test runs
/// out of cpu, memory or pod slots on one node, and without taints so plain
/// Deployments schedule without tolerations.
pub fn node(name: &str) -> Node {
    let resources: BTreeMap<String, Quantity> =
        [("cpu", "32"), ("memory", "256Gi"), ("pods", "110")]
            .into_iter()
            .map(|(resource, amount)| (resource.to_owned(), Quantity(amount.to_owned())))
            .collect();
    let mut node = Node::default();
    node.metadata.name = Some(name.to_owned());
    node.metadata.annotations = Some(BTreeMap::from([(
        KWOK_ANNOTATION.to_owned(),
        KWOK_ANNOTATION_VALUE.to_owned(),
    )]));
    node.metadata.labels = Some(BTreeMap::from([
        (NODE_TYPE_LABEL.0.to_owned(), NODE_TYPE_LABEL.1.to_owned()),
        ("kubernetes.io/hostname".to_owned(), name.to_owned()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
    ]));
    // The apiserver keeps the status of a created Node (kubelets register
    // this way), and our node-ready stage reports it back as it is.
    node.status = Some(NodeStatus {
        allocatable: Some(resources.clone()),
        capacity: Some(resources),
        ..NodeStatus::default()
    });
    node
}

/// Creates the nodes; one left by an earlier start-up attempt (same etcd
/// data) is kept.
pub async fn create(client: &Client, names: &[String]) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    for name in names {
        match nodes.create(&PostParams::default(), &node(name)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// `Ok` when every named node is Ready and untainted (the controller
/// manager taints a node `not-ready` until kwok reports it Ready, and the
/// scheduler skips it until the taint is gone); otherwise what is missing.
pub fn all_ready(found: &[Node], names: &[String]) -> Result<(), String> {
    let missing: Vec<String> = names
        .iter()
        .filter_map(|name| {
            let Some(node) = found.iter().find(|node| &node.name_any() == name) else {
                return Some(format!("{name}: not created"));
            };
            let ready = node
                .status
                .as_ref()
                .and_then(|status| status.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|condition| condition.type_ == "Ready" && condition.status == "True")
                });
            let taints: Vec<&str> = node
                .spec
                .as_ref()
                .and_then(|spec| spec.taints.as_ref())
                .map(|taints| taints.iter().map(|taint| taint.key.as_str()).collect())
                .unwrap_or_default();
            match (ready, taints.is_empty()) {
                (true, true) => None,
                (false, _) => Some(format!("{name}: not Ready")),
                (true, false) => Some(format!("{name}: tainted {}", taints.join(", "))),
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("; "))
    }
}

/// kube-scheduler's arguments. `kubeconfig` carries the admin identity;
/// `client_ca` is the control plane's CA, trusted for client certificates.
pub fn scheduler_args(
    kubeconfig: &Path,
    client_ca: &Path,
    port: u16,
    cert_dir: &Path,
) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--authentication-kubeconfig={}", kubeconfig.display()),
        format!("--authorization-kubeconfig={}", kubeconfig.display()),
        // The lookup reads the apiserver's front-proxy CA, which this
        // apiserver has none of; the scheduler would log an error for it
        // again and again. The client CA given directly is all it needs.
        "--authentication-skip-lookup=true".into(),
        format!("--client-ca-file={}", client_ca.display()),
        // Its default port 10259 would collide between control planes side
        // by side; a kernel-chosen loopback port keeps /healthz reachable.
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--cert-dir={}", cert_dir.display()),
        "--leader-elect=false".into(),
        "--profiling=false".into(),
        "--v=1".into(),
    ]
}

/// kwok's arguments: out of cluster against `kubeconfig`, managing only the
/// nodes carrying our annotation, with the stages in `stages`.
pub fn kwok_args(kubeconfig: &Path, stages: &Path) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--config={}", stages.display()),
        "--manage-all-nodes=false".into(),
        format!(
            "--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}={KWOK_ANNOTATION_VALUE}"
        ),
        // The default /24 holds 254 pod IPs for the whole cluster; a shared
        // test control plane can hold more pods than that at once.
        "--cidr=10.0.0.0/16".into(),
        // kwok renews each node's Lease, the heartbeat the node lifecycle
        // controller goes by; without it (v0.8's default is off) a node
        // turns NotReady within a minute and its Pods lose Ready.
        "--node-lease-duration-seconds=40".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, Taint};

    fn with_ready(mut node: Node, status: &str) -> Node {
        node.status.get_or_insert_default().conditions = Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            ..NodeCondition::default()
        }]);
        node
    }

    #[test]
    fn nodes_are_annotated_for_kwok_untainted_and_roomy() {
        let node = node("kwok-node-0");
        assert_eq!(node.annotations()[KWOK_ANNOTATION], KWOK_ANNOTATION_VALUE);
        assert_eq!(node.labels()["type"], "kwok");
        assert!(node.spec.is_none());
        let allocatable = node.status.unwrap().allocatable.unwrap();
        assert_eq!(allocatable["pods"], Quantity("110".into()));
    }

    #[test]
    fn ready_means_every_node_ready_and_untainted() {
        let names = names(2);
        let ready = with_ready(node("kwok-node-0"), "True");
        assert_eq!(
            all_ready(std::slice::from_ref(&ready), &names),
            Err("kwok-node-1: not created".into())
        );
        let mut tainted = with_ready(node("kwok-node-1"), "True");
        tainted.spec = Some(NodeSpec {
            taints: Some(vec![Taint {
                key: "node.kubernetes.io/not-ready".into(),
                effect: "NoSchedule".into(),
                ..Taint::default()
            }]),
            ..NodeSpec::default()
        });
        assert_eq!(
            all_ready(&[ready.clone(), tainted], &names),
            Err("kwok-node-1: tainted node.kubernetes.io/not-ready".into())
        );
        let pending = with_ready(node("kwok-node-1"), "Unknown");
        assert_eq!(
            all_ready(&[ready.clone(), pending], &names),
            Err("kwok-node-1: not Ready".into())
        );
        let both = [ready, with_ready(node("kwok-node-1"), "True")];
        assert_eq!(all_ready(&both, &names), Ok(()));
    }

    #[test]
    fn stages_cover_nodes_and_pods() {
        for stage in [
            "node-ready",
            "node-heartbeat",
            "pod-running",
            "pod-job-done",
            "pod-gone",
        ] {
            assert!(
                STAGES.contains(&format!("name: {stage}\n")),
                "{stage} missing"
            );
        }
    }
}
