//! Writing a Bundle's objects: check that none is someone else's, then
//! create what is new and apply what is the Instance's, in a safe order.
//!
//! Where the Instance has installed nothing yet, nothing is read first:
//! each object is created with a plain create, which fails if the object
//! exists (Kubernetes has no create-only server-side apply), and only then
//! is the existing object read and judged. That halves the requests of a
//! first install and leaves no window between a read and a write in which
//! someone else's object could appear and be taken over. Should an object
//! turn out to be someone else's half way, every object this apply created
//! is deleted again, so a conflict still means nothing was applied.
//!
//! Where the Instance has objects already (a pivot, a re-apply), each
//! object is read first: a conflict found then stops the apply before
//! anything is written, objects that are the Instance's are applied at the
//! resourceVersion read, and objects that were absent are created the same
//! way, so one that someone else made since the read is not taken over
//! either (what this apply created is deleted again).
//!
//! Before the first write, the whole set goes to the apiserver as a dry
//! run ([`super::dry_run`]): a refusal there (an immutable field, a value
//! the schema or an admission webhook refuses) writes nothing. A write that
//! still fails part-way (a race, or an object the dry run could not check)
//! is rolled back: what this apply created is deleted again and what it
//! updated is applied again as the previous revision had it, so the
//! Instance runs one revision whole; what could not be put back is named.

use std::sync::atomic::{AtomicUsize, Ordering};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use pakket_api::ObjectRef;
use serde_json::Value;

use super::declared_phases::DeclaredPhases;
use super::dry_run::{self, Check, Write};
use super::phase::Stage;
use super::{
    Applied, ApplyError, BUNDLE_LABEL, FIELD_MANAGER, INSTANCE_LABEL, INSTANCE_UID_LABEL, Kinds,
    api_message, crd_safety, health_problem, managed_fields, order, reference_of,
};
use crate::ownership::{self, Claimant, Conflict, Standing};

/// How far an apply has come, for a status written while it runs: it is
/// shared with whoever reports it, so it counts with atomics.
#[derive(Debug, Default)]
pub struct Progress {
    /// Objects read to check that none is someone else's.
    pub checked: AtomicUsize,
    /// Objects applied.
    pub applied: AtomicUsize,
}

/// The stage an apply is in, as its progress tells it: a status written
/// while an apply runs says which, once per stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApplyStage {
    /// Reading the objects to check that none is someone else's, and the
    /// dry run: nothing applied yet.
    Checking,
    /// Writing the objects.
    Applying,
}

impl Progress {
    /// The stage the apply is in now.
    pub fn stage(&self) -> ApplyStage {
        if self.applied.load(Ordering::Relaxed) == 0 {
            ApplyStage::Checking
        } else {
            ApplyStage::Applying
        }
    }

    /// Where the apply of `total` objects of `bundle` stands, in words.
    pub fn describe(&self, total: usize, bundle: &str) -> String {
        match self.stage() {
            ApplyStage::Checking => {
                let checked = self.checked.load(Ordering::Relaxed);
                format!(
                    "installing Bundle {bundle}: checked {checked}/{total} objects for conflicts, nothing applied yet"
                )
            }
            ApplyStage::Applying => {
                let applied = self.applied.load(Ordering::Relaxed);
                format!("installing Bundle {bundle}: applied {applied}/{total} objects")
            }
        }
    }
}

/// What an apply adopted, besides what it created or updated.
#[derive(Debug, Default)]
pub struct Adoptions {
    /// Objects taken over on an explicit offer ([`pakket_api::ownership::ADOPT_ANNOTATION`]).
    pub adopted: Vec<ObjectRef>,
}

