//! What the OperatorRequest controller generated for one request, told
//! from what someone else put under the same name, and how it goes.
//!
//! The Operator and its Input are named from the request's namespace,
//! name and UID ([`pakket_operators_api::request::operator_name`]), so nobody who cannot read the
//! request can take the name first. Still, nothing is recognised by its
//! name or a label: the Operator is the request's when it carries the
//! controller's seal for this request *and its UID*; the Input is when it
//! is controlled (owner reference, by UID) by that Operator and written
//! by the Operator controller's field manager. Anything else at the name
//! is a squatter: named on the request's status, never adopted, never
//! deleted.

use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use kube::{Client, ResourceExt as _};
use pakket_operators_api::Operator;
use pakket_operators_api::request::{REQUEST_ANNOTATION, REQUEST_SEAL_ANNOTATION};
use serde_json::json;

use crate::inputs::input::Input;

/// Who seals [`REQUEST_SEAL_ANNOTATION`].
pub const WRITER: &str = "pakket-resolveset/operator-requests";

/// One request, as its generated objects are recognised: `NAMESPACE/NAME`
/// and its UID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId {
    /// `NAMESPACE/NAME`, as [`REQUEST_ANNOTATION`] has it.
    pub written_for: String,
    /// The request's UID.
    pub uid: String,
}

impl RequestId {
    /// What the seal covers: the request and its UID, so a request made
    /// again under the same name never claims what was written for the one
    /// before.
    pub fn sealed(&self) -> String {
        pakket_api::value_digest(&json!({ "request": self.written_for, "uid": self.uid }))
    }
}

/// The seal the controller puts on the Operator `name` it writes for `id`.
pub fn seal(key: &pakket_api::RecordKey, name: &str, id: &RequestId) -> String {
    pakket_api::generated_seal(
        key,
        REQUEST_SEAL_ANNOTATION,
        WRITER,
        &pakket_api::record_object("Operator", name),
        id.sealed(),
    )
}

/// Whether `operator` carries this controller's seal for request `id`:
/// an annotation anyone who may write Operators could copy, sealed for
/// this Operator's name, that request and its UID only.
pub fn sealed_for(operator: &Operator, key: &pakket_api::RecordKey, id: &RequestId) -> bool {
    operator
        .annotations()
        .get(REQUEST_ANNOTATION)
        .map(String::as_str)
        == Some(id.written_for.as_str())
        && pakket_api::is_generated_by(
            operator.annotations(),
            key,
            REQUEST_SEAL_ANNOTATION,
            WRITER,
            &pakket_api::record_object("Operator", &operator.name_any()),
            &id.sealed(),
        )
}

/// Whether `input` is the one the Operator controller wrote for
/// `operator`: controlled by it (its UID) and applied by that
/// controller's field manager.
pub fn input_of(input: &Input, operator: &Operator) -> bool {
    let controlled = input.owner_references().iter().any(|owner| {
        owner.controller == Some(true)
            && owner.kind == "Operator"
            && Some(&owner.uid) == operator.metadata.uid.as_ref()
    });
    let applied = input
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .any(|entry| entry.manager.as_deref() == Some(super::operator_controller::MANAGER));
    controlled && applied
}

/// What is at a request's name: what the controller generated for it, and
/// the first object of someone else's there (`Kind/name`).
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// The Operator written for the request.
    pub operator: Option<Operator>,
    /// Its Input.
    pub input: Option<Input>,
    /// An object at the name that was not generated for the request.
    pub taken: Option<String>,
}

impl Found {
    /// Sorts what is at the name: `ours` says whether the Operator there
    /// carries the request's seal.
    pub fn classify(operator: Option<Operator>, input: Option<Input>, ours: bool) -> Self {
        let mut found = Found::default();
        match operator {
            Some(operator) if ours => found.operator = Some(operator),
            Some(operator) => found.taken = Some(format!("Operator/{}", operator.name_any())),
            None => {}
        }
        match input {
            Some(input)
                if found
                    .operator
                    .as_ref()
                    .is_some_and(|operator| input_of(&input, operator)) =>
            {
                found.input = Some(input);
            }
            Some(input) if found.taken.is_none() => {
                found.taken = Some(format!("Input/{}", input.name_any()));
            }
            _ => {}
        }
        found
    }

    /// Reads what is at `name` and sorts it for request `id`.
    pub async fn read(
        client: &Client,
        key: &pakket_api::RecordKey,
        name: &str,
        id: &RequestId,
    ) -> Result<Self, kube::Error> {
        let operator = Api::<Operator>::all(client.clone()).get_opt(name).await?;
        let input = Api::<Input>::all(client.clone()).get_opt(name).await?;
        let ours = operator
            .as_ref()
            .is_some_and(|operator| sealed_for(operator, key, id));
        Ok(Self::classify(operator, input, ours))
    }

