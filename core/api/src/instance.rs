//! `Instance`: "this Bundle should be active on the cluster".

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApprovedContent, Bundle, BundleSpec, BundleStatus, ObjectRef};

/// Which Bundle should be active, and which earlier Bundles it pivots from.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "core.pakket.dev",
    version = "v1alpha1",
    kind = "Instance",
    plural = "instances",
    shortname = "inst",
    category = "pakket",
    status = "InstanceStatus",
    printcolumn = r#"{"name":"Class","type":"string","jsonPath":".spec.class"}"#,
    printcolumn = r#"{"name":"Bundle","type":"string","jsonPath":".status.activeBundle"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Approved","type":"string","jsonPath":".status.conditions[?(@.type==\"Approved\")].status","priority":1}"#,
    printcolumn = r#"{"name":"Installed","type":"string","jsonPath":".status.conditions[?(@.type==\"Installed\")].status","priority":1}"#,
    printcolumn = r#"{"name":"Healthy","type":"string","jsonPath":".status.conditions[?(@.type==\"Healthy\")].status","priority":1}"#,
    printcolumn = r#"{"name":"Serving","type":"integer","jsonPath":".status.servingRevision","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSpec {
    /// Name of the ProvisionerClass whose provisioner installs this Instance.
    /// Naming it here (and not only on the Bundle) lets the admission webhook
    /// check the `use` verb and lets provisioners filter without a lookup.
    #[schemars(length(min = 1, max = 253))]
    pub class: String,

    /// Finds the earlier Bundles this Instance pivots from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::label_selector")]
    pub selector: Option<LabelSelector>,

    /// The Bundle that should be active.
    pub bundle: BundleTemplate,

    /// What happens to the installed objects when the Instance is deleted:
    /// `Delete` (the default) removes them, `Orphan` leaves them running
    /// (for handing content over to another owner without downtime).
    #[serde(default, skip_serializing_if = "DeletionPolicy::is_default")]
    pub deletion_policy: DeletionPolicy,

    /// Settings for the class's provisioner, which validates them and
    /// reports a bad field as a condition naming it (registry-v1 reads
    /// `installNamespace` and `watchNamespaces`). Part of the spec: a
    /// change is a new request, approved anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,

    /// How long a revision of this Instance may roll out before it is
    /// `Blocked` (`90s`, `10m`, `1h30m` or ISO 8601 `PT10M`, at least a
    /// second); overrides the class's `progressDeadline` (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub progress_deadline: Option<String>,

    /// What the runtime does when someone else changes this Instance's
    /// objects: `{mode: Repair | Warn}`, overriding the class's `drift`
    /// mode. Ignoring fields (`ignore`) is the class's alone: what they
    /// hold is written in place of the approved content. Checked by the
    /// runtime, which names the field it refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub drift: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What deleting an Instance does to the objects it installed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete every object the Instance installed.
    #[default]
    Delete,
    /// Leave the objects in place; only the Instance goes.
    Orphan,
}

impl DeletionPolicy {
    fn is_default(&self) -> bool {
        *self == Self::Delete
    }
}

/// A Bundle by name, optionally with its spec embedded: embedded content
/// has no Bundle object, its status is kept in the Instance's
/// `status.embeddedBundle`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.spec) || !has(oldSelf.spec) || self.name != oldSelf.name || self.spec == oldSelf.spec",
    "message": "a changed spec.bundle.spec needs a new spec.bundle.name: Bundles are immutable, so new content is a new Bundle",
}]))]
pub struct BundleTemplate {
    /// Name of the Bundle.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The Bundle's spec, when the Instance embeds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<BundleSpec>,
}