/// How one apply goes.
#[derive(Clone, Copy, Debug)]
pub struct Settings<'a> {
    /// Refuse CRDs that would break what is stored or served.
    pub crd_upgrade_safety: bool,
    /// The Instance has installed nothing: create each object without
    /// reading it first (see the module doc).
    pub first_install: bool,
    /// The content differs from what was last applied, so fields may be
    /// dropped: created objects get their fields moved under the apply.
    pub content_changed: bool,
    /// Write only the objects of this stage and the ones before it (the
    /// rest wait for a gate, [`super::phase`]); every object is still
    /// checked for conflicts and sent in the dry run. `None` writes all.
    pub through: Option<Stage>,
    /// Objects left as they are: neither read, checked nor written again,
    /// though listed as applied (their health is read instead). A repair
    /// writes only what someone changed, and leaves what the drift watches
    /// vouch for as written ([`crate::drift::Drift::untouched`]); every
    /// object it does write is judged and dry-run as ever.
    pub unchanged: &'a std::collections::BTreeSet<ObjectRef>,
}

/// The revision a failed pivot returns to: the objects the running
/// content renders (as the provisioner made them, unlabelled) and its
/// Bundle.
#[derive(Clone, Copy, Debug)]
pub struct Restore<'a> {
    /// The running revision's Bundle.
    pub bundle: &'a str,
    /// Its objects.
    pub objects: &'a [Value],
}

/// Where one object stands before it is written.
enum Plan {
    /// Left as it is ([`Settings::unchanged`]): not read, not written.
    Unchanged,
    /// Not read: created if absent, judged only if it exists.
    Create,
    /// Read: this is where it stands.
    Read(Standing),
    /// Create only if absent, and it exists as someone else's: used as it is.
    UseAsFound,
}

