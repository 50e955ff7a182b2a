//! The PackageRepository controller: reads each repository's `index.yaml`
//! when it changes and every few minutes, and says in its status whether
//! it answers (`Ready`/`SyncCompleted` with how many packages it offers,
//! or `Failed` with why: `CredentialsUnavailable` when its credentials
//! cannot be used, `SyncFailed` otherwise), so an admin sees a broken URL or
//! credential before any package does.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::json;

use crate::conditions::{self, Readiness};
use crate::info_controller::Context;
use pakket_packages_api::PackageRepository;
use pakket_packages_api::conditions::RepositoryReason;

/// The field manager of repository statuses.
pub const MANAGER: &str = "pakket-package-repository";

/// Runs until the process ends; `selector` limits it to labelled objects.
pub async fn run(context: Arc<Context>, selector: Option<String>) {
    let config = match selector {
        Some(selector) => watcher::Config::default().labels(&selector),
        None => watcher::Config::default(),
    };
    Controller::new(
        Api::<PackageRepository>::all(context.client.clone()),
        config,
    )
    .run(reconcile, error_policy, context)
    .for_each(|_| async {})
    .await;
}

fn error_policy(
    repository: Arc<PackageRepository>,
    error: &kube::Error,
    _: Arc<Context>,
) -> Action {
    tracing::warn!(repository = %repository.name_any(), %error, "reconciling a PackageRepository");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(
    repository: Arc<PackageRepository>,
    context: Arc<Context>,
) -> Result<Action, kube::Error> {
    let read = match crate::credentials::endpoint(&context.client, &repository, &context.namespace)
        .await
    {
        Ok(endpoint) => context
            .repositories
            .index(&endpoint)
            .await
            .map(|index| index.packages.len()),
        Err(error) => Err(error),
    };
    let mut status = repository.status.clone().unwrap_or_default();
    match read {
        Ok(count) => conditions::set_readiness(
            &mut status.conditions,
            Readiness::Ready,
            RepositoryReason::SyncCompleted,
            format!("index.yaml lists {count} packages"),
            repository.metadata.generation,
        ),
        Err(error) => conditions::set_readiness(
            &mut status.conditions,
            Readiness::Failed,
            RepositoryReason::from(error.reason()),
            error.to_string(),
            repository.metadata.generation,
        ),
    }
    status.observed_generation = repository.metadata.generation;
    if repository.status.as_ref() != Some(&status) {
        Api::<PackageRepository>::all(context.client.clone())
            .patch_status(
                &repository.name_any(),
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(json!({
                    "apiVersion": "packages.pakket.dev/v1alpha1",
                    "kind": "PackageRepository",
                    "status": status,
                })),
            )
            .await?;
    }
    Ok(Action::requeue(context.resync))
}
