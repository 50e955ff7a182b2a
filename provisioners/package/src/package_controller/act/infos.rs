//! The PackageInfos a package uses: the one of its version created when
//! missing, and the ones it no longer uses, and no other package does,
//! deleted.

use std::collections::BTreeMap;

use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt as _};
use pakket_packages_api::conditions::PackageReason;
use pakket_packages_api::{ClusterPackage, Package, PackageInfo, PackageInfoSpec, PackageStatus};

use super::super::observe::Source;
use super::super::status::{self, Next};
use super::super::{Error, PackageContext, PackageObject};
use crate::names;

/// Creates the PackageInfo of the version (one made meanwhile is
/// fine), records it, and waits for it to be read.
pub(super) async fn create<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    source: &Source,
    status: &mut PackageStatus,
) -> Result<Next, Error> {
    let wanted = package.common_spec().package_info;
    let mut info = PackageInfo::new(
        &source.info_name,
        PackageInfoSpec {
            name: wanted.name.clone(),
            version: Some(source.version.clone()),
            repository_name: wanted.repository_name.clone(),
        },
    );
    // The package's own labels too, so a controller limited by a selector
    // (a test's) sees the PackageInfos of the packages it sees.
    let mut labels: BTreeMap<String, String> = package.labels().clone();
    labels.insert(
        names::PACKAGE_LABEL.to_owned(),
        names::sanitized(&wanted.name, 63),
    );
    info.metadata.labels = Some(labels);
    let api: Api<PackageInfo> = Api::all(context.info.client.clone());
    match api.create(&PostParams::default(), &info).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    status::record_info(status, &source.info_name);
    Err(Error::waiting(
        PackageReason::Pending,
        format!("waiting for PackageInfo {} to be read", source.info_name),
    ))
}

/// Deletes the PackageInfos this package no longer uses (keeping `current`)
/// that no other package uses either.
pub(super) async fn cleanup<K: PackageObject>(
    package: &K,
    client: &Client,
    status: &mut PackageStatus,
    current: &str,
) -> Result<(), kube::Error> {
    let old: Vec<String> = status
        .owned_package_infos
        .iter()
        .filter(|name| name.as_str() != current)
        .cloned()
        .collect();
    if old.is_empty() {
        return Ok(());
    }
    let in_use = in_use(client, package.meta().uid.as_deref()).await?;
    let api: Api<PackageInfo> = Api::all(client.clone());
    for name in &old {
        if !in_use.contains(name) {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
    }
    status.owned_package_infos.retain(|name| name == current);
    Ok(())
}

/// Deletes the PackageInfos a deleted package used that no other package
/// uses (a failure is left to the next look).
pub(super) async fn forget<K: PackageObject>(
    package: &K,
    client: &Client,
) -> Result<(), kube::Error> {
    let in_use = in_use(client, package.meta().uid.as_deref()).await?;
    let infos: Api<PackageInfo> = Api::all(client.clone());
    for name in package
        .package_status()
        .map(|s| s.owned_package_infos.clone())
        .unwrap_or_default()
    {
        if !in_use.contains(&name) {
            let _ = infos.delete(&name, &DeleteParams::default()).await;
        }
    }
    Ok(())
}

/// The PackageInfos every package other than `except` (by UID) uses.
async fn in_use(client: &Client, except: Option<&str>) -> Result<Vec<String>, kube::Error> {
    let cluster = Api::<ClusterPackage>::all(client.clone())
        .list(&Default::default())
        .await?;
    let namespaced = Api::<Package>::all(client.clone())
        .list(&Default::default())
        .await?;
    let statuses = cluster
        .items
        .iter()
        .filter(|p| p.metadata.uid.as_deref() != except)
        .filter_map(|p| p.status.clone())
        .chain(
            namespaced
                .items
                .iter()
                .filter(|p| p.metadata.uid.as_deref() != except)
                .filter_map(|p| p.status.clone()),
        );
    Ok(statuses
        .flat_map(|status| status.owned_package_infos)
        .collect())
}
