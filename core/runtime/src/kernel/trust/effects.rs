//! What an install does, as typed data that rules and people read alike:
//! the objects it creates, changes and deletes; the RBAC it grants, per
//! subject; the workloads it runs and the identity and host access they
//! run with; the admission it registers (webhooks, admission policies and
//! their bindings); CRDs and their conversion; APIServices. Nothing outside
//! these lists is "no right": an ApprovalPolicy's `noNewRights()` is true
//! only when every `new` list and `deleted` are empty.
//!
//! Computed from the proposed objects, the running ones (the content the
//! Instance runs now, rendered again from the store; none for a first
//! install) and what the cluster says ([`Landing`]: where an object that
//! names no namespace lands, which kinds are cluster-scoped, which roles
//! aggregate others). Pure: no cluster, no IO.
//!
//! What "new" means, per effect:
//! - objects (`created`, `changed`, `deleted`), by identity (API group,
//!   kind, namespace, name; the version is not part of it): created when
//!   running has no such object, changed when it has one with other
//!   content, deleted when running has it and the proposal lacks it (what
//!   the prune after the apply deletes);
//! - `rbac`: as [`crate::rights`] compares rights, by meaning: a rule a
//!   subject gets that no rule the running content gives the same subject
//!   covers (wildcards included), a binding to a role the content does not
//!   define (`admin`, `edit`, `cluster-admin`, ...) that running lacks,
//!   a ClusterRole aggregated into another, or aggregating others;
//! - `workloads`: one whose namespace and ServiceAccount no running
//!   workload has, or that asks for host access (host namespaces,
//!   hostPath volumes, privileged containers, added capabilities, host
//!   ports) a running workload with that identity did not have;
//! - `admission`, `crds`, `apiServices`: by their whole configuration, a
//!   `caBundle` left out (a rotated certificate is nothing new);
//! - `namespaces`: a namespace the proposal writes into that running did
//!   not.
//!
//! Whatever is in `all` (not only `new`), a workload that runs in a Pakket
//! namespace or as a Pakket ServiceAccount, or any object the change
//! writes into a Pakket namespace, needs a person ([`needs_a_person`]):
//! those identities hold `*`, `escalate` and `bind`, and the namespace
//! holds the key that seals requester records.

mod grants;
mod workload;

use std::collections::BTreeSet;

use pakket_api::group_of;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::apply::reference_of;
use crate::rights::{Aggregator, Rights};

pub use grants::{AdmissionEffect, ApiServiceEffect, CrdEffect, Grants, RbacEffect};
pub use workload::Workload;

/// The namespace `deploy/` runs Pakket in.
pub const PAKKET_NAMESPACE: &str = "pakket-system";

/// The ServiceAccounts `deploy/` gives the provisioners and the webhooks
/// (each in [`PAKKET_NAMESPACE`]): they hold `*`, `escalate` and `bind`.
pub const PAKKET_SERVICE_ACCOUNTS: [&str; 5] = [
    "pakket-plain",
    "pakket-registry-v1",
    "pakket-package",
    "pakket-resolveset",
    "pakket-webhooks",
];

/// Kinds that are cluster-scoped on every cluster, as (group, kind); the
/// cluster's discovery and the content's CRDs add the rest.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    // Pakket's own, for a cluster whose discovery was not read.
    ("core.pakket.dev", "Instance"),
    ("core.pakket.dev", "Bundle"),
    ("core.pakket.dev", "ProvisionerClass"),
    ("core.pakket.dev", "ApprovalPolicy"),
];

/// What the cluster says about where content lands.
#[derive(Clone, Debug)]
pub struct Landing {
    /// Where a namespaced object that names no namespace is applied: the
    /// provisioner's client's default namespace (in a cluster, its own).
    pub default_namespace: String,
    /// Kinds the cluster serves cluster-scoped, as (group, kind), beyond
    /// the built-in cluster-scoped kinds (`CLUSTER_SCOPED`) and the content's own CRDs.
    pub cluster_scoped: BTreeSet<(String, String)>,
    /// The cluster's aggregating ClusterRoles.
    pub aggregators: Vec<Aggregator>,
    /// Pakket's own namespaces: [`PAKKET_NAMESPACE`] and the one the
    /// provisioner runs in.
    pub pakket_namespaces: BTreeSet<String>,
}

impl Landing {
    /// A cluster that serves only the built-in kinds, has no aggregating
    /// roles, and runs Pakket in [`PAKKET_NAMESPACE`] and `own_namespace`.
    pub fn new(default_namespace: &str, own_namespace: Option<&str>) -> Self {
        let mut pakket_namespaces = BTreeSet::from([PAKKET_NAMESPACE.to_owned()]);
        pakket_namespaces.extend(own_namespace.map(str::to_owned));
        Self {
            default_namespace: default_namespace.to_owned(),
            cluster_scoped: BTreeSet::new(),
            aggregators: Vec::new(),
            pakket_namespaces,
        }
    }

