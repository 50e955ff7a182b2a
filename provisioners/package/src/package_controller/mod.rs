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

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt as _};
use pakket_api::{ConditionType, Instance, Reason};
use serde::de::DeserializeOwned;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::charts::ChartLocator;
use crate::components;
use crate::conditions::{self, Readiness};
use crate::dependencies;
use crate::info_controller::{self, repository_for};
use crate::made_here;
use crate::names;
use crate::provisioner::PackageConfig;
use crate::secret_values::{self, SecretValueRef, SecretValues};
use crate::transformations;
use crate::values;
use pakket_packages_api::manifest::PackageManifest;
use pakket_packages_api::{
    ClusterPackage, ClusterPackageSpec, Package, PackageInfo, PackageInfoSpec, PackageStatus,
    ValueConfiguration,
};
use pakket_packages_client::repository;

/// The field manager of what this controller writes.
pub const MANAGER: &str = "pakket-package";
/// Keeps a package until its Instance is gone.
pub const FINALIZER: &str = "packages.pakket.dev/uninstall";
/// How soon a package waiting for its PackageInfo or Instance looks again.
const WAITING: Duration = Duration::from_secs(2);
/// The reason (and Warning Event) when a name the package needs is held by
/// an object pakket-package did not make for it.
pub const NAME_TAKEN: &str = "NameTaken";
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

/// The package's author, if its record verifies for its current spec.
pub fn author<K: PackageObject>(
    package: &K,
    key: Option<&pakket_api::RecordKey>,
) -> Option<pakket_api::CreatorRecord> {
    let name = match package.namespace() {
        Some(namespace) => format!("{namespace}/{}", package.name_any()),
        None => package.name_any(),
    };
    let spec = serde_json::to_value(package).ok()?["spec"].clone();
    pakket_api::requester_of(
        package.meta().annotations.as_ref(),
        key,
        &pakket_api::record_object(K::KIND, &name),
        &pakket_api::value_digest(&spec),
    )
    .map_err(|error| tracing::debug!(kind = K::KIND, package = %name, %error, "no verified author"))
    .ok()
    .map(|(record, _)| record)
}

/// A ClusterPackage or a Package.
pub trait PackageObject:
    Resource<DynamicType = ()>
    + Clone
    + Debug
    + DeserializeOwned
    + serde::Serialize
    + Send
    + Sync
    + 'static
{
    /// `ClusterPackage` or `Package`.
    const KIND: &'static str;
    /// Its spec, in the shape both share.
    fn common_spec(&self) -> ClusterPackageSpec;
    /// Its status.
    fn package_status(&self) -> Option<&PackageStatus>;
    /// The API for objects like it (all namespaces, or its namespace).
    fn api(client: &Client, namespace: Option<&str>) -> Api<Self>;
}

impl PackageObject for ClusterPackage {
    const KIND: &'static str = "ClusterPackage";
    fn common_spec(&self) -> ClusterPackageSpec {
        self.spec.clone()
    }
    fn package_status(&self) -> Option<&PackageStatus> {
        self.status.as_ref()
    }
    fn api(client: &Client, _: Option<&str>) -> Api<Self> {
        Api::all(client.clone())
    }
}

impl PackageObject for Package {
    const KIND: &'static str = "Package";
    fn common_spec(&self) -> ClusterPackageSpec {
        ClusterPackageSpec {
            package_info: self.spec.package_info.clone(),
            values: self.spec.values.clone(),
            suspend: self.spec.suspend,
        }
    }
    fn package_status(&self) -> Option<&PackageStatus> {
        self.status.as_ref()
    }
    fn api(client: &Client, namespace: Option<&str>) -> Api<Self> {
        match namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        }
    }
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

