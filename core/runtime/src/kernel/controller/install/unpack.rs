//! The unpack step: the Bundle's content into the store by digest (or
//! found there), its pin recorded on the Bundle; a source that now serves
//! other content than the pin is refused.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus::False;
use pakket_api::{Bundle, Cause, CauseKind, Instance, Reason, UnpackPhase};

use super::super::bundle_status::{self, UnpackOutcome};
use super::super::context::Context;
use super::super::report::Report;
use super::*;
use crate::content::{self, UnpackOptions, Unpacked};
use crate::provisioner::Provisioner;
use crate::store::Digest;
use crate::trust::behalf::{ReadRefused, refused_read};

/// The Bundle's content, unpacked, or why not (the Bundle's status says
/// how the unpack went).
pub(super) async fn unpack<P: Provisioner>(
    instance: &Instance,
    bundle: &Bundle,
    home: bundle_status::Home<'_>,
    options: &UnpackOptions,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Unpacked>, kube::Error> {
    let name = instance.name_any();
    let bundle_name = &instance.spec.bundle.name;
    let key = context.record_key.as_ref();
    let unpacked = match already_unpacked(bundle, context) {
        Some(unpacked) => unpacked,
        None if let Some(why) = refused_read(instance, bundle, &context.client, key).await => {
            let message = format!("Bundle {bundle_name}: {}", why.message());
            match why {
                ReadRefused::Unsealed(_) => {
                    let because = Cause::new(CauseKind::RequesterUnsealed);
                    report.set_because(Reason::UnpackFailed, False, message, because);
                }
                ReadRefused::Denied(_) => report.set(Reason::UnpackFailed, False, message),
            }
            return Ok(Flow::Stop(Action::requeue(WAITING_FOR_OBJECT)));
        }
        None => match async {
            // Bounded: each unpack holds a download and an extraction, or
            // the ConfigMaps it reads.
            let _permit = if content::from_config_maps(&bundle.spec) {
                let mounts = bundle.spec.volume_mounts.len() as u32;
                let permits = mounts.clamp(1, super::super::context::CONFIG_MAP_READS);
                context.config_map_reads.acquire_many(permits).await
            } else {
                context.unpacks.acquire().await
            };
            content::unpack(
                &context.client,
                &bundle.spec,
                &context.store,
                &context.images,
                options,
            )
            .await
        }
        .await
        {
            Ok(unpacked) => unpacked,
            Err(error) => {
                let message = format!("Bundle {bundle_name}: {error}");
                let outcome = UnpackOutcome::failed(None, &message);
                bundle_status::record(home, bundle, outcome, report);
                match error.cause() {
                    Some(kind) => {
                        let because = Cause::new(kind);
                        report.set_because(Reason::UnpackFailed, False, message, because);
                    }
                    None => report.set(Reason::UnpackFailed, False, message),
                }
                let delay = context.unpack_failed(instance);
                tracing::info!(instance = %name, %error, retry_in = ?delay, "unpack failed");
                return Ok(Flow::Stop(Action::requeue(delay)));
            }
        },
    };
    Ok(Flow::Next(unpacked))
}

/// Whether `unpacked` is the content `bundle` pinned, if it pinned any.
pub(super) fn pin_holds<P>(
    instance: &Instance,
    bundle: &Bundle,
    unpacked: &Unpacked,
    context: &Context<P>,
    report: &mut Report,
) -> Flow<()> {
    // A Bundle's pin never moves: a source that now serves other content
    // is an error on the Bundle, not a new pin (and not new content under
    // an old approval).
    if let Some(message) = pin_moved(bundle, unpacked) {
        let because = Cause::new(CauseKind::ContentChangedAtSource);
        report.set_because(Reason::UnpackFailed, False, message, because);
        return Flow::Stop(Action::requeue(WAITING_FOR_OBJECT));
    }
    context.unpack_succeeded(instance);
    Flow::Next(())
}

/// Why the content just unpacked cannot be the Bundle's: its status pins
/// other content. `None` when there is no pin yet, or it matches.
fn pin_moved(bundle: &Bundle, unpacked: &Unpacked) -> Option<String> {
    let pinned = bundle.status.as_ref()?.source.as_ref()?;
    let digest = pinned.digest.as_deref()?;
    (digest != unpacked.digest.as_str()).then(|| {
        format!(
            "Bundle {}: the content of {} changed at its source: it was pinned at {digest} and \
             now is {}; a Bundle's content never changes, so nothing new is installed: create a \
             new Bundle (and approve it) for the new content",
            bundle.name_any(),
            unpacked.reference,
            unpacked.digest.as_str()
        )
    })
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
