//! Events about Instances, without one Event per Instance when hundreds
//! change at once.
//!
//! Every status change is told in an Event, and a burst of them (a GitOps
//! sync creating 1,000 Instances) would cost the apiserver one more write
//! per Instance. So routine Normal Events (an install that went as
//! planned) are published while a budget lasts (a burst of
//! [`BURST`], refilled at [`REFILL_PER_SECOND`]); past it they are held
//! and told together, one Event per ProvisionerClass every
//! [`SUMMARY_EVERY`], naming the first Instances and counting the rest.
//! This is the idea of client-go's event spam filter, applied across
//! Instances. Warnings, a person's decisions, pivots and uninstalls are
//! always published one by one: they are what someone looks for on one
//! Instance, and the status of every Instance says what happened anyway.
//!
//! kube's `Recorder` keeps each Event it published for six minutes (to
//! count a repeat as a series) in a map that never shrinks, and drops the
//! old ones only when it publishes the next: after 500 Instances were
//! installed, pivoted and deleted, it held their Events, 6 MiB by
//! heaptrack, for as long as the provisioner stayed quiet. So once
//! nothing was published for [`QUIET`], the recorder is replaced by a
//! fresh one. A repeat after that much quiet is told as a new Event
//! instead of a count in the old one's series; closer repeats (the
//! runtime retries within a minute at most) keep the recorder busy and
//! are counted as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder};
use pakket_api::{Instance, ProvisionerClass};

/// Routine Events published at once before the budget runs out.
const BURST: f64 = 25.0;
/// How fast the budget comes back.
const REFILL_PER_SECOND: f64 = 1.0;
/// How often held Events are told together.
const SUMMARY_EVERY: Duration = Duration::from_secs(10);
/// Instances named in a summary; the rest are counted.
const NAMED_IN_SUMMARY: usize = 5;
/// How long nothing is published before the recorder is replaced: longer
/// than the runtime's longest retry ([`super::MAX_UNPACK_BACKOFF`]).
const QUIET: Duration = Duration::from_secs(90);

/// Publishes Events about Instances (see the module docs).
#[derive(Clone)]
pub struct Events {
    recording: Arc<Mutex<Recording>>,
    budget: Arc<Mutex<Budget>>,
}

impl Events {
    /// Events published with a recorder `new_recorder` makes (again once
    /// the last was quiet for [`QUIET`]); starts the task that
    /// tells held Events together (it ends when the last clone of this is
    /// dropped).
    pub fn new(new_recorder: impl Fn() -> Recorder + Send + 'static) -> Self {
        let events = Self {
            recording: Arc::new(Mutex::new(Recording::new(
                Box::new(new_recorder),
                Instant::now(),
            ))),
            budget: Arc::new(Mutex::new(Budget::new(Instant::now()))),
        };
        tokio::spawn(summarize(
            Arc::downgrade(&events.recording),
            Arc::downgrade(&events.budget),
        ));
        events
    }

    /// Publishes `event` about `instance`, without holding up the caller.
    pub fn publish(&self, instance: &Instance, event: Event) {
        let recorder = self
            .recording
            .lock()
            .expect("not poisoned")
            .recorder(Instant::now());
        let reference = instance.object_ref(&());
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::debug!(%error, "publishing an Event");
            }
        });
    }

    /// Publishes a status change's Event: a Warning always, a Normal one
    /// while the budget lasts, else held for the class's next summary.
    pub fn publish_change(&self, instance: &Instance, event: Event) {
        let admitted = event.type_ == EventType::Warning || {
            let mut budget = self.budget.lock().expect("not poisoned");
            budget.admit(Instant::now()) || {
                budget.hold(&instance.spec.class, &kube::ResourceExt::name_any(instance));
                false
            }
        };
        if admitted {
            self.publish(instance, event);
        }
    }
}

/// The recorder Events go through, and when it was last used.
struct Recording {
    recorder: Recorder,
    new_recorder: Box<dyn Fn() -> Recorder + Send>,
    last_used: Instant,
    /// Whether `recorder` was made after `last_used`: nothing to drop.
    fresh: bool,
}

impl Recording {
    fn new(new_recorder: Box<dyn Fn() -> Recorder + Send>, now: Instant) -> Self {
        Self {
            recorder: new_recorder(),
            new_recorder,
            last_used: now,
            fresh: true,
        }
    }

    /// The recorder to publish with at `now`.
    fn recorder(&mut self, now: Instant) -> Recorder {
        self.last_used = now;
        self.fresh = false;
        self.recorder.clone()
    }

    /// Replaces the recorder, and the Events it keeps, when it was not
    /// used for [`QUIET`]; whether it did.
    fn renew_if_quiet(&mut self, now: Instant) -> bool {
        let quiet = now.saturating_duration_since(self.last_used) >= QUIET;
        if !quiet || self.fresh {
            return false;
        }
        self.recorder = (self.new_recorder)();
        self.fresh = true;
        true
    }
}

