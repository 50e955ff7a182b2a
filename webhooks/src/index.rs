//! What the webhook keeps in memory from watches: the Bundles and the
//! Instances that embed one (to know which ConfigMaps are Bundle content)
//! and the ProvisionerClasses (to warn about
//! a class that does not exist, and to know whose finalizer a new Instance
//! gets).
//!
//! Watching instead of asking per request keeps ConfigMap deletes and class
//! lookups off the apiserver's back; Bundles and Instances are stored
//! without status, annotations and managed fields, the parts that grow.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use pakket_api::{Bundle, Instance, ProvisionerClass};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::rules::content;

/// The in-memory view of Bundles and ProvisionerClasses.
#[derive(Clone)]
pub struct Index {
    bundles: Store<Bundle>,
    instances: Store<Instance>,
    classes: Store<ProvisionerClass>,
    /// Flips to `true` once; a watch channel because the stores' own
    /// `wait_until_ready` wakes only one of several concurrent waiters.
    ready: watch::Receiver<bool>,
    /// The watch tasks, ended by [`stop`](Self::stop).
    tasks: Arc<[AbortHandle]>,
}

impl Index {
    /// Starts watching (on the current tokio runtime); the index is
    /// [`ready`](Self::is_ready) once both initial lists arrived.
    pub fn spawn(client: Client) -> Self {
        let (bundles, bundle_writer) = reflector::store();
        let bundle_events = watcher(
            Api::<Bundle>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .modify(|bundle: &mut Bundle| {
            bundle.status = None;
            bundle.managed_fields_mut().clear();
        });
        let bundle_task = tokio::spawn(drain(reflector::reflector(bundle_writer, bundle_events)));

        // Embedded Bundles have no object: their Instances are their record.
        let (instances, instance_writer) = reflector::store();
        let instance_events = watcher(
            Api::<Instance>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .modify(|instance: &mut Instance| {
            instance.status = None;
            instance.annotations_mut().clear();
            instance.managed_fields_mut().clear();
        });
        let instance_task = tokio::spawn(drain(reflector::reflector(
            instance_writer,
            instance_events,
        )));

        let (classes, class_writer) = reflector::store();
        let class_events = watcher(
            Api::<ProvisionerClass>::all(client),
            watcher::Config::default(),
        )
        .default_backoff()
        .modify(|class: &mut ProvisionerClass| {
            class.managed_fields_mut().clear();
        });
        let class_task = tokio::spawn(drain(reflector::reflector(class_writer, class_events)));

        let (synced, ready) = watch::channel(false);
        let index = Self {
            bundles,
            instances,
            classes,
            ready,
            tasks: Arc::new([
                bundle_task.abort_handle(),
                instance_task.abort_handle(),
                class_task.abort_handle(),
            ]),
        };
        let (bundles, instances, classes) = (
            index.bundles.clone(),
            index.instances.clone(),
            index.classes.clone(),
        );
        tokio::spawn(async move {
            if bundles.wait_until_ready().await.is_ok()
                && instances.wait_until_ready().await.is_ok()
                && classes.wait_until_ready().await.is_ok()
            {
                let _ = synced.send(true);
                tracing::info!("bundle and class index synced");
            }
        });
        index
    }

    /// Whether every watch has delivered their initial list.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until [`is_ready`](Self::is_ready).
    pub async fn wait_ready(&self) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// Ends the watches (every clone of this index stops updating): a
    /// server that stops must not keep a watch on the apiserver.
    pub fn stop(&self) {
        for task in self.tasks.iter() {
            task.abort();
        }
    }

    /// Whether a ProvisionerClass of that name exists (as far as the watch knows).
    pub fn class_exists(&self, name: &str) -> bool {
        self.classes.get(&ObjectRef::new(name)).is_some()
    }

    /// The provisioner id ProvisionerClass `name` names, if the class exists
    /// (as far as the watch knows).
    pub fn provisioner_of(&self, name: &str) -> Option<String> {
        self.classes
            .get(&ObjectRef::new(name))
            .map(|class| class.spec.provisioner.clone())
    }

    /// The provisioner id ProvisionerClass `name` names, if that
    /// provisioner has claimed the class (it runs, or has run): only then
    /// is there someone to remove its finalizer.
    pub fn serving_provisioner_of(&self, name: &str) -> Option<String> {
        self.classes
            .get(&ObjectRef::new(name))
            .filter(|class| class.is_claimed())
            .map(|class| class.spec.provisioner.clone())
    }

    /// The names of the Bundles that mount ConfigMap `namespace/name`,
    /// sorted: Bundle objects by name, embedded ones as `NAME (embedded in
    /// Instance INSTANCE)`.
    pub fn bundles_mounting(&self, namespace: &str, name: &str) -> Vec<String> {
        let objects = self
            .bundles
            .state()
            .into_iter()
            .filter(|bundle| content::spec_mounts(&bundle.spec, namespace, name))
            .map(|bundle| bundle.name_any());
        let embedded = self.instances.state().into_iter().filter_map(|instance| {
            let spec = instance.spec.bundle.spec.as_ref()?;
            content::spec_mounts(spec, namespace, name).then(|| {
                format!(
                    "{} (embedded in Instance {})",
                    instance.spec.bundle.name,
                    instance.name_any()
                )
            })
        });
        let mut names: Vec<String> = objects.chain(embedded).collect();
        names.sort_unstable();
        names
    }
}

/// Drives a reflector stream; watch errors are retried by the backoff and
/// only logged here.
pub(crate) async fn drain<S, T>(stream: S)
where
    S: futures::Stream<Item = Result<T, watcher::Error>>,
{
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        if let Err(error) = event {
            tracing::warn!(%error, "watch failed; retrying");
        }
    }
}
