//! Phases: the order a set of objects is applied in, and where the apply
//! waits for what it applied to work before it goes on.
//!
//! Every object belongs to one phase, by its kind (unknown kinds, custom
//! resources included, are workloads). Objects are written phase by phase.
//! After the phases whose objects take time to work (storage, services and
//! issuers, workloads), the built-in probes must pass before a later phase
//! is written: a PersistentVolumeClaim Bound, a Certificate or Issuer
//! Ready, a Deployment, StatefulSet or DaemonSet rolled out and Available,
//! a Job complete. So an admission webhook is registered only once the
//! Deployment that serves it answers, and an Ingress or an autoscaler only
//! once what it points at runs. Namespaces (Active on creation) and CRDs
//! (their custom resources already wait for them to be Established and
//! served) need no gate of their own.
//!
//! A gate only holds when a later phase has objects: most sets (a
//! ConfigMap, a Deployment, a Service) are written at once, as before.

use serde_json::Value;

use pakket_api::ObjectRef;

use super::declared_phases::DeclaredPhases;
use super::probes::ProgressionProbes;
use super::{HealthProblem, Kinds, condition_of as condition, health_problem, reference_of};
use pakket_api::group_of;

/// The phases, in the order they are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Namespaces: everything namespaced lands in one.
    Namespaces,
    /// What constrains what runs: NetworkPolicies, quotas, limits,
    /// PodDisruptionBudgets, PriorityClasses.
    Policies,
    /// ServiceAccounts.
    ServiceAccounts,
    /// ConfigMaps and Secrets.
    Configuration,
    /// StorageClasses, PersistentVolumes and their claims.
    Storage,
    /// CustomResourceDefinitions.
    Crds,
    /// Roles and ClusterRoles.
    Roles,
    /// RoleBindings and ClusterRoleBindings.
    Bindings,
    /// Services, and cert-manager's issuers and certificates.
    Services,
    /// Workloads, and every kind not named elsewhere (custom resources).
    Workloads,
    /// Autoscalers.
    Autoscaling,
    /// What publishes a workload: Ingresses, Gateway API routes, monitors.
    Publishing,
    /// What sends the apiserver's requests to a workload: admission
    /// webhooks and policies, APIServices. Last, so that they never point
    /// at a server that does not answer yet.
    Admission,
}

impl Phase {
    /// The phase of objects of `kind` in `api_version`.
    pub fn of(api_version: &str, kind: &str) -> Self {
        match (group_of(api_version), kind) {
            ("", "Namespace") => Self::Namespaces,
            ("networking.k8s.io", "NetworkPolicy")
            | ("", "ResourceQuota" | "LimitRange")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass") => Self::Policies,
            ("", "ServiceAccount") => Self::ServiceAccounts,
            ("", "ConfigMap" | "Secret") => Self::Configuration,
            ("", "PersistentVolume" | "PersistentVolumeClaim")
            | ("storage.k8s.io", "StorageClass") => Self::Storage,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => Self::Crds,
            ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => Self::Roles,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => Self::Bindings,
            ("", "Service") | ("cert-manager.io", "Issuer" | "ClusterIssuer" | "Certificate") => {
                Self::Services
            }
            ("autoscaling" | "autoscaling.k8s.io", _) => Self::Autoscaling,
            ("networking.k8s.io", "Ingress" | "IngressClass")
            | ("gateway.networking.k8s.io", _)
            | ("route.openshift.io", "Route")
            | ("monitoring.coreos.com", "ServiceMonitor" | "PodMonitor" | "PrometheusRule") => {
                Self::Publishing
            }
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding",
            )
            | ("apiregistration.k8s.io", "APIService") => Self::Admission,
            _ => Self::Workloads,
        }
    }

    /// The phase of `object`.
    pub fn of_object(object: &Value) -> Self {
        let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
        Self::of(text("apiVersion"), text("kind"))
    }

    /// Its name in status messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::Policies => "policies",
            Self::ServiceAccounts => "service accounts",
            Self::Configuration => "configuration",
            Self::Storage => "storage",
            Self::Crds => "CRDs",
            Self::Roles => "roles",
            Self::Bindings => "bindings",
            Self::Services => "services and issuers",
            Self::Workloads => "workloads",
            Self::Autoscaling => "autoscaling",
            Self::Publishing => "publishing",
            Self::Admission => "admission",
        }
    }

    /// Whether objects of this phase are probed before a later phase
    /// starts.
    fn gates(self) -> bool {
        matches!(self, Self::Storage | Self::Services | Self::Workloads)
    }
}

