//! The Operator controller: for each Operator, the Input it stands for
//! (same name, owned by the Operator, so the garbage collector removes it
//! with it), and a status read from that Input, the Instances it brought
//! in, and the served catalogs (`updates`, `UpdateAvailable`). Only the
//! leader writes.

use pakket_resolve_api::InputConditionType;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Client, Resource as _, ResourceExt as _};
use pakket_api::{ConditionType, Instance, Standing, readiness};
use pakket_engine::Version;
use pakket_runtime::kernel::leader::LeaderState;
use serde_json::json;

use crate::catalogs::serving::Catalogs;
use crate::inputs::input::Input;
use crate::operators::operator::{self, Component, Operator, OperatorStatus};

/// The field manager of the Inputs and statuses it writes.
pub const MANAGER: &str = "pakket-resolveset-operators";
/// How often an Operator is looked at again with nothing said to have
/// changed. What its status is made of is watched (its Input, the set and
/// the set's children) or announced (a catalog's new contents wake every
/// Operator), so this only bounds an event missed: each look costs reads
/// of its Input and children, and a few hundred Operators looked at every
/// 30 s would keep the apiserver busy while nothing happens.
const RESYNC: Duration = Duration::from_secs(300);
/// How soon a replica that does not lead looks again: it may lead by
/// then, and a new leader's Operators should not wait a whole [`RESYNC`].
const STANDBY_RECHECK: Duration = Duration::from_secs(30);

/// What every reconcile shares.
pub struct OperatorContext {
    /// The apiserver.
    pub client: Client,
    /// What the resolver serves.
    pub catalogs: Arc<Catalogs>,
    /// Whether this replica writes; `None`: always.
    pub leader: Option<LeaderState>,
    /// The resolveset Instance's name: every Operator's children come
    /// from it, once it is approved.
    pub set_instance: String,
    /// Verifies who wrote each Operator and seals that person on the
    /// Input written for it (as its `last-changed-by`; the webhook takes
    /// such a record from pakket-resolveset only).
    pub record_key: Option<pakket_api::RecordKey>,
}

/// Runs the controller; `selector` limits it to Operators with matching labels.
pub async fn run(context: Arc<OperatorContext>, selector: Option<String>) {
    let config = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    let operators: Api<Operator> = Api::all(context.client.clone());
    let inputs: Api<Input> = Api::all(context.client.clone());
    let instances: Api<Instance> = Api::all(context.client.clone());
    let controller = Controller::new(operators, config.clone()).owns(inputs, config);
    // An Operator's Ready follows its Instances: a change of one (installed,
    // failed, waiting for a person) is looked at when it happens, not at
    // the next resync. The Operators that stand on an Instance are the ones
    // whose last status lists it; one not listed yet is listed by the
    // reconcile its Input's change brings. Only the set and its children
    // (all labelled with the set's name) are watched, so the cluster's
    // other Instances cost this watch nothing; the label only wakes a
    // reconcile, which reads what it judges by name.
    let operators = controller.store();
    let set = context.set_instance.clone();
    // Updates available follow the served catalogs: each swap wakes every
    // Operator.
    let swaps = futures::stream::unfold(context.catalogs.subscribe(), |mut swaps| async move {
        swaps.changed().await.ok()?;
        Some(((), swaps))
    });
    let of_the_set = watcher::Config::default().labels(&format!(
        "{}={set}",
        crate::inputs::input_controller::SET_LABEL
    ));
    controller
        .watches(instances, of_the_set, move |instance| {
            let name = instance.name_any();
            if name == set {
                waiting_for_children(&operators.state())
            } else {
                standing_on(&operators.state(), &name)
            }
        })
        .reconcile_all_on(swaps)
        .run(reconcile, error_policy, context)
        .for_each(|_| async {})
        .await;
}

