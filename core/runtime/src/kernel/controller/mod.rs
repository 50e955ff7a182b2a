//! The Instance controller every provisioner runs: finalizer → class →
//! bundle → unpack → approval → apply → pivot → health → status, each step
//! writing the condition it owns, so `kubectl get instances` always says
//! where an Instance stands and why, and an Event says what changed.
//!
//! ProvisionerClass parameters the runtime reads:
//! - `approval`: `AllowAll` (the default) or anything else to wait for an approver;
//! - `maxObjectSize`: bytes per manifest file (default 1 MiB);
//! - `insecureRegistries`: `[host:port, ...]`, registries that image refs may
//!   reach over plain HTTP. Loopback registries always may; every other one
//!   is HTTPS unless listed here. A registry listed here may also be an
//!   internal address (the admin named it); any other must be public unless
//!   `allowInternalAddresses: true`;
//! - `mirrors`: `[{source, mirror}, ...]`, image refs under `source` pulled
//!   from `mirror` instead (disconnected clusters; [`crate::source::mirror`]).
//!
//! What starts a reconcile, and what does not: an Instance's generation,
//! finalizers, deletion or approval changing (not the runtime's own status
//! writes); a Bundle it names appearing; its class changing; one of its
//! installed objects changed by someone else ([`crate::drift`]). Everything
//! is read from watch caches, and objects are re-applied only when their
//! content, the Instance or the objects changed, or every [`RESYNC`] (on
//! average, spread by name) where the drift watches cannot vouch for them.
//!
//! A Bundle that fails to unpack is retried with a growing delay (1 s,
//! doubling, at most [`MAX_UNPACK_BACKOFF`]), so a registry that comes
//! back is noticed soon and one that stays down is not hammered.

mod bundle_status;
mod class_claim;
mod context;
mod crd_finalizing;
mod decision;
mod deleting;
mod dependency_wake;
mod events;
mod finalizer;
mod install;
mod pivot_guard;
mod report;
mod revision;
mod store_gc;
mod uninstall;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{PredicateConfig, WatchStreamExt, predicates, watcher};
use kube::{Client, ResourceExt};
use pakket_api::{ApprovalState, Bundle, Instance, ProvisionerClass};

pub use bundle_status::REPLACED_BY_LABEL;
pub use context::{Context, MAX_UNPACK_BACKOFF, recorder};
pub use store_gc::{
    DEFAULT_GC_EVERY, DEFAULT_GC_GRACE, DEFAULT_STORE_MAX_BYTES, StoreGc,
    report as report_collection,
};

use crate::apply::Kinds;
use crate::content::ImageSources;
use crate::drift::Drift;
use crate::provisioner::Provisioner;
use crate::serve::Metrics;
use crate::source::SourceOptions;
use crate::store::Store;

pub use pakket_api::ownership::finalizer_of;
/// Default per-object size limit when the class sets no `maxObjectSize`.
pub const DEFAULT_MAX_OBJECT_SIZE: u64 = 1024 * 1024;
/// How often an installed, healthy Instance is looked at again even if
/// nothing said it changed: its health read, and its objects re-applied
/// unless the drift watches vouch for every one of them
/// ([`crate::drift::Drift::staleness`]). The re-apply is the safety net
/// under those watches, for what they cannot see: kinds the provisioner
/// may not watch, a watch that is listing again. Changes to the objects,
/// their status included, bring the Instance back within seconds through
/// the watches, so the net can be wide.
pub const RESYNC: Duration = Duration::from_secs(3600);
/// How old an apply may be before a resync every `resync` writes the
/// objects again (unless the watches vouch for them): a little under the
/// shortest [`at_rest`] time (half the resync), so each resync of an
/// Instance at rest looks at them again.
pub fn reapply_after(resync: Duration) -> Duration {
    resync.mul_f64(REAPPLY_AFTER)
}

/// [`reapply_after`] as a share of the resync: under [`AT_REST_SHORTEST`].
const REAPPLY_AFTER: f64 = 0.45;
/// The shortest [`at_rest`] time, as a share of the resync; the longest
/// is as far above 1.
const AT_REST_SHORTEST: f64 = 0.5;

