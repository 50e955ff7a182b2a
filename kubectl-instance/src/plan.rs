//! `kubectl instance plan input/NAME | operator/NAME [-f FILE] --server URL`:
//! what a resolution would change before anything is written. The Inputs
//! are read from the cluster (an Operator stands for the Input of its
//! name), the planned one replaced by the file's when one is given, and
//! sent with what the set holds now to the resolver API's `POST /v1/plan`,
//! which runs the Input controller's own pass. The set it answers is
//! compared with the installed one: installs, upgrades, downgrades and
//! removals, each with who asks for it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::Instance;
use pakket_operators_api::Operator;
use pakket_resolve_api::protocol::plan::{CurrentEntry, PlanAnswer, PlanRequest, PlannedInput};
use pakket_resolve_api::protocol::resolve::Selection;
use pakket_resolve_api::resolved_set::{self, Entry};
use pakket_resolve_api::{Input, InputClass};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format};
use crate::resolver::Server;
use crate::{identity, lookup};

/// What would happen to one package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// `install`, `upgrade`, `downgrade`, `remove`, `keep`.
    pub action: &'static str,
    /// The package.
    pub package: String,
    /// Its version now, if installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Its version after, if it stays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The bundle after, if it stays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// Who asks for it (`Input x`, `Instance y`), or why it goes.
    pub why: Vec<String>,
}

/// The whole plan.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// `Input x` or `Operator x`.
    pub planned: String,
    /// What the planned Input would get.
    pub answer: PlanAnswer,
    /// Every package's change, by package.
    pub changes: Vec<Change>,
}

/// Where the set is: its Instance's name.
pub struct SetName<'a>(pub &'a str);

/// Runs the command.
pub async fn run(
    client: &kube::Client,
    target: &str,
    file: Option<&Path>,
    set: SetName<'_>,
    server: Option<Server<'_>>,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let Some(server) = server else {
        return Err(Error::Config(
            "plan asks the cluster's resolver API: pass --server https://HOST:PORT (pakket-resolveset's Service)".into(),
        ));
    };
    let (kind, name) = match parse_target(target)? {
        (Some(kind), name) => (kind, name),
        (None, name) => (kind_of(client, &name, file).await?, name),
    };
    let classes = read_classes(client).await?;
    let mut inputs = read_inputs(client).await?;
    let planned = planned_input(client, kind, &name, file).await?;
    let Some(class) = classes.get(&planned.spec.input_class) else {
        return Err(Error::Catalog(format!(
            "{kind} {name}: spec.inputClass {} names no InputClass; create it or name one of `kubectl get inputclasses`",
            planned.spec.input_class
        )));
    };
    if class.spec.parameters.dry_run {
        let _ = writeln!(
            out,
            "note: InputClass {} only plans (dryRun); applied, this {kind} would change nothing, so it is planned as if its class installed",
            planned.spec.input_class
        );
    }
    inputs.retain(|input| input.name_any() != name);
    let mut request_inputs: Vec<PlannedInput> = inputs
        .iter()
        .filter_map(|input| {
            let parameters = &classes.get(&input.spec.input_class)?.spec.parameters;
            Some(PlannedInput::of(input, parameters))
        })
        .collect();
    let mut own = PlannedInput::of(&planned, &class.spec.parameters);
    own.dry_run = false;
    request_inputs.push(own);
    let current = current_set(client, set.0).await?;
    // What a class without `minKubeVersion` plans for, as the controller.
    let kube_version = client
        .apiserver_version()
        .await
        .ok()
        .map(|info| format!("{}.{}", info.major, info.minor));
    let request = PlanRequest {
        kube_version,
        inputs: request_inputs,
        current: current
            .iter()
            .map(|entry| CurrentEntry {
                package: entry.package_name.clone(),
                version: entry.version.clone(),
            })
            .collect(),
        set: set.0.to_owned(),
    };
    let resolver = server
        .client()
        .map_err(|error| Error::Catalog(error.to_string()))?;
    let response = resolver
        .plan(&request)
        .await
        .map_err(|error| Error::Catalog(format!("asking {} for a plan: {error}", server.url)))?;
    let answer = response
        .answers
        .get(&name)
        .cloned()
        .unwrap_or(PlanAnswer::Invalid {
            message: "the server did not plan it".into(),
        });
    let plan = Plan {
        planned: format!("{kind} {name}"),
        changes: changes(&current, &response.set, &response.answers),
        answer,
    };
    match format {
        Some(format) => output::print(&plan, format, out),
        None => {
            out.write_all(render(&plan).as_bytes())?;
            Ok(())
        }
    }
}