    /// Whether objects of `group`/`kind` are cluster-scoped, as the
    /// cluster serves them or a CRD among `objects` defines them. A kind
    /// neither knows is taken as namespaced: then an object of it that
    /// names no namespace is counted where it would land if it were.
    fn cluster_scoped(&self, group: &str, kind: &str, objects: &[Value]) -> bool {
        CLUSTER_SCOPED.contains(&(group, kind))
            || self
                .cluster_scoped
                .contains(&(group.to_owned(), kind.to_owned()))
            || crate::apply::defined_resource(objects, group, kind)
                .is_some_and(|(_, namespaced)| !namespaced)
    }

    /// `objects` as they are applied: a namespaced object that names no
    /// namespace gets the one it lands in.
    pub fn place(&self, objects: &[Value]) -> Vec<Value> {
        objects
            .iter()
            .map(|object| {
                let reference = reference_of(object);
                let mut placed = object.clone();
                if reference.namespace.is_none()
                    && !self.cluster_scoped(
                        group_of(&reference.api_version),
                        &reference.kind,
                        objects,
                    )
                    && let Some(metadata) =
                        placed.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    metadata.insert(
                        "namespace".into(),
                        Value::from(self.default_namespace.clone()),
                    );
                }
                placed
            })
            .collect()
    }
}

/// Everything an install does; see the module doc for what `new` means.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Effects {
    /// Nothing runs yet to compare with (a first install, or running
    /// content no longer stored): everything is new.
    pub first_install: bool,
    /// Objects the proposal has and running does not.
    pub created: Vec<ObjectEffect>,
    /// Objects both have, with other content now.
    pub changed: Vec<ObjectEffect>,
    /// Objects running has and the proposal lacks: what the change deletes.
    pub deleted: Vec<ObjectEffect>,
    /// Every effect of the proposal.
    pub all: Grants,
    /// Those running did not have.
    pub new: Grants,
}

/// One object, by identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectEffect {
    /// Its API group (`""` for the core group).
    pub group: String,
    /// Its API version.
    pub version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace, empty when cluster-scoped.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `Cluster` or `Namespaced`.
    pub scope: String,
    /// Whether it lands in a Pakket namespace.
    pub pakket_namespace: bool,
}

impl Effects {
    /// What installing `proposed` does where `running` runs now (`None`:
    /// nothing to compare with, a first install), on a cluster as
    /// `landing` says.
    pub fn of(proposed: &[Value], running: Option<&[Value]>, landing: &Landing) -> Self {
        let proposed = landing.place(proposed);
        let running = running.map(|running| landing.place(running));
        let running = running.as_deref().unwrap_or_default();
        let identities = |objects: &[Value]| -> Vec<(ObjectEffect, String)> {
            objects
                .iter()
                .map(|object| {
                    (
                        object_effect(object, objects, landing),
                        pakket_api::value_digest(object),
                    )
                })
                .collect()
        };
        let (now, before) = (identities(&proposed), identities(running));
        let same = |a: &ObjectEffect, b: &ObjectEffect| {
            (&a.group, &a.kind, &a.namespace, &a.name) == (&b.group, &b.kind, &b.namespace, &b.name)
        };
        let mut effects = Effects {
            first_install: running.is_empty(),
            ..Effects::default()
        };
        for (object, digest) in &now {
            match before.iter().find(|(old, _)| same(old, object)) {
                None => effects.created.push(object.clone()),
                Some((_, old)) if old != digest => effects.changed.push(object.clone()),
                Some(_) => {}
            }
        }
        effects.deleted = before
            .iter()
            .filter(|(old, _)| !now.iter().any(|(object, _)| same(old, object)))
            .map(|(old, _)| old.clone())
            .collect();

        let wanted = Rights::of_in(&proposed, &landing.aggregators);
        let held = Rights::of_in(running, &landing.aggregators);
        effects.all = grants::grants(
            &proposed,
            &wanted.beyond(&Rights::default()),
            &workload::of(&proposed, landing),
        );
        let old_workloads = workload::of(running, landing);
        let new_workloads: Vec<Workload> = workload::of(&proposed, landing)
            .into_iter()
            .filter(|workload| !old_workloads.iter().any(|old| workload.within(old)))
            .collect();
        effects.new = grants::grants(&proposed, &wanted.beyond(&held), &new_workloads);
        let old_namespaces = namespaces(running);
        effects
            .new
            .namespaces
            .retain(|namespace| !old_namespaces.contains(namespace));
        let old_policies = grants::admission_policies(running);
        effects.new.admission.retain(|effect| {
            effect.kind.ends_with("WebhookConfiguration") || !old_policies.contains(effect)
        });
        effects
    }