/// When a healthy Instance named `name` is looked at again: somewhere
/// between half and one and a half `resync`, by a hash of the name
/// (`resync` on average). Instances installed together (1,000 from one
/// GitOps sync, or all of them after a restart) come back spread over a
/// whole resync period, not bunched into a few minutes of it; the same
/// name always comes back after the same time.
pub fn at_rest(name: &str, resync: Duration) -> Duration {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    // 0.5 to 1.5, in 1/1000 steps.
    let factor = AT_REST_SHORTEST + (hasher.finish() % 1001) as f64 / 1000.0;
    resync.mul_f64(factor)
}
/// How often an unhealthy Instance's health is checked again.
pub const RESYNC_UNHEALTHY: Duration = Duration::from_secs(15);

/// Default for [`RunOptions::concurrency`].
pub const DEFAULT_CONCURRENCY: u16 = 64;

/// How [`run_with`] runs the controller.
pub struct RunOptions {
    /// Where the content store lives.
    pub store_dir: PathBuf,
    /// Reconcile counts and durations, served on `/metrics` (see [`crate::serve`]).
    pub metrics: Arc<Metrics>,
    /// How sources are fetched: timeouts, plain-HTTP policy, trusted roots.
    pub sources: SourceOptions,
    /// Most Instances reconciled at once. Beyond a few dozen, more only
    /// queue up inside the apiserver: each reconcile's round trips get
    /// slower and none finishes sooner.
    pub concurrency: u16,
    /// The key that verifies the admission webhook's requester records
    /// (`approval: UserPermission` trusts no record without it).
    pub record_key: Option<pakket_api::RecordKey>,
    /// When the content store is collected, and what it keeps.
    pub store_gc: StoreGc,
    /// Most Bundles fetched and unpacked at once: each holds a download
    /// and an extraction in flight, so this bounds memory and disk use
    /// however many Instances arrive together.
    pub max_concurrent_unpacks: usize,
    /// How often (on average, see [`at_rest`]) a healthy Instance is
    /// looked at, and re-applied where the drift watches cannot vouch for
    /// its objects, though nothing said it changed ([`RESYNC`]; a bench
    /// and the resync tests shorten it to measure what one resync costs).
    pub resync: Duration,
    /// The provisioner's own namespace, where the inputs of each
    /// `approval: Policy` decision are kept for `kubectl instance policy
    /// test` (one ConfigMap per Instance, owned by it); `None` keeps none.
    pub decision_records: Option<String>,
}

/// Default for [`RunOptions::max_concurrent_unpacks`].
pub const DEFAULT_MAX_CONCURRENT_UNPACKS: usize = 2;

impl RunOptions {
    /// Defaults with the content store in `store_dir`.
    pub fn new(store_dir: PathBuf) -> Self {
        Self {
            store_dir,
            metrics: Arc::new(Metrics::new()),
            sources: SourceOptions::default(),
            concurrency: DEFAULT_CONCURRENCY,
            record_key: None,
            store_gc: StoreGc::default(),
            max_concurrent_unpacks: DEFAULT_MAX_CONCURRENT_UNPACKS,
            resync: RESYNC,
            decision_records: None,
        }
    }
}

/// Errors that end a reconcile; they are retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server failed a call.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Error {
    /// The `result` label of the reconcile metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Kube(_) => "kube_error",
        }
    }
}

/// Runs the controller until the stream ends.
pub async fn run<P: Provisioner>(
    client: Client,
    provisioner: P,
    store_dir: PathBuf,
) -> Result<(), crate::store::StoreError> {
    run_with(client, provisioner, RunOptions::new(store_dir)).await
}

/// [`run`], counting every reconcile into `metrics` (see [`crate::serve`]).
pub async fn run_with_metrics<P: Provisioner>(
    client: Client,
    provisioner: P,
    store_dir: PathBuf,
    metrics: Arc<Metrics>,
) -> Result<(), crate::store::StoreError> {
    let options = RunOptions {
        metrics,
        ..RunOptions::new(store_dir)
    };
    run_with(client, provisioner, options).await
}

