//! The Input controller: every Input resolved together, with what the set
//! installed before, each time an Input, an InputClass or a served catalog
//! changes (and every few minutes). It writes each Input's status and,
//! unless nothing but dry runs asked, the set: `resolved.bundles.json` in
//! an immutable ConfigMap named after its digest, and the resolveset
//! Instance that points at it (the resolveset provisioner installs it).
//!
//! Resolving all Inputs at once is what keeps the cluster's content
//! working together; doing it in one task (not one reconcile per Input)
//! means two Inputs never race to write two different sets. Every replica
//! may resolve; only the leader writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource as _, ResourceExt as _};
use pakket_engine::Version;
use pakket_engine::resolve::Request;
use pakket_runtime::kernel::leader::LeaderState;
use serde_json::json;

use crate::catalogs::serving::Catalogs;
use crate::inputs::conflict;
use crate::inputs::input::{
    ConflictDecision, Input, InputClass, InputConflict, InputStatus, ResolvedInstance,
};
use crate::inputs::input_resolve::{self, Answer, Asked, Seniority};
use crate::inputs::kept_installed::Held;
use crate::inputs::kept_installed::{self, Offer};
use crate::protocol::plan::PlannedInput;
use crate::set::resolved_set::{self, Entry};
use crate::set::{content_label, copies};
use crate::{inputs::dependency_inputs, inputs::package_owner, set::held_back, set::requested_by};
use pakket_resolve_api::{InputConditionType as Type, InputReason as Reason};

/// The field manager of everything this controller writes.
pub const MANAGER: &str = "pakket-resolveset-inputs";
/// The label on the set's ConfigMaps and Instance: the Instance's name.
pub const SET_LABEL: &str = "resolve.pakket.dev/resolveset";
/// Resolves again this often even when nothing was seen changing.
const RESYNC: Duration = Duration::from_secs(300);
/// How long the apiserver's version is used before it is read again.
const CLUSTER_VERSION_FOR: Duration = Duration::from_secs(300);
/// Changes arriving this close together are resolved once.
const SETTLE: Duration = Duration::from_millis(300);
/// How soon a set that holds bundles back for leaving dependents is looked
/// at again (a deleted child's uninstall starts no watch event here).
const HELD_BACK_RECHECK: Duration = Duration::from_secs(3);
/// How soon a set that holds bundles back only for Instances outside it
/// is looked at again (those change seldom, and each look lists every
/// Instance).
const HELD_FOR_OUTSIDE_RECHECK: Duration = Duration::from_secs(30);

/// Where the set goes and who writes it.
pub struct InputContext {
    /// The apiserver.
    pub client: Client,
    /// What the resolver serves.
    pub catalogs: Arc<Catalogs>,
    /// Whether this replica writes; `None`: always.
    pub leader: Option<LeaderState>,
    /// Publishes the Inputs' Events.
    pub recorder: Recorder,
    /// The namespace of the set's ConfigMaps.
    pub namespace: String,
    /// The resolveset Instance's name.
    pub instance: String,
    /// Verifies who wrote each Input ([`crate::set::requested_by`]).
    pub record_key: Option<pakket_api::RecordKey>,
    /// The apiserver's (major, minor) and when it was read: asked again
    /// after `CLUSTER_VERSION_FOR`, not on every pass.
    pub cluster_version: std::sync::Mutex<Option<(std::time::Instant, (u32, u32))>>,
    /// The ProvisionerClass of the resolveset Instance and Bundle.
    pub class: String,
    /// Labels put on the Inputs generated for dependencies (so that a
    /// controller limited by a selector still sees them).
    pub generated_labels: BTreeMap<String, String>,
}

