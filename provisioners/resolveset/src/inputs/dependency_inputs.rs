//! `generateInputsForDependencies`: a bundle installed only because another
//! needs it gets an Input of its own, `dependency-<package>`, asking for
//! its package in the catalog and channel it came from. The package is
//! then asked for by name, so it moves along its update graph like any
//! subscription, not only as far as its dependents' ranges push it.
//!
//! The generated Input lives exactly as long as something needs it: it is
//! owned by every Input (of such a class) that brings the package in as a
//! dependency, and deleted as soon as none does (so the dependency still
//! goes when nothing needs it). When every one of those Inputs was written
//! by one verified person, her record is sealed on the generated Input, so
//! the dependency is still judged by her rights; otherwise it carries none
//! and a person approves, as for any entry several people need.
//!
//! Nothing is adopted, and nothing a user can write makes an Input
//! generated: the controller seals each Input it writes
//! ([`GENERATED_ANNOTATION`], with the record key, for the Input's name and
//! spec), and patches or deletes only Inputs whose seal verifies. An Input
//! of that name without it (written by a person, labelled or not) is left
//! alone, and the dependency stays a plain dependency. Without a record
//! key, an Input counts as generated only with the label, owner references
//! to Inputs and this controller's field manager.

use std::collections::BTreeMap;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource as _, ResourceExt as _};
use pakket_api::CreatorRecord;
use serde_json::{Value, json};

use crate::inputs::input::Input;
use crate::inputs::input_resolve::Answer;

/// The label on generated Inputs: the package they ask for.
pub const DEPENDENCY_LABEL: &str = "resolve.pakket.dev/dependency";

/// The annotation sealing a generated Input as this controller's: a
/// record of the controller's identity, sealed with the record key for the
/// Input's name and spec.
pub const GENERATED_ANNOTATION: &str = "resolve.pakket.dev/generated";

/// The identity the seal names.
const GENERATOR: &str = "pakket-resolveset/generateInputsForDependencies";

/// The seal for a generated Input `name` with `spec`.
fn seal(key: &pakket_api::RecordKey, name: &str, spec: &Value) -> String {
    pakket_api::generated_seal(
        key,
        GENERATED_ANNOTATION,
        GENERATOR,
        &pakket_api::record_object("Input", name),
        pakket_api::value_digest(spec),
    )
}

/// Whether `input` provably is one this controller generated (see the
/// module's doc); `manager` is its field manager.
pub fn is_generated(input: &Input, key: Option<&pakket_api::RecordKey>, manager: &str) -> bool {
    if !input.labels().contains_key(DEPENDENCY_LABEL) {
        return false;
    }
    let Some(key) = key else {
        let owned_by_inputs = !input.owner_references().is_empty()
            && input
                .owner_references()
                .iter()
                .all(|owner| owner.kind == Input::kind(&()));
        let managed = input
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .any(|entry| entry.manager.as_deref() == Some(manager));
        return owned_by_inputs && managed;
    };
    let name = input.name_any();
    let spec = serde_json::to_value(&input.spec).unwrap_or_default();
    pakket_api::is_generated_by(
        input.annotations(),
        key,
        GENERATED_ANNOTATION,
        GENERATOR,
        &pakket_api::record_object("Input", &name),
        &pakket_api::value_digest(&spec),
    )
}

/// The generated Input's name for `package`.
pub fn name_for(package: &str) -> String {
    format!("dependency-{package}").chars().take(253).collect()
}

/// One generated Input as it should be.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    /// The package.
    pub package: String,
    /// The catalog the dependency was resolved from.
    pub catalog: String,
    /// The channel it was resolved through, if one was named.
    pub channel: Option<String>,
    /// The class of the senior Input that needs it (installed first, then
    /// the oldest: [`crate::inputs::input_resolve::Seniority`]), never the one
    /// whose name sorts first, which a writer could pick.
    pub class: String,
    /// The Inputs that need it: name and UID, by name (so a change of
    /// seniority does not rewrite the generated Input).
    pub owners: Vec<(String, String)>,
}

impl Wanted {
    /// The generated Input's spec.
    pub fn spec(&self) -> Value {
        let mut catalog = json!({ "name": self.catalog, "package": self.package });
        if let Some(channel) = &self.channel {
            catalog["channel"] = json!(channel);
        }
        json!({
            "inputClass": self.class,
            "constraints": [{ "type": "olm.catalog", "value": catalog }],
        })
    }
}