/// `input/NAME`, `operator/NAME` or a bare `NAME` (kind `None`: see
/// [`kind_of`]).
fn parse_target(target: &str) -> Result<(Option<&'static str>, String), Error> {
    match target.split_once('/') {
        Some(("input" | "inputs", name)) if !name.is_empty() => {
            Ok((Some("Input"), name.to_owned()))
        }
        Some(("operator" | "operators", name)) if !name.is_empty() => {
            Ok((Some("Operator"), name.to_owned()))
        }
        None if !target.is_empty() => Ok((None, target.to_owned())),
        _ => Err(Error::Config(format!(
            "{target:?}: name what to plan as NAME, input/NAME or operator/NAME"
        ))),
    }
}

/// What a bare NAME plans: the file's `kind`, else the Input of that name,
/// else the Operator (an Operator's Input has its name: the Input is what
/// is resolved either way).
async fn kind_of(
    client: &kube::Client,
    name: &str,
    file: Option<&Path>,
) -> Result<&'static str, Error> {
    if let Some(file) = file {
        let text = std::fs::read_to_string(file)
            .map_err(|error| Error::Config(format!("reading {}: {error}", file.display())))?;
        let kind = serde_saphyr::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|document| document["kind"].as_str().map(str::to_owned));
        return match kind.as_deref() {
            Some("Input") => Ok("Input"),
            Some("Operator") => Ok("Operator"),
            _ => Err(Error::Config(format!(
                "{}: not an Input or Operator manifest (its kind says neither)",
                file.display()
            ))),
        };
    }
    if Api::<Input>::all(client.clone())
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .is_some()
    {
        return Ok("Input");
    }
    Ok("Operator")
}

/// The Input to plan: from `file` (an Input or an Operator manifest) or
/// from the cluster; an Operator becomes the Input it would write.
async fn planned_input(
    client: &kube::Client,
    kind: &str,
    name: &str,
    file: Option<&Path>,
) -> Result<Input, Error> {
    let text = match file {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map_err(|error| Error::Config(format!("reading {}: {error}", file.display())))?,
        ),
        None => None,
    };
    let parse_error = |error: serde_saphyr::Error| {
        Error::Config(format!(
            "{}: not a {kind} manifest: {error}",
            file.map(|f| f.display().to_string()).unwrap_or_default()
        ))
    };
    let input = match (kind, text) {
        ("Input", Some(text)) => serde_saphyr::from_str::<Input>(&text).map_err(parse_error)?,
        ("Operator", Some(text)) => {
            operator_input(&serde_saphyr::from_str::<Operator>(&text).map_err(parse_error)?)
        }
        ("Input", None) => get(client, "inputs", name, Api::<Input>::all(client.clone())).await?,
        _ => operator_input(
            &get(
                client,
                "operators",
                name,
                Api::<Operator>::all(client.clone()),
            )
            .await?,
        ),
    };
    // The file's object stands for the one named on the command line.
    let mut input = input;
    input.metadata.name = Some(name.to_owned());
    Ok(input)
}

/// The Input an Operator's controller writes for it.
fn operator_input(operator: &Operator) -> Input {
    let mut input = Input::new(
        &operator.name_any(),
        pakket_resolve_api::InputSpec {
            config: None,
            input_class: operator.spec.input_class.clone(),
            constraints: pakket_operators_api::constraints(&operator.spec),
        },
    );
    input.metadata.labels = operator.metadata.labels.clone();
    input
}

async fn get<K>(client: &kube::Client, plural: &str, name: &str, api: Api<K>) -> Result<K, Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(Error::NotFound {
            kind: if plural == "inputs" {
                "input"
            } else {
                "operator"
            },
            name: name.to_owned(),
        }),
        Err(source) => Err(identity::refused(
            client,
            source,
            &format!("get {plural}"),
            lookup::READ_ADVICE,
        )
        .await),
    }
}

