//! Who asked for an Instance's content, recorded by the admission webhook
//! and sealed so that nobody else can write a record the runtime trusts.
//!
//! Two records, both [`CreatorRecord`] as JSON in an annotation:
//! - [`CREATED_BY_ANNOTATION`]: who created the Instance (written on CREATE);
//! - [`LAST_CHANGED_BY_ANNOTATION`]: who last changed its spec (written on
//!   every UPDATE that changes the spec).
//!
//! The mutating webhook writes them from the request's authenticated user
//! info (refusing a value that names someone else) and seals each with an
//! HMAC-SHA256 over the Instance's name, the identity and the digest of the
//! spec that person asked for, keyed with a secret only the webhooks and
//! provisioners read ([`RecordKey`]). The runtime trusts a record only if the
//! seal verifies and the spec digest is the current spec's
//! ([`requester`]): a record written while the webhooks were not running, or
//! copied from another Instance, or left behind by a spec change the webhook
//! never saw, is not trusted, and approval then waits for a person.

use std::collections::BTreeMap;
use std::path::Path;

use ring::hmac;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Instance, InstanceSpec};

/// The annotation holding the creator's [`CreatorRecord`] as JSON.
pub const CREATED_BY_ANNOTATION: &str = "core.pakket.dev/created-by";
/// The annotation holding the [`CreatorRecord`] of whoever last changed the spec.
pub const LAST_CHANGED_BY_ANNOTATION: &str = "core.pakket.dev/last-changed-by";
/// The fewest bytes a [`RecordKey`] may have.
pub const MIN_KEY_BYTES: usize = 32;

/// An authenticated identity that asked for an Instance's spec, as the
/// apiserver reported it to the admission webhook.
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
    /// The digest of the spec this person asked for ([`spec_digest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// The webhook's HMAC-SHA256 seal, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl CreatorRecord {
    /// An unsealed record with its groups sorted and deduplicated.
    pub fn new(username: impl Into<String>, uid: Option<String>, mut groups: Vec<String>) -> Self {
        groups.sort_unstable();
        groups.dedup();
        Self {
            username: username.into(),
            uid,
            groups,
            spec: None,
            seal: None,
        }
    }

    /// Whether both records name the same identity (seal and spec aside).
    pub fn same_identity(&self, other: &Self) -> bool {
        self.username == other.username && self.uid == other.uid && self.groups == other.groups
    }

    /// This identity, sealed as the requester of `spec` on Instance
    /// `instance` in annotation `annotation`.
    pub fn sealed(
        &self,
        key: &RecordKey,
        annotation: &str,
        instance: &str,
        spec: &InstanceSpec,
    ) -> Self {
        self.sealed_for(key, annotation, instance, spec_digest(spec))
    }

    /// This identity, sealed as the requester of the spec whose digest is
    /// `digest` on `object` ([`record_object`]) in annotation `annotation`.
    pub fn sealed_for(
        &self,
        key: &RecordKey,
        annotation: &str,
        object: &str,
        digest: String,
    ) -> Self {
        let mut sealed = Self::new(self.username.clone(), self.uid.clone(), self.groups.clone());
        let tag = hmac::sign(
            &key.sealing,
            &sealed.sealed_text(annotation, object, &digest),
        );
        sealed.spec = Some(digest);
        sealed.seal = Some(hex::encode(tag.as_ref()));
        sealed
    }

    /// Checks that this record was sealed with `key` for `spec` on Instance
    /// `instance` in annotation `annotation`.
    pub fn verify(
        &self,
        key: &RecordKey,
        annotation: &'static str,
        instance: &str,
        spec: &InstanceSpec,
    ) -> Result<(), RecordError> {
        self.verify_for(key, annotation, instance, &spec_digest(spec))
    }

    /// Checks that this record was sealed with `key` on `object` in
    /// annotation `annotation` for the spec whose digest is `current`.
    pub fn verify_for(
        &self,
        key: &RecordKey,
        annotation: &'static str,
        object: &str,
        current: &str,
    ) -> Result<(), RecordError> {
        let (Some(digest), Some(seal)) = (&self.spec, &self.seal) else {
            return Err(RecordError::Unsealed { annotation });
        };
        let tag = hex::decode(seal).map_err(|_| RecordError::BadSeal { annotation })?;
        let text = self.sealed_text(annotation, object, digest);
        if !key
            .verifying()
            .any(|candidate| hmac::verify(candidate, &text, &tag).is_ok())
        {
            return Err(RecordError::BadSeal { annotation });
        }
        let current = current.to_owned();
        if *digest != current {
            return Err(RecordError::SpecChanged {
                annotation,
                sealed: digest.clone(),
                current,
            });
        }
        Ok(())
    }

    /// What the seal covers: every field, each one length-prefixed so no
    /// two different records read the same.
    fn sealed_text(&self, annotation: &str, instance: &str, digest: &str) -> Vec<u8> {
        let mut text = Vec::new();
        let mut field = |value: &str| {
            text.extend_from_slice(&(value.len() as u64).to_be_bytes());
            text.extend_from_slice(value.as_bytes());
        };
        field("pakket.dev/requester-record/v1");
        field(annotation);
        field(instance);
        field(&self.username);
        field(self.uid.as_deref().unwrap_or_default());
        for group in &self.groups {
            field(group);
        }
        field(digest);
        text
    }

    /// The annotation value: compact JSON.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).expect("a record of strings always serializes")
    }

    /// Parses an annotation value.
    pub fn from_annotation(value: &str) -> Result<Self, serde_json::Error> {
        let mut parsed: Self = serde_json::from_str(value)?;
        parsed.groups.sort_unstable();
        parsed.groups.dedup();
        Ok(parsed)
    }

    /// The creator record on an object's annotations: `None` when absent,
    /// an error when present but not a record.
    pub fn of(
        annotations: Option<&BTreeMap<String, String>>,
    ) -> Option<Result<Self, serde_json::Error>> {
        Self::in_annotation(annotations, CREATED_BY_ANNOTATION)
    }

    /// The record in annotation `annotation`, like [`CreatorRecord::of`].
    pub fn in_annotation(
        annotations: Option<&BTreeMap<String, String>>,
        annotation: &str,
    ) -> Option<Result<Self, serde_json::Error>> {
        annotations?
            .get(annotation)
            .map(|value| Self::from_annotation(value))
    }
}