/// The generated Inputs the resolution asks for: for each Input (senior
/// first, then by name) whose class generates them and whose answer resolved, one per
/// bundle it brings in as a dependency. `generates(input)` says whether
/// the Input's class has the parameter (and the Input is not a dry run);
/// `active`: the set's children and the bundles they run, for seniority.
pub fn wanted(
    inputs: &[std::sync::Arc<Input>],
    answers: &BTreeMap<String, Answer>,
    generates: impl Fn(&Input) -> bool,
    active: &BTreeMap<String, String>,
) -> BTreeMap<String, Wanted> {
    let mut wanted: BTreeMap<String, Wanted> = BTreeMap::new();
    let mut inputs: Vec<&Input> = inputs.iter().map(|input| &**input).collect();
    inputs.sort_by_cached_key(|input| {
        (
            crate::inputs::input_resolve::Seniority::of(input, active).key(),
            input.name_any(),
        )
    });
    for input in inputs {
        let name = input.name_any();
        let (Some(uid), true) = (input.uid(), generates(input)) else {
            continue;
        };
        let Some(Answer::Resolved(instances)) = answers.get(&name) else {
            continue;
        };
        for dependency in instances
            .iter()
            .filter(|i| i.satisfies.iter().all(|s| s.kind != "Input"))
        {
            let entry = wanted
                .entry(dependency.package.clone())
                .or_insert_with(|| Wanted {
                    package: dependency.package.clone(),
                    catalog: dependency.catalog.clone(),
                    channel: dependency.channel.clone(),
                    class: input.spec.input_class.clone(),
                    owners: Vec::new(),
                });
            entry.owners.push((name.clone(), uid.clone()));
        }
    }
    for entry in wanted.values_mut() {
        entry.owners.sort();
    }
    wanted
}

/// The one person every owner was written by, if there is one.
pub fn sole_author(
    owners: &[(String, String)],
    authors: &BTreeMap<String, Option<CreatorRecord>>,
) -> Option<CreatorRecord> {
    let mut found: Option<CreatorRecord> = None;
    for (owner, _) in owners {
        let author = authors.get(owner)?.as_ref()?;
        match &found {
            Some(first) if !first.same_identity(author) => return None,
            Some(_) => {}
            None => found = Some(author.clone()),
        }
    }
    found
}

/// A generated Input's name that an Input this controller did not make
/// already has: never taken over, and said to the Inputs that need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The name.
    pub name: String,
    /// The dependency it would have installed.
    pub package: String,
    /// The Inputs that need that dependency, by name.
    pub wanted_by: Vec<String>,
}

impl Taken {
    /// What the Inputs that need it are told.
    pub fn message(&self) -> String {
        format!(
            "dependency {package} would get the generated Input {name}, but an Input of that name exists that pakket-resolveset did not make; it is never taken over, so {package} is not installed for this Input through it: whoever may delete Input {name} deletes or renames it, or an Input asking for {package} is written by hand",
            package = self.package,
            name = self.name
        )
    }
}

