//! Phases content declares (`.phases.yaml` at its root, beside the
//! manifests): objects grouped into named phases, applied in the order
//! listed, each phase with its own progression probes that must pass
//! before the next phase is written. So a ConfigMap can wait until a
//! PersistentVolumeClaim is Bound, or the rest of a set until a migration
//! Job completes, and a failing probe holds everything after it, named in
//! `status.progression`.
//!
//! ```yaml
//! - name: storage
//!   objects:
//!   - {kind: PersistentVolumeClaim, name: data}
//! - name: config
//!   objects:
//!   - {kind: ConfigMap}
//!   probes:
//!   - selector: {kind: ConfigMap}
//!     assertions:
//!     - cel: has(self.data.ready)
//!       message: the ConfigMap says it is ready
//! ```
//!
//! An object belongs to the first phase one of whose selectors (`group`,
//! `kind`, optional `name` and `labels`) it matches; objects no phase
//! selects come after the declared phases. Inside each phase the kind
//! order stands ([`super::phase::Phase`]), with its built-in probes.
//! Namespaces and CRDs are always written first, whatever a phase says:
//! everything else may need them. A phase's probes hold only its own
//! objects. The file is part of the content, so the approval of the
//! content covers it; like the content's probes it is read with limits
//! and refused naming its field.

use std::collections::BTreeMap;

use serde_json::Value;

/// The file, at the content's root (hidden, so provisioners reading
/// manifests skip it).
pub const CONTENT_FILE: &str = ".phases.yaml";
/// The most phases, and selectors per phase.
const MAX: usize = 32;

/// The phases content declares, in order; empty when it declares none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeclaredPhases {
    phases: Vec<DeclaredPhase>,
}

/// One declared phase.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DeclaredPhase {
    name: String,
    selectors: Vec<Selector>,
}

/// Which objects a phase holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Selector {
    group: String,
    kind: String,
    name: Option<String>,
    labels: BTreeMap<String, String>,
}

/// One phase as read, with its probes (a list for
/// [`super::probes::ProgressionProbes`]) left to the caller.
pub struct ReadPhase {
    /// Its probes, as written.
    pub probes: Option<Value>,
}

