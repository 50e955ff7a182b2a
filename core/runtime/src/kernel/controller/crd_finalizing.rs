//! CRDs an uninstall deleted that the API server has not finished deleting.
//!
//! A deleted CRD stays (`Terminating`) until the API server's own finalizer
//! has deleted every custom resource of its kind. While it stays, its kind
//! is still served and no Instance can install that CRD as its own (it is
//! still this one's). So an Instance that deleted CRDs keeps its finalizer
//! until they are gone, and says what holds them: "Uninstalled" means gone.
//!
//! Only CRDs are waited for: their finalizer is the API server's, which
//! always runs. Other objects' finalizers belong to controllers a cluster
//! may not run, and waiting on them could hold an Instance forever.
//!
//! The API server retries a failed finalizing with a backoff that grows to
//! many minutes, and a CRD deleted while its storage was (re)initializing
//! (just after it was created or updated) failed once and stayed for
//! minutes. Any change to the CRD makes the API server try again at once,
//! so such a CRD is touched (an annotation), at most every [`NUDGE_EVERY`].

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// When the runtime last asked the API server to finalize a CRD again.
pub const FINALIZE_AGAIN_ANNOTATION: &str = "core.pakket.dev/finalize-again";

/// How often a CRD whose finalizing failed is touched, at most.
pub const NUDGE_EVERY: Duration = Duration::from_secs(30);

/// A deleted CRD that is still there, and what holds it, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finalizing {
    pub name: String,
    pub holding: String,
}

impl std::fmt::Display for Finalizing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.holding)
    }
}

/// Which of the CRDs named in `deleted` are still there, touching those
/// whose finalizing failed. A CRD that cannot be read is taken as gone
/// (logged): not being able to look must not hold an Instance forever.
pub async fn still_finalizing(client: &kube::Client, deleted: &[String]) -> Vec<Finalizing> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let now = Timestamp::now();
    let mut left = Vec::new();
    for name in deleted {
        let crd = match api.get_opt(name).await {
            Ok(Some(crd)) => crd,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(crd = %name, %error, "reading a deleted CRD; taking it as gone");
                continue;
            }
        };
        // Not being deleted: someone made it again since, and it is not
        // this Instance's to wait for.
        if crd.metadata.deletion_timestamp.is_none() {
            continue;
        }
        if needs_nudge(&crd, now) {
            nudge(&api, &crd, now).await;
        }
        left.push(Finalizing {
            name: name.clone(),
            holding: holding(&crd),
        });
    }
    left
}

/// The CRD's `Terminating` condition, if the API server wrote one.
fn terminating(crd: &CustomResourceDefinition) -> Option<&CustomResourceDefinitionCondition> {
    crd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == "Terminating")
}

/// Whether the API server's finalizing of `crd` failed or could not yet
/// confirm its custom resources gone, and the runtime has not touched it
/// within [`NUDGE_EVERY`].
fn needs_nudge(crd: &CustomResourceDefinition, now: Timestamp) -> bool {
    let stalled = terminating(crd).is_some_and(|condition| {
        matches!(
            condition.reason.as_deref(),
            Some("InstanceDeletionFailed" | "InstanceDeletionCheck")
        )
    });
    let touched_lately = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(FINALIZE_AGAIN_ANNOTATION))
        .and_then(|at| at.parse::<Timestamp>().ok())
        .is_some_and(|at| now.duration_since(at).unsigned_abs() < NUDGE_EVERY);
    stalled && !touched_lately
}

/// Touches `crd` so the API server finalizes it again; with the
/// resourceVersion read, so it changes only the CRD that was judged.
async fn nudge(
    api: &Api<CustomResourceDefinition>,
    crd: &CustomResourceDefinition,
    now: Timestamp,
) {
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    let touch = json!({ "metadata": {
        "resourceVersion": crd.metadata.resource_version,
        "annotations": { FINALIZE_AGAIN_ANNOTATION: now.to_string() },
    } });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&touch))
        .await
    {
        Ok(_) => {
            tracing::info!(crd = %name, "asked the API server to finalize a deleted CRD again")
        }
        // Changed or gone meanwhile: the next pass looks again.
        Err(error) => tracing::debug!(crd = %name, %error, "touching a deleted CRD"),
    }
}

/// What holds `crd`, from its `Terminating` condition.
fn holding(crd: &CustomResourceDefinition) -> String {
    match terminating(crd) {
        Some(condition) => {
            let reason = condition.reason.as_deref().unwrap_or("Terminating");
            match condition.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => format!("{reason}: {message}"),
                None => reason.to_owned(),
            }
        }
        None => "its custom resources are being deleted".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn crd(reason: Option<&str>, touched: Option<&str>) -> CustomResourceDefinition {
        let mut crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": { "name": "widgets.example.com" },
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": { "kind": "Widget", "plural": "widgets" },
                "versions": [],
            },
        }))
        .unwrap();
        crd.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        if let Some(reason) = reason {
            crd.status = Some(
                serde_json::from_value(json!({ "conditions": [{
                    "type": "Terminating", "status": "True", "reason": reason,
                    "message": "could not list instances: storage is (re)initializing",
                }] }))
                .unwrap(),
            );
        }
        if let Some(at) = touched {
            crd.metadata.annotations = Some(
                [(FINALIZE_AGAIN_ANNOTATION.to_owned(), at.to_owned())]
                    .into_iter()
                    .collect(),
            );
        }
        crd
    }

    #[test]
    fn a_failed_finalizing_is_nudged_at_most_every_thirty_seconds() {
        let now: Timestamp = "2026-11-28T12:00:00Z".parse().unwrap();
        assert!(needs_nudge(&crd(Some("InstanceDeletionFailed"), None), now));
        assert!(needs_nudge(&crd(Some("InstanceDeletionCheck"), None), now));
        assert!(!needs_nudge(
            &crd(Some("InstanceDeletionFailed"), Some("2026-11-28T11:59:45Z")),
            now
        ));
        assert!(needs_nudge(
            &crd(Some("InstanceDeletionFailed"), Some("2026-11-28T11:59:00Z")),
            now
        ));
        // A touch we cannot read does not stop the next one.
        assert!(needs_nudge(
            &crd(Some("InstanceDeletionFailed"), Some("yesterday")),
            now
        ));
    }

    #[test]
    fn finalizing_in_progress_is_left_to_the_api_server() {
        let now = Timestamp::now();
        assert!(!needs_nudge(
            &crd(Some("InstanceDeletionInProgress"), None),
            now
        ));
        assert!(!needs_nudge(&crd(None, None), now));
    }

    #[test]
    fn what_holds_a_crd_is_said_in_the_api_servers_words() {
        assert_eq!(
            holding(&crd(Some("InstanceDeletionFailed"), None)),
            "InstanceDeletionFailed: could not list instances: storage is (re)initializing"
        );
        assert_eq!(
            holding(&crd(None, None)),
            "its custom resources are being deleted"
        );
    }
}
