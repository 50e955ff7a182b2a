//! Server-side apply of an Instance's objects under one field manager, the
//! prune that completes a pivot, and the health of what was applied.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use pakket_api::ObjectRef;
use serde_json::Value;

use crate::drift::Drift;

pub use pakket_api::ownership::{BUNDLE_LABEL, FIELD_MANAGER, INSTANCE_LABEL, INSTANCE_UID_LABEL};

use crate::ownership::{self, Claimant, Removal};

mod crd_safety;
pub mod declared_phases;
mod dry_run;
pub mod endpoints;
mod managed_fields;
mod order;
pub mod phase;
pub mod probes;
mod rollout;
mod write;

pub use crd_safety::problems as crd_upgrade_problems;
pub use order::{defined_resource, group_of, rank};
pub use write::{Adoptions, ApplyStage, Progress, Restore, Settings, apply_all};

/// How long a custom resource waits for its CustomResourceDefinition (from
/// the same bundle) to be Established and served.
pub const CRD_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Why applying or pruning failed, naming the object.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The object's kind is not served by the apiserver.
    #[error(
        "{object}: kind {kind} is not served by the cluster ({message}); install its CRD first"
    )]
    UnknownKind {
        /// The object.
        object: String,
        /// `group/version/Kind`.
        kind: String,
        /// The discovery error.
        message: String,
    },
    /// Replacing CRDs on the cluster with the Bundle's could break what is
    /// stored or what clients rely on: nothing was applied.
    #[error("{}; nothing was applied. Fix the new CRDs, or set the ProvisionerClass parameter crdUpgradeSafety: None to allow such upgrades", .0.join("; "))]
    UnsafeCrdUpgrade(Vec<String>),
    /// Objects that exist and are not this Instance's (each with whose it
    /// is): nothing was applied.
    #[error("{} of the Bundle's objects already exist and are not this Instance's, so nothing was applied: {}", .0.len(), reasons(.0))]
    Conflicts(Vec<(ObjectRef, crate::trust::ownership::Conflict)>),
    /// The apiserver refused the object in the dry run of the whole set,
    /// before anything was written.
    #[error(
        "{object}: {message}; found by a dry run of every object before anything was written, so nothing was applied"
    )]
    DryRunRefused {
        /// The object.
        object: String,
        /// The apiserver's message (it names the field).
        message: String,
    },
    /// A write failed after others had been made (the dry run passed: a
    /// race, or a kind it could not check). What was written was put back
    /// to the previous revision, or `left` names what is still at the new
    /// one.
    #[error("{cause}; {}", rolled_back(.restored, .removed, .left, .previous))]
    PartlyApplied {
        /// The write that failed.
        cause: Box<ApplyError>,
        /// Objects put back to the previous revision.
        restored: usize,
        /// Objects this apply created, deleted again.
        removed: usize,
        /// Objects still at the new revision (could not be put back).
        left: Vec<ObjectRef>,
        /// The Bundle of the previous revision, if there was one.
        previous: Option<String>,
    },
    /// The apiserver refused the object.
    #[error("{object}: {message}")]
    Refused {
        /// The object.
        object: String,
        /// The apiserver's message.
        message: String,
    },
}

/// What a rollback after a failed write did, in words.
fn rolled_back(
    restored: &usize,
    removed: &usize,
    left: &[ObjectRef],
    previous: &Option<String>,
) -> String {
    let mut words = match previous {
        Some(bundle) => format!(
            "rolled back: {restored} objects written before it put back to Bundle {bundle}, {removed} it created removed"
        ),
        None => format!("rolled back: {removed} objects it created removed"),
    };
    if !left.is_empty() {
        let names: Vec<String> = left.iter().take(5).map(ToString::to_string).collect();
        words.push_str(&format!(
            "; {} objects are still at the new revision and could not be put back yet ({}{}): they are put back or completed at the next try",
            left.len(),
            names.join(", "),
            if left.len() > 5 { ", ..." } else { "" }
        ));
    }
    words
}

