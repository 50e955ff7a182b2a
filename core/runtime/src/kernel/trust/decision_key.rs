//! The decision key: what an approval covers, besides the Bundle and its
//! digest. A person, a class policy, an ApprovalPolicy or a provisioner's
//! `approve` judges a whole request: the class and its parameters, the
//! policy that decided, who asked, the content, `spec.config`, and what the
//! change writes and deletes. An approval holds only while every one of
//! them is what was judged; any change is a new request, judged anew by
//! the class's current policy with whoever made the change as requester.
//!
//! The key is kept part by part ([`Judged`]), so that a refusal names what
//! changed ("the config changed since the approval") instead of a digest
//! nobody can read. Everything here is pure: the install step gathers the
//! parts ([`Parts`]) and asks [`cover`].
//!
//! Two parts need care:
//! - **Deletions** describe a change, not a state: once the pivot has
//!   pruned what the earlier revision alone had, nothing is left to delete
//!   (or only a CRD kept while objects of it exist). So a request is
//!   covered when what it deletes is a part of what was judged, and one
//!   that deletes anything else is a new request.
//! - **Material Pakket issues** (a serving certificate the provisioner
//!   rotates) changes the render with nothing anyone asked for changing.
//!   The provisioner names those fields
//!   ([`Provisioner::issued_material`](crate::Provisioner::issued_material));
//!   they are left out of the effects digest, so a rotation stays approved,
//!   and the caller says so when the full render differs.

use pakket_api::{ApprovedContent, Judged, ObjectRef};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Everything a decision judges, gathered by the install step.
#[derive(Clone, Copy, Debug)]
pub struct Parts<'a> {
    /// The class's name.
    pub class: &'a str,
    /// The provisioner id the class names.
    pub provisioner: &'a str,
    /// The class's parameters.
    pub parameters: Option<&'a serde_json::Map<String, Value>>,
    /// The ApprovalPolicy that decides, and its generation, when one does.
    pub policy: Option<(&'a str, i64)>,
    /// The verified requester (user name and groups), when there is one.
    pub requester: Option<(&'a str, &'a [String])>,
    /// The Instance's `spec.config`.
    pub config: Option<&'a serde_json::Map<String, Value>>,
    /// The rendered objects, as they would be applied.
    pub objects: &'a [Value],
    /// For each object, the JSON pointers of the material Pakket issues in
    /// it (left out of the effects digest).
    pub issued: &'a [Vec<&'static str>],
    /// What the change deletes.
    pub deletes: &'a [ObjectRef],
}

/// The key of `parts`.
pub fn judged(parts: &Parts<'_>) -> Judged {
    let parameters = parts
        .parameters
        .map(|parameters| digest_of(&Value::Object(parameters.clone())))
        .unwrap_or_else(|| digest_of(&Value::Null));
    Judged {
        class: format!(
            "{} provisioner {} parameters {}",
            parts.class, parts.provisioner, parameters
        ),
        policy: parts
            .policy
            .map(|(name, generation)| format!("{name} generation {generation}"))
            .unwrap_or_default(),
        requester: parts
            .requester
            .map(|(name, groups)| {
                let mut sorted = groups.to_vec();
                sorted.sort();
                format!("{name} groups {}", digest_of(&Value::from(sorted)))
            })
            .unwrap_or_default(),
        config: parts
            .config
            .map(|config| digest_of(&Value::Object(config.clone())))
            .unwrap_or_default(),
        effects: effects_digest(parts.objects, parts.issued),
        deletes: deleted(parts.deletes),
    }
}

/// `sha256:<hex>` of the objects, each with its issued material taken out.
fn effects_digest(objects: &[Value], issued: &[Vec<&'static str>]) -> String {
    let mut hasher = Sha256::new();
    for (index, object) in objects.iter().enumerate() {
        let pointers = issued.get(index).map(Vec::as_slice).unwrap_or_default();
        if pointers.is_empty() {
            hasher.update(canonical(object));
        } else {
            let mut masked = object.clone();
            for pointer in pointers {
                if let Some(field) = masked.pointer_mut(pointer) {
                    *field = Value::String("(issued by Pakket)".into());
                }
            }
            hasher.update(canonical(&masked));
        }
        hasher.update(b"\n");
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

/// What is deleted, each object as a short digest, sorted: small enough
/// to keep for thousands of objects, and a set, so that a part of it can
/// be told from something else.
fn deleted(deletes: &[ObjectRef]) -> Vec<String> {
    let mut digests: Vec<String> = deletes
        .iter()
        .map(|object| {
            let name = format!("{} {object}", object.api_version);
            hex::encode(&Sha256::digest(name.as_bytes())[..8])
        })
        .collect();
    digests.sort();
    digests.dedup();
    digests
}

/// `sha256:<hex>` of a value's JSON, maps in key order (serde_json's maps
/// are sorted, so equal values give equal bytes).
fn digest_of(value: &Value) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(canonical(value))))
}