fn error_policy<K: PackageObject>(
    package: Arc<K>,
    error: &kube::Error,
    _: Arc<PackageContext>,
) -> Action {
    tracing::warn!(kind = K::KIND, package = %package.name_any(), %error, "reconciling a package");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile<K: PackageObject>(
    package: Arc<K>,
    context: Arc<PackageContext>,
) -> Result<Action, kube::Error> {
    let client = &context.info.client;
    let name = package.name_any();
    let namespace = package.namespace();
    let api = K::api(client, namespace.as_deref());
    let instance_name = names::instance(namespace.as_deref(), &name);
    let instances: Api<Instance> = Api::all(client.clone());
    if package.meta().deletion_timestamp.is_some() {
        return finalize(&*package, &context, &api, &instances, &instance_name).await;
    }
    if !package.finalizers().iter().any(|f| f == FINALIZER) {
        let mut finalizers = package.finalizers().to_vec();
        finalizers.push(FINALIZER.into());
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
        )
        .await?;
    }
    let spec = package.common_spec();
    let mut status = package.package_status().cloned().unwrap_or_default();
    status.observed_generation = package.meta().generation;
    if spec.suspend {
        return Ok(Action::requeue(Duration::from_secs(300)));
    }
    let outcome = install(&*package, &spec, &context, &mut status, &instance_name).await;
    let next = match outcome {
        Ok(next) => next,
        Err(Step::Failed(reason, message)) => {
            if reason == NAME_TAKEN && !already_said(package.package_status(), &message) {
                warn(&context, &*package, reason, &message).await;
            }
            conditions::set_readiness(
                &mut status.conditions,
                Readiness::Failed,
                reason,
                message,
                package.meta().generation,
            );
            Action::requeue(Duration::from_secs(30))
        }
        Err(Step::Waiting(reason, message)) => {
            conditions::set_readiness(
                &mut status.conditions,
                Readiness::Pending,
                reason,
                message,
                package.meta().generation,
            );
            Action::requeue(WAITING)
        }
        Err(Step::Api(error)) => return Err(error),
    };
    write_status(client, &*package, &status).await?;
    Ok(next)
}

/// Whether the package's Ready condition already says `message` (an
/// Event is published when it is new, not at every retry).
fn already_said(status: Option<&PackageStatus>, message: &str) -> bool {
    status.is_some_and(|status| status.conditions.iter().any(|c| c.message == message))
}

