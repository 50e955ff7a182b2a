//! `kubectl instance why input/NAME` (or a NAME no Instance has): what an
//! Input brings in and why, or why it cannot be resolved, and how far the
//! Instances that install its bundles have got.
//!
//! Read from the Input's status (what the Input controller resolved: each
//! bundle, what it satisfies and what it depends on) and from the child
//! Instances it names, whose own conditions say whether each is installed.

use std::io::Write;

use kube::api::Api;
use pakket_api::{ConditionType, Instance};
use pakket_resolve_api::input::ResolvedInstance;
use pakket_resolve_api::{Input, InputConditionType, InputReason};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format};

/// One bundle the Input brings in, and where its Instance stands.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Brought {
    /// The bundle as the resolver chose it.
    #[serde(flatten)]
    pub resolved: ResolvedInstance,
    /// The Instance's state: `Installed`, a condition's reason, or
    /// `NotCreated`.
    pub state: String,
}

/// The answer for one Input.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDiagnosis {
    /// The Input's name.
    pub input: String,
    /// One sentence.
    pub summary: String,
    /// The resolver's words (an explanation when it failed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What it brings in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bundles: Vec<Brought>,
    /// Commands or actions that move things on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    /// The requests it conflicts with, as far as the reader may read them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicting: Option<Conflicting>,
}

/// Another Input this one conflicts with, as far as the reader may read
/// it: the status names them by UID only.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflicting {
    /// The ones the reader could read: name, who asked last (the sealed
    /// record's user, unverified here), and what it asks for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub readable: Vec<OtherRequest>,
    /// How many the reader may not read.
    #[serde(skip_serializing_if = "is_zero")]
    pub unreadable: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One conflicting Input the reader may read.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OtherRequest {
    /// Its name.
    pub input: String,
    /// Who asked for it last, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// Its constraints, as `type value`.
    pub asks: Vec<String>,
    /// Whether what it asked for is installed.
    pub installed: bool,
    /// Who chose it over others, when a person did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
}

impl OtherRequest {
    /// `input` as the reader sees it.
    pub fn of(input: &Input) -> Self {
        let annotations = input.metadata.annotations.as_ref();
        let requester = [
            pakket_api::LAST_CHANGED_BY_ANNOTATION,
            pakket_api::CREATED_BY_ANNOTATION,
        ]
        .iter()
        .find_map(|annotation| {
            pakket_api::CreatorRecord::in_annotation(annotations, annotation)?.ok()
        })
        .map(|record| record.username);
        let status = input.status.clone().unwrap_or_default();
        Self {
            input: input.metadata.name.clone().unwrap_or_default(),
            requester,
            asks: input
                .spec
                .constraints
                .iter()
                .map(|c| format!("{} {}", c.type_, c.value))
                .collect(),
            installed: !status.dry_run && !status.instances.is_empty(),
            chosen_by: status.decision.map(|decision| decision.chosen_by),
        }
    }
}

/// What settles a conflict of standing `reason`, for Input `name`.
fn conflict_steps(reason: InputReason, name: &str) -> Option<Vec<String>> {
    let change = format!("or change this request (kubectl edit input {name}) or withdraw it");
    match reason {
        InputReason::ConflictWaitsForDecision => Some(vec![
            format!(
                "an admin chooses one of the conflicting requests: kubectl instance decide input/{name} (needs approve on inputs: the example ClusterRole pakket-input-decider)"
            ),
            change,
        ]),
        InputReason::AnotherRequestChosen => Some(vec![
            format!(
                "a person chose another request over this one; an admin may choose again: kubectl instance decide input/{name}"
            ),
            change,
        ]),
        InputReason::ConflictsWithInstalled => Some(vec![
            "what is installed and still asked for keeps running: the owner of the installed request changes or removes it".into(),
            change,
        ]),
        _ => None,
    }
}

