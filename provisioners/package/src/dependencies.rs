//! A package's dependencies, decided by Glasskube's decision tree (seed
//! 000, `pakket_engine::glasskube`), one dependency at a time:
//!
//! - a dependency that is installed (a ClusterPackage of that package) and
//!   fits is fulfilled; the package waits until it is ready;
//! - a missing one is installed as a ClusterPackage named after it,
//!   pinned at `latest(D)` (no range) or the highest version in the range,
//!   and marked installed-as-dependency;
//! - a conflict is never resolved by the provisioner (it never changes an
//!   installed package by itself): the package fails with the tree's words.
//!
//! A dependency is looked for in the package's own repository first, then
//! in every other PackageRepository by name: the first that lists it is
//! used (Glasskube fails when several do).
//!
//! A ClusterPackage installed as a dependency goes when no package depends
//! on it any more ([`dependents_of`]); until then it stays, even if the
//! dependent that brought it is gone but another needs it.

use std::collections::BTreeMap;

use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt as _};
use pakket_engine::glasskube::{self, ConflictResolution, DependencyCheck, Outcome};
use pakket_engine::{Range, Version};

use pakket_packages_api::manifest::{Dependency, PackageManifest, Versions};
use pakket_packages_api::{
    ClusterPackage, ClusterPackageSpec, DEPENDENCY_SEAL_ANNOTATION,
    INSTALLED_AS_DEPENDENCY_ANNOTATION, PackageInfoTemplate, PackageRepository,
};
use pakket_packages_client::dependents::{Dependent, dependents_of, everyone, is_dependency};
use pakket_packages_client::repository::{Endpoint, RepositoryClient};

/// Where a package's dependencies stand.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// All installed, fitting and ready; their ClusterPackages.
    Ready(Vec<String>),
    /// Some are being installed or are not ready yet: why.
    Waiting(Vec<String>, String),
    /// A conflict the tree does not resolve: its words.
    Conflict(String),
}

/// The identity the dependency seal names.
const INSTALLER: &str = "pakket-package/dependencies";

/// The seal for ClusterPackage `name` installed as a dependency for
/// package `package`.
fn dependency_seal(key: &pakket_api::RecordKey, name: &str, package: &str) -> String {
    pakket_api::generated_seal(
        key,
        DEPENDENCY_SEAL_ANNOTATION,
        INSTALLER,
        &pakket_api::record_object("ClusterPackage", name),
        pakket_api::value_digest(&serde_json::json!(package)),
    )
}

/// Whether this provisioner provably installed `package` (a ClusterPackage
/// of package `package_name`) as a dependency, so it may remove it once
/// nothing needs it: its seal verifies with `key`. Without a key, the
/// annotation is all there is.
pub fn installed_by_us_as_dependency(
    package: &impl kube::ResourceExt,
    package_name: &str,
    key: Option<&pakket_api::RecordKey>,
) -> bool {
    if !is_dependency(package) {
        return false;
    }
    let Some(key) = key else {
        return true;
    };
    pakket_api::is_generated_by(
        package.annotations(),
        key,
        DEPENDENCY_SEAL_ANNOTATION,
        INSTALLER,
        &pakket_api::record_object("ClusterPackage", &package.name_any()),
        &pakket_api::value_digest(&serde_json::json!(package_name)),
    )
}

/// Decides every dependency of `manifest` (the package with UID `uid`,
/// read from `repository`), installing missing ones as ClusterPackages
/// with `labels` and, sealed, the dependent's `author`.
pub async fn resolve(
    context: &crate::info_controller::Context,
    repository: &Endpoint,
    uid: &str,
    manifest: &PackageManifest,
    labels: &BTreeMap<String, String>,
    key: Option<&pakket_api::RecordKey>,
    author: Option<&pakket_api::CreatorRecord>,
) -> Result<Verdict, String> {
    if manifest.dependencies.is_empty() {
        return Ok(Verdict::Ready(Vec::new()));
    }
    let client = &context.client;
    let everyone = everyone(client).await.map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    let mut waiting = Vec::new();
    for dependency in &manifest.dependencies {
        let (found_in, versions) = versions_of(
            client,
            &context.repositories,
            repository,
            context.namespace.as_str(),
            &dependency.name,
        )
        .await?;
        let required = required_range(dependency)?;
        let installed = installed_of(&everyone, &dependency.name);
        if let Some(existing) = installed
            && existing.version.is_none()
        {
            waiting.push(format!("{} (being installed)", existing.label));
            names.push(existing.name.clone());
            continue;
        }
        let known = Known {
            everyone: &everyone,
            uid,
            versions: &versions,
            required: required.as_ref(),
            installed,
        };
        match decide(manifest, dependency, &known) {
            Outcome::Fulfilled => {
                let existing = installed.expect("fulfilled means installed");
                names.push(existing.name.clone());
                if !existing.ready {
                    waiting.push(format!("{} (not ready yet)", existing.label));
                }
            }
            Outcome::Install { version } => {
                let version = version.as_written();
                install(client, dependency, version, &found_in, labels, key, author).await?;
                names.push(dependency.name.clone());
                waiting.push(format!(
                    "ClusterPackage {} (installing {} {version} as a dependency)",
                    dependency.name, dependency.name,
                ));
            }
            conflict @ Outcome::Conflict { .. } => {
                let words = conflict_words(manifest, dependency, installed, &conflict);
                return Ok(Verdict::Conflict(words));
            }
        }
    }
    Ok(if waiting.is_empty() {
        Verdict::Ready(names)
    } else {
        Verdict::Waiting(
            names,
            format!("waiting for its dependencies: {}", waiting.join(", ")),
        )
    })
}

