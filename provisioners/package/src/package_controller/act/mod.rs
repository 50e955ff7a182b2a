//! The action a plan names, one file each: the finalizer
//! ([`finalizer`]), an unneeded dependency removed ([`unneeded`]), the
//! PackageInfo made and the old ones cleaned up ([`infos`]), the install
//! ([`install`]: dependencies, the Bundle's refs, the Instance
//! ([`instance`]), components ([`components`])) and the uninstall
//! ([`finalize`]). An action changes the status value it is given; the
//! pass writes it once ([`super::status`]).

mod components;
mod finalize;
mod finalizer;
mod infos;
mod install;
mod installing;
mod instance;
mod refs;
mod unneeded;

use std::time::Duration;

use kube::runtime::controller::Action;
use pakket_packages_api::PackageStatus;
use pakket_packages_api::conditions::PackageReason;

use super::observe::{Observed, Source};
use super::plan::Plan;
use super::status::{self, Next};
use super::{Error, PackageContext, PackageObject};

/// How long a suspended package is left before it is looked at again.
const SUSPENDED: Duration = Duration::from_secs(300);

/// Does what `plan` says, with what was `observed`.
pub(super) async fn act<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    plan: Plan,
    observed: Observed,
    status: &mut PackageStatus,
) -> Result<Next, Error> {
    let source = match observed {
        Observed::Active(source) => Some(*source),
        _ => None,
    };
    match (plan, source) {
        (Plan::Finalize, _) => finalize::run(package, context, status).await,
        (Plan::AddFinalizer, _) => finalizer::add(package, context).await,
        (Plan::Suspend, _) => Ok(Next::Quiet(Action::requeue(SUSPENDED))),
        (Plan::RemoveUnneeded, _) => unneeded::remove(package, context).await,
        (Plan::CreateInfo, Some(source)) => infos::create(package, context, &source, status).await,
        (Plan::Fail { reason, message }, source) => {
            record(source.as_ref(), status);
            Err(Error::failed(reason, message))
        }
        (Plan::Wait { reason, message }, source) => {
            record(source.as_ref(), status);
            Err(Error::waiting(reason, message))
        }
        (Plan::Install, Some(source)) => install::run(package, context, source, status).await,
        (plan @ (Plan::CreateInfo | Plan::Install), None) => Err(Error::waiting(
            PackageReason::Pending,
            format!("{plan:?} without its source read; looked at again"),
        )),
    }
}

/// A PackageInfo that exists is the package's: recorded in its status.
fn record(source: Option<&Source>, status: &mut PackageStatus) {
    if let Some(source) = source
        && source.info.is_some()
    {
        status::record_info(status, &source.info_name);
    }
}
