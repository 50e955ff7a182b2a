//! Progression probes an admin adds on a class (`progressionProbes`), or
//! an author ships in the content ([`CONTENT_FILE`], the same list):
//! objects selected by group, kind and labels, asserted with CEL
//! expressions over the object as the cluster has it (`self`). A matching
//! object holds the phases after its own until every assertion is true,
//! and its revision is not rolled out until then.
//!
//! ```yaml
//! parameters:
//!   progressionProbes:
//!   - selector: {group: apps, kind: Deployment, labels: {tier: web}}
//!     assertions:
//!     - cel: self.status.readyReplicas == self.spec.replicas
//!       message: every replica ready
//! ```
//!
//! Content's probes are written by whoever wrote the content, before any
//! approval: every expression is held to [`cel_limits`] (size, nesting,
//! depth) as it is read, so a hostile one is refused naming its field
//! rather than crashing the provisioner. CEL has no loops, but its macros
//! iterate, and nest: an expression whose cost bound over an object is
//! past [`cel_limits::COST_LIMIT`] is not run on it; the probe says so and
//! holds, like one that fails.

use std::collections::BTreeMap;

use cel::Context;
use pakket_engine::cel_limits::{self, BoundedProgram};
use serde_json::Value;

use super::declared_phases::{self, DeclaredPhases};
use crate::class_parameters::ParameterError;

/// The parameter's name.
pub const PARAMETER: &str = "progressionProbes";

/// Where content ships its author's probes, at its root: a list of the
/// same `{selector, assertions}` as the class parameter, in a hidden file
/// (which provisioners reading manifests skip; a ConfigMap key can name
/// it, a folder it could not).
pub const CONTENT_FILE: &str = ".progression-probes.yaml";
/// The longest expression accepted.
const MAX_EXPRESSION: usize = 2048;
/// The most probes, and assertions per probe, a class may hold.
const MAX_PROBES: usize = 32;

/// A class's progression probes, and the content's (with the phases it
/// declares, [`super::declared_phases`]).
#[derive(Default)]
pub struct ProgressionProbes {
    probes: Vec<Probe>,
    phases: DeclaredPhases,
}

struct Probe {
    /// Where it was written, for messages: `progressionProbes[0]` (the
    /// class's) or `.progression-probes.yaml[0]` (the content's).
    origin: String,
    group: String,
    kind: String,
    labels: BTreeMap<String, String>,
    assertions: Vec<Assertion>,
    /// The declared phase whose objects alone it holds; `None`: any.
    phase: Option<usize>,
}

struct Assertion {
    source: String,
    program: BoundedProgram,
    message: String,
}

impl std::fmt::Debug for ProgressionProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressionProbes")
            .field("probes", &self.probes.len())
            .finish()
    }
}

