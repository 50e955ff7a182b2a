//! One reconcile of an Instance that should be installed: class → Bundle →
//! unpack → approval → apply and pivot → health, each step writing the
//! condition it owns.

use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef as StoreKey;
use kube::{Resource, ResourceExt};
use pakket_api::condition::ConditionStatus;
use pakket_api::{Bundle, Instance, ProvisionerClass, Reason, UnpackPhase};

use super::bundle_status::{self, UnpackOutcome};
use super::context::Context;
use super::report::{Report, StatusWrite};
use super::{DEFAULT_MAX_OBJECT_SIZE, RESYNC, RESYNC_UNHEALTHY};
use crate::apply;
use crate::approval::{Approval, ApprovalRequest};
use crate::class_parameters;
use crate::content::{self, UnpackOptions, Unpacked};
use crate::drift::Fingerprint;
use crate::provisioner::Provisioner;
use crate::store::Digest;

/// How soon a reconcile whose status write lost a race runs again.
const AFTER_CONFLICT: Duration = Duration::from_millis(500);
/// How soon a missing class or Bundle is looked for again (their watches
/// usually bring the Instance back sooner).
const WAITING_FOR_OBJECT: Duration = Duration::from_secs(30);
/// How soon a failed apply is tried again.
const AFTER_INSTALL_FAILURE: Duration = Duration::from_secs(10);

/// Writes the report and returns `action`, or an early retry if the write
/// lost a race with another change to the Instance.
async fn finish<P>(
    report: Report,
    context: &Context<P>,
    action: Action,
) -> Result<Action, kube::Error> {
    let instances: Api<Instance> = Api::all(context.client.clone());
    Ok(match report.write(&instances, &context.recorder).await? {
        StatusWrite::Conflict => Action::requeue(AFTER_CONFLICT),
        StatusWrite::Stored | StatusWrite::Unchanged => action,
    })
}