/// The digest of a spec as the seal covers it: SHA-256 of its JSON as the
/// API types write it (fields in declaration order, defaults left out), so
/// the webhook and every provisioner compute the same value.
pub fn spec_digest(spec: &InstanceSpec) -> String {
    let json = serde_json::to_vec(spec).expect("a spec always serializes");
    format!("sha256:{}", hex::encode(Sha256::digest(&json)))
}

/// The name a record is sealed for: an Instance's own name (as records
/// always were), `Kind/name` for any other kind (`Input/etcd`), so a
/// record sealed on an Input never verifies on an Instance of that name.
pub fn record_object(kind: &str, name: &str) -> String {
    if kind == "Instance" {
        name.to_owned()
    } else {
        format!("{kind}/{name}")
    }
}

/// The digest of a spec of a kind other than Instance, as the seal covers
/// it: SHA-256 of its JSON with object keys sorted and nulls, empty lists
/// and empty objects left out. The admission webhook reads the spec as
/// JSON and a controller as its Rust type; this form is the same for both
/// as long as the type writes every field it read (it may leave out empty
/// ones).
pub fn value_digest(spec: &serde_json::Value) -> String {
    fn canonical(value: &serde_json::Value, out: &mut Vec<u8>) -> bool {
        use serde_json::Value;
        match value {
            Value::Null => false,
            Value::Array(items) if items.is_empty() => false,
            Value::Object(fields) if fields.is_empty() => false,
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    if !canonical(item, out) {
                        out.extend_from_slice(b"null");
                    }
                }
                out.push(b']');
                true
            }
            Value::Object(fields) => {
                let mut keys: Vec<&String> = fields.keys().collect();
                keys.sort();
                out.push(b'{');
                let mut first = true;
                for key in keys {
                    let mut field = Vec::new();
                    if canonical(&fields[key], &mut field) {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        out.extend_from_slice(
                            &serde_json::to_vec(key).expect("a string serializes"),
                        );
                        out.push(b':');
                        out.extend_from_slice(&field);
                    }
                }
                out.push(b'}');
                true
            }
            scalar => {
                out.extend_from_slice(&serde_json::to_vec(scalar).expect("a scalar serializes"));
                true
            }
        }
    }
    let mut text = Vec::new();
    canonical(spec, &mut text);
    format!("sha256:{}", hex::encode(Sha256::digest(&text)))
}