/// Where an object is applied: its declared phase (content's
/// [`super::declared_phases`]; all in one when it declares none), then its
/// kind's phase inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stage {
    /// The declared phase's index.
    pub declared: usize,
    /// The kind's phase.
    pub phase: Phase,
}

impl Stage {
    /// The stage of `object`. Namespaces and CRDs are written first
    /// whatever a declared phase says: everything else may need them.
    pub fn of(object: &Value, phases: &DeclaredPhases) -> Self {
        let phase = Phase::of_object(object);
        let declared = match phase {
            Phase::Namespaces | Phase::Crds => 0,
            _ => phases.index_of(object),
        };
        Self { declared, phase }
    }

    /// Its name in status: the kind's phase, after the declared phase's
    /// name when content declares phases (`storage/configuration`).
    pub fn name(self, phases: &DeclaredPhases) -> String {
        if phases.is_empty() {
            self.phase.name().to_owned()
        } else {
            format!("{}/{}", phases.name(self.declared), self.phase.name())
        }
    }
}

/// A point the apply waits at: everything up to `after` is written, and
/// `probed` must pass before the stage `next` starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    /// The last stage written before it.
    pub after: Stage,
    /// The first stage that waits for it.
    pub next: Stage,
    /// `after`'s name in status.
    pub reached: String,
    /// `next`'s name in status.
    pub waits: String,
    /// The objects whose probes must pass.
    pub probed: Vec<ObjectRef>,
}

/// The gates of `objects`, in order: one after each stage that has
/// objects with a probe (built-in, after the gating phases; or one of
/// `probes`, after any stage) and is followed by a stage with objects.
pub fn gates(objects: &[Value], probes: &ProgressionProbes) -> Vec<Gate> {
    let declared = probes.phases();
    let stages: Vec<Stage> = objects
        .iter()
        .map(|object| Stage::of(object, declared))
        .collect();
    let probed_here = |object: &Value, stage: Stage| {
        (stage.phase.gates() && has_probe(object)) || user_may_probe(probes, object)
    };
    let mut gates = Vec::new();
    let mut gating: Vec<Stage> = objects
        .iter()
        .zip(&stages)
        .filter(|(object, stage)| probed_here(object, **stage))
        .map(|(_, stage)| *stage)
        .collect();
    gating.sort();
    gating.dedup();
    for after in gating {
        let Some(next) = stages.iter().copied().filter(|s| *s > after).min() else {
            continue;
        };
        let probed: Vec<ObjectRef> = objects
            .iter()
            .zip(&stages)
            .filter(|(object, stage)| **stage == after && probed_here(object, after))
            .map(|(object, _)| reference_of(object))
            .collect();
        if !probed.is_empty() {
            gates.push(Gate {
                after,
                next,
                reached: after.name(declared),
                waits: next.name(declared),
                probed,
            });
        }
    }
    gates
}

/// Whether one of `probes` may select `object` (its labels are judged
/// once it is read).
fn user_may_probe(probes: &ProgressionProbes, object: &Value) -> bool {
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    probes.may_select(group_of(text("apiVersion")), text("kind"))
}

/// Whether `object`'s kind has a built-in probe.
fn has_probe(object: &Value) -> bool {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = group_of(
        object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
    );
    matches!(
        (group, kind),
        ("", "PersistentVolumeClaim")
            | ("apps", "Deployment" | "StatefulSet" | "DaemonSet")
            | ("batch", "Job")
            | (
                "cert-manager.io",
                "Certificate" | "Issuer" | "ClusterIssuer"
            )
    )
}