impl ApplyError {
    /// The objects a failed apply left at the new revision (a rollback
    /// that could not put them back).
    pub fn left_at_new_revision(&self) -> &[ObjectRef] {
        match self {
            Self::PartlyApplied { left, .. } => left,
            _ => &[],
        }
    }
}

/// Why each conflicting object is someone else's, in one line.
fn reasons(conflicts: &[(ObjectRef, crate::trust::ownership::Conflict)]) -> String {
    let whys: Vec<&str> = conflicts.iter().map(|(_, why)| why.text.as_str()).collect();
    whys.join("; ")
}

/// Resolves kinds to API resources. Clones share one cache, so a kind is
/// discovered once per process rather than once per reconcile (discovery is
/// a round trip each). Only found kinds are cached: a kind whose CRD is not
/// installed yet is asked for again next time.
///
/// With [`Kinds::with_drift`], every kind resolved is also watched for drift.
#[derive(Clone)]
pub struct Kinds {
    client: Client,
    cache: Arc<Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>>,
    drift: Option<Arc<Drift>>,
}

impl Kinds {
    /// An empty cache.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: Arc::default(),
            drift: None,
        }
    }

    /// An empty cache that watches every kind it resolves with `drift`.
    pub fn with_drift(client: Client, drift: Arc<Drift>) -> Self {
        Self {
            drift: Some(drift),
            ..Self::new(client)
        }
    }

    async fn resolve(
        &mut self,
        reference: &ObjectRef,
    ) -> Result<(ApiResource, ApiCapabilities), ApplyError> {
        let (group, version) = match reference.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", reference.api_version.as_str()),
        };
        let gvk = GroupVersionKind::gvk(group, version, &reference.kind);
        if let Some(found) = self.cache.lock().expect("kinds cache").get(&gvk) {
            return Ok(found.clone());
        }
        let found = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|error| ApplyError::UnknownKind {
                object: reference.to_string(),
                kind: format!("{}/{}", reference.api_version, reference.kind),
                message: api_message(&error),
            })?;
        self.cache
            .lock()
            .expect("kinds cache")
            .insert(gvk, found.clone());
        if let Some(drift) = &self.drift {
            drift.watch(&found.0);
        }
        Ok(found)
    }

    /// `reference`'s ownership records as the drift watches (if any) last
    /// saw them: what a prune or uninstall judges it by before deleting it
    /// with a precondition on them ([`crate::drift`]'s `records`).
    pub fn as_seen(&self, reference: &ObjectRef) -> Option<kube::api::ObjectMeta> {
        self.drift.as_ref()?.as_seen(reference)
    }

    /// A write of `instance`'s objects under way, for the drift watches
    /// (if any), until the value is dropped ([`Drift::write_under_way`]).
    fn write_under_way(&self, instance: &str) -> Option<crate::drift::WriteUnderWay> {
        Some(self.drift.as_ref()?.write_under_way(instance))
    }

    /// Tells the drift watches (if any) the resourceVersion a write of the
    /// runtime returned for `reference`: an event no newer is its own.
    fn returned(&self, reference: &ObjectRef, version: Option<&str>) {
        if let Some(drift) = &self.drift {
            drift.returned(reference, version);
        }
    }

    /// The drift watches' copy of `reference`'s records when they see it
    /// as `instance`'s now ([`Drift::present`]); `None` without them.
    fn present(&self, instance: &str, reference: &ObjectRef) -> Option<kube::api::ObjectMeta> {
        self.drift.as_ref()?.present(instance, reference)
    }

    /// Tells the drift watches (if any) that the runtime itself is about
    /// to delete `objects`.
    fn pruning(&self, objects: &[ObjectRef]) {
        if let Some(drift) = &self.drift {
            drift.pruning(objects);
        }
    }

    /// The API resource of one object's kind, and whether it is namespaced.
    pub async fn resource(
        &mut self,
        reference: &ObjectRef,
    ) -> Result<(ApiResource, bool), ApplyError> {
        let (resource, capabilities) = self.resolve(reference).await?;
        Ok((resource, capabilities.scope == Scope::Namespaced))
    }

    /// The API for a custom resource whose CustomResourceDefinition `crd`
    /// was just applied: waits (up to [`CRD_WAIT`]) until the CRD is
    /// Established and its kind is served.
    pub async fn await_served(
        &mut self,
        reference: &ObjectRef,
        crd: &str,
    ) -> Result<Api<DynamicObject>, ApplyError> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let deadline = tokio::time::Instant::now() + CRD_WAIT;
        loop {
            let established = crds.get_opt(crd).await.ok().flatten().is_some_and(|found| {
                found
                    .status
                    .and_then(|status| status.conditions)
                    .is_some_and(|conditions| {
                        conditions
                            .iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            });
            if established && let Ok(api) = self.api(reference).await {
                return Ok(api);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApplyError::Refused {
                    object: reference.to_string(),
                    message: format!(
                        "it waits for CustomResourceDefinition {crd} (in the same Bundle) to be \
                         Established and served, which it was not after {}s; check the CRD's \
                         conditions (kubectl get crd {crd} -o yaml)",
                        CRD_WAIT.as_secs()
                    ),
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// The API for every object of `reference`'s kind: cluster-wide, across
    /// all namespaces for a namespaced kind.
    pub async fn api_everywhere(
        &mut self,
        reference: &ObjectRef,
    ) -> Result<Api<DynamicObject>, ApplyError> {
        let (resource, _) = self.resolve(reference).await?;
        Ok(Api::all_with(self.client.clone(), &resource))
    }

    /// The API for one object, namespaced or not as the cluster says.
    pub async fn api(&mut self, reference: &ObjectRef) -> Result<Api<DynamicObject>, ApplyError> {
        let (resource, capabilities) = self.resolve(reference).await?;
        Ok(match (&capabilities.scope, &reference.namespace) {
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(self.client.clone(), namespace, &resource)
            }
            (Scope::Namespaced, None) => {
                Api::default_namespaced_with(self.client.clone(), &resource)
            }
            (Scope::Cluster, _) => Api::all_with(self.client.clone(), &resource),
        })
    }
}

/// The reference of a manifest object.
pub fn reference_of(object: &Value) -> ObjectRef {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let namespace = text("/metadata/namespace");
    ObjectRef {
        api_version: text("/apiVersion"),
        kind: text("/kind"),
        name: text("/metadata/name"),
        namespace: (!namespace.is_empty()).then_some(namespace),
    }
}

/// What an apply did: the objects, and the health problems the apiserver's
/// answers already show (so a fresh apply needs no second read for health).
#[derive(Debug, Default)]
pub struct Applied {
    /// Every object applied, in order.
    pub objects: Vec<ObjectRef>,
    /// Why some are not healthy (yet), as [`unhealthy`] would say.
    pub unhealthy: Vec<HealthProblem>,
}

/// The apiserver's own words for a failed call (its status message), never
/// a Debug dump.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        // kube's own Display of an API error appends its Debug form.
        kube::Error::Api(status) => {
            let said = [&status.message, &status.reason]
                .into_iter()
                .find(|text| !text.is_empty())
                .map_or("the apiserver gave no reason", String::as_str);
            format!("{said} (HTTP {})", status.code)
        }
        other => other.to_string(),
    }
}

/// What a prune or uninstall did.
#[derive(Debug, Default)]
pub struct Removed {
    /// Objects deleted (or released).
    pub done: usize,
    /// Objects left alone because they are not this Instance's, with why.
    pub not_ours: Vec<String>,
    /// CRDs kept because custom resources of them exist (deleting a CRD
    /// deletes them all), with how many: still the Instance's, deleted by
    /// a later pass once they are gone.
    pub kept_in_use: Vec<(ObjectRef, String)>,
}

/// Deletes what `previous` had and `current` lacks: the second half of a
/// pivot. `previous` comes from a status anyone with status rights can
/// write, so each object is deleted only if its own records say it is the
/// claimant's ([`ownership::delete_owned`]).
pub async fn prune(
    kinds: &mut Kinds,
    previous: &[ObjectRef],
    current: &[ObjectRef],
    claimant: Claimant<'_>,
) -> Result<Removed, ApplyError> {
    let keep: BTreeSet<&ObjectRef> = current.iter().collect();
    let mut removed = Removed::default();
    for reference in previous
        .iter()
        .filter(|reference| !keep.contains(reference))
    {
        // Whatever the path, a CRD is never deleted while custom resources
        // of it exist: the apiserver would delete every one of them.
        if is_crd(reference)
            && let Some(words) = crd_in_use(&kinds.client, &reference.name).await?
        {
            removed.kept_in_use.push((reference.clone(), words));
            continue;
        }
        match ownership::delete_owned(kinds, reference, claimant).await? {
            Removal::Done => removed.done += 1,
            Removal::Gone => {}
            Removal::NotOurs(why) => removed.not_ours.push(why),
        }
    }
    Ok(removed)
}

fn is_crd(reference: &ObjectRef) -> bool {
    reference.kind == "CustomResourceDefinition"
        && reference.api_version.starts_with("apiextensions.k8s.io/")
}

/// How many custom resources of CRD `name` exist, in words, if any do
/// (`None` also when the CRD is gone or serves nothing).
async fn crd_in_use(client: &Client, name: &str) -> Result<Option<String>, ApplyError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let refused = |error: kube::Error| ApplyError::Refused {
        object: format!("CustomResourceDefinition {name}"),
        message: api_message(&error),
    };
    let Some(crd) = Api::<CustomResourceDefinition>::all(client.clone())
        .get_opt(name)
        .await
        .map_err(refused)?
    else {
        return Ok(None);
    };
    let kind = crate::inventory::ProvidedKind::of(&crd);
    let Some(resource) = kind.api_resource() else {
        return Ok(None);
    };
    let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &resource);
    let page = match api
        .list_metadata(&kube::api::ListParams::default().limit(100))
        .await
    {
        Ok(page) => page,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(error) => return Err(refused(error)),
    };
    if page.items.is_empty() {
        return Ok(None);
    }
    let more = page
        .metadata
        .continue_
        .as_deref()
        .is_some_and(|token| !token.is_empty());
    Ok(Some(format!(
        "{}{} {} objects exist",
        if more { "more than " } else { "" },
        page.items.len(),
        kind.kind
    )))
}

