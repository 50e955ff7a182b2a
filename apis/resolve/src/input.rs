//! `Input` and `InputClass` (group `resolve.pakket.dev`, cluster-scoped):
//! what the cluster asks the resolver for, and how.
//!
//! An Input is one installable, as constraints a bundle must meet
//! (`olm.catalog`, `olm.packageVersion`, `olm.name`, `olm.gvk`,
//! `olm.label`, `cel`). Its InputClass says what to do with the answer:
//! install it (`subscription`), plan only (`dryRun`), pick every match
//! without resolving dependencies (`force`), and which constraints every
//! Input of the class gets (`minKubeVersion`). The Input controller
//! resolves every Input together, with what is installed, and reports per
//! Input what was chosen, what it needs and why.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one Input asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "resolve.pakket.dev",
    version = "v1alpha1",
    kind = "Input",
    plural = "inputs",
    category = "pakket",
    status = "InputStatus",
    printcolumn = r#"{"name":"Class","type":"string","jsonPath":".spec.inputClass"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Resolved","type":"string","jsonPath":".status.conditions[?(@.type==\"ResolutionFailed\")].reason"}"#,
    printcolumn = r#"{"name":"Bundles","type":"string","jsonPath":".status.instances[*].bundle","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InputSpec {
    /// The InputClass that says what to do with the answer (`subscription`,
    /// `dry-run`, …).
    #[schemars(length(min = 1, max = 253))]
    pub input_class: String,
    /// What a chosen bundle must meet, all of them (one subject, as
    /// `olm.catalog`, `olm.packageVersion` (narrowing it), `olm.name`,
    /// `olm.gvk` or `olm.label`, and any number of `cel` filters).
    #[schemars(length(min = 1, max = 32))]
    pub constraints: Vec<InputConstraint>,
    /// The `spec.config` of the Instance that installs the package this
    /// Input asks for (not of its dependencies), as that Instance's
    /// provisioner reads it: registry-v1 takes `installNamespace`,
    /// `watchNamespaces` and `deploymentConfig`. Needs no catalog: it
    /// applies while the catalog is away too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pakket_api::schema::free_form_object")]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// One constraint: `{type, value}`, the value's shape set by the type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.type in ['olm.catalog', 'olm.packageVersion', 'olm.name', 'olm.gvk', 'olm.label', 'cel', 'minKubeVersion']",
    "message": "type must be one of olm.catalog, olm.packageVersion, olm.name, olm.gvk, olm.label, cel, minKubeVersion",
}]))]
pub struct InputConstraint {
    /// `olm.catalog`, `olm.packageVersion`, `olm.name`, `olm.gvk`,
    /// `olm.label`, `cel` (or, in an InputClass, `minKubeVersion`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `olm.catalog`: `{name, package, channel?}`; `olm.packageVersion`:
    /// `{package, version}` (a version or a range); `olm.name`: a bundle
    /// name; `olm.gvk`: `{group, version, kind}`; `olm.label`: a label;
    /// `cel`: an expression over the bundle's `properties`;
    /// `minKubeVersion`: a range the cluster's version must meet.
    #[schemars(schema_with = "pakket_api::schema::free_form_value")]
    pub value: serde_json::Value,
}

/// What the resolver chose for an Input, and why.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputStatus {
    /// `ResolutionFailed` (False once resolved) and `DependenciesMissing`.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The bundles this Input brings in: the one it asks for and what that
    /// one needs, each with what it meets. For a dry run, what would be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<ResolvedInstance>,
    /// Whether `instances` is a plan only (the class is a dry run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The generation the status answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Why it waits though it resolves alone: other Inputs it conflicts
    /// with. Written by the Input controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<InputConflict>,
    /// A person's choice of this Input over others it conflicts with
    /// (`kubectl instance decide input/NAME`). Only a user with `approve`
    /// on the Input may write it, in her own name; the controller never
    /// does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ConflictDecision>,
}