async fn read_inputs(client: &kube::Client) -> Result<Vec<Input>, Error> {
    match Api::<Input>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(list.items),
        Err(source) => {
            Err(identity::refused(client, source, "list Inputs", lookup::READ_ADVICE).await)
        }
    }
}

async fn read_classes(client: &kube::Client) -> Result<BTreeMap<String, Arc<InputClass>>, Error> {
    match Api::<InputClass>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .map(|class| (class.name_any(), Arc::new(class)))
            .collect()),
        Err(source) => {
            Err(identity::refused(client, source, "list InputClasses", lookup::READ_ADVICE).await)
        }
    }
}

/// What the set holds now: the entries of the ConfigMap its Instance
/// mounts (none when there is no set yet).
async fn current_set(client: &kube::Client, set: &str) -> Result<Vec<Entry>, Error> {
    let instance = match Api::<Instance>::all(client.clone()).get_opt(set).await {
        Ok(Some(instance)) => instance,
        Ok(None) => return Ok(Vec::new()),
        Err(source) => {
            return Err(
                identity::refused(client, source, "get Instances", lookup::READ_ADVICE).await,
            );
        }
    };
    let Some(mount) = resolved_set::mounted(&instance) else {
        return Ok(Vec::new());
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &mount.namespace);
    let config_map = match config_maps.get_opt(&mount.name).await {
        Ok(Some(config_map)) => config_map,
        Ok(None) => return Ok(Vec::new()),
        Err(source) => {
            return Err(identity::refused(
                client,
                source,
                &format!("get ConfigMaps in {}", mount.namespace),
                lookup::READ_ADVICE,
            )
            .await);
        }
    };
    resolved_set::in_config_map(&config_map).map_err(|problem| {
        Error::Catalog(format!(
            "ConfigMap {}/{}: {problem}",
            mount.namespace, mount.name
        ))
    })
}

/// Compares the set now with the planned one.
pub fn changes(
    current: &[Entry],
    planned: &[Selection],
    answers: &BTreeMap<String, PlanAnswer>,
) -> Vec<Change> {
    // Who asks for each bundle, from what each Input would get.
    let mut asked_by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (input, answer) in answers {
        if let PlanAnswer::Resolved { instances } = answer {
            for instance in instances {
                for relation in &instance.satisfies {
                    let who = match relation.kind.as_str() {
                        "Input" => format!("Input {input}"),
                        kind => format!("{kind} {}", relation.name),
                    };
                    let list = asked_by.entry(instance.bundle.as_str()).or_default();
                    if !list.contains(&who) {
                        list.push(who);
                    }
                }
            }
        }
    }
    let mut changes = Vec::new();
    for selection in planned {
        let before = current.iter().find(|e| e.package_name == selection.package);
        let action = match before {
            None => "install",
            Some(entry) if entry.name == selection.bundle => "keep",
            Some(entry) => match (
                pakket_engine::Version::parse(&entry.version),
                pakket_engine::Version::parse(&selection.version),
            ) {
                (Ok(then), Ok(now)) if now < then => "downgrade",
                _ => "upgrade",
            },
        };
        changes.push(Change {
            action,
            package: selection.package.clone(),
            from: before.map(|entry| entry.version.clone()),
            to: Some(selection.version.clone()),
            bundle: Some(selection.bundle.clone()),
            why: asked_by
                .get(selection.bundle.as_str())
                .cloned()
                .unwrap_or_default(),
        });
    }
    for entry in current {
        if !planned.iter().any(|s| s.package == entry.package_name) {
            changes.push(Change {
                action: "remove",
                package: entry.package_name.clone(),
                from: Some(entry.version.clone()),
                to: None,
                bundle: None,
                why: vec!["no Input asks for it any more, and nothing installed by them needs it (removed after the children that need it are gone)".into()],
            });
        }
    }
    changes.sort_by(|a, b| a.package.cmp(&b.package));
    changes
}