/// Runs the controller until the process ends; `selector` limits it to
/// Inputs and InputClasses with matching labels.
pub async fn run(context: Arc<InputContext>, selector: Option<String>) {
    let config = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    let (inputs, input_writer) = reflector::store::<Input>();
    let (classes, class_writer) = reflector::store::<InputClass>();
    let (changed, mut wake) = tokio::sync::mpsc::channel::<()>(1);
    let inputs_api: Api<Input> = Api::all(context.client.clone());
    let classes_api: Api<InputClass> = Api::all(context.client.clone());
    // Status writes by this controller change the Input too: only a new
    // generation, a person's decision, a deletion or a (re)list wakes it.
    let mut generations: BTreeMap<String, (Option<i64>, Option<ConflictDecision>)> =
        BTreeMap::new();
    let input_events = watcher(inputs_api, config.clone())
        .default_backoff()
        .reflect(input_writer)
        .filter_map(move |event| {
            let wake = match event {
                Ok(watcher::Event::Apply(input) | watcher::Event::InitApply(input)) => {
                    let seen = (
                        input.metadata.generation,
                        input.status.as_ref().and_then(|s| s.decision.clone()),
                    );
                    generations.insert(input.name_any(), seen.clone()) != Some(seen)
                }
                Ok(watcher::Event::Delete(input)) => {
                    generations.remove(&input.name_any());
                    true
                }
                Ok(watcher::Event::InitDone) => true,
                Ok(watcher::Event::Init) | Err(_) => false,
            };
            std::future::ready(wake.then_some(()))
        });
    let class_events = watcher(classes_api, config)
        .default_backoff()
        .reflect(class_writer)
        .touched_objects();
    // A deleted Instance may let a held-back bundle go (a dependent child
    // gone, an Instance outside the set that needed it gone): deletions
    // wake the controller, nothing else about Instances does. Metadata
    // only, and nothing kept.
    let instance_deletions = watcher(
        Api::<kube::core::PartialObjectMeta<pakket_api::Instance>>::all(context.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .filter_map(|event| {
        std::future::ready(matches!(event, Ok(watcher::Event::Delete(_))).then_some(()))
    });
    tokio::spawn(forward(input_events.boxed(), changed.clone()));
    tokio::spawn(forward(class_events.map(|_| ()).boxed(), changed.clone()));
    tokio::spawn(forward(instance_deletions.boxed(), changed.clone()));
    let mut swaps = context.catalogs.subscribe();
    {
        let changed = changed.clone();
        tokio::spawn(async move {
            while swaps.changed().await.is_ok() {
                let _ = changed.try_send(());
            }
        });
    }
    if inputs.wait_until_ready().await.is_err() || classes.wait_until_ready().await.is_err() {
        return;
    }
    loop {
        tokio::time::sleep(SETTLE).await;
        // What woke us in the meantime is covered by this pass.
        while wake.try_recv().is_ok() {}
        let next = match reconcile_all(&context, &inputs, &classes).await {
            Ok(Pass::Settled) => RESYNC,
            Ok(Pass::HoldingBack) => HELD_BACK_RECHECK,
            Ok(Pass::HoldingForOutside) => HELD_FOR_OUTSIDE_RECHECK,
            Err(error) => {
                tracing::warn!(%error, "resolving Inputs; trying again");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        let _ = tokio::time::timeout(next, wake.recv()).await;
    }
}

async fn forward(
    mut events: impl futures::Stream<Item = ()> + Unpin,
    changed: tokio::sync::mpsc::Sender<()>,
) {
    while events.next().await.is_some() {
        let _ = changed.try_send(());
    }
}

/// How a pass left the set.
enum Pass {
    /// As resolved.
    Settled,
    /// With bundles held back for dependents still leaving.
    HoldingBack,
    /// With bundles held back only for Instances outside the set.
    HoldingForOutside,
}

/// What runs, as the resolver keeps it working (never downgraded): each
/// entry of the set whose child runs content and whose catalog still
/// serves it, at the entry's version.
fn running_versions(
    context: &InputContext,
    previous: &[Entry],
    unavailable: &[kept_installed::Unavailable],
    active: &BTreeMap<String, String>,
) -> Vec<(String, Version)> {
    previous
        .iter()
        .filter(|entry| {
            !unavailable
                .iter()
                .any(|gone| gone.package == entry.package_name)
        })
        .filter(|entry| {
            active.contains_key(&input_resolve::instance_name(
                &context.instance,
                &entry.package_name,
            ))
        })
        .filter_map(|entry| {
            Some((
                entry.package_name.clone(),
                Version::parse(&entry.version).ok()?,
            ))
        })
        .collect()
}

/// What the set is made of besides the plan: the Inputs and what each
/// asks, their classes, each package's owner and each Input's author.
struct SetSources<'a> {
    inputs: &'a [Arc<Input>],
    asked: &'a [Asked],
    classes: &'a BTreeMap<String, Arc<InputClass>>,
    owners: &'a package_owner::Owners,
    authors: &'a requested_by::Authors,
}

/// Writes the next set: the plan's entries (traced where a class asks),
/// what failing Inputs keep, each package's config from its owner, who
/// requested each, and what is held back while something still needs it.
async fn write_next_set(
    context: &InputContext,
    plan: &input_resolve::Plan,
    served: &crate::catalogs::serving::Served,
    previous: &[Entry],
    failing: &[(&str, &[ResolvedInstance])],
    sources: SetSources<'_>,
) -> Result<Pass, kube::Error> {
    let SetSources {
        inputs,
        asked,
        classes,
        owners,
        authors,
    } = sources;
    let mut pass = Pass::Settled;
    let resolved: BTreeMap<String, Vec<_>> = plan
        .answers
        .iter()
        .filter(|(name, _)| asked.iter().any(|a| &a.name == *name && !a.dry_run))
        .filter_map(|(name, answer)| match answer {
            Answer::Resolved(instances) => Some((name.clone(), instances.clone())),
            _ => None,
        })
        .collect();
    let mut entries = resolved_set::entries(&plan.set, served, &resolved, previous);
    // Classes with `trace`: the set keeps why each of their bundles
    // was chosen.
    let traced: Vec<&str> = inputs
        .iter()
        .filter(|input| {
            classes
                .get(&input.spec.input_class)
                .is_some_and(|class| class.spec.parameters.trace)
        })
        .map(|input| input.metadata.name.as_deref().unwrap_or_default())
        .collect();
    resolved_set::trace(&mut entries, &plan.set, &resolved, &traced);
    let kept = kept_installed::kept(previous, &entries, failing);
    if !kept.is_empty() {
        entries.extend(kept);
        entries.sort_by(|a, b| a.package_name.cmp(&b.package_name));
    }
    // Each package's config is its owner's, also while kept.
    for entry in &mut entries {
        if let Some((_, config)) = owners.configs.get(&entry.package_name) {
            entry.config = config.clone();
        }
    }
    let configs = inputs
        .iter()
        .map(|input| (input.name_any(), input.spec.config.clone()))
        .collect();
    // A copy stays for its Input while that Input resolves, and while it
    // fails but keeps what it installed (a Catalog gone, a conflict).
    let resolved_inputs = resolved
        .keys()
        .map(String::as_str)
        .chain(failing.iter().map(|(name, _)| *name))
        .collect();
    copies::add(&mut entries, owners, &resolved_inputs, &configs, previous);
    requested_by::stamp(&mut entries, &context.instance, authors);
    let (kept, for_children) = hold_back(context, previous, &entries).await?;
    if !kept.is_empty() {
        pass = if for_children {
            Pass::HoldingBack
        } else {
            Pass::HoldingForOutside
        };
        entries.extend(kept);
        entries.sort_by(|a, b| a.package_name.cmp(&b.package_name));
    }
    write_set(context, &entries).await?;
    Ok(pass)
}

/// Writes each Input's status: its answer, what it keeps while it fails,
/// the package it may not configure, the requests it conflicts with.
async fn write_statuses(
    context: &InputContext,
    inputs: &[Arc<Input>],
    asked: &[Asked],
    plan: &input_resolve::Plan,
    failing: &[(&str, &[ResolvedInstance])],
    owners: &package_owner::Owners,
) -> Result<(), kube::Error> {
    for (input, asked) in inputs.iter().zip(asked) {
        let answer = plan
            .answers
            .get(&asked.name)
            .cloned()
            .unwrap_or(Answer::Invalid("not resolved".into()));
        let kept = failing
            .iter()
            .find(|(name, _)| *name == asked.name)
            .map(|(_, installed)| *installed);
        let conflict = owners.conflicts.get(&asked.name);
        let clash = match &answer {
            Answer::Conflict(clash) => Some(conflict_status(clash, inputs)),
            _ => None,
        };
        write_status(
            context,
            input,
            asked.dry_run,
            &answer,
            kept,
            conflict,
            clash,
        )
        .await?;
    }
    Ok(())
}

/// One pass: resolve, then (as leader) write statuses and the set.
async fn reconcile_all(
    context: &InputContext,
    inputs: &Store<Input>,
    classes: &Store<InputClass>,
) -> Result<Pass, kube::Error> {
    let mut inputs = inputs.state();
    inputs.sort_by_key(|input| input.name_any());
    let classes: BTreeMap<String, Arc<InputClass>> = classes
        .state()
        .into_iter()
        .map(|class| (class.name_any(), class))
        .collect();
    let active = running_children(context).await?;
    let mut asked: Vec<Asked> = inputs
        .iter()
        .map(|input| ask(input, &classes, &active))
        .collect();
    // Each package's own entry; teams' copies are made anew each pass
    // from who asks ([`copies`]).
    let (previous, previous_copies) = copies::split(current_set(context).await?);
    let served = context.catalogs.snapshot();
    // What is installed and cannot be resolved again (its catalog gone or
    // not loaded yet): the Inputs that installed it are held where they are.
    let unavailable =
        kept_installed::unavailable(&previous, |catalog, bundle| offer(&served, catalog, bundle));
    for (input, asked) in inputs.iter().zip(asked.iter_mut()) {
        asked.held = held(input, asked, &unavailable);
    }
    // What runs is what the resolver keeps working (never downgraded):
    // an entry of the set whose child runs content (the entry's version,
    // or the one before while an upgrade rolls out). An entry whose child
    // does not run yet (the set unapproved, not installed) pins nothing, or
    // the request that merely came first would win.
    let previous_versions = running_versions(context, &previous, &unavailable, &active);
    let installed = input_resolve::still_asked(&previous_versions, &asked);
    // `cel` and `minKubeVersion` narrow each Input's own request; the
    // apiserver's version is what a class without `minKubeVersion` plans for.
    let cluster = cluster_version(context).await;
    input_resolve::narrow(&served.set, &mut asked, cluster);
    // One owner per package: an Input refused for another's package is
    // left out of the resolution, so it steers nothing.
    let installed_now = copies::installed(&previous, &previous_copies);
    let owners = package_owners(&inputs, &asked, &installed_now);
    let mut plan = plan_owning(context, &served, &asked, installed, &owners).await?;
    copies::answer_with_copies(&mut plan.answers, &owners, &context.instance);
    if !context.leader.as_ref().is_none_or(LeaderState::is_leader) {
        return Ok(Pass::Settled);
    }
    let mut pass = Pass::Settled;
    // Inputs that installed something and cannot be resolved now: what
    // they installed stays ([`conflict::keeps`]).
    let failing: Vec<(&str, &[ResolvedInstance])> = inputs
        .iter()
        .zip(&asked)
        .filter(|(_, asked)| !asked.dry_run)
        .filter_map(|(input, asked)| {
            let status = input.status.as_ref()?;
            let answer = plan.answers.get(&asked.name);
            (!status.dry_run && conflict::keeps(answer, &status.instances, &active))
                .then_some((asked.name.as_str(), status.instances.as_slice()))
        })
        .collect();
    let authors: requested_by::Authors = inputs
        .iter()
        .map(|input| (input.name_any(), author(input, context.record_key.as_ref())))
        .collect();
    let live = asked.iter().any(|a| !a.dry_run && a.request.is_ok());
    if live || !previous.is_empty() {
        let sources = SetSources {
            inputs: &inputs,
            asked: &asked,
            classes: &classes,
            owners: &owners,
            authors: &authors,
        };
        pass = write_next_set(context, &plan, &served, &previous, &failing, sources).await?;
    }
    write_statuses(context, &inputs, &asked, &plan, &failing, &owners).await?;
    // What a failing Input keeps counts as what it gets, for the
    // dependency Inputs generated for it.
    let mut answers = plan.answers.clone();
    for (name, installed) in &failing {
        answers.insert((*name).to_owned(), Answer::Resolved(installed.to_vec()));
    }
    // Classes with `generateInputsForDependencies`: each dependency gets
    // an Input of its own, kept while something needs it.
    let generates = |input: &Input| {
        !asked
            .iter()
            .any(|a| a.name == input.name_any() && a.dry_run)
            && classes
                .get(&input.spec.input_class)
                .is_some_and(|class| class.spec.parameters.generate_inputs_for_dependencies)
    };
    let wanted = dependency_inputs::wanted(&inputs, &answers, generates, &active);
    let taken = dependency_inputs::sync(
        &context.client,
        MANAGER,
        &inputs,
        &wanted,
        &authors,
        context.record_key.as_ref(),
        &context.generated_labels,
    )
    .await?;
    for name in &taken {
        for input in inputs
            .iter()
            .filter(|input| name.wanted_by.contains(&input.name_any()))
        {
            name_taken(context, input, name).await;
        }
    }
    Ok(pass)
}

/// A Warning Event on an Input whose dependency's generated name someone
/// else's Input holds: it does not fail silently. The recorder folds the
/// repeats of each pass into one series.
async fn name_taken(context: &InputContext, input: &Input, taken: &dependency_inputs::Taken) {
    let note = taken.message();
    publish(
        context,
        input,
        EventType::Warning,
        "GeneratedNameTaken",
        &note,
    )
    .await;
}

/// An Event on `input` (its note cut to 1,000 characters); a failure to
/// publish is only logged.
async fn publish(
    context: &InputContext,
    input: &Input,
    type_: EventType,
    reason: &str,
    note: &str,
) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note.chars().take(1000).collect()),
        action: "Resolve".into(),
        secondary: None,
    };
    if let Err(error) = context
        .recorder
        .publish(&event, &input.object_ref(&()))
        .await
    {
        tracing::debug!(%error, "publishing an Input Event");
    }
}