/// What each of `probed` still waits for, in words naming it; empty once
/// every probe passes (the built-in one of its kind, then `probes`).
pub async fn waiting(
    kinds: &mut Kinds,
    probed: &[ObjectRef],
    probes: &ProgressionProbes,
) -> Vec<String> {
    let mut waiting = Vec::new();
    for reference in probed {
        let found = match kinds.api(reference).await {
            Ok(api) => api.get_opt(&reference.name).await,
            Err(error) => {
                waiting.push(format!("{reference}: {error}"));
                continue;
            }
        };
        let object = match found {
            Ok(Some(object)) => object,
            Ok(None) => {
                waiting.push(format!("{reference} to exist"));
                continue;
            }
            Err(error) => {
                waiting.push(format!("{reference}: {}", super::api_message(&error)));
                continue;
            }
        };
        let group = group_of(&reference.api_version);
        let verdict = match (group, reference.kind.as_str()) {
            ("", "PersistentVolumeClaim") => claim_probe(kinds, reference, &object.data).await,
            ("batch", "Job") => job_probe(reference, &object.data),
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet") => {
                health_problem(reference, &object).map(|problem| problem.text)
            }
            ("cert-manager.io", _) => ready_probe(reference, &object.data),
            _ => None,
        };
        let verdict = verdict.or_else(|| user_verdict(probes, reference, &object));
        waiting.extend(verdict);
    }
    waiting
}

/// What `probes` hold `object` for, if anything.
fn user_verdict(
    probes: &ProgressionProbes,
    reference: &ObjectRef,
    object: &kube::api::DynamicObject,
) -> Option<String> {
    if probes.is_empty() {
        return None;
    }
    let value = serde_json::to_value(object).ok()?;
    probes.holding(reference, &value)
}

/// What `probes` hold among `objects` once they are all written: each a
/// problem still settling (the revision is not rolled out until they
/// pass). Only objects a probe may select are read.
pub async fn probe_problems(
    kinds: &mut Kinds,
    objects: &[ObjectRef],
    probes: &ProgressionProbes,
) -> Vec<HealthProblem> {
    if probes.is_empty() {
        return Vec::new();
    }
    let selected: Vec<ObjectRef> = objects
        .iter()
        .filter(|reference| probes.may_select(group_of(&reference.api_version), &reference.kind))
        .cloned()
        .collect();
    let mut problems = Vec::new();
    for reference in &selected {
        let Ok(api) = kinds.api(reference).await else {
            continue;
        };
        let Ok(Some(object)) = api.get_opt(&reference.name).await else {
            continue;
        };
        if let Some(text) = user_verdict(probes, reference, &object) {
            problems.push(HealthProblem::settling(reference, text));
        }
    }
    problems
}

/// A claim passes once Bound, or while Pending under a StorageClass that
/// binds only when a Pod using it is scheduled (`WaitForFirstConsumer`):
/// its Pod comes in a later phase, so waiting for it would never end.
async fn claim_probe(kinds: &Kinds, reference: &ObjectRef, claim: &Value) -> Option<String> {
    let phase = claim.pointer("/status/phase").and_then(Value::as_str);
    if phase == Some("Bound") {
        return None;
    }
    let class = claim
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str);
    let classes: kube::Api<k8s_openapi::api::storage::v1::StorageClass> =
        kube::Api::all(kinds.client.clone());
    let binding_mode = match class {
        Some(class) => classes
            .get_opt(class)
            .await
            .ok()
            .flatten()
            .and_then(|class| class.volume_binding_mode),
        None => None,
    };
    claim_verdict(reference, phase, binding_mode.as_deref())
}

