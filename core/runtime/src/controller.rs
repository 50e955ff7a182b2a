//! The Instance controller every provisioner runs: finalizer → class →
//! bundle → unpack → approval → apply → pivot → health → status, each step
//! writing the condition it owns, so `kubectl get instances` always says
//! where an Instance stands and why.
//!
//! ProvisionerClass parameters the runtime reads:
//! - `approval`: `AllowAll` (the default) or anything else to wait for an approver;
//! - `maxObjectSize`: bytes per manifest file (default 1 MiB);
//! - `insecureRegistries`: `[host:port, ...]`, registries that image refs may
//!   reach over plain HTTP. Loopback registries always may; every other one
//!   is HTTPS unless listed here.
//!
//! A Bundle that fails to unpack is retried with a growing delay (1 s,
//! doubling, at most [`MAX_UNPACK_BACKOFF`]), so a registry that comes
//! back is noticed soon and one that stays down is not hammered.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{
    Bundle, BundleStatus, ConditionType, Instance, InstanceStatus, PinnedSource, ProvisionerClass,
    Reason, UnpackPhase,
};
use serde_json::json;

use crate::apply::{self, FIELD_MANAGER, Kinds};
use crate::content::{self, ImageSources, UnpackOptions};
use crate::provisioner::Provisioner;
use crate::serve::Metrics;
use crate::source::SourceOptions;
use crate::store::Store;

/// Label on a Bundle an Instance pivoted away from, naming its successor.
pub const REPLACED_BY_LABEL: &str = "core.pakket.dev/replaced-by";
/// The finalizer that removes an Instance's objects before it goes.
pub const FINALIZER: &str = "core.pakket.dev/cleanup";
/// Default per-object size limit when the class sets no `maxObjectSize`.
pub const DEFAULT_MAX_OBJECT_SIZE: u64 = 1024 * 1024;
/// How often an installed Instance is re-applied, which repairs drift.
pub const RESYNC: Duration = Duration::from_secs(30);
/// The longest wait before retrying a Bundle that failed to unpack.
pub const MAX_UNPACK_BACKOFF: Duration = Duration::from_secs(60);
/// The first wait before retrying a Bundle that failed to unpack.
const FIRST_UNPACK_BACKOFF: Duration = Duration::from_secs(1);

/// What the controller shares between reconciles.
pub struct Context<P> {
    /// The provisioner.
    pub provisioner: P,
    /// The cluster.
    pub client: Client,
    /// Unpacked content, by digest.
    pub store: Arc<Store>,
    /// Registries' clients, shared across reconciles.
    pub images: ImageSources,
    /// Unpack failures in a row, by Instance uid, for the retry backoff.
    pub unpack_failures: Mutex<HashMap<String, u32>>,
    /// Reconcile counts and durations, served on `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Kinds discovered so far, shared by every reconcile.
    pub kinds: Kinds,
}

impl<P> Context<P> {
    /// Counts one more unpack failure of `instance`; returns how long to wait.
    fn unpack_failed(&self, instance: &Instance) -> Duration {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        let mut failures = self.unpack_failures.lock().expect("not poisoned");
        let count = failures.entry(key).or_default();
        let delay = backoff(*count);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets `instance`'s unpack failures.
    fn unpack_succeeded(&self, instance: &Instance) {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.unpack_failures
            .lock()
            .expect("not poisoned")
            .remove(&key);
    }
}

/// The wait after `failures` earlier failures in a row: 1 s, doubling, capped.
fn backoff(failures: u32) -> Duration {
    FIRST_UNPACK_BACKOFF
        .saturating_mul(1u32.checked_shl(failures.min(16)).unwrap_or(u32::MAX))
        .min(MAX_UNPACK_BACKOFF)
}

/// Errors that end a reconcile; they are retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server failed a call.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The finalizer machinery failed.
    #[error("finalizer: {0}")]
    Finalizer(String),
}

impl Error {
    /// The `result` label of the reconcile metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Kube(_) => "kube_error",
            Self::Finalizer(_) => "finalizer_error",
        }
    }
}

/// How [`run_with`] runs the controller.
pub struct RunOptions {
    /// Where the content store lives.
    pub store_dir: PathBuf,
    /// Reconcile counts and durations, served on `/metrics` (see [`crate::serve`]).
    pub metrics: Arc<Metrics>,
    /// How sources are fetched: timeouts, plain-HTTP policy, trusted roots.
    pub sources: SourceOptions,
}

