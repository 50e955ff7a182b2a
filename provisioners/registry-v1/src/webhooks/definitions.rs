//! Reading and checking a CSV's `spec.webhookdefinitions`: what OLM
//! refuses is refused here, each problem naming its CSV field. Making
//! objects of them is the parent module's work.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value, json};

use super::Webhooks;
use crate::bundle::Bundle;

/// The port a webhook is served on when its definition names none.
const DEFAULT_PORT: i64 = 443;

/// API groups no admission webhook may intercept: all of them, OLM's (v0
/// and v1) and Pakket's own, so a broken webhook cannot stop anyone from
/// removing it.
const FORBIDDEN_GROUPS: [&str; 4] = [
    "*",
    "operators.coreos.com",
    "olm.operatorframework.io",
    "core.pakket.dev",
];

/// The kind of a webhook definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `ValidatingAdmissionWebhook`.
    Validating,
    /// `MutatingAdmissionWebhook`.
    Mutating,
    /// `ConversionWebhook`.
    Conversion,
}

/// One `spec.webhookdefinitions[]` entry, checked.
#[derive(Clone, Debug)]
pub struct Definition {
    /// Its index, for messages.
    pub index: usize,
    /// Its kind.
    pub kind: Kind,
    /// `generateName` without a trailing `-`: the configuration's and the
    /// webhook's name.
    pub name: String,
    /// The Deployment serving it.
    pub deployment: String,
    /// The Service port (`containerPort`, default 443).
    pub port: i64,
    /// The pod port (`targetPort`, a number or a name; default `port`).
    pub target_port: Value,
    pub(super) raw: Raw,
}

/// The entry as written; every field optional so that each missing one is
/// reported by name rather than as a parse error.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Raw {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) generate_name: Option<String>,
    pub(super) deployment_name: Option<String>,
    pub(super) container_port: Option<i64>,
    pub(super) target_port: Option<Value>,
    pub(super) webhook_path: Option<String>,
    pub(super) admission_review_versions: Option<Vec<String>>,
    pub(super) side_effects: Option<Value>,
    pub(super) failure_policy: Option<Value>,
    pub(super) rules: Option<Vec<Value>>,
    pub(super) object_selector: Option<Value>,
    pub(super) match_policy: Option<Value>,
    pub(super) timeout_seconds: Option<Value>,
    pub(super) reinvocation_policy: Option<Value>,
    #[serde(rename = "conversionCRDs")]
    pub(super) conversion_crds: Option<Vec<String>>,
}

impl Webhooks {
    /// The definitions of `bundle`'s CSV that are valid, and a problem for
    /// each that is not (naming the field).
    pub fn read(bundle: &Bundle) -> (Self, Vec<String>) {
        let csv = &bundle.csv;
        let prefix = format!("ClusterServiceVersion {}", csv.metadata.name);
        let deployments: Vec<&str> = csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .map(|deployment| deployment.name.as_str())
            .collect();
        let mut problems = Vec::new();
        let mut definitions = Vec::new();
        for (index, entry) in csv.spec.webhookdefinitions.iter().enumerate() {
            let field = format!("{prefix}: spec.webhookdefinitions[{index}]");
            match definition(index, entry, &deployments) {
                Ok(definition) => definitions.push(definition),
                Err(found) => problems.extend(
                    found
                        .into_iter()
                        .map(|problem| format!("{field}.{problem}")),
                ),
            }
        }
        let mut seen = BTreeSet::new();
        for definition in &definitions {
            if !seen.insert((definition.kind, definition.name.clone())) {
                problems.push(format!(
                    "{prefix}: spec.webhookdefinitions[{}].generateName {:?} is used by another webhook of the same type; give each its own name",
                    definition.index, definition.name
                ));
            }
        }
        problems.extend(
            conversion_problems(bundle, &definitions)
                .into_iter()
                .map(|problem| format!("{prefix}: {problem}")),
        );
        (Self { definitions }, problems)
    }
}

/// Checks one entry; the problems are field paths below the entry.
fn definition(
    index: usize,
    entry: &Value,
    deployments: &[&str],
) -> Result<Definition, Vec<String>> {
    let raw: Raw = serde_json::from_value(entry.clone())
        .map_err(|error| vec![format!("{error}; fix the field it names")])?;
    let mut problems = Vec::new();
    let kind = match raw.kind.as_deref() {
        Some("ValidatingAdmissionWebhook") => Some(Kind::Validating),
        Some("MutatingAdmissionWebhook") => Some(Kind::Mutating),
        Some("ConversionWebhook") => Some(Kind::Conversion),
        other => {
            let found =
                other.map_or_else(|| "is missing".to_owned(), |kind| format!("is {kind:?}"));
            problems.push(format!(
                "type {found}; write ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook"
            ));
            None
        }
    };
    let name = raw
        .generate_name
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('-')
        .to_owned();
    if name.is_empty() {
        problems
            .push("generateName is missing; name the webhook, e.g. vmyresource.example.com".into());
    } else if !is_dns_subdomain(&name) {
        problems.push(format!(
            "generateName {name:?} is not a valid object name (lowercase letters, digits, '-' and '.')"
        ));
    }
    let deployment = raw.deployment_name.clone().unwrap_or_default();
    if deployment.is_empty() {
        problems.push(format!(
            "deploymentName is missing; name the Deployment that serves the webhook ({})",
            deployments.join(", ")
        ));
    } else if !deployments.contains(&deployment.as_str()) {
        problems.push(format!(
            "deploymentName {deployment:?} is not among spec.install.spec.deployments ({}); name one of them",
            deployments.join(", ")
        ));
    }
    let port = raw.container_port.unwrap_or(DEFAULT_PORT);
    if !(1..=65535).contains(&port) {
        problems.push(format!("containerPort {port} is not a port (1 to 65535)"));
    }
    let target_port = raw.target_port.clone().unwrap_or_else(|| json!(port));
    let target_ok = match &target_port {
        Value::Number(number) => number.as_i64().is_some_and(|n| (1..=65535).contains(&n)),
        Value::String(name) => !name.is_empty(),
        _ => false,
    };
    if !target_ok {
        problems.push(format!(
            "targetPort {target_port} is neither a port number nor a port name"
        ));
    }
    if matches!(kind, Some(Kind::Validating | Kind::Mutating)) {
        if raw.side_effects.is_none() {
            problems.push(
                "sideEffects is missing; admission webhooks declare None or NoneOnDryRun".into(),
            );
        }
        for (rule_index, rule) in raw.rules.iter().flatten().enumerate() {
            problems
                .extend(rule_problem(rule).map(|problem| format!("rules[{rule_index}].{problem}")));
        }
    }
    if raw
        .admission_review_versions
        .as_ref()
        .is_none_or(Vec::is_empty)
    {
        problems.push("admissionReviewVersions is missing; write [v1]".into());
    }
    if kind == Some(Kind::Conversion) && raw.conversion_crds.as_ref().is_none_or(Vec::is_empty) {
        problems.push("conversionCRDs is empty; name the CRDs this webhook converts".into());
    }
    match kind {
        Some(kind) if problems.is_empty() => Ok(Definition {
            index,
            kind,
            name,
            deployment,
            port,
            target_port,
            raw,
        }),
        _ => Err(problems),
    }
}

