//! A reference to one Kubernetes object that a Bundle holds or an Instance owns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Enough to find one object: apiVersion, kind, name and (if namespaced) namespace.
#[derive(
    Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The object's namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl std::fmt::Display for ObjectRef {
    /// `kind/name` or `kind/namespace/name`, short enough for a status message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{}/{}/{}", self.kind, namespace, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Most objects a status lists one by one. Past it a status lists the first
/// ones, the total and the count of each kind, so an Instance or Bundle of
/// any size stays far below the apiserver's request limit (1.5 MiB in etcd):
/// a thousand references take about 100 KiB.
pub const LISTED_OBJECTS_MAX: usize = 1_000;

/// How many objects of one kind a status stands for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KindCount {
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// How many objects of it.
    pub count: u64,
}

/// Objects as a status shows them: at most [`LISTED_OBJECTS_MAX`] listed,
/// the total, and (when the list is cut) the count per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectSummary {
    /// The first objects, in the order given.
    pub listed: Vec<ObjectRef>,
    /// How many there are in all.
    pub count: u64,
    /// Objects per kind, sorted; empty when every object is listed.
    pub kinds: Vec<KindCount>,
}

impl ObjectSummary {
    /// Summarises `objects` (kept whole when there are few enough).
    pub fn of(objects: &[ObjectRef]) -> Self {
        let listed = objects.iter().take(LISTED_OBJECTS_MAX).cloned().collect();
        let kinds = if objects.len() > LISTED_OBJECTS_MAX {
            let mut counts = std::collections::BTreeMap::<(&str, &str), u64>::new();
            for object in objects {
                *counts
                    .entry((object.api_version.as_str(), object.kind.as_str()))
                    .or_default() += 1;
            }
            counts
                .into_iter()
                .map(|((api_version, kind), count)| KindCount {
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                    count,
                })
                .collect()
        } else {
            Vec::new()
        };
        Self {
            listed,
            count: objects.len() as u64,
            kinds,
        }
    }
}

/// The API group of an `apiVersion` (`""` for the core group): an object
/// moved to another version of its kind is the same object.
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Whether a status's list holds every object: no count was written (an
/// older status), or the count is no more than the list.
pub fn is_complete(listed: &[ObjectRef], count: Option<u64>) -> bool {
    count.is_none_or(|count| count <= listed.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(name: String) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name,
            namespace: Some("default".into()),
        }
    }

    #[test]
    fn a_small_set_is_listed_whole_without_kind_counts() {
        let objects: Vec<_> = (0..3).map(|i| config_map(format!("c{i}"))).collect();
        let summary = ObjectSummary::of(&objects);
        assert_eq!(summary.listed, objects);
        assert_eq!(summary.count, 3);
        assert!(summary.kinds.is_empty());
        assert!(is_complete(&summary.listed, Some(summary.count)));
    }

    #[test]
    fn a_big_set_lists_the_first_ones_and_counts_each_kind() {
        let mut objects: Vec<_> = (0..LISTED_OBJECTS_MAX + 500)
            .map(|i| config_map(format!("c{i}")))
            .collect();
        objects.push(ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "d".into(),
            namespace: Some("default".into()),
        });
        let summary = ObjectSummary::of(&objects);
        assert_eq!(summary.listed.len(), LISTED_OBJECTS_MAX);
        assert_eq!(summary.listed[..], objects[..LISTED_OBJECTS_MAX]);
        assert_eq!(summary.count, objects.len() as u64);
        let counts: Vec<_> = summary
            .kinds
            .iter()
            .map(|k| (k.api_version.as_str(), k.kind.as_str(), k.count))
            .collect();
        assert_eq!(
            counts,
            [
                ("apps/v1", "Deployment", 1),
                ("v1", "ConfigMap", (LISTED_OBJECTS_MAX + 500) as u64)
            ]
        );
        assert!(!is_complete(&summary.listed, Some(summary.count)));
    }
}