/// [`claim_probe`]'s verdict, from what it read.
fn claim_verdict(
    reference: &ObjectRef,
    phase: Option<&str>,
    binding_mode: Option<&str>,
) -> Option<String> {
    match (phase, binding_mode) {
        (Some("Bound"), _) => None,
        (Some("Pending") | None, Some("WaitForFirstConsumer")) => None,
        (Some("Lost"), _) => Some(format!("{reference} is Lost (its volume is gone)")),
        (phase, _) => Some(format!(
            "{reference} to be Bound (it is {})",
            phase.unwrap_or("not yet Pending")
        )),
    }
}

/// A Job passes once Complete; a failed one says why.
fn job_probe(reference: &ObjectRef, job: &Value) -> Option<String> {
    if let Some((_, reason, message)) = condition(job, "Failed").filter(|(s, _, _)| s == "True") {
        return Some(format!("{reference} failed ({reason}: {message})"));
    }
    match condition(job, "Complete") {
        Some((status, _, _)) if status == "True" => None,
        _ => Some(format!("{reference} to complete")),
    }
}

/// cert-manager's Certificates and issuers pass once Ready.
fn ready_probe(reference: &ObjectRef, object: &Value) -> Option<String> {
    match condition(object, "Ready") {
        Some((status, _, _)) if status == "True" => None,
        Some((_, reason, message)) => Some(format!(
            "{reference} to be Ready (it is not: {reason}: {message})"
        )),
        None => Some(format!("{reference} to be Ready")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(api_version: &str, kind: &str, name: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "n"}})
    }

    #[test]
    fn phases_follow_the_order_objects_depend_in() {
        let order = [
            Phase::of("v1", "Namespace"),
            Phase::of("networking.k8s.io/v1", "NetworkPolicy"),
            Phase::of("v1", "ServiceAccount"),
            Phase::of("v1", "ConfigMap"),
            Phase::of("v1", "PersistentVolumeClaim"),
            Phase::of("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            Phase::of("rbac.authorization.k8s.io/v1", "ClusterRole"),
            Phase::of("rbac.authorization.k8s.io/v1", "RoleBinding"),
            Phase::of("cert-manager.io/v1", "Issuer"),
            Phase::of("apps/v1", "Deployment"),
            Phase::of("autoscaling/v2", "HorizontalPodAutoscaler"),
            Phase::of("networking.k8s.io/v1", "Ingress"),
            Phase::of(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            ),
        ];
        assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{order:?}");
        assert_eq!(Phase::of("example.com/v1", "Widget"), Phase::Workloads);
        assert_eq!(Phase::of("apps/v1", "Deployment"), Phase::Workloads);
    }

    #[test]
    fn a_set_with_nothing_after_its_workloads_has_no_gate() {
        let objects = [
            object("v1", "ConfigMap", "c"),
            object("apps/v1", "Deployment", "d"),
            object("v1", "Service", "s"),
        ];
        assert_eq!(gates(&objects, &ProgressionProbes::default()), vec![]);
    }

    #[test]
    fn a_webhook_waits_for_the_deployment_and_an_ingress_for_it_too() {
        let objects = [
            object(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                "w",
            ),
            object("apps/v1", "Deployment", "d"),
            object("v1", "ConfigMap", "c"),
            object("networking.k8s.io/v1", "Ingress", "i"),
        ];
        let found = gates(&objects, &ProgressionProbes::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].after.phase, Phase::Workloads);
        assert_eq!(found[0].next.phase, Phase::Publishing);
        let names: Vec<&str> = found[0].probed.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["d"]);
    }

    #[test]
    fn a_claim_gates_the_workloads_that_mount_it_and_a_config_map_gates_nothing() {
        let objects = [
            object("v1", "PersistentVolumeClaim", "data"),
            object("v1", "ConfigMap", "c"),
            object("apps/v1", "StatefulSet", "db"),
        ];
        let found = gates(&objects, &ProgressionProbes::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].after.phase, Phase::Storage);
        assert_eq!(found[0].next.phase, Phase::Workloads);
    }

    #[test]
    fn a_class_probe_makes_any_phase_a_gate() {
        let probes = ProgressionProbes::from_parameters(
            json!({"progressionProbes": [{
                "selector": {"kind": "ConfigMap"},
                "assertions": [{"cel": "self.data.ready == 'yes'"}],
            }]})
            .as_object(),
        )
        .unwrap();
        let objects = [
            object("v1", "ConfigMap", "c"),
            object("apps/v1", "Deployment", "d"),
        ];
        let found = gates(&objects, &probes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].after.phase, Phase::Configuration);
        assert_eq!(found[0].probed[0].name, "c");
        // Without the probe, the same set is written at once.
        assert_eq!(gates(&objects, &ProgressionProbes::default()), vec![]);
    }

    #[test]
    fn declared_phases_order_the_set_and_a_claim_gates_the_config_map_a_later_phase_holds() {
        let content = tempfile::tempdir().unwrap();
        std::fs::write(
            content.path().join(super::super::declared_phases::CONTENT_FILE),
            "- name: storage\n  objects: [{kind: PersistentVolumeClaim}]\n- name: config\n  objects: [{kind: ConfigMap}]\n",
        )
        .unwrap();
        let probes = ProgressionProbes::from_content(content.path(), 1 << 20).unwrap();
        let objects = [
            object("v1", "ConfigMap", "c"),
            object("v1", "PersistentVolumeClaim", "data"),
            object("v1", "Namespace", "ns"),
            object("v1", "Secret", "s"),
        ];
        let order: Vec<&str> = super::super::order::apply_order(&objects, probes.phases())
            .into_iter()
            .map(|index| objects[index]["metadata"]["name"].as_str().unwrap())
            .collect();
        // The namespace first whatever is declared; the claim before the
        // ConfigMap (by kind it would come after); the rest last.
        assert_eq!(order, ["ns", "data", "c", "s"]);
        let found = gates(&objects, &probes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].reached.as_str(), found[0].waits.as_str()),
            ("storage/storage", "config/configuration")
        );
        assert_eq!(found[0].probed[0].name, "data");
        // Without the declared phases, nothing waits for the claim.
        assert_eq!(gates(&objects, &ProgressionProbes::default()), vec![]);
    }

    #[test]
    fn a_claim_under_wait_for_first_consumer_passes_while_pending() {
        let reference = reference_of(&object("v1", "PersistentVolumeClaim", "data"));
        assert_eq!(claim_verdict(&reference, Some("Bound"), None), None);
        assert_eq!(
            claim_verdict(&reference, Some("Pending"), Some("WaitForFirstConsumer")),
            None
        );
        let pending = claim_verdict(&reference, Some("Pending"), Some("Immediate")).unwrap();
        assert!(pending.contains("to be Bound (it is Pending)"), "{pending}");
        assert!(
            claim_verdict(&reference, Some("Lost"), None)
                .unwrap()
                .contains("Lost")
        );
    }

    #[test]
    fn a_job_passes_once_complete_and_a_failed_one_says_why() {
        let reference = reference_of(&object("batch/v1", "Job", "migrate"));
        let with = |kind: &str, status: &str| json!({"status": {"conditions": [{"type": kind, "status": status, "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}});
        assert_eq!(job_probe(&reference, &with("Complete", "True")), None);
        let failed = job_probe(&reference, &with("Failed", "True")).unwrap();
        assert!(failed.contains("BackoffLimitExceeded"), "{failed}");
        assert!(
            job_probe(&reference, &json!({}))
                .unwrap()
                .ends_with("to complete")
        );
    }

    #[test]
    fn an_issuer_passes_once_ready() {
        let reference = reference_of(&object("cert-manager.io/v1", "Issuer", "ca"));
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(ready_probe(&reference, &ready), None);
        let not = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ErrGetKeyPair", "message": "secret not found"}]}});
        assert!(
            ready_probe(&reference, &not)
                .unwrap()
                .contains("ErrGetKeyPair: secret not found")
        );
    }
}