/// The apiserver's (major, minor), read at most every
/// [`CLUSTER_VERSION_FOR`]; `None` when it cannot be read (then no bundle
/// is left out for the Kubernetes version it needs).
async fn cluster_version(context: &InputContext) -> Option<(u32, u32)> {
    let cached = *context.cluster_version.lock().expect("not poisoned");
    if let Some((read, version)) = cached
        && read.elapsed() < CLUSTER_VERSION_FOR
    {
        return Some(version);
    }
    match context.client.apiserver_version().await {
        Ok(info) => {
            let version =
                crate::protocol::plan::major_minor(&format!("{}.{}", info.major, info.minor))?;
            *context.cluster_version.lock().expect("not poisoned") =
                Some((std::time::Instant::now(), version));
            Some(version)
        }
        Err(error) => {
            tracing::debug!(%error, "the apiserver's version is unknown: bundles are not checked against it");
            None
        }
    }
}

/// Who wrote `input`'s current spec, if the webhook's sealed record says
/// so and verifies.
fn author(input: &Input, key: Option<&pakket_api::RecordKey>) -> Option<pakket_api::CreatorRecord> {
    let name = input.name_any();
    let spec = serde_json::to_value(&input.spec).unwrap_or_default();
    match pakket_api::requester_of(
        input.metadata.annotations.as_ref(),
        key,
        &pakket_api::record_object("Input", &name),
        &pakket_api::value_digest(&spec),
    ) {
        Ok((record, _)) => Some(record),
        Err(error) => {
            tracing::debug!(input = %name, %error, "no verified author");
            None
        }
    }
}