/// Every object of the kinds `of` (apiVersion, kind) labelled with
/// `uid` as its Instance's, wherever it is. This completes a status that
/// lists only some of an Instance's objects; what is found is still removed
/// only if its own records say it is the Instance's. A kind the cluster no
/// longer serves has no objects.
pub async fn labelled(
    kinds: &mut Kinds,
    of: &BTreeSet<(String, String)>,
    uid: &str,
) -> Result<Vec<ObjectRef>, ApplyError> {
    let selector = format!("{INSTANCE_UID_LABEL}={uid}");
    let mut found = Vec::new();
    for (api_version, kind) in of {
        let probe = ObjectRef {
            api_version: api_version.clone(),
            kind: kind.clone(),
            name: String::new(),
            namespace: None,
        };
        let api = match kinds.api_everywhere(&probe).await {
            Ok(api) => api,
            Err(ApplyError::UnknownKind { .. }) => continue,
            Err(error) => return Err(error),
        };
        let mut params = kube::api::ListParams::default()
            .labels(&selector)
            .limit(500);
        loop {
            let page = api
                .list_metadata(&params)
                .await
                .map_err(|error| ApplyError::Refused {
                    object: format!("{kind} objects labelled {selector}"),
                    message: api_message(&error),
                })?;
            found.extend(page.items.into_iter().map(|item| ObjectRef {
                api_version: api_version.clone(),
                kind: kind.clone(),
                name: item.metadata.name.unwrap_or_default(),
                namespace: item.metadata.namespace,
            }));
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(found)
}

/// The kinds (apiVersion, kind) of `objects` and of `counted`.
pub fn kinds_of<'a>(
    objects: impl IntoIterator<Item = &'a ObjectRef>,
    counted: impl IntoIterator<Item = &'a pakket_api::KindCount>,
) -> BTreeSet<(String, String)> {
    objects
        .into_iter()
        .map(|o| (o.api_version.clone(), o.kind.clone()))
        .chain(
            counted
                .into_iter()
                .map(|k| (k.api_version.clone(), k.kind.clone())),
        )
        .collect()
}

/// Why one object is not healthy (yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthProblem {
    /// The object, as `Kind/namespace/name`.
    pub object: String,
    /// In words, naming the object.
    pub text: String,
    /// Still converging (a Deployment rolling out within its progress
    /// deadline, a CRD not Established yet): not a failure, not yet healthy.
    pub settling: bool,
    /// A rollout that passed its progress deadline (the workload says so):
    /// a blocked rollout, not a broken object.
    pub past_deadline: bool,
}

