//! Events about Instances, without one Event per Instance when hundreds
//! change at once.
//!
//! Every status change is told in an Event, and a burst of them (a GitOps
//! sync creating, pivoting or deleting 1,000 Instances) would cost the
//! apiserver one more write per Instance. So every Event goes through a
//! budget (a burst of [`BURST`], refilled at [`REFILL_PER_SECOND`]); past
//! it, Events are held and told together, one Event per ProvisionerClass
//! and type every [`SUMMARY_EVERY`], counting them by reason and naming
//! the first Instances. This is the idea of client-go's event spam filter,
//! applied across Instances. Warnings have a budget of their own, so a
//! burst of routine Events (installs, pivots, uninstalls) never holds back
//! the one that says something failed; one at a time, as one Instance
//! goes wrong or someone acts on one, every Event is published as it is.
//! Held or not, the status of every Instance says what happened.
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

/// Events of one type published at once before the budget runs out.
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
    budget: Arc<Mutex<Budgets>>,
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
            budget: Arc::new(Mutex::new(Budgets::new(Instant::now()))),
        };
        tokio::spawn(summarize(
            Arc::downgrade(&events.recording),
            Arc::downgrade(&events.budget),
        ));
        events
    }

    /// Publishes `event` about `instance` while its type's budget lasts,
    /// else holds it for the class's next summary; never holds up the
    /// caller.
    pub fn publish(&self, instance: &Instance, event: Event) {
        let name = kube::ResourceExt::name_any(instance);
        let admitted = self.budget.lock().expect("not poisoned").admit(
            Instant::now(),
            &instance.spec.class,
            &name,
            &event,
        );
        if !admitted {
            return;
        }
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

/// The budgets of Normal Events and of Warnings, and the Events held
/// past them.
struct Budgets {
    normal: Budget,
    warning: Budget,
    /// Per ProvisionerClass and whether they are Warnings: what was held.
    held: BTreeMap<(String, bool), Held>,
}

impl Budgets {
    fn new(now: Instant) -> Self {
        Self {
            normal: Budget::new(now),
            warning: Budget::new(now),
            held: BTreeMap::new(),
        }
    }

    /// Whether `event` about Instance `instance` of class `class` may be
    /// published at `now`; if not, it is held for the class's summary.
    fn admit(&mut self, now: Instant, class: &str, instance: &str, event: &Event) -> bool {
        let warning = event.type_ == EventType::Warning;
        let budget = if warning {
            &mut self.warning
        } else {
            &mut self.normal
        };
        if budget.admit(now) {
            return true;
        }
        self.held
            .entry((class.to_owned(), warning))
            .or_default()
            .hold(instance, &event.reason);
        false
    }
}

/// A token bucket for the Events of one type.
struct Budget {
    tokens: f64,
    refilled: Instant,
}

/// Events of one class and type held past the budget.
#[derive(Default, Debug, PartialEq)]
struct Held {
    /// How many.
    count: usize,
    /// How many of each reason.
    reasons: BTreeMap<String, usize>,
    /// The first Instances they were about.
    first: Vec<String>,
}

impl Held {
    fn hold(&mut self, instance: &str, reason: &str) {
        self.count += 1;
        *self.reasons.entry(reason.to_owned()).or_default() += 1;
        if self.first.len() < NAMED_IN_SUMMARY && !self.first.iter().any(|name| name == instance) {
            self.first.push(instance.to_owned());
        }
    }
}

impl Budget {
    fn new(now: Instant) -> Self {
        Self {
            tokens: BURST,
            refilled: now,
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
}

/// The summary Event for `held` Events (Warnings if `warning`) about
/// Instances of one class.
fn summary(held: &Held, warning: bool) -> Event {
    let reasons: Vec<String> = held
        .reasons
        .iter()
        .map(|(reason, count)| format!("{reason} {count}"))
        .collect();
    let mut names = held.first.join(", ");
    if held.count > held.first.len() {
        names.push_str(", ...");
    }
    let (type_, reason) = if warning {
        (EventType::Warning, "InstancesWarned")
    } else {
        (EventType::Normal, "InstancesChanged")
    };
    Event {
        type_,
        reason: reason.into(),
        note: Some(
            format!(
                "{} Events about Instances of this class, told together to spare the apiserver \
                 one Event each: {} (Instances {names}); each Instance's conditions say what it did",
                held.count,
                reasons.join(", ")
            )
            .chars()
            .take(1000)
            .collect(),
        ),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// Every [`SUMMARY_EVERY`], publishes one summary per class and type with held
/// Events, on the ProvisionerClass; renews a recorder gone quiet.
async fn summarize(recording: Weak<Mutex<Recording>>, budget: Weak<Mutex<Budgets>>) {
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
        for ((class, warning), held) in held {
            let reference = ObjectReference {
                api_version: Some(ProvisionerClass::api_version(&()).into_owned()),
                kind: Some(ProvisionerClass::kind(&()).into_owned()),
                name: Some(class),
                ..ObjectReference::default()
            };
            if let Err(error) = recorder.publish(&summary(&held, warning), &reference).await {
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

    fn event(type_: EventType, reason: &str) -> Event {
        Event {
            type_,
            reason: reason.into(),
            note: None,
            action: "Test".into(),
            secondary: None,
        }
    }

    #[test]
    fn every_event_goes_through_a_budget_and_warnings_have_their_own() {
        let now = Instant::now();
        let mut budgets = Budgets::new(now);
        let uninstalled = event(EventType::Normal, "Uninstalled");
        let admitted = (0..100)
            .filter(|i| budgets.admit(now, "plain", &format!("i{i}"), &uninstalled))
            .count();
        assert_eq!(
            admitted, BURST as usize,
            "uninstalls past the burst are held"
        );
        let pivoted = event(EventType::Normal, "Pivoted");
        assert!(
            !budgets.admit(now, "plain", "i0", &pivoted),
            "pivots share the routine budget"
        );
        let failed = event(EventType::Warning, "UninstallIncomplete");
        assert!(
            budgets.admit(now, "plain", "i1", &failed),
            "a Warning is not held back by a burst of routine Events"
        );
        let normal = &budgets.held[&("plain".to_owned(), false)];
        assert_eq!(normal.count, 76);
        assert_eq!(normal.reasons["Uninstalled"], 75);
        assert_eq!(normal.reasons["Pivoted"], 1);
        assert!(!budgets.held.contains_key(&("plain".to_owned(), true)));
        let warnings = (0..100)
            .filter(|i| budgets.admit(now, "plain", &format!("i{i}"), &failed))
            .count();
        assert_eq!(warnings, BURST as usize - 1, "Warnings have a budget too");
        assert_eq!(budgets.held[&("plain".to_owned(), true)].count, 76);
    }

    #[test]
    fn held_events_are_counted_per_class_and_reason_and_the_first_named() {
        let now = Instant::now();
        let mut budgets = Budgets::new(now);
        budgets.normal.tokens = 0.0;
        let installed = event(EventType::Normal, "InstallSucceeded");
        let uninstalled = event(EventType::Normal, "Uninstalled");
        for i in 0..8 {
            let event = if i < 6 { &installed } else { &uninstalled };
            assert!(!budgets.admit(now, "plain", &format!("i{i}"), event));
        }
        assert!(!budgets.admit(now, "plain", "i0", &uninstalled));
        assert!(!budgets.admit(now, "other", "x", &installed));
        let plain = &budgets.held[&("plain".to_owned(), false)];
        assert_eq!(plain.count, 9);
        assert_eq!(plain.first, ["i0", "i1", "i2", "i3", "i4"]);
        let told = summary(plain, false);
        assert_eq!(told.reason, "InstancesChanged");
        let note = told.note.unwrap();
        assert!(
            note.starts_with("9 Events about Instances of this class, told together")
                && note.contains(
                    "InstallSucceeded 6, Uninstalled 3 (Instances i0, i1, i2, i3, i4, ...)"
                ),
            "{note}"
        );
        assert_eq!(budgets.held[&("other".to_owned(), false)].count, 1);
        let warned = summary(plain, true);
        assert_eq!(
            (warned.type_, warned.reason.as_str()),
            (EventType::Warning, "InstancesWarned")
        );
    }
}