/// A token bucket for routine Events, and the Events held past it.
struct Budget {
    tokens: f64,
    refilled: Instant,
    /// Per ProvisionerClass: how many were held, and the first names.
    held: BTreeMap<String, Held>,
}

#[derive(Default, Debug, PartialEq)]
struct Held {
    count: usize,
    first: Vec<String>,
}

impl Budget {
    fn new(now: Instant) -> Self {
        Self {
            tokens: BURST,
            refilled: now,
            held: BTreeMap::new(),
        }
    }

    /// Takes one token, if there is one at `now`.
    fn admit(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * REFILL_PER_SECOND).min(BURST);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn hold(&mut self, class: &str, instance: &str) {
        let held = self.held.entry(class.to_owned()).or_default();
        held.count += 1;
        if held.first.len() < NAMED_IN_SUMMARY {
            held.first.push(instance.to_owned());
        }
    }
}

/// The summary Event for `held` Events of Instances of one class.
fn summary(held: &Held) -> Event {
    let mut names = held.first.join(", ");
    if held.count > held.first.len() {
        names.push_str(&format!(" and {} more", held.count - held.first.len()));
    }
    Event {
        type_: EventType::Normal,
        reason: "InstancesChanged".into(),
        note: Some(format!(
            "{} Instances of this class changed as planned, told together to spare the apiserver \
             one Event each: {names}; each Instance's conditions say what it did",
            held.count
        )),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// Every [`SUMMARY_EVERY`], publishes one summary per class with held
/// Events, on the ProvisionerClass; renews a recorder gone quiet.
async fn summarize(recording: Weak<Mutex<Recording>>, budget: Weak<Mutex<Budget>>) {
    let mut ticker = tokio::time::interval(SUMMARY_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let (Some(recording), Some(budget)) = (recording.upgrade(), budget.upgrade()) else {
            return;
        };
        let held = std::mem::take(&mut budget.lock().expect("not poisoned").held);
        drop(budget);
        let recorder = {
            let mut using = recording.lock().expect("not poisoned");
            if held.is_empty() {
                using.renew_if_quiet(Instant::now());
                continue;
            }
            using.recorder(Instant::now())
        };
        drop(recording);
        for (class, held) in held {
            let reference = ObjectReference {
                api_version: Some(ProvisionerClass::api_version(&()).into_owned()),
                kind: Some(ProvisionerClass::kind(&()).into_owned()),
                name: Some(class),
                ..ObjectReference::default()
            };
            if let Err(error) = recorder.publish(&summary(&held), &reference).await {
                tracing::debug!(%error, "publishing a summary Event");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_published_then_held_until_the_budget_refills() {
        let start = Instant::now();
        let mut budget = Budget::new(start);
        let admitted = (0..100).filter(|_| budget.admit(start)).count();
        assert_eq!(admitted, BURST as usize);
        assert!(!budget.admit(start + Duration::from_millis(500)));
        assert!(budget.admit(start + Duration::from_secs(2)));
        // Never more than a burst, however long it was quiet.
        let later = start + Duration::from_secs(3600);
        let admitted = (0..100).filter(|_| budget.admit(later)).count();
        assert_eq!(admitted, BURST as usize);
    }

    #[tokio::test]
    async fn a_recorder_quiet_for_a_while_is_renewed_once() {
        let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = made.clone();
        // A client to nowhere: nothing is published.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let new_recorder = move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            super::super::context::recorder(client.clone(), "test")
        };
        let start = Instant::now();
        let mut recording = Recording::new(Box::new(new_recorder), start);
        assert!(!recording.renew_if_quiet(start + QUIET), "never used");
        recording.recorder(start + Duration::from_secs(60));
        let used = start + Duration::from_secs(60);
        assert!(!recording.renew_if_quiet(used + QUIET - Duration::from_secs(1)));
        assert!(recording.renew_if_quiet(used + QUIET));
        assert!(!recording.renew_if_quiet(used + 2 * QUIET), "fresh already");
        let made = made.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(made, 2, "the first, and one renewal");
    }

    #[test]
    fn held_events_are_counted_per_class_and_the_first_named() {
        let mut budget = Budget::new(Instant::now());
        for i in 0..8 {
            budget.hold("plain", &format!("i{i}"));
        }
        budget.hold("other", "x");
        let plain = &budget.held["plain"];
        assert_eq!(plain.count, 8);
        assert_eq!(plain.first, ["i0", "i1", "i2", "i3", "i4"]);
        let note = summary(plain).note.unwrap();
        assert!(
            note.starts_with("8 Instances of this class changed as planned")
                && note.contains("i0, i1, i2, i3, i4 and 3 more"),
            "{note}"
        );
        assert_eq!(budget.held["other"].count, 1);
    }
}
