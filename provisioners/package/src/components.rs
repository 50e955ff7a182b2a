//! Components: packages installed as parts of another, as Glasskube
//! installs them. Each is a namespaced Package `<parent>-<installedName or
//! name>` in the parent's namespace (a ClusterPackage's: its
//! `defaultNamespace`, made with it), at the highest version its range
//! allows, with the values the parent's package file gives it, marked
//! installed-as-dependency and labelled with its parent, so it goes with
//! the parent. The parent is ready when its components are. Only a
//! component this provisioner sealed for the parent counts as one, is
//! waited for or deleted ([`crate::made_here`]): a Package someone else
//! labelled so is never taken, and a name someone else holds is said.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt as _};
use pakket_engine::{Range, Version};

use crate::made_here;
use crate::names;
use pakket_packages_api::conditions::ReadinessType;
use pakket_packages_api::manifest::Component;
use pakket_packages_api::{
    INSTALLED_AS_DEPENDENCY_ANNOTATION, Package, PackageInfoTemplate, PackageSpec,
    ValueConfiguration,
};
use pakket_packages_client::repository::{Endpoint, RepositoryClient};

/// On component Packages: the parent's `<kind>.<namespace>.<name>`
/// (kept beside the seal that vouches for it, in [`crate::made_here`]).
pub use crate::made_here::PARENT_LABEL;

/// The parent label's value for a package.
pub fn parent_key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    names::sanitized(&format!("{kind}.{}.{name}", namespace.unwrap_or("")), 63)
}

/// Why the components cannot be made.
#[derive(Debug)]
pub enum Problem {
    /// A component's name is held by a Package not made for the parent.
    NameTaken(String),
    /// Anything else, in words.
    Failed(String),
}

impl From<String> for Problem {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

/// What new components are sealed with: the record key (as made for the
/// parent) and the parent's author (her record).
#[derive(Clone, Copy)]
pub struct Sealing<'a> {
    /// The record key; without it nothing is sealed.
    pub key: Option<&'a pakket_api::RecordKey>,
    /// Who asked for the parent, if her record verified.
    pub author: Option<&'a pakket_api::CreatorRecord>,
}

/// Where the components stand: `Ok(waiting)` lists those not ready yet.
/// New ones are sealed with `key` as made for the parent and carry the
/// parent's `author`, sealed.
pub async fn ensure(
    context: &crate::info_controller::Context,
    repository: &Endpoint,
    parent: (&str, &str),
    namespace: &str,
    components: &[Component],
    labels: &BTreeMap<String, String>,
    sealing: Sealing<'_>,
) -> Result<Vec<String>, Problem> {
    let (parent_key, parent_name) = parent;
    let client = &context.client;
    if Api::<Namespace>::all(client.clone())
        .get_opt(namespace)
        .await
        .map_err(|e| e.to_string())?
        .is_none()
    {
        return Ok(vec![format!(
            "namespace {namespace} (made with the package)"
        )]);
    }
    let api: Api<Package> = Api::namespaced(client.clone(), namespace);
    let parent = Parent {
        key: parent_key,
        namespace,
        labels,
        sealing,
    };
    let mut waiting = Vec::new();
    for component in components {
        let name = component_name(parent_name, component);
        let Some(existing) = api.get_opt(&name).await.map_err(|e| e.to_string())? else {
            let version = version_for(&context.repositories, repository, component).await?;
            let package = parent.component(component, &name, version, &repository.name)?;
            match api.create(&PostParams::default(), &package).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(error.to_string().into()),
            }
            waiting.push(format!("Package {namespace}/{name} (being installed)"));
            continue;
        };
        if !made_here::is_component_of(&existing, parent_key, sealing.key) {
            return Err(Problem::NameTaken(taken_message(
                &component.name,
                namespace,
                &name,
            )));
        }
        if !is_ready(&existing) {
            waiting.push(format!("Package {namespace}/{name}"));
        }
    }
    Ok(waiting)
}

/// A component's Package name: `<parent>-<installedName or name>`.
fn component_name(parent_name: &str, component: &Component) -> String {
    names::sanitized(
        &format!(
            "{parent_name}-{}",
            component
                .installed_name
                .as_deref()
                .unwrap_or(&component.name)
        ),
        63,
    )
}

/// Whether a Package says `Ready`.
fn is_ready(package: &Package) -> bool {
    package.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == ReadinessType::Ready.as_str() && c.status == "True")
    })
}

/// What a parent's components are made with.
struct Parent<'a> {
    /// Its key (the parent label's value).
    key: &'a str,
    /// Where its components go.
    namespace: &'a str,
    /// Its labels, which its components carry too.
    labels: &'a BTreeMap<String, String>,
    /// What new components are sealed with.
    sealing: Sealing<'a>,
}