    /// Whether the change grants, runs, registers or deletes nothing the
    /// running content did not: `noNewRights()`.
    pub fn nothing_new(&self) -> bool {
        let new = &self.new;
        self.deleted.is_empty()
            && new.rbac.is_empty()
            && new.workloads.is_empty()
            && new.admission.is_empty()
            && new.crds.is_empty()
            && new.api_services.is_empty()
    }

    /// Every new effect and every deletion, in words, for people.
    pub fn sentences(&self) -> Vec<String> {
        let new = &self.new;
        let objects = |verb: &str, list: &[ObjectEffect]| -> Vec<String> {
            list.iter()
                .map(|object| format!("{verb} {}", describe(object)))
                .collect()
        };
        new.rbac
            .iter()
            .map(|e| e.sentence.clone())
            .chain(new.workloads.iter().map(|e| e.sentence.clone()))
            .chain(new.admission.iter().map(|e| e.sentence.clone()))
            .chain(new.crds.iter().map(|e| e.sentence.clone()))
            .chain(new.api_services.iter().map(|e| e.sentence.clone()))
            .chain(objects("deletes", &self.deleted))
            .collect()
    }

    /// The length of the longest list a rule can iterate over.
    pub fn widest_collection(&self) -> usize {
        let grants = |grants: &Grants| {
            [
                grants.namespaces.len(),
                grants.rbac.len(),
                grants.workloads.len(),
                grants.admission.len(),
                grants.crds.len(),
                grants.api_services.len(),
                grants.service_accounts.len(),
                grants
                    .workloads
                    .iter()
                    .map(Workload::widest_collection)
                    .max()
                    .unwrap_or(0),
            ]
            .into_iter()
            .max()
            .unwrap_or(0)
        };
        [
            self.created.len(),
            self.changed.len(),
            self.deleted.len(),
            grants(&self.all),
            grants(&self.new),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}

/// Why no automatic approval (a policy rule, `Android`, `UserPermission`)
/// may let this change in, when it may not: it runs a workload in a Pakket
/// namespace or as a Pakket ServiceAccount, or writes an object into a
/// Pakket namespace. Such a change is only a person's to approve, with
/// this sentence shown. `None` when nothing of the kind is in it.
pub fn needs_a_person(effects: &Effects) -> Option<String> {
    if let Some(why) = runs_as_pakket(effects) {
        return Some(why);
    }
    let written = effects
        .created
        .iter()
        .chain(&effects.changed)
        .find(|object| object.pakket_namespace)?;
    Some(format!(
        "{} would be written into {}, Pakket's own namespace (where its identities and the key that seals requester records are); only a person approves that",
        describe(written),
        written.namespace
    ))
}

/// Why even a class that approves everything (`AllowAll`) may not let
/// this change in by itself: it runs a workload in a Pakket namespace or
/// as a Pakket ServiceAccount, whose rights (`*`, `escalate`, `bind`)
/// would be the content's. `None` when it runs nothing of the kind.
pub fn runs_as_pakket(effects: &Effects) -> Option<String> {
    let workload = effects
        .all
        .workloads
        .iter()
        .find(|w| w.pakket_service_account || w.pakket_namespace)?;
    Some(format!(
        "{} {}/{} would run as ServiceAccount {}/{}, {}; only a person approves that",
        workload.kind,
        workload.namespace,
        workload.name,
        workload.namespace,
        workload.service_account,
        if workload.pakket_service_account {
            "a Pakket provisioner's or webhook's own identity (it holds *, escalate and bind)"
        } else {
            "in Pakket's own namespace (where the key that seals requester records is)"
        }
    ))
}

/// `Kind namespace/name`, or `Kind name` when cluster-scoped.
fn describe(object: &ObjectEffect) -> String {
    if object.namespace.is_empty() {
        format!("{} {}", object.kind, object.name)
    } else {
        format!("{} {}/{}", object.kind, object.namespace, object.name)
    }
}

fn object_effect(object: &Value, objects: &[Value], landing: &Landing) -> ObjectEffect {
    let reference = reference_of(object);
    let (group, version) = match reference.api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), reference.api_version.clone()),
    };
    let cluster = landing.cluster_scoped(&group, &reference.kind, objects);
    let namespace = if cluster {
        String::new()
    } else {
        reference.namespace.unwrap_or_default()
    };
    ObjectEffect {
        pakket_namespace: landing.pakket_namespaces.contains(&namespace)
            // A Namespace object named like Pakket's own.
            || (group.is_empty()
                && reference.kind == "Namespace"
                && landing.pakket_namespaces.contains(&reference.name)),
        group,
        version,
        kind: reference.kind,
        scope: if cluster { "Cluster" } else { "Namespaced" }.into(),
        namespace,
        name: reference.name,
    }
}

/// The namespaces `objects` (placed) are written into.
fn namespaces(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .filter_map(|object| reference_of(object).namespace)
        .collect()
}

#[cfg(test)]
mod tests;