impl HealthProblem {
    fn failing(object: &ObjectRef, text: String) -> Self {
        Self {
            object: object.to_string(),
            text,
            settling: false,
            past_deadline: false,
        }
    }

    fn settling(object: &ObjectRef, text: String) -> Self {
        Self {
            settling: true,
            ..Self::failing(object, text)
        }
    }

    fn past_deadline(object: &ObjectRef, text: String) -> Self {
        Self {
            past_deadline: true,
            ..Self::failing(object, text)
        }
    }

    /// What tools read of it: the object, and what is wrong with it (the
    /// words after the object's name).
    pub fn cause_object(&self) -> pakket_api::CauseObject {
        let problem = self
            .text
            .strip_prefix(self.object.as_str())
            .unwrap_or(&self.text)
            .trim_start_matches(':')
            .trim();
        pakket_api::CauseObject {
            object: self.object.clone(),
            problem: (!problem.is_empty()).then(|| problem.to_owned()),
        }
    }
}

/// Objects that are not healthy, each with why: missing, a Deployment not
/// Available, a CRD not Established (or still getting there).
pub async fn unhealthy(kinds: &mut Kinds, objects: &[ObjectRef]) -> Vec<HealthProblem> {
    let mut problems = Vec::new();
    for reference in objects {
        let found = match kinds.api(reference).await {
            Ok(api) => api.get_opt(&reference.name).await.ok().flatten(),
            Err(_) => None,
        };
        let Some(object) = found else {
            problems.push(HealthProblem::failing(
                reference,
                format!("{reference} is missing"),
            ));
            continue;
        };
        if endpoints::wanted(&object) {
            problems.extend(endpoints::problem(&kinds.client, reference, &object).await);
            continue;
        }
        problems.extend(health_problem(reference, &object));
    }
    problems
}