fn canonical(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// How a recorded approval stands against the request as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cover {
    /// The approval covers exactly this request.
    Covered,
    /// A person approved this generation and the runtime has not recorded
    /// what else it covers: the request as it is now is what the person
    /// reviewed (the spec cannot have changed without a new generation),
    /// and it is recorded with the approval from here on.
    Bind,
    /// The approval is of another request: the parts that differ, in
    /// words, for the message that asks again (empty when it is of other
    /// content or another generation, which the caller says itself).
    Changed(Vec<&'static str>),
}

/// Whether `approval` covers the request `now` of generation `generation`,
/// Bundle `bundle` at `digest`.
pub fn cover(
    approval: &ApprovedContent,
    bundle: &str,
    digest: &str,
    generation: i64,
    now: &Judged,
) -> Cover {
    if approval.bundle != bundle || approval.digest != digest {
        return Cover::Changed(Vec::new());
    }
    if approval.generation != Some(generation) {
        return Cover::Changed(vec!["the Instance's spec"]);
    }
    let Some(was) = &approval.judged else {
        return Cover::Bind;
    };
    let changed = changed_parts(was, now);
    if changed.is_empty() {
        Cover::Covered
    } else {
        Cover::Changed(changed)
    }
}

/// The parts of `now` that differ from what `was` judged, in words.
pub fn changed_parts(was: &Judged, now: &Judged) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if was.class != now.class {
        changed.push("the class or its parameters");
    }
    if was.policy != now.policy {
        changed.push("the ApprovalPolicy or its generation");
    }
    if was.requester != now.requester {
        changed.push("the requester");
    }
    if was.config != now.config {
        changed.push("spec.config");
    }
    if was.effects != now.effects {
        changed.push("the objects it writes");
    }
    // Deleting nothing, or a part of what was judged (the rest is gone),
    // is covered; deleting anything else is a new request.
    if !now
        .deletes
        .iter()
        .all(|object| was.deletes.binary_search(object).is_ok())
    {
        changed.push("what it deletes");
    }
    changed
}