/// What the Instances the Input resolved add to the Operator's Ready,
/// and each as a component.
async fn children(
    resolved: &[pakket_resolve_api::input::ResolvedInstance],
    context: &OperatorContext,
) -> (Vec<(String, Standing)>, Vec<Component>) {
    let mut parts = Vec::new();
    let mut components = Vec::new();
    let instances: Api<Instance> = Api::all(context.client.clone());
    // Read once, and only when a child is not made yet.
    let mut set: Option<Option<Instance>> = None;
    for resolved in resolved {
        let found = instances.get_opt(&resolved.name).await.ok().flatten();
        let state = match &found {
            Some(instance) => instance
                .condition(ConditionType::Installed)
                .map_or_else(|| "NotReconciled".into(), |c| c.reason.clone()),
            None => "Missing".into(),
        };
        if found.is_none() && set.is_none() {
            set = Some(
                instances
                    .get_opt(&context.set_instance)
                    .await
                    .ok()
                    .flatten(),
            );
        }
        let set = set.as_ref().and_then(Option::as_ref);
        parts.push(child_part(&resolved.name, found.as_ref(), set));
        components.push(Component {
            kind: "Instance".into(),
            name: resolved.name.clone(),
            state,
        });
    }
    (parts, components)
}

/// What an Instance the Input resolved, named `child`, adds to the
/// Operator's Ready: its own standing once it exists. Before that, the
/// set Instance's when the set does not stand Ready (children are made
/// only once the set is approved, so while it waits for a person, or was
/// refused, that is what the Operator waits on); else that it is not made
/// yet.
fn child_part(child: &str, found: Option<&Instance>, set: Option<&Instance>) -> (String, Standing) {
    if let Some(instance) = found {
        let standing = readiness::of_instance(instance).unwrap_or_else(|| {
            Standing::reconciling("NotReconciled", "no provisioner has looked at it yet")
        });
        return (format!("Instance {child}"), standing);
    }
    match set.map(|set| (set, readiness::of_instance(set))) {
        Some((set, Some(standing))) if !matches!(standing, Standing::Ready { .. }) => {
            (format!("Instance {}", set.name_any()), set_says(&standing))
        }
        _ => (
            format!("Instance {child}"),
            Standing::reconciling("Missing", "not made yet"),
        ),
    }
}

/// The set Instance's standing as an Operator repeats it: its reason,
/// never its message. The set holds every Operator's packages, and its
/// message names them (what the set adds, whose request waits); an
/// Operator's reader may not read the set, so `kubectl instance why` on
/// the set, answered as far as its reader may read, tells the rest.
fn set_says(standing: &Standing) -> Standing {
    let reason = standing.reason();
    let message = if reason == pakket_api::Reason::ApprovalPending.as_str() {
        "waiting for a person to approve: the set this Operator's Instances come from is not approved yet".to_owned()
    } else {
        format!("the set this Operator's Instances come from is not ready ({reason})")
    };
    match standing {
        Standing::Stalled { .. } => Standing::stalled(reason, message),
        _ => Standing::reconciling(reason, message),
    }
}

/// The Operators among `operators` whose status lists Instance `instance`
/// among what they stand on.
fn standing_on(operators: &[Arc<Operator>], instance: &str) -> Vec<ObjectRef<Operator>> {
    listing(operators, |c| c.kind == "Instance" && c.name == instance)
}

/// The Operators among `operators` whose status lists a component that
/// `wanted` picks.
fn listing(
    operators: &[Arc<Operator>],
    wanted: impl Fn(&Component) -> bool,
) -> Vec<ObjectRef<Operator>> {
    operators
        .iter()
        .filter(|operator| {
            operator
                .status
                .as_ref()
                .is_some_and(|status| status.components.iter().any(&wanted))
        })
        .map(|operator| ObjectRef::from_obj(operator.as_ref()))
        .collect()
}

