//! Gauges about the Instances of this provisioner's classes, for alerts
//! that name an Instance: how many stand where, which are not Ready and
//! since when, which are Stalled, which wait for a person's approval.
//!
//! They are read from the Instances' own conditions, by type string
//! (`Ready`, `Stalled`, and `Approved` False with reason
//! `ApprovalPending`), so they follow whatever the status writer says and
//! need no hook in the reconcile. The leader reads them from the
//! controller's own caches, which the controller hands over when it starts
//! ([`Metrics::read_instances_from`]), every [`CACHED_EVERY`], with no
//! request at all (the reflector already lists and watches them), and
//! replaces the gauges whole; a standby shows none, so two replicas never
//! report one Instance twice.
//! An Instance without a `Ready` condition is counted (`ready="Unknown"`)
//! but has no `not_ready_since` series: nothing says since when.
//!
//! Times are gauges of Unix seconds (`..._since_timestamp_seconds`), as
//! Prometheus names them: the value changes only when the condition
//! does, and an alert compares it with `time()`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use pakket_api::{Instance, ProvisionerClass};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Metrics;
use crate::leader::LeaderState;

/// How often the gauges are read from the controller's caches: reading
/// memory costs nothing, so they may follow closely.
pub const CACHED_EVERY: Duration = Duration::from_secs(5);

pub use pakket_api::readiness::{READY, STALLED};
/// The condition type that says whether an Instance may be installed.
pub const APPROVED: &str = "Approved";
/// `Approved`'s reason while a person must decide.
pub const APPROVAL_PENDING: &str = "ApprovalPending";

/// Where one Instance stands, read from its conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Since {
    /// The Instance.
    pub name: String,
    /// Its ProvisionerClass.
    pub class: String,
    /// The condition's reason.
    pub reason: String,
    /// The condition's `lastTransitionTime`, Unix seconds.
    pub at: i64,
}

/// What the gauges show, computed by [`tally`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Instances by (class, `Ready`'s status or `Unknown`, its reason or "").
    pub counts: BTreeMap<(String, String, String), i64>,
    /// Instances whose `Ready` is False or Unknown, since it turned so.
    pub not_ready: Vec<Since>,
    /// Instances whose `Stalled` is True, since it turned so.
    pub stalled: Vec<Since>,
    /// Instances whose `Approved` is False with reason `ApprovalPending`.
    pub approval_pending: Vec<Since>,
}