/// Runs the controller with `options` until the stream ends.
pub async fn run_with<P: Provisioner>(
    client: Client,
    provisioner: P,
    options: RunOptions,
) -> Result<(), crate::store::StoreError> {
    let store = Store::open(options.store_dir.clone())?;
    let (drift, drift_triggers) = Drift::new(client.clone());

    // Instances: cached without managedFields (half their size), and only
    // changes that matter start a reconcile; the runtime's own status
    // writes do not.
    let (instances, instance_writer) = reflector::store::<Instance>();
    let (dependencies_met, dependency_wakes) = futures::channel::mpsc::unbounded();
    let mut newly_installed = dependency_wake::NewlyInstalled::new(instances.clone());
    let instance_changes = watcher(
        Api::<Instance>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|instance| instance.managed_fields_mut().clear())
    .reflect(instance_writer)
    .inspect(move |event| {
        if let Ok(event) = event {
            for waiting in newly_installed.event(event) {
                let _ = dependencies_met.unbounded_send(waiting);
            }
        }
    })
    .applied_objects()
    .predicate_filter(trigger_key, PredicateConfig::default());

    // Classes and Bundles: cached for lookups, and a new generation (which
    // includes creation) reaches the Instances that name them.
    let (classes, class_changes) = generations::<ProvisionerClass>(&client);
    let (bundles, bundle_changes) = generations::<Bundle>(&client);
    // ApprovalPolicies: an edit (a new generation) re-judges at once the
    // Instances of every class that names the policy, rather than at the
    // next recheck of what waits.
    let policy_changes = policy_generations(&client);
    let of_policy = (instances.clone(), classes.clone());
    let caches = Caches {
        classes,
        bundles,
        instances: instances.clone(),
    };
    let concurrency = options.concurrency;
    let context = Arc::new(shared_context(
        client.clone(),
        provisioner,
        store,
        drift,
        caches,
        options,
    ));
    let claimer = (client.clone(), context.provisioner.id().to_owned());
    let (of_class, of_bundle) = (instances.clone(), instances.clone());
    Controller::for_stream(instance_changes, instances)
        .watches_stream(class_changes, move |class: ProvisionerClass| {
            class_claim::claim_if_named(&claimer.0, &claimer.1, &class);
            let name = class.name_any();
            named_by(&of_class, |instance| instance.spec.class == name)
        })
        .watches_stream(bundle_changes, move |bundle: Bundle| {
            // A Bundle an Instance embeds was created by that Instance's
            // own reconcile, which goes on with it: no need to start another.
            if bundle
                .owner_references()
                .iter()
                .any(|owner| owner.kind == "Instance")
            {
                return Vec::new();
            }
            let name = bundle.name_any();
            named_by(&of_bundle, |instance| instance.spec.bundle.name == name)
        })
        .watches_stream(
            policy_changes,
            move |policy: kube::core::PartialObjectMeta<pakket_api::ApprovalPolicy>| {
                let classes = classes_naming(&of_policy.1.state(), &policy.name_any());
                named_by(&of_policy.0, |instance| {
                    classes.contains(&instance.spec.class)
                })
            },
        )
        .reconcile_on(drift_triggers)
        .reconcile_on(dependency_wakes)
        .with_config(controller::Config::default().concurrency(concurrency))
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile");
            }
        })
        .await;
    Ok(())
}

/// A cache of every `K` (without managedFields), and the changes of its
/// generation (which includes creation).
fn generations<K>(
    client: &Client,
) -> (
    reflector::Store<K>,
    impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (cache, writer) = reflector::store::<K>();
    let changes = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(|object| object.managed_fields_mut().clear())
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, PredicateConfig::default());
    (cache, changes)
}

/// The cached Instances `matches` picks, as references to reconcile.
fn named_by(
    instances: &reflector::Store<Instance>,
    matches: impl Fn(&Instance) -> bool,
) -> Vec<ObjectRef<Instance>> {
    instances
        .state()
        .into_iter()
        .filter(|instance| matches(instance))
        .map(|instance| ObjectRef::from_obj(&*instance))
        .collect()
}