/// Brings the cluster's generated Inputs to `wanted`: applies each (with
/// its owners, `labels` and, with `key`, its sole author sealed), deletes
/// generated ones nothing wants. `existing` is every Input the controller
/// sees. Returns the names someone else's Inputs hold.
pub async fn sync(
    client: &kube::Client,
    manager: &str,
    existing: &[std::sync::Arc<Input>],
    wanted: &BTreeMap<String, Wanted>,
    authors: &BTreeMap<String, Option<CreatorRecord>>,
    key: Option<&pakket_api::RecordKey>,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<Taken>, kube::Error> {
    let api: Api<Input> = Api::all(client.clone());
    let generated = |input: &Input| is_generated(input, key, manager);
    let mut taken = Vec::new();
    for want in wanted.values() {
        let taken_name = |name: &str| Taken {
            name: name.to_owned(),
            package: want.package.clone(),
            wanted_by: want.owners.iter().map(|(owner, _)| owner.clone()).collect(),
        };
        let name = name_for(&want.package);
        let ours = match existing.iter().find(|i| i.name_any() == name) {
            Some(other) if !generated(other) => {
                tracing::info!(input = %name, "an Input of that name is not generated here: left alone");
                taken.push(taken_name(&name));
                continue;
            }
            Some(_) => true,
            // Not seen: created, never patched over, since an Input of that
            // name this controller does not watch may exist.
            None => false,
        };
        let spec = want.spec();
        let mut object_labels = labels.clone();
        object_labels.insert(DEPENDENCY_LABEL.into(), want.package.clone());
        let owners: Vec<Value> = want
            .owners
            .iter()
            .map(|(owner, uid)| {
                json!({
                    "apiVersion": Input::api_version(&()), "kind": Input::kind(&()),
                    "name": owner, "uid": uid,
                })
            })
            .collect();
        let mut input = json!({
            "apiVersion": Input::api_version(&()),
            "kind": Input::kind(&()),
            "metadata": { "name": name, "labels": object_labels, "ownerReferences": owners },
            "spec": spec,
        });
        if let Some(key) = key {
            input["metadata"]["annotations"] =
                json!({ GENERATED_ANNOTATION: seal(key, &name, &spec) });
            if let Some(author) = sole_author(&want.owners, authors) {
                let sealed = author.sealed_for(
                    key,
                    pakket_api::LAST_CHANGED_BY_ANNOTATION,
                    &pakket_api::record_object("Input", &name),
                    pakket_api::value_digest(&spec),
                );
                input["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
                    json!(sealed.to_annotation());
            }
        }
        if ours {
            api.patch(
                &name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(&input),
            )
            .await?;
            continue;
        }
        let input: Input = serde_json::from_value(input).map_err(kube::Error::SerdeError)?;
        let create = PostParams {
            field_manager: Some(manager.to_owned()),
            ..PostParams::default()
        };
        match api.create(&create, &input).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::info!(input = %name, "an Input of that name exists and is not watched here: left alone");
                taken.push(taken_name(&name));
            }
            Ok(_) => {}
            Err(error) => return Err(error),
        }
    }
    for stale in existing.iter().filter(|i| generated(i)) {
        let package = &stale.labels()[DEPENDENCY_LABEL];
        if !wanted.contains_key(package) && stale.metadata.deletion_timestamp.is_none() {
            match api
                .delete(&stale.name_any(), &DeleteParams::default())
                .await
            {
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Ok(_) => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::input::{InputSpec, Relation, ResolvedInstance};
    use std::sync::Arc;

    fn input(name: &str, class: &str) -> Arc<Input> {
        let mut input = Input::new(
            name,
            InputSpec {
                config: None,
                input_class: class.into(),
                constraints: Vec::new(),
            },
        );
        input.metadata.uid = Some(format!("uid-{name}"));
        Arc::new(input)
    }

    fn resolved(package: &str, by: &str) -> ResolvedInstance {
        ResolvedInstance {
            name: format!("set-{package}"),
            package: package.into(),
            version: "1.0.0".into(),
            bundle: format!("{package}.v1.0.0"),
            catalog: "community".into(),
            channel: Some("stable".into()),
            deprecated: None,
            satisfies: vec![Relation {
                kind: by.into(),
                name: "x".into(),
                meets: Vec::new(),
            }],
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn each_dependency_gets_one_input_owned_by_every_input_that_needs_it() {
        let inputs = vec![
            input("a", "subscription"),
            input("b", "other"),
            input("c", "minimal"),
        ];
        let answers = BTreeMap::from([
            (
                "a".to_owned(),
                Answer::Resolved(vec![resolved("app", "Input"), resolved("db", "Instance")]),
            ),
            (
                "b".to_owned(),
                Answer::Resolved(vec![resolved("tool", "Input"), resolved("db", "Instance")]),
            ),
            (
                "c".to_owned(),
                Answer::Resolved(vec![resolved("x", "Input"), resolved("y", "Instance")]),
            ),
        ]);
        let wanted = wanted(
            &inputs,
            &answers,
            |i| i.spec.input_class != "minimal",
            &BTreeMap::new(),
        );
        assert_eq!(
            wanted.keys().collect::<Vec<_>>(),
            ["db"],
            "c's class does not generate"
        );
        let db = &wanted["db"];
        assert_eq!(
            db.owners,
            [
                ("a".to_owned(), "uid-a".to_owned()),
                ("b".to_owned(), "uid-b".to_owned())
            ]
        );
        assert_eq!(
            db.class, "subscription",
            "the senior owner's class (equal: by name)"
        );
        assert_eq!(
            db.spec()["constraints"][0]["value"],
            json!({"name": "community", "package": "db", "channel": "stable"})
        );
    }

    #[test]
    fn the_dependency_takes_the_class_of_the_oldest_input_not_the_first_name() {
        let created = |input: Arc<Input>, seconds: i64| {
            let mut input = (*input).clone();
            input.metadata.creation_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(seconds).unwrap(),
                ));
            Arc::new(input)
        };
        // "aaa" was written later, by someone who picked a name that sorts
        // first and a class of their own.
        let inputs = vec![
            created(input("aaa", "mine"), 2_000),
            created(input("team", "subscription"), 1_000),
        ];
        let answers = BTreeMap::from([
            (
                "aaa".to_owned(),
                Answer::Resolved(vec![resolved("tool", "Input"), resolved("db", "Instance")]),
            ),
            (
                "team".to_owned(),
                Answer::Resolved(vec![resolved("app", "Input"), resolved("db", "Instance")]),
            ),
        ]);
        let wanted = wanted(&inputs, &answers, |_| true, &BTreeMap::new());
        assert_eq!(wanted["db"].class, "subscription");
        assert_eq!(
            wanted["db"].owners,
            [
                ("aaa".to_owned(), "uid-aaa".to_owned()),
                ("team".to_owned(), "uid-team".to_owned())
            ],
            "owners by name, whoever is senior"
        );
    }

    #[test]
    fn the_author_is_sealed_only_when_every_owner_has_the_same_one() {
        let carol = CreatorRecord::new("carol", None, vec!["dev".into()]);
        let dave = CreatorRecord::new("dave", None, Vec::new());
        let owners = vec![
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
        ];
        let both_carol = BTreeMap::from([
            ("a".to_owned(), Some(carol.clone())),
            ("b".to_owned(), Some(carol.clone())),
        ]);
        assert_eq!(sole_author(&owners, &both_carol), Some(carol.clone()));
        let mixed = BTreeMap::from([
            ("a".to_owned(), Some(carol.clone())),
            ("b".to_owned(), Some(dave)),
        ]);
        assert_eq!(sole_author(&owners, &mixed), None);
        let unverified = BTreeMap::from([("a".to_owned(), Some(carol)), ("b".to_owned(), None)]);
        assert_eq!(sole_author(&owners, &unverified), None);
    }

    #[test]
    fn only_an_input_sealed_by_this_controller_counts_as_generated() {
        let key = pakket_api::RecordKey::from_bytes(&[3; 32]).unwrap();
        let want = Wanted {
            package: "etcd".into(),
            catalog: "community".into(),
            channel: None,
            class: "generating".into(),
            owners: vec![("a".into(), "uid-a".into())],
        };
        let name = name_for("etcd");
        let mut made = (*input(&name, "generating")).clone();
        made.spec = serde_json::from_value(want.spec()).unwrap();
        made.metadata.labels = Some([(DEPENDENCY_LABEL.to_owned(), "etcd".to_owned())].into());
        // The label alone, as anyone who may write Inputs can write it.
        assert!(!is_generated(&made, Some(&key), "m"));
        // Sealed as `sync` seals it: over the spec it writes, which must
        // read back as the same digest once stored as an Input.
        made.metadata.annotations = Some(
            [(
                GENERATED_ANNOTATION.to_owned(),
                seal(&key, &name, &want.spec()),
            )]
            .into(),
        );
        assert!(is_generated(&made, Some(&key), "m"));
        // The seal copied onto another name, or kept over a changed spec.
        let mut copied = made.clone();
        copied.metadata.name = Some("dependency-other".into());
        assert!(!is_generated(&copied, Some(&key), "m"));
        let mut changed = made.clone();
        changed.spec.input_class = "another".into();
        assert!(!is_generated(&changed, Some(&key), "m"));
        // A seal made with another key.
        let other = pakket_api::RecordKey::from_bytes(&[4; 32]).unwrap();
        assert!(!is_generated(&made, Some(&other), "m"));
    }
}