/// Who asked for the current spec of an object of any kind: like
/// [`requester`], for the object's `annotations`, sealed on `object`
/// ([`record_object`]) for the spec whose digest is `digest`.
pub fn requester_of(
    annotations: Option<&BTreeMap<String, String>>,
    key: Option<&RecordKey>,
    object: &str,
    digest: &str,
) -> Result<(CreatorRecord, &'static str), RecordError> {
    let (annotation, found) = [LAST_CHANGED_BY_ANNOTATION, CREATED_BY_ANNOTATION]
        .into_iter()
        .find_map(|annotation| {
            CreatorRecord::in_annotation(annotations, annotation).map(|found| (annotation, found))
        })
        .ok_or(RecordError::Missing)?;
    let record = found.map_err(|error| RecordError::Malformed {
        annotation,
        message: error.to_string(),
    })?;
    let key = key.ok_or(RecordError::NoKey)?;
    record.verify_for(key, annotation, object, digest)?;
    Ok((record, annotation))
}

/// The seal a controller puts, in `annotation`, on an object it generated
/// (`object` as [`record_object`] names it, `digest` what it covers): its
/// own identity `generator`, sealed with `key`. Whoever may write the
/// object can copy a label or a name, not this.
pub fn generated_seal(
    key: &RecordKey,
    annotation: &str,
    generator: &str,
    object: &str,
    digest: String,
) -> String {
    CreatorRecord::new(generator, None, Vec::new())
        .sealed_for(key, annotation, object, digest)
        .to_annotation()
}

/// Whether `annotations` carry [`generated_seal`] of `generator` in
/// `annotation`, verifying with `key` for `object` and `digest`.
pub fn is_generated_by(
    annotations: &BTreeMap<String, String>,
    key: &RecordKey,
    annotation: &'static str,
    generator: &str,
    object: &str,
    digest: &str,
) -> bool {
    annotations
        .get(annotation)
        .and_then(|text| CreatorRecord::from_annotation(text).ok())
        .is_some_and(|record| {
            record.username == generator
                && record.verify_for(key, annotation, object, digest).is_ok()
        })
}

/// The secret that seals requester records. The webhooks and provisioners
/// read the same key (in a cluster, one Secret mounted into both).
///
/// Rotation: during a window a previous key is kept beside the current one
/// (the file `<key file>.previous`, the Secret's `key.previous` entry).
/// New records are sealed with the current key; records sealed with either
/// verify. Once every record that matters has been written again (or the
/// window is over), the previous key is removed, and records sealed with it
/// are no longer trusted (policies then ask a person).
#[derive(Clone)]
pub struct RecordKey {
    sealing: hmac::Key,
    previous: Option<hmac::Key>,
}

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordKey(..)")
    }
}

impl RecordKey {
    /// A key from its bytes; at least [`MIN_KEY_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(KeyError::TooShort { found: bytes.len() });
        }
        Ok(Self {
            sealing: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            previous: None,
        })
    }

    /// This key, also accepting records sealed with `previous` (a
    /// rotation's window).
    pub fn with_previous(mut self, previous: &RecordKey) -> Self {
        self.previous = Some(previous.sealing.clone());
        self
    }

    /// The keys a seal is checked against: the current one, then the
    /// previous one during a rotation.
    fn verifying(&self) -> impl Iterator<Item = &hmac::Key> {
        std::iter::once(&self.sealing).chain(self.previous.as_ref())
    }

    /// The key in a file (surrounding whitespace ignored, so a Secret made
    /// with `--from-literal` or `--from-file` both work), and the previous
    /// key in `<file>.previous` if that file exists (a rotation's window).
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let key = Self::read_one(path)?;
        let mut previous_path = path.as_os_str().to_owned();
        previous_path.push(".previous");
        let previous_path = std::path::PathBuf::from(previous_path);
        if previous_path.is_file() {
            return Ok(key.with_previous(&Self::read_one(&previous_path)?));
        }
        Ok(key)
    }

    fn read_one(path: &Path) -> Result<Self, KeyError> {
        let bytes = std::fs::read(path).map_err(|source| KeyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let text = bytes.trim_ascii();
        Self::from_bytes(text).map_err(|error| match error {
            KeyError::TooShort { found } => KeyError::FileTooShort {
                path: path.display().to_string(),
                found,
            },
            other => other,
        })
    }

    /// A fresh random key, and its text (64 hex digits) to write to a file.
    pub fn generate() -> (Self, String) {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; MIN_KEY_BYTES];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .expect("the system random source works");
        let text = hex::encode(bytes);
        let key = Self::from_bytes(text.as_bytes()).expect("64 bytes of text");
        (key, text)
    }
}

