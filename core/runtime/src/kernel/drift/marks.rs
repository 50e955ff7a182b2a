//! The runtime's own deletions (a prune, an undone apply, an uninstall),
//! marked before they are made so that the drift watches do not take them
//! for someone else's. A mark is taken by the deletion event it waits for.
//! One whose event never comes (the object was gone already, was not the
//! Instance's, or its kind had no watch yet) is dropped after
//! [`KEPT_FOR`]: without that, every such object would stay in memory for
//! the life of the process.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pakket_api::ObjectRef;

/// How long a mark waits for its deletion event. A watch sees a deletion
/// within seconds, or lists again after a restart (and a listing that
/// lacks the object takes the mark too); a deletion seen later than this
/// counts as drift, which costs one apply of what is already there.
pub const KEPT_FOR: Duration = Duration::from_secs(300);

/// Objects the runtime is about to delete, and when each was marked.
#[derive(Default)]
pub struct Marks {
    marked: HashMap<ObjectRef, Instant>,
}

impl Marks {
    /// Marks `objects` at `now`, dropping marks older than [`KEPT_FOR`].
    pub fn mark<'a>(&mut self, objects: impl IntoIterator<Item = &'a ObjectRef>, now: Instant) {
        self.marked
            .retain(|_, at| now.saturating_duration_since(*at) < KEPT_FOR);
        for object in objects {
            self.marked.insert(object.clone(), now);
        }
    }

    /// Whether `object`'s deletion was marked as the runtime's own; the
    /// mark is used up.
    pub fn take(&mut self, object: &ObjectRef) -> bool {
        self.marked.remove(object).is_some()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.marked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            namespace: Some("n".into()),
        }
    }

    #[test]
    fn a_mark_is_taken_by_one_deletion() {
        let mut marks = Marks::default();
        let (a, b) = (config_map("a"), config_map("b"));
        marks.mark([&a], Instant::now());
        assert!(marks.take(&a));
        assert!(
            !marks.take(&a),
            "a second deletion of `a` is someone else's"
        );
        assert!(!marks.take(&b), "never marked");
        assert_eq!(marks.len(), 0);
    }

    #[test]
    fn marks_whose_deletion_never_came_do_not_stay() {
        let mut marks = Marks::default();
        let start = Instant::now();
        // Objects an uninstall found gone already: no deletion event.
        let gone: Vec<ObjectRef> = (0..1000)
            .map(|i| config_map(&format!("gone-{i}")))
            .collect();
        marks.mark(&gone, start);
        let fresh = config_map("fresh");
        marks.mark([&fresh], start + KEPT_FOR - Duration::from_secs(1));
        assert_eq!(marks.len(), 1001, "all still within their time");
        let later = config_map("later");
        marks.mark([&later], start + KEPT_FOR);
        assert_eq!(marks.len(), 2, "only the marks younger than KEPT_FOR");
        assert!(marks.take(&fresh) && marks.take(&later));
    }
}