/// [`unhealthy`] of `instance`'s `objects`, reading only those
/// [`to_read`] names: the rest exist as the drift watches see them, and
/// that is all their health is.
pub async fn unhealthy_of(
    kinds: &mut Kinds,
    instance: &str,
    objects: &[ObjectRef],
) -> Vec<HealthProblem> {
    let read = to_read(objects, |reference| kinds.present(instance, reference));
    if read.len() < objects.len() {
        tracing::debug!(
            %instance,
            read = read.len(),
            objects = objects.len(),
            "health read only where the drift watches cannot tell it"
        );
    }
    unhealthy(kinds, &read).await
}

/// The kinds whose health [`health_problem`] reads from their status;
/// every other kind is healthy when it exists.
const READ_FOR_HEALTH: [&str; 4] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "CustomResourceDefinition",
];

/// Which of `objects` must be read for their health at a look that writes
/// nothing: every one but those whose health is their existence alone
/// (any kind but a Deployment, StatefulSet, DaemonSet or CRD, whose status
/// is judged, and not a Service that asks for ready endpoints) and that the drift watches see as the Instance's now
/// (`present` gives the watch's copy of such an object's records,
/// [`crate::drift::Drift::present`]). For those, the watch proves what a
/// read would: the object exists, labelled with the Instance. One deleted
/// a moment ago whose deletion the watch has not delivered yet is read at
/// the look that deletion brings, as soon as it arrives. The progression
/// probes of the class and content read what they select apart from this.
pub fn to_read(
    objects: &[ObjectRef],
    present: impl Fn(&ObjectRef) -> Option<kube::api::ObjectMeta>,
) -> Vec<ObjectRef> {
    objects
        .iter()
        .filter(|reference| {
            READ_FOR_HEALTH.contains(&reference.kind.as_str())
                || present(reference).is_none_or(|seen| endpoints::wanted_by(&seen))
        })
        .cloned()
        .collect()
}

