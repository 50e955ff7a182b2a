//! `POST /v1/plan` and `kubectl instance plan`: what the Input controller
//! would do with a given set of Inputs. The caller sends the Inputs (as
//! the controller reads them: each one's constraints, its class's
//! constraints, whether the class only plans) and what the set holds now;
//! the server runs the Input controller's own pass
//! against the served catalogs and answers what each Input would get and
//! the set that would result. The caller compares that set with the one
//! installed: installs, upgrades and removals, with who asks for each.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::resolve::Selection;
use crate::input::{InputConstraint, ResolvedInstance};

/// The body of `POST /v1/plan`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRequest {
    /// Every Input to resolve together, as the cluster would have them.
    pub inputs: Vec<PlannedInput>,
    /// What the set holds now (so installed packages move along their
    /// update graph instead of jumping, as in the controller).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current: Vec<CurrentEntry>,
    /// The set's Instance (children are named `<set>-<package>`).
    pub set: String,
    /// The cluster's Kubernetes version (`1.35`), for `minKubeVersion`;
    /// without it, no bundle is left out for the version it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
}

/// One Input as the controller reads it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlannedInput {
    /// Its name.
    pub name: String,
    /// Its `spec.constraints`.
    #[schema(value_type = Vec<Object>)]
    #[serde(default)]
    pub constraints: Vec<InputConstraint>,
    /// Its InputClass's name.
    pub input_class: String,
    /// The class's `parameters.constraints`.
    #[schema(value_type = Vec<Object>)]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_constraints: Vec<InputConstraint>,
    /// Whether the class only plans (`dryRun`).
    #[serde(default)]
    pub dry_run: bool,
    /// Whether the class forces (`force`: the best match, no resolution).
    #[serde(default)]
    pub force: bool,
}

impl PlannedInput {
    /// `input` as the controller reads it under a class with `parameters`.
    pub fn of(
        input: &crate::input::Input,
        parameters: &crate::input::InputClassParameters,
    ) -> Self {
        Self {
            name: kube::ResourceExt::name_any(input),
            constraints: input.spec.constraints.clone(),
            input_class: input.spec.input_class.clone(),
            class_constraints: parameters.constraints.clone(),
            dry_run: parameters.dry_run,
            force: parameters.force,
        }
    }
}

/// A package the set holds now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CurrentEntry {
    /// The package.
    pub package: String,
    /// Its version.
    pub version: String,
}

/// What one Input would get.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum PlanAnswer {
    /// The bundles it would bring in.
    Resolved {
        /// Each bundle, what it satisfies and what it needs.
        #[schema(value_type = Vec<Object>)]
        instances: Vec<ResolvedInstance>,
    },
    /// Its constraints cannot be used: the field and why.
    Invalid {
        /// `field: problem`.
        message: String,
    },
    /// Nothing satisfies it with the others.
    Unsatisfiable {
        /// One line.
        summary: String,
        /// The engine's chain of requirements.
        explanation: String,
    },
}

/// The answer of `POST /v1/plan`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanResponse {
    /// By Input name.
    pub answers: BTreeMap<String, PlanAnswer>,
    /// The set that would be installed, by package.
    pub set: Vec<Selection>,
}

/// `1.35` (or `v1.35.4`, `1.35+`) as (1, 35).
pub fn major_minor(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}