/// A Warning Event on `package`; a failure to publish is only logged.
async fn warn<K: PackageObject>(context: &PackageContext, package: &K, reason: &str, note: &str) {
    let event = kube::runtime::events::Event {
        type_: kube::runtime::events::EventType::Warning,
        reason: reason.into(),
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

/// Writes `status` on `package` if it differs from what it has.
async fn write_status<K: PackageObject>(
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

/// Why a pass stopped early.
enum Step {
    /// `Failed` with this reason and message.
    Failed(&'static str, String),
    /// `Pending`.
    Waiting(&'static str, String),
    /// The apiserver failed us.
    Api(kube::Error),
}

impl From<kube::Error> for Step {
    fn from(error: kube::Error) -> Self {
        Self::Api(error)
    }
}

/// The flowchart, up to the Instance and the old PackageInfos; the next
/// requeue.
async fn install<K: PackageObject>(
    package: &K,
    spec: &ClusterPackageSpec,
    context: &PackageContext,
    status: &mut PackageStatus,
    instance_name: &str,
) -> Result<Action, Step> {
    let client = &context.info.client;
    let wanted = &spec.package_info;
    let uid = package.meta().uid.clone().unwrap_or_default();
    // Installed only because another package needed it: it goes when no
    // package does any more.
    // (A component is a namespaced Package: it goes with its parent.)
    // Removed by this provisioner only if it provably installed it so: an
    // annotation anyone who may write the object can set is no proof.
    let as_dependency = package.namespace().is_none()
        && dependencies::installed_by_us_as_dependency(
            package,
            &wanted.name,
            context.record_key.as_ref(),
        );
    if as_dependency {
        let everyone = pakket_packages_client::dependents::everyone(client).await?;
        if pakket_packages_client::dependents::dependents_of(&everyone, &wanted.name, &uid)
            .is_empty()
        {
            K::api(client, package.namespace().as_deref())
                .delete(&package.name_any(), &DeleteParams::default())
                .await?;
            return Err(Step::Waiting(
                "Pending",
                "installed as a dependency, and no package depends on it any more: removing it"
                    .into(),
            ));
        }
    }
    let repository = repository_for(
        client,
        wanted.repository_name.as_deref(),
        &context.info.namespace,
    )
    .await
    .map_err(|error| Step::Failed(error.reason(), error.to_string()))?;
    // Pinned, or the repository's latest (looked up again at each pass).
    let version = match &wanted.version {
        Some(version) => version.clone(),
        None => context
            .info
            .repositories
            .versions(&repository, &wanted.name)
            .await
            .map_err(|error| Step::Failed("SyncFailed", error.to_string()))?
            .latest_version
            .ok_or_else(|| {
                Step::Failed(
                    "SyncFailed",
                    format!(
                        "{} names no latestVersion; pin spec.packageInfo.version",
                        repository.versions_url(&wanted.name)
                    ),
                )
            })?,
    };
    let info_name = names::package_info(wanted.repository_name.as_deref(), &wanted.name, &version);
    let info = ensure_info(client, &info_name, wanted, &version, package.labels()).await?;
    if !status.owned_package_infos.contains(&info_name) {
        status.owned_package_infos.push(info_name.clone());
        // Recorded before anything is made for it: a dependency created
        // below finds this package among its dependents at once (through
        // this PackageInfo), instead of removing itself as unneeded.
        write_status(client, package, status).await?;
    }
    let info_status = info.status.clone().unwrap_or_default();
    let ready = info_status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
        && info_status.version.as_deref() == Some(version.as_str());
    if !ready {
        let failed = info_status
            .conditions
            .iter()
            .find(|c| c.type_ == "Failed" && c.status == "True");
        return Err(match failed {
            Some(failed) => Step::Failed(
                "SyncFailed",
                format!("PackageInfo {info_name}: {}", failed.message),
            ),
            None => Step::Waiting(
                "Pending",
                format!("waiting for PackageInfo {info_name} to be read"),
            ),
        });
    }
    let (manifest, package_url) = manifest_of(&info_status).map_err(|problem| {
        Step::Failed("SyncFailed", format!("PackageInfo {info_name}: {problem}"))
    })?;
    // A namespace's owner may install into her namespace only: a package
    // written for the whole cluster (CRDs, cluster roles) is a
    // ClusterPackage, which only whoever may write those creates.
    if package.namespace().is_some() && !manifest.is_namespaced() {
        return Err(Step::Failed(
            "UnsupportedFormat",
            format!(
                "package {} is cluster-scoped (its scope is not Namespaced): it installs as a ClusterPackage, not as a Package in a namespace",
                wanted.name
            ),
        ));
    }
    if let Some(missing) = manifest.unsupported() {
        return Err(Step::Failed(
            "UnsupportedFormat",
            format!(
                "package {} {version} uses {missing}, which this version of pakket-package does not install yet",
                wanted.name
            ),
        ));
    }
    // Who wrote the package: whose rights reads, installs and the
    // dependencies and components it brings are judged by.
    let person = author(package, context.record_key.as_ref());
    let given = resolve_values(
        client,
        &spec.values,
        person.as_ref(),
        package.namespace().as_deref(),
    )
    .await
    .map_err(|problem| Step::Failed("ValueConfigurationInvalid", problem))?;
    let problems = values::validate(
        &manifest.value_definitions,
        &values::with_defaults(&manifest.value_definitions, &given.all()),
    );
    if !problems.is_empty() {
        let words = problems
            .iter()
            .map(|p| format!("spec.values.{p}"))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Step::Failed(
            "ValueConfigurationInvalid",
            secret_values::masked(&words, &given.secret_texts()),
        ));
    }
    let verdict = dependencies::resolve(
        &context.info,
        &repository,
        &uid,
        &manifest,
        package.labels(),
        context.record_key.as_ref(),
        person.as_ref(),
    )
    .await
    .map_err(|problem| Step::Failed("InstallationFailed", problem))?;
    match verdict {
        dependencies::Verdict::Ready(names) => status.dependencies = names,
        dependencies::Verdict::Waiting(names, why) => {
            status.dependencies = names;
            return Err(Step::Waiting("Pending", why));
        }
        dependencies::Verdict::Conflict(words) => {
            return Err(Step::Failed("InstallationFailed", words));
        }
    }
    let mut refs = vec![package_url.to_string()];
    if let Some(chart) = &manifest.helm {
        // The chart's archive, pinned by the digest its repository gives.
        let located = context
            .charts
            .locate(&context.info.repositories, chart)
            .await
            .map_err(|problem| {
                Step::Failed(
                    "SyncFailed",
                    format!("package {} {version}: {problem}", wanted.name),
                )
            })?;
        refs.push(located);
    }
    for (index, file) in manifest.manifests.iter().enumerate() {
        let url = repository::manifest_url(&package_url, &file.url).map_err(|problem| {
            Step::Failed(
                "UnsupportedFormat",
                format!("manifests[{index}].url: {problem}"),
            )
        })?;
        refs.push(url.to_string());
    }
    // Transformations read the package object itself (its name).
    let package_json = serde_json::to_value(package).map_err(|error| {
        Step::Failed(
            "InstallationFailed",
            format!("the package as JSON: {error}"),
        )
    })?;
    let transformation_values = transformations::read(&manifest.transformations, &package_json)
        .map_err(|problem| {
            Step::Failed(
                "UnsupportedFormat",
                format!("package {} {version}: {problem}", wanted.name),
            )
        })?;
    // Values from Secrets reach the provisioner in the process; the
    // Instance says only where they come from.
    context
        .secret_values
        .put(instance_name, given.secrets.clone());
    let config = PackageConfig {
        namespace: package.namespace(),
        secret_values: given
            .secrets
            .iter()
            .map(|(name, (source, _))| (name.clone(), source.clone()))
            .collect(),
        values: given.values,
        transformation_values,
        // The HelmRelease Glasskube makes is named after the package (a
        // ClusterPackage) or the Package.
        release_name: manifest.helm.as_ref().map(|_| match package.namespace() {
            Some(_) => package.name_any(),
            None => wanted.name.clone(),
        }),
    };
    let instance = apply_instance::<K>(
        package,
        context,
        instance_name,
        &version,
        refs,
        &config,
        person.as_ref(),
    )
    .await?;
    status.version = Some(version.clone());
    status.instance = Some(instance_name.to_owned());
    mirror(status, &instance, package.meta().generation);
    // Components: ready when they are.
    if !manifest.components.is_empty() {
        let namespace = package
            .namespace()
            .or_else(|| manifest.default_namespace.clone())
            .ok_or_else(|| {
                Step::Failed(
                    "UnsupportedFormat",
                    format!(
                        "package {} has components and no defaultNamespace to put them in",
                        wanted.name
                    ),
                )
            })?;
        let key =
            components::parent_key(K::KIND, package.namespace().as_deref(), &package.name_any());
        let waiting = components::ensure(
            &context.info,
            &repository,
            (&key, &package.name_any()),
            &namespace,
            &manifest.components,
            package.labels(),
            components::Sealing {
                key: context.record_key.as_ref(),
                author: person.as_ref(),
            },
        )
        .await
        .map_err(|problem| match problem {
            components::Problem::NameTaken(message) => Step::Failed(NAME_TAKEN, message),
            components::Problem::Failed(message) => Step::Failed("InstallationFailed", message),
        })?;
        if !waiting.is_empty() && condition_true(&instance, ConditionType::Installed) {
            return Err(Step::Waiting(
                "Pending",
                format!("waiting for its components: {}", waiting.join(", ")),
            ));
        }
    }
    cleanup_infos::<K>(package, client, status, &info_name).await?;
    Ok(if as_dependency {
        // Looked at often: it goes soon after its last dependent.
        Action::requeue(DEPENDENCY_RECHECK)
    } else if wanted.version.is_none() {
        Action::requeue(context.update_interval)
    } else if condition_true(&instance, ConditionType::Installed) {
        Action::requeue(Duration::from_secs(300))
    } else {
        Action::requeue(WAITING)
    })
}

/// The PackageInfo `name`, created if missing.
async fn ensure_info(
    client: &Client,
    name: &str,
    wanted: &pakket_packages_api::PackageInfoTemplate,
    version: &str,
    labels: &BTreeMap<String, String>,
) -> Result<PackageInfo, kube::Error> {
    let api: Api<PackageInfo> = Api::all(client.clone());
    if let Some(info) = api.get_opt(name).await? {
        return Ok(info);
    }
    let mut info = PackageInfo::new(
        name,
        PackageInfoSpec {
            name: wanted.name.clone(),
            version: Some(version.to_owned()),
            repository_name: wanted.repository_name.clone(),
        },
    );
    // The package's own labels too, so a controller limited by a selector
    // (a test's) sees the PackageInfos of the packages it sees.
    let mut labels = labels.clone();
    labels.insert(
        names::PACKAGE_LABEL.to_owned(),
        names::sanitized(&wanted.name, 63),
    );
    info.metadata.labels = Some(labels);
    match api.create(&PostParams::default(), &info).await {
        Ok(info) => Ok(info),
        Err(kube::Error::Api(status)) if status.code == 409 => api.get(name).await,
        Err(error) => Err(error),
    }
}

/// The typed package file of a ready PackageInfo and its URL.
fn manifest_of(
    status: &pakket_packages_api::PackageInfoStatus,
) -> Result<(PackageManifest, reqwest::Url), String> {
    let value = status
        .manifest
        .clone()
        .ok_or("its status has no manifest")?;
    let manifest: PackageManifest =
        serde_json::from_value(value).map_err(|error| error.to_string())?;
    let url = status
        .resolved_url
        .as_deref()
        .ok_or("its status has no resolvedUrl")?;
    let url = reqwest::Url::parse(url).map_err(|error| error.to_string())?;
    Ok((manifest, url))
}

/// The values as text: written ones, a ConfigMap's key, or another
/// ClusterPackage's value (`packageRef`); a value read from elsewhere only
/// if the package's `author` may read it herself (asked of the apiserver
/// as a SubjectAccessReview): the package would otherwise copy into her
/// objects what she cannot see. Secrets are not read: the values end up
/// in the Instance's spec, which more people read than the Secret.
/// A Secret's value is read the same way, and returned apart with where it
/// came from: it is handed to the provisioner in the process
/// ([`SecretValues`]), never written into the Instance.
async fn resolve_values(
    client: &Client,
    given: &BTreeMap<String, ValueConfiguration>,
    author: Option<&pakket_api::CreatorRecord>,
    own_namespace: Option<&str>,
) -> Result<ResolvedValues, String> {
    let mut values = BTreeMap::new();
    let mut secrets = BTreeMap::new();
    for (name, configuration) in given {
        let at = format!("spec.values.{name}");
        let value = match (&configuration.value, &configuration.value_from) {
            (Some(value), None) => value.clone(),
            (None, Some(from)) => {
                match (&from.package_ref, &from.config_map_ref, &from.secret_ref) {
                    (Some(reference), None, None) => {
                        may_read(
                            client,
                            author,
                            &at,
                            "packages.pakket.dev",
                            "clusterpackages",
                            None,
                            &reference.name,
                        )
                        .await?;
                        let other = Api::<ClusterPackage>::all(client.clone())
                            .get_opt(&reference.name)
                            .await
                            .map_err(|error| format!("{at}.valueFrom.packageRef: {error}"))?
                            .ok_or_else(|| {
                                format!(
                                    "{at}.valueFrom.packageRef: ClusterPackage {} does not exist",
                                    reference.name
                                )
                            })?;
                        other
                        .spec
                        .values
                        .get(&reference.value)
                        .and_then(|v| v.value.clone())
                        .ok_or_else(|| {
                            format!(
                                "{at}.valueFrom.packageRef: ClusterPackage {} has no written value {}",
                                reference.name, reference.value
                            )
                        })?
                    }
                    (None, Some(reference), None) => {
                        let namespace = reference.namespace.as_deref().or(own_namespace).ok_or_else(|| {
                        format!("{at}.valueFrom.configMapRef.namespace: required for a ClusterPackage")
                    })?;
                        may_read(
                            client,
                            author,
                            &at,
                            "",
                            "configmaps",
                            Some(namespace),
                            &reference.name,
                        )
                        .await?;
                        let config_map = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), namespace)
                        .get_opt(&reference.name)
                        .await
                        .map_err(|error| format!("{at}.valueFrom.configMapRef: {error}"))?
                        .ok_or_else(|| format!("{at}.valueFrom.configMapRef: ConfigMap {namespace}/{} does not exist", reference.name))?;
                        config_map
                        .data
                        .and_then(|data| data.get(&reference.key).cloned())
                        .ok_or_else(|| {
                            format!("{at}.valueFrom.configMapRef: ConfigMap {namespace}/{} has no key {}", reference.name, reference.key)
                        })?
                    }
                    (None, None, Some(reference)) => {
                        let (source, value) =
                            read_secret(client, author, &at, reference, own_namespace).await?;
                        secrets.insert(name.clone(), (source, value));
                        continue;
                    }
                    _ => {
                        return Err(format!(
                            "{at}.valueFrom: set exactly one of configMapRef, secretRef or packageRef"
                        ));
                    }
                }
            }
            _ => return Err(format!("{at}: set exactly one of value or valueFrom")),
        };
        values.insert(name.clone(), value);
    }
    Ok(ResolvedValues { values, secrets })
}

/// A package's values, resolved.
struct ResolvedValues {
    /// Written, or read from ConfigMaps and packages: these go into the
    /// Instance's config.
    values: BTreeMap<String, String>,
    /// Read from Secrets, with where from: these do not.
    secrets: BTreeMap<String, (SecretValueRef, String)>,
}

impl ResolvedValues {
    /// Every value, by name.
    fn all(&self) -> BTreeMap<String, String> {
        let mut all = self.values.clone();
        all.extend(self.secret_texts());
        all
    }

    /// The values read from Secrets, by name.
    fn secret_texts(&self) -> BTreeMap<String, String> {
        self.secrets
            .iter()
            .map(|(name, (_, value))| (name.clone(), value.clone()))
            .collect()
    }
}

/// A Secret's key, if the author may `get` the Secret herself.
async fn read_secret(
    client: &Client,
    author: Option<&pakket_api::CreatorRecord>,
    at: &str,
    reference: &pakket_packages_api::ObjectKeyValueSource,
    own_namespace: Option<&str>,
) -> Result<(SecretValueRef, String), String> {
    let namespace = reference
        .namespace
        .as_deref()
        .or(own_namespace)
        .ok_or_else(|| {
            format!("{at}.valueFrom.secretRef.namespace: required for a ClusterPackage")
        })?;
    may_read(
        client,
        author,
        at,
        "",
        "secrets",
        Some(namespace),
        &reference.name,
    )
    .await?;
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
        .get_opt(&reference.name)
        .await
        .map_err(|error| format!("{at}.valueFrom.secretRef: {error}"))?
        .ok_or_else(|| {
            format!(
                "{at}.valueFrom.secretRef: Secret {namespace}/{} does not exist",
                reference.name
            )
        })?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get(&reference.key))
        .ok_or_else(|| {
            format!(
                "{at}.valueFrom.secretRef: Secret {namespace}/{} has no key {}",
                reference.name, reference.key
            )
        })?;
    let value = String::from_utf8(bytes.0.clone()).map_err(|_| {
        format!(
            "{at}.valueFrom.secretRef: key {} of Secret {namespace}/{} is not UTF-8 text; values are text",
            reference.key, reference.name
        )
    })?;
    Ok((
        SecretValueRef {
            namespace: namespace.to_owned(),
            name: reference.name.clone(),
            key: reference.key.clone(),
            resource_version: secret.metadata.resource_version.unwrap_or_default(),
        },
        value,
    ))
}

/// Whether the package's author may `get` the object a value is read
/// from; the error names the field and says what to do.
async fn may_read(
    client: &Client,
    author: Option<&pakket_api::CreatorRecord>,
    at: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), String> {
    let author = author.ok_or_else(|| {
        format!(
            "{at}.valueFrom: the package has no verified author (the webhooks record who writes packages), so nothing is read on anyone's behalf; write the value"
        )
    })?;
    let access = pakket_runtime::rbac::Access::Resource {
        group: group.to_owned(),
        resource: resource.to_owned(),
        subresource: String::new(),
        verb: "get".into(),
        namespace: namespace.map(str::to_owned),
        name: Some(name.to_owned()),
    };
    let reviews: Api<k8s_openapi::api::authorization::v1::SubjectAccessReview> =
        Api::all(client.clone());
    if pakket_runtime::approval::review(&reviews, author, &access).await? {
        Ok(())
    } else {
        Err(format!(
            "{at}.valueFrom: {} may not {access}, so the package does not read it for them",
            author.username
        ))
    }
}

/// Applies the Instance the package becomes; returns it as stored.
async fn apply_instance<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    name: &str,
    version: &str,
    refs: Vec<String>,
    config: &PackageConfig,
    person: Option<&pakket_api::CreatorRecord>,
) -> Result<Instance, Step> {
    let mut digest = Sha256::new();
    for reference in &refs {
        digest.update(reference.as_bytes());
        digest.update(b"\n");
    }
    // At most 63 characters: the runtime labels every object with it.
    let bundle = names::sanitized(
        &format!("{name}-{version}-{}", &hex::encode(digest.finalize())[..8]),
        63,
    );
    // The package's labels too (a controller or webhook limited by a
    // selector sees the Instances of the packages it sees).
    let mut labels = package.labels().clone();
    labels.insert(names::KIND_LABEL.to_owned(), K::KIND.to_owned());
    let mut annotations = BTreeMap::from([(names::NAME_ANNOTATION.to_owned(), package.name_any())]);
    if let Some(namespace) = package.namespace() {
        annotations.insert(names::NAMESPACE_ANNOTATION.to_owned(), namespace);
    }
    let instances: Api<Instance> = Api::all(context.info.client.clone());
    let namespace = package.namespace();
    // Nothing is taken over: an Instance of that name this provisioner did
    // not make for this package (labels and annotations are no proof, only
    // its seal is) stays as it is.
    if let Some(existing) = instances.get_opt(name).await?
        && !made_here::is_instance_of(
            &existing,
            K::KIND,
            namespace.as_deref(),
            &package.name_any(),
            context.record_key.as_ref(),
        )
    {
        return Err(Step::Failed(
            NAME_TAKEN,
            format!(
                "Instance {name} exists and pakket-package did not make it for this package (labels are no proof; only its seal is); nothing of it is changed: whoever may delete Instance {name} deletes it, and the package installs"
            ),
        ));
    }
    if let Some(key) = context.record_key.as_ref() {
        annotations.insert(
            made_here::INSTANCE_SEAL_ANNOTATION.to_owned(),
            made_here::instance_seal(
                key,
                name,
                &made_here::package_reference(K::KIND, namespace.as_deref(), &package.name_any()),
            ),
        );
    }
    let mut instance = json!({
        "apiVersion": Instance::api_version(&()),
        "kind": Instance::kind(&()),
        "metadata": { "name": name, "labels": labels, "annotations": annotations },
        "spec": {
            "class": context.class,
            "bundle": { "name": bundle, "spec": { "class": context.class, "refs": refs } },
            "config": config,
        },
    });
    // The package's author is the Instance's requester: sealed for this
    // Instance and spec, which the webhook takes from this process (a
    // delegate) only.
    if let (Some(key), Some(person)) = (context.record_key.as_ref(), person)
        && let Ok(spec) =
            serde_json::from_value::<pakket_api::InstanceSpec>(instance["spec"].clone())
    {
        let sealed = person.sealed(key, pakket_api::LAST_CHANGED_BY_ANNOTATION, name, &spec);
        instance["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
            json!(sealed.to_annotation());
    }
    Ok(instances
        .patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&instance),
        )
        .await?)
}