/// Counts `instances`, each given as (name, class, conditions). Pure.
pub fn tally<'a>(
    instances: impl IntoIterator<Item = (&'a str, &'a str, &'a [Condition])>,
) -> Tally {
    let mut tally = Tally::default();
    for (name, class, conditions) in instances {
        let find = |type_: &str| conditions.iter().find(|c| c.type_ == type_);
        let since = |condition: &Condition| Since {
            name: name.to_owned(),
            class: class.to_owned(),
            reason: condition.reason.clone(),
            at: condition.last_transition_time.0.as_second(),
        };
        let ready = find(READY);
        let (status, reason) = ready.map_or(("Unknown", ""), |c| (&c.status, &c.reason));
        *tally
            .counts
            .entry((class.to_owned(), status.to_owned(), reason.to_owned()))
            .or_default() += 1;
        if let Some(ready) = ready.filter(|c| c.status != "True") {
            tally.not_ready.push(since(ready));
        }
        if let Some(stalled) = find(STALLED).filter(|c| c.status == "True") {
            tally.stalled.push(since(stalled));
        }
        if let Some(pending) =
            find(APPROVED).filter(|c| c.status == "False" && c.reason == APPROVAL_PENDING)
        {
            tally.approval_pending.push(since(pending));
        }
    }
    tally
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CountLabels {
    class: String,
    /// `True`, `False` or `Unknown` (no `Ready` condition counts as Unknown).
    ready: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SinceLabels {
    /// The Instance's name (`instance` is Prometheus's own label, the target).
    name: String,
    class: String,
    reason: String,
}

impl From<&Since> for SinceLabels {
    fn from(since: &Since) -> Self {
        Self {
            name: since.name.clone(),
            class: since.class.clone(),
            reason: since.reason.clone(),
        }
    }
}

/// The Instance gauges of [`Metrics`], replaced whole by [`Tally`]s.
#[derive(Default)]
pub(super) struct InstanceGauges {
    instances: Family<CountLabels, Gauge>,
    not_ready_since: Family<SinceLabels, Gauge>,
    stalled_since: Family<SinceLabels, Gauge>,
    approval_pending_since: Family<SinceLabels, Gauge>,
    /// Held while the families are cleared and filled, so a scrape (which
    /// reads without it) sees at worst one replacement half done, and two
    /// replacements never interleave.
    replacing: Mutex<()>,
    /// The controller's caches, once it hands them over.
    caches: Mutex<Option<Caches>>,
}

/// The controller's caches of Instances and ProvisionerClasses.
#[derive(Clone)]
pub(super) struct Caches {
    pub(super) instances: Store<Instance>,
    pub(super) classes: Store<ProvisionerClass>,
}

impl InstanceGauges {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "pakket_instances",
            "Instances of this provisioner's classes, by class and Ready's status and reason \
             (leader only)",
            self.instances.clone(),
        );
        registry.register(
            "pakket_instance_not_ready_since_timestamp_seconds",
            "When each Instance whose Ready is False or Unknown turned so (leader only)",
            self.not_ready_since.clone(),
        );
        registry.register(
            "pakket_instance_stalled_since_timestamp_seconds",
            "When each Instance whose Stalled is True turned so: a refusal or failure \
             that waits for someone (leader only)",
            self.stalled_since.clone(),
        );
        registry.register(
            "pakket_instance_approval_pending_since_timestamp_seconds",
            "When each Instance waiting for a person's approval started waiting (leader only)",
            self.approval_pending_since.clone(),
        );
    }

    pub(super) fn read_from(&self, caches: Caches) {
        *self.caches.lock().expect("instance caches lock poisoned") = Some(caches);
    }

    /// The tally of provisioner `id`'s Instances in the controller's
    /// caches; `None` until the controller handed them over.
    fn cached(&self, id: &str) -> Option<Tally> {
        let caches = self
            .caches
            .lock()
            .expect("instance caches lock poisoned")
            .clone()?;
        let ours = ours(caches.classes.state().iter().map(|class| &**class), id);
        let instances = caches.instances.state();
        Some(tally_of(
            instances.iter().map(|instance| &**instance),
            &ours,
        ))
    }

    pub(super) fn show(&self, tally: &Tally) {
        let _replacing = self
            .replacing
            .lock()
            .expect("instance gauges lock poisoned");
        self.instances.clear();
        for ((class, ready, reason), count) in &tally.counts {
            let labels = CountLabels {
                class: class.clone(),
                ready: ready.clone(),
                reason: reason.clone(),
            };
            self.instances.get_or_create(&labels).set(*count);
        }
        for (family, list) in [
            (&self.not_ready_since, &tally.not_ready),
            (&self.stalled_since, &tally.stalled),
            (&self.approval_pending_since, &tally.approval_pending),
        ] {
            family.clear();
            for since in list {
                family.get_or_create(&since.into()).set(since.at);
            }
        }
    }
}

/// Keeps the Instance gauges of `metrics` current for the provisioner
/// `id`, forever (abort the task to stop): read from the controller's
/// caches every [`CACHED_EVERY`] while this replica leads, emptied when it
/// stops leading. Nothing is shown before the controller hands its caches
/// over: listing every Instance again at start-up would repeat the
/// reflector's own list.
pub async fn keep_current(id: String, metrics: Arc<Metrics>, leader: LeaderState) {
    let mut shown = false;
    loop {
        if !leader.is_leader() {
            if std::mem::take(&mut shown) {
                metrics.show_instances(&Tally::default());
            }
        } else if let Some(tally) = metrics.instances.cached(&id) {
            metrics.show_instances(&tally);
            shown = true;
        }
        tokio::time::sleep(CACHED_EVERY).await;
    }
}

/// The names of the classes that name provisioner `id`.
fn ours<'a>(classes: impl Iterator<Item = &'a ProvisionerClass>, id: &str) -> BTreeSet<String> {
    classes
        .filter(|class| class.spec.provisioner == id)
        .map(|class| class.name_any())
        .collect()
}

/// The tally of the `instances` of the classes `ours`.
fn tally_of<'a>(instances: impl Iterator<Item = &'a Instance>, ours: &BTreeSet<String>) -> Tally {
    tally(
        instances
            .filter(|instance| ours.contains(&instance.spec.class))
            .map(|instance| {
                let conditions = instance
                    .status
                    .as_ref()
                    .map_or(&[][..], |status| &status.conditions[..]);
                (
                    instance.metadata.name.as_deref().unwrap_or_default(),
                    instance.spec.class.as_str(),
                    conditions,
                )
            }),
    )
}