impl RunOptions {
    /// Defaults with the content store in `store_dir`.
    pub fn new(store_dir: PathBuf) -> Self {
        Self {
            store_dir,
            metrics: Arc::new(Metrics::new()),
            sources: SourceOptions::default(),
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
    let store = Store::open(options.store_dir)?;
    let context = Arc::new(Context {
        provisioner,
        client: client.clone(),
        store: Arc::new(store),
        images: ImageSources::new(options.sources),
        unpack_failures: Mutex::new(HashMap::new()),
        metrics: options.metrics,
        kinds: Kinds::new(client.clone()),
    });
    let controller = Controller::new(
        Api::<Instance>::all(client.clone()),
        watcher::Config::default(),
    );
    // A class created (or changed) after its Instances must reach them: an
    // Instance whose class did not exist yet was set aside, not failed.
    let instances = controller.store();
    controller
        .owns(
            Api::<Bundle>::all(client.clone()),
            watcher::Config::default(),
        )
        .watches(
            Api::<ProvisionerClass>::all(client),
            watcher::Config::default(),
            move |class| {
                let name = class.name_any();
                instances
                    .state()
                    .into_iter()
                    .filter(|instance| instance.spec.class == name)
                    .map(|instance| ObjectRef::from_obj(&*instance))
                    .collect::<Vec<_>>()
            },
        )
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile");
            }
        })
        .await;
    Ok(())
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
    let classes: Api<ProvisionerClass> = Api::all(context.client.clone());
    let class = classes.get_opt(&instance.spec.class).await?;
    let ours = class
        .as_ref()
        .is_some_and(|class| class.spec.provisioner == context.provisioner.id());
    if !ours && !instance.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    let instances: Api<Instance> = Api::all(context.client.clone());
    finalizer(&instances, FINALIZER, instance, |event| async {
        match event {
            Event::Apply(instance) => install(&instance, class.as_ref(), context).await,
            Event::Cleanup(instance) => uninstall(&instance, context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(error.to_string()))
}

/// The conditions and facts a reconcile learns, written whole at the end.
struct Report {
    status: InstanceStatus,
    generation: Option<i64>,
    /// The Instance as read; the write is conditional on its resourceVersion.
    instance: Instance,
}

impl Report {
    fn new(instance: &Instance) -> Self {
        let status = instance.status.clone().unwrap_or_default();
        Self {
            status,
            generation: instance.metadata.generation,
            instance: instance.clone(),
        }
    }

    fn set(&mut self, reason: Reason, status: ConditionStatus, message: impl Into<String>) {
        let condition = condition::new(reason, status, message, self.generation, Timestamp::now());
        condition::set(&mut self.status.conditions, condition);
    }

    fn approved(&self) -> bool {
        condition::find(&self.status.conditions, ConditionType::Approved)
            .is_some_and(|c| c.status == "True")
    }

    /// Every condition type is always present, each with a reason.
    fn fill_missing(&mut self) {
        let defaults = [
            (
                ConditionType::Approved,
                Reason::ApprovalPending,
                ConditionStatus::False,
                "not evaluated yet",
            ),
            (
                ConditionType::Unpacked,
                Reason::UnpackPending,
                ConditionStatus::False,
                "not unpacked yet",
            ),
            (
                ConditionType::Installed,
                Reason::InstallPending,
                ConditionStatus::False,
                "nothing applied yet",
            ),
            (
                ConditionType::Healthy,
                Reason::HealthUnknown,
                ConditionStatus::Unknown,
                "nothing installed yet",
            ),
        ];
        for (kind, reason, status, message) in defaults {
            if condition::find(&self.status.conditions, kind).is_none() {
                self.set(reason, status, message);
            }
        }
    }

    /// Writes the whole status, but only over the Instance this reconcile
    /// read: if anyone changed it meanwhile (an approver setting `Approved`,
    /// say), the write is refused with a conflict and dropped, and the watch
    /// event of that change brings a fresh reconcile. Without this a
    /// reconcile that started before an approval would write it away.
    async fn write(mut self, instances: &Api<Instance>, name: &str) -> Result<(), kube::Error> {
        self.fill_missing();
        self.status.observed_generation = self.generation;
        let mut updated = self.instance;
        updated.status = Some(self.status);
        updated.metadata.managed_fields = None;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match instances.replace_status(name, &params, &updated).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(
                    instance = name,
                    "status changed meanwhile; reconciling again"
                );
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

async fn install<P: Provisioner>(
    instance: &Instance,
    class: Option<&ProvisionerClass>,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let name = instance.name_any();
    let instances: Api<Instance> = Api::all(context.client.clone());
    let mut report = Report::new(instance);
    let Some(class) = class else {
        let message = format!(
            "ProvisionerClass {} does not exist; create it or fix spec.class",
            instance.spec.class
        );
        report.set(Reason::InstallPending, ConditionStatus::False, message);
        report.write(&instances, &name).await?;
        return Ok(Action::requeue(Duration::from_secs(10)));
    };

    // The Bundle: the embedded spec is created (and owned) by the Instance.
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    let bundle_name = &instance.spec.bundle.name;
    let bundle = match (
        bundles.get_opt(bundle_name).await?,
        &instance.spec.bundle.spec,
    ) {
        (Some(bundle), _) => bundle,
        (None, Some(spec)) => {
            let mut bundle = Bundle::new(bundle_name, spec.clone());
            bundle.metadata.owner_references =
                instance.controller_owner_ref(&()).map(|owner| vec![owner]);
            bundle.metadata.labels = instance.metadata.labels.clone();
            bundles.create(&PostParams::default(), &bundle).await?
        }
        (None, None) => {
            let message = format!(
                "Bundle {bundle_name} does not exist; create it or embed its spec in spec.bundle.spec"
            );
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            report.write(&instances, &name).await?;
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
    };

    // Unpack: content into the store by digest; the Bundle's status says how it went.
    let options =
        UnpackOptions::from_parameters(class.spec.parameters.as_ref(), DEFAULT_MAX_OBJECT_SIZE);
    let unpacked = match content::unpack(
        &context.client,
        &bundle.spec,
        &context.store,
        &context.images,
        &options,
    )
    .await
    {
        Ok(unpacked) => unpacked,
        Err(error) => {
            let message = format!("Bundle {bundle_name}: {error}");
            write_bundle_status(
                &bundles,
                &bundle,
                UnpackPhase::Failed,
                None,
                &[],
                Reason::UnpackFailed,
                &message,
            )
            .await?;
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            report.write(&instances, &name).await?;
            let delay = context.unpack_failed(instance);
            tracing::info!(instance = %name, %error, retry_in = ?delay, "unpack failed");
            return Ok(Action::requeue(delay));
        }
    };
    context.unpack_succeeded(instance);
    let max_object_size = options.limits.max_file_size;
    let objects = match context.provisioner.objects(&unpacked.dir, max_object_size) {
        Ok(objects) => objects,
        Err(error) => {
            let message = format!("Bundle {bundle_name}: {error}");
            write_bundle_status(
                &bundles,
                &bundle,
                UnpackPhase::Failed,
                Some(&unpacked),
                &[],
                Reason::UnpackFailed,
                &message,
            )
            .await?;
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            report.write(&instances, &name).await?;
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
    };
    let references: Vec<_> = objects.iter().map(apply::reference_of).collect();
    let message = format!(
        "unpacked {} objects from {}",
        objects.len(),
        unpacked.reference
    );
    write_bundle_status(
        &bundles,
        &bundle,
        UnpackPhase::Done,
        Some(&unpacked),
        &references,
        Reason::UnpackSucceeded,
        &message,
    )
    .await?;
    report.set(
        Reason::UnpackSucceeded,
        ConditionStatus::True,
        format!("Bundle {bundle_name}: {message}"),
    );

    // Approval: the class's policy, or a user with the `approve` verb.
    let policy = class.parameter_str("approval").unwrap_or("AllowAll");
    if !report.approved() {
        if policy == "AllowAll" {
            report.set(
                Reason::ApprovedByPolicy,
                ConditionStatus::True,
                format!(
                    "ProvisionerClass {} approves every Instance (approval: AllowAll)",
                    class.name_any()
                ),
            );
        } else {
            let message = format!(
                "waiting for approval (ProvisionerClass {} has approval: {policy}); run `kubectl instance approve {name}`",
                class.name_any()
            );
            report.set(Reason::ApprovalPending, ConditionStatus::False, message);
            report.set(
                Reason::InstallPending,
                ConditionStatus::False,
                "nothing is applied before approval",
            );
            report.write(&instances, &name).await?;
            return Ok(Action::await_change());
        }
    }

    // Apply the new set, then delete what the old set had and this one lacks.
    let mut kinds = context.kinds.clone();
    let previous = report.status.objects.clone();
    let applied = match apply::apply_all(&mut kinds, &objects, &name, bundle_name).await {
        Ok(applied) => applied,
        Err(error) => {
            // Half-way: what was running stays; status still lists the old set.
            report.set(
                Reason::InstallFailed,
                ConditionStatus::False,
                format!("{error}; the previous objects were left in place"),
            );
            report.write(&instances, &name).await?;
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
    };
    let pruned = match apply::prune(&mut kinds, &previous, &applied).await {
        Ok(pruned) => pruned,
        Err(error) => {
            report.set(
                Reason::InstallFailed,
                ConditionStatus::False,
                format!("pivot: {error}"),
            );
            report.write(&instances, &name).await?;
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
    };
    let pivot = report
        .status
        .active_bundle
        .as_ref()
        .filter(|old| *old != bundle_name)
        .cloned();
    report.status.objects = applied.clone();
    report.status.active_bundle = Some(bundle_name.clone());
    let mut message = format!("applied {} objects of Bundle {bundle_name}", applied.len());
    if let Some(old) = &pivot {
        message.push_str(&format!(
            "; pivoted from Bundle {old}, deleting {pruned} objects it alone had"
        ));
        mark_replaced(&bundles, old, bundle_name).await?;
    }
    report.set(Reason::InstallSucceeded, ConditionStatus::True, message);

    let problems = apply::unhealthy(&mut kinds, &applied).await;
    if problems.is_empty() {
        report.set(
            Reason::ObjectsHealthy,
            ConditionStatus::True,
            format!("all {} objects are healthy", applied.len()),
        );
    } else {
        report.set(
            Reason::ObjectsUnhealthy,
            ConditionStatus::False,
            problems.join("; "),
        );
    }
    report.write(&instances, &name).await?;
    Ok(Action::requeue(RESYNC))
}

/// Labels a Bundle an Instance pivoted away from, so `kubectl get bundles
/// -l core.pakket.dev/replaced-by` shows the history.
async fn mark_replaced(bundles: &Api<Bundle>, old: &str, new: &str) -> Result<(), kube::Error> {
    let label = json!({ "metadata": { "labels": { REPLACED_BY_LABEL: new } } });
    match bundles
        .patch(old, &PatchParams::default(), &Patch::Merge(&label))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

async fn uninstall<P: Provisioner>(
    instance: &Instance,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let mut kinds = context.kinds.clone();
    let owned = instance
        .status
        .as_ref()
        .map(|status| status.objects.clone())
        .unwrap_or_default();
    for reference in owned.iter().rev() {
        if let Err(error) = apply::delete(&mut kinds, reference).await {
            tracing::warn!(%error, "deleting an installed object");
        }
    }
    Ok(Action::await_change())
}

#[allow(clippy::too_many_arguments)]
async fn write_bundle_status(
    bundles: &Api<Bundle>,
    bundle: &Bundle,
    phase: UnpackPhase,
    unpacked: Option<&content::Unpacked>,
    objects: &[pakket_api::ObjectRef],
    reason: Reason,
    message: &str,
) -> Result<(), kube::Error> {
    let mut status = bundle.status.clone().unwrap_or_default();
    status.unpacked = phase;
    if let Some(unpacked) = unpacked {
        status.source = Some(PinnedSource {
            reference: unpacked.reference.clone(),
            digest: Some(unpacked.digest.as_str().to_owned()),
            commit: None,
        });
    }
    status.objects = objects.to_vec();
    status.observed_generation = bundle.metadata.generation;
    let condition_status = if phase == UnpackPhase::Done {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    condition::set(
        &mut status.conditions,
        condition::new(
            reason,
            condition_status,
            message,
            bundle.metadata.generation,
            Timestamp::now(),
        ),
    );
    let patch = json!({ "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Bundle", "status": BundleStatus { ..status } });
    bundles
        .patch_status(
            &bundle.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpack_retries_back_off_from_one_second_to_a_minute() {
        let delays: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX), MAX_UNPACK_BACKOFF);
    }
}
