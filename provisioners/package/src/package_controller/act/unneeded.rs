//! A ClusterPackage this provisioner installed as a dependency, which no
//! package needs any more: deleted (its finalizer uninstalls it).

use kube::ResourceExt as _;
use kube::api::DeleteParams;
use pakket_packages_api::conditions::PackageReason;

use super::super::status::Next;
use super::super::{Error, PackageContext, PackageObject};

/// Deletes it, and says so.
pub(super) async fn remove<K: PackageObject>(
    package: &K,
    context: &PackageContext,
) -> Result<Next, Error> {
    K::api(&context.info.client, package.namespace().as_deref())
        .delete(&package.name_any(), &DeleteParams::default())
        .await?;
    Err(Error::waiting(
        PackageReason::Pending,
        "installed as a dependency, and no package depends on it any more: removing it",
    ))
}
