//! Who created an Instance, recorded by the admission webhook so nobody can
//! forge it.
//!
//! On CREATE the mutating webhook writes [`CREATED_BY_ANNOTATION`] from the
//! request's authenticated user info (refusing a value that names someone
//! else), and the validating webhook refuses any UPDATE that changes it.
//! Provisioners read it back with [`CreatorRecord::of`] when a class's
//! `approval: UserPermission` asks whether the creator may do what the
//! Instance installs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The annotation holding the [`CreatorRecord`] as JSON.
pub const CREATED_BY_ANNOTATION: &str = "core.pakket.dev/created-by";

/// The authenticated identity that created an object, as the apiserver
/// reported it to the admission webhook.
///
/// `extra` is left out on purpose: it carries per-session values (service
/// account token ids, pod names) that describe the credential, not the user.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CreatorRecord {
    /// The user name (`alice`, `system:serviceaccount:ns:name`).
    pub username: String,
    /// The user's uid, when the authenticator gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The user's groups, sorted, so equal identities compare equal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl CreatorRecord {
    /// A record with its groups sorted and deduplicated.
    pub fn new(username: impl Into<String>, uid: Option<String>, mut groups: Vec<String>) -> Self {
        groups.sort_unstable();
        groups.dedup();
        Self {
            username: username.into(),
            uid,
            groups,
        }
    }

    /// The annotation value: compact JSON.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).expect("a record of strings always serializes")
    }

    /// Parses an annotation value.
    pub fn from_annotation(value: &str) -> Result<Self, serde_json::Error> {
        let parsed: Self = serde_json::from_str(value)?;
        Ok(Self::new(parsed.username, parsed.uid, parsed.groups))
    }

    /// The record on an object's annotations: `None` when absent, an error
    /// when present but not a record.
    pub fn of(
        annotations: Option<&BTreeMap<String, String>>,
    ) -> Option<Result<Self, serde_json::Error>> {
        annotations?
            .get(CREATED_BY_ANNOTATION)
            .map(|value| Self::from_annotation(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_its_annotation_with_groups_sorted() {
        let record = CreatorRecord::new(
            "alice",
            Some("alice".into()),
            vec!["system:authenticated".into(), "pakket:test-users".into()],
        );
        assert_eq!(record.groups, ["pakket:test-users", "system:authenticated"]);
        let text = record.to_annotation();
        assert_eq!(
            text,
            r#"{"username":"alice","uid":"alice","groups":["pakket:test-users","system:authenticated"]}"#
        );
        let annotations = BTreeMap::from([(CREATED_BY_ANNOTATION.to_owned(), text)]);
        assert_eq!(
            CreatorRecord::of(Some(&annotations)).unwrap().unwrap(),
            record
        );
    }

    #[test]
    fn absent_and_malformed_records_are_told_apart() {
        assert!(CreatorRecord::of(None).is_none());
        let annotations = BTreeMap::from([(CREATED_BY_ANNOTATION.to_owned(), "bob".to_owned())]);
        assert!(CreatorRecord::of(Some(&annotations)).unwrap().is_err());
    }
}