fn condition_true(instance: &Instance, kind: ConditionType) -> bool {
    instance.condition(kind).is_some_and(|c| c.status == "True")
}

/// The Instance's conditions on the package, and `Ready`/`Failed` from them.
/// Conditions written for an older spec of the Instance (the version
/// before an update) say nothing yet: the package is pending until the
/// runtime has looked at the new one.
fn mirror(status: &mut PackageStatus, instance: &Instance, generation: Option<i64>) {
    let current = instance
        .condition(ConditionType::Installed)
        .is_some_and(|c| c.observed_generation == instance.metadata.generation);
    if !current {
        conditions::set_readiness(
            &mut status.conditions,
            Readiness::Pending,
            "Pending",
            format!("Instance {} is being installed", instance.name_any()),
            generation,
        );
        return;
    }
    for kind in [
        ConditionType::Approved,
        ConditionType::Installed,
        ConditionType::Healthy,
    ] {
        if let Some(condition) = instance.condition(kind) {
            conditions::set(
                &mut status.conditions,
                kind.as_str(),
                &condition.status,
                &condition.reason,
                &condition.message,
                generation,
            );
        }
    }
    let failing = [
        ConditionType::Unpacked,
        ConditionType::Approved,
        ConditionType::Installed,
    ]
    .into_iter()
    .filter_map(|kind| instance.condition(kind))
    .find(|c| {
        c.status == "False"
            && [
                Reason::UnpackFailed,
                Reason::ApprovalDenied,
                Reason::InstallFailed,
                Reason::RenderFailed,
                Reason::InvalidConfig,
                Reason::DependenciesMissing,
            ]
            .iter()
            .any(|reason| reason.as_str() == c.reason)
    });
    let (readiness, reason, message) = if let Some(failing) = failing {
        (
            Readiness::Failed,
            "InstallationFailed",
            format!("Instance {}: {}", instance.name_any(), failing.message),
        )
    } else if condition_true(instance, ConditionType::Installed) {
        (
            Readiness::Ready,
            "InstallationSucceeded",
            format!("Instance {} is installed", instance.name_any()),
        )
    } else {
        let waiting = instance
            .condition(ConditionType::Approved)
            .filter(|c| c.status != "True")
            .map(|c| c.message.clone())
            .unwrap_or_else(|| format!("Instance {} is being installed", instance.name_any()));
        (Readiness::Pending, "Pending", waiting)
    };
    conditions::set_readiness(
        &mut status.conditions,
        readiness,
        reason,
        message,
        generation,
    );
}

