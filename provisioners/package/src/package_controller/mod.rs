//! The package controller (seed 001's first flowchart), for ClusterPackages
//! and Packages alike: a pinned package gets the PackageInfo of its
//! version; an unpinned one the PackageInfo of the repository's latest
//! version, looked up again every `--update-interval`, so it moves when the
//! repository publishes a newer one. Once the PackageInfo is ready, the
//! package becomes one Instance on the shared runtime (its Bundle's refs:
//! the package.yaml, then every manifest, each pinned by digest once
//! fetched), its values checked first; then the PackageInfos it no longer
//! uses, and no other package does, are deleted.
//!
//! A finalizer keeps the package until its Instance (and so everything
//! installed) is gone.
//!
//! One reconcile is observe, plan, act, as the Instance kernel's
//! (`core/runtime/src/kernel/controller/install/`):
//!
//! - `observe`: every read that decides what to do, once: the object,
//!   whether a package it was installed for still needs it, the
//!   repository and version, the PackageInfo, its package file and the
//!   values; a read that cannot go on stops the pass with a typed reason
//!   ([`Error`]);
//! - `plan`: one pure function names the next action, a row of its table
//!   test each;
//! - `act`: the action, one file each (the finalizer, removal of an
//!   unneeded dependency, the PackageInfo, the install with its
//!   dependencies, Instance and components, the uninstall);
//! - `status`: the one writer of the package's status, and of the
//!   Warning Event a person must see; `mirror` turns the Instance's
//!   conditions into the package's, purely.

// A step is short enough to read at once: a new behaviour is a new plan
// arm and its own function, not a longer one (threshold in clippy.toml).
#![deny(clippy::too_many_lines)]

mod act;
mod error;
mod mirror;
mod object;
mod observe;
mod plan;
mod status;
mod values_from;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use pakket_api::Instance;
use pakket_packages_api::PackageInfo;
use pakket_packages_api::conditions::PackageReason;

use crate::charts::ChartLocator;
use crate::info_controller;
use crate::names;
use crate::secret_values::SecretValues;
pub use error::Error;
pub use object::{PackageObject, author};

/// The field manager of what this controller writes.
pub const MANAGER: &str = "pakket-package";
/// Keeps a package until its Instance is gone.
pub const FINALIZER: &str = "packages.pakket.dev/uninstall";
/// How soon a package waiting for its PackageInfo or Instance looks again.
const WAITING: Duration = Duration::from_secs(2);
/// The reason (and Warning Event) when a name the package needs is held by
/// an object pakket-package did not make for it.
pub const NAME_TAKEN: &str = PackageReason::NameTaken.as_str();
/// How often a package installed as a dependency looks for dependents.
const DEPENDENCY_RECHECK: Duration = Duration::from_secs(5);

/// What the package controllers need.
pub struct PackageContext {
    /// The repository side (client, credentials' namespace).
    pub info: Arc<info_controller::Context>,
    /// The ProvisionerClass of the Instances packages become.
    pub class: String,
    /// How often an unpinned package looks for a newer version.
    pub update_interval: Duration,
    /// Verifies who wrote each package (the webhook's sealed record) and
    /// seals that person on what is made for the package, so approval
    /// `UserPermission` asks about her rights. Without it, what is made
    /// carries no requester, and a person approves.
    pub record_key: Option<pakket_api::RecordKey>,
    /// Finds Helm charts in their repositories.
    pub charts: ChartLocator,
    /// Values read from Secrets, handed to the provisioner.
    pub secret_values: Arc<SecretValues>,
    /// Publishes the Events a person must see (a name someone else holds).
    pub recorder: kube::runtime::events::Recorder,
}

/// Runs the controller of kind `K` until the process ends.
pub async fn run<K: PackageObject>(context: Arc<PackageContext>, selector: Option<String>) {
    let config = match selector {
        Some(selector) => watcher::Config::default().labels(&selector),
        None => watcher::Config::default(),
    };
    let client = context.info.client.clone();
    let controller = Controller::new(K::api(&client, None), config.clone());
    let packages = controller.store();
    let by_info = packages.clone();
    controller
        // The Instance a package became: its conditions are the package's.
        .watches(
            Api::<Instance>::all(client.clone()),
            watcher::Config::default().labels(&format!("{}={}", names::KIND_LABEL, K::KIND)),
            |instance| {
                let annotations = instance.annotations();
                let name = annotations.get(names::NAME_ANNOTATION)?;
                let mut reference = ObjectRef::<K>::new(name);
                if let Some(namespace) = annotations.get(names::NAMESPACE_ANNOTATION) {
                    reference = reference.within(namespace);
                }
                Some(reference)
            },
        )
        // A PackageInfo read: the packages of its package name.
        .watches(
            Api::<PackageInfo>::all(client.clone()),
            config,
            move |info| {
                by_info
                    .state()
                    .into_iter()
                    .filter(|package| package.common_spec().package_info.name == info.spec.name)
                    .map(|package| ObjectRef::from_obj(&*package))
                    .collect::<Vec<_>>()
            },
        )
        .run(reconcile::<K>, error_policy::<K>, context)
        .for_each(|_| async {})
        .await;
}

/// What reaches here is an apiserver error (a stop with a reason is said
/// on the package instead): logged with its label, looked at again soon.
fn error_policy<K: PackageObject>(
    package: Arc<K>,
    error: &Error,
    _: Arc<PackageContext>,
) -> Action {
    tracing::warn!(
        kind = K::KIND,
        package = %package.name_any(),
        label = error.metric_label(),
        %error,
        "reconciling a package"
    );
    Action::requeue(Duration::from_secs(5))
}

/// One pass: observe, plan, act, and the status written once.
async fn reconcile<K: PackageObject>(
    package: Arc<K>,
    context: Arc<PackageContext>,
) -> Result<Action, Error> {
    let package = &*package;
    let mut status = status::base(package);
    let result = match observe::observe(package, &context).await {
        Ok(observed) => {
            let next = plan::plan(&observed);
            tracing::debug!(kind = K::KIND, package = %package.name_any(), ?next, "planned");
            act::act(package, &context, next, observed, &mut status).await
        }
        Err(error) => Err(error),
    };
    Ok(status::conclude(package, &context, status, result).await?)
}

/// The key of `package` among its components' parents.
fn parent_key<K: PackageObject>(package: &K) -> String {
    crate::components::parent_key(
        K::KIND,
        package.meta().namespace.as_deref(),
        &package.name_any(),
    )
}
