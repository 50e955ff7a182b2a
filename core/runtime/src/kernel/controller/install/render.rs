//! The render step: the provisioner turns the unpacked content into
//! objects, Pakket's own kinds among them judged by the trust kernel first;
//! a config error, missing dependencies, damaged stored content (fetched
//! once more) and content that cannot be rendered each end it with their
//! own condition. What renders is recorded on the Bundle.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Bundle, Instance, ProvisionerClass, Reason, UnpackPhase};

use super::super::bundle_status::{self, UnpackOutcome};
use super::super::context::Context;
use super::super::report::Report;
use super::*;
use crate::apply;
use crate::content::{UnpackOptions, Unpacked};
use crate::provisioner::Provisioner;
use crate::provisioner::{ClusterFacts, ObjectsError, ObjectsRequest};

/// The objects the content renders to, and what they were rendered with.
pub(super) struct Rendered {
    pub objects: Vec<serde_json::Value>,
    pub cluster: ClusterFacts,
    /// What the content provides others, for the status.
    pub provides: Vec<String>,
}

/// What the provisioner is asked to render from.
pub(super) fn request<'a>(
    instance: &'a Instance,
    class: &'a ProvisionerClass,
    unpacked: &'a Unpacked,
    options: &UnpackOptions,
    cluster: &'a ClusterFacts,
) -> ObjectsRequest<'a> {
    ObjectsRequest {
        content: &unpacked.dir,
        max_object_size: options.limits.max_file_size,
        instance,
        cluster,
        class_parameters: class.spec.parameters.as_ref(),
    }
}