/// Why one object, as read, is not healthy: a Deployment whose current
/// revision has not rolled out, passed its deadline or lost availability
/// ([`rollout`]), a CRD not
/// Established (or not yet: its names not refused); every other kind is
/// healthy when present (the kinds read are [`READ_FOR_HEALTH`]).
fn health_problem(reference: &ObjectRef, object: &DynamicObject) -> Option<HealthProblem> {
    match reference.kind.as_str() {
        "Deployment" => rollout::deployment_problem(reference, object, jiff::Timestamp::now()),
        "StatefulSet" => rollout::stateful_set_problem(reference, object),
        "DaemonSet" => rollout::daemon_set_problem(reference, object),
        "CustomResourceDefinition" if !condition_true(object, "Established") => {
            let refused =
                condition(object, "NamesAccepted").filter(|(status, _, _)| status == "False");
            Some(match refused {
                Some((_, reason, message)) => HealthProblem::failing(
                    reference,
                    format!("{reference} is not Established ({reason}: {message})"),
                ),
                None => {
                    HealthProblem::settling(reference, format!("{reference} to be Established"))
                }
            })
        }
        _ => None,
    }
}

/// The status, reason and message of condition `kind`, if the object has it.
fn condition(object: &DynamicObject, kind: &str) -> Option<(String, String, String)> {
    condition_of(&object.data, kind)
}