/// Why an admission rule is refused, if it is (OLM's list plus Pakket's
/// group).
fn rule_problem(rule: &Value) -> Option<String> {
    let strings = |field: &str| -> Vec<&str> {
        rule.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    let groups = strings("apiGroups");
    if let Some(group) = groups.iter().find(|group| FORBIDDEN_GROUPS.contains(group)) {
        return Some(format!(
            "apiGroups includes {group:?}; admission webhooks may not intercept every group, OLM's or Pakket's (a broken webhook could not be removed)"
        ));
    }
    if groups.contains(&"admissionregistration.k8s.io") {
        let forbidden = [
            "*",
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ];
        if let Some(resource) = strings("resources").iter().find(|resource| {
            let resource = resource.to_ascii_lowercase();
            forbidden.iter().any(|forbidden| {
                resource == *forbidden || resource == forbidden.trim_end_matches('s')
            })
        }) {
            return Some(format!(
                "resources includes {resource:?} of admissionregistration.k8s.io; admission webhooks may not intercept webhook configurations"
            ));
        }
    }
    None
}

/// Conversion webhooks: only for operators that support AllNamespaces
/// alone, each naming CRDs of the bundle that no other one names and that
/// do not preserve unknown fields.
fn conversion_problems(bundle: &Bundle, definitions: &[Definition]) -> Vec<String> {
    let conversions: Vec<&Definition> = definitions
        .iter()
        .filter(|definition| definition.kind == Kind::Conversion)
        .collect();
    let mut problems = Vec::new();
    if conversions.is_empty() {
        return problems;
    }
    let modes = bundle.csv.spec.supported_modes();
    if modes != ["AllNamespaces"] {
        for definition in &conversions {
            problems.push(format!(
                "spec.webhookdefinitions[{}] is a ConversionWebhook, and the operator supports install modes {}; conversion webhooks need an operator that supports AllNamespaces only (a CRD converts for every namespace)",
                definition.index,
                modes.join(", ")
            ));
        }
    }
    let crds: BTreeMap<&str, &Value> = bundle
        .manifests
        .iter()
        .filter(|object| {
            object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        })
        .filter_map(|crd| Some((crd.pointer("/metadata/name")?.as_str()?, crd)))
        .collect();
    let mut claimed: BTreeMap<&str, usize> = BTreeMap::new();
    for definition in &conversions {
        for (crd_index, name) in definition.raw.conversion_crds.iter().flatten().enumerate() {
            let field = format!(
                "spec.webhookdefinitions[{}].conversionCRDs[{crd_index}]",
                definition.index
            );
            match crds.get(name.as_str()) {
                None => problems.push(format!(
                    "{field} names {name}, which is not a CRD of this bundle; name one of {}",
                    crds.keys().copied().collect::<Vec<_>>().join(", ")
                )),
                Some(crd) if crd.pointer("/spec/preserveUnknownFields") == Some(&json!(true)) => {
                    problems.push(format!(
                        "{field} names {name}, whose spec.preserveUnknownFields is true; the apiserver calls conversion webhooks only when it is false"
                    ));
                }
                Some(_) => {}
            }
            if let Some(other) = claimed.insert(name.as_str(), definition.index)
                && other != definition.index
            {
                problems.push(format!(
                    "{field} names {name}, which spec.webhookdefinitions[{other}] converts already; a CRD has one conversion webhook"
                ));
            }
        }
    }
    problems
}

/// An RFC 1123 subdomain, as most object names are.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_over_every_group_or_webhook_configurations_are_refused() {
        assert!(rule_problem(&json!({ "apiGroups": ["*"] })).is_some());
        assert!(rule_problem(&json!({ "apiGroups": ["core.pakket.dev"] })).is_some());
        assert!(
            rule_problem(&json!({
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["ValidatingWebhookConfigurations"],
            }))
            .is_some()
        );
        assert!(rule_problem(&json!({ "apiGroups": ["apps"], "resources": ["*"] })).is_none());
    }
}