/// The bundles `next` drops that stay for now, because a child that needs
/// them is leaving too and still on the cluster, or an Instance outside
/// the set requires what they provide ([`held_back`]); and whether some
/// wait for leaving children (which go soon).
async fn hold_back(
    context: &InputContext,
    previous: &[Entry],
    next: &[Entry],
) -> Result<(Vec<Entry>, bool), kube::Error> {
    let leaving = previous.iter().any(|entry| {
        !next
            .iter()
            .any(|kept| kept.package_name == entry.package_name)
    });
    if !leaving {
        return Ok((Vec::new(), false));
    }
    let instances: Api<pakket_api::Instance> = Api::all(context.client.clone());
    let mut present = BTreeSet::new();
    for name in held_back::to_look_up(previous, next) {
        if instances.get_opt(&name).await?.is_some() {
            present.insert(name);
        }
    }
    let outside = outside_needs(context, &instances).await?;
    let kept = held_back::held_back(
        previous,
        next,
        &context.instance,
        |name| present.contains(name),
        &outside,
    );
    Ok((kept, !present.is_empty()))
}

/// Every Instance outside the set (not the set's own, not its children)
/// with what its content requires, as its provisioner recorded it: in the
/// Instance's `status.embeddedBundle`, or on the Bundle object it names.
async fn outside_needs(
    context: &InputContext,
    instances: &Api<pakket_api::Instance>,
) -> Result<Vec<held_back::Outside>, kube::Error> {
    let bundles: Api<pakket_api::Bundle> = Api::all(context.client.clone());
    let mut bundle_properties: Option<BTreeMap<String, Vec<pakket_api::BundleProperty>>> = None;
    let mut outside = Vec::new();
    for instance in instances.list(&Default::default()).await?.items {
        let name = instance.name_any();
        let ours =
            name == context.instance || instance.labels().get(SET_LABEL) == Some(&context.instance);
        if ours {
            continue;
        }
        let properties = match instance
            .status
            .as_ref()
            .and_then(|s| s.embedded_bundle.as_ref())
        {
            Some(embedded) => embedded.status.properties.clone(),
            None => {
                if bundle_properties.is_none() {
                    bundle_properties = Some(
                        bundles
                            .list(&Default::default())
                            .await?
                            .items
                            .into_iter()
                            .map(|bundle| {
                                let name = bundle.name_any();
                                let properties =
                                    bundle.status.map(|s| s.properties).unwrap_or_default();
                                (name, properties)
                            })
                            .collect(),
                    );
                }
                bundle_properties
                    .as_ref()
                    .and_then(|all| all.get(&instance.spec.bundle.name).cloned())
                    .unwrap_or_default()
            }
        };
        if !properties.is_empty() {
            outside.push(held_back::Outside { name, properties });
        }
    }
    Ok(outside)
}