fn error_policy(operator: Arc<Operator>, error: &kube::Error, _: Arc<OperatorContext>) -> Action {
    tracing::warn!(operator = %operator.name_any(), %error, "reconciling an Operator");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(
    operator: Arc<Operator>,
    context: Arc<OperatorContext>,
) -> Result<Action, kube::Error> {
    if !context.leader.as_ref().is_none_or(LeaderState::is_leader) {
        return Ok(Action::requeue(STANDBY_RECHECK));
    }
    let name = operator.name_any();
    let inputs: Api<Input> = Api::all(context.client.clone());
    let owner = operator
        .controller_owner_ref(&())
        .expect("an Operator read from the API has a name and UID");
    // Nothing is adopted silently: an Input of that name that is not this
    // Operator's (someone else's, or an older Operator's of the same name)
    // stays as it is, and the Operator says so.
    let existing = inputs.get_opt(&name).await?;
    if let Some(existing) = &existing
        && !existing
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == operator.uid().as_ref())
    {
        let mut status = operator.status.clone().unwrap_or_default();
        let generation = operator.metadata.generation;
        let message = format!(
            "Input {name} exists and is not this Operator's, so it is left as it is; rename the Operator, or delete that Input if it should be the Operator's"
        );
        pakket_api::condition::set(
            &mut status.conditions,
            Condition {
                type_: "UpdateAvailable".into(),
                status: "Unknown".into(),
                reason: "InputNotOurs".into(),
                message: message.clone(),
                observed_generation: generation,
                last_transition_time: Time(Timestamp::now()),
            },
        );
        let stalled = Standing::stalled("InputNotOurs", message);
        readiness::write(
            &mut status.conditions,
            generation,
            &stalled,
            Timestamp::now(),
        );
        status.observed_generation = generation;
        status.components = Vec::new();
        write_status(&context, &operator, status).await?;
        return Ok(Action::requeue(RESYNC));
    }
    let labels = operator.labels().clone();
    let mut input = json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1",
        "kind": "Input",
        "metadata": { "name": name, "labels": labels, "ownerReferences": [owner] },
        "spec": {
            "inputClass": operator.spec.input_class,
            "constraints": operator::constraints(&operator.spec),
        },
    });
    if let Some(config) = operator::config(&operator.spec) {
        input["spec"]["config"] = serde_json::Value::Object(config);
    }
    if let Some(record) = on_behalf_of(&operator, &input["spec"], context.record_key.as_ref()) {
        input["metadata"]["annotations"] =
            json!({ pakket_api::LAST_CHANGED_BY_ANNOTATION: record.to_annotation() });
    }
    // An Input already as it would be written costs no write: a few
    // hundred Operators, each looked at every RESYNC, would otherwise
    // send the apiserver a write each time.
    let input = match existing.filter(|existing| already_applied(existing, &input, &owner.uid)) {
        Some(existing) => existing,
        None => {
            inputs
                .patch(
                    &name,
                    &PatchParams::apply(MANAGER).force(),
                    &Patch::Apply(&input),
                )
                .await?
        }
    };
    let status = status_of(&operator, &input, &context).await;
    write_status(&context, &operator, status).await?;
    Ok(Action::requeue(RESYNC))
}

