//! The APIs Instances installed, from watches: the CustomResourceDefinitions
//! and APIServices that carry the Instance UID label the runtime writes
//! ([`INSTANCE_UID_LABEL`]), for the in-use check on Instance deletion
//! ([`crate::rules::instance_in_use`]).
//!
//! Without it, each Instance DELETE costs two cluster-wide lists (CRDs and
//! APIServices by label) before anything else is asked. The watches select
//! on the label existing, so the cluster's other CRDs are never held, and
//! the CRDs are stored without what grows and is not needed to name their
//! kinds: OpenAPI schemas (often most of a CRD), status, annotations
//! (`last-applied-configuration` repeats the whole object) and managed
//! fields. What [`inventory::provided_among`] reads stays: the labels,
//! group, names, scope and served versions.
//!
//! Until both initial lists have arrived the cache knows nothing, and an
//! empty answer would let an Instance in use be deleted: so
//! [`ApiCache::provided`] answers only once synced, and the in-use check
//! lists as before until then. A cluster without the aggregation layer's
//! API never syncs the APIService watch; it keeps the lists, as it would
//! without this cache. Once synced, the cache lags the apiserver by a
//! watch event's latency (milliseconds): a CRD installed that recently
//! has no custom resources yet whose deletion it would have to prevent.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use pakket_api::ownership::INSTANCE_UID_LABEL;
use pakket_api::{BundleProperty, Instance};
use pakket_runtime::kernel::inventory::{self, Provided};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The watched CRDs and APIServices Instances installed.
#[derive(Clone)]
pub struct ApiCache {
    crds: Store<CustomResourceDefinition>,
    services: Store<APIService>,
    /// Flips to `true` once both stores have their initial list.
    ready: watch::Receiver<bool>,
    tasks: Arc<[AbortHandle]>,
}

impl ApiCache {
    /// Starts both watches on the current tokio runtime.
    pub fn spawn(client: Client) -> Self {
        let labelled = watcher::Config::default().labels(INSTANCE_UID_LABEL);
        let (crds, crd_writer) = reflector::store();
        let crd_events = watcher(
            Api::<CustomResourceDefinition>::all(client.clone()),
            labelled.clone(),
        )
        .default_backoff()
        .modify(slim_crd);
        let crd_task = tokio::spawn(crate::index::drain(reflector::reflector(
            crd_writer, crd_events,
        )));
        let (services, service_writer) = reflector::store();
        let service_events = watcher(Api::<APIService>::all(client), labelled)
            .default_backoff()
            .modify(slim_service);
        let service_task = tokio::spawn(crate::index::drain(reflector::reflector(
            service_writer,
            service_events,
        )));
        let (synced, ready) = watch::channel(false);
        let (crd_store, service_store) = (crds.clone(), services.clone());
        let sync_task = tokio::spawn(async move {
            if crd_store.wait_until_ready().await.is_ok()
                && service_store.wait_until_ready().await.is_ok()
            {
                let _ = synced.send(true);
                tracing::info!("CRD and APIService cache synced");
            }
        });
        Self {
            crds,
            services,
            ready,
            tasks: Arc::new([
                crd_task.abort_handle(),
                service_task.abort_handle(),
                sync_task.abort_handle(),
            ]),
        }
    }

    /// Whether both watches have delivered their initial list.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until [`is_ready`](Self::is_ready).
    pub async fn wait_ready(&self) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// Ends the watches.
    pub fn stop(&self) {
        for task in self.tasks.iter() {
            task.abort();
        }
    }

    /// What `instance` provides, from the cache; `None` until it has synced.
    pub fn provided(&self, instance: &Instance, properties: &[BundleProperty]) -> Option<Provided> {
        self.is_ready().then(|| {
            inventory::provided_among(
                instance,
                self.crds.state(),
                self.services.state(),
                properties,
            )
        })
    }
}

/// A CRD without its schemas, status, annotations and managed fields.
fn slim_crd(crd: &mut CustomResourceDefinition) {
    crd.status = None;
    crd.annotations_mut().clear();
    crd.managed_fields_mut().clear();
    crd.spec.conversion = None;
    for version in &mut crd.spec.versions {
        version.schema = None;
        version.additional_printer_columns = None;
        version.selectable_fields = None;
    }
}

/// An APIService without its CA bundle, status, annotations and managed
/// fields (only its name and labels are read).
fn slim_service(service: &mut APIService) {
    service.status = None;
    service.annotations_mut().clear();
    service.managed_fields_mut().clear();
    if let Some(spec) = service.spec.as_mut() {
        spec.ca_bundle = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cached_crd_keeps_what_names_its_kinds_and_drops_its_schemas() {
        let mut crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {
                "name": "widgets.example.com",
                "labels": {INSTANCE_UID_LABEL: "u1"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{…}"},
            },
            "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object"}},
                     "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
                    {"name": "v0", "served": false, "storage": false},
                ],
            },
            "status": {"storedVersions": ["v1"]},
        }))
        .unwrap();
        let before = inventory::ProvidedKind::of(&crd);
        slim_crd(&mut crd);
        assert_eq!(inventory::ProvidedKind::of(&crd), before);
        assert_eq!(crd.labels()[INSTANCE_UID_LABEL], "u1");
        assert!(crd.spec.versions.iter().all(|v| v.schema.is_none()));
        assert!(crd.annotations().is_empty() && crd.status.is_none());
    }
}
