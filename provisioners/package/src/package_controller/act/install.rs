//! The install of a package whose values fit: its PackageInfo recorded
//! (before anything is made for it), its dependencies by seed 000's
//! decision tree, the Bundle's refs, the Instance, its components, then
//! the PackageInfos it no longer uses cleaned up. What it finds on the
//! way (a dependency not ready, a name someone else holds) stops it with
//! a typed reason.

use std::time::Duration;

use kube::ResourceExt as _;
use kube::runtime::controller::Action;
use pakket_api::ConditionType;
use pakket_packages_api::PackageStatus;
use pakket_packages_api::conditions::PackageReason;

use super::super::mirror::{self, condition_true};
use super::super::observe::Source;
use super::super::status::{self, Next};
use super::super::{DEPENDENCY_RECHECK, Error, PackageContext, PackageObject, WAITING};
use super::installing::Install;
use super::{components, infos, instance, refs};
use crate::dependencies;
use crate::names;

/// How long an installed, pinned package is left before it is looked at
/// again.
const INSTALLED: Duration = Duration::from_secs(300);

/// Installs `source`.
pub(super) async fn run<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    source: Source,
    status: &mut PackageStatus,
) -> Result<Next, Error> {
    let Some(install) = Install::of(source) else {
        return Err(Error::waiting(
            PackageReason::Pending,
            "its package file and values are not read yet",
        ));
    };
    if status::record_info(status, &install.info_name) {
        // Recorded before anything is made for it: a dependency created
        // below finds this package among its dependents at once (through
        // this PackageInfo), instead of removing itself as unneeded.
        status::write(&context.info.client, package, status).await?;
    }
    dependencies(package, context, &install, status).await?;
    let refs = refs::of(context, &install).await?;
    let config = refs::config(package, context, &install)?;
    let instance_name = names::instance(package.namespace().as_deref(), &package.name_any());
    let instance =
        instance::apply(package, context, &instance_name, &install, refs, &config).await?;
    status.version = Some(install.version.clone());
    status.instance = Some(instance_name);
    mirror::mirror(status, &instance, package.meta().generation);
    components::ensure(package, context, &install, &instance).await?;
    infos::cleanup(package, &context.info.client, status, &install.info_name).await?;
    let installed = condition_true(&instance, ConditionType::Installed);
    Ok(Next::Written(next_look(&install, context, installed)))
}

/// Its dependencies, by seed 000's decision tree: named in the status,
/// installed if missing; the install waits until they are ready.
async fn dependencies<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    install: &Install,
    status: &mut PackageStatus,
) -> Result<(), Error> {
    let verdict = dependencies::resolve(
        &context.info,
        &install.repository,
        package.meta().uid.as_deref().unwrap_or_default(),
        &install.manifest,
        package.labels(),
        context.record_key.as_ref(),
        install.author.as_ref(),
    )
    .await
    .map_err(|problem| Error::failed(PackageReason::InstallationFailed, problem))?;
    match verdict {
        dependencies::Verdict::Ready(names) => {
            status.dependencies = names;
            Ok(())
        }
        dependencies::Verdict::Waiting(names, why) => {
            status.dependencies = names;
            Err(Error::waiting(PackageReason::Pending, why))
        }
        dependencies::Verdict::Conflict(words) => {
            Err(Error::failed(PackageReason::InstallationFailed, words))
        }
    }
}

/// When an installed package looks again: soon if it is a dependency (it
/// goes soon after its last dependent), at the update interval if it
/// follows the latest version, rarely once installed, else soon.
fn next_look(install: &Install, context: &PackageContext, installed: bool) -> Action {
    if install.as_dependency {
        Action::requeue(DEPENDENCY_RECHECK)
    } else if !install.pinned {
        Action::requeue(context.update_interval)
    } else if installed {
        Action::requeue(INSTALLED)
    } else {
        Action::requeue(WAITING)
    }
}