/// The Input's request with its class's constraints, or why it has none
/// (the same conversion `POST /v1/plan` makes: [`PlannedInput::asked`]).
/// Who owns each package a live Input asks for by name: the senior Input
/// first ([`crate::inputs::package_owner`]).
fn package_owners(
    inputs: &[Arc<Input>],
    asked: &[Asked],
    installed: &BTreeMap<String, package_owner::Installed>,
) -> package_owner::Owners {
    let mut claims: Vec<(&Asked, package_owner::Claim<'_>)> = inputs
        .iter()
        .zip(asked)
        .filter(|(_, asked)| !asked.dry_run)
        .filter_map(|(input, asked)| match &asked.request {
            Ok(Request::Package { package, .. }) => Some((
                asked,
                package_owner::Claim {
                    input: asked.name.as_str(),
                    uid: asked.uid.as_str(),
                    package: package.as_str(),
                    config: input.spec.config.as_ref(),
                    installed: !asked.seniority.not_installed,
                    chosen_over: &asked.chosen_over,
                },
            )),
            _ => None,
        })
        .collect();
    claims
        .sort_by(|(a, _), (b, _)| (a.seniority.key(), &a.name).cmp(&(b.seniority.key(), &b.name)));
    let claims: Vec<package_owner::Claim<'_>> =
        claims.into_iter().map(|(_, claim)| claim).collect();
    package_owner::owners(&claims, installed)
}

/// The resolution of every Input but those refused their package (off
/// the async threads: it can take a while), with the refused ones'
/// answers.
async fn plan_owning(
    context: &InputContext,
    served: &Arc<crate::catalogs::serving::Served>,
    asked: &[Asked],
    installed: Vec<pakket_engine::resolve::Installed>,
    owners: &package_owner::Owners,
) -> Result<input_resolve::Plan, kube::Error> {
    let owning: Vec<Asked> = asked
        .iter()
        .filter(|asked| !owners.refused.contains_key(&asked.name))
        .cloned()
        .collect();
    let (served, set) = (Arc::clone(served), context.instance.clone());
    let mut plan = tokio::task::spawn_blocking(move || {
        input_resolve::plan(&served.universe, &owning, &installed, &set)
    })
    .await
    .map_err(|error| kube::Error::Service(error.to_string().into()))?;
    for (input, refusal) in &owners.refused {
        plan.answers.insert(input.clone(), refused(refusal));
    }
    Ok(plan)
}

/// The answer for an Input refused its package ([`package_owner`]): a
/// package another Input has, or a conflict a person settles.
fn refused(refusal: &package_owner::Refusal) -> Answer {
    use conflict::{Conflict, Standing};
    match refusal {
        package_owner::Refusal::OwnedBy { package, owner } => Answer::OwnedByAnother {
            package: package.clone(),
            owner: owner.clone(),
        },
        package_owner::Refusal::Waiting { with } => Answer::Conflict(Conflict {
            with: with.clone(),
            standing: Standing::Waiting,
        }),
        package_owner::Refusal::NotChosen { chosen } => Answer::Conflict(Conflict {
            with: vec![chosen.clone()],
            standing: Standing::NotChosen,
        }),
    }
}

/// Whether `catalog`, as served now, offers `bundle`.
fn offer(served: &crate::catalogs::serving::Served, catalog: &str, bundle: &str) -> Offer {
    match served.set.catalog_index(catalog) {
        None => Offer::CatalogNotServed,
        Some(index) if served.set.find_bundle_in(index, bundle).is_some() => Offer::Offered,
        Some(_) => Offer::NotOffered,
    }
}

/// Why `input` is held at what it installed, if something it installed
/// cannot be resolved again, and whether what it installed still meets
/// its request.
fn held(
    input: &Input,
    asked: &Asked,
    unavailable: &[kept_installed::Unavailable],
) -> Option<kept_installed::Held> {
    let status = input.status.as_ref()?;
    if asked.dry_run || status.dry_run {
        return None;
    }
    let request = asked.request.as_ref().ok()?;
    let held = kept_installed::held_by(&status.instances, unavailable);
    if held.is_empty() {
        return None;
    }
    let words: Vec<String> = held.iter().map(|gone| gone.words()).collect();
    let satisfied_by = kept_installed::satisfied_by(request, &status.instances).map(|bundle| {
        format!(
            "the installed {} {} (bundle {}) meets the request ({request})",
            bundle.package, bundle.version, bundle.bundle
        )
    });
    Some(kept_installed::Held {
        why: format!(
            "{}; upgrades, and changes that need another bundle, wait until the catalog serves it again (kubectl get catalogs)",
            words.join("; ")
        ),
        satisfied_by,
    })
}

/// The set's child Instances that run content: name to the Bundle they
/// run (`status.activeBundle`).
async fn running_children(context: &InputContext) -> Result<BTreeMap<String, String>, kube::Error> {
    let children = Api::<pakket_api::Instance>::all(context.client.clone())
        .list(
            &kube::api::ListParams::default().labels(&format!("{SET_LABEL}={}", context.instance)),
        )
        .await?;
    Ok(children
        .items
        .into_iter()
        .filter_map(|child| {
            let active = child.status.as_ref()?.active_bundle.clone()?;
            Some((child.name_any(), active))
        })
        .collect())
}

fn ask(
    input: &Input,
    classes: &BTreeMap<String, Arc<InputClass>>,
    active: &BTreeMap<String, String>,
) -> Asked {
    let name = input.name_any();
    let class_name = &input.spec.input_class;
    let Some(class) = classes.get(class_name) else {
        return Asked {
            name,
            request: Err(format!(
                "spec.inputClass: InputClass {class_name} not found; create it or name one of `kubectl get inputclasses`"
            )),
            dry_run: false,
            force: false,
            filters: Default::default(),
            seniority: Default::default(),
            uid: String::new(),
            chosen_over: Default::default(),
            held: None,
        };
    };
    let mut asked = crate::protocol::plan::asked(&PlannedInput::of(input, &class.spec.parameters));
    asked.seniority = Seniority::of(input, active);
    asked.uid = input.uid().unwrap_or_default();
    asked.chosen_over = ConflictDecision::covering(input).into_iter().collect();
    asked
}

/// What the set holds now: read from the ConfigMap the Instance mounts.
async fn current_set(context: &InputContext) -> Result<Vec<Entry>, kube::Error> {
    let instances: Api<pakket_api::Instance> = Api::all(context.client.clone());
    let Some(instance) = instances.get_opt(&context.instance).await? else {
        return Ok(Vec::new());
    };
    let Some(mount) = resolved_set::mounted(&instance) else {
        return Ok(Vec::new());
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), &mount.namespace);
    let Some(config_map) = config_maps.get_opt(&mount.name).await? else {
        return Ok(Vec::new());
    };
    // Resolving goes on whether or not the label can be written: only the
    // runtime's read of the set needs it, and the next pass tries again.
    if content_label::written_without_label(&config_map, SET_LABEL, &context.instance)
        && let Err(error) = content_label::label(&config_maps, &config_map).await
    {
        tracing::warn!(%error, config_map = %mount.name, "labelling an old set as Bundle content");
    }
    Ok(
        resolved_set::in_config_map(&config_map).unwrap_or_else(|problem| {
            tracing::warn!(%problem, "the current resolveset cannot be read; resolving afresh");
            Vec::new()
        }),
    )
}