/// Why a record key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Fewer bytes than [`MIN_KEY_BYTES`].
    #[error("a record key needs at least {MIN_KEY_BYTES} bytes, this one has {found}")]
    TooShort {
        /// How many bytes it had.
        found: usize,
    },
    /// The file holds fewer bytes than [`MIN_KEY_BYTES`].
    #[error(
        "record key file {path} holds {found} bytes; it needs at least {MIN_KEY_BYTES} (make one with `head -c 32 /dev/urandom | base64`)"
    )]
    FileTooShort {
        /// The file.
        path: String,
        /// How many bytes it held.
        found: usize,
    },
    /// The file could not be read.
    #[error("cannot read record key file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Why a requester record is not trusted. Every message says what an admin
/// or the requester can do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// No record at all.
    #[error(
        "the Instance has no {CREATED_BY_ANNOTATION} record: it was created while Pakket's admission webhooks were not running"
    )]
    Missing,
    /// The annotation is not a record.
    #[error("annotation {annotation} is not a requester record: {message}")]
    Malformed {
        /// The annotation.
        annotation: &'static str,
        /// The parser's words.
        message: String,
    },
    /// A record without a seal.
    #[error("annotation {annotation} carries no seal: Pakket's admission webhook did not write it")]
    Unsealed {
        /// The annotation.
        annotation: &'static str,
    },
    /// The seal does not verify.
    #[error(
        "the seal of annotation {annotation} does not verify: Pakket's admission webhook did not write it for this Instance (or uses another record key)"
    )]
    BadSeal {
        /// The annotation.
        annotation: &'static str,
    },
    /// The record covers another spec.
    #[error(
        "annotation {annotation} was sealed for spec {sealed}, but the spec is now {current}: it was changed while Pakket's admission webhooks were not running"
    )]
    SpecChanged {
        /// The annotation.
        annotation: &'static str,
        /// The digest sealed.
        sealed: String,
        /// The current spec's digest.
        current: String,
    },
    /// The provisioner was given no key.
    #[error(
        "this provisioner has no record key (--record-key-file), so it cannot verify who asked"
    )]
    NoKey,
}