/// Other Inputs an Input conflicts with, and where it stands.
///
/// They are named by UID, not by name, namespace or requester: who else
/// asked is shown by `kubectl instance why input/NAME` only as far as its
/// reader may read those Inputs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputConflict {
    /// `Installed` (it conflicts with what installed Inputs asked for,
    /// which keeps running), `Waiting` (with other new Inputs: all of them
    /// wait for a person to choose) or `NotChosen` (a person chose another).
    #[schemars(length(max = 32))]
    pub standing: String,
    /// The UIDs of the Inputs it conflicts with (empty: what is installed
    /// as a whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub with: Vec<String>,
}

/// A person's choice between conflicting Inputs, on the Input chosen.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConflictDecision {
    /// Who chose: the user the apiserver authenticated for the write (the
    /// webhooks refuse any other name).
    #[schemars(length(min = 1, max = 512))]
    pub chosen_by: String,
    /// The Input's generation chosen: a spec changed since is a new
    /// request, not covered.
    pub generation: i64,
    /// The UIDs of the Inputs it was chosen over: the decision covers
    /// exactly these.
    #[schemars(length(min = 1, max = 64))]
    pub over: Vec<String>,
}

impl ConflictDecision {
    /// The Inputs (UIDs) `input` was chosen over, if its decision covers
    /// its current generation.
    pub fn covering(input: &Input) -> Vec<String> {
        Self::current(input)
            .map(|decision| decision.over.clone())
            .unwrap_or_default()
    }

    /// `input`'s decision, if it covers its current generation.
    pub fn current(input: &Input) -> Option<&Self> {
        input
            .status
            .as_ref()
            .and_then(|status| status.decision.as_ref())
            .filter(|decision| Some(decision.generation) == input.metadata.generation)
    }
}

/// One chosen bundle, as the Instance that installs it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedInstance {
    /// The Instance that installs it (one per package).
    pub name: String,
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The bundle.
    pub bundle: String,
    /// The catalog it comes from.
    pub catalog: String,
    /// The channel it was chosen through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Why it is deprecated, if it is (chosen only when nothing else fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
    /// What this bundle is in the set for: the Input's own request, or the
    /// Instances that need it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub satisfies: Vec<Relation>,
    /// The Instances this bundle needs, and what each meets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Relation>,
}

/// Another object and the constraints the relation meets.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Relation {
    /// `Input` or `Instance`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The constraints met, as written (`olm.package etcd >=0.9.0`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub meets: Vec<String>,
}

/// How the Inputs of a class are resolved and applied.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "resolve.pakket.dev",
    version = "v1alpha1",
    kind = "InputClass",
    plural = "inputclasses",
    category = "pakket",
    printcolumn = r#"{"name":"DryRun","type":"boolean","jsonPath":".spec.parameters.dryRun"}"#,
    printcolumn = r#"{"name":"Force","type":"boolean","jsonPath":".spec.parameters.force"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InputClassSpec {
    /// What the class does.
    #[serde(default)]
    pub parameters: InputClassParameters,
}

/// The seed's InputClass parameters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputClassParameters {
    /// Install every bundle that matches, without resolving dependencies.
    #[serde(default)]
    pub force: bool,
    /// Keep the dependencies this Input brings in up to date on their own
    /// (as if each had an Input); otherwise they move only when a
    /// dependent needs a newer one.
    #[serde(default)]
    pub generate_inputs_for_dependencies: bool,
    /// Resolve and report the plan in the Input's status; install nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Keep the resolution's reasons for every bundle in the status.
    #[serde(default)]
    pub trace: bool,
    /// Constraints every Input of the class gets (`minKubeVersion`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<InputConstraint>,
}

impl Input {
    /// The condition of type `kind`, if the status has it.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        let status = self.status.as_ref();
        crate::condition::find(status.map(|s| s.conditions.as_slice()), kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_covers_only_the_generation_it_names() {
        let mut input: Input = serde_json::from_value(serde_json::json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": {"name": "b", "generation": 2},
            "spec": {"inputClass": "subscription", "constraints": []},
            "status": {"decision": {"chosenBy": "carol", "generation": 2, "over": ["uid-a"]}},
        }))
        .unwrap();
        assert_eq!(ConflictDecision::covering(&input), ["uid-a"]);
        // The spec changed since: a new request, not covered.
        input.metadata.generation = Some(3);
        assert!(ConflictDecision::covering(&input).is_empty());
        input.status = None;
        assert!(ConflictDecision::covering(&input).is_empty());
    }
}
