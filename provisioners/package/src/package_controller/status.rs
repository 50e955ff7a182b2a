//! The one writer of a package's status: what a pass ends with is written
//! here, once, whole, with server-side apply (and, before the install
//! makes anything, the PackageInfo it records; see [`record_info`]). A
//! name someone else holds is also said as a Warning Event, once.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Client, ResourceExt as _};
use pakket_packages_api::PackageStatus;
use pakket_packages_api::conditions::PackageReason;
use serde_json::json;

use super::{Error, MANAGER, PackageContext, PackageObject, WAITING};
use crate::conditions::{self, Readiness};

/// How soon a failed package looks again (the world may change).
const FAILED_RETRY: Duration = Duration::from_secs(30);

/// How a pass that did not stop ends.
#[derive(Debug)]
pub(super) enum Next {
    /// Nothing is said on the status.
    Quiet(Action),
    /// The status is written (when it changed), then this.
    Written(Action),
}

/// The status a pass starts from: the stored one, at this generation.
pub(super) fn base<K: PackageObject>(package: &K) -> PackageStatus {
    let mut status = package.package_status().cloned().unwrap_or_default();
    status.observed_generation = package.meta().generation;
    status
}

/// Records that the package uses PackageInfo `name`; whether it is new.
pub(super) fn record_info(status: &mut PackageStatus, name: &str) -> bool {
    if status.owned_package_infos.iter().any(|owned| owned == name) {
        return false;
    }
    status.owned_package_infos.push(name.to_owned());
    true
}

/// Ends the pass: `Failed` or `Pending` as an error says (a Warning Event
/// for a name someone else holds, when it is new), the status written if
/// it changed, and when to look again.
pub(super) async fn conclude<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    mut status: PackageStatus,
    result: Result<Next, Error>,
) -> Result<Action, kube::Error> {
    let generation = package.meta().generation;
    let next = match result {
        Ok(Next::Quiet(action)) => return Ok(action),
        Ok(Next::Written(action)) => action,
        Err(Error::Api(error)) => return Err(error),
        Err(Error::Failed { reason, message }) => {
            if reason == PackageReason::NameTaken && !already_said(package, &message) {
                warn(context, package, reason, &message).await;
            }
            let failed = Readiness::Failed;
            conditions::set_readiness(&mut status.conditions, failed, reason, message, generation);
            Action::requeue(FAILED_RETRY)
        }
        Err(Error::Waiting { reason, message }) => {
            let pending = Readiness::Pending;
            conditions::set_readiness(&mut status.conditions, pending, reason, message, generation);
            Action::requeue(WAITING)
        }
    };
    write(&context.info.client, package, &status).await?;
    Ok(next)
}

/// Writes `status` on `package` if it differs from what it has.
pub(super) async fn write<K: PackageObject>(
    client: &Client,
    package: &K,
    status: &PackageStatus,
) -> Result<(), kube::Error> {
    if package.package_status() == Some(status) {
        return Ok(());
    }
    let namespace = package.namespace();
    let mut object = json!({
        "apiVersion": format!("{}/{}", pakket_packages_api::GROUP, pakket_packages_api::VERSION),
        "kind": K::KIND,
        "status": status,
    });
    if let Some(namespace) = &namespace {
        object["metadata"] = json!({ "namespace": namespace });
    }
    K::api(client, namespace.as_deref())
        .patch_status(
            &package.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(object),
        )
        .await?;
    Ok(())
}

/// Whether the package's conditions already say `message` (an Event is
/// published when it is new, not at every retry).
fn already_said<K: PackageObject>(package: &K, message: &str) -> bool {
    package
        .package_status()
        .is_some_and(|status| status.conditions.iter().any(|c| c.message == message))
}

/// A Warning Event on `package`; a failure to publish is only logged.
async fn warn<K: PackageObject>(
    context: &PackageContext,
    package: &K,
    reason: PackageReason,
    note: &str,
) {
    let event = Event {
        type_: EventType::Warning,
        reason: reason.as_str().into(),
        note: Some(note.chars().take(1000).collect()),
        action: "Install".into(),
        secondary: None,
    };
    if let Err(error) = context
        .recorder
        .publish(&event, &package.object_ref(&()))
        .await
    {
        tracing::debug!(%error, "publishing a package Event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_packages_api::ClusterPackage;

    #[test]
    fn a_pass_starts_from_the_stored_status_at_this_generation() {
        let mut package = ClusterPackage::test("a").with_status(PackageStatus {
            version: Some("v1".into()),
            observed_generation: Some(1),
            ..PackageStatus::default()
        });
        package.metadata.generation = Some(4);
        let status = base(&package);
        assert_eq!(status.version.as_deref(), Some("v1"));
        assert_eq!(status.observed_generation, Some(4));
    }

    #[test]
    fn a_package_info_is_recorded_once() {
        let mut status = PackageStatus::default();
        assert!(record_info(&mut status, "a-v1"));
        assert!(!record_info(&mut status, "a-v1"));
        assert_eq!(status.owned_package_infos, ["a-v1"]);
    }
}
