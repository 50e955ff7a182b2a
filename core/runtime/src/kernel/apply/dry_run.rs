//! The whole set checked by the apiserver before the first write: every
//! object is sent as it will be written (a create for one that is absent,
//! a server-side apply at the resourceVersion read for one that is the
//! Instance's), with `dryRun=All`, so validation, admission and immutable
//! fields answer for all of them while nothing is stored. One refusal and
//! the apply stops with nothing written, naming the object and the
//! apiserver's words (which name the field).
//!
//! What cannot be checked yet is left to the write itself: a custom
//! resource whose CRD comes with the same content (its kind is not served
//! until the CRD is applied), and an object in a namespace the content
//! creates (it does not exist yet). Should such a write fail, the apply
//! undoes what it wrote ([`super::write`]).
//!
//! Nor can an object be judged against objects of the same set that are
//! not written yet: a Pod that runs as a ServiceAccount the content also
//! brings is refused by the ServiceAccount admission ("serviceaccount not
//! found") while nothing is stored. So a refusal that can come from a
//! missing object (403 Forbidden, the admission plugins' answer, or 404
//! Not Found) of an object that follows one this apply creates is left to
//! the write too: by then the earlier objects exist, and a write that is
//! still refused is rolled back like any. Refusals no other object can
//! change (an invalid field, an immutable one) still end the apply here.
//!
//! The checks are independent reads of the apiserver's judgement, so they
//! run a few at a time: the dry run adds requests, not their latency in
//! series.

use std::collections::BTreeSet;

use futures::{StreamExt as _, stream};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use pakket_api::ObjectRef;
use serde_json::Value;

use super::{ApplyError, FIELD_MANAGER, api_message};

/// How many dry-run requests are in flight at once.
const CONCURRENCY: usize = 8;

/// How one object would be written.
pub enum Write {
    /// Created (it is absent, or not read: a first install).
    Create,
    /// Applied over the Instance's own object, at this resourceVersion.
    Apply(String),
}

/// One object to check: its API, reference, the object as it will be
/// written, and how.
pub struct Check {
    /// Where it is written.
    pub api: Api<DynamicObject>,
    /// The object.
    pub reference: ObjectRef,
    /// As it will be written (labelled).
    pub object: Value,
    /// How.
    pub write: Write,
    /// Objects before it in apply order are created by this apply, so a
    /// check that looks one of them up cannot find it yet.
    pub follows_new: bool,
}

/// The namespaces `objects` create (their `Namespace` objects).
pub fn created_namespaces(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .filter(|object| object["kind"] == "Namespace" && object["apiVersion"] == "v1")
        .filter_map(|object| object.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Sends every check as a dry run; the first refusal (in the order given)
/// ends it. `created` are the namespaces the content makes: an object in
/// one of them that does not exist yet cannot be checked, and is not.
pub async fn check_all(checks: Vec<Check>, created: &BTreeSet<String>) -> Result<(), ApplyError> {
    let answers: Vec<(usize, Result<(), ApplyError>)> =
        stream::iter(checks.into_iter().enumerate())
            .map(|(position, check)| async move { (position, check_one(check, created).await) })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
    let mut refusals: Vec<(usize, ApplyError)> = answers
        .into_iter()
        .filter_map(|(position, answer)| answer.err().map(|error| (position, error)))
        .collect();
    refusals.sort_by_key(|(position, _)| *position);
    match refusals.into_iter().next() {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

async fn check_one(check: Check, created: &BTreeSet<String>) -> Result<(), ApplyError> {
    let Check {
        api,
        reference,
        mut object,
        write,
        follows_new,
    } = check;
    let answer = match write {
        Write::Create => {
            let typed: DynamicObject =
                serde_json::from_value(object).map_err(|error| ApplyError::Refused {
                    object: reference.to_string(),
                    message: format!("it is not a Kubernetes object: {error}"),
                })?;
            let params = PostParams {
                dry_run: true,
                field_manager: Some(FIELD_MANAGER.to_owned()),
            };
            api.create(&params, &typed).await.map(drop)
        }
        Write::Apply(version) => {
            if let Some(metadata) = object
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
            {
                metadata.insert("resourceVersion".into(), Value::String(version));
            }
            let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
            api.patch(&reference.name, &params, &Patch::Apply(&object))
                .await
                .map(drop)
        }
    };
    match answer {
        Ok(()) => Ok(()),
        // Exists after all (a first install creates without reading): the
        // write reads and judges it, as without a dry run.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        // Its namespace comes with the content and is not there yet.
        Err(kube::Error::Api(status))
            if status.code == 404
                && reference
                    .namespace
                    .as_ref()
                    .is_some_and(|namespace| created.contains(namespace)) =>
        {
            Ok(())
        }
        // It may look up an object the set creates before it.
        Err(kube::Error::Api(status)) if follows_new && may_name_a_missing_object(status.code) => {
            Ok(())
        }
        Err(error) => Err(ApplyError::DryRunRefused {
            object: reference.to_string(),
            message: api_message(&error),
        }),
    }
}

/// Whether a refusal with this HTTP status can come from an object that
/// does not exist yet: admission plugins that look one up answer 403
/// ("serviceaccount not found", "no PriorityClass with name"), lookups
/// 404. Validation (422), conflicts and malformed requests (400) cannot.
fn may_name_a_missing_object(code: u16) -> bool {
    matches!(code, 403 | 404)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_a_missing_object_can_cause_wait_for_the_write() {
        let waits: Vec<u16> = [400, 403, 404, 409, 422, 500]
            .into_iter()
            .filter(|code| may_name_a_missing_object(*code))
            .collect();
        assert_eq!(waits, [403, 404]);
    }

    #[test]
    fn the_namespaces_content_creates_are_its_namespace_objects() {
        let objects = [
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}}),
            serde_json::json!({"apiVersion": "example.com/v1", "kind": "Namespace", "metadata": {"name": "not-core"}}),
        ];
        assert_eq!(
            created_namespaces(&objects),
            BTreeSet::from(["app".to_owned()])
        );
    }
}