/// Renders `unpacked`, or says why it cannot. `requester` is the Instance
/// as its requester wrote it, whose sealed record judges Pakket's kinds in
/// the content: `instance` itself, except under an automatic rollback,
/// where `instance` names the earlier revision's Bundle.
#[allow(clippy::too_many_arguments)]
pub(super) async fn render<P: Provisioner>(
    instance: &Instance,
    requester: &Instance,
    class: &ProvisionerClass,
    bundle: &Bundle,
    home: bundle_status::Home<'_>,
    unpacked: &Unpacked,
    options: &UnpackOptions,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Rendered>, kube::Error> {
    let (rendered, cluster) = objects(instance, requester, class, unpacked, options, context).await;
    let request = request(instance, class, unpacked, options, &cluster);
    let pinned = Pinned {
        home,
        bundle,
        unpacked,
    };
    let objects = match rendered {
        Ok(objects) => {
            context.rendered(instance);
            objects
        }
        Err(error) => return Ok(failed(error, instance, &pinned, &request, context, report)),
    };
    if objects.len() as u64 > options.max_objects {
        too_many(&objects, instance, class, &pinned, options, report);
        return Ok(Flow::Stop(Action::requeue(WAITING_FOR_OBJECT)));
    }
    let references: Vec<_> = objects.iter().map(apply::reference_of).collect();
    let message = format!(
        "unpacked {} objects from {}",
        objects.len(),
        unpacked.reference
    );
    let properties = pinned.properties(context, &request);
    let provides = crate::inventory::summary(&objects, &properties);
    let outcome = UnpackOutcome {
        phase: UnpackPhase::Done,
        unpacked: Some(unpacked),
        objects: &references,
        grants: crate::rbac::grants(&objects),
        properties,
        reason: Reason::UnpackSucceeded,
        message: &message,
    };
    bundle_status::record(home, bundle, outcome, report);
    report.set(
        Reason::UnpackSucceeded,
        ConditionStatus::True,
        format!("Bundle {}: {message}", instance.spec.bundle.name),
    );
    Ok(Flow::Next(Rendered {
        objects,
        cluster,
        provides,
    }))
}

/// The provisioner's objects of `unpacked`, with Pakket's own kinds in
/// them judged by the trust kernel before anything else sees them, and
/// the cluster facts they were rendered with.
async fn objects<P: Provisioner>(
    instance: &Instance,
    requester: &Instance,
    class: &ProvisionerClass,
    unpacked: &Unpacked,
    options: &UnpackOptions,
    context: &Context<P>,
) -> (Result<Vec<serde_json::Value>, ObjectsError>, ClusterFacts) {
    let needs_facts = context.provisioner.needs_cluster_facts();
    let mut cluster = if needs_facts {
        context.cluster_facts_for(instance).await
    } else {
        ClusterFacts::default()
    };
    let render = |cluster: &ClusterFacts| {
        let request = request(instance, class, unpacked, options, cluster);
        // Pakket's own kinds in the content are the trust kernel's to
        // judge, before anything else sees the objects.
        context.provisioner.objects(&request).and_then(|objects| {
            crate::trust::children::judged_children(
                objects,
                context.provisioner.pakket_kinds(),
                requester,
                context.record_key.as_ref(),
                context.provisioner.id(),
            )
            .map_err(ObjectsError::Content)
        })
    };
    let mut rendered = render(&cluster);
    // A render that failed on cached facts (a kind whose CRD another
    // Instance installed a moment ago) is tried once more on fresh ones.
    if rendered.is_err() && needs_facts && context.rediscover_soon().await {
        cluster = context.cluster_facts_for(instance).await;
        rendered = render(&cluster);
    }
    (rendered, cluster)
}

/// A render that failed: what the Instance and the Bundle say, and when
/// to look again.
fn failed<P: Provisioner>(
    error: ObjectsError,
    instance: &Instance,
    pinned: &Pinned<'_>,
    request: &ObjectsRequest<'_>,
    context: &Context<P>,
    report: &mut Report,
) -> Flow<Rendered> {
    let unpacked = pinned.unpacked;
    match error {
        ObjectsError::Config { field, problem } => {
            // The content is fine (and pinned); this Instance's settings
            // are not, and the objects depend on them.
            pinned.without_objects(
                "its objects depend on the Instance's spec.config",
                Vec::new(),
                report,
            );
            let message = format!(
                "{field}: {problem}; nothing is applied until the Instance's spec.config is fixed"
            );
            report.set(Reason::InvalidConfig, ConditionStatus::False, message);
            Flow::Stop(Action::await_change())
        }
        ObjectsError::DependenciesMissing(explanation) => {
            // The content is fine (and pinned); what it needs is not
            // installed. Another Instance installing it brings this one
            // back at the next look.
            pinned.without_objects(
                "it needs what is not installed",
                pinned.properties(context, request),
                report,
            );
            report.set(
                Reason::DependenciesMissing,
                ConditionStatus::False,
                format!("{explanation}; nothing is applied until what it needs is installed"),
            );
            Flow::Stop(Action::requeue(WAITING_FOR_DEPENDENCIES))
        }
        ObjectsError::Content(error)
            if context.first_render_failure(instance, unpacked.digest.as_str()) =>
        {
            fetch_again(&error, instance, unpacked, context, report);
            Flow::Stop(Action::requeue(AFTER_CONFLICT))
        }
        ObjectsError::Content(error) => {
            content_failed(&error, instance, pinned, context, report);
            Flow::Stop(Action::requeue(WAITING_FOR_OBJECT))
        }
    }
}

/// Content in the store can be damaged (a disk, a crash, a hand in the
/// pod): before the content is blamed, what the store held is dropped and
/// fetched once more.
fn fetch_again<P>(
    error: &impl std::fmt::Display,
    instance: &Instance,
    unpacked: &Unpacked,
    context: &Context<P>,
    report: &mut Report,
) {
    let name = instance.name_any();
    let bundle_name = &instance.spec.bundle.name;
    let held = store_entry_state(&unpacked.dir);
    tracing::warn!(instance = %name, bundle = %bundle_name, %error, store = %held, "rendering the stored content failed; fetching it again before blaming the content");
    if let Err(error) = context.store.evict(&unpacked.digest) {
        tracing::warn!(%error, "dropping the stored content");
    }
    report.set(
        Reason::Unpacking,
        ConditionStatus::Unknown,
        format!(
            "Bundle {bundle_name}: the stored content of {} could not be rendered ({error}); fetching it again once before the content is blamed",
            unpacked.digest.as_str()
        ),
    );
}

/// What the store holds at `dir`, in words for a log line: a render that
/// failed on missing files says whether the entry was there at all.
fn store_entry_state(dir: &std::path::Path) -> String {
    match std::fs::read_dir(dir) {
        Ok(entries) => format!("{} holds {} entries", dir.display(), entries.count()),
        Err(error) => format!("{} cannot be listed ({error})", dir.display()),
    }
}

/// Fetched and unpacked fine: the content itself is what the provisioner
/// cannot turn into objects. Said as a render failure, so nobody is sent
/// to check a registry.
fn content_failed<P: Provisioner>(
    error: &impl std::fmt::Display,
    instance: &Instance,
    pinned: &Pinned<'_>,
    context: &Context<P>,
    report: &mut Report,
) {
    let name = instance.name_any();
    let bundle_name = &instance.spec.bundle.name;
    let unpacked = pinned.unpacked;
    let message = format!(
        "Bundle {bundle_name}: {error}; nothing is applied: the content was fetched and unpacked, but {} could not make objects of it, so the content needs fixing (new content is a new Bundle)",
        context.provisioner.id()
    );
    tracing::warn!(instance = %name, bundle = %bundle_name, %error, "rendering the content failed");
    // The unpack worked: the Bundle says so, and that rendering it for
    // this Instance did not (another Instance's config may render it).
    let on_bundle = format!(
        "content unpacked at {}; Instance {name} could not render objects from it: {error} (its Installed condition says RenderFailed)",
        unpacked.digest.as_str()
    );
    let outcome = UnpackOutcome::not_rendered(unpacked, &on_bundle);
    bundle_status::record(pinned.home, pinned.bundle, outcome, report);
    report.set(
        Reason::UnpackSucceeded,
        ConditionStatus::True,
        format!(
            "content unpacked at {}; its objects could not be rendered (see Installed)",
            unpacked.digest.as_str()
        ),
    );
    report.set(Reason::RenderFailed, ConditionStatus::False, message);
}

/// More objects than the class allows in one Bundle: nothing is applied.
fn too_many(
    objects: &[serde_json::Value],
    instance: &Instance,
    class: &ProvisionerClass,
    pinned: &Pinned<'_>,
    options: &UnpackOptions,
    report: &mut Report,
) {
    let message = format!(
        "Bundle {}: the content holds {} objects and ProvisionerClass {} allows at most {} \
         in one Bundle (its parameter maxObjects); nothing is applied. Split the content into \
         several Bundles, each installed by its own Instance, or raise maxObjects in the class",
        instance.spec.bundle.name,
        objects.len(),
        class.name_any(),
        options.max_objects
    );
    let outcome = UnpackOutcome::failed(Some(pinned.unpacked), &message);
    bundle_status::record(pinned.home, pinned.bundle, outcome, report);
    let because = pakket_api::Cause::new(pakket_api::CauseKind::ContentInvalid);
    report.set_because(
        Reason::UnpackFailed,
        ConditionStatus::False,
        message,
        because,
    );
}

/// The probes that hold this content's phases: the class's, and those its
/// author ships in the content. Content whose probes cannot be read is
/// content that needs fixing, like content that cannot be rendered.
pub(super) fn content_probes(
    bundle: &Bundle,
    unpacked: &Unpacked,
    class_probes: crate::apply::probes::ProgressionProbes,
    options: &UnpackOptions,
    report: &mut Report,
) -> Flow<crate::apply::probes::ProgressionProbes> {
    use crate::apply::probes::ProgressionProbes;
    match ProgressionProbes::from_content(&unpacked.dir, options.limits.max_file_size) {
        Ok(theirs) => Flow::Next(class_probes.and(theirs)),
        Err(problem) => {
            let message = format!(
                "Bundle {}: {problem}; nothing is applied: the content's own progression probes cannot be read, so the content needs fixing (new content is a new Bundle)",
                bundle.name_any()
            );
            report.set(Reason::RenderFailed, ConditionStatus::False, message);
            Flow::Stop(Action::requeue(WAITING_FOR_OBJECT))
        }
    }
}

/// Content unpacked and pinned whose objects are not rendered (the
/// Instance's config is wrong, or what it needs is not installed).
struct Pinned<'a> {
    home: bundle_status::Home<'a>,
    bundle: &'a Bundle,
    unpacked: &'a Unpacked,
}