/// Where one child Instance stands, in a word.
fn state_of(instance: Option<&Instance>) -> String {
    let Some(instance) = instance else {
        return "NotCreated".into();
    };
    for kind in ConditionType::INSTANCE {
        if let Some(condition) = instance.condition(kind)
            && condition.status != "True"
        {
            return condition.reason.clone();
        }
    }
    if instance.condition(ConditionType::Healthy).is_some() {
        "InstalledAndHealthy".into()
    } else {
        "NotReconciled".into()
    }
}

/// Explains `input`, given the child Instances found by name.
/// `conflicting`: the other Inputs its status names, as far as the reader
/// may read them.
pub fn diagnose(
    input: &Input,
    children: &[Option<Instance>],
    conflicting: Option<Conflicting>,
) -> InputDiagnosis {
    let name = input.metadata.name.clone().unwrap_or_default();
    let status = input.status.clone().unwrap_or_default();
    let failed = input.condition(InputConditionType::ResolutionFailed.as_str());
    let reason = failed.and_then(|failed| InputReason::parse(&failed.reason));
    let Some(failed) = failed else {
        return InputDiagnosis {
            input: name.clone(),
            summary: format!("Input {name} is not resolved yet: no resolver has written its status."),
            message: String::new(),
            bundles: Vec::new(),
            next_steps: vec![
                "check that pakket-resolveset runs (kubectl -n pakket-system get pods) and that the Input's class exists (kubectl get inputclasses)".into(),
            ],
            conflicting: None,
        };
    };
    if failed.status == "True"
        && let Some(next_steps) = reason.and_then(|reason| conflict_steps(reason, &name))
    {
        return InputDiagnosis {
            input: name.clone(),
            summary: format!(
                "Input {name} waits: it resolves alone but conflicts with other requests ({}); nothing of it is installed or changed.",
                failed.reason
            ),
            message: failed.message.clone(),
            bundles: Vec::new(),
            next_steps,
            conflicting,
        };
    }
    if failed.status == "True" && reason == Some(InputReason::CatalogUnavailable) {
        return InputDiagnosis {
            input: name.clone(),
            summary: format!(
                "Input {name} is held at what it installed: a catalog it came from is not served, so what it asks for now cannot be resolved; what it installed keeps running."
            ),
            message: failed.message.clone(),
            bundles: Vec::new(),
            next_steps: vec![
                "kubectl get catalogs   # the message names the catalog the change waits for"
                    .into(),
                format!(
                    "or change the request back to what is installed: kubectl edit input {name}"
                ),
            ],
            conflicting: None,
        };
    }
    if failed.status == "True" {
        let next_steps = match reason {
            Some(InputReason::InvalidInput) => vec![format!(
                "fix the field the message names: kubectl edit input {name}"
            )],
            Some(InputReason::PackageOwnedByAnother) => vec![
                "one Input installs a package: the message names the one that owns it (kubectl instance why input/OWNER)".into(),
                format!("delete this request (kubectl delete input {name}, or its Operator) or the owner's, and the one left takes the package"),
            ],
            _ => vec![
                "the explanation names the chain of requirements that rules each candidate out; change the Input's constraints, what is installed, or the Catalogs".into(),
                format!("try a change first with a dry-run Input, or `pakket resolve --server URL REQUEST`"),
            ],
        };
        return InputDiagnosis {
            input: name.clone(),
            summary: format!(
                "Input {name} cannot be resolved ({}); nothing of it is installed or changed.",
                failed.reason
            ),
            message: failed.message.clone(),
            bundles: Vec::new(),
            next_steps,
            conflicting: None,
        };
    }
    let bundles: Vec<Brought> = status
        .instances
        .iter()
        .zip(children.iter().chain(std::iter::repeat(&None)))
        .map(|(resolved, child)| Brought {
            resolved: resolved.clone(),
            state: if status.dry_run {
                "DryRun".into()
            } else {
                state_of(child.as_ref())
            },
        })
        .collect();
    let waiting: Vec<&Brought> = bundles
        .iter()
        .filter(|b| b.state != "InstalledAndHealthy" && b.state != "DryRun")
        .collect();
    let summary = if status.dry_run {
        format!(
            "Input {name} is a dry run: it would bring in {} bundle(s); nothing is installed.",
            bundles.len()
        )
    } else if waiting.is_empty() {
        format!(
            "Input {name} brings in {} bundle(s), all installed and healthy.",
            bundles.len()
        )
    } else {
        format!(
            "Input {name} brings in {} bundle(s); {} not installed and healthy yet.",
            bundles.len(),
            waiting.len()
        )
    };
    let next_steps = waiting
        .iter()
        .map(|b| match b.state.as_str() {
            "NotCreated" => format!(
                "Instance {} is not created yet: the resolveset Instance may wait for approval (kubectl instance why resolveset)",
                b.resolved.name
            ),
            _ => format!("kubectl instance why {}   # {}", b.resolved.name, b.state),
        })
        .collect();
    InputDiagnosis {
        input: name,
        summary,
        message: failed.message.clone(),
        bundles,
        next_steps,
        conflicting: None,
    }
}

