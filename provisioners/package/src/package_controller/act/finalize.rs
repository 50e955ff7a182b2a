//! A package being deleted: kept while other packages depend on it; else
//! its components go first, then its Instance (the runtime uninstalls
//! what it installed), then its PackageInfos, then the finalizer.

use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::Action;
use pakket_api::Instance;
use pakket_packages_api::PackageStatus;
use pakket_packages_api::conditions::PackageReason;

use super::super::status::Next;
use super::super::{
    DEPENDENCY_RECHECK, Error, FINALIZER, PackageContext, PackageObject, WAITING, parent_key,
};
use super::{finalizer, infos};
use crate::conditions::{self, Readiness};
use crate::{components, made_here, names};

/// One step of the uninstall.
pub(super) async fn run<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    status: &mut PackageStatus,
) -> Result<Next, Error> {
    if !package.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Next::Quiet(Action::await_change()));
    }
    if let Some(words) = refused(package, context).await? {
        // Said on the status as stored (its generation is the one it was
        // last installed at, not the deletion's).
        *status = package.package_status().cloned().unwrap_or_default();
        conditions::set_readiness(
            &mut status.conditions,
            Readiness::Failed,
            PackageReason::InstallationFailed,
            format!("deleted, but kept: {words}"),
            package.meta().generation,
        );
        return Ok(Next::Written(Action::requeue(DEPENDENCY_RECHECK)));
    }
    // Its components go first (their objects live in its namespace).
    let key = parent_key(package);
    if !components::remove(&context.info.client, &key, context.record_key.as_ref()).await? {
        return Ok(Next::Quiet(Action::requeue(WAITING)));
    }
    let instance_name = names::instance(package.namespace().as_deref(), &package.name_any());
    if remove_instance(package, context, &instance_name).await? {
        return Ok(Next::Quiet(Action::requeue(WAITING)));
    }
    context.secret_values.forget(&instance_name);
    infos::forget(package, &context.info.client).await?;
    finalizer::remove(package, context).await?;
    Ok(Next::Quiet(Action::await_change()))
}

/// Why a ClusterPackage others depend on stays until they are gone (the
/// webhooks refuse the delete first, but fail open); `None`: it goes.
async fn refused<K: PackageObject>(
    package: &K,
    context: &PackageContext,
) -> Result<Option<String>, kube::Error> {
    if package.namespace().is_some() {
        return Ok(None);
    }
    let everyone = pakket_packages_client::dependents::everyone(&context.info.client).await?;
    Ok(pakket_packages_client::dependents::deletion_refused(
        &everyone,
        &package.name_any(),
        &package.common_spec().package_info.name,
        package.meta().uid.as_deref().unwrap_or_default(),
    ))
}

/// Deletes the Instance this provisioner made for the package, if there is
/// one (one of that name someone else made is theirs); whether it was
/// there, so the package waits for it to go.
async fn remove_instance<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    instance_name: &str,
) -> Result<bool, kube::Error> {
    let instances: Api<Instance> = Api::all(context.info.client.clone());
    let Some(instance) = instances.get_opt(instance_name).await? else {
        return Ok(false);
    };
    if !made_here::is_instance_of(
        &instance,
        K::KIND,
        package.namespace().as_deref(),
        &package.name_any(),
        context.record_key.as_ref(),
    ) {
        return Ok(false);
    }
    if instance.metadata.deletion_timestamp.is_none() {
        instances
            .delete(instance_name, &DeleteParams::default())
            .await?;
    }
    Ok(true)
}
