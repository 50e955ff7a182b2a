//! What every reconcile shares: the cluster, the caches, the content store,
//! and the unpack retry bookkeeping.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::{Client, ResourceExt};
use pakket_api::{Bundle, Instance, ProvisionerClass};

use crate::apply::Kinds;
use crate::content::ImageSources;
use crate::drift::Drift;
use crate::provisioner::ClusterFacts;
use crate::serve::Metrics;

/// The longest wait before retrying a Bundle that failed to unpack.
pub const MAX_UNPACK_BACKOFF: Duration = Duration::from_secs(60);
/// The first wait before retrying a Bundle that failed to unpack.
const FIRST_UNPACK_BACKOFF: Duration = Duration::from_secs(1);

/// What the controller shares between reconciles.
pub struct Context<P> {
    /// The provisioner.
    pub provisioner: P,
    /// The cluster.
    pub client: Client,
    /// Unpacked content, by digest.
    pub store: Arc<crate::store::Store>,
    /// Registries' clients, shared across reconciles.
    pub images: ImageSources,
    /// Unpack failures in a row, by Instance uid, for the retry backoff.
    pub unpack_failures: Mutex<HashMap<String, u32>>,
    /// Instances (by UID) whose last apply failed. The status says so too,
    /// but a reconcile may read a status older than the runtime's own last
    /// write, and must not take a failed Instance for a first install.
    pub install_failures: Mutex<std::collections::HashSet<String>>,
    /// The resourceVersion of the last status this process wrote, by
    /// Instance UID: a cached Instance at another version may be older
    /// than that write (see [`Context::behind`]).
    pub status_written: Mutex<HashMap<String, String>>,
    /// Instances (by UID) and the digest whose stored content failed to
    /// render once and was fetched again (see [`Context::first_render_failure`]).
    pub render_retries: Mutex<std::collections::HashSet<(String, String)>>,
    /// Reconcile counts and durations, served on `/metrics`.
    pub metrics: Arc<Metrics>,
    /// How often a healthy Instance is looked at again though nothing
    /// changed ([`super::RunOptions::resync`]).
    pub resync: std::time::Duration,
    /// Kinds discovered so far, shared by every reconcile.
    pub kinds: Kinds,
    /// Every ProvisionerClass, kept current by a watch (no GET per reconcile).
    pub classes: Store<ProvisionerClass>,
    /// Every Bundle, kept current by a watch.
    pub bundles: Store<Bundle>,
    /// Every Instance, kept current by the controller's own watch.
    pub instances: Store<Instance>,
    /// Watches on installed objects, so hand edits are put back.
    pub drift: Arc<Drift>,
    /// Publishes Events about Instances.
    pub events: super::events::Events,
    /// Verifies the admission webhook's requester records.
    pub record_key: Option<pakket_api::RecordKey>,
    /// Where policy decisions' inputs are kept
    /// ([`super::RunOptions::decision_records`]).
    pub decision_records: Option<String>,
    /// Permits for fetching and unpacking, one per Bundle at a time.
    pub unpacks: tokio::sync::Semaphore,
    /// Permits for reading content from ConfigMaps, one per ConfigMap
    /// mounted (`CONFIG_MAP_READS` in all).
    pub config_map_reads: tokio::sync::Semaphore,
    /// What the cluster runs and serves, and when that was read.
    pub cluster: tokio::sync::Mutex<Option<(std::time::Instant, Arc<ClusterFacts>)>>,
    /// Content reconciles are installing now, which the store's
    /// collection keeps until statuses pin it.
    pub in_flight: super::store_gc::InFlight,
}

/// Most ConfigMaps of content read and unpacked at once. Each is at most
/// the apiserver's object limit (about 1.5 MiB), so this bounds their
/// memory to a few dozen MiB; it is wider than the limit on downloads
/// because a ConfigMap read is one API round trip, and with only two at a
/// time a thousand small Instances waited on each other's reads (7.1 s
/// against 5.2 s with 16, `cargo bench -p pakket-runtime --bench instances`).
pub const CONFIG_MAP_READS: u32 = 16;

/// How long [`ClusterFacts`] are used before they are read again.
const CLUSTER_FACTS_FOR: Duration = Duration::from_secs(300);

/// How old cached facts must be before a failed render discovers again.
const REDISCOVER_AFTER: Duration = Duration::from_secs(2);