/// The diagnosis as text.
pub fn render(diagnosis: &InputDiagnosis) -> String {
    let mut text = format!("{}\n", diagnosis.summary);
    if !diagnosis.bundles.is_empty() {
        for brought in &diagnosis.bundles {
            let b = &brought.resolved;
            text.push_str(&format!(
                "  {} {} (bundle {}, catalog {}{}) as Instance {}: {}\n",
                b.package,
                b.version,
                b.bundle,
                b.catalog,
                b.channel
                    .as_deref()
                    .map(|c| format!(", channel {c}"))
                    .unwrap_or_default(),
                b.name,
                brought.state
            ));
            for relation in &b.satisfies {
                text.push_str(&format!(
                    "    for {} {}: {}\n",
                    relation.kind,
                    relation.name,
                    relation.meets.join("; ")
                ));
            }
            for relation in &b.dependencies {
                text.push_str(&format!(
                    "    needs {} {}: {}\n",
                    relation.kind,
                    relation.name,
                    relation.meets.join("; ")
                ));
            }
            if let Some(deprecated) = &b.deprecated {
                text.push_str(&format!("    deprecated: {deprecated}\n"));
            }
        }
    } else if !diagnosis.message.is_empty() {
        for line in diagnosis.message.lines() {
            text.push_str(&format!("    {line}\n"));
        }
    }
    if let Some(conflicting) = &diagnosis.conflicting {
        for other in &conflicting.readable {
            text.push_str(&format!(
                "  conflicts with Input {}{}{}{}: {}\n",
                other.input,
                other
                    .requester
                    .as_deref()
                    .map(|by| format!(" (asked by {by})"))
                    .unwrap_or_default(),
                if other.installed { ", installed" } else { "" },
                other
                    .chosen_by
                    .as_deref()
                    .map(|by| format!(", chosen by {by}"))
                    .unwrap_or_default(),
                other.asks.join("; ")
            ));
        }
        if conflicting.unreadable > 0 {
            text.push_str(&format!(
                "  and {} request(s) you may not read\n",
                conflicting.unreadable
            ));
        }
    }
    if !diagnosis.next_steps.is_empty() {
        text.push_str("  Next:\n");
        for step in &diagnosis.next_steps {
            text.push_str(&format!("    {step}\n"));
        }
    }
    text
}

