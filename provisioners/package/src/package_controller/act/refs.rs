//! What the package's Instance runs: its Bundle's refs (the package file,
//! the Helm chart pinned by the digest its repository gives, every
//! manifest) and its config (values, where Secret values come from,
//! transformations' values, the Helm release's name).

use kube::ResourceExt as _;
use pakket_packages_api::conditions::PackageReason::{
    InstallationFailed, SyncFailed, UnsupportedFormat,
};
use pakket_packages_client::repository;

use super::super::{Error, PackageContext, PackageObject};
use super::installing::Install;
use crate::provisioner::PackageConfig;
use crate::transformations;

/// The Bundle's refs: the package file, its chart, its manifests.
pub(super) async fn of(context: &PackageContext, install: &Install) -> Result<Vec<String>, Error> {
    let mut refs = vec![install.url.to_string()];
    if let Some(chart) = &install.manifest.helm {
        // The chart's archive, pinned by the digest its repository gives.
        let located = context
            .charts
            .locate(&context.info.repositories, chart)
            .await
            .map_err(|problem| {
                Error::failed(
                    SyncFailed,
                    format!("package {} {}: {problem}", install.package, install.version),
                )
            })?;
        refs.push(located);
    }
    for (index, file) in install.manifest.manifests.iter().enumerate() {
        let url = repository::manifest_url(&install.url, &file.url).map_err(|problem| {
            Error::failed(
                UnsupportedFormat,
                format!("manifests[{index}].url: {problem}"),
            )
        })?;
        refs.push(url.to_string());
    }
    Ok(refs)
}

/// The Instance's config; the Secret values are handed to the provisioner
/// in the process (the Instance says only where they come from).
pub(super) fn config<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    install: &Install,
) -> Result<PackageConfig, Error> {
    // Transformations read the package object itself (its name).
    let package_json = serde_json::to_value(package).map_err(|error| {
        Error::failed(InstallationFailed, format!("the package as JSON: {error}"))
    })?;
    let transformation_values =
        transformations::read(&install.manifest.transformations, &package_json).map_err(
            |problem| {
                Error::failed(
                    UnsupportedFormat,
                    format!("package {} {}: {problem}", install.package, install.version),
                )
            },
        )?;
    let given = &install.values;
    let instance_name = crate::names::instance(package.namespace().as_deref(), &package.name_any());
    context
        .secret_values
        .put(&instance_name, given.secrets.clone());
    Ok(PackageConfig {
        namespace: package.namespace(),
        secret_values: given
            .secrets
            .iter()
            .map(|(name, (source, _))| (name.clone(), source.clone()))
            .collect(),
        values: given.values.clone(),
        transformation_values,
        // The HelmRelease Glasskube makes is named after the package (a
        // ClusterPackage) or the Package.
        release_name: install
            .manifest
            .helm
            .as_ref()
            .map(|_| match package.namespace() {
                Some(_) => package.name_any(),
                None => install.package.clone(),
            }),
    })
}
