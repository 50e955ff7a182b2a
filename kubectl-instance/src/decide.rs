//! `kubectl instance decide input/NAME`: a person's choice between
//! conflicting Inputs. When requests that are not installed yet conflict,
//! none is chosen on its own (they all wait, each told so); this writes
//! `status.decision` on the Input chosen: who chose, its generation, and
//! the Inputs (by UID) it is chosen over, exactly those its status names.
//! The webhooks let only a user with `approve` on the Input write it, in
//! her own name.
//!
//! Choosing an Input that an earlier decision lost against takes that
//! Input out of the earlier decision (two decisions that contradict each
//! other would settle nothing), after the choice itself is written.

use std::io::Write;

use kube::api::{Api, Patch, PatchParams};
use pakket_resolve_api::Input;
use pakket_resolve_api::input::ConflictDecision;
use serde_json::json;

use crate::error::{self, Error};
use crate::identity;

/// What the decision covers, from the Input's status; why not, in words.
pub fn decision_for(input: &Input, by: &str) -> Result<ConflictDecision, String> {
    let name = input.metadata.name.clone().unwrap_or_default();
    let conflict = input
        .status
        .as_ref()
        .and_then(|status| status.conflict.as_ref())
        .ok_or_else(|| {
            format!(
                "Input {name} does not wait on a conflict with other requests (its status names \
                 none); there is nothing to choose (kubectl instance why input/{name})"
            )
        })?;
    if conflict.standing == "Installed" {
        return Err(format!(
            "Input {name} conflicts with what other Inputs installed, which keeps running: a \
             decision chooses only between requests not installed yet; change or remove the \
             installed request, or this one"
        ));
    }
    if conflict.with.is_empty() {
        return Err(format!(
            "Input {name}'s status names no Input it conflicts with; wait for the controller to \
             write it, then try again"
        ));
    }
    let generation = input
        .metadata
        .generation
        .ok_or_else(|| format!("Input {name} has no metadata.generation; the server wrote none"))?;
    Ok(ConflictDecision {
        chosen_by: by.to_owned(),
        generation,
        over: conflict.with.clone(),
    })
}

/// `over` without `uid`, for an earlier decision `uid` is now chosen over.
fn without(decision: &ConflictDecision, uid: &str) -> Option<ConflictDecision> {
    let over: Vec<String> = decision
        .over
        .iter()
        .filter(|other| *other != uid)
        .cloned()
        .collect();
    (!over.is_empty()).then(|| ConflictDecision {
        over,
        ..decision.clone()
    })
}

/// Chooses Input `name` over the Inputs it conflicts with, as the caller.
pub async fn run(client: &kube::Client, name: &str, out: &mut impl Write) -> Result<(), Error> {
    let inputs: Api<Input> = Api::all(client.clone());
    let input = inputs
        .get_opt(name)
        .await
        .map_err(error::api(format!("reading Input {name}")))?
        .ok_or_else(|| Error::NotFound {
            kind: "input",
            name: name.to_owned(),
        })?;
    let by = identity::whoami(client).await?;
    let decision = decision_for(&input, &by).map_err(Error::Changed)?;
    let uid = input.metadata.uid.clone().unwrap_or_default();
    let count = decision.over.len();
    // The choice first: refused, nothing else was written. Should giving
    // up an earlier decision fail after it, the two contradict each other
    // and settle nothing (both wait), which running again mends.
    if let Err(source) = write(client, &input, Some(decision)).await {
        return Err(identity::refused(
            client,
            source,
            format!("choosing Input {name}"),
            "choosing needs verb approve on inputs.resolve.pakket.dev and patch on inputs/status \
             (the example ClusterRole pakket-input-decider); ask an admin to bind it",
        )
        .await);
    }
    // Earlier decisions this Input lost against give it up.
    let all = inputs
        .list(&Default::default())
        .await
        .map_err(error::api("listing Inputs"))?;
    for other in &all.items {
        let Some(earlier) = other.status.as_ref().and_then(|s| s.decision.as_ref()) else {
            continue;
        };
        if !earlier.over.contains(&uid) {
            continue;
        }
        let other_name = other.metadata.name.clone().unwrap_or_default();
        write(client, other, without(earlier, &uid))
            .await
            .map_err(|source| Error::Api {
                action: format!("taking Input {name} out of the decision on Input {other_name} (Input {name} is chosen; run again to finish)"),
                source,
            })?;
        writeln!(
            out,
            "input/{other_name}: its decision (by {}) no longer covers input/{name}",
            earlier.chosen_by
        )?;
    }
    writeln!(
        out,
        "input/{name} chosen over {count} conflicting request(s) by {by}, for generation {}",
        input.metadata.generation.unwrap_or_default()
    )?;
    Ok(())
}

/// Writes `decision` (or removes it) on `input`'s status, refused if
/// anyone wrote the Input since it was read.
async fn write(
    client: &kube::Client,
    input: &Input,
    decision: Option<ConflictDecision>,
) -> Result<(), kube::Error> {
    let patch = json!({
        "metadata": { "resourceVersion": input.metadata.resource_version },
        "status": { "decision": decision },
    });
    Api::<Input>::all(client.clone())
        .patch_status(
            input.metadata.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(standing: Option<&str>, with: &[&str]) -> Input {
        let mut input: Input = serde_json::from_value(json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": {"name": "b", "uid": "uid-b", "generation": 3},
            "spec": {"inputClass": "subscription", "constraints": []},
        }))
        .unwrap();
        input.status = Some(pakket_resolve_api::input::InputStatus {
            conflict: standing.map(|standing| pakket_resolve_api::input::InputConflict {
                standing: standing.into(),
                with: with.iter().map(|w| (*w).to_owned()).collect(),
            }),
            ..Default::default()
        });
        input
    }

    #[test]
    fn a_decision_covers_the_generation_and_exactly_the_conflicts_the_status_names() {
        let decision = decision_for(&input(Some("Waiting"), &["uid-a", "uid-c"]), "carol").unwrap();
        assert_eq!(
            decision,
            ConflictDecision {
                chosen_by: "carol".into(),
                generation: 3,
                over: vec!["uid-a".into(), "uid-c".into()],
            }
        );
        assert!(decision_for(&input(Some("NotChosen"), &["uid-a"]), "carol").is_ok());
        let installed = decision_for(&input(Some("Installed"), &["uid-a"]), "carol").unwrap_err();
        assert!(installed.contains("keeps running"), "{installed}");
        let none = decision_for(&input(None, &[]), "carol").unwrap_err();
        assert!(none.contains("nothing to choose"), "{none}");
        // Taking one Input out of an earlier decision keeps the rest.
        let kept = without(&decision, "uid-a").unwrap();
        assert_eq!(kept.over, ["uid-c"]);
        assert!(without(&kept, "uid-c").is_none());
    }
}