impl Pinned<'_> {
    /// What the content provides: as the Bundle recorded it for this very
    /// content, else as the provisioner reads it (which reads the content
    /// again, so not on every reconcile).
    pub(super) fn properties<P: Provisioner>(
        &self,
        context: &Context<P>,
        request: &crate::provisioner::ObjectsRequest<'_>,
    ) -> Vec<pakket_api::BundleProperty> {
        // Empty is not reused: a config error records none, and a provisioner
        // that says nothing is asked cheaply.
        let recorded = self.bundle.status.as_ref().filter(|status| {
            !status.properties.is_empty()
                && status.unpacked == UnpackPhase::Done
                && status.observed_generation == self.bundle.metadata.generation
                && status.source.as_ref().and_then(|s| s.digest.as_deref())
                    == Some(self.unpacked.digest.as_str())
        });
        match recorded {
            Some(status) => status.properties.clone(),
            None => context.provisioner.properties(request),
        }
    }

    /// Records the pin on the Bundle (Done, no objects) and `Unpacked` on
    /// the Instance, both saying `why` nothing was rendered.
    pub(super) fn without_objects(
        &self,
        why: &str,
        properties: Vec<pakket_api::BundleProperty>,
        report: &mut Report,
    ) {
        let message = format!("unpacked from {}; {why}", self.unpacked.reference);
        let outcome = UnpackOutcome {
            phase: UnpackPhase::Done,
            unpacked: Some(self.unpacked),
            objects: &[],
            grants: Vec::new(),
            properties,
            reason: Reason::UnpackSucceeded,
            message: &message,
        };
        bundle_status::record(self.home, self.bundle, outcome, report);
        report.set(
            Reason::UnpackSucceeded,
            ConditionStatus::True,
            format!("Bundle {}: {message}", self.bundle.name_any()),
        );
    }
}