/// The Event recorder of a provisioner process, named after its id (and
/// its pod, when it runs in one).
pub fn recorder(client: Client, provisioner_id: &str) -> Recorder {
    let reporter = Reporter {
        controller: provisioner_id.to_owned(),
        instance: std::env::var("POD_NAME").ok(),
    };
    Recorder::new(client, reporter)
}

impl<P> Context<P> {
    /// The cluster's version and served kinds, read at most every
    /// `CLUSTER_FACTS_FOR` (a discovery is a request per API group).
    /// What cannot be read is left out, not an error: a provisioner that
    /// needs it says so in its own words.
    pub async fn cluster_facts(&self) -> Arc<ClusterFacts> {
        let mut cached = self.cluster.lock().await;
        if let Some((read, facts)) = cached.as_ref()
            && read.elapsed() < CLUSTER_FACTS_FOR
        {
            return Arc::clone(facts);
        }
        let mut facts = ClusterFacts::default();
        match self.client.apiserver_version().await {
            Ok(info) => {
                let number = |text: &str| text.trim_end_matches('+').parse::<u32>().ok();
                facts.version = number(&info.major).zip(number(&info.minor));
            }
            Err(error) => tracing::warn!(%error, "reading the apiserver's version"),
        }
        match kube::discovery::Discovery::new(self.client.clone())
            .run()
            .await
        {
            Ok(discovery) => {
                for group in discovery.groups() {
                    let recommended = group.recommended_resources();
                    let versioned = group
                        .versions()
                        .flat_map(|version| group.versioned_resources(version));
                    for (resource, capabilities) in recommended.into_iter().chain(versioned) {
                        let key = (resource.api_version.clone(), resource.kind.clone());
                        if capabilities.scope == kube::discovery::Scope::Cluster {
                            facts.cluster_scoped.insert(key.clone());
                        }
                        facts.served.insert(key);
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "discovering the served APIs"),
        }
        let facts = Arc::new(facts);
        *cached = Some((std::time::Instant::now(), Arc::clone(&facts)));
        facts
    }

    /// Forgets the cached facts unless they were read a moment ago, so the
    /// next look discovers again: a render that failed on what the cluster
    /// serves (a kind whose CRD another Instance just installed, and whose
    /// installing woke this one) is not held back for the cache's whole
    /// life. The moment bounds discovery to one per `REDISCOVER_AFTER`
    /// however many renders fail. Whether it forgot.
    pub async fn rediscover_soon(&self) -> bool {
        let mut cached = self.cluster.lock().await;
        let stale = cached
            .as_ref()
            .is_some_and(|(read, _)| read.elapsed() > REDISCOVER_AFTER);
        if stale {
            *cached = None;
        }
        stale
    }

    /// [`Self::cluster_facts`] with what the Instances other than
    /// `instance` have installed now (from the watch caches): each
    /// installed Instance's active Bundle and the properties its status
    /// records.
    pub async fn cluster_facts_for(&self, instance: &Instance) -> ClusterFacts {
        let mut facts = (*self.cluster_facts().await).clone();
        let uid = instance.uid();
        for other in self.instances.state() {
            if other.uid() == uid || other.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(status) = &other.status else {
                continue;
            };
            let installed = pakket_api::condition::find(
                &status.conditions,
                pakket_api::ConditionType::Installed,
            )
            .is_some_and(|c| c.status == "True");
            let Some(bundle) = status.active_bundle.as_ref().filter(|_| installed) else {
                continue;
            };
            // An embedded Bundle's record is in the Instance's own status.
            let embedded = status
                .embedded_bundle
                .as_ref()
                .filter(|record| record.name == *bundle && other.spec.bundle.spec.is_some())
                .map(|record| record.status.properties.clone());
            let properties = embedded
                .or_else(|| {
                    self.bundles
                        .get(&kube::runtime::reflector::ObjectRef::new(bundle))
                        .and_then(|bundle| bundle.status.as_ref().map(|s| s.properties.clone()))
                })
                .unwrap_or_default();
            if !properties.is_empty() {
                facts.installed.push(crate::provisioner::InstalledContent {
                    instance: other.name_any(),
                    bundle: bundle.clone(),
                    properties,
                });
            }
        }
        facts.installed.sort_by(|a, b| a.instance.cmp(&b.instance));
        facts
    }

    /// Counts one more unpack failure of `instance`; returns how long to wait.
    pub fn unpack_failed(&self, instance: &Instance) -> Duration {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        let mut failures = self.unpack_failures.lock().expect("not poisoned");
        let count = failures.entry(key).or_default();
        let delay = backoff(*count);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets `instance`'s unpack failures.
    pub fn unpack_succeeded(&self, instance: &Instance) {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.unpack_failures
            .lock()
            .expect("not poisoned")
            .remove(&key);
    }

    /// Records whether `instance`'s apply just failed.
    pub fn apply_ended(&self, instance: &Instance, failed: bool) {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        let mut failures = self.install_failures.lock().expect("not poisoned");
        if failed {
            failures.insert(key);
        } else {
            failures.remove(&key);
        }
    }

    /// Whether this process saw `instance`'s last apply fail.
    pub fn apply_failed_before(&self, instance: &Instance) -> bool {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.install_failures
            .lock()
            .expect("not poisoned")
            .contains(&key)
    }

    /// Whether this is the first time `instance`'s content `digest` fails
    /// to render (then it is fetched again before the content is blamed).
    pub fn first_render_failure(&self, instance: &Instance, digest: &str) -> bool {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.render_retries
            .lock()
            .expect("not poisoned")
            .insert((key, digest.to_owned()))
    }

    /// Forgets that `instance`'s content failed to render: it rendered.
    pub fn rendered(&self, instance: &Instance) {
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.render_retries
            .lock()
            .expect("not poisoned")
            .retain(|(uid, _)| *uid != key);
    }

    /// Forgets everything kept in memory about `instance` (it is gone).
    pub fn forget(&self, instance: &Instance) {
        self.rendered(instance);
        let key = instance.uid().unwrap_or_else(|| instance.name_any());
        self.status_written
            .lock()
            .expect("not poisoned")
            .remove(&key);
        self.unpack_failures
            .lock()
            .expect("not poisoned")
            .remove(&key);
        self.install_failures
            .lock()
            .expect("not poisoned")
            .remove(&key);
    }
}

impl<P> Context<P> {
    /// Records that this process wrote the status of the Instance `key`
    /// (the report's `key`: its UID), which the API server
    /// stored at `resource_version` (`None`: forget it, another writer
    /// came between).
    pub fn wrote_status(&self, key: String, resource_version: Option<String>) {
        let mut written = self.status_written.lock().expect("not poisoned");
        match resource_version {
            Some(version) => written.insert(key, version),
            None => written.remove(&key),
        };
    }

    /// Whether `cached` may be older than the last status this process
    /// wrote for it: the watch cache lags the API server, and a reconcile
    /// that took such a copy for the truth would act on what it already
    /// changed (install again what is installed, write over a hand edit
    /// drift Warn leaves alone). Any other version than the one written
    /// counts: resourceVersions are not ordered, and a newer one (someone
    /// else's change) costs only a read.
    pub fn behind(&self, cached: &Instance) -> bool {
        let key = cached.uid().unwrap_or_else(|| cached.name_any());
        let written = self.status_written.lock().expect("not poisoned");
        older_than_written(written.get(&key), cached.resource_version().as_ref())
    }
}

/// Whether a cached copy at `cached` may be older than the status written
/// at `written`: it is not that very version.
fn older_than_written(written: Option<&String>, cached: Option<&String>) -> bool {
    written.is_some_and(|written| cached != Some(written))
}

#[cfg(test)]
mod behind_tests {
    use super::older_than_written;

    #[test]
    fn a_copy_is_behind_unless_it_is_the_version_this_process_wrote() {
        let wrote = "42".to_owned();
        let older = "41".to_owned();
        assert!(!older_than_written(Some(&wrote), Some(&wrote)));
        assert!(older_than_written(Some(&wrote), Some(&older)));
        assert!(older_than_written(Some(&wrote), None));
        // Nothing written by this process: the cache is all there is.
        assert!(!older_than_written(None, Some(&older)));
    }
}

/// The wait after `failures` earlier failures in a row: 1 s, doubling, capped.
fn backoff(failures: u32) -> Duration {
    FIRST_UNPACK_BACKOFF
        .saturating_mul(1u32.checked_shl(failures.min(16)).unwrap_or(u32::MAX))
        .min(MAX_UNPACK_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpack_retries_back_off_from_one_second_to_a_minute() {
        let delays: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX), MAX_UNPACK_BACKOFF);
    }
}
