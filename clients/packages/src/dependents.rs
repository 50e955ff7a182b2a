//! Which packages depend on which: every ClusterPackage and Package with
//! what its current package file says it needs. The package provisioner
//! keeps a dependency while something needs it, the webhooks refuse its
//! delete with the same words, and `kubectl instance why` names the
//! dependents.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::{Client, ResourceExt as _};

use pakket_packages_api::manifest::PackageManifest;
use pakket_packages_api::{
    ClusterPackage, INSTALLED_AS_DEPENDENCY_ANNOTATION, Package, PackageInfo, PackageStatus,
};

/// A package that depends on others, as seen from a dependency.
#[derive(Clone, Debug)]
pub struct Dependent {
    /// `ClusterPackage x` or `Package ns/x`.
    pub label: String,
    /// Its UID.
    pub uid: String,
    /// What it depends on (package name → range as written, if any).
    pub needs: BTreeMap<String, Option<String>>,
    /// Its installed version (status.version).
    pub version: Option<String>,
    /// The package it installs.
    pub package: String,
    /// Its name (ClusterPackages) for lookups.
    pub name: String,
    /// Whether it is Ready.
    pub ready: bool,
}

/// Every ClusterPackage and Package, with what its current package file
/// says it depends on.
pub async fn everyone(client: &Client) -> Result<Vec<Dependent>, kube::Error> {
    let infos: BTreeMap<String, PackageInfo> = Api::<PackageInfo>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .map(|info| (info.name_any(), info))
        .collect();
    let needs_of = |status: Option<&PackageStatus>| -> BTreeMap<String, Option<String>> {
        let Some(info) = status
            .and_then(|s| s.owned_package_infos.last())
            .and_then(|name| infos.get(name))
        else {
            return BTreeMap::new();
        };
        let manifest: Option<PackageManifest> = info
            .status
            .as_ref()
            .and_then(|s| s.manifest.clone())
            .and_then(|m| serde_json::from_value(m).ok());
        manifest
            .map(|m| {
                m.dependencies
                    .into_iter()
                    .map(|d| (d.name, d.version))
                    .collect()
            })
            .unwrap_or_default()
    };
    let ready = |status: Option<&PackageStatus>| {
        status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
    };
    // The one description of either kind; only the label differs.
    let dependent = |label: String,
                     metadata: &ObjectMeta,
                     package: &str,
                     status: Option<&PackageStatus>| Dependent {
        label,
        uid: metadata.uid.clone().unwrap_or_default(),
        needs: needs_of(status),
        version: status.and_then(|s| s.version.clone()),
        package: package.to_owned(),
        name: metadata.name.clone().unwrap_or_default(),
        ready: ready(status),
    };
    let mut all = Vec::new();
    for package in Api::<ClusterPackage>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
    {
        all.push(dependent(
            format!("ClusterPackage {}", package.name_any()),
            &package.metadata,
            &package.spec.package_info.name,
            package.status.as_ref(),
        ));
    }
    for package in Api::<Package>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
    {
        all.push(dependent(
            format!(
                "Package {}/{}",
                package.namespace().unwrap_or_default(),
                package.name_any()
            ),
            &package.metadata,
            &package.spec.package_info.name,
            package.status.as_ref(),
        ));
    }
    Ok(all)
}

/// Whether a package was installed as a dependency (or a component).
pub fn is_dependency(package: &impl kube::ResourceExt) -> bool {
    package
        .annotations()
        .get(INSTALLED_AS_DEPENDENCY_ANNOTATION)
        .is_some_and(|v| v == "true")
}

/// The packages (other than `uid`) that depend on `package`.
pub fn dependents_of<'a>(
    everyone: &'a [Dependent],
    package: &str,
    uid: &str,
) -> Vec<&'a Dependent> {
    everyone
        .iter()
        .filter(|d| d.uid != uid && d.needs.contains_key(package))
        .collect()
}

/// Why ClusterPackage `name` (of `package`, UID `uid`) must not go yet:
/// the packages that depend on it, unless another ClusterPackage of the
/// same package serves them. The webhooks refuse the delete with these
/// words; the controller keeps the package until they are gone.
pub fn deletion_refused(
    everyone: &[Dependent],
    name: &str,
    package: &str,
    uid: &str,
) -> Option<String> {
    let dependents = dependents_of(everyone, package, uid);
    let other_provider = everyone
        .iter()
        .any(|d| d.uid != uid && d.label.starts_with("ClusterPackage ") && d.package == package);
    if dependents.is_empty() || other_provider {
        return None;
    }
    let names: Vec<&str> = dependents.iter().map(|d| d.label.as_str()).collect();
    Some(format!(
        "ClusterPackage {name} ({package}) is needed by {}, which depend on {package}; delete them first",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dependent(label: &str, uid: &str, package: &str, needs: &[&str]) -> Dependent {
        Dependent {
            label: label.into(),
            uid: uid.into(),
            needs: needs.iter().map(|n| ((*n).to_owned(), None)).collect(),
            version: Some("v1.0.0".into()),
            package: package.into(),
            name: label.rsplit(['/', ' ']).next().unwrap().into(),
            ready: true,
        }
    }

    #[test]
    fn a_package_others_need_may_not_go_naming_them_unless_another_provides_it() {
        let cnpg = dependent("ClusterPackage cloudnative-pg", "1", "cloudnative-pg", &[]);
        let db = dependent("Package shop/db", "2", "postgresql", &["cloudnative-pg"]);
        assert_eq!(
            deletion_refused(
                &[cnpg.clone(), db.clone()],
                "cloudnative-pg",
                "cloudnative-pg",
                "1"
            )
            .unwrap(),
            "ClusterPackage cloudnative-pg (cloudnative-pg) is needed by Package shop/db, which depend on cloudnative-pg; delete them first"
        );
        assert_eq!(
            deletion_refused(
                std::slice::from_ref(&cnpg),
                "cloudnative-pg",
                "cloudnative-pg",
                "1"
            ),
            None
        );
        let second = dependent("ClusterPackage cnpg-2", "3", "cloudnative-pg", &[]);
        assert_eq!(
            deletion_refused(&[cnpg, db, second], "cloudnative-pg", "cloudnative-pg", "1"),
            None
        );
    }
}