/// Writes the set's ConfigMap (once: it is immutable and named after its
/// bytes) and points the resolveset Instance at it.
async fn write_set(context: &InputContext, entries: &[Entry]) -> Result<(), kube::Error> {
    let bytes = resolved_set::to_bytes(entries);
    let name = resolved_set::config_map_name(&bytes);
    let config_maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), &context.namespace);
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            // Bundle content: the resolveset Instance mounts it.
            labels: Some(BTreeMap::from([
                (SET_LABEL.to_owned(), context.instance.clone()),
                (
                    pakket_api::BUNDLE_CONTENT_LABEL.to_owned(),
                    "true".to_owned(),
                ),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            resolved_set::FILE.to_owned(),
            String::from_utf8(bytes).expect("JSON is UTF-8"),
        )])),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    match config_maps
        .create(&PostParams::default(), &config_map)
        .await
    {
        Ok(_) => {}
        // The same name is the same bytes: already written.
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error),
    }
    let instance = json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": { "name": context.instance, "labels": { SET_LABEL: context.instance } },
        "spec": {
            "class": context.class,
            "bundle": {
                "name": name,
                "spec": {
                    "class": context.class,
                    "refs": ["file:///content"],
                    "volumeMounts": [{
                        "mountPath": "/content",
                        "configMap": { "name": name, "namespace": context.namespace },
                    }],
                },
            },
        },
    });
    let applied = Api::<pakket_api::Instance>::all(context.client.clone())
        .patch(
            &context.instance,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&instance),
        )
        .await?;
    let active = applied.status.and_then(|status| status.active_bundle);
    collect_old_sets(&config_maps, &context.instance, &name, active.as_deref()).await;
    Ok(())
}

