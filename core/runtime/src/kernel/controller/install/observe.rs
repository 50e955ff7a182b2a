//! The reads of one reconcile, each done once: the class and its
//! settings, the content to run (the spec's Bundle unpacked into the
//! store, or under an automatic rollback the earlier revision's content
//! from it), its pin, its probes, the objects it renders to, and then the
//! approval of exactly that request and what this process last wrote.
//! A read that cannot go on says why in the report and stops the
//! reconcile ([`Flow::Stop`]); otherwise the facts go to [`plan::plan`].

use std::borrow::Cow;

use kube::ResourceExt;
use kube::api::Api;
use pakket_api::{ApprovedContent, Bundle, Instance, ProvisionerClass, Revision};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::report::Report;
use super::super::revision;
use super::super::store_gc;
use super::{Flow, approval, bundle, class, render, rollback, unpack};
use super::{generation, reapply_after};
use super::{outcome, plan};
use crate::apply::probes::ProgressionProbes;
use crate::content::Unpacked;
use crate::drift::Fingerprint;
use crate::provisioner::{ObjectsRequest, Provisioner};

/// The content to run and everything read about it.
pub(super) struct Content<'a> {
    pub settings: class::Settings<'a>,
    /// The Instance as the steps after this read it: under an automatic
    /// rollback, as if its spec named the earlier revision's Bundle.
    pub instance: Cow<'a, Instance>,
    /// The revision an automatic rollback in force runs again.
    pub rolling_back: Option<Revision>,
    pub bundle: Bundle,
    pub home: bundle_status::Home<'a>,
    pub unpacked: Unpacked,
    /// The class's probes and the content author's.
    pub probes: ProgressionProbes,
    pub rendered: render::Rendered,
}

/// Reads the content `instance` is to run, and renders it. The content,
/// once unpacked, is kept from the store's collection by `held` until the
/// caller drops it: after the status written at the end of the reconcile
/// pins it (and the watch caches have seen that), also when a step after
/// the unpack stops the reconcile.
pub(super) async fn content<'a, P: Provisioner>(
    instance: &'a Instance,
    class: Option<&'a ProvisionerClass>,
    bundles: &'a Api<Bundle>,
    held: &mut Option<store_gc::Held>,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Content<'a>>, kube::Error> {
    macro_rules! next {
        ($step:expr) => {
            match $step {
                Flow::Next(value) => value,
                Flow::Stop(action) => return Ok(Flow::Stop(action)),
            }
        };
    }
    let mut settings = next!(class::settings(instance, class, report));
    let requester = instance;
    // Under an automatic rollback the earlier revision's content, from the
    // store, stands in for the spec's; else the spec's Bundle.
    let (instance, bundle, home, unpacked) =
        match rollback_in_force(instance, bundles, context, report).await {
            Some(target) => (
                Cow::Owned(target.instance),
                target.bundle,
                target.home,
                target.unpacked,
            ),
            None => {
                let (bundle, home) = next!(bundle::find(instance, bundles, context, report).await?);
                let options = &settings.unpack;
                let unpacked =
                    next!(unpack::unpack(instance, &bundle, home, options, context, report).await?);
                (Cow::Borrowed(instance), bundle, home, unpacked)
            }
        };
    let rolling_back = revision::rollback_target(&report.status, generation(requester)).cloned();
    *held = Some(context.in_flight.hold(&unpacked.digest));
    next!(unpack::pin_holds(
        &instance, &bundle, &unpacked, context, report
    ));
    let class_probes = std::mem::take(&mut settings.probes);
    let options = &settings.unpack;
    let probes = next!(render::content_probes(
        &bundle,
        &unpacked,
        class_probes,
        options,
        report
    ));
    let class = settings.class;
    let rendered = next!(
        render::render(
            &instance, requester, class, &bundle, home, &unpacked, options, context, report
        )
        .await?
    );
    Ok(Flow::Next(Content {
        settings,
        instance,
        rolling_back,
        bundle,
        home,
        unpacked,
        probes,
        rendered,
    }))
}

/// The content of the automatic rollback in force for the Instance's
/// current generation, if one is and its content is still there. A
/// rollback decided for an earlier generation ended when the spec changed;
/// one whose content is gone is recorded as not possible.
async fn rollback_in_force<'a, P>(
    instance: &Instance,
    bundles: &'a Api<Bundle>,
    context: &Context<P>,
    report: &mut Report,
) -> Option<rollback::Target<'a>> {
    let generation = generation(instance);
    outcome::rollback_ended(report, generation);
    let earlier = revision::rollback_target(&report.status, generation)?.clone();
    match rollback::target(instance, &earlier, bundles, context).await {
        Ok(target) => Some(target),
        Err(why) => {
            outcome::rollback_not_possible(report, &why);
            None
        }
    }
}

/// What the plan decides on, with the content as approval records it and
/// the drift tracker's fingerprint of it.
pub(super) struct Facts {
    pub content: ApprovedContent,
    pub fingerprint: Fingerprint,
    pub observed: plan::Observed,
}

/// The approval of exactly this request (the rollback's revision's, under
/// a rollback) and what this process last wrote: the facts the plan
/// decides on.
pub(super) async fn facts<P: Provisioner>(
    requester: &Instance,
    read: &Content<'_>,
    request: &ObjectsRequest<'_>,
    context: &Context<P>,
    report: &mut Report,
) -> Facts {
    let instance = read.instance.as_ref();
    let content = ApprovedContent {
        bundle: instance.spec.bundle.name.clone(),
        digest: read.unpacked.digest.as_str().to_owned(),
        approved_by: String::new(),
        rendered: Some(crate::trust::rerender::rendered_digest(
            &read.rendered.objects,
        )),
        generation: None,
        judged: None,
    };
    let approval = match &read.rolling_back {
        // The earlier revision's approval covers exactly its objects.
        Some(earlier) => plan::Approval::Rollback {
            to: earlier.number,
            render_unchanged: rollback::render_unchanged(
                earlier,
                content.rendered.as_deref().unwrap_or_default(),
            ),
        },
        None => {
            let proposed = approval::Proposed {
                objects: &read.rendered.objects,
                request,
            };
            let class = read.settings.class;
            approval::step(requester, class, proposed, &content, context, report).await
        }
    };
    let fingerprint = Fingerprint {
        generation: instance.metadata.generation,
        bundle: instance.spec.bundle.name.clone(),
        digest: content.digest.clone(),
        rendered: content.rendered.clone(),
    };
    let bundle = &instance.spec.bundle.name;
    let staleness = context.drift.staleness(
        &instance.name_any(),
        &fingerprint,
        reapply_after(context.resync),
    );
    let observed = plan::Observed {
        bundle: bundle.clone(),
        active_bundle: report.status.active_bundle.clone(),
        installed_here: report.installed(bundle) && report.observed_current(),
        drift: read.settings.drift,
        staleness,
        failed_before: report.failed_before() || context.apply_failed_before(instance),
        approval,
    };
    Facts {
        content,
        fingerprint,
        observed,
    }
}