/// Whether `existing` already holds everything `desired` (the Input this
/// controller would apply) sets: its spec, labels, requester record and
/// this Operator (UID `owner`) as its controller. Anything else, or any
/// doubt, means it is written again.
fn already_applied(existing: &Input, desired: &serde_json::Value, owner: &str) -> bool {
    let spec = serde_json::to_value(&existing.spec).ok();
    let labels = serde_json::to_value(existing.labels()).ok();
    let record = existing
        .annotations()
        .get(pakket_api::LAST_CHANGED_BY_ANNOTATION)
        .map(String::as_str);
    let wanted_record =
        desired["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION].as_str();
    let owned = existing
        .owner_references()
        .iter()
        .any(|o| o.uid == owner && o.controller == Some(true));
    spec.as_ref() == Some(&desired["spec"])
        && labels.as_ref() == Some(&desired["metadata"]["labels"])
        && record == wanted_record
        && owned
}

/// The Operator's author (the webhook's sealed record, verified), sealed
/// again as the requester of the Input spec `spec` written for it: the
/// Instances the Input brings in are then judged by the author's rights.
/// `None` when the Operator has no record that verifies.
fn on_behalf_of(
    operator: &Operator,
    spec: &serde_json::Value,
    key: Option<&pakket_api::RecordKey>,
) -> Option<pakket_api::CreatorRecord> {
    let name = operator.name_any();
    let operator_spec = serde_json::to_value(&operator.spec).ok()?;
    let (author, _) = pakket_api::requester_of(
        operator.metadata.annotations.as_ref(),
        key,
        &pakket_api::record_object("Operator", &name),
        &pakket_api::value_digest(&operator_spec),
    )
    .map_err(|error| tracing::debug!(operator = %name, %error, "no verified author"))
    .ok()?;
    Some(author.sealed_for(
        key?,
        pakket_api::LAST_CHANGED_BY_ANNOTATION,
        &pakket_api::record_object("Input", &name),
        pakket_api::value_digest(spec),
    ))
}

/// Writes `status` if it differs from what the Operator has.
async fn write_status(
    context: &OperatorContext,
    operator: &Operator,
    status: OperatorStatus,
) -> Result<(), kube::Error> {
    if operator.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": "operators.pakket.dev/v1alpha1",
        "kind": "Operator",
        "status": status,
    });
    Api::<Operator>::all(context.client.clone())
        .patch_status(
            &operator.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// The Operator's status from its Input, the Input's Instances and the
/// served catalogs.
async fn status_of(
    operator: &Operator,
    input: &Input,
    context: &OperatorContext,
) -> OperatorStatus {
    let package = &operator.spec.catalog.package;
    let resolved = input.status.clone().unwrap_or_default();
    let installed_version = resolved
        .instances
        .iter()
        .find(|i| &i.package == package)
        .map(|i| i.version.clone());
    let mut components = vec![Component {
        kind: "Input".into(),
        name: input.name_any(),
        state: input
            .condition(InputConditionType::ResolutionFailed.as_str())
            .map_or_else(|| "NotResolved".into(), |c| c.reason.clone()),
    }];
    let input_conditions = resolved.conditions.as_slice();
    let mut parts = vec![(
        format!("Input {}", input.name_any()),
        pakket_resolve_api::readiness::of_input(input_conditions),
    )];
    let (children, child_components) = children(&resolved.instances, context).await;
    parts.extend(children);
    components.extend(child_components);
    let updates = installed_version
        .as_deref()
        .and_then(|v| Version::parse(v).ok())
        .map(|installed| {
            operator::updates(&context.catalogs.snapshot(), &operator.spec, &installed)
        })
        .unwrap_or_default();
    let old = operator.status.clone().unwrap_or_default();
    let mut conditions = old.conditions.clone();
    let (status, reason, message) = match &installed_version {
        Some(_) => operator::update_condition(&updates),
        None => (
            "Unknown",
            "NotResolved",
            "the Input has not resolved the package yet (kubectl instance why input/NAME)".into(),
        ),
    };
    pakket_api::condition::set(
        &mut conditions,
        Condition {
            type_: "UpdateAvailable".into(),
            status: status.into(),
            reason: reason.into(),
            message,
            observed_generation: operator.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        },
    );
    // Whether what it installed waits for its catalog, and whether its
    // config is applied, as its Input says.
    for type_ in [
        InputConditionType::CatalogUnavailable,
        InputConditionType::ConfigConflict,
    ] {
        if let Some(said) = input.condition(type_.as_str()) {
            pakket_api::condition::set(
                &mut conditions,
                Condition {
                    observed_generation: operator.metadata.generation,
                    ..said.clone()
                },
            );
        }
    }
    let generation = operator.metadata.generation;
    readiness::write(
        &mut conditions,
        generation,
        &readiness::of_parts(&parts),
        Timestamp::now(),
    );
    OperatorStatus {
        conditions,
        installed_version,
        updates,
        components,
        observed_generation: generation,
    }
}

/// The Operators among `operators` with a child not made yet: they wait
/// on the set Instance (its approval), so a change of it is theirs to see.
fn waiting_for_children(operators: &[Arc<Operator>]) -> Vec<ObjectRef<Operator>> {
    listing(operators, |c| c.kind == "Instance" && c.state == "Missing")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operator(name: &str, components: &[(&str, &str)]) -> Arc<Operator> {
        let components: Vec<_> = components
            .iter()
            .map(|(kind, name)| json!({"kind": kind, "name": name, "state": "Missing"}))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "operators.pakket.dev/v1alpha1",
                "kind": "Operator",
                "metadata": {"name": name},
                "spec": {"catalog": {"name": "c", "package": "etcd"}, "inputClass": "subscription"},
                "status": {"components": components},
            }))
            .unwrap(),
        )
    }

    fn instance(name: &str, conditions: &[(&str, &str, &str)]) -> Instance {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(kind, status, reason)| {
                json!({"type": kind, "status": status, "reason": reason, "message": "rule 2 asks",
                       "lastTransitionTime": "2026-11-30T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": name},
            "spec": {"class": "c", "bundle": {"name": "b"}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn a_child_not_made_yet_is_waited_on_through_its_set_while_the_set_is_not_ready() {
        let waiting = instance(
            "set",
            &[
                ("Unpacked", "True", "UnpackSucceeded"),
                ("Approved", "False", "ApprovalPending"),
            ],
        );
        let healthy = instance(
            "set",
            &[
                ("Unpacked", "True", "UnpackSucceeded"),
                ("Approved", "True", "ApprovedByPolicy"),
                ("Installed", "True", "InstallSucceeded"),
                ("Healthy", "True", "ObjectsHealthy"),
            ],
        );
        let child = instance("set-etcd", &[("Unpacked", "True", "UnpackSucceeded")]);

        let (part, standing) = child_part("set-etcd", None, Some(&waiting));
        assert_eq!(part, "Instance set");
        assert_eq!(standing.reason(), "ApprovalPending");
        assert!(
            standing
                .message()
                .starts_with("waiting for a person to approve"),
            "{standing:?}"
        );
        // The set's own message (here "rule 2 asks") may name other
        // people's packages: only its reason travels.
        assert!(!standing.message().contains("rule 2"), "{standing:?}");

        // The set is fine, or unknown: the child is simply not made yet.
        for set in [Some(&healthy), None] {
            let (part, standing) = child_part("set-etcd", None, set);
            assert_eq!(part, "Instance set-etcd");
            assert_eq!(standing.reason(), "Missing");
        }

        // Once made, the child speaks for itself, whatever the set says.
        let (part, standing) = child_part("set-etcd", Some(&child), Some(&waiting));
        assert_eq!(part, "Instance set-etcd");
        assert_ne!(standing.reason(), "ApprovalPending");
    }

    #[test]
    fn the_set_wakes_only_the_operators_with_a_child_not_made_yet() {
        let mut waiting = (*operator("waiting", &[("Instance", "set-etcd")])).clone();
        waiting.status.as_mut().unwrap().components[0].state = "Missing".into();
        let mut installed = (*operator("installed", &[("Instance", "set-other")])).clone();
        installed.status.as_mut().unwrap().components[0].state = "InstallSucceeded".into();
        let operators = [Arc::new(waiting), Arc::new(installed)];
        let woken: Vec<String> = waiting_for_children(&operators)
            .into_iter()
            .map(|reference| reference.name)
            .collect();
        assert_eq!(woken, ["waiting"]);
    }

    #[test]
    fn an_instance_wakes_the_operators_that_list_it_and_no_other() {
        let operators = [
            operator("etcd", &[("Input", "etcd"), ("Instance", "set-etcd")]),
            operator("also-etcd", &[("Instance", "set-etcd")]),
            operator("other", &[("Input", "other"), ("Instance", "set-other")]),
            // An Input of the Instance's name is not the Instance.
            operator("named-like-it", &[("Input", "set-etcd")]),
            // No status yet.
            Arc::new({
                let mut bare = (*operator("new", &[])).clone();
                bare.status = None;
                bare
            }),
        ];
        let woken: Vec<String> = standing_on(&operators, "set-etcd")
            .into_iter()
            .map(|reference| reference.name)
            .collect();
        assert_eq!(woken, ["etcd", "also-etcd"]);
        assert!(standing_on(&operators, "unknown").is_empty());
    }

    fn desired() -> serde_json::Value {
        json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1",
            "kind": "Input",
            "metadata": {
                "name": "request-1",
                "labels": {"team": "a"},
                "annotations": {pakket_api::LAST_CHANGED_BY_ANNOTATION: "{\"username\":\"alice\"}"},
            },
            "spec": {
                "inputClass": "subscription",
                "constraints": [{"type": "olm.catalog", "value": {"name": "c", "package": "etcd"}}],
            },
        })
    }

    fn existing() -> Input {
        let mut input: Input = serde_json::from_value(desired()).unwrap();
        input.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
                "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
                "name": "request-1", "uid": "u-1", "controller": true,
            }))
            .unwrap(),
        ]);
        input
    }

    #[test]
    fn an_input_as_it_would_be_written_is_not_written_again_and_any_difference_is() {
        assert!(already_applied(&existing(), &desired(), "u-1"));
        // Another Operator's (a new one of the same name).
        assert!(!already_applied(&existing(), &desired(), "u-2"));
        let mut changed = desired();
        changed["spec"]["inputClass"] = json!("force");
        assert!(!already_applied(&existing(), &changed, "u-1"));
        let mut resealed = desired();
        resealed["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
            json!("{\"username\":\"bob\"}");
        assert!(!already_applied(&existing(), &resealed, "u-1"));
        let mut relabelled = desired();
        relabelled["metadata"]["labels"] = json!({});
        assert!(!already_applied(&existing(), &relabelled, "u-1"));
        let mut unsealed = desired();
        unsealed["metadata"]["annotations"] = json!({});
        assert!(!already_applied(&existing(), &unsealed, "u-1"));
    }
}