impl ProgressionProbes {
    /// The class parameter `progressionProbes`, each expression compiled;
    /// anything wrong is refused naming the field.
    pub fn from_parameters(
        parameters: Option<&serde_json::Map<String, Value>>,
    ) -> Result<Self, ParameterError> {
        let Some(value) = parameters.and_then(|parameters| parameters.get(PARAMETER)) else {
            return Ok(Self::default());
        };
        let list = value.as_array().ok_or_else(|| {
            wrong(
                PARAMETER.into(),
                "must be a list of {selector, assertions}".into(),
            )
        })?;
        if list.len() > MAX_PROBES {
            return Err(wrong(
                PARAMETER.into(),
                format!("holds {} probes; at most {MAX_PROBES}", list.len()),
            ));
        }
        let mut probes = Vec::with_capacity(list.len());
        for (index, probe) in list.iter().enumerate() {
            let at = format!("{PARAMETER}[{index}]");
            let text = |field: &str| probe.pointer(field).and_then(Value::as_str);
            let kind = text("/selector/kind").ok_or_else(|| {
                wrong(
                    format!("{at}.selector.kind"),
                    "is required (the kind the probe selects, e.g. Deployment)".into(),
                )
            })?;
            let labels = match probe.pointer("/selector/labels") {
                None => BTreeMap::new(),
                Some(labels) => serde_json::from_value(labels.clone()).map_err(|_| {
                    wrong(
                        format!("{at}.selector.labels"),
                        "must map label names to values".into(),
                    )
                })?,
            };
            let assertions = probe
                .get("assertions")
                .and_then(Value::as_array)
                .filter(|assertions| !assertions.is_empty() && assertions.len() <= MAX_PROBES)
                .ok_or_else(|| {
                    wrong(
                        format!("{at}.assertions"),
                        format!("must list 1 to {MAX_PROBES} {{cel, message}}"),
                    )
                })?;
            let assertions = assertions
                .iter()
                .enumerate()
                .map(|(number, assertion)| {
                    Assertion::parse(assertion, &format!("{at}.assertions[{number}]"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            probes.push(Probe {
                origin: at.clone(),
                group: text("/selector/group").unwrap_or_default().to_owned(),
                kind: kind.to_owned(),
                labels,
                assertions,
                phase: None,
            });
        }
        Ok(Self {
            probes,
            phases: DeclaredPhases::default(),
        })
    }

    /// The probes the content's author ships in [`CONTENT_FILE`], and the
    /// phases (with their probes) in [`declared_phases::CONTENT_FILE`]
    /// (none when the files are absent), read like the class's and named
    /// by their file in every message. Part of the content, so the
    /// approval of the content covers them.
    pub fn from_content(root: &std::path::Path, max_size: u64) -> Result<Self, String> {
        let mut read = Self::from_list(root, CONTENT_FILE, max_size)?.unwrap_or_default();
        let file = std::path::Path::new(declared_phases::CONTENT_FILE);
        let Some(list) = crate::manifest::read_document(root, file, max_size)
            .map_err(|error| error.to_string())?
        else {
            return Ok(read);
        };
        let (phases, declared) = DeclaredPhases::read(&list)?;
        for (index, phase) in declared.into_iter().enumerate() {
            let Some(probes) = phase.probes else {
                continue;
            };
            let origin = format!("{}[{index}].probes", declared_phases::CONTENT_FILE);
            let mut own = Self::compile(probes, &origin)?;
            for probe in &mut own.probes {
                probe.phase = Some(index);
            }
            read.probes.extend(own.probes);
        }
        read.phases = phases;
        Ok(read)
    }

    /// The list in `file` at the content's root, if it is there.
    fn from_list(
        root: &std::path::Path,
        file: &str,
        max_size: u64,
    ) -> Result<Option<Self>, String> {
        let Some(list) = crate::manifest::read_document(root, std::path::Path::new(file), max_size)
            .map_err(|error| error.to_string())?
        else {
            return Ok(None);
        };
        Self::compile(list, file).map(Some)
    }

    /// A list of `{selector, assertions}` written at `origin` (a file, or
    /// a field in one), compiled; refused naming the field.
    fn compile(list: Value, origin: &str) -> Result<Self, String> {
        let mut parameters = serde_json::Map::new();
        parameters.insert(PARAMETER.into(), list);
        let mut read = Self::from_parameters(Some(&parameters)).map_err(|error| {
            let name = error.name.replacen(PARAMETER, origin, 1);
            format!("{name}: {}", error.problem)
        })?;
        for probe in &mut read.probes {
            probe.origin = probe.origin.replacen(PARAMETER, origin, 1);
        }
        Ok(read)
    }

    /// The phases the content declares.
    pub fn phases(&self) -> &DeclaredPhases {
        &self.phases
    }

    /// These probes and `more`, all of which must pass.
    pub fn and(mut self, more: Self) -> Self {
        self.probes.extend(more.probes);
        self.phases = self.phases.or(more.phases);
        self
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Whether a probe selects objects of `group` and `kind` (labels
    /// aside: those are known once the object is read).
    pub fn may_select(&self, group: &str, kind: &str) -> bool {
        self.probes
            .iter()
            .any(|probe| probe.group == group && probe.kind == kind)
    }

    /// What holds `object` (as the cluster has it), in words naming it and
    /// the probe; `None` when every assertion of every probe selecting it
    /// is true.
    pub fn holding(&self, reference: &pakket_api::ObjectRef, object: &Value) -> Option<String> {
        let group = pakket_api::group_of(&reference.api_version);
        let labels = object.pointer("/metadata/labels");
        let phase = self.phases.index_of(object);
        let selected: Vec<&Probe> = self
            .probes
            .iter()
            .filter(|probe| {
                probe.phase.is_none_or(|own| own == phase)
                    && probe.group == group
                    && probe.kind == reference.kind
                    && probe.labels.iter().all(|(name, value)| {
                        labels
                            .and_then(|labels| labels.get(name))
                            .and_then(Value::as_str)
                            == Some(value.as_str())
                    })
            })
            .collect();
        if selected.is_empty() {
            return None;
        }
        // The object as CEL sees it, made once for every assertion.
        let context = match self_context(object) {
            Ok(context) => context,
            Err(why) => {
                return Some(format!(
                    "{reference}: {PARAMETER} cannot read the object: {why}"
                ));
            }
        };
        let widest = cel_limits::widest_collection(object);
        for probe in selected {
            for assertion in &probe.assertions {
                let outcome = assertion.evaluate(&context, widest);
                match outcome {
                    Ok(true) => {}
                    Ok(false) => {
                        return Some(format!(
                            "{reference}: {} ({}: {})",
                            assertion.message, probe.origin, assertion.source
                        ));
                    }
                    Err(why) => {
                        return Some(format!(
                            "{reference}: {} `{}` could not be evaluated: {why}",
                            probe.origin, assertion.source
                        ));
                    }
                }
            }
        }
        None
    }
}

impl Assertion {
    fn parse(assertion: &Value, at: &str) -> Result<Self, ParameterError> {
        let source = assertion.get("cel").and_then(Value::as_str).ok_or_else(|| {
            wrong(
                format!("{at}.cel"),
                "is required: a CEL expression over the object (`self`) that is true once it may go on".into(),
            )
        })?;
        if source.len() > MAX_EXPRESSION {
            return Err(wrong(
                format!("{at}.cel"),
                format!("is {} bytes; at most {MAX_EXPRESSION}", source.len()),
            ));
        }
        let program = cel_limits::compile(source)
            .map_err(|error| wrong(format!("{at}.cel"), error.to_string()))?;
        let message = assertion
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| format!("`{source}` is not true yet"), str::to_owned);
        Ok(Self {
            source: source.to_owned(),
            program,
            message,
        })
    }

    /// True, false, or why it could not be evaluated (past the cost limit
    /// on an object whose longest list or map has `widest` entries, a
    /// field the object lacks, a value of another type: use `has()` for
    /// optional fields).
    fn evaluate(&self, context: &Context, widest: usize) -> Result<bool, String> {
        let program = self
            .program
            .within_cost(widest)
            .map_err(|error| error.to_string())?;
        match program.execute(context) {
            Ok(cel::Value::Bool(outcome)) => Ok(outcome),
            Ok(_) => Err("it gives a value that is not true or false; write a condition".into()),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// A CEL context holding `object` as `self`.
fn self_context(object: &Value) -> Result<Context<'static, 'static>, String> {
    let mut context = Context::default();
    let value = cel::to_value(object).map_err(|error| error.to_string())?;
    context
        .add_variable("self", value)
        .map_err(|error| error.to_string())?;
    Ok(context)
}

/// A refusal of `field` (the parameter or a path inside it).
fn wrong(field: String, problem: String) -> ParameterError {
    ParameterError {
        name: field,
        problem,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_author_ships_probes_in_the_content_and_they_are_named_by_their_file() {
        let content = tempfile::tempdir().unwrap();
        assert!(
            ProgressionProbes::from_content(content.path(), 1 << 20)
                .unwrap()
                .is_empty(),
            "none without the file"
        );
        std::fs::write(
            content.path().join(CONTENT_FILE),
            "- selector: {group: apps, kind: Deployment}\n  assertions:\n  - cel: self.metadata.name == 'ready'\n    message: not ready yet\n",
        )
        .unwrap();
        let theirs = ProgressionProbes::from_content(content.path(), 1 << 20).unwrap();
        let reference = pakket_api::ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: Some("n".into()),
        };
        let object = serde_json::json!({"metadata": {"name": "web"}});
        let held = theirs.holding(&reference, &object).unwrap();
        assert!(
            held.contains("not ready yet") && held.contains(".progression-probes.yaml[0]"),
            "{held}"
        );
        std::fs::write(
            content.path().join(CONTENT_FILE),
            "- selector: {group: apps}\n  assertions: [{cel: 'true'}]\n",
        )
        .unwrap();
        let wrong = ProgressionProbes::from_content(content.path(), 1 << 20).unwrap_err();
        assert!(
            wrong.starts_with(".progression-probes.yaml[0].selector.kind: is required"),
            "{wrong}"
        );
        std::fs::write(content.path().join(CONTENT_FILE), "- [unclosed\n").unwrap();
        let broken = ProgressionProbes::from_content(content.path(), 1 << 20).unwrap_err();
        assert!(broken.contains(".progression-probes.yaml"), "{broken}");
    }

    use super::*;
    use serde_json::json;

    fn probes(parameters: Value) -> Result<ProgressionProbes, ParameterError> {
        ProgressionProbes::from_parameters(parameters.as_object())
    }

    fn deployment(ready: u32, labels: Value) -> (pakket_api::ObjectRef, Value) {
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": labels},
            "spec": {"replicas": 2},
            "status": {"readyReplicas": ready, "conditions": [{"type": "Available", "status": "True"}]},
        });
        (super::super::reference_of(&object), object)
    }

    fn every_replica() -> Value {
        json!({"progressionProbes": [{
            "selector": {"group": "apps", "kind": "Deployment", "labels": {"tier": "web"}},
            "assertions": [{"cel": "self.status.readyReplicas == self.spec.replicas", "message": "every replica ready"}],
        }]})
    }

    #[test]
    fn a_probe_holds_until_its_assertion_is_true_and_names_itself() {
        let probes = probes(every_replica()).unwrap();
        let (reference, one_ready) = deployment(1, json!({"tier": "web"}));
        let held = probes.holding(&reference, &one_ready).unwrap();
        assert!(
            held.contains("every replica ready")
                && held.contains("progressionProbes[0]")
                && held.contains("Deployment/shop/web"),
            "{held}"
        );
        let (reference, all_ready) = deployment(2, json!({"tier": "web"}));
        assert_eq!(probes.holding(&reference, &all_ready), None);
    }

    #[test]
    fn labels_select_and_other_objects_pass() {
        let probes = probes(every_replica()).unwrap();
        let (reference, other) = deployment(0, json!({"tier": "db"}));
        assert_eq!(probes.holding(&reference, &other), None);
        assert!(probes.may_select("apps", "Deployment"));
        assert!(!probes.may_select("", "ConfigMap"));
    }

    #[test]
    fn an_expression_that_cannot_be_evaluated_holds_and_says_why() {
        let probes = probes(json!({"progressionProbes": [{
            "selector": {"group": "apps", "kind": "Deployment"},
            "assertions": [{"cel": "self.status.missing == 1"}],
        }]}))
        .unwrap();
        let (reference, object) = deployment(2, json!({}));
        let held = probes.holding(&reference, &object).unwrap();
        assert!(held.contains("could not be evaluated"), "{held}");
    }

    #[test]
    fn an_expression_that_is_not_a_condition_holds_and_says_so_in_words() {
        let probes = probes(json!({"progressionProbes": [{
            "selector": {"group": "apps", "kind": "Deployment"},
            "assertions": [{"cel": "self.spec.replicas"}],
        }]}))
        .unwrap();
        let (reference, object) = deployment(2, json!({}));
        let held = probes.holding(&reference, &object).unwrap();
        assert!(held.contains("not true or false"), "{held}");
        assert!(!held.contains("Int("), "no Debug dump: {held}");
    }

    #[test]
    fn nested_macros_over_a_wide_object_are_past_the_cost_limit_and_not_run() {
        let probes = probes(json!({"progressionProbes": [{
            "selector": {"group": "", "kind": "ConfigMap"},
            "assertions": [{"cel": "self.data.all(a, self.data.all(b, self.data.all(c, a != b || b == c)))"}],
        }]}))
        .unwrap();
        let data: serde_json::Map<String, Value> =
            (0..200).map(|n| (format!("k{n}"), json!("v"))).collect();
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wide"}, "data": data});
        let reference = super::super::reference_of(&object);
        let held = probes.holding(&reference, &object).unwrap();
        assert!(held.contains("past the limit"), "{held}");
        // The same expression on a small object runs.
        let small = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "small"}, "data": {"a": "v"}});
        assert_eq!(probes.holding(&reference, &small), None);
    }

    #[test]
    fn bad_parameters_are_refused_naming_the_field() {
        let error = |parameters| probes(parameters).unwrap_err().to_string();
        assert!(
            error(json!({"progressionProbes": [{"selector": {"kind": "Deployment"}, "assertions": [{"cel": "self.status.ready =="}]}]}))
                .contains("progressionProbes[0].assertions[0].cel")
        );
        assert!(
            error(
                json!({"progressionProbes": [{"selector": {}, "assertions": [{"cel": "true"}]}]})
            )
            .contains("progressionProbes[0].selector.kind")
        );
        assert!(
            error(json!({"progressionProbes": [{"selector": {"kind": "Job"}}]}))
                .contains("progressionProbes[0].assertions")
        );
        assert!(error(json!({"progressionProbes": "all"})).contains("progressionProbes"));
    }

    #[test]
    fn a_content_probe_with_a_thousand_parentheses_is_refused_naming_its_file_without_crashing() {
        let content = tempfile::tempdir().unwrap();
        // 1,020 parentheses fit under the 2 KiB expression limit, and
        // overflowed the provisioner's stack before any approval.
        let deep = format!("{}true{}", "(".repeat(1_020), ")".repeat(1_020));
        std::fs::write(
            content.path().join(CONTENT_FILE),
            format!(
                "- selector: {{group: apps, kind: Deployment}}\n  assertions:\n  - cel: '{deep}'\n"
            ),
        )
        .unwrap();
        let root = content.path().to_owned();
        let refused = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || ProgressionProbes::from_content(&root, 1 << 20).unwrap_err())
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            refused,
            ".progression-probes.yaml[0].assertions[0].cel: nests brackets 1020 deep; at most 32 (the nesting limit): flatten it"
        );
        // The class's own probes are held to the same limits.
        let error = probes(json!({"progressionProbes": [{
            "selector": {"kind": "Deployment"},
            "assertions": [{"cel": format!("self{}", ".a".repeat(300))}],
        }]}))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("progressionProbes[0].assertions[0].cel")
                && error.contains("the operator limit"),
            "{error}"
        );
    }

