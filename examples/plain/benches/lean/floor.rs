//! The floor under Pakket's figures: what the apiserver spends on the
//! Instances alone. The same Instances as the measured install (each
//! mounting its content ConfigMap, through the same webhooks), in a class
//! no provisioner serves, so nothing is read, judged or installed; this
//! bench writes what the runtime would write of them and nothing else:
//! - on create, the Instance and one status write (an installed
//!   Instance's status, copied);
//! - on delete, the DELETE a finalizer holds and the finalizer's removal;
//!   and, for the choice an uninstall without a finalizer would be, the
//!   same Instances deleted with no finalizer to hold them.
//!
//! The Instance's requests alone, beside raw's, say what no change inside
//! the provisioner can take away: if these already cost most of the goal,
//! the rest cannot fit under it.

use futures::{StreamExt, stream};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{Instance, InstanceStatus};
use pakket_testkit::Scope;
use serde_json::json;

use crate::{CONCURRENCY, instance};

/// The finalizer a provisioner would hold the Instances with.
const FINALIZER: &str = "bench.pakket.dev/floor";

/// The name of floor Instance `i`.
pub fn name(i: usize) -> String {
    format!("floor{i}")
}

/// Creates `count` Instances of `class`, each held by a finalizer as a
/// provisioner's Instance is (when `held`), and writes `status` on each
/// once.
pub async fn create(
    instances: &Api<Instance>,
    scope: &Scope,
    class: &str,
    status: &InstanceStatus,
    count: usize,
    held: bool,
) {
    stream::iter(0..count)
        .for_each_concurrent(CONCURRENCY, |i| async move {
            let mut created = instance(scope, &name(i), i, class);
            if held {
                created.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
            }
            let mut stored = instances
                .create(&PostParams::default(), &created)
                .await
                .unwrap();
            stored.status = Some(status.clone());
            instances
                .replace_status(&scope.name(&name(i)), &PostParams::default(), &stored)
                .await
                .unwrap();
        })
        .await;
}

/// Deletes them: the DELETE (a finalizer holds each) and then the
/// finalizer's removal, preconditioned on the resourceVersion as the
/// runtime's is; or, not `held`, the DELETE alone.
pub async fn delete(instances: &Api<Instance>, scope: &Scope, count: usize, held: bool) {
    stream::iter(0..count)
        .for_each_concurrent(CONCURRENCY, |i| async move {
            let name = scope.name(&name(i));
            let deleted = instances
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
            if !held {
                assert!(deleted.is_right(), "nothing holds {name}");
                return;
            }
            let marked = deleted.left().expect("held by its finalizer");
            let patch = json!({
                "metadata": {
                    "finalizers": [],
                    "resourceVersion": marked.metadata.resource_version,
                }
            });
            instances
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        })
        .await;
}