/// Deletes the PackageInfos this package no longer uses (keeping `current`)
/// that no other package uses either.
async fn cleanup_infos<K: PackageObject>(
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
    let in_use = infos_in_use(client, package.meta().uid.as_deref()).await?;
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

/// The PackageInfos every package other than `except` (by UID) uses.
async fn infos_in_use(client: &Client, except: Option<&str>) -> Result<Vec<String>, kube::Error> {
    let mut used = Vec::new();
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
    for status in statuses {
        used.extend(status.owned_package_infos);
    }
    Ok(used)
}

/// A package being deleted: its Instance goes first (the runtime
/// uninstalls what it installed), then its PackageInfos, then the
/// finalizer.
async fn finalize<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    api: &Api<K>,
    instances: &Api<Instance>,
    instance_name: &str,
) -> Result<Action, kube::Error> {
    if !package.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    // A ClusterPackage others depend on stays until they are gone (the
    // webhooks refuse the delete first, but fail open).
    if package.namespace().is_none() {
        let everyone = pakket_packages_client::dependents::everyone(&context.info.client).await?;
        let name = package.name_any();
        if let Some(words) = pakket_packages_client::dependents::deletion_refused(
            &everyone,
            &name,
            &package.common_spec().package_info.name,
            package.meta().uid.as_deref().unwrap_or_default(),
        ) {
            let mut status = package.package_status().cloned().unwrap_or_default();
            conditions::set_readiness(
                &mut status.conditions,
                Readiness::Failed,
                "InstallationFailed",
                format!("deleted, but kept: {words}"),
                package.meta().generation,
            );
            write_status(&context.info.client, package, &status).await?;
            return Ok(Action::requeue(DEPENDENCY_RECHECK));
        }
    }
    // Its components go first (their objects live in its namespace).
    let key = components::parent_key(K::KIND, package.namespace().as_deref(), &package.name_any());
    if !components::remove(&context.info.client, &key, context.record_key.as_ref()).await? {
        return Ok(Action::requeue(WAITING));
    }
    // Only the Instance this provisioner made for the package goes with
    // it: one of that name someone else made is theirs.
    if let Some(instance) = instances.get_opt(instance_name).await?
        && made_here::is_instance_of(
            &instance,
            K::KIND,
            package.namespace().as_deref(),
            &package.name_any(),
            context.record_key.as_ref(),
        )
    {
        if instance.metadata.deletion_timestamp.is_none() {
            instances
                .delete(instance_name, &DeleteParams::default())
                .await?;
        }
        return Ok(Action::requeue(WAITING));
    }
    context.secret_values.forget(instance_name);
    let client = &context.info.client;
    let in_use = infos_in_use(client, package.meta().uid.as_deref()).await?;
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
    let finalizers: Vec<String> = package
        .finalizers()
        .iter()
        .filter(|f| f.as_str() != FINALIZER)
        .cloned()
        .collect();
    api.patch(
        &package.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
    )
    .await?;
    Ok(Action::await_change())
}