/// The plan as text.
pub fn render(plan: &Plan) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(text, "Plan for {}:", plan.planned);
    match &plan.answer {
        PlanAnswer::Resolved { instances } => {
            let bundles: Vec<String> = instances
                .iter()
                .map(|i| format!("{} {}", i.package, i.version))
                .collect();
            let _ = writeln!(text, "  resolves: {}", bundles.join(", "));
        }
        PlanAnswer::Invalid { message } => {
            let _ = writeln!(text, "  cannot be resolved as written: {message}");
        }
        PlanAnswer::Unsatisfiable {
            summary,
            explanation,
        } => {
            let _ = writeln!(text, "  cannot be satisfied: {summary}");
            for line in explanation.lines() {
                let _ = writeln!(text, "    {line}");
            }
            let _ = writeln!(
                text,
                "  applied, it would be refused (ResolutionFailed) and the set below would stay as it is"
            );
        }
    }
    let moved: Vec<&Change> = plan.changes.iter().filter(|c| c.action != "keep").collect();
    if moved.is_empty() {
        let _ = writeln!(text, "The set would not change.");
    } else {
        let _ = writeln!(text, "The set would change:");
    }
    for change in &moved {
        let versions = match (&change.from, &change.to) {
            (Some(from), Some(to)) => format!("{from} → {to}"),
            (None, Some(to)) => to.clone(),
            (Some(from), None) => from.clone(),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            text,
            "  {:<9} {} {versions}{}: {}",
            change.action.to_uppercase(),
            change.package,
            change
                .bundle
                .as_ref()
                .map(|b| format!(" ({b})"))
                .unwrap_or_default(),
            if change.why.is_empty() {
                "needed by the set".to_owned()
            } else {
                change.why.join("; ")
            }
        );
    }
    let kept = plan.changes.len() - moved.len();
    if kept > 0 {
        let _ = writeln!(text, "{kept} package(s) stay as they are.");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_resolve_api::input::{Relation, ResolvedInstance};
    use pakket_resolve_api::protocol::resolve::SelectionReason;

    fn entry(package: &str, version: &str) -> Entry {
        Entry {
            config: None,
            schema: "olm.bundle".into(),
            name: format!("{package}.v{version}"),
            package_name: package.into(),
            version: version.into(),
            image: String::new(),
            catalog: "c".into(),
            channel: None,
            properties: Vec::new(),
        }
    }

    fn selection(package: &str, version: &str) -> Selection {
        Selection {
            package: package.into(),
            version: version.into(),
            bundle: format!("{package}.v{version}"),
            catalog: "c".into(),
            channel: None,
            reason: SelectionReason::Installed,
            deprecated: None,
        }
    }

    #[test]
    fn installs_upgrades_downgrades_removals_and_who_asks() {
        let current = [
            entry("a", "1.0.0"),
            entry("b", "2.0.0"),
            entry("c", "1.0.0"),
            entry("gone", "1.0.0"),
        ];
        let planned = [
            selection("a", "1.0.0"),
            selection("b", "2.1.0"),
            selection("c", "0.9.0"),
            selection("new", "1.0.0"),
        ];
        let answers = BTreeMap::from([(
            "mine".to_owned(),
            PlanAnswer::Resolved {
                instances: vec![ResolvedInstance {
                    bundle: "new.v1.0.0".into(),
                    satisfies: vec![Relation {
                        kind: "Input".into(),
                        name: "mine".into(),
                        meets: Vec::new(),
                    }],
                    ..ResolvedInstance::default()
                }],
            },
        )]);
        let found = changes(&current, &planned, &answers);
        let actions: Vec<(&str, &str)> = found
            .iter()
            .map(|c| (c.package.as_str(), c.action))
            .collect();
        assert_eq!(
            actions,
            [
                ("a", "keep"),
                ("b", "upgrade"),
                ("c", "downgrade"),
                ("gone", "remove"),
                ("new", "install")
            ]
        );
        assert_eq!(found[4].why, ["Input mine"]);
        let text = render(&Plan {
            planned: "Input mine".into(),
            answer: answers["mine"].clone(),
            changes: found,
        });
        assert!(text.contains("UPGRADE   b 2.0.0 → 2.1.0"), "{text}");
        assert!(
            text.contains("INSTALL   new 1.0.0 (new.v1.0.0): Input mine"),
            "{text}"
        );
        assert!(text.contains("1 package(s) stay as they are."), "{text}");
    }
}