/// Deletes the set's ConfigMaps but the one the Instance names and the
/// one whose objects are installed now (the runtime keeps what it needs
/// of older content by digest in its store, and the Instance's status).
async fn collect_old_sets(
    config_maps: &Api<ConfigMap>,
    instance: &str,
    current: &str,
    active: Option<&str>,
) {
    let listed = match config_maps
        .list_metadata(&kube::api::ListParams::default().labels(&format!("{SET_LABEL}={instance}")))
        .await
    {
        Ok(listed) => listed,
        Err(error) => {
            tracing::debug!(%error, "listing old resolved sets");
            return;
        }
    };
    for old in listed {
        let name = old.name_any();
        if name == current || Some(name.as_str()) == active {
            continue;
        }
        match config_maps.delete(&name, &Default::default()).await {
            Ok(_) => tracing::info!(config_map = %name, "deleted an old resolved set"),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                tracing::debug!(%error, config_map = %name, "deleting an old resolved set")
            }
        }
    }
}

/// The Input's status for `answer`; written only when it changed.
/// A conflict as the status says it: the other Inputs by UID, never by
/// name ([`InputConflict`]).
fn conflict_status(clash: &conflict::Conflict, inputs: &[Arc<Input>]) -> InputConflict {
    let mut with: Vec<String> = clash
        .with
        .iter()
        .filter_map(|name| {
            inputs
                .iter()
                .find(|input| input.metadata.name.as_deref() == Some(name.as_str()))?
                .uid()
        })
        .collect();
    with.sort();
    InputConflict {
        standing: clash.standing.as_str().to_owned(),
        with,
    }
}

