//! The Bundle step: the Bundle object the Instance names, or the spec it
//! embeds (whose status the Instance's own status keeps), and whether this
//! Instance may install it.

use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef as StoreKey;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Bundle, Cause, CauseKind, Instance, Reason};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::report::Report;
use super::*;
use crate::provisioner::Provisioner;

/// The Bundle `instance` installs and where its status lives, or why not.
pub(super) async fn find<'a, P: Provisioner>(
    instance: &Instance,
    bundles: &'a Api<Bundle>,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<(Bundle, bundle_status::Home<'a>)>, kube::Error> {
    // The Bundle: a Bundle object, or the spec the Instance embeds (whose
    // status the Instance's own status keeps).
    let bundle_name = &instance.spec.bundle.name;
    let (bundle, home) = match find_bundle(instance, bundles, context).await? {
        Lookup::Found(bundle) => (*bundle, bundle_status::Home::Object(bundles)),
        Lookup::Embedded(bundle) => (*bundle, bundle_status::Home::Embedded),
        Lookup::Missing => {
            let message = format!(
                "Bundle {bundle_name} does not exist; create it or embed its spec in spec.bundle.spec"
            );
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return Ok(Flow::Stop(Action::requeue(WAITING_FOR_OBJECT)));
        }
        Lookup::Refused { message, owner } => {
            let because = Cause::new(CauseKind::BundleOfAnotherInstance);
            let because = match owner {
                Some(owner) => because.with_owner(owner),
                None => because,
            };
            report.set_because(
                Reason::UnpackFailed,
                ConditionStatus::False,
                message,
                because,
            );
            return Ok(Flow::Stop(Action::requeue(WAITING_FOR_OBJECT)));
        }
    };

    Ok(Flow::Next((bundle, home)))
}

/// What looking for the Instance's Bundle found.
enum Lookup {
    /// The Bundle object, and this Instance may install it.
    Found(Box<Bundle>),
    /// The Bundle the Instance embeds (no object: see
    /// [`Instance::embedded_bundle`]).
    Embedded(Box<Bundle>),
    /// No such Bundle, and no embedded spec.
    Missing,
    /// A Bundle this Instance may not install: why, and the Instance it
    /// belongs to when it is another's.
    Refused {
        message: String,
        owner: Option<String>,
    },
}

/// The Instance's Bundle: the one it embeds, else the Bundle object it
/// names (from the watch cache, else from the apiserver).
///
/// Bundles are claimed so that one user's Instance never installs content
/// another user's Instance put there: embedded content exists only in its
/// Instance, and an embedded name that a Bundle object already has is
/// refused, so a name means one content to everyone who reads it. A Bundle
/// object nobody embeds (created on its own) may be named by any Instance
/// whose requester could `use` its class. A Bundle object an earlier
/// Pakket made from this Instance's embedded spec (its controller
/// ownerReference) is left to be deleted with the Instance.
async fn find_bundle<P>(
    instance: &Instance,
    bundles: &Api<Bundle>,
    context: &Context<P>,
) -> Result<Lookup, kube::Error> {
    let name = &instance.spec.bundle.name;
    let cached = context.bundles.get(&StoreKey::new(name));
    if let Some(embedded) = instance.embedded_bundle() {
        return Ok(match cached.filter(|object| !made_from(instance, object)) {
            Some(_) => Lookup::Refused {
                message: format!(
                    "Bundle {name} already exists and was not created from this Instance's embedded spec; \
                     choose another spec.bundle.name, or drop spec.bundle.spec to install the existing Bundle"
                ),
                owner: None,
            },
            None => Lookup::Embedded(Box::new(embedded)),
        });
    }
    let found = match cached {
        Some(bundle) => Some((*bundle).clone()),
        None => bundles.get_opt(name).await?,
    };
    let Some(bundle) = found else {
        return Ok(Lookup::Missing);
    };
    Ok(match claim(instance, &bundle) {
        Ok(()) => Lookup::Found(Box::new(bundle)),
        Err((message, owner)) => Lookup::Refused {
            message,
            owner: Some(owner),
        },
    })
}

/// Whether `bundle` was made from `instance`'s embedded spec (by a Pakket
/// that still made objects for embedded Bundles).
fn made_from(instance: &Instance, bundle: &Bundle) -> bool {
    let uid = instance.uid().unwrap_or_default();
    bundle
        .owner_references()
        .iter()
        .any(|owner| owner.kind == "Instance" && owner.controller == Some(true) && owner.uid == uid)
}

/// Whether `instance` (which names a Bundle object) may install `bundle`
/// (see [`find_bundle`]).
/// `Err` says why not, and names the Instance whose it is.
fn claim(instance: &Instance, bundle: &Bundle) -> Result<(), (String, String)> {
    let name = bundle.name_any();
    let owner = bundle
        .owner_references()
        .iter()
        .find(|owner| owner.kind == "Instance" && owner.controller == Some(true));
    if let Some(owner) = owner
        && owner.uid != instance.uid().unwrap_or_default()
    {
        let message = format!(
            "Bundle {name} belongs to Instance {} (it was created from that Instance's embedded spec), \
             so this Instance may not install it; name a Bundle of your own in spec.bundle.name",
            owner.name
        );
        return Err((message, owner.name.clone()));
    }
    Ok(())
}