/// `a`, `a and b`, `a, b and c`.
pub fn in_words(parts: &[&str]) -> String {
    match parts {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Request {
        parameters: serde_json::Map<String, Value>,
        groups: Vec<String>,
        config: serde_json::Map<String, Value>,
        objects: Vec<Value>,
        issued: Vec<Vec<&'static str>>,
        deletes: Vec<ObjectRef>,
        policy: Option<(&'static str, i64)>,
        requester: &'static str,
        class: &'static str,
    }

    impl Request {
        fn new() -> Self {
            Self {
                parameters: json!({"approval": "Policy", "approvalPolicy": "p"})
                    .as_object()
                    .cloned()
                    .unwrap(),
                groups: vec!["team-a".into(), "system:authenticated".into()],
                config: json!({"namespace": "team-a"}).as_object().cloned().unwrap(),
                objects: vec![
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "team-a"}}),
                ],
                issued: Vec::new(),
                deletes: Vec::new(),
                policy: Some(("p", 1)),
                requester: "alice",
                class: "plain",
            }
        }

        fn judged(&self) -> Judged {
            judged(&Parts {
                class: self.class,
                provisioner: "pakket.dev/plain",
                parameters: Some(&self.parameters),
                policy: self.policy,
                requester: Some((self.requester, &self.groups)),
                config: Some(&self.config),
                objects: &self.objects,
                issued: &self.issued,
                deletes: &self.deletes,
            })
        }
    }

    fn approval(judged: Option<Judged>) -> ApprovedContent {
        ApprovedContent {
            bundle: "b".into(),
            digest: "sha256:1".into(),
            approved_by: "policy p rule 1".into(),
            rendered: None,
            generation: Some(3),
            judged,
        }
    }

    fn deployment(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.into(),
            namespace: Some("team-b".into()),
        }
    }

    /// Each row changes one part of the request after it was approved,
    /// and names the words the refusal must say.
    #[test]
    fn every_part_that_was_judged_changes_the_key_and_is_named() {
        type Change = fn(&mut Request);
        let rows: [(&str, Change, &str); 9] = [
            (
                "config",
                |r| {
                    r.config.insert("namespace".into(), json!("kube-system"));
                },
                "spec.config",
            ),
            (
                "class",
                |r| r.class = "other",
                "the class or its parameters",
            ),
            (
                "parameters",
                |r| {
                    r.parameters.insert("approvalPolicy".into(), json!("q"));
                },
                "the class or its parameters",
            ),
            (
                "policy edited",
                |r| r.policy = Some(("p", 2)),
                "the ApprovalPolicy or its generation",
            ),
            ("requester", |r| r.requester = "mallory", "the requester"),
            (
                "groups",
                |r| r.groups.push("system:masters".into()),
                "the requester",
            ),
            (
                "objects",
                |r| r.objects[0]["metadata"]["namespace"] = json!("pakket-system"),
                "the objects it writes",
            ),
            (
                "more objects",
                |r| r.objects.push(json!({"kind": "Secret"})),
                "the objects it writes",
            ),
            (
                "deletes",
                |r| r.deletes.push(deployment("db")),
                "what it deletes",
            ),
        ];
        for (row, change, words) in rows {
            let request = Request::new();
            let recorded = approval(Some(request.judged()));
            assert_eq!(
                cover(&recorded, "b", "sha256:1", 3, &request.judged()),
                Cover::Covered,
                "{row}: unchanged is covered"
            );
            let mut changed = Request::new();
            change(&mut changed);
            assert_eq!(
                cover(&recorded, "b", "sha256:1", 3, &changed.judged()),
                Cover::Changed(vec![words]),
                "{row}"
            );
        }
    }

    #[test]
    fn other_content_or_another_generation_is_never_covered() {
        let request = Request::new();
        let recorded = approval(Some(request.judged()));
        let now = request.judged();
        assert_eq!(
            cover(&recorded, "b", "sha256:2", 3, &now),
            Cover::Changed(vec![])
        );
        assert_eq!(
            cover(&recorded, "c", "sha256:1", 3, &now),
            Cover::Changed(vec![])
        );
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 4, &now),
            Cover::Changed(vec!["the Instance's spec"])
        );
        let unbound_generation = ApprovedContent {
            generation: None,
            ..recorded
        };
        assert_eq!(
            cover(&unbound_generation, "b", "sha256:1", 3, &now),
            Cover::Changed(vec!["the Instance's spec"]),
            "an approval that names no generation covers none"
        );
    }

    #[test]
    fn a_persons_approval_of_this_generation_binds_what_it_covers_at_first_use() {
        let request = Request::new();
        assert_eq!(
            cover(&approval(None), "b", "sha256:1", 3, &request.judged()),
            Cover::Bind
        );
    }

    #[test]
    fn deleting_nothing_or_a_part_of_what_was_judged_is_covered_and_anything_else_is_not() {
        let mut judged_with_delete = Request::new();
        judged_with_delete.deletes = vec![deployment("a"), deployment("b")];
        let recorded = approval(Some(judged_with_delete.judged()));
        // After the pivot pruned them, nothing is left to delete.
        let done = Request::new();
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &done.judged()),
            Cover::Covered
        );
        // The same deletions in another order are the same.
        let mut reordered = Request::new();
        reordered.deletes = vec![deployment("b"), deployment("a")];
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &reordered.judged()),
            Cover::Covered
        );
        // A part of them (one is kept, a CRD with objects, say).
        let mut part = Request::new();
        part.deletes = vec![deployment("b")];
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &part.judged()),
            Cover::Covered
        );
        let mut other = Request::new();
        other.deletes = vec![deployment("a"), deployment("c")];
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &other.judged()),
            Cover::Changed(vec!["what it deletes"])
        );
    }

    #[test]
    fn material_pakket_issues_is_left_out_and_nothing_else_is() {
        let secret = |crt: &str, ca: &str| {
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                   "metadata": {"name": "s"}, "data": {"tls.crt": crt, "tls.key": crt, "ca.crt": ca}})
        };
        let mut before = Request::new();
        before.objects = vec![secret("one", "ca")];
        before.issued = vec![vec!["/data/tls.crt", "/data/tls.key"]];
        let recorded = approval(Some(before.judged()));
        let mut rotated = Request::new();
        rotated.objects = vec![secret("two", "ca")];
        rotated.issued = before.issued.clone();
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &rotated.judged()),
            Cover::Covered,
            "a rotated certificate stays approved"
        );
        let mut other_ca = Request::new();
        other_ca.objects = vec![secret("two", "another ca")];
        other_ca.issued = before.issued.clone();
        assert_eq!(
            cover(&recorded, "b", "sha256:1", 3, &other_ca.judged()),
            Cover::Changed(vec!["the objects it writes"]),
            "what Pakket does not issue is judged"
        );
    }

    #[test]
    fn parts_read_as_a_list() {
        assert_eq!(in_words(&["a"]), "a");
        assert_eq!(in_words(&["a", "b"]), "a and b");
        assert_eq!(in_words(&["a", "b", "c"]), "a, b and c");
    }
}