/// [`condition`] of an object as JSON.
fn condition_of(object: &Value, kind: &str) -> Option<(String, String, String)> {
    let conditions = object.pointer("/status/conditions")?.as_array()?;
    let found = conditions
        .iter()
        .find(|condition| condition.get("type").and_then(Value::as_str) == Some(kind))?;
    let text = |field: &str| {
        found
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some((text("status"), text("reason"), text("message")))
}

fn condition_true(object: &DynamicObject, wanted: &str) -> bool {
    object
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|condition| {
                condition.get("type").and_then(Value::as_str) == Some(wanted)
                    && condition.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

#[cfg(test)]
mod health_tests {
    use super::*;

    fn object(kind: &str, conditions: Value) -> (ObjectRef, DynamicObject) {
        let reference = ObjectRef {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: "x".into(),
            namespace: Some("n".into()),
        };
        let object = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "x"},
            "status": {"conditions": conditions},
        }))
        .unwrap();
        (reference, object)
    }

    #[test]
    fn a_rollout_within_its_deadline_is_settling_and_past_it_failing() {
        let (reference, fresh) = object("Deployment", serde_json::json!([]));
        assert!(health_problem(&reference, &fresh).unwrap().settling);
        let (reference, rolling) = object(
            "Deployment",
            serde_json::json!([
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "m"},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "p"},
            ]),
        );
        assert!(health_problem(&reference, &rolling).unwrap().settling);
        let (reference, stuck) = object(
            "Deployment",
            serde_json::json!([
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "too few"},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "p"},
            ]),
        );
        let problem = health_problem(&reference, &stuck).unwrap();
        assert!(!problem.settling);
        assert!(
            problem.text.starts_with(
                "Deployment/n/x passed its progress deadline (ProgressDeadlineExceeded: p)"
            ),
            "{}",
            problem.text
        );
    }

    fn reference(api_version: &str, kind: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "x".into(),
            namespace: Some("n".into()),
        }
    }

    /// The drift watch's copy of an object's records, with the health
    /// annotation `annotation`.
    fn seen(annotation: Option<&str>) -> kube::api::ObjectMeta {
        use pakket_api::ownership::HEALTH_ANNOTATION;
        kube::api::ObjectMeta {
            annotations: annotation
                .map(|value| [(HEALTH_ANNOTATION.to_owned(), value.to_owned())].into()),
            ..kube::api::ObjectMeta::default()
        }
    }

    /// Rows of [`only_kinds_with_a_health_of_their_own_are_read_where_the_watches_see_them`]:
    /// an object, the watch's copy of it if they see it, whether it is read.
    fn presence_rows() -> Vec<(&'static str, ObjectRef, Option<kube::api::ObjectMeta>, bool)> {
        vec![
            (
                "a ConfigMap the watches see",
                reference("v1", "ConfigMap"),
                Some(seen(None)),
                false,
            ),
            (
                "a ConfigMap the watches do not see (or whose kind is not synced)",
                reference("v1", "ConfigMap"),
                None,
                true,
            ),
            (
                "a Secret the watches see",
                reference("v1", "Secret"),
                Some(seen(None)),
                false,
            ),
            (
                "a Role the watches see",
                reference("rbac.authorization.k8s.io/v1", "Role"),
                Some(seen(None)),
                false,
            ),
            (
                "a Job: its built-in probe holds phases only, health is its existence",
                reference("batch/v1", "Job"),
                Some(seen(None)),
                false,
            ),
            (
                "a Deployment, seen",
                reference("apps/v1", "Deployment"),
                Some(seen(None)),
                true,
            ),
            (
                "a StatefulSet, seen",
                reference("apps/v1", "StatefulSet"),
                Some(seen(None)),
                true,
            ),
            (
                "a DaemonSet, seen",
                reference("apps/v1", "DaemonSet"),
                Some(seen(None)),
                true,
            ),
            (
                "a CRD, seen: Established is read",
                reference("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                Some(seen(None)),
                true,
            ),
            (
                "a Service, seen, asking for nothing",
                reference("v1", "Service"),
                Some(seen(None)),
                false,
            ),
            (
                "a Service, seen, asking for ready endpoints",
                reference("v1", "Service"),
                Some(seen(Some(endpoints::READY_ENDPOINTS))),
                true,
            ),
            ("a Service not seen", reference("v1", "Service"), None, true),
        ]
    }

    #[test]
    fn only_kinds_with_a_health_of_their_own_are_read_where_the_watches_see_them() {
        for (row, object, present, read) in presence_rows() {
            let found = to_read(std::slice::from_ref(&object), |_| present.clone());
            assert_eq!(found == [object], read, "{row}");
        }
    }

    #[test]
    fn the_kinds_read_for_health_are_the_kinds_whose_status_is_judged() {
        // Before any rollout, each kind read has a problem; every other
        // kind has none whatever its status says.
        let fresh = |api_version: &str, kind: &str| {
            let reference = ObjectRef {
                api_version: api_version.into(),
                kind: kind.into(),
                name: "x".into(),
                namespace: Some("n".into()),
            };
            let object: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": api_version, "kind": kind,
                "metadata": {"name": "x", "generation": 1},
                "status": {"conditions": [
                    {"type": "Available", "status": "False", "reason": "R", "message": "m"},
                    {"type": "Complete", "status": "False", "reason": "R", "message": "m"},
                    {"type": "Ready", "status": "False", "reason": "R", "message": "m"},
                ]},
            }))
            .unwrap();
            health_problem(&reference, &object)
        };
        for kind in READ_FOR_HEALTH {
            assert!(
                fresh("x/v1", kind).is_some(),
                "{kind} is judged by its status"
            );
        }
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Service"),
            ("v1", "PersistentVolumeClaim"),
            ("batch/v1", "Job"),
            ("apiregistration.k8s.io/v1", "APIService"),
            ("cert-manager.io/v1", "Certificate"),
            ("policy/v1", "PodDisruptionBudget"),
        ] {
            assert!(
                fresh(api_version, kind).is_none(),
                "{kind} has a health of its own: add it to READ_FOR_HEALTH"
            );
        }
    }

    #[test]
    fn a_crd_whose_names_are_refused_is_failing_else_settling() {
        let (reference, fresh) = object("CustomResourceDefinition", serde_json::json!([]));
        assert!(health_problem(&reference, &fresh).unwrap().settling);
        let (reference, refused) = object(
            "CustomResourceDefinition",
            serde_json::json!([{"type": "NamesAccepted", "status": "False", "reason": "NameConflict", "message": "taken"}]),
        );
        assert!(!health_problem(&reference, &refused).unwrap().settling);
    }
}