/// Each new generation of an ApprovalPolicy (creation included). Only
/// names and generations are needed: a metadata watch, nothing cached.
fn policy_generations(
    client: &Client,
) -> impl futures::Stream<
    Item = Result<kube::core::PartialObjectMeta<pakket_api::ApprovalPolicy>, watcher::Error>,
> + Send
+ 'static {
    watcher(
        Api::<kube::core::PartialObjectMeta<pakket_api::ApprovalPolicy>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .applied_objects()
    .predicate_filter(predicates::generation, PredicateConfig::default())
}

/// The names of the classes whose `approval: Policy` names `policy`.
fn classes_naming(
    classes: &[Arc<ProvisionerClass>],
    policy: &str,
) -> std::collections::BTreeSet<String> {
    classes
        .iter()
        .filter(|class| {
            class.spec.parameters.as_ref().is_some_and(|parameters| {
                parameters
                    .get("approval")
                    .and_then(serde_json::Value::as_str)
                    == Some("Policy")
                    && parameters
                        .get("approvalPolicy")
                        .and_then(serde_json::Value::as_str)
                        == Some(policy)
            })
        })
        .map(|class| class.name_any())
        .collect()
}

/// The caches a controller reads from.
struct Caches {
    classes: reflector::Store<ProvisionerClass>,
    bundles: reflector::Store<Bundle>,
    instances: reflector::Store<Instance>,
}

/// What every reconcile shares; starts the store's collection of content
/// nothing holds any more.
fn shared_context<P: Provisioner>(
    client: Client,
    provisioner: P,
    store: Store,
    drift: Arc<Drift>,
    caches: Caches,
    options: RunOptions,
) -> Context<P> {
    let (events_client, id) = (client.clone(), provisioner.id().to_owned());
    let events = events::Events::new(move || context::recorder(events_client.clone(), &id));
    let store = Arc::new(store);
    let in_flight = store_gc::InFlight::default();
    tokio::spawn(store_gc::run(
        Arc::clone(&store),
        caches.bundles.clone(),
        caches.instances.clone(),
        in_flight.clone(),
        Arc::clone(&options.metrics),
        options.store_gc,
    ));
    // The Instance gauges read these caches rather than listing Instances.
    options
        .metrics
        .read_instances_from(caches.instances.clone(), caches.classes.clone());
    Context {
        provisioner,
        client: client.clone(),
        store,
        images: ImageSources::new(options.sources),
        unpack_failures: Mutex::new(HashMap::new()),
        install_failures: Mutex::new(Default::default()),
        status_written: Mutex::new(HashMap::new()),
        render_retries: Mutex::new(Default::default()),
        metrics: options.metrics,
        resync: options.resync,
        kinds: Kinds::with_drift(client, drift.clone()),
        classes: caches.classes,
        bundles: caches.bundles,
        instances: caches.instances,
        drift,
        events,
        record_key: options.record_key,
        decision_records: options.decision_records,
        unpacks: tokio::sync::Semaphore::new(options.max_concurrent_unpacks.max(1)),
        config_map_reads: tokio::sync::Semaphore::new(context::CONFIG_MAP_READS as usize),
        cluster: tokio::sync::Mutex::new(None),
        in_flight,
    }
}

/// What about an Instance starts a reconcile: its generation (the spec),
/// its deletion, and approval given or denied by someone other than the
/// runtime. Status and finalizers the runtime writes itself hash the same
/// (a finalizer someone strips by hand is put back at the next resync).
fn trigger_key(instance: &Instance) -> Option<u64> {
    // A person's decision (what the webhook guards), not the runtime's own.
    let approval =
        Some(ApprovalState::of(instance)).filter(|state| state.by_person() || state.is_denied());
    let mut hasher = DefaultHasher::new();
    (
        instance.metadata.generation,
        instance.metadata.deletion_timestamp.is_some(),
        approval,
    )
        .hash(&mut hasher);
    Some(hasher.finish())
}