/// The tally of the Instances whose class names provisioner `id`, listed.
#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn condition(type_: &str, status: &str, reason: &str, at: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::from_second(at).unwrap()),
        }
    }

    fn since(name: &str, reason: &str, at: i64) -> Since {
        Since {
            name: name.into(),
            class: "plain".into(),
            reason: reason.into(),
            at,
        }
    }

    #[test]
    fn instances_are_counted_and_timed_by_their_conditions() {
        let ready = [
            condition(READY, "True", "Installed", 100),
            condition("Reconciling", "False", "Installed", 100),
            condition(STALLED, "False", "Installed", 100),
            condition(APPROVED, "True", "ApprovedByPolicy", 50),
        ];
        let pending = [
            condition(READY, "False", APPROVAL_PENDING, 200),
            condition("Reconciling", "True", APPROVAL_PENDING, 200),
            condition(APPROVED, "False", APPROVAL_PENDING, 190),
        ];
        let failed = [
            condition(READY, "False", "InstallFailed", 300),
            condition(STALLED, "True", "InstallFailed", 310),
            condition(APPROVED, "True", "ApprovedByPolicy", 50),
        ];
        let denied = [
            condition(READY, "False", "ApprovalDenied", 400),
            condition(STALLED, "True", "ApprovalDenied", 400),
            condition(APPROVED, "False", "ApprovalDenied", 400),
        ];
        // Before the status writer says Ready: counted, never timed.
        let unwritten = [condition(APPROVED, "True", "ApprovedByPolicy", 50)];
        let tally = tally([
            ("web", "plain", &ready[..]),
            ("db", "plain", &pending[..]),
            ("cache", "plain", &failed[..]),
            ("queue", "plain", &denied[..]),
            ("old", "plain", &unwritten[..]),
            ("new", "plain", &[][..]),
            ("api", "plain", &ready[..]),
        ]);
        let key = |ready: &str, reason: &str| ("plain".to_owned(), ready.into(), reason.into());
        assert_eq!(
            tally.counts,
            BTreeMap::from([
                (key("True", "Installed"), 2),
                (key("False", APPROVAL_PENDING), 1),
                (key("False", "InstallFailed"), 1),
                (key("False", "ApprovalDenied"), 1),
                (key("Unknown", ""), 2),
            ])
        );
        assert_eq!(
            tally.not_ready,
            [
                since("db", APPROVAL_PENDING, 200),
                since("cache", "InstallFailed", 300),
                since("queue", "ApprovalDenied", 400),
            ]
        );
        assert_eq!(
            tally.stalled,
            [
                since("cache", "InstallFailed", 310),
                since("queue", "ApprovalDenied", 400)
            ]
        );
        // Denied is a decision made, not one waited for.
        assert_eq!(tally.approval_pending, [since("db", APPROVAL_PENDING, 190)]);
    }

    #[test]
    fn the_controllers_caches_are_read_for_this_provisioners_classes_only() {
        use kube::runtime::reflector;
        use kube::runtime::watcher::Event;
        let metrics = Metrics::new();
        assert_eq!(metrics.instances.cached("pakket.dev/plain"), None);

        let (classes, mut class_writer) = reflector::store::<ProvisionerClass>();
        for (name, provisioner) in [("plain", "pakket.dev/plain"), ("helm", "pakket.dev/helm")] {
            let class = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "spec": {"provisioner": provisioner},
            }))
            .unwrap();
            class_writer.apply_watcher_event(&Event::Apply(class));
        }
        let (instances, mut instance_writer) = reflector::store::<Instance>();
        for (name, class) in [("web", "plain"), ("chart", "helm")] {
            let instance = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "spec": {"class": class, "bundle": {"name": name}},
                "status": {"conditions": [{
                    "type": READY, "status": "False", "reason": "Installing",
                    "message": "", "lastTransitionTime": "1970-01-01T00:01:40Z",
                }]},
            }))
            .unwrap();
            instance_writer.apply_watcher_event(&Event::Apply(instance));
        }
        metrics.read_instances_from(instances, classes);
        let tally = metrics.instances.cached("pakket.dev/plain").unwrap();
        assert_eq!(tally.not_ready, [since("web", "Installing", 100)]);
        assert_eq!(tally.counts.values().sum::<i64>(), 1, "{tally:?}");
    }

    #[test]
    fn a_new_tally_replaces_the_series_of_the_last() {
        let metrics = Metrics::new();
        let failed = [
            condition(READY, "False", "InstallFailed", 300),
            condition(STALLED, "True", "InstallFailed", 310),
        ];
        metrics.show_instances(&tally([("cache", "plain", &failed[..])]));
        let text = metrics.encode();
        for line in [
            r#"pakket_instances{class="plain",ready="False",reason="InstallFailed"} 1"#,
            r#"pakket_instance_not_ready_since_timestamp_seconds{name="cache",class="plain",reason="InstallFailed"} 300"#,
            r#"pakket_instance_stalled_since_timestamp_seconds{name="cache",class="plain",reason="InstallFailed"} 310"#,
        ] {
            assert!(text.contains(line), "no {line} in\n{text}");
        }
        let ready = [condition(READY, "True", "Installed", 400)];
        metrics.show_instances(&tally([("cache", "plain", &ready[..])]));
        let text = metrics.encode();
        assert!(
            text.contains(r#"pakket_instances{class="plain",ready="True",reason="Installed"} 1"#),
            "{text}"
        );
        assert!(!text.contains(r#"name="cache""#), "{text}");
    }
}
