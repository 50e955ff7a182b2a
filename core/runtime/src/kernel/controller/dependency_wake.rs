//! Instances waiting for their dependencies (`Installed` false with reason
//! `DependenciesMissing`) are looked at again as soon as another Instance
//! becomes installed, rather than at their next timed retry: a set whose
//! dependent and dependency arrive together then installs in one go.
//!
//! Only Instances this process watches become installed here; one a
//! different provisioner installs still reaches them at the retry.

use std::collections::{HashMap, HashSet};

use kube::ResourceExt as _;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;
use pakket_api::{ConditionType, Instance, Reason};

/// Tells which Instances just became installed, and who waited for one.
pub struct NewlyInstalled {
    /// Every Instance, as the controller's cache has them.
    instances: Store<Instance>,
    /// Whether each Instance (by name) was installed when last seen.
    installed: HashMap<String, bool>,
    /// The names a listing (the watch's start, or its restart) has
    /// found so far.
    listed: Option<HashSet<String>>,
}

impl NewlyInstalled {
    /// Tracks Instances against the controller's cache.
    pub fn new(instances: Store<Instance>) -> Self {
        Self {
            instances,
            installed: HashMap::new(),
            listed: None,
        }
    }

    /// Called with each event of the Instance watch: the Instances to
    /// wake (see [`Self::waiting_on`]). An Instance deleted is forgotten,
    /// also one that had no finalizer (and so never showed a deletion
    /// timestamp) or went while the watch was down (the listing it
    /// restarts with lacks it): each was kept for good before.
    pub fn event(&mut self, event: &Event<Instance>) -> Vec<ObjectRef<Instance>> {
        match event {
            Event::Apply(changed) => self.waiting_on(changed),
            Event::InitApply(changed) => {
                if let Some(listed) = self.listed.as_mut() {
                    listed.insert(changed.name_any());
                }
                self.waiting_on(changed)
            }
            Event::Delete(gone) => {
                self.installed.remove(&gone.name_any());
                Vec::new()
            }
            Event::Init => {
                self.listed = Some(HashSet::new());
                Vec::new()
            }
            Event::InitDone => {
                if let Some(listed) = self.listed.take() {
                    self.installed.retain(|name, _| listed.contains(name));
                }
                Vec::new()
            }
        }
    }

    /// Called with each changed Instance: when it has just become
    /// installed, the Instances waiting for dependencies; else none.
    fn waiting_on(&mut self, changed: &Instance) -> Vec<ObjectRef<Instance>> {
        let name = changed.name_any();
        if changed.metadata.deletion_timestamp.is_some() {
            self.installed.remove(&name);
            return Vec::new();
        }
        let now = is_installed(changed);
        // A first sighting (start-up, a new leader) wakes nobody: it did not
        // just become installed, and waking on each would scan the store once
        // per Instance.
        let before = self.installed.insert(name, now).unwrap_or(now);
        if !now || before {
            return Vec::new();
        }
        self.instances
            .state()
            .iter()
            .filter(|instance| waits_for_dependencies(instance))
            .map(|instance| ObjectRef::from_obj(&**instance))
            .collect()
    }
}

fn is_installed(instance: &Instance) -> bool {
    instance
        .condition(ConditionType::Installed)
        .is_some_and(|condition| condition.status == "True")
}

fn waits_for_dependencies(instance: &Instance) -> bool {
    instance
        .condition(ConditionType::Installed)
        .is_some_and(|condition| {
            condition.status != "True" && condition.reason == Reason::DependenciesMissing.as_str()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};
    use pakket_api::condition::ConditionStatus;

    fn instance(name: &str, status: ConditionStatus, reason: Reason) -> Instance {
        let mut instance = Instance::test(name)
            .with_class("c")
            .with_bundle(&format!("{name}-bundle"))
            .saying(reason, status, "m");
        // Conditions of no generation in particular.
        for condition in &mut instance.status.as_mut().unwrap().conditions {
            condition.observed_generation = None;
        }
        instance
    }

    #[test]
    fn a_newly_installed_instance_wakes_those_waiting_for_dependencies_once() {
        let (store, mut writer) = reflector::store::<Instance>();
        let waiting = instance("app", ConditionStatus::False, Reason::DependenciesMissing);
        let failing = instance("other", ConditionStatus::False, Reason::InstallFailed);
        let mut dependency = instance("dep", ConditionStatus::False, Reason::Installing);
        for object in [&waiting, &failing, &dependency] {
            writer.apply_watcher_event(&watcher::Event::Apply(object.clone()));
        }
        let mut tracker = NewlyInstalled::new(store);
        assert!(
            tracker.waiting_on(&dependency).is_empty(),
            "not installed yet"
        );
        dependency = instance("dep", ConditionStatus::True, Reason::InstallSucceeded);
        writer.apply_watcher_event(&watcher::Event::Apply(dependency.clone()));
        assert_eq!(
            tracker.waiting_on(&dependency),
            [ObjectRef::from_obj(&waiting)],
            "only the Instance waiting for dependencies"
        );
        assert!(
            tracker.waiting_on(&dependency).is_empty(),
            "a status write of an installed Instance wakes nobody again"
        );
    }

    #[test]
    fn a_deleted_instance_is_forgotten_however_it_went() {
        let (store, _writer) = reflector::store::<Instance>();
        let mut tracker = NewlyInstalled::new(store);
        let installed =
            |name: &str| instance(name, ConditionStatus::True, Reason::InstallSucceeded);
        let listing = |names: &[&str]| {
            let mut events = vec![watcher::Event::Init];
            events.extend(
                names
                    .iter()
                    .map(|name| watcher::Event::InitApply(installed(name))),
            );
            events.push(watcher::Event::InitDone);
            events
        };
        for event in listing(&["kept", "no-finalizer", "gone-while-down"]) {
            tracker.event(&event);
        }
        assert_eq!(tracker.installed.len(), 3);
        // Deleted without ever showing a deletion timestamp.
        tracker.event(&watcher::Event::Delete(installed("no-finalizer")));
        assert!(!tracker.installed.contains_key("no-finalizer"));
        // The watch restarts; its listing lacks what went meanwhile.
        for event in listing(&["kept"]) {
            tracker.event(&event);
        }
        assert_eq!(tracker.installed.keys().collect::<Vec<_>>(), ["kept"]);
    }
}
