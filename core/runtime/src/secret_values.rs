//! Values read from Secrets, handed from a controller that reads them on
//! a requester's behalf to the provisioner in the same process, never
//! written into the Instance (pakket-package's `valueFrom.secretRef`,
//! pakket-helm's `valuesFrom` of kind Secret).
//!
//! An Instance's `spec.config` is read by everyone who may list Instances,
//! usually many more people than may read a Secret. So the controller
//! (having checked that the requester may `get` the Secret) writes only
//! where each value comes from and the Secret's `resourceVersion` (which
//! changes when the Secret does, so the Instance is rendered again and its
//! approval judged again), and keeps the value here for that Instance. The
//! provisioner renders with a value only when the Instance and the version
//! match: an Instance written by hand naming a Secret gets nothing, and
//! neither does another requester's Instance.
//!
//! After a restart the values are read again by the controller's first
//! pass; until then the Instance waits (and its objects stay as they are).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Where one value comes from, as the Instance's config says.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretValueRef {
    /// The Secret's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The key.
    pub key: String,
    /// Its `resourceVersion` when read.
    pub resource_version: String,
}

/// One Instance's values read from Secrets: by value name, where from and
/// the value.
pub type ReadValues = BTreeMap<String, (SecretValueRef, String)>;

/// The values read, by Instance.
pub struct SecretValues {
    held: Mutex<HashMap<String, ReadValues>>,
    /// Who reads them, as an error names it.
    reader: &'static str,
    /// The field a value's name stands for, as an error names it.
    field: fn(&str) -> String,
}

impl Default for SecretValues {
    /// pakket-package's: values by name under `spec.values`.
    fn default() -> Self {
        Self::new("pakket-package's package controller", |name| {
            format!("spec.values.{name}")
        })
    }
}

impl SecretValues {
    /// Values read by `reader`, the value named `name` standing for the
    /// field `field(name)` in errors.
    pub fn new(reader: &'static str, field: fn(&str) -> String) -> Self {
        Self {
            held: Mutex::default(),
            reader,
            field,
        }
    }

    /// Keeps `values` for `instance` (replacing what it had).
    pub fn put(&self, instance: &str, values: ReadValues) {
        let mut held = self.held.lock().unwrap();
        if values.is_empty() {
            held.remove(instance);
        } else {
            held.insert(instance.to_owned(), values);
        }
    }

    /// Forgets `instance`'s values (its package went).
    pub fn forget(&self, instance: &str) {
        self.held.lock().unwrap().remove(instance);
    }

    /// The values `refs` name for `instance`, if each was read for it at
    /// that version; otherwise what is missing, in words.
    pub fn for_instance(
        &self,
        instance: &str,
        refs: &BTreeMap<String, SecretValueRef>,
    ) -> Result<BTreeMap<String, String>, String> {
        let held = self.held.lock().unwrap();
        let mine = held.get(instance);
        refs.iter()
            .map(|(name, wanted)| {
                mine.and_then(|values| values.get(name))
                    .filter(|(read, _)| read == wanted)
                    .map(|(_, value)| (name.clone(), value.clone()))
                    .ok_or_else(|| {
                        format!(
                            "{} comes from Secret {}/{} (key {}), which {} has not read for this Instance at resourceVersion {}; it does on its next pass",
                            (self.field)(name),
                            wanted.namespace,
                            wanted.name,
                            wanted.key,
                            self.reader,
                            wanted.resource_version
                        )
                    })
            })
            .collect()
    }
}

/// `problem` with every secret value in it replaced, so a condition never
/// repeats one.
pub fn masked(problem: &str, secrets: &BTreeMap<String, String>) -> String {
    secrets
        .values()
        .filter(|value| !value.is_empty())
        .fold(problem.to_owned(), |text, value| {
            text.replace(value.as_str(), "(the Secret's value)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(version: &str) -> SecretValueRef {
        SecretValueRef {
            namespace: "team".into(),
            name: "db".into(),
            key: "password".into(),
            resource_version: version.into(),
        }
    }

    #[test]
    fn a_value_is_given_to_its_instance_at_its_version_only() {
        let values = SecretValues::default();
        values.put(
            "package-team.app",
            [(
                "password".to_owned(),
                (reference("7"), "hunter2".to_owned()),
            )]
            .into(),
        );
        let refs: BTreeMap<_, _> = [("password".to_owned(), reference("7"))].into();
        assert_eq!(
            values.for_instance("package-team.app", &refs).unwrap()["password"],
            "hunter2"
        );
        // Another Instance naming the same Secret gets nothing.
        assert!(values.for_instance("package-team.other", &refs).is_err());
        // Nor does an older or newer version of the Secret.
        let newer: BTreeMap<_, _> = [("password".to_owned(), reference("8"))].into();
        let missing = values.for_instance("package-team.app", &newer).unwrap_err();
        assert!(missing.contains("resourceVersion 8"), "{missing}");
        values.forget("package-team.app");
        assert!(values.for_instance("package-team.app", &refs).is_err());
    }

    #[test]
    fn a_problem_never_repeats_a_secret_value() {
        let secrets: BTreeMap<_, _> = [("password".to_owned(), "hunter2".to_owned())].into();
        assert_eq!(
            masked("\"hunter2\" is not one of the options", &secrets),
            "\"(the Secret's value)\" is not one of the options"
        );
    }
}