    /// Whether anything was generated for the request.
    pub fn is_written(&self) -> bool {
        self.operator.is_some() || self.input.is_some()
    }

    /// What was generated, as `Kind/name`, for a message.
    pub fn written(&self) -> Vec<String> {
        let operator = self
            .operator
            .iter()
            .map(|o| format!("Operator/{}", o.name_any()));
        let input = self.input.iter().map(|i| format!("Input/{}", i.name_any()));
        operator.chain(input).collect()
    }

    /// Deletes what was generated for the request, each by its UID (so
    /// nothing put at the name meanwhile is touched); never what is taken.
    /// The Input first, so the Operator controller has no Operator to write
    /// it again for; the Operator in the foreground, so an Input it wrote
    /// meanwhile goes with it.
    pub async fn withdraw(&self, client: &Client) -> Result<(), kube::Error> {
        if let Some(input) = &self.input {
            let params = by_uid(input.metadata.uid.clone(), PropagationPolicy::Background);
            gone(
                Api::<Input>::all(client.clone())
                    .delete(&input.name_any(), &params)
                    .await,
            )?;
        }
        if let Some(operator) = &self.operator {
            let params = by_uid(operator.metadata.uid.clone(), PropagationPolicy::Foreground);
            gone(
                Api::<Operator>::all(client.clone())
                    .delete(&operator.name_any(), &params)
                    .await,
            )?;
        }
        Ok(())
    }
}

fn by_uid(uid: Option<String>, propagation: PropagationPolicy) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        propagation_policy: Some(propagation),
        ..DeleteParams::default()
    }
}

/// A delete that found nothing (gone) or another object (a UID that no
/// longer matches) did nothing, as asked.
fn gone<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference};

    fn operator(uid: &str) -> Operator {
        let mut operator: Operator = serde_json::from_value(json!({
            "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
            "metadata": { "name": "request-0123", "uid": uid },
            "spec": { "catalog": { "name": "c", "package": "etcd" } },
        }))
        .unwrap();
        operator.metadata.uid = Some(uid.into());
        operator
    }

    fn input(owner: Option<&str>, manager: &str) -> Input {
        let mut input: Input = serde_json::from_value(json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": { "name": "request-0123" },
            "spec": { "inputClass": "subscription", "constraints": [] },
        }))
        .unwrap();
        input.metadata.owner_references = owner.map(|uid| {
            vec![OwnerReference {
                api_version: "operators.pakket.dev/v1alpha1".into(),
                kind: "Operator".into(),
                name: "request-0123".into(),
                uid: uid.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        });
        input.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some(manager.into()),
            ..ManagedFieldsEntry::default()
        }]);
        input
    }

    const OURS: &str = super::super::operator_controller::MANAGER;

    /// A row: what it shows, the Operator at the name, whether it is sealed
    /// for the request, the Input at the name; what is the request's, and
    /// what is named as taken.
    type Row = (
        &'static str,
        Option<Operator>,
        bool,
        Option<Input>,
        &'static [&'static str],
        Option<&'static str>,
    );

    #[test]
    fn what_was_generated_for_the_request_is_told_from_a_squatter() {
        // (operator there, sealed for us, input there) → (ours, taken)
        let rows: [Row; 7] = [
            ("nothing", None, false, None, &[], None),
            (
                "ours, both",
                Some(operator("u1")),
                true,
                Some(input(Some("u1"), OURS)),
                &["Operator/request-0123", "Input/request-0123"],
                None,
            ),
            (
                "ours, no input yet",
                Some(operator("u1")),
                true,
                None,
                &["Operator/request-0123"],
                None,
            ),
            (
                "an Input first",
                None,
                false,
                Some(input(None, "kubectl")),
                &[],
                Some("Input/request-0123"),
            ),
            (
                "an Operator not sealed for us",
                Some(operator("u2")),
                false,
                Some(input(Some("u2"), OURS)),
                &[],
                Some("Operator/request-0123"),
            ),
            (
                "an Input of another Operator",
                Some(operator("u1")),
                true,
                Some(input(Some("u9"), OURS)),
                &["Operator/request-0123"],
                Some("Input/request-0123"),
            ),
            (
                "an Input naming our Operator, written by someone",
                Some(operator("u1")),
                true,
                Some(input(Some("u1"), "kubectl")),
                &["Operator/request-0123"],
                Some("Input/request-0123"),
            ),
        ];
        for (row, operator, sealed, input, written, taken) in rows {
            let found = Found::classify(operator, input, sealed);
            assert_eq!(found.written(), written, "{row}");
            assert_eq!(found.taken.as_deref(), taken, "{row}");
        }
    }

    #[test]
    fn a_request_made_again_is_sealed_apart() {
        let first = RequestId {
            written_for: "team-a/etcd".into(),
            uid: "u1".into(),
        };
        let again = RequestId {
            uid: "u2".into(),
            ..first.clone()
        };
        assert_ne!(first.sealed(), again.sealed());
    }
}