impl DeclaredPhases {
    /// Reads the list (the file's document); each phase's `probes` are
    /// returned as written, in phase order, for the caller to compile.
    /// Anything wrong is refused naming the field.
    pub fn read(list: &Value) -> Result<(Self, Vec<ReadPhase>), String> {
        let list = list.as_array().ok_or_else(|| {
            format!("{CONTENT_FILE}: must be a list of {{name, objects, probes}}")
        })?;
        if list.is_empty() || list.len() > MAX {
            return Err(format!("{CONTENT_FILE}: must list 1 to {MAX} phases"));
        }
        let mut phases = Vec::with_capacity(list.len());
        let mut read = Vec::with_capacity(list.len());
        for (index, phase) in list.iter().enumerate() {
            let at = format!("{CONTENT_FILE}[{index}]");
            let name = phase
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty() && name.len() <= 63)
                .ok_or_else(|| format!("{at}.name: is required, 1 to 63 characters"))?;
            if phases
                .iter()
                .any(|known: &DeclaredPhase| known.name == name)
            {
                return Err(format!("{at}.name: {name} is declared twice"));
            }
            let objects = phase
                .get("objects")
                .and_then(Value::as_array)
                .filter(|objects| !objects.is_empty() && objects.len() <= MAX)
                .ok_or_else(|| {
                    format!(
                        "{at}.objects: must list 1 to {MAX} selectors {{group, kind, name, labels}}"
                    )
                })?;
            let selectors = objects
                .iter()
                .enumerate()
                .map(|(number, selector)| {
                    Selector::read(selector, &format!("{at}.objects[{number}]"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            phases.push(DeclaredPhase {
                name: name.to_owned(),
                selectors,
            });
            read.push(ReadPhase {
                probes: phase.get("probes").cloned(),
            });
        }
        Ok((Self { phases }, read))
    }

    /// Whether content declares phases.
    pub fn is_empty(&self) -> bool {
        self.phases.is_empty()
    }

    /// The declared phase of `object`: the index of the first phase that
    /// selects it, or the number of phases (after all of them) when none
    /// does.
    pub fn index_of(&self, object: &Value) -> usize {
        self.phases
            .iter()
            .position(|phase| {
                phase
                    .selectors
                    .iter()
                    .any(|selector| selector.matches(object))
            })
            .unwrap_or(self.phases.len())
    }

    /// The name of declared phase `index` in messages; objects no phase
    /// selects are "the rest".
    pub fn name(&self, index: usize) -> &str {
        self.phases
            .get(index)
            .map_or("the rest", |phase| phase.name.as_str())
    }

    /// These phases, or `more`'s when these are none (only content
    /// declares phases).
    pub fn or(self, more: Self) -> Self {
        if self.is_empty() { more } else { self }
    }
}

impl Selector {
    fn read(selector: &Value, at: &str) -> Result<Self, String> {
        let text = |field: &str| selector.get(field).and_then(Value::as_str);
        let kind =
            text("kind").ok_or_else(|| format!("{at}.kind: is required (e.g. ConfigMap)"))?;
        let labels = match selector.get("labels") {
            None => BTreeMap::new(),
            Some(labels) => serde_json::from_value(labels.clone())
                .map_err(|_| format!("{at}.labels: must map label names to values"))?,
        };
        Ok(Self {
            group: text("group").unwrap_or_default().to_owned(),
            kind: kind.to_owned(),
            name: text("name").map(str::to_owned),
            labels,
        })
    }

    fn matches(&self, object: &Value) -> bool {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        pakket_api::group_of(text("/apiVersion")) == self.group
            && text("/kind") == self.kind
            && self
                .name
                .as_deref()
                .is_none_or(|name| text("/metadata/name") == name)
            && self.labels.iter().all(|(label, value)| {
                object
                    .pointer("/metadata/labels")
                    .and_then(|labels| labels.get(label))
                    .and_then(Value::as_str)
                    == Some(value.as_str())
            })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_belong_to_the_first_phase_that_selects_them_and_the_rest_come_last() {
        let (phases, read) = DeclaredPhases::read(&json!([
            {"name": "storage", "objects": [{"kind": "PersistentVolumeClaim", "name": "data"}]},
            {"name": "config", "objects": [{"kind": "ConfigMap"}, {"group": "apps", "kind": "Deployment", "labels": {"tier": "db"}}],
             "probes": [{"selector": {"kind": "ConfigMap"}, "assertions": [{"cel": "true"}]}]},
        ]))
        .unwrap();
        assert_eq!(read.len(), 2);
        assert!(read[0].probes.is_none() && read[1].probes.is_some());
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}});
        let other_claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "logs"}});
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let db = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"tier": "db"}}});
        let web = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}});
        let indices: Vec<usize> = [&claim, &other_claim, &config, &db, &web]
            .into_iter()
            .map(|object| phases.index_of(object))
            .collect();
        assert_eq!(indices, [0, 2, 1, 1, 2]);
        assert_eq!((phases.name(0), phases.name(2)), ("storage", "the rest"));
        assert!(DeclaredPhases::default().or(phases.clone()) == phases);
    }

    #[test]
    fn a_bad_list_is_refused_naming_the_field() {
        let refused = |list: Value| DeclaredPhases::read(&list).err().unwrap();
        assert!(refused(json!({"name": "x"})).contains("must be a list"));
        assert!(refused(json!([])).contains("1 to 32 phases"));
        assert!(
            refused(json!([{"objects": [{"kind": "ConfigMap"}]}])).contains(".phases.yaml[0].name")
        );
        assert!(refused(json!([{"name": "a", "objects": []}])).contains(".phases.yaml[0].objects"));
        assert!(
            refused(json!([{"name": "a", "objects": [{"group": "apps"}]}]))
                .contains(".phases.yaml[0].objects[0].kind")
        );
        assert!(
            refused(json!([
                {"name": "a", "objects": [{"kind": "ConfigMap"}]},
                {"name": "a", "objects": [{"kind": "Secret"}]},
            ]))
            .contains("declared twice")
        );
    }
}