fn error_policy<P: Provisioner>(_: Arc<Instance>, error: &Error, _: Arc<Context<P>>) -> Action {
    tracing::warn!(%error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile<P: Provisioner>(
    instance: Arc<Instance>,
    context: Arc<Context<P>>,
) -> Result<Action, Error> {
    let started = std::time::Instant::now();
    let result = reconcile_instance(instance, &context).await;
    let label = match &result {
        Ok(_) => "ok",
        Err(error) => error.metric_label(),
    };
    context.metrics.reconciled(label, started.elapsed());
    result
}

async fn reconcile_instance<P: Provisioner>(
    instance: Arc<Instance>,
    context: &Arc<Context<P>>,
) -> Result<Action, Error> {
    // Only Instances of a class that names this provisioner.
    let class_name = &instance.spec.class;
    let class = match context.classes.get(&ObjectRef::new(class_name)) {
        Some(class) => Some((*class).clone()),
        // Not cached (yet): the watch may not have listed it so far.
        None => {
            Api::<ProvisionerClass>::all(context.client.clone())
                .get_opt(class_name)
                .await?
        }
    };
    let ours = class
        .as_ref()
        .is_some_and(|class| class.spec.provisioner == context.provisioner.id());
    let finalizer_name = finalizer_of(context.provisioner.id());
    if !ours && !instance.finalizers().iter().any(|f| f == finalizer_name) {
        return Ok(Action::await_change());
    }
    let api: Api<Instance> = Api::all(context.client.clone());
    let holds_finalizer = finalizer::has(&instance, finalizer_name);
    if instance.metadata.deletion_timestamp.is_some() {
        if holds_finalizer {
            return finalize(instance, &api, finalizer_name, context).await;
        }
        return Ok(Action::await_change());
    }
    let instance = if context.behind(&instance) {
        // The cache has not caught up with this process's own last write:
        // read the Instance as the API server has it.
        match api.get_opt(&instance.name_any()).await? {
            Some(fresh) => fresh,
            None => return Ok(Action::await_change()),
        }
    } else {
        (*instance).clone()
    };
    let instance = if holds_finalizer {
        instance
    } else {
        match finalizer::add(&api, &instance, finalizer_name).await {
            Ok(updated) => updated,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Ok(Action::requeue(Duration::from_millis(500)));
            }
            Err(error) => return Err(error.into()),
        }
    };
    Ok(install::install(&instance, class.as_ref(), context).await?)
}

/// The provisioner's part of an Instance's deletion: its uninstall, then
/// its finalizer's removal. `Ready=False/Deleting` is written first only
/// where someone could see the Instance meanwhile
/// ([`deleting::worth_telling_first`]); otherwise only once the uninstall
/// turns out to wait or fail.
async fn finalize<P: Provisioner>(
    instance: Arc<Instance>,
    api: &Api<Instance>,
    finalizer_name: &str,
    context: &Arc<Context<P>>,
) -> Result<Action, Error> {
    let mut instance = instance;
    if deleting::worth_telling_first(&instance, finalizer_name)
        && let Some(written) = report::tell_deleting(api, &instance).await?
    {
        instance = Arc::new(written);
    }
    let progress = uninstall::uninstall(&instance, context).await;
    let finished = matches!(progress, Ok(uninstall::Progress::Finished));
    if deleting::worth_telling_after(&instance, finished) {
        // Best effort: the uninstall's own outcome is what counts here.
        if let Err(error) = report::tell_deleting(api, &instance).await {
            tracing::debug!(instance = %instance.name_any(), %error, "Deleting not written");
        }
    }
    if let uninstall::Progress::WaitingForCrds = progress? {
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    context.forget(&instance);
    match finalizer::remove(api, &instance, finalizer_name).await {
        Ok(_) => {}
        // Gone already, or changed meanwhile: the next event decides.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::condition::ConditionStatus;
    use pakket_api::{InstanceStatus, Reason};

    #[test]
    fn a_policy_edit_reaches_the_classes_that_approve_by_it_only() {
        let class = |name: &str, parameters: serde_json::Value| {
            Arc::new(ProvisionerClass::new(
                name,
                serde_json::from_value(
                    serde_json::json!({"provisioner": "x.dev/p", "parameters": parameters}),
                )
                .unwrap(),
            ))
        };
        let classes = [
            class(
                "by-it",
                serde_json::json!({"approval": "Policy", "approvalPolicy": "teams"}),
            ),
            class(
                "by-another",
                serde_json::json!({"approval": "Policy", "approvalPolicy": "other"}),
            ),
            // Names the policy but does not approve by it.
            class(
                "stale",
                serde_json::json!({"approval": "UserPermission", "approvalPolicy": "teams"}),
            ),
            class("none", serde_json::json!(null)),
        ];
        let named: Vec<String> = classes_naming(&classes, "teams").into_iter().collect();
        assert_eq!(named, ["by-it"]);
    }

    #[test]
    fn healthy_instances_come_back_spread_over_the_whole_resync_and_each_re_applies() {
        for resync in [RESYNC, Duration::from_secs(4), Duration::from_millis(500)] {
            let times: Vec<Duration> = (0..1000)
                .map(|i| at_rest(&format!("i{i}"), resync))
                .collect();
            let (shortest, longest) = (
                times.iter().min().copied().unwrap(),
                times.iter().max().copied().unwrap(),
            );
            assert!(
                shortest >= resync.mul_f64(0.5) && longest <= resync.mul_f64(1.5),
                "{shortest:?}..{longest:?} of {resync:?}"
            );
            // Covers the period: each tenth of it gets some of the 1,000.
            for tenth in 0..10 {
                let from = resync.mul_f64(0.5 + f64::from(tenth) / 10.0);
                let to = resync.mul_f64(0.6 + f64::from(tenth) / 10.0);
                let within = times.iter().filter(|t| **t >= from && **t < to).count();
                assert!(
                    (50..=150).contains(&within),
                    "{within} of 1000 in {from:?}..{to:?}"
                );
            }
            let mean = times.iter().sum::<Duration>() / 1000;
            assert!(
                mean > resync.mul_f64(0.95) && mean < resync.mul_f64(1.05),
                "about one resync on average: {mean:?}"
            );
            assert_eq!(
                at_rest("web", resync),
                at_rest("web", resync),
                "the same name, the same time"
            );
            assert!(
                reapply_after(resync) < shortest,
                "every resync at rest re-applies (or is vouched for)"
            );
        }
    }

    /// Instance `a` of class `c` and Bundle `b` at `generation`, with an
    /// `Approved` condition of `approved` if given (other tests' start).
    pub(super) fn instance(
        generation: i64,
        approved: Option<(Reason, ConditionStatus)>,
    ) -> Instance {
        let instance = Instance::test("a")
            .with_class("c")
            .with_bundle("b")
            .with_generation(generation);
        let mut instance = match approved {
            Some((reason, status)) => instance.saying(reason, status, "m"),
            None => instance,
        };
        // A status, empty or not, as the runtime's first write leaves it.
        instance.status.get_or_insert_with(InstanceStatus::default);
        instance
    }

    #[test]
    fn the_runtimes_own_status_writes_start_no_reconcile() {
        let fresh = instance(1, None);
        let by_policy = instance(1, Some((Reason::ApprovedByPolicy, ConditionStatus::True)));
        let pending = instance(1, Some((Reason::ApprovalPending, ConditionStatus::False)));
        assert_eq!(trigger_key(&fresh), trigger_key(&by_policy));
        assert_eq!(trigger_key(&fresh), trigger_key(&pending));
    }

    #[test]
    fn approvals_denials_and_new_generations_start_a_reconcile() {
        let pending = trigger_key(&instance(1, None));
        let approved = instance(1, Some((Reason::ApprovedByUser, ConditionStatus::True)));
        let denied = instance(1, Some((Reason::ApprovalDenied, ConditionStatus::False)));
        assert_ne!(pending, trigger_key(&approved));
        assert_ne!(pending, trigger_key(&denied));
        assert_ne!(trigger_key(&approved), trigger_key(&denied));
        assert_ne!(pending, trigger_key(&instance(2, None)));
    }
}