/// What the provisioner did with the Instance.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceStatus {
    /// `Approved`, `Unpacked`, `Installed` and `Healthy`, always all four.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::atomic_conditions")]
    pub conditions: Vec<Condition>,
    /// What the reasons of `conditions` alone do not say, for tools: the
    /// kind of refusal, the objects, the policy rule, each beside the
    /// condition and reason it explains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 6))]
    pub causes: Vec<crate::Cause>,
    /// The Bundle whose objects are on the cluster now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_bundle: Option<String>,
    /// The objects this Instance installed. A summary for people: what the
    /// provisioner deletes is decided by records on the objects themselves
    /// (the Instance's UID label and the runtime's field manager), never by
    /// this list, which anyone who may write the status can change. All of
    /// them, or the first [`crate::LISTED_OBJECTS_MAX`] when there are more
    /// (`objectCount` and `objectKinds` then tell the rest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectRef>,
    /// How many objects this Instance installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_count: Option<u64>,
    /// How many of each kind, when `objects` does not list them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_kinds: Vec<crate::KindCount>,
    /// The request the `Approved` condition covers: the Bundle and digest
    /// the approver (or the class's policy) saw, the generation of the
    /// spec, and what else was judged. Guarded like the condition. Written
    /// whole (an atomic map): a new decision never inherits parts of the
    /// one before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub approval: Option<ApprovedContent>,
    /// The request that waits for a decision, as the runtime judged it
    /// (the decision key's parts, [`crate::Judged`]): `kubectl instance
    /// approve` copies it into the approval with the generation it
    /// describes, so a person's approval covers exactly what the runtime
    /// showed. Not authority: an approval covers a request only while the
    /// runtime, judging it again, finds the same parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_request: Option<crate::Judged>,
    /// Which person's decision (approval or denial) the provisioner last
    /// published an Event for (a digest of it and when it was made), so a
    /// restarted provisioner does not tell it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub decision_told: Option<String>,
    /// What the provisioner found in the Bundle this Instance embeds
    /// (`spec.bundle.spec`): no Bundle object is made for embedded content,
    /// so its pin, objects and grants are kept here, beside the Instance
    /// that alone may install it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded_bundle: Option<EmbeddedBundleStatus>,
    /// What it provides others, for people: the APIs of the CRDs it
    /// installed, its APIServices and its Bundle's packages; at most
    /// [`crate::PROVIDES_LISTED_MAX`], then how many more. Who uses them is
    /// read when asked (`kubectl instance deps`, the in-use check on
    /// deletes), never from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provides: Vec<String>,
    /// The Instance's revisions, oldest first: each install of other
    /// content, with how its rollout went; at most the class's
    /// `revisionHistoryLimit` (default 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub revisions: Vec<crate::Revision>,
    /// The newest revision that rolled out completely: what serves while a
    /// later one rolls out, is blocked or failed to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_revision: Option<i64>,
    /// The automatic rollback in force (class parameter
    /// `rollbackOnFailure`), or the one that could not be made, for the
    /// current generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_rollback: Option<crate::AutomaticRollback>,
    /// Where a phased apply stands while a phase waits for the probes of
    /// the one before it; absent once the whole set is written (and for
    /// sets with no gates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progression: Option<PhaseProgression>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// An apply held between two phases: what is written, what waits, and
/// the probes that hold it, each naming its object and probe.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseProgression {
    /// The last phase written (`namespaces`, `workloads`, …).
    #[schemars(length(max = 64))]
    pub reached: String,
    /// The first phase that waits.
    #[schemars(length(max = 64))]
    pub next: String,
    /// The probes that do not pass yet: `Kind/namespace/name: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub held_by: Vec<String>,
}

/// The status of an embedded Bundle, and which one it is: the Instance's
/// `spec.bundle.name` when it was recorded (a new name is new content,
/// recorded afresh; the API refuses a new spec under the same name).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedBundleStatus {
    /// The embedded Bundle's name (`spec.bundle.name`).
    pub name: String,
    /// What a Bundle object's status would say.
    #[serde(flatten)]
    pub status: BundleStatus,
}

impl InstanceStatus {
    /// Records `objects`, listing at most [`crate::LISTED_OBJECTS_MAX`].
    pub fn set_objects(&mut self, objects: &[ObjectRef]) {
        let summary = crate::ObjectSummary::of(objects);
        self.objects = summary.listed;
        self.object_count = Some(summary.count);
        self.object_kinds = summary.kinds;
    }

    /// Whether `objects` lists every object (else `objectKinds` counts them).
    pub fn lists_every_object(&self) -> bool {
        crate::object_ref::is_complete(&self.objects, self.object_count)
    }
}

impl Instance {
    /// The Bundle this Instance embeds, as the provisioner sees it: named
    /// `spec.bundle.name`, with the embedded spec and the status recorded
    /// for that name (none when nothing is recorded for it yet). `None`
    /// when the Instance names a Bundle object instead. Never stored: it
    /// exists only in the Instance.
    pub fn embedded_bundle(&self) -> Option<Bundle> {
        let spec = self.spec.bundle.spec.clone()?;
        let name = &self.spec.bundle.name;
        let mut bundle = Bundle::new(name, spec);
        bundle.status = self
            .status
            .as_ref()
            .and_then(|status| status.embedded_bundle.as_ref())
            .filter(|record| record.name == *name)
            .map(|record| record.status.clone());
        Some(bundle)
    }

    /// The condition of the given type, if the provisioner has written it.
    pub fn condition(&self, kind: crate::ConditionType) -> Option<&Condition> {
        self.status
            .as_ref()
            .and_then(|status| crate::condition::find(&status.conditions, kind))
    }
}