/// D as installed: a ClusterPackage of that package, the one named after
/// it first.
fn installed_of<'a>(everyone: &'a [Dependent], dependency: &str) -> Option<&'a Dependent> {
    let mut installed: Vec<&Dependent> = everyone
        .iter()
        .filter(|d| d.label.starts_with("ClusterPackage ") && d.package == dependency)
        .collect();
    installed.sort_by_key(|d| d.name != dependency);
    installed.first().copied()
}

/// What is known about one dependency when it is decided.
struct Known<'a> {
    /// Every package and what it needs.
    everyone: &'a [Dependent],
    /// The dependent's UID (it is not one of the others).
    uid: &'a str,
    /// The dependency's published versions.
    versions: &'a Versions,
    /// The range the dependent needs, if it names one.
    required: Option<&'a Range>,
    /// The dependency as installed, if it is.
    installed: Option<&'a Dependent>,
}

/// The range the dependent names for `dependency`, if any.
fn required_range(dependency: &Dependency) -> Result<Option<Range>, String> {
    dependency
        .version
        .as_deref()
        .map(|range| {
            Range::parse_glasskube(range).map_err(|error| {
                format!(
                    "dependency {}: version {range:?} is not a range: {error}",
                    dependency.name
                )
            })
        })
        .transpose()
}

/// Seed 000's tree for one dependency.
fn decide(manifest: &PackageManifest, dependency: &Dependency, known: &Known<'_>) -> Outcome {
    let available: Vec<Version> = known
        .versions
        .versions
        .iter()
        .filter_map(|v| Version::parse(&v.version).ok())
        .collect();
    let latest = known
        .versions
        .latest_version
        .as_deref()
        .and_then(|v| Version::parse(v).ok());
    let installed_version = known
        .installed
        .and_then(|d| d.version.as_deref())
        .and_then(|v| Version::parse(v).ok());
    let others: Vec<(String, Option<Range>)> =
        dependents_of(known.everyone, &dependency.name, known.uid)
            .into_iter()
            .map(|d| {
                let range = d.needs[&dependency.name]
                    .as_deref()
                    .and_then(|r| Range::parse_glasskube(r).ok());
                (d.label.clone(), range)
            })
            .collect();
    glasskube::decide(&DependencyCheck {
        package: &manifest.name,
        dependency: &dependency.name,
        required: known.required,
        installed: installed_version.as_ref(),
        other_dependents: &others,
        available: &available,
        latest: latest.as_ref(),
    })
}

/// The tree's words for a conflict, with how to resolve it when it can be.
fn conflict_words(
    manifest: &PackageManifest,
    dependency: &Dependency,
    installed: Option<&Dependent>,
    conflict: &Outcome,
) -> String {
    let hint = match conflict {
        Outcome::Conflict {
            resolution: ConflictResolution::UpdateDependency { to },
        } => format!(
            "; update ClusterPackage {} to {}",
            installed
                .map(|d| d.name.as_str())
                .unwrap_or(&dependency.name),
            to.as_written()
        ),
        _ => String::new(),
    };
    format!(
        "{} needs {}{}: {conflict}{hint}",
        manifest.name,
        dependency.name,
        dependency
            .version
            .as_deref()
            .map(|r| format!(" {r}"))
            .unwrap_or_default(),
    )
}

