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
use pakket_resolve_api::Input;
use pakket_resolve_api::input::ResolvedInstance;
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
pub fn diagnose(input: &Input, children: &[Option<Instance>]) -> InputDiagnosis {
    let name = input.metadata.name.clone().unwrap_or_default();
    let status = input.status.clone().unwrap_or_default();
    let failed = input.condition("ResolutionFailed");
    let Some(failed) = failed else {
        return InputDiagnosis {
            input: name.clone(),
            summary: format!("Input {name} is not resolved yet: no resolver has written its status."),
            message: String::new(),
            bundles: Vec::new(),
            next_steps: vec![
                "check that pakket-resolveset runs (kubectl -n pakket-system get pods) and that the Input's class exists (kubectl get inputclasses)".into(),
            ],
        };
    };
    if failed.status == "True" {
        let next_steps = match failed.reason.as_str() {
            "InvalidInput" => vec![format!(
                "fix the field the message names: kubectl edit input {name}"
            )],
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
    let diagnosis = diagnose(&input, &children);
    match format {
        Some(format) => output::print(&diagnosis, format, out)?,
        None => out.write_all(render(&diagnosis).as_bytes())?,
    }
    Ok(Some(()))
}
