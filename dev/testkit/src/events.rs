//! The Events about a cluster-scoped object (an Instance, a Catalog), as a
//! test reads them.

use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};

/// Every Event about Instance `name`, as listed now (Events about a
/// cluster-scoped object land in `default`).
pub async fn instance_events(client: &Client, name: &str) -> Vec<Event> {
    cluster_object_events(client, "Instance", name).await
}

/// Every Event about the cluster-scoped `kind` called `name`, as listed now.
pub async fn cluster_object_events(client: &Client, kind: &str, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let selector = format!("involvedObject.name={name},involvedObject.kind={kind}");
    events
        .list(&ListParams::default().fields(&selector))
        .await
        .expect("Events can be listed")
        .items
}