    #[test]
    fn loops_over_list_literals_or_spelled_with_spaces_are_not_run_past_the_cost_limit() {
        // Four loops of 100 on an object with no wide list (which the old
        // bound, counting only the object, let run), and loops over 200
        // keys spelled `.all (` (which it did not count at all).
        let hundred = (0..100)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let data: serde_json::Map<String, Value> =
            (0..200).map(|n| (format!("k{n}"), json!("v"))).collect();
        let wide = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wide"}, "data": data});
        let small = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "small"}});
        for (hostile, object) in [
            (
                format!(
                    "[{hundred}].all(a, [{hundred}].all(b, [{hundred}].all(c, [{hundred}].all(d, a + b + c + d >= 0))))"
                ),
                small,
            ),
            (
                "self.data.all (a, self.data.all (b, self.data.all (c, size(a + b + c) > 0)))"
                    .to_owned(),
                wide,
            ),
        ] {
            let probes = probes(json!({"progressionProbes": [{
                "selector": {"group": "", "kind": "ConfigMap"},
                "assertions": [{"cel": hostile}],
            }]}))
            .unwrap();
            let reference = super::super::reference_of(&object);
            let started = std::time::Instant::now();
            let held = probes.holding(&reference, &object).unwrap();
            assert!(started.elapsed() < std::time::Duration::from_secs(1));
            assert!(held.contains("past the limit"), "{held}");
        }
    }
}
