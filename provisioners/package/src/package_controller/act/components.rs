//! A package's components: each a Package `<parent>-<installedName>` in
//! the parent's namespace (or the package's default namespace); the
//! package is ready when they are.

use kube::ResourceExt as _;
use pakket_api::{ConditionType, Instance};
use pakket_packages_api::conditions::PackageReason;

use super::super::mirror::condition_true;
use super::super::{Error, PackageContext, PackageObject, parent_key};
use super::installing::Install;
use crate::components::{self, Problem, Sealing};

/// Makes or updates the components; the package waits for them once its
/// own Instance is installed.
pub(super) async fn ensure<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    install: &Install,
    instance: &Instance,
) -> Result<(), Error> {
    if install.manifest.components.is_empty() {
        return Ok(());
    }
    let namespace = package
        .namespace()
        .or_else(|| install.manifest.default_namespace.clone())
        .ok_or_else(|| {
            Error::failed(
                PackageReason::UnsupportedFormat,
                format!(
                    "package {} has components and no defaultNamespace to put them in",
                    install.package
                ),
            )
        })?;
    let key = parent_key(package);
    let waiting = components::ensure(
        &context.info,
        &install.repository,
        (&key, &package.name_any()),
        &namespace,
        &install.manifest.components,
        package.labels(),
        Sealing {
            key: context.record_key.as_ref(),
            author: install.author.as_ref(),
        },
    )
    .await
    .map_err(|problem| match problem {
        Problem::NameTaken(message) => Error::failed(PackageReason::NameTaken, message),
        Problem::Failed(message) => Error::failed(PackageReason::InstallationFailed, message),
    })?;
    if !waiting.is_empty() && condition_true(instance, ConditionType::Installed) {
        return Err(Error::waiting(
            PackageReason::Pending,
            format!("waiting for its components: {}", waiting.join(", ")),
        ));
    }
    Ok(())
}
