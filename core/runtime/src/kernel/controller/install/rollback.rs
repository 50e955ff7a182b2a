//! The automatic rollback (class parameter `rollbackOnFailure`): once the
//! newest revision does not roll out, the content of the revision that
//! served before it runs again until the Instance's spec changes.
//!
//! What runs again is exactly what was approved then: the content comes
//! from the store by the revision's digest (never fetched again, so a tag
//! that moved brings nothing new), and its render must have the digest the
//! revision recorded. Then the approval that revision had covers it, as an
//! approval covers exactly the content approved; anything else (content no
//! longer stored, a Bundle that pins other content, a render that changed
//! with a new provisioner version) makes no rollback, says why, and leaves
//! the Instance as it is. The record it reads is the runtime's own: the
//! admission webhook lets only holders of `approve` change it.

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef as StoreKey;
use pakket_api::condition::ConditionStatus;
use pakket_api::{
    Bundle, BundleStatus, BundleTemplate, Instance, PinnedSource, Reason, Revision, UnpackPhase,
};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::report::Report;
use crate::content::Unpacked;
use crate::store::Digest;

/// The content an automatic rollback installs: the Instance as if its spec
/// named the earlier revision's Bundle (the steps after this one read the
/// Bundle from the spec), that Bundle, and its stored content.
pub(super) struct Target<'a> {
    pub instance: Instance,
    pub bundle: Bundle,
    pub home: bundle_status::Home<'a>,
    pub unpacked: Unpacked,
}

/// The rollback's content, or why there is none (the caller records that
/// the rollback is not possible).
pub(super) async fn target<'a, P>(
    instance: &Instance,
    revision: &Revision,
    bundles: &'a kube::Api<Bundle>,
    context: &Context<P>,
) -> Result<Target<'a>, String> {
    let number = revision.number;
    let digest = Digest::parse(&revision.digest)
        .map_err(|_| format!("revision {number} records no content digest"))?;
    let (bundle, home) = match &revision.bundle_spec {
        Some(spec) => {
            // Embedded content has no object: its pin is the revision's.
            let mut bundle = Bundle::new(&revision.bundle, spec.clone());
            bundle.status = Some(BundleStatus {
                unpacked: UnpackPhase::Done,
                source: Some(PinnedSource {
                    reference: spec.refs.first().cloned().unwrap_or_default(),
                    digest: Some(revision.digest.clone()),
                    commit: None,
                }),
                ..BundleStatus::default()
            });
            (bundle, bundle_status::Home::Embedded)
        }
        None => (
            object_bundle(revision, bundles, context).await?,
            bundle_status::Home::Object(bundles),
        ),
    };
    let dir = context.store.get(&digest).ok_or_else(|| {
        format!(
            "revision {number}'s content ({}) is no longer in the provisioner's store",
            revision.digest
        )
    })?;
    let reference = bundle
        .status
        .as_ref()
        .and_then(|status| status.source.as_ref())
        .map(|source| source.reference.clone())
        .unwrap_or_default();
    let mut as_if = instance.clone();
    as_if.spec.bundle = BundleTemplate {
        name: revision.bundle.clone(),
        spec: revision.bundle_spec.clone(),
    };
    Ok(Target {
        instance: as_if,
        bundle,
        home,
        unpacked: Unpacked {
            reference,
            digest,
            dir,
            commit: None,
        },
    })
}

/// The revision's Bundle object, while it still pins the revision's
/// content.
async fn object_bundle<P>(
    revision: &Revision,
    bundles: &kube::Api<Bundle>,
    context: &Context<P>,
) -> Result<Bundle, String> {
    let number = revision.number;
    let cached = context
        .bundles
        .get(&StoreKey::new(&revision.bundle))
        .map(|bundle| (*bundle).clone());
    let bundle = match cached {
        Some(bundle) => bundle,
        None => bundles
            .get_opt(&revision.bundle)
            .await
            .map_err(|error| format!("reading Bundle {}: {error}", revision.bundle))?
            .ok_or_else(|| format!("Bundle {} no longer exists", revision.bundle))?,
    };
    let pinned = bundle
        .status
        .as_ref()
        .and_then(|status| status.source.as_ref())
        .and_then(|source| source.digest.as_deref());
    if pinned != Some(revision.digest.as_str()) {
        return Err(format!(
            "Bundle {} now pins {} and revision {number} ran {}",
            revision.bundle,
            pinned.unwrap_or("no content"),
            revision.digest
        ));
    }
    Ok(bundle)
}

/// Whether `rendered` (the render digest of the rollback's content today)
/// is what the revision recorded: only then does its approval cover it.
pub(super) fn render_unchanged(revision: &Revision, rendered: &str) -> Result<(), String> {
    match revision.rendered.as_deref() {
        Some(recorded) if recorded == rendered => Ok(()),
        Some(recorded) => Err(format!(
            "its content renders to other objects today ({rendered}) than revision {} ran ({recorded}), \
             with a new provisioner version or other cluster facts; an approval covers exactly \
             the objects approved",
            revision.number
        )),
        None => Err(format!(
            "revision {} recorded no render digest to compare with",
            revision.number
        )),
    }
}

/// Who approved what the rollback applies: the revision's approval.
pub(super) fn approved_by(revision: &Revision) -> String {
    let by = if revision.approved_by.is_empty() {
        "no one recorded".to_owned()
    } else {
        revision.approved_by.clone()
    };
    let text = format!(
        "rollback to revision {}, under its approval ({by})",
        revision.number
    );
    text.chars().take(512).collect()
}

/// Says in `Installed` that the spec's content is not installed: it was
/// rolled back, and what runs instead (once the rollback's objects are
/// applied).
pub(super) fn report_rolled_back(instance: &Instance, report: &mut Report, revision: &Revision) {
    let name = instance.name_any();
    let why = report
        .status
        .automatic_rollback
        .as_ref()
        .map(|rollback| rollback.message.clone())
        .unwrap_or_default();
    report.set(
        Reason::RolledBack,
        ConditionStatus::False,
        format!(
            "Bundle {} is not installed: {why}. Revision {}'s objects run; change the spec to try again (a new Bundle, or `kubectl instance rollback {name}`)",
            instance.spec.bundle.name, revision.number
        ),
    );
}