/// How each object is to be written, in `sequence`: read first (unless
/// this is a first install), its standing judged, fields others own kept
/// as found. Any conflict, or a CRD the new one would replace unsafely,
/// ends the apply here with nothing written.
async fn plan_all(
    kinds: &mut Kinds,
    objects: &mut std::borrow::Cow<'_, [Value]>,
    sequence: &[usize],
    claimant: Claimant<'_>,
    settings: Settings<'_>,
    ignored: &crate::drift_mode::Ignored,
    progress: &Progress,
) -> Result<Vec<Plan>, ApplyError> {
    let defined = order::defined_kinds(objects);
    // The CRD (from this bundle) a custom resource of a kind not yet served waits for.
    let awaited = |reference: &ObjectRef| order::crd_defining(&defined, reference);
    let mut plans = Vec::with_capacity(objects.len());
    let mut conflicts = Vec::new();
    let mut unsafe_crds = Vec::new();
    for &index in sequence {
        let reference = reference_of(&objects[index]);
        if settings.unchanged.contains(&reference) {
            plans.push(Plan::Unchanged);
            progress.checked.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if settings.first_install {
            plans.push(Plan::Create);
            continue;
        }
        match read(kinds, &reference).await {
            Ok(found) => {
                if let Some(live) = &found
                    && selects(ignored, &reference)
                {
                    keep_ignored(ignored, &reference, &mut objects.to_mut()[index], live);
                }
                let plan = judge(
                    kinds,
                    claimant,
                    &reference,
                    &objects[index],
                    found,
                    settings,
                )
                .await?;
                match plan {
                    Judged::Plan(plan) => plans.push(plan),
                    Judged::Conflict(why) => conflicts.push((reference, why)),
                    Judged::Unsafe(problems) => {
                        unsafe_crds.extend(problems);
                        plans.push(Plan::Read(Standing::Absent));
                    }
                }
            }
            // Its CRD comes with the bundle, so no object of its kind exists yet.
            Err(ApplyError::UnknownKind { .. }) if awaited(&reference).is_some() => {
                plans.push(Plan::Read(Standing::Absent));
            }
            Err(error) => return Err(error),
        }
        progress.checked.fetch_add(1, Ordering::Relaxed);
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    if !unsafe_crds.is_empty() {
        return Err(ApplyError::UnsafeCrdUpgrade(unsafe_crds));
    }
    Ok(plans)
}

/// Applies every object (labelled with its Instance, the Instance's UID and
/// its Bundle), never writing over one that exists as someone else's: any
/// conflict ends the apply with nothing written, naming every conflicting
/// object and its owner; so does any refusal of the dry run. A write that
/// fails after others were made is rolled back to `restore` (the running
/// revision, when there is one). `progress` counts as it goes.
#[allow(clippy::too_many_arguments)]
pub async fn apply_all(
    kinds: &mut Kinds,
    objects: &[Value],
    claimant: Claimant<'_>,
    bundle: &str,
    progress: &Progress,
    settings: Settings<'_>,
    ignored: &crate::drift_mode::Ignored,
    restore: Option<Restore<'_>>,
    phases: &DeclaredPhases,
) -> Result<(Applied, Adoptions), ApplyError> {
    // Until it ends, the watch events of these writes wait for their
    // answers' versions (an edit under the runtime's name is told apart
    // by them, see `crate::drift`).
    let _under_way = kinds.write_under_way(claimant.name);
    // Fields someone else owns (`drift.ignore`) are written as the read
    // below finds them; the write is conditional on that read's
    // resourceVersion, so a change after it is not written over.
    let mut objects = std::borrow::Cow::Borrowed(objects);
    let sequence = order::apply_order(&objects, phases);
    let plans = plan_all(
        kinds,
        &mut objects,
        &sequence,
        claimant,
        settings,
        ignored,
        progress,
    )
    .await?;
    let objects: &[Value] = &objects;
    dry_run_all(kinds, objects, &sequence, &plans, claimant, bundle).await?;

    let mut writer = Writer {
        params: PatchParams::apply(FIELD_MANAGER).force(),
        applied: Applied {
            objects: Vec::with_capacity(objects.len()),
            unhealthy: Vec::new(),
        },
        adoptions: Adoptions::default(),
        unchanged: Vec::new(),
        created: Vec::new(),
        updated: Vec::new(),
    };
    let written = write_all(
        kinds,
        objects,
        &sequence,
        plans,
        claimant,
        bundle,
        progress,
        settings,
        ignored,
        phases,
        &mut writer,
    )
    .await;
    match written {
        Ok(()) => {
            // No answer tells the health of what was left as it is: read
            // (where the drift watches cannot tell it, see `to_read`).
            let left = super::unhealthy_of(kinds, claimant.name, &writer.unchanged).await;
            writer.applied.unhealthy.extend(left);
            Ok((writer.applied, writer.adoptions))
        }
        // Conflicts found part-way were already undone (see write_all).
        Err(error @ (ApplyError::Conflicts(_) | ApplyError::UnsafeCrdUpgrade(_))) => Err(error),
        Err(cause) if writer.created.is_empty() && writer.updated.is_empty() => Err(cause),
        Err(cause) => Err(writer.roll_back(kinds, claimant, restore, cause).await),
    }
}

/// Every object sent as a dry run, as it will be written ([`dry_run`]).
async fn dry_run_all(
    kinds: &mut Kinds,
    objects: &[Value],
    sequence: &[usize],
    plans: &[Plan],
    claimant: Claimant<'_>,
    bundle: &str,
) -> Result<(), ApplyError> {
    let mut checks = Vec::with_capacity(objects.len());
    // Whether an object before this one in apply order is created here.
    let mut follows_new = false;
    for (&index, plan) in sequence.iter().zip(plans) {
        let write = match plan {
            Plan::Unchanged | Plan::UseAsFound | Plan::Read(Standing::Conflict(_)) => continue,
            Plan::Create | Plan::Read(Standing::Absent) => Write::Create,
            Plan::Read(Standing::Ours(version) | Standing::Offered(version)) => {
                Write::Apply(version.clone())
            }
        };
        let creates = matches!(write, Write::Create);
        let object = labelled_object(&objects[index], claimant, bundle);
        let reference = reference_of(&object);
        let api = match kinds.api(&reference).await {
            Ok(api) => api,
            // Its CRD comes with the content: it cannot be checked yet.
            Err(ApplyError::UnknownKind { .. }) => {
                follows_new = true;
                continue;
            }
            Err(error) => return Err(error),
        };
        checks.push(Check {
            api,
            reference,
            object,
            write,
            follows_new,
        });
        follows_new |= creates;
    }
    dry_run::check_all(checks, &dry_run::created_namespaces(objects)).await
}

/// The writes, in order. A conflict found part-way undoes what this apply
/// created before it returns; any other failure is the caller's to roll
/// back.
#[allow(clippy::too_many_arguments)]
async fn write_all(
    kinds: &mut Kinds,
    objects: &[Value],
    sequence: &[usize],
    plans: Vec<Plan>,
    claimant: Claimant<'_>,
    bundle: &str,
    progress: &Progress,
    settings: Settings<'_>,
    ignored: &crate::drift_mode::Ignored,
    phases: &DeclaredPhases,
    writer: &mut Writer,
) -> Result<(), ApplyError> {
    let defined = order::defined_kinds(objects);
    let awaited = |reference: &ObjectRef| order::crd_defining(&defined, reference);
    for (position, (&index, plan)) in sequence.iter().zip(plans).enumerate() {
        if settings
            .through
            .is_some_and(|through| Stage::of(&objects[index], phases) > through)
        {
            // In apply order: every object after this one waits too.
            break;
        }
        let mut object = labelled_object(&objects[index], claimant, bundle);
        let reference = reference_of(&object);
        let api = match kinds.api(&reference).await {
            Ok(api) => api,
            Err(ApplyError::UnknownKind { .. }) if let Some(crd) = awaited(&reference) => {
                kinds.await_served(&reference, &crd).await?
            }
            Err(error) => return Err(error),
        };
        let standing = match plan {
            Plan::Unchanged => {
                writer.unchanged.push(reference.clone());
                writer.applied.objects.push(reference);
                progress.applied.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Plan::UseAsFound => {
                progress.applied.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Plan::Read(Standing::Absent) | Plan::Create => {
                match writer.create(kinds, &api, &reference, &object).await? {
                    Created::Done => {
                        progress.applied.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Created::Exists(found) => {
                        // Found where a create was tried: its ignored fields
                        // as found, conditional on this read like any.
                        if selects(ignored, &reference) {
                            keep_ignored(ignored, &reference, &mut object, &found);
                        }
                        match judge(
                            kinds,
                            claimant,
                            &reference,
                            &objects[index],
                            Some(*found),
                            settings,
                        )
                        .await?
                        {
                            Judged::Plan(Plan::Read(standing)) => standing,
                            Judged::Plan(_) => {
                                progress.applied.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            Judged::Conflict(why) => {
                                let rest = &sequence[position + 1..];
                                let mut conflicts = vec![(reference, why)];
                                conflicts
                                    .extend(later_conflicts(kinds, objects, rest, claimant).await);
                                writer.undo(kinds, claimant).await?;
                                return Err(ApplyError::Conflicts(conflicts));
                            }
                            Judged::Unsafe(problems) => {
                                writer.undo(kinds, claimant).await?;
                                return Err(ApplyError::UnsafeCrdUpgrade(problems));
                            }
                        }
                    }
                }
            }
            Plan::Read(standing) => standing,
        };
        writer
            .apply(kinds, &api, &reference, object, &standing)
            .await?;
        progress.applied.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Whether `drift.ignore` names fields of `reference`.
fn selects(ignored: &crate::drift_mode::Ignored, reference: &ObjectRef) -> bool {
    let group = order::group_of(&reference.api_version);
    ignored.selects(group, &reference.kind, &reference.name)
}

/// `object` with the fields `drift.ignore` names as `live` has them.
fn keep_ignored(
    ignored: &crate::drift_mode::Ignored,
    reference: &ObjectRef,
    object: &mut Value,
    live: &DynamicObject,
) {
    if let Ok(live) = serde_json::to_value(live) {
        let group = order::group_of(&reference.api_version);
        ignored.keep_live(group, &reference.kind, object, &live);
    }
}

/// An object as it is written: the provisioner's markers removed, the
/// ownership labels added.
fn labelled_object(object: &Value, claimant: Claimant<'_>, bundle: &str) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object
        .pointer_mut("/metadata")
        .and_then(Value::as_object_mut)
    {
        if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
            annotations.remove(pakket_api::ownership::CREATE_IF_ABSENT_ANNOTATION);
        }
        if let Value::Object(labels) = metadata
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()))
        {
            labels.insert(INSTANCE_LABEL.into(), Value::String(claimant.name.into()));
            labels.insert(
                INSTANCE_UID_LABEL.into(),
                Value::String(claimant.uid.into()),
            );
            labels.insert(BUNDLE_LABEL.into(), Value::String(bundle.into()));
        }
    }
    object
}

/// What judging an existing (or absent) object decided.
enum Judged {
    Plan(Plan),
    /// Someone else's: whose, and what to do.
    Conflict(Conflict),
    /// The Instance's CRD, which the new one would replace unsafely.
    Unsafe(Vec<String>),
}

/// Decides how to write `desired` given what was `found`: someone else's
/// object is a conflict (or used as found, if the provisioner asked for it
/// only if absent), the Instance's own CRD is checked for a safe upgrade,
/// and a created object whose content changes gets its fields moved under
/// the apply first.
async fn judge(
    kinds: &mut Kinds,
    claimant: Claimant<'_>,
    reference: &ObjectRef,
    desired: &Value,
    found: Option<DynamicObject>,
    settings: Settings<'_>,
) -> Result<Judged, ApplyError> {
    let Some(object) = found else {
        return Ok(Judged::Plan(Plan::Read(Standing::Absent)));
    };
    Ok(match ownership::standing_of(reference, &object, claimant) {
        Standing::Conflict(_) if create_if_absent(desired) => Judged::Plan(Plan::UseAsFound),
        Standing::Conflict(why) => Judged::Conflict(why),
        Standing::Ours(version) => {
            if settings.crd_upgrade_safety && reference.kind == "CustomResourceDefinition" {
                let current = serde_json::to_value(&object).unwrap_or_default();
                let mut problems: Vec<String> = crd_safety::problems(&current, desired)
                    .into_iter()
                    .map(|problem| {
                        format!("CustomResourceDefinition {}: {problem}", reference.name)
                    })
                    .collect();
                // What the diff cannot see: the stored objects the new schema refuses.
                problems.extend(crd_safety::breaking_objects(kinds, &current, desired).await?);
                if !problems.is_empty() {
                    return Ok(Judged::Unsafe(problems));
                }
            }
            let version = if settings.content_changed {
                let api = kinds.api(reference).await?;
                let upgraded = managed_fields::upgrade(&api, &object)
                    .await
                    .map_err(|error| refused(reference, &error))?;
                kinds.returned(reference, upgraded.as_deref());
                upgraded.unwrap_or(version)
            } else {
                version
            };
            Judged::Plan(Plan::Read(Standing::Ours(version)))
        }
        other => Judged::Plan(Plan::Read(other)),
    })
}

/// The object as it is now, or `None` if there is none.
async fn read(
    kinds: &mut Kinds,
    reference: &ObjectRef,
) -> Result<Option<DynamicObject>, ApplyError> {
    let api = kinds.api(reference).await?;
    api.get_opt(&reference.name)
        .await
        .map_err(|error| refused(reference, &error))
}

/// The apiserver's refusal of one object, in words.
fn refused(reference: &ObjectRef, error: &kube::Error) -> ApplyError {
    ApplyError::Refused {
        object: reference.to_string(),
        message: api_message(error),
    }
}

/// The conflicts among `rest` (indices into `objects`), read one by one:
/// what a conflict found during creation reports beside its own, so the
/// message names every object in the way, as a conflict found before
/// writing does. Objects that cannot be read are left out.
async fn later_conflicts(
    kinds: &mut Kinds,
    objects: &[Value],
    rest: &[usize],
    claimant: Claimant<'_>,
) -> Vec<(ObjectRef, Conflict)> {
    let mut conflicts = Vec::new();
    for &index in rest {
        let reference = reference_of(&objects[index]);
        if let Ok(Some(object)) = read(kinds, &reference).await
            && let Standing::Conflict(why) = ownership::standing_of(&reference, &object, claimant)
            && !create_if_absent(&objects[index])
        {
            conflicts.push((reference, why));
        }
    }
    conflicts
}

/// What a create found.
enum Created {
    /// Created: the object is the Instance's.
    Done,
    /// It exists: this is what is there.
    Exists(Box<DynamicObject>),
}

/// The writes of one apply, and what it created and updated (to undo or
/// roll back).
struct Writer {
    params: PatchParams,
    applied: Applied,
    adoptions: Adoptions,
    /// Objects left as they were ([`Plan::Unchanged`]).
    unchanged: Vec<ObjectRef>,
    created: Vec<ObjectRef>,
    /// Objects of the Instance's that this apply wrote over.
    updated: Vec<ObjectRef>,
}

impl Writer {
    /// Creates `object` unless it exists; what exists is read and returned.
    async fn create(
        &mut self,
        kinds: &Kinds,
        api: &Api<DynamicObject>,
        reference: &ObjectRef,
        object: &Value,
    ) -> Result<Created, ApplyError> {
        let typed: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|error| ApplyError::Refused {
                object: reference.to_string(),
                message: format!("it is not a Kubernetes object: {error}"),
            })?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        // Twice: an object deleted between the failed create and the read
        // is created on the second try.
        for _ in 0..2 {
            match api.create(&params, &typed).await {
                Ok(answer) => {
                    self.done(kinds, reference, &answer);
                    self.created.push(reference.clone());
                    return Ok(Created::Done);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    if let Some(found) = api
                        .get_opt(&reference.name)
                        .await
                        .map_err(|error| refused(reference, &error))?
                    {
                        return Ok(Created::Exists(Box::new(found)));
                    }
                }
                Err(error) => return Err(refused(reference, &error)),
            }
        }
        Err(ApplyError::Refused {
            object: reference.to_string(),
            message: "it was created and deleted by someone else while it was being applied; \
                      the apply is tried again"
                .into(),
        })
    }

    /// Applies `object` where `standing` says it stands: an existing object
    /// only at the resourceVersion judged, so one replaced meanwhile fails
    /// rather than being taken over; an offered one loses its offer.
    async fn apply(
        &mut self,
        kinds: &Kinds,
        api: &Api<DynamicObject>,
        reference: &ObjectRef,
        mut object: Value,
        standing: &Standing,
    ) -> Result<(), ApplyError> {
        if let Standing::Ours(version) | Standing::Offered(version) = standing
            && let Some(metadata) = object
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
        {
            metadata.insert("resourceVersion".into(), Value::String(version.clone()));
        }
        let answer = api
            .patch(&reference.name, &self.params, &Patch::Apply(&object))
            .await
            .map_err(|error| refused(reference, &error))?;
        if let Standing::Ours(_) = standing {
            self.updated.push(reference.clone());
        }
        if let Standing::Offered(_) = standing {
            // The offer is used up: drop the annotation so it cannot hand
            // the object to a later Instance of the same name.
            let drop = serde_json::json!({
                "metadata": { "annotations": { pakket_api::ownership::ADOPT_ANNOTATION: null } }
            });
            // Under the runtime's own field manager, so drift knows the
            // write for the runtime's and does not apply again.
            let ours = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            let dropped = api
                .patch(&reference.name, &ours, &Patch::Merge(&drop))
                .await
                .map_err(|error| refused(reference, &error))?;
            kinds.returned(reference, dropped.metadata.resource_version.as_deref());
            self.adoptions.adopted.push(reference.clone());
        }
        self.done(kinds, reference, &answer);
        Ok(())
    }

    /// Records what the write of `reference` answered: its version (the
    /// runtime's own, for the drift watches) and its health.
    fn done(&mut self, kinds: &Kinds, reference: &ObjectRef, answer: &DynamicObject) {
        kinds.returned(reference, answer.metadata.resource_version.as_deref());
        if let Some(problem) = health_problem(reference, answer) {
            self.applied.unhealthy.push(problem);
        }
        self.applied.objects.push(reference.clone());
    }

    /// After `cause` stopped the writes: deletes what this apply created and
    /// applies what it updated again as `restore` has it, so the previous
    /// revision runs whole. What could not be put back (no previous
    /// revision to read it from, or the apiserver refused) is named in the
    /// error, and stays this Instance's (labelled) for the next try.
    async fn roll_back(
        &mut self,
        kinds: &mut Kinds,
        claimant: Claimant<'_>,
        restore: Option<Restore<'_>>,
        cause: ApplyError,
    ) -> ApplyError {
        let mut left = Vec::new();
        let mut restored = 0;
        for reference in std::mem::take(&mut self.updated) {
            let previous = restore.and_then(|restore| {
                restore
                    .objects
                    .iter()
                    .find(|object| reference_of(object) == reference)
                    .map(|object| labelled_object(object, claimant, restore.bundle))
            });
            let put_back = match previous {
                Some(previous) => match kinds.api(&reference).await {
                    Ok(api) => match api
                        .patch(&reference.name, &self.params, &Patch::Apply(&previous))
                        .await
                    {
                        Ok(answer) => {
                            kinds.returned(&reference, answer.metadata.resource_version.as_deref());
                            true
                        }
                        Err(_) => false,
                    },
                    Err(_) => false,
                },
                None => false,
            };
            if put_back {
                restored += 1;
            } else {
                left.push(reference);
            }
        }
        // The runtime's own deletions, not someone else's change to put back.
        kinds.pruning(&self.created);
        let mut removed = 0;
        while let Some(reference) = self.created.pop() {
            match ownership::delete_owned(kinds, &reference, claimant).await {
                Ok(_) => removed += 1,
                Err(error) => {
                    tracing::warn!(%error, "removing what a failed apply created");
                    left.push(reference);
                }
            }
        }
        ApplyError::PartlyApplied {
            cause: Box::new(cause),
            restored,
            removed,
            left,
            previous: restore.map(|restore| restore.bundle.to_owned()),
        }
    }

    /// Deletes what this apply created, newest first (each only if its own
    /// records still say it is the Instance's).
    async fn undo(&mut self, kinds: &mut Kinds, claimant: Claimant<'_>) -> Result<(), ApplyError> {
        // The runtime's own deletions, not someone else's change to put back.
        kinds.pruning(&self.created);
        while let Some(reference) = self.created.pop() {
            ownership::delete_owned(kinds, &reference, claimant).await?;
        }
        Ok(())
    }
}

/// Whether a provisioner marked `object` to be created only if absent.
fn create_if_absent(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(pakket_api::ownership::CREATE_IF_ABSENT_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_is_checking_until_it_writes_its_first_object() {
        let progress = Progress::default();
        assert_eq!(progress.stage(), ApplyStage::Checking);
        progress.checked.fetch_add(3, Ordering::Relaxed);
        assert_eq!(progress.stage(), ApplyStage::Checking);
        assert_eq!(
            progress.describe(3, "b"),
            "installing Bundle b: checked 3/3 objects for conflicts, nothing applied yet"
        );
        progress.applied.fetch_add(1, Ordering::Relaxed);
        assert_eq!(progress.stage(), ApplyStage::Applying);
        assert_eq!(
            progress.describe(3, "b"),
            "installing Bundle b: applied 1/3 objects"
        );
    }
}