/// The repository that lists `package` (the dependent's own first, then
/// every other by name) and its versions.
async fn versions_of(
    client: &Client,
    repositories: &RepositoryClient,
    own: &Endpoint,
    credentials_namespace: &str,
    package: &str,
) -> Result<(String, pakket_packages_api::manifest::Versions), String> {
    if let Ok(versions) = repositories.versions(own, package).await {
        return Ok((own.name.clone(), versions));
    }
    let mut others = Api::<PackageRepository>::all(client.clone())
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?
        .items;
    others.sort_by_key(|r| r.name_any());
    for other in others.iter().filter(|r| r.name_any() != own.name) {
        let Ok(endpoint) = crate::credentials::endpoint(client, other, credentials_namespace).await
        else {
            continue;
        };
        if let Ok(versions) = repositories.versions(&endpoint, package).await {
            return Ok((endpoint.name, versions));
        }
    }
    Err(format!(
        "dependency {package} is in no PackageRepository (looked in {} first, then every other)",
        own.name
    ))
}

/// Creates ClusterPackage `dependency.name`, pinned at `version`, marked
/// installed-as-dependency. One of that name for another package is a
/// conflict, never taken over.
async fn install(
    client: &Client,
    dependency: &Dependency,
    version: &str,
    repository: &str,
    labels: &BTreeMap<String, String>,
    key: Option<&pakket_api::RecordKey>,
    author: Option<&pakket_api::CreatorRecord>,
) -> Result<(), String> {
    let api: Api<ClusterPackage> = Api::all(client.clone());
    let mut package = ClusterPackage::new(
        &dependency.name,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: dependency.name.clone(),
                version: Some(version.to_owned()),
                repository_name: Some(repository.to_owned()),
            },
            values: BTreeMap::new(),
            suspend: false,
        },
    );
    package.metadata.labels = Some(labels.clone());
    let mut annotations = BTreeMap::from([(
        INSTALLED_AS_DEPENDENCY_ANNOTATION.to_owned(),
        "true".to_owned(),
    )]);
    // The dependent's author asked for it too: her record, sealed for
    // this ClusterPackage and spec (the webhook takes it from this
    // process, a delegate, only).
    if let Some(key) = key {
        annotations.insert(
            DEPENDENCY_SEAL_ANNOTATION.to_owned(),
            dependency_seal(key, &dependency.name, &dependency.name),
        );
    }
    if let Some((key, person)) = key.zip(author) {
        let spec = serde_json::to_value(&package.spec).map_err(|e| e.to_string())?;
        let sealed = person.sealed_for(
            key,
            pakket_api::LAST_CHANGED_BY_ANNOTATION,
            &pakket_api::record_object("ClusterPackage", &dependency.name),
            pakket_api::value_digest(&spec),
        );
        annotations.insert(
            pakket_api::LAST_CHANGED_BY_ANNOTATION.to_owned(),
            sealed.to_annotation(),
        );
    }
    package.metadata.annotations = Some(annotations);
    match api.create(&PostParams::default(), &package).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Err(format!(
            "ClusterPackage {} exists for another package; rename it so that {} can be installed as a dependency",
            dependency.name, dependency.name
        )),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sealed_dependency_is_one_this_provisioner_removes() {
        let key = pakket_api::RecordKey::from_bytes(&[5; 32]).unwrap();
        let made = |name: &str, annotations: &[(&str, String)]| {
            let mut package = ClusterPackage::new(
                name,
                ClusterPackageSpec {
                    package_info: PackageInfoTemplate {
                        name: "cloudnative-pg".into(),
                        version: Some("v1.25.0+1".into()),
                        repository_name: None,
                    },
                    values: BTreeMap::new(),
                    suspend: false,
                },
            );
            package.metadata.annotations = Some(
                annotations
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), value.clone()))
                    .collect(),
            );
            package
        };
        let marked = (INSTALLED_AS_DEPENDENCY_ANNOTATION, "true".to_owned());
        // The annotation alone, as anyone who may write the object sets it.
        let claimed = made("cloudnative-pg", std::slice::from_ref(&marked));
        assert!(!installed_by_us_as_dependency(
            &claimed,
            "cloudnative-pg",
            Some(&key)
        ));
        let seal = (
            DEPENDENCY_SEAL_ANNOTATION,
            dependency_seal(&key, "cloudnative-pg", "cloudnative-pg"),
        );
        let sealed = made("cloudnative-pg", &[marked.clone(), seal.clone()]);
        assert!(installed_by_us_as_dependency(
            &sealed,
            "cloudnative-pg",
            Some(&key)
        ));
        // The seal copied onto another ClusterPackage.
        let copied = made("team-db", &[marked, seal]);
        assert!(!installed_by_us_as_dependency(
            &copied,
            "cloudnative-pg",
            Some(&key)
        ));
    }
}
