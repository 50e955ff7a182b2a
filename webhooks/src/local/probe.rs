//! How [`super::LocalWebhooks`] knows the apiserver calls its server (and,
//! on the way out, that it no longer does): server-side dry-run creates of
//! two objects the configurations select, counted by the server's own
//! metrics.
//!
//! - an Instance with a forged creator record: the mutating configuration's
//!   Instance webhook refuses it, so the mutating call is seen;
//! - a Bundle with an image ref that does not parse: no mutating webhook
//!   covers a Bundle CREATE, and the validating configuration's Bundle
//!   webhook refuses it, so the validating call is seen.
//!
//! Both are refused by pure checks (no SubjectAccessReview, no lookup) and
//! are dry runs, so nothing is stored. A call is "seen" when the server's
//! answered-reviews counter for that webhook and resource moved while the
//! dry run was in flight: the server counts before it answers, so once the
//! apiserver returns, the count is there. Counting our own server's answers,
//! rather than reading the refusal's text, tells ours apart from any other
//! Pakket webhook that happens to match the same objects.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use pakket_api::{Bundle, Instance};
use serde_json::json;

use crate::metrics::Metrics;

/// An image ref the Bundle rules refuse (uppercase repository).
const UNPARSABLE_REF: &str = "docker://quay.io/Probe/Uppercase:v1";

/// The two dry runs, ready to send.
pub(super) struct Probe {
    instances: Api<Instance>,
    bundles: Api<Bundle>,
    instance: Instance,
    bundle: Bundle,
}

/// What one round of the probe saw.
#[derive(Debug)]
pub(super) struct Round {
    /// The server answered the mutating (Instance) call.
    pub mutating: bool,
    /// The server answered the validating (Bundle) call.
    pub validating: bool,
    /// What the apiserver said to both dry runs, for error messages.
    pub answers: String,
}

/// The apiserver does not know Pakket's kinds.
#[derive(Debug)]
pub(super) struct CrdsMissing(pub kube::Error);

impl Probe {
    /// Probe objects named `<name>-probe`, labelled to match `selector`.
    pub fn new(client: &Client, name: &str, selector: Option<&LabelSelector>) -> Self {
        let meta = ObjectMeta {
            name: Some(format!("{name}-probe")),
            labels: Some(labels_selected_by(selector)),
            ..ObjectMeta::default()
        };
        let mut instance: Instance = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {},
            "spec": {"class": format!("{name}-probe"), "bundle": {"name": format!("{name}-probe")}},
        }))
        .expect("a well-formed Instance");
        instance.metadata = meta.clone();
        instance.metadata.annotations = Some(BTreeMap::from([(
            pakket_api::CREATED_BY_ANNOTATION.to_owned(),
            json!({"username": format!("{name}-probe")}).to_string(),
        )]));
        let mut bundle: Bundle = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Bundle",
            "metadata": {},
            "spec": {"class": format!("{name}-probe"), "refs": [UNPARSABLE_REF]},
        }))
        .expect("a well-formed Bundle");
        bundle.metadata = meta;
        Self {
            instances: Api::all(client.clone()),
            bundles: Api::all(client.clone()),
            instance,
            bundle,
        }
    }

    /// Sends both dry runs and reports which reached the server whose
    /// counters are `metrics`.
    pub async fn round(&self, metrics: &Metrics) -> Result<Round, CrdsMissing> {
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let before = metrics.answered("mutate", "instances");
        let instance = self.instances.create(&dry_run, &self.instance).await;
        let mutating = metrics.answered("mutate", "instances") > before;
        let before = metrics.answered("validate", "bundles");
        let bundle = self.bundles.create(&dry_run, &self.bundle).await;
        let validating = metrics.answered("validate", "bundles") > before;
        Ok(Round {
            mutating,
            validating,
            answers: format!(
                "Instance dry run: {}; Bundle dry run: {}",
                answer(instance)?,
                answer(bundle)?
            ),
        })
    }
}

/// The apiserver's answer in words; a 404 means the CRDs are not installed.
fn answer<T>(result: kube::Result<T>) -> Result<String, CrdsMissing> {
    match result {
        Ok(_) => Ok("accepted".to_owned()),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Err(CrdsMissing(kube::Error::Api(status)))
        }
        Err(error) => Ok(error.to_string()),
    }
}

/// Labels that `selector` selects: every `matchLabels` pair, the first
/// value of each `In`, some value for each `Exists`; `NotIn` and
/// `DoesNotExist` hold for a label that is absent.
pub(super) fn labels_selected_by(selector: Option<&LabelSelector>) -> BTreeMap<String, String> {
    let Some(selector) = selector else {
        return BTreeMap::new();
    };
    let mut labels = selector.match_labels.clone().unwrap_or_default();
    for requirement in selector.match_expressions.iter().flatten() {
        let value = match requirement.operator.as_str() {
            "In" => requirement
                .values
                .as_ref()
                .and_then(|values| values.first().cloned()),
            "Exists" => Some("probe".to_owned()),
            _ => None,
        };
        if let Some(value) = value {
            labels.entry(requirement.key.clone()).or_insert(value);
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    #[test]
    fn the_probe_labels_satisfy_every_kind_of_requirement() {
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([("scope".to_owned(), "t-1".to_owned())])),
            match_expressions: Some(vec![
                requirement("tier", "In", &["web", "db"]),
                requirement("team", "Exists", &[]),
                requirement("stage", "NotIn", &["prod"]),
                requirement("legacy", "DoesNotExist", &[]),
            ]),
        };
        let labels = labels_selected_by(Some(&selector));
        assert_eq!(
            labels,
            BTreeMap::from([
                ("scope".to_owned(), "t-1".to_owned()),
                ("team".to_owned(), "probe".to_owned()),
                ("tier".to_owned(), "web".to_owned()),
            ])
        );
        assert!(labels_selected_by(None).is_empty());
    }

    #[test]
    fn the_probe_objects_are_refused_by_pure_rules() {
        let probe_ref = crate::rules::bundle::spec_problems(
            &serde_json::from_value(json!({"class": "c", "refs": [UNPARSABLE_REF]})).unwrap(),
            "spec",
        );
        assert_eq!(probe_ref.len(), 1, "{probe_ref:?}");
    }
}