/// Brings `instance` to its desired state, as far as it can go now.
pub async fn install<P: Provisioner>(
    instance: &Instance,
    class: Option<&ProvisionerClass>,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let name = instance.name_any();
    let mut report = Report::new(instance);
    let Some(class) = class else {
        let message = format!(
            "ProvisionerClass {} does not exist; create it or fix spec.class",
            instance.spec.class
        );
        report.set(Reason::InstallPending, ConditionStatus::False, message);
        return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
    };

    // The Bundle: the embedded spec is created (and owned) by the Instance.
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    let bundle_name = &instance.spec.bundle.name;
    let Some(bundle) = find_or_create_bundle(instance, &bundles, context).await? else {
        let message = format!(
            "Bundle {bundle_name} does not exist; create it or embed its spec in spec.bundle.spec"
        );
        report.set(Reason::UnpackFailed, ConditionStatus::False, message);
        return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
    };

    // Unpack: content into the store by digest; the Bundle's status says how it went.
    let options = match UnpackOptions::from_parameters(
        class.spec.parameters.as_ref(),
        DEFAULT_MAX_OBJECT_SIZE,
    ) {
        Ok(options) => options,
        Err(error) => {
            // The class is wrong, not the Bundle: its watch brings the
            // Instance back once an admin fixes it.
            let message = format!(
                "ProvisionerClass {}: {error}; fix the class",
                class.name_any()
            );
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    let unpacked = match already_unpacked(&bundle, context) {
        Some(unpacked) => unpacked,
        None => match content::unpack(
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
                let outcome = UnpackOutcome {
                    phase: UnpackPhase::Failed,
                    unpacked: None,
                    objects: &[],
                    reason: Reason::UnpackFailed,
                    message: &message,
                };
                bundle_status::write(&bundles, &bundle, outcome).await?;
                report.set(Reason::UnpackFailed, ConditionStatus::False, message);
                let delay = context.unpack_failed(instance);
                tracing::info!(instance = %name, %error, retry_in = ?delay, "unpack failed");
                return finish(report, context, Action::requeue(delay)).await;
            }
        },
    };
    context.unpack_succeeded(instance);
    let objects = match context
        .provisioner
        .objects(&unpacked.dir, options.limits.max_file_size)
    {
        Ok(objects) => objects,
        Err(error) => {
            let message = format!("Bundle {bundle_name}: {error}");
            let outcome = UnpackOutcome {
                phase: UnpackPhase::Failed,
                unpacked: Some(&unpacked),
                objects: &[],
                reason: Reason::UnpackFailed,
                message: &message,
            };
            bundle_status::write(&bundles, &bundle, outcome).await?;
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    let references: Vec<_> = objects.iter().map(apply::reference_of).collect();
    let message = format!(
        "unpacked {} objects from {}",
        objects.len(),
        unpacked.reference
    );
    let outcome = UnpackOutcome {
        phase: UnpackPhase::Done,
        unpacked: Some(&unpacked),
        objects: &references,
        reason: Reason::UnpackSucceeded,
        message: &message,
    };
    bundle_status::write(&bundles, &bundle, outcome).await?;
    report.set(
        Reason::UnpackSucceeded,
        ConditionStatus::True,
        format!("Bundle {bundle_name}: {message}"),
    );

    // Approval: the class's policy, or a user with the `approve` verb.
    if let Some((waiting, retry)) = approve(instance, class, &objects, context, &mut report).await {
        report.set(Reason::InstallPending, ConditionStatus::False, waiting);
        let next = retry.map_or_else(Action::await_change, Action::requeue);
        return finish(report, context, next).await;
    }

    // Apply the new set, then delete what the old set had and this one lacks.
    let fingerprint = Fingerprint {
        generation: instance.metadata.generation,
        bundle: bundle_name.clone(),
        digest: unpacked.digest.as_str().to_owned(),
    };
    let installed_here = report.installed(bundle_name) && report.observed_current();
    let fresh_health = if !installed_here || context.drift.needs_apply(&name, &fingerprint, RESYNC)
    {
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
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
            }
        };
        let pruned = match apply::prune(&mut kinds, &previous, &applied.objects).await {
            Ok(pruned) => pruned,
            Err(error) => {
                report.set(
                    Reason::InstallFailed,
                    ConditionStatus::False,
                    format!("pivot: {error}"),
                );
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
            }
        };
        let pivot = report
            .status
            .active_bundle
            .as_ref()
            .filter(|old| *old != bundle_name)
            .cloned();
        report.status.objects = applied.objects.clone();
        report.status.active_bundle = Some(bundle_name.clone());
        let mut message = format!(
            "applied {} objects of Bundle {bundle_name}",
            applied.objects.len()
        );
        if let Some(old) = &pivot {
            message.push_str(&format!(
                "; pivoted from Bundle {old}, deleting {pruned} objects it alone had"
            ));
            bundle_status::mark_replaced(&bundles, old, bundle_name).await?;
        }
        if pivot.is_some() || !installed_here {
            mark_earlier_bundles(instance, context, bundle_name).await?;
        }
        report.set(Reason::InstallSucceeded, ConditionStatus::True, message);
        context.drift.applied(&name, fingerprint);
        Some(applied.unhealthy)
    } else {
        None
    };

    // Health: from the apply's answers when it just ran, else read afresh.
    let installed = report.status.objects.clone();
    let problems = match fresh_health {
        Some(problems) => problems,
        None => apply::unhealthy(&mut context.kinds.clone(), &installed).await,
    };
    let next = if problems.is_empty() {
        report.set(
            Reason::ObjectsHealthy,
            ConditionStatus::True,
            format!("all {} objects are healthy", installed.len()),
        );
        RESYNC
    } else {
        report.set(
            Reason::ObjectsUnhealthy,
            ConditionStatus::False,
            problems.join("; "),
        );
        RESYNC_UNHEALTHY
    };
    finish(report, context, Action::requeue(next)).await
}

/// The Instance's Bundle: from the watch cache, else from the apiserver,
/// else created from the embedded spec (owned by the Instance). `None` when
/// it does not exist and the Instance embeds no spec.
async fn find_or_create_bundle<P>(
    instance: &Instance,
    bundles: &Api<Bundle>,
    context: &Context<P>,
) -> Result<Option<Bundle>, kube::Error> {
    let name = &instance.spec.bundle.name;
    if let Some(bundle) = context.bundles.get(&StoreKey::new(name)) {
        return Ok(Some((*bundle).clone()));
    }
    // Not cached: a Bundle the Instance embeds is usually not created yet,
    // so create it straight away (a conflict means it exists after all).
    let Some(spec) = &instance.spec.bundle.spec else {
        return bundles.get_opt(name).await;
    };
    let mut bundle = Bundle::new(name, spec.clone());
    bundle.metadata.owner_references = instance.controller_owner_ref(&()).map(|owner| vec![owner]);
    bundle.metadata.labels = instance.metadata.labels.clone();
    match bundles.create(&PostParams::default(), &bundle).await {
        Ok(created) => Ok(Some(created)),
        // Created meanwhile (a reconcile racing this one): use that one.
        Err(kube::Error::Api(status)) if status.code == 409 => bundles.get_opt(name).await,
        Err(error) => Err(error),
    }
}

/// Labels every Bundle the Instance's `spec.selector` finds, other than
/// the one now installed, as replaced by it: with a selector, the earlier
/// Bundles of an Instance are the ones it matches, whether or not this
/// runtime ever installed them (another provisioner's, or ones from before
/// the Instance was re-created). A selector that cannot be read is ignored
/// here: the apiserver validated its shape.
async fn mark_earlier_bundles<P>(
    instance: &Instance,
    context: &Context<P>,
    current: &str,
) -> Result<(), kube::Error> {
    let Some(selector) = instance.spec.selector.clone() else {
        return Ok(());
    };
    let Ok(selector) = kube::core::Selector::try_from(selector) else {
        return Ok(());
    };
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    // Listed, not read from the cache: this runs once per pivot, and a
    // Bundle created just before the Instance may not be cached yet.
    let earlier = bundles
        .list(&kube::api::ListParams::default().labels_from(&selector))
        .await?;
    for bundle in earlier {
        let name = bundle.name_any();
        let already =
            bundle.labels().get(bundle_status::REPLACED_BY_LABEL) == Some(&current.to_owned());
        if name != current && !already {
            bundle_status::mark_replaced(&bundles, &name, current).await?;
        }
    }
    Ok(())
}

/// The Bundle's content, if its status pins a digest the store holds: then
/// nothing is fetched at all. A Bundle is immutable, so what it unpacked to
/// once is what it unpacks to; this also keeps a moved tag from changing an
/// installed Bundle's content.
fn already_unpacked<P>(bundle: &Bundle, context: &Context<P>) -> Option<Unpacked> {
    let status = bundle.status.as_ref()?;
    if status.unpacked != UnpackPhase::Done
        || status.observed_generation != bundle.metadata.generation
    {
        return None;
    }
    let source = status.source.as_ref()?;
    let digest = Digest::parse(source.digest.as_deref()?).ok()?;
    let dir = context.store.get(&digest)?;
    Some(Unpacked {
        reference: source.reference.clone(),
        digest,
        dir,
        commit: source.commit.clone(),
    })
}

/// Decides approval. `None` when the Instance may be installed; otherwise
/// why it waits and when to ask again (the `Approved` condition is set
/// accordingly).
///
/// A user's approval holds for the generation it was given at: a changed
/// spec (say, a new Bundle) needs approving again, so an approval of one
/// Bundle never carries over to content the approver has not seen. A denial
/// stands until someone with `approve` changes it. `AllowAll` approves every
/// generation; a class that stops allowing all withdraws its approvals.
/// Other policies are the provisioner's ([`Provisioner::approve`]); what it
/// approved holds for that generation under that policy.
async fn approve<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    objects: &[serde_json::Value],
    context: &Context<P>,
    report: &mut Report,
) -> Option<(String, Option<Duration>)> {
    let name = instance.name_any();
    let class_name = class.name_any();
    let generation = instance.metadata.generation;
    let current = report.approval().cloned();
    let by_policy = |c: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition| {
        c.reason == Reason::ApprovedByPolicy.as_str()
    };
    // A person's decision comes first: a denial stands, an approval holds
    // for the generation it was given at, whatever the class says.
    match &current {
        Some(c) if c.status == "False" && c.reason == Reason::ApprovalDenied.as_str() => {
            let message = format!(
                "approval was denied ({}); nothing is applied. An approver can run `kubectl instance approve {name}`",
                c.message
            );
            return Some((message, None));
        }
        Some(c) if c.status == "True" && !by_policy(c) && c.observed_generation == generation => {
            return None;
        }
        _ => {}
    }
    // An `approval` that is not a string must not fall back to AllowAll:
    // a class meant to be gated would install everything.
    let policy = match class_parameters::string(class.spec.parameters.as_ref(), "approval") {
        Ok(policy) => policy.unwrap_or("AllowAll"),
        Err(error) => {
            report.set(
                Reason::ApprovalPending,
                ConditionStatus::False,
                format!("ProvisionerClass {class_name}: {error}; fix the class, or run `kubectl instance approve {name}`"),
            );
            return Some(("nothing is applied before approval".into(), None));
        }
    };
    // A policy's approval holds while the policy does (AllowAll: always;
    // others: for the generation they approved).
    if let Some(c) = &current
        && c.status == "True"
        && by_policy(c)
        && (policy == "AllowAll"
            || (c.observed_generation == generation
                && c.message.contains(&format!("approval: {policy}"))))
    {
        return None;
    }
    if policy == "AllowAll" {
        report.set(
            Reason::ApprovedByPolicy,
            ConditionStatus::True,
            format!("ProvisionerClass {class_name} approves every Instance (approval: AllowAll)"),
        );
        return None;
    }
    let request = ApprovalRequest {
        client: &context.client,
        instance,
        class,
        policy,
        objects,
        kinds: context.kinds.clone(),
    };
    let (message, retry) = match context.provisioner.approve(&request).await {
        Approval::Approved(message) => {
            report.set(Reason::ApprovedByPolicy, ConditionStatus::True, message);
            return None;
        }
        Approval::Pending { message, retry } => (message, retry),
    };
    let waiting = "nothing is applied before approval".to_owned();
    match &current {
        // A person's approval of an earlier generation: say why it is asked again.
        Some(c) if c.status == "True" && !by_policy(c) => {
            let message = format!(
                "{message}; the spec changed since generation {} was approved",
                c.observed_generation.unwrap_or_default()
            );
            report.set(Reason::ApprovalPending, ConditionStatus::False, message);
        }
        // Already waiting for the same reason (perhaps with that note): keep it.
        Some(c)
            if c.reason == Reason::ApprovalPending.as_str()
                && c.observed_generation == generation
                && c.message.starts_with(&message) => {}
        _ => report.set(Reason::ApprovalPending, ConditionStatus::False, message),
    }
    Some((waiting, retry))
}