/// Reads Input `name` and its children, and prints the answer; `None` if
/// there is no such Input (the caller then says what was not found).
pub async fn run(
    client: &kube::Client,
    name: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<Option<()>, Error> {
    let inputs: Api<Input> = Api::all(client.clone());
    let input = match inputs.get_opt(name).await {
        Ok(Some(input)) => input,
        Ok(None) => return Ok(None),
        // No Input kind on this cluster, or no right to read Inputs.
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(error) => {
            return Err(Error::Api {
                action: format!("reading Input {name}"),
                source: error,
            });
        }
    };
    let instances: Api<Instance> = Api::all(client.clone());
    let mut children = Vec::new();
    for resolved in input.status.iter().flat_map(|s| &s.instances) {
        children.push(instances.get_opt(&resolved.name).await.ok().flatten());
    }
    let conflicting = match input.status.as_ref().and_then(|s| s.conflict.as_ref()) {
        Some(conflict) => Some(conflicting(&inputs, &conflict.with).await),
        None => None,
    };
    let diagnosis = diagnose(&input, &children, conflicting);
    match format {
        Some(format) => output::print(&diagnosis, format, out)?,
        None => out.write_all(render(&diagnosis).as_bytes())?,
    }
    Ok(Some(()))
}

/// The Inputs with these UIDs that the reader may list; the rest counted.
async fn conflicting(inputs: &Api<Input>, uids: &[String]) -> Conflicting {
    let listed = inputs
        .list(&Default::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    let readable: Vec<OtherRequest> = listed
        .iter()
        .filter(|input| {
            input
                .metadata
                .uid
                .as_ref()
                .is_some_and(|uid| uids.contains(uid))
        })
        .map(OtherRequest::of)
        .collect();
    Conflicting {
        unreadable: uids.len().saturating_sub(readable.len()),
        readable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn waiting(reason: &str) -> Input {
        serde_json::from_value(json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": {"name": "b", "uid": "uid-b", "generation": 1},
            "spec": {"inputClass": "subscription", "constraints": [
                {"type": "olm.catalog", "value": {"name": "c", "package": "db"}}]},
            "status": {
                "conditions": [{"type": "ResolutionFailed", "status": "True", "reason": reason,
                    "message": "it resolves alone but conflicts with 2 other requests",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "conflict": {"standing": "Waiting", "with": ["uid-a", "uid-x"]},
            },
        }))
        .unwrap()
    }

    #[test]
    fn an_input_held_for_its_catalog_says_what_it_installed_keeps_running() {
        let input = waiting("CatalogUnavailable");
        let diagnosis = diagnose(&input, &[], None);
        assert!(
            diagnosis.summary.contains("keeps running")
                && !diagnosis.summary.contains("nothing of it is installed"),
            "{}",
            diagnosis.summary
        );
        assert!(diagnosis.next_steps[0].contains("kubectl get catalogs"));
    }

    #[test]
    fn a_conflict_is_read_by_its_reason_and_shows_only_what_the_reader_may_read() {
        let mut other = waiting("ConflictWaitsForDecision");
        other.metadata.name = Some("a".into());
        let conflicting = Conflicting {
            readable: vec![OtherRequest::of(&other)],
            unreadable: 1,
        };
        let diagnosis = diagnose(&waiting("ConflictWaitsForDecision"), &[], Some(conflicting));
        assert!(diagnosis.summary.contains("waits"), "{}", diagnosis.summary);
        assert!(diagnosis.next_steps[0].contains("kubectl instance decide input/b"));
        let text = render(&diagnosis);
        assert!(
            text.contains("conflicts with Input a: olm.catalog"),
            "{text}"
        );
        assert!(text.contains("and 1 request(s) you may not read"), "{text}");
        // The same words under a reason that is no conflict are not read
        // as one.
        let other_reason = diagnose(&waiting("Unsatisfiable"), &[], None);
        assert!(
            !other_reason.summary.contains("waits"),
            "{}",
            other_reason.summary
        );
        for (reason, step) in [
            ("AnotherRequestChosen", "chose another request"),
            ("ConflictsWithInstalled", "keeps running"),
        ] {
            let diagnosis = diagnose(&waiting(reason), &[], None);
            assert!(
                diagnosis.next_steps[0].contains(step),
                "{reason}: {:?}",
                diagnosis.next_steps
            );
        }
    }
}
