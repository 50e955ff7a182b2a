//! The Events regarding an Instance, oldest first.
//!
//! Events about cluster-scoped objects land in namespace `default`, but
//! nothing forces a provisioner to write them there, so they are listed
//! across all namespaces by field selector (`regarding.kind`,
//! `regarding.name`: events.k8s.io/v1 maps them to the stored
//! `involvedObject.*` fields). A caller who may not list Events cluster-wide
//! gets those in `default`; a server without events.k8s.io/v1 is asked on
//! core/v1.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use serde::Serialize;

use crate::error::{self, Error};

/// The namespace Events about cluster-scoped objects are written to.
pub const CLUSTER_SCOPED_EVENTS_NAMESPACE: &str = "default";

/// One Event, reduced to what `describe` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The machine-readable reason (`Approved`, `UnpackFailed`, …).
    pub reason: String,
    /// The human-readable note.
    pub message: String,
    /// The controller that reported it.
    pub from: String,
    /// When it last happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    /// How often it happened.
    pub count: i32,
}

/// The Events about Instance `name`, oldest first.
pub async fn for_instance(client: &kube::Client, name: &str) -> Result<Vec<EventLine>, Error> {
    let regarding = format!("regarding.kind=Instance,regarding.name={name}");
    let params = ListParams::default().fields(&regarding);
    let everywhere: Api<Event> = Api::all(client.clone());
    let listed = match everywhere.list(&params).await {
        Ok(list) => Ok(list.items),
        Err(error) if error::status_code(&error) == Some(403) => {
            let default: Api<Event> =
                Api::namespaced(client.clone(), CLUSTER_SCOPED_EVENTS_NAMESPACE);
            default.list(&params).await.map(|list| list.items)
        }
        Err(error) => Err(error),
    };
    let mut lines: Vec<EventLine> = match listed {
        Ok(events) => events
            .into_iter()
            .filter(|event| about_pakket(event.regarding.as_ref()))
            .map(from_events_v1)
            .collect(),
        Err(error) if error::status_code(&error) == Some(404) => core_events(client, name).await?,
        Err(error) => {
            return Err(Error::Api {
                action: format!("listing Events regarding Instance {name}"),
                source: error,
            });
        }
    };
    // Oldest first, so the newest is nearest the prompt; undated ones first.
    lines.sort_by_key(|line| line.time);
    Ok(lines)
}

/// Whether an Event regards a Pakket object (another group may have a
/// kind called Instance too).
fn about_pakket(regarding: Option<&k8s_openapi::api::core::v1::ObjectReference>) -> bool {
    regarding
        .and_then(|object| object.api_version.as_deref())
        .is_none_or(|version| version.starts_with(&format!("{}/", pakket_api::GROUP)))
}

fn from_events_v1(event: Event) -> EventLine {
    let time = event
        .series
        .as_ref()
        .map(|series| series.last_observed_time.0)
        .or(event.event_time.map(|time| time.0))
        .or(event.deprecated_last_timestamp.map(|time| time.0))
        .or(event.metadata.creation_timestamp.map(|time| time.0));
    let count = event
        .series
        .as_ref()
        .map(|series| series.count)
        .or(event.deprecated_count)
        .unwrap_or(1);
    EventLine {
        kind: event.type_.unwrap_or_default(),
        reason: event.reason.unwrap_or_default(),
        message: event.note.unwrap_or_default(),
        from: event
            .reporting_controller
            .or(event.deprecated_source.and_then(|source| source.component))
            .unwrap_or_default(),
        time,
        count,
    }
}

async fn core_events(client: &kube::Client, name: &str) -> Result<Vec<EventLine>, Error> {
    let involved = format!("involvedObject.kind=Instance,involvedObject.name={name}");
    let events: Api<CoreEvent> = Api::all(client.clone());
    let list = events
        .list(&ListParams::default().fields(&involved))
        .await
        .map_err(error::api(format!(
            "listing core/v1 Events regarding Instance {name}"
        )))?;
    Ok(list
        .items
        .into_iter()
        .filter(|event| about_pakket(Some(&event.involved_object)))
        .map(|event| EventLine {
            kind: event.type_.unwrap_or_default(),
            reason: event.reason.unwrap_or_default(),
            message: event.message.unwrap_or_default(),
            from: event
                .reporting_component
                .or(event.source.and_then(|source| source.component))
                .unwrap_or_default(),
            time: event
                .last_timestamp
                .map(|time| time.0)
                .or(event.event_time.map(|time| time.0))
                .or(event.metadata.creation_timestamp.map(|time| time.0)),
            count: event.count.unwrap_or(1),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    #[test]
    fn only_events_about_pakket_instances_count() {
        let reference = |api_version: Option<&str>| ObjectReference {
            api_version: api_version.map(str::to_owned),
            kind: Some("Instance".into()),
            ..ObjectReference::default()
        };
        assert!(about_pakket(Some(&reference(Some(
            "core.pakket.dev/v1alpha1"
        )))));
        assert!(about_pakket(Some(&reference(None))));
        assert!(!about_pakket(Some(&reference(Some("example.com/v1")))));
    }
}