impl Parent<'_> {
    /// The Package `name` of `component` at `version`, from `repository`.
    fn component(
        &self,
        component: &Component,
        name: &str,
        version: String,
        repository: &str,
    ) -> Result<Package, Problem> {
        let values: BTreeMap<String, ValueConfiguration> = component
            .values
            .iter()
            .map(|(key, value)| {
                serde_json::from_value(value.clone())
                    .map(|value| (key.clone(), value))
                    .map_err(|error| {
                        format!("components[{}].values.{key}: {error}", component.name)
                    })
            })
            .collect::<Result<_, _>>()?;
        let mut package = Package::new(
            name,
            PackageSpec {
                package_info: PackageInfoTemplate {
                    name: component.name.clone(),
                    version: Some(version),
                    repository_name: Some(repository.to_owned()),
                },
                values,
                suspend: false,
            },
        );
        let mut component_labels = self.labels.clone();
        component_labels.insert(PARENT_LABEL.into(), self.key.into());
        package.metadata.labels = Some(component_labels);
        package.metadata.annotations = Some(self.annotations(&package, name)?);
        Ok(package)
    }

    /// A component's annotations: installed as a dependency, this
    /// provisioner's seal, and the parent's author sealed as its requester.
    fn annotations(
        &self,
        package: &Package,
        name: &str,
    ) -> Result<BTreeMap<String, String>, Problem> {
        let Sealing { key, author } = self.sealing;
        let namespace = self.namespace;
        let mut annotations = BTreeMap::from([(
            INSTALLED_AS_DEPENDENCY_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]);
        if let Some(key) = key {
            annotations.insert(
                made_here::COMPONENT_SEAL_ANNOTATION.to_owned(),
                made_here::component_seal(key, namespace, name, self.key),
            );
        }
        // The parent's author asked for it: her record, sealed for this
        // Package and spec (taken from this process, a delegate, only).
        if let Some((key, person)) = key.zip(author) {
            let spec = serde_json::to_value(&package.spec).map_err(|e| e.to_string())?;
            let sealed = person.sealed_for(
                key,
                pakket_api::LAST_CHANGED_BY_ANNOTATION,
                &pakket_api::record_object("Package", &format!("{namespace}/{name}")),
                pakket_api::value_digest(&spec),
            );
            annotations.insert(
                pakket_api::LAST_CHANGED_BY_ANNOTATION.to_owned(),
                sealed.to_annotation(),
            );
        }
        Ok(annotations)
    }
}

/// What the parent says when a component's name is held by a Package
/// pakket-package did not make for it (a label saying so is no proof).
fn taken_message(component: &str, namespace: &str, name: &str) -> String {
    format!(
        "component {component}: Package {namespace}/{name} exists and pakket-package did not make it as this package's component (labels are no proof; only its seal is); it is never taken over: whoever may delete Package {namespace}/{name} deletes or renames it, and the component installs"
    )
}

/// The highest published version in the component's range, else the
/// repository's latest.
async fn version_for(
    repositories: &RepositoryClient,
    repository: &Endpoint,
    component: &Component,
) -> Result<String, String> {
    let versions = repositories
        .versions(repository, &component.name)
        .await
        .map_err(|error| format!("component {}: {error}", component.name))?;
    let Some(range) = &component.version else {
        return versions.latest_version.ok_or_else(|| {
            format!(
                "component {}: the repository names no latestVersion",
                component.name
            )
        });
    };
    let range = Range::parse_glasskube(range)
        .map_err(|error| format!("component {}: version {range:?}: {error}", component.name))?;
    let published: Vec<Version> = versions
        .versions
        .iter()
        .filter_map(|v| Version::parse(&v.version).ok())
        .collect();
    range
        .max_satisfying(&published)
        .map(|v| v.as_written().to_owned())
        .ok_or_else(|| {
            format!(
                "component {}: no published version in {}",
                component.name,
                range.as_written()
            )
        })
}

/// Deletes the components of `parent_key` (the parent is going): those
/// this provisioner made for it; a Package only labelled so is left alone.
pub async fn remove(
    client: &Client,
    parent_key: &str,
    key: Option<&pakket_api::RecordKey>,
) -> Result<bool, kube::Error> {
    let api: Api<Package> = Api::all(client.clone());
    let params = ListParams::default().labels(&format!("{PARENT_LABEL}={parent_key}"));
    let left: Vec<Package> = api
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|package| made_here::is_component_of(package, parent_key, key))
        .collect();
    for component in &left {
        if component.metadata.deletion_timestamp.is_none() {
            let namespaced: Api<Package> =
                Api::namespaced(client.clone(), &component.namespace().unwrap_or_default());
            let _ = namespaced
                .delete(&component.name_any(), &DeleteParams::default())
                .await;
        }
    }
    Ok(left.is_empty())
}
