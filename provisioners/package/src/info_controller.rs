//! The PackageInfo controller (seed 001's second flowchart): a pinned
//! PackageInfo reads `<name>/<version>/package.yaml`; one without a
//! version reads `versions.yaml` first and then the latest version's
//! `package.yaml`. The file, where it was read and when, go to the status,
//! with `Ready`/`Failed` (`SyncCompleted` when what was read is new,
//! `UpToDate` when a re-read finds it unchanged, `SyncFailed`). Read again
//! every few minutes, or when the PackageInfo changes.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};
use serde_json::json;

use crate::conditions::{self, Readiness};
use pakket_packages_api::conditions::PackageInfoReason;
use pakket_packages_api::{PackageInfo, PackageRepository};
use pakket_packages_client::repository::{Endpoint, RepositoryClient, RepositoryError};

/// The field manager of PackageInfo statuses.
pub const MANAGER: &str = "pakket-package-info";

/// What the controllers share.
pub struct Context {
    /// The apiserver.
    pub client: Client,
    /// Reads repositories.
    pub repositories: RepositoryClient,
    /// Where repository credentials are read (the process's namespace).
    pub namespace: String,
    /// How often a PackageInfo is read again.
    pub resync: Duration,
}

/// Runs until the process ends; `selector` limits it to labelled objects.
pub async fn run(context: Arc<Context>, selector: Option<String>) {
    let config = match selector {
        Some(selector) => watcher::Config::default().labels(&selector),
        None => watcher::Config::default(),
    };
    Controller::new(Api::<PackageInfo>::all(context.client.clone()), config)
        .run(reconcile, error_policy, context)
        .for_each(|_| async {})
        .await;
}

fn error_policy(info: Arc<PackageInfo>, error: &kube::Error, _: Arc<Context>) -> Action {
    tracing::warn!(package_info = %info.name_any(), %error, "reconciling a PackageInfo");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(info: Arc<PackageInfo>, context: Arc<Context>) -> Result<Action, kube::Error> {
    let name = info.name_any();
    let synced = sync(&info, &context).await;
    let mut status = info.status.clone().unwrap_or_default();
    match synced {
        Ok((manifest, url, version)) => {
            // The time moves only when what was read changed: a re-read
            // that finds the same file writes nothing (a write would be a
            // watch event, and so another read, forever).
            let changed = status.manifest.as_ref() != Some(&manifest)
                || status.resolved_url.as_ref() != Some(&url)
                || status.version.as_ref() != Some(&version);
            let (reason, message) = if changed {
                status.manifest = Some(manifest);
                status.resolved_url = Some(url);
                status.version = Some(version.clone());
                status.last_update_timestamp = Some(jiff::Timestamp::now().to_string());
                (
                    PackageInfoReason::SyncCompleted,
                    format!("read package {} version {version}", info.spec.name),
                )
            } else {
                // Read again and found as it was (Glasskube's UpToDate):
                // one write the first time, none after.
                (
                    PackageInfoReason::UpToDate,
                    format!(
                        "package {} version {version} is as read at {}",
                        info.spec.name,
                        status.last_update_timestamp.as_deref().unwrap_or("?")
                    ),
                )
            };
            conditions::set_readiness(
                &mut status.conditions,
                Readiness::Ready,
                reason,
                message,
                info.metadata.generation,
            );
        }
        Err(error) => {
            conditions::set_readiness(
                &mut status.conditions,
                Readiness::Failed,
                PackageInfoReason::from(error.reason()),
                error.to_string(),
                info.metadata.generation,
            );
        }
    }
    if info.status.as_ref() != Some(&status) {
        Api::<PackageInfo>::all(context.client.clone())
            .patch_status(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(json!({
                    "apiVersion": format!("{}/{}", pakket_packages_api::GROUP, pakket_packages_api::VERSION),
                    "kind": "PackageInfo",
                    "status": status,
                })),
            )
            .await?;
    }
    Ok(Action::requeue(context.resync))
}

/// The package file as JSON, the URL it was read from, and its version.
async fn sync(
    info: &PackageInfo,
    context: &Context,
) -> Result<(serde_json::Value, String, String), RepositoryError> {
    let repository = repository_for(
        &context.client,
        info.spec.repository_name.as_deref(),
        &context.namespace,
    )
    .await?;
    let version = match &info.spec.version {
        Some(version) => version.clone(),
        None => {
            let versions = context
                .repositories
                .versions(&repository, &info.spec.name)
                .await?;
            versions.latest_version.ok_or_else(|| {
                RepositoryError::Repository(format!(
                    "{} names no latestVersion; pin spec.version",
                    repository.versions_url(&info.spec.name)
                ))
            })?
        }
    };
    let (_, manifest, url) = context
        .repositories
        .package(&repository, &info.spec.name, &version)
        .await?;
    Ok((manifest, url.to_string(), version))
}

/// The PackageRepository `name`, or the default one: the one annotated
/// as default, else the only one there is.
pub async fn repository_for(
    client: &Client,
    name: Option<&str>,
    namespace: &str,
) -> Result<Endpoint, RepositoryError> {
    let api: Api<PackageRepository> = Api::all(client.clone());
    let repository = match name {
        Some(name) => api
            .get_opt(name)
            .await
            .map_err(|error| RepositoryError::Repository(format!("PackageRepository {name}: {error}")))?
            .ok_or_else(|| {
                RepositoryError::Repository(format!(
                    "PackageRepository {name} does not exist; create it or fix spec.packageInfo.repositoryName"
                ))
            })?,
        None => {
            let all = api
                .list(&Default::default())
                .await
                .map_err(|error| RepositoryError::Repository(format!("listing PackageRepositories: {error}")))?
                .items;
            let defaults: Vec<&PackageRepository> = all
                .iter()
                .filter(|r| {
                    r.annotations()
                        .get(pakket_packages_api::DEFAULT_REPOSITORY_ANNOTATION)
                        .is_some_and(|v| v == "true")
                })
                .collect();
            match (defaults.as_slice(), all.as_slice()) {
                ([one], _) => (*one).clone(),
                ([], [one]) => one.clone(),
                ([], []) => {
                    return Err(RepositoryError::Repository(
                        "no PackageRepository exists; create one".into(),
                    ));
                }
                ([], _) => {
                    return Err(RepositoryError::Repository(format!(
                        "{} PackageRepositories exist and none is annotated {}=\"true\"; annotate one or set spec.packageInfo.repositoryName",
                        all.len(),
                        pakket_packages_api::DEFAULT_REPOSITORY_ANNOTATION
                    )));
                }
                _ => {
                    return Err(RepositoryError::Repository(format!(
                        "{} PackageRepositories are annotated as the default; keep one",
                        defaults.len()
                    )));
                }
            }
        }
    };
    crate::credentials::endpoint(client, &repository, namespace).await
}