/// One condition as the answer says it: its type, status, reason and
/// message.
type Said = (Type, &'static str, Reason, String);

/// What an Input's answer says in `ResolutionFailed` and
/// `DependenciesMissing`, and the bundles it gets.
fn said_of(answer: &Answer, input: &Input, dry_run: bool) -> (Said, Said, Vec<ResolvedInstance>) {
    match answer {
        Answer::Resolved(instances) => {
            let chosen: Vec<String> = instances
                .iter()
                .map(|i| format!("{} {}", i.package, i.version))
                .collect();
            let verb = if dry_run { "would install" } else { "installs" };
            let note = conflict::chosen_note(input);
            let every = format!(
                "every dependency is in the set ({} bundles)",
                instances.len()
            );
            (
                (
                    Type::ResolutionFailed,
                    "False",
                    Reason::Resolved,
                    format!("{verb} {}{note}", chosen.join(", ")),
                ),
                (
                    Type::DependenciesMissing,
                    "False",
                    Reason::DependenciesResolved,
                    every,
                ),
                instances.clone(),
            )
        }
        Answer::Invalid(problem) => (
            (
                Type::ResolutionFailed,
                "True",
                Reason::InvalidInput,
                problem.clone(),
            ),
            (
                Type::DependenciesMissing,
                "Unknown",
                Reason::InvalidInput,
                "not resolved: fix the Input first".into(),
            ),
            Vec::new(),
        ),
        Answer::Unsatisfiable {
            summary,
            explanation,
        } => (
            (
                Type::ResolutionFailed,
                "True",
                Reason::Unsatisfiable,
                explanation.clone(),
            ),
            (
                Type::DependenciesMissing,
                "True",
                Reason::Unsatisfiable,
                summary.clone(),
            ),
            Vec::new(),
        ),
        Answer::Conflict(clash) => {
            let (reason, words) = conflict::in_words(clash, &input.name_any());
            let waits = "not resolved: it waits for the conflict to be settled".to_owned();
            (
                (Type::ResolutionFailed, "True", reason, words),
                (Type::DependenciesMissing, "Unknown", reason, waits),
                Vec::new(),
            )
        }
        Answer::Held(held) => held_said(held),
        Answer::OwnedByAnother { package, owner } => (
            (
                Type::ResolutionFailed,
                "True",
                Reason::PackageOwnedByAnother,
                package_owner::refusal_words(package, owner),
            ),
            (
                Type::DependenciesMissing,
                "Unknown",
                Reason::PackageOwnedByAnother,
                format!("not resolved: Input {owner} owns package {package}"),
            ),
            Vec::new(),
        ),
    }
}

/// What an Input held at what it installed says: satisfied when what it
/// installed meets its request now (only upgrades wait for the catalog),
/// failing otherwise.
fn held_said(held: &Held) -> (Said, Said, Vec<ResolvedInstance>) {
    let failed = match &held.satisfied_by {
        Some(met) => (
            Type::ResolutionFailed,
            "False",
            Reason::InstalledSatisfies,
            format!("{met}; {}", held.why),
        ),
        None => (
            Type::ResolutionFailed,
            "True",
            Reason::CatalogUnavailable,
            held.why.clone(),
        ),
    };
    let kept = (
        Type::DependenciesMissing,
        "False",
        Reason::Kept,
        "what it installed stays in the set, with its dependencies".into(),
    );
    (failed, kept, Vec::new())
}

/// `CatalogUnavailable`: True while what it installed is held for a
/// catalog not served; False once it is, if it was ever said.
fn catalog_said(answer: &Answer, had: &[Condition]) -> Option<Said> {
    match answer {
        Answer::Held(held) => Some((
            Type::CatalogUnavailable,
            "True",
            Reason::CatalogUnavailable,
            held.why.clone(),
        )),
        _ if had
            .iter()
            .any(|c| c.type_ == Type::CatalogUnavailable.as_str()) =>
        {
            Some((
                Type::CatalogUnavailable,
                "False",
                Reason::CatalogServed,
                "the catalogs of what it installed are served".into(),
            ))
        }
        _ => None,
    }
}

/// `ConfigConflict`: True while another Input owns the package's config;
/// False once it is this Input's, if it was ever said.
fn config_said(conflict: Option<&(String, String)>, had: &[Condition]) -> Option<Said> {
    match conflict {
        Some((package, owner)) => Some((
            Type::ConfigConflict,
            "True",
            Reason::PackageOwnedByAnother,
            package_owner::conflict_words(package, owner),
        )),
        None if had.iter().any(|c| c.type_ == Type::ConfigConflict.as_str()) => Some((
            Type::ConfigConflict,
            "False",
            Reason::ConfigApplied,
            "its spec.config is the config of the package it asks for".into(),
        )),
        None => None,
    }
}

async fn write_status(
    context: &InputContext,
    input: &Input,
    dry_run: bool,
    answer: &Answer,
    kept: Option<&[ResolvedInstance]>,
    conflict: Option<&(String, String)>,
    clash: Option<InputConflict>,
) -> Result<(), kube::Error> {
    let generation = input.metadata.generation;
    let now = Timestamp::now();
    let old = input.status.clone().unwrap_or_default();
    let mut conditions = old.conditions.clone();
    let condition = |said: Said| Condition {
        type_: said.0.as_str().into(),
        status: said.1.into(),
        reason: said.2.as_str().into(),
        message: said.3.chars().take(32 * 1024).collect(),
        observed_generation: generation,
        last_transition_time: Time(now),
    };
    let (failed, missing, mut instances) = said_of(answer, input, dry_run);
    let mut failed = condition(failed);
    // What a failing Input installed stays: its status keeps listing it,
    // and says so.
    if let Some(kept) = kept {
        failed.message = format!("{}; {}", failed.message, kept_installed::stays(kept))
            .chars()
            .take(32 * 1024)
            .collect();
        instances = kept.to_vec();
    }
    let missing = condition(missing);
    let unavailable = catalog_said(answer, &conditions).map(condition);
    let owned = config_said(conflict, &conditions).map(condition);
    for new in [failed, missing]
        .into_iter()
        .chain(unavailable)
        .chain(owned)
    {
        pakket_api::condition::set(&mut conditions, new);
    }
    let standing = pakket_resolve_api::readiness::of_input(&conditions);
    pakket_api::readiness::write(&mut conditions, generation, &standing, now);
    // A person's decision is hers: the controller never writes it (its
    // server-side apply leaves a field it does not set alone).
    let status = InputStatus {
        conditions,
        instances,
        dry_run,
        observed_generation: generation,
        conflict: clash,
        decision: None,
    };
    if status
        == (InputStatus {
            decision: None,
            ..old.clone()
        })
    {
        return Ok(());
    }
    announce(context, input, &old, &status).await;
    let patch = json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1",
        "kind": "Input",
        "status": status,
    });
    Api::<Input>::all(context.client.clone())
        .patch_status(
            &input.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// An Event when the Input's outcome changed: what it installs, or why not.
async fn announce(context: &InputContext, input: &Input, old: &InputStatus, new: &InputStatus) {
    let reason_of = |status: &InputStatus| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == Type::ResolutionFailed.as_str())
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let (Some((reason, message)), before) = (reason_of(new), reason_of(old)) else {
        return;
    };
    if before.as_ref() == Some(&(reason.clone(), message.clone())) {
        return;
    }
    let type_ = if reason == Reason::Resolved.as_str() {
        EventType::Normal
    } else {
        EventType::Warning
    };
    publish(context, input, type_, &reason, &message).await;
}