/// Who asked for the Instance's current spec: the last person who changed
/// the spec if anyone did, else the creator; verified with `key`. This is
/// whose rights `approval: UserPermission` asks about.
pub fn requester(
    instance: &Instance,
    key: Option<&RecordKey>,
) -> Result<(CreatorRecord, &'static str), RecordError> {
    requester_of(
        instance.metadata.annotations.as_ref(),
        key,
        instance.metadata.name.as_deref().unwrap_or_default(),
        &spec_digest(&instance.spec),
    )
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
    fn during_a_rotation_records_of_either_key_verify_and_new_ones_use_the_new_key() {
        let old = RecordKey::from_bytes(&[1; 32]).unwrap();
        let new = RecordKey::from_bytes(&[2; 32]).unwrap();
        let window = new.clone().with_previous(&old);
        let alice = CreatorRecord::new("alice", None, vec![]);
        let digest = "sha256:spec".to_owned();
        let by_old = alice.sealed_for(&old, CREATED_BY_ANNOTATION, "x", digest.clone());
        assert!(
            by_old
                .verify_for(&window, CREATED_BY_ANNOTATION, "x", &digest)
                .is_ok()
        );
        let by_window = alice.sealed_for(&window, CREATED_BY_ANNOTATION, "x", digest.clone());
        assert!(
            by_window
                .verify_for(&new, CREATED_BY_ANNOTATION, "x", &digest)
                .is_ok()
        );
        assert!(
            by_window
                .verify_for(&old, CREATED_BY_ANNOTATION, "x", &digest)
                .is_err()
        );
        // After the window, the old key's records are no longer trusted.
        assert!(
            by_old
                .verify_for(&new, CREATED_BY_ANNOTATION, "x", &digest)
                .is_err()
        );
        // A key neither current nor previous is refused.
        let other = RecordKey::from_bytes(&[3; 32]).unwrap();
        let by_other = alice.sealed_for(&other, CREATED_BY_ANNOTATION, "x", digest.clone());
        assert!(
            by_other
                .verify_for(&window, CREATED_BY_ANNOTATION, "x", &digest)
                .is_err()
        );
    }

    #[test]
    fn a_previous_key_is_read_beside_the_key_file() {
        let dir = std::env::temp_dir().join(format!("pakket-key-rotation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("key");
        std::fs::write(&file, "n".repeat(32)).unwrap();
        let alone = RecordKey::read(&file).unwrap();
        let old = RecordKey::from_bytes("o".repeat(32).as_bytes()).unwrap();
        let alice = CreatorRecord::new("alice", None, vec![]);
        let by_old = alice.sealed_for(&old, CREATED_BY_ANNOTATION, "x", "d".into());
        assert!(
            by_old
                .verify_for(&alone, CREATED_BY_ANNOTATION, "x", "d")
                .is_err()
        );
        std::fs::write(dir.join("key.previous"), format!("{}\n", "o".repeat(32))).unwrap();
        let window = RecordKey::read(&file).unwrap();
        assert!(
            by_old
                .verify_for(&window, CREATED_BY_ANNOTATION, "x", "d")
                .is_ok()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn absent_and_malformed_records_are_told_apart() {
        assert!(CreatorRecord::of(None).is_none());
        let annotations = BTreeMap::from([(CREATED_BY_ANNOTATION.to_owned(), "bob".to_owned())]);
        assert!(CreatorRecord::of(Some(&annotations)).unwrap().is_err());
    }

    fn spec(bundle: &str) -> InstanceSpec {
        InstanceSpec {
            class: "plain".into(),
            selector: None,
            bundle: crate::BundleTemplate {
                name: bundle.into(),
                spec: None,
            },
            deletion_policy: Default::default(),
            config: None,
            progress_deadline: None,
            drift: None,
        }
    }

    fn instance_with(annotations: &[(&str, String)], bundle: &str) -> Instance {
        let mut instance = Instance::new("hello", spec(bundle));
        instance.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.clone()))
                .collect(),
        );
        instance
    }

    fn key() -> RecordKey {
        RecordKey::from_bytes(&[7; 32]).unwrap()
    }

    #[test]
    fn a_sealed_record_verifies_for_its_instance_annotation_and_spec_only() {
        let alice = CreatorRecord::new("alice", None, vec!["g".into()]);
        let sealed = alice.sealed(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"));
        assert!(sealed.same_identity(&alice));
        sealed
            .verify(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"))
            .unwrap();
        assert!(matches!(
            sealed.verify(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v2")),
            Err(RecordError::SpecChanged { .. })
        ));
        assert_eq!(
            sealed.verify(&key(), CREATED_BY_ANNOTATION, "other", &spec("v1")),
            Err(RecordError::BadSeal {
                annotation: CREATED_BY_ANNOTATION
            })
        );
        assert!(
            sealed
                .verify(&key(), LAST_CHANGED_BY_ANNOTATION, "hello", &spec("v1"))
                .is_err()
        );
        let other_key = RecordKey::from_bytes(&[8; 32]).unwrap();
        assert!(
            sealed
                .verify(&other_key, CREATED_BY_ANNOTATION, "hello", &spec("v1"))
                .is_err()
        );
    }

    #[test]
    fn a_forged_identity_under_a_real_seal_does_not_verify() {
        let alice = CreatorRecord::new("alice", None, vec![]);
        let mut forged = alice.sealed(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"));
        forged.groups = vec!["system:masters".into()];
        assert!(
            forged
                .verify(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"))
                .is_err()
        );
    }

    #[test]
    fn the_requester_is_the_last_changer_else_the_creator_and_only_if_sealed() {
        let admin = CreatorRecord::new("admin", None, vec!["system:masters".into()]);
        let bob = CreatorRecord::new("bob", None, vec![]);
        let created = admin.sealed(&key(), CREATED_BY_ANNOTATION, "hello", &spec("v1"));
        let one = instance_with(&[(CREATED_BY_ANNOTATION, created.to_annotation())], "v1");
        assert_eq!(requester(&one, Some(&key())).unwrap().0.username, "admin");

        // bob changed the spec through the webhook: his rights count now.
        let changed = bob.sealed(&key(), LAST_CHANGED_BY_ANNOTATION, "hello", &spec("v2"));
        let two = instance_with(
            &[
                (CREATED_BY_ANNOTATION, created.to_annotation()),
                (LAST_CHANGED_BY_ANNOTATION, changed.to_annotation()),
            ],
            "v2",
        );
        let (who, annotation) = requester(&two, Some(&key())).unwrap();
        assert_eq!(
            (who.username.as_str(), annotation),
            ("bob", LAST_CHANGED_BY_ANNOTATION)
        );

        // The spec changed without the webhook: the admin's record no longer counts.
        let bypassed = instance_with(&[(CREATED_BY_ANNOTATION, created.to_annotation())], "v2");
        assert!(matches!(
            requester(&bypassed, Some(&key())),
            Err(RecordError::SpecChanged { .. })
        ));
        // A hand-written record, and no record at all.
        let forged = instance_with(&[(CREATED_BY_ANNOTATION, admin.to_annotation())], "v1");
        assert!(matches!(
            requester(&forged, Some(&key())),
            Err(RecordError::Unsealed { .. })
        ));
        assert_eq!(
            requester(&instance_with(&[], "v1"), Some(&key())),
            Err(RecordError::Missing)
        );
        assert_eq!(requester(&one, None), Err(RecordError::NoKey));
    }

    #[test]
    fn value_digests_ignore_key_order_and_empty_fields_but_not_values() {
        let written = serde_json::json!({"b": [1, {"y": null, "x": "z"}], "a": "s", "c": []});
        let typed = serde_json::json!({"a": "s", "b": [1, {"x": "z"}]});
        assert_eq!(value_digest(&written), value_digest(&typed));
        let other = serde_json::json!({"a": "s", "b": [1, {"x": "w"}]});
        assert_ne!(value_digest(&typed), value_digest(&other));
        // A record sealed on an Input does not verify on an Instance.
        let alice = CreatorRecord::new("alice", None, vec![]);
        let on_input = alice.sealed_for(
            &key(),
            CREATED_BY_ANNOTATION,
            &record_object("Input", "hello"),
            value_digest(&typed),
        );
        let annotations =
            BTreeMap::from([(CREATED_BY_ANNOTATION.to_owned(), on_input.to_annotation())]);
        assert_eq!(
            requester_of(
                Some(&annotations),
                Some(&key()),
                "Input/hello",
                &value_digest(&written)
            )
            .unwrap()
            .0
            .username,
            "alice"
        );
        assert!(
            requester_of(
                Some(&annotations),
                Some(&key()),
                "hello",
                &value_digest(&typed)
            )
            .is_err()
        );
    }

    #[test]
    fn keys_are_long_enough_and_generated_keys_work() {
        assert!(RecordKey::from_bytes(b"short").is_err());
        let (generated, text) = RecordKey::generate();
        assert_eq!(text.len(), 64);
        let again = RecordKey::from_bytes(text.as_bytes()).unwrap();
        let alice = CreatorRecord::new("alice", None, vec![]);
        alice
            .sealed(&generated, CREATED_BY_ANNOTATION, "x", &spec("v1"))
            .verify(&again, CREATED_BY_ANNOTATION, "x", &spec("v1"))
            .unwrap();
    }
}
