//! The webhook configurations the apiserver needs to call this server, built
//! in one place for `deploy/` (where a test keeps the YAML in step) and for
//! the integration tests (which point them at a server on loopback).
//!
//! Why they cannot deadlock the cluster:
//! - The Bundle and Instance webhooks (`failurePolicy: Fail`) match only
//!   Pakket's own cluster-scoped kinds, which nothing the webhook or the
//!   control plane needs to start. The one DELETE they intercept is of an
//!   Instance (refused while its APIs are in use): while the webhook is
//!   down no Instance is deleted, and nothing but Pakket waits on that
//!   (an admin who must can delete the configuration). The other DELETE
//!   rule, a ClusterPackage others depend on, is `failurePolicy: Ignore`.
//! - `matchConditions` (CEL, evaluated by the apiserver) skip the call when
//!   there is nothing to check: an UPDATE that leaves spec and both
//!   requester records alone (finalizers, labels, owner references from the
//!   garbage collector) and a status write that leaves what decides approval
//!   alone (`pakket_api::ApprovalState`: the runtime's progress reports). Those keep working even with the webhook
//!   down, and cost no round trip.
//! - The ConfigMap webhook is called only for Bundle content: its
//!   `objectSelector` is `core.pakket.dev/bundle-content: "true"`
//!   ([`pakket_api::BUNDLE_CONTENT_LABEL`]), so the cluster's other
//!   ConfigMaps (kube-controller-manager publishes `kube-root-ca.crt` into
//!   every new namespace) never wait on it. The apiserver matches an
//!   objectSelector against the old object as well as the new, so a write
//!   that removes the label and a delete of a labelled ConfigMap still
//!   come; a ConfigMap that never had the label is no Bundle's content (a
//!   Bundle may mount only a labelled one, and the provisioner refuses to
//!   unpack an unlabelled one). Its `matchConditions` skip writes that
//!   leave a ConfigMap immutable and labelled (nothing to check), never a
//!   write that takes the label away. It is `failurePolicy: Ignore` with a
//!   2 s timeout: down, it lets a delete of Bundle content through — the
//!   runtime keeps unpacked content by digest, so that costs at most a
//!   failed re-unpack. It skips `kube-system`, `kube-public` and
//!   `kube-node-lease`. It does cover the webhook's own namespace: with
//!   `Ignore` it cannot block its own start, and `pakket-system` holds
//!   Bundle content in the examples.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::ObjectMeta;
use pakket_api::{
    BUNDLE_CONTENT_LABEL, CREATED_BY_ANNOTATION, LAST_CHANGED_BY_ANNOTATION,
    PIVOT_IN_USE_ANNOTATION,
};

/// The namespace `deploy/` installs the webhook into.
pub const NAMESPACE: &str = "pakket-system";
/// The name of the Service, Deployment, ServiceAccount and configurations.
pub const NAME: &str = "pakket-webhooks";
/// Namespaces the ConfigMap webhook never looks at.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// Where the apiserver reaches the webhook.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// A Service in the cluster (port 443); the CA is injected by cert-manager.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// A URL such as `https://127.0.0.1:PORT` (tests), with the CA that
    /// signed the server's certificate.
    Url {
        /// Base URL, no trailing slash.
        base: String,
        /// PEM CA certificate.
        ca_pem: Vec<u8>,
    },
}

/// What varies between the deployed configurations and a test's.
#[derive(Clone, Debug)]
pub struct Options {
    /// Name of both configurations.
    pub name: String,
    /// Where the server is.
    pub endpoint: Endpoint,
    /// Only objects with these labels are sent (tests scope their objects).
    pub object_selector: Option<LabelSelector>,
    /// Annotations on both configurations (cert-manager's CA injection).
    pub annotations: BTreeMap<String, String>,
}

impl Options {
    /// The configurations `deploy/` installs.
    pub fn deployed() -> Self {
        Self {
            name: NAME.to_owned(),
            endpoint: Endpoint::Service {
                namespace: NAMESPACE.to_owned(),
                name: NAME.to_owned(),
            },
            object_selector: None,
            annotations: BTreeMap::from([(
                "cert-manager.io/inject-ca-from".to_owned(),
                format!("{NAMESPACE}/{NAME}"),
            )]),
        }
    }

    fn client_config(&self, path: &str) -> WebhookClientConfig {
        match &self.endpoint {
            Endpoint::Service { namespace, name } => WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_owned()),
                    port: Some(443),
                }),
                ..WebhookClientConfig::default()
            },
            Endpoint::Url { base, ca_pem } => WebhookClientConfig {
                url: Some(format!("{base}{path}")),
                ca_bundle: Some(ByteString(ca_pem.clone())),
                ..WebhookClientConfig::default()
            },
        }
    }

    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            annotations: (!self.annotations.is_empty()).then(|| self.annotations.clone()),
            ..ObjectMeta::default()
        }
    }
}

/// Annotation `annotation` of `object` (`''` when absent), as CEL.
fn annotation_of(object: &str, annotation: &str) -> String {
    format!(
        "(has({object}.metadata.annotations) && '{annotation}' in {object}.metadata.annotations \
         ? {object}.metadata.annotations['{annotation}'] : '')"
    )
}

/// Label `label` of `object` (`''` when absent), as CEL.
fn label_of(object: &str, label: &str) -> String {
    format!(
        "(has({object}.metadata.labels) && '{label}' in {object}.metadata.labels \
         ? {object}.metadata.labels['{label}'] : '')"
    )
}

/// What the ConfigMap webhook selects: Bundle content
/// ([`BUNDLE_CONTENT_LABEL`]), within what `scope` selects (a test's own
/// objects).
fn content_selector(scope: Option<&LabelSelector>) -> LabelSelector {
    let mut selector = scope.cloned().unwrap_or_default();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(BUNDLE_CONTENT_LABEL.to_owned(), "true".to_owned());
    selector
}

/// The requester records of `object` (`''` for each one absent), as CEL.
fn creator_of(object: &str) -> String {
    format!(
        "[{}, {}]",
        annotation_of(object, CREATED_BY_ANNOTATION),
        annotation_of(object, LAST_CHANGED_BY_ANNOTATION)
    )
}

/// What decides approval in `object` (`pakket_api::ApprovalState`), as CEL:
/// the Approved condition's `status/reason`, then `status.approval`'s
/// bundle, digest and approver (empty when absent).
fn approval_of(object: &str) -> String {
    format!(
        "(has({object}.status) && has({object}.status.conditions) \
         ? {object}.status.conditions.filter(c, c.type == 'Approved').map(c, c.status + '/' + c.reason) : []) + \
         (has({object}.status) && has({object}.status.approval) \
         ? [{object}.status.approval.bundle, {object}.status.approval.digest, \
            has({object}.status.approval.approvedBy) ? {object}.status.approval.approvedBy : ''] : [])"
    )
}

/// What an automatic rollback installs from in `object`
/// (`pakket_api::rollback_record`, the same list), as CEL.
fn rollback_record_of(object: &str) -> String {
    format!(
        "(has({object}.status) && has({object}.status.revisions) \
         ? {object}.status.revisions.map(r, string(r.number) + '/' + r.bundle + '/' + r.digest + '/' + \
            (has(r.rendered) ? r.rendered : '') + '/' + r.outcome + '/' + \
            (has(r.approvedBy) ? r.approvedBy : '')) : []) + \
         (has({object}.status) && has({object}.status.servingRevision) \
         ? ['serving/' + string({object}.status.servingRevision)] : []) + \
         (has({object}.status) && has({object}.status.automaticRollback) \
         ? ['rollback/' + string({object}.status.automaticRollback.from) + '/' + \
            string({object}.status.automaticRollback.to) + '/' + \
            string({object}.status.automaticRollback.generation) + '/' + \
            {object}.status.automaticRollback.state] : [])"
    )
}

/// An Input's `status.decision` (`[]` when absent), as CEL.
fn decision_of(object: &str) -> String {
    format!(
        "(has({object}.status) && has({object}.status.decision) ? [{object}.status.decision] : [])"
    )
}

fn condition(name: &str, expression: String) -> MatchCondition {
    MatchCondition {
        name: name.to_owned(),
        expression,
    }
}

fn spec_or_creator_changed() -> MatchCondition {
    condition(
        "create-or-spec-or-creator-changed",
        format!(
            "request.operation == 'CREATE' || object.spec != oldObject.spec || {} != {}",
            creator_of("object"),
            creator_of("oldObject")
        ),
    )
}

fn approval_or_creator_changed() -> MatchCondition {
    condition(
        "approved-or-creator-changed",
        format!(
            "{} != {} || {} != {} || {} != {}",
            approval_of("object"),
            approval_of("oldObject"),
            creator_of("object"),
            creator_of("oldObject"),
            rollback_record_of("object"),
            rollback_record_of("oldObject")
        ),
    )
}

fn rule(
    group: &str,
    version: &str,
    resource: &str,
    operations: &[&str],
    scope: &str,
) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![group.to_owned()]),
        api_versions: Some(vec![version.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        operations: Some(operations.iter().map(|op| (*op).to_owned()).collect()),
        scope: Some(scope.to_owned()),
    }
}

fn pakket_rule(resource: &str, operations: &[&str]) -> RuleWithOperations {
    rule(pakket_api::GROUP, "*", resource, operations, "Cluster")
}

/// The other kinds whose requester records the webhook keeps: Inputs and
/// Operators (`resource` is `""` for the main resource, or a subresource).
fn recorded_rules(subresource: &str, operations: &[&str]) -> Vec<RuleWithOperations> {
    let resource = |plural: &str| {
        if subresource.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}/{subresource}")
        }
    };
    vec![
        rule(
            crate::review::RESOLVE_GROUP,
            "*",
            &resource("inputs"),
            operations,
            "Cluster",
        ),
        rule(
            crate::review::OPERATORS_GROUP,
            "*",
            &resource("operators"),
            operations,
            "Cluster",
        ),
        rule(
            crate::review::OPERATORS_GROUP,
            "*",
            &resource("operatorrequests"),
            operations,
            "Namespaced",
        ),
        rule(
            crate::review::PACKAGES_GROUP,
            "*",
            &resource("clusterpackages"),
            operations,
            "Cluster",
        ),
        rule(
            crate::review::PACKAGES_GROUP,
            "*",
            &resource("packages"),
            operations,
            "Namespaced",
        ),
        rule(
            crate::review::HELM_GROUP,
            "*",
            &resource("helmcharts"),
            operations,
            "Namespaced",
        ),
    ]
}

fn creator_changed() -> MatchCondition {
    condition(
        "creator-changed",
        format!("{} != {}", creator_of("object"), creator_of("oldObject")),
    )
}

/// One validating webhook with the settings every one of ours shares.
fn validating_webhook(
    options: &Options,
    name: &str,
    rules: Vec<RuleWithOperations>,
    conditions: Vec<MatchCondition>,
) -> ValidatingWebhook {
    ValidatingWebhook {
        name: format!("{name}.{}", pakket_api::GROUP),
        admission_review_versions: vec!["v1".to_owned()],
        client_config: options.client_config("/validate"),
        failure_policy: Some("Fail".to_owned()),
        match_policy: Some("Equivalent".to_owned()),
        side_effects: "None".to_owned(),
        timeout_seconds: Some(5),
        rules: Some(rules),
        match_conditions: (!conditions.is_empty()).then_some(conditions),
        object_selector: options.object_selector.clone(),
        ..ValidatingWebhook::default()
    }
}

/// The ValidatingWebhookConfiguration: Bundles, Instances, Instance status,
/// the records of Inputs and Operators, ConfigMaps.
pub fn validating(options: &Options) -> ValidatingWebhookConfiguration {
    let bundles = validating_webhook(
        options,
        "bundles.validate",
        vec![pakket_rule("bundles", &["CREATE", "UPDATE"])],
        vec![condition(
            "create-or-spec-changed",
            "request.operation == 'CREATE' || object.spec != oldObject.spec".to_owned(),
        )],
    );
    let instances = validating_webhook(
        options,
        "instances.validate",
        vec![pakket_rule("instances", &["CREATE", "UPDATE"])],
        // Setting the pivot override needs a verb, so its changes are
        // checked too.
        vec![condition(
            "create-or-spec-or-creator-or-pivot-override-changed",
            format!(
                "request.operation == 'CREATE' || object.spec != oldObject.spec || {} != {} || {} != {}",
                creator_of("object"),
                creator_of("oldObject"),
                annotation_of("object", PIVOT_IN_USE_ANNOTATION),
                annotation_of("oldObject", PIVOT_IN_USE_ANNOTATION)
            ),
        )],
    );
    let approval = validating_webhook(
        options,
        "instance-approval.validate",
        vec![pakket_rule("instances/status", &["UPDATE"])],
        vec![approval_or_creator_changed()],
    );
    // Inputs and Operators: who asked for them decides whose rights the
    // Instances made for them are judged by.
    let records = validating_webhook(
        options,
        "records.validate",
        recorded_rules("", &["CREATE", "UPDATE"]),
        vec![spec_or_creator_changed()],
    );
    let records_status = validating_webhook(
        options,
        "records-status.validate",
        recorded_rules("status", &["UPDATE"]),
        vec![creator_changed()],
    );
    // A person's choice between conflicting Inputs: `approve` on the Input,
    // in her own name.
    let input_decisions = validating_webhook(
        options,
        "input-decisions.validate",
        vec![rule(
            crate::review::RESOLVE_GROUP,
            "*",
            "inputs/status",
            &["UPDATE"],
            "Cluster",
        )],
        vec![condition(
            "decision-changed",
            format!("{} != {}", decision_of("object"), decision_of("oldObject")),
        )],
    );
    let mut config_maps = validating_webhook(
        options,
        "configmaps.validate",
        vec![rule(
            "",
            "v1",
            "configmaps",
            &["CREATE", "UPDATE", "DELETE"],
            "Namespaced",
        )],
        vec![condition(
            "delete-or-mutable-or-unlabelled",
            format!(
                "request.operation == 'DELETE' || !has(object.immutable) || object.immutable != true \
                 || {} != 'true'",
                label_of("object", BUNDLE_CONTENT_LABEL)
            ),
        )],
    );
    config_maps.object_selector = Some(content_selector(options.object_selector.as_ref()));
    config_maps.failure_policy = Some("Ignore".to_owned());
    config_maps.timeout_seconds = Some(2);
    config_maps.namespace_selector = Some(LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "kubernetes.io/metadata.name".to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(
                SYSTEM_NAMESPACES
                    .iter()
                    .map(|ns| (*ns).to_owned())
                    .collect(),
            ),
        }]),
        ..LabelSelector::default()
    });
    // Deleting a ClusterPackage others depend on: refused, naming them.
    // `Ignore`: down, it never blocks cleanup (the package provisioner
    // keeps a needed package until its dependents are gone anyway).
    let mut package_deletion = validating_webhook(
        options,
        "package-deletion.validate",
        vec![rule(
            crate::review::PACKAGES_GROUP,
            "*",
            "clusterpackages",
            &["DELETE"],
            "Cluster",
        )],
        Vec::new(),
    );
    package_deletion.failure_policy = Some("Ignore".to_owned());
    // An admin's ApprovalPolicy: rules that do not compile are refused
    // when written (failing closed costs nothing: only admins write them,
    // and nothing else waits on one).
    let approval_policies = validating_webhook(
        options,
        "approvalpolicies.validate",
        vec![pakket_rule("approvalpolicies", &["CREATE", "UPDATE"])],
        vec![condition(
            "create-or-spec-changed",
            "request.operation == 'CREATE' || object.spec != oldObject.spec".to_owned(),
        )],
    );
    // Deleting an Instance whose APIs are in use: refused, naming the
    // users (`Fail`: nothing is deleted unchecked). An admin's override
    // is recorded in an Event, never on a dry run.
    let mut instance_deletion = validating_webhook(
        options,
        "instance-deletion.validate",
        vec![pakket_rule("instances", &["DELETE"])],
        Vec::new(),
    );
    instance_deletion.side_effects = "NoneOnDryRun".to_owned();
    ValidatingWebhookConfiguration {
        metadata: options.meta(),
        webhooks: Some(vec![
            bundles,
            instances,
            instance_deletion,
            approval,
            records,
            records_status,
            input_decisions,
            package_deletion,
            approval_policies,
            config_maps,
        ]),
    }
}

/// One mutating webhook with the settings every one of ours shares.
fn mutating_webhook(
    options: &Options,
    name: &str,
    rules: Vec<RuleWithOperations>,
    conditions: Vec<MatchCondition>,
) -> MutatingWebhook {
    MutatingWebhook {
        name: format!("{name}.{}", pakket_api::GROUP),
        admission_review_versions: vec!["v1".to_owned()],
        client_config: options.client_config("/mutate"),
        failure_policy: Some("Fail".to_owned()),
        match_policy: Some("Equivalent".to_owned()),
        side_effects: "None".to_owned(),
        timeout_seconds: Some(5),
        // Our patch seals the requester records for the spec as it stands:
        // if a later mutating webhook changes the spec, run again and seal
        // the final one (the validating check refuses a stale seal).
        reinvocation_policy: Some("IfNeeded".to_owned()),
        rules: Some(rules),
        match_conditions: Some(conditions),
        object_selector: options.object_selector.clone(),
        ..MutatingWebhook::default()
    }
}

/// The MutatingWebhookConfiguration: the requester records on Instances,
/// Inputs and Operators, and
/// the early, clearer refusal of a changed Bundle spec.
pub fn mutating(options: &Options) -> MutatingWebhookConfiguration {
    let instances = mutating_webhook(
        options,
        "instances.mutate",
        vec![pakket_rule("instances", &["CREATE", "UPDATE"])],
        vec![condition(
            "create-or-spec-or-records-changed",
            format!(
                "request.operation == 'CREATE' || object.spec != oldObject.spec || {} != {}",
                creator_of("oldObject"),
                creator_of("object")
            ),
        )],
    );
    let records = mutating_webhook(
        options,
        "records.mutate",
        recorded_rules("", &["CREATE", "UPDATE"]),
        vec![condition(
            "create-or-spec-or-records-changed",
            format!(
                "request.operation == 'CREATE' || object.spec != oldObject.spec || {} != {}",
                creator_of("oldObject"),
                creator_of("object")
            ),
        )],
    );
    let bundles = mutating_webhook(
        options,
        "bundles.mutate",
        vec![pakket_rule("bundles", &["UPDATE"])],
        vec![condition(
            "spec-changed",
            "object.spec != oldObject.spec".to_owned(),
        )],
    );
    MutatingWebhookConfiguration {
        metadata: options.meta(),
        webhooks: Some(vec![instances, records, bundles]),
    }
}

/// Both deployed configurations as one YAML stream, with a header saying
/// where it came from.
pub fn deployed_yaml() -> Result<String, serde_saphyr::ser::Error> {
    let options = Options::deployed();
    let validating = serde_saphyr::to_string(&typed(validating(&options)))?;
    let mutating = serde_saphyr::to_string(&typed(mutating(&options)))?;
    Ok(format!(
        "# Generated by `cargo run -p pakket-webhooks -- configurations` from webhooks/src/config.rs. Do not edit.\n\
         {validating}---\n{mutating}"
    ))
}

/// The object with its apiVersion and kind, as a manifest needs.
fn typed<K: k8s_openapi::Resource + serde::Serialize>(object: K) -> serde_json::Value {
    let mut value = serde_json::to_value(&object).expect("API objects serialize");
    value["apiVersion"] = K::API_VERSION.into();
    value["kind"] = K::KIND.into();
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_webhook_is_v1_side_effect_free_equivalent_and_bounded_in_time() {
        let options = Options::deployed();
        let validating = validating(&options).webhooks.unwrap();
        let mutating = mutating(&options).webhooks.unwrap();
        assert_eq!(validating.len(), 10);
        assert_eq!(mutating.len(), 3);
        for webhook in &validating {
            // The in-use override writes an Event, never on a dry run.
            let records = webhook.name.starts_with("instance-deletion.");
            assert_eq!(
                webhook.side_effects,
                if records { "NoneOnDryRun" } else { "None" }
            );
            assert_eq!(webhook.match_policy.as_deref(), Some("Equivalent"));
            assert!(webhook.timeout_seconds.unwrap() <= 5);
            let fail = webhook.failure_policy.as_deref() == Some("Fail");
            let open = webhook.name.starts_with("configmaps.")
                || webhook.name.starts_with("package-deletion.");
            // Only the webhooks on Pakket's own writes may fail closed.
            assert_eq!(fail, !open, "{}", webhook.name);
        }
        for webhook in &mutating {
            assert_eq!(webhook.failure_policy.as_deref(), Some("Fail"));
            assert_eq!(webhook.reinvocation_policy.as_deref(), Some("IfNeeded"));
        }
    }

    #[test]
    fn fail_closed_webhooks_match_only_pakket_and_no_delete_but_an_instances() {
        let options = Options::deployed();
        let rules = validating(&options)
            .webhooks
            .unwrap()
            .into_iter()
            .filter(|webhook| webhook.failure_policy.as_deref() == Some("Fail"))
            .flat_map(|webhook| webhook.rules.unwrap())
            .chain(
                mutating(&options)
                    .webhooks
                    .unwrap()
                    .into_iter()
                    .flat_map(|w| w.rules.unwrap()),
            );
        // Pakket's kinds: core.pakket.dev, and the Inputs and Operators
        // whose requester records the webhook keeps.
        let pakket_groups = [
            pakket_api::GROUP,
            crate::review::RESOLVE_GROUP,
            crate::review::OPERATORS_GROUP,
            crate::review::PACKAGES_GROUP,
            crate::review::HELM_GROUP,
        ];
        for rule in rules {
            let groups = rule.api_groups.unwrap();
            assert!(
                groups
                    .iter()
                    .all(|group| pakket_groups.contains(&group.as_str())),
                "{groups:?}"
            );
            let operations = rule.operations.unwrap();
            assert!(!operations.iter().any(|op| op == "*"));
            if operations.iter().any(|op| op == "DELETE") {
                assert_eq!(operations, ["DELETE"]);
                assert_eq!(rule.resources.unwrap(), ["instances"]);
                assert_eq!(groups, [pakket_api::GROUP]);
            }
        }
    }

    fn config_maps(options: &Options) -> ValidatingWebhook {
        validating(options)
            .webhooks
            .unwrap()
            .into_iter()
            .find(|webhook| webhook.name.starts_with("configmaps."))
            .unwrap()
    }

    #[test]
    fn the_config_map_webhook_skips_system_namespaces() {
        let config_maps = config_maps(&Options::deployed());
        let selector = serde_json::to_string(&config_maps.namespace_selector).unwrap();
        for namespace in SYSTEM_NAMESPACES {
            assert!(selector.contains(namespace), "{selector}");
        }
        assert_eq!(config_maps.failure_policy.as_deref(), Some("Ignore"));
    }

    #[test]
    fn the_config_map_webhook_selects_only_bundle_content_within_the_scope() {
        let content = BTreeMap::from([(BUNDLE_CONTENT_LABEL.to_owned(), "true".to_owned())]);
        let deployed = config_maps(&Options::deployed()).object_selector.unwrap();
        assert_eq!(deployed.match_labels, Some(content.clone()));
        assert_eq!(deployed.match_expressions, None);
        // A test's scope is kept, and the content label added to it.
        let scope = BTreeMap::from([("test.pakket.dev/scope".to_owned(), "t1".to_owned())]);
        let scoped = Options {
            object_selector: Some(LabelSelector {
                match_labels: Some(scope.clone()),
                ..LabelSelector::default()
            }),
            ..Options::deployed()
        };
        let mut both = scope.clone();
        both.extend(content);
        assert_eq!(
            config_maps(&scoped).object_selector.unwrap().match_labels,
            Some(both)
        );
        // The other webhooks select only the scope.
        let bundles = &validating(&scoped).webhooks.unwrap()[0];
        assert_eq!(
            bundles.object_selector.as_ref().unwrap().match_labels,
            Some(scope)
        );
    }

    #[test]
    fn the_config_map_webhook_lets_only_writes_that_keep_content_frozen_and_labelled_skip_it() {
        let expression = &config_maps(&Options::deployed()).match_conditions.unwrap()[0].expression;
        // CEL is evaluated by the apiserver (webhooks/tests check that it
        // compiles and acts); here: each way out of the skip is there.
        for part in [
            "request.operation == 'DELETE'",
            "!has(object.immutable) || object.immutable != true",
            "'core.pakket.dev/bundle-content' in object.metadata.labels ? object.metadata.labels['core.pakket.dev/bundle-content'] : '') != 'true'",
        ] {
            assert!(
                expression.contains(part),
                "{part} missing from {expression}"
            );
        }
    }

    #[test]
    fn a_url_endpoint_carries_its_ca_and_path() {
        let options = Options {
            name: "t".into(),
            endpoint: Endpoint::Url {
                base: "https://127.0.0.1:1234".into(),
                ca_pem: b"pem".to_vec(),
            },
            object_selector: None,
            annotations: BTreeMap::new(),
        };
        let webhook = &mutating(&options).webhooks.unwrap()[0];
        assert_eq!(
            webhook.client_config.url.as_deref(),
            Some("https://127.0.0.1:1234/mutate")
        );
        assert_eq!(webhook.client_config.ca_bundle.as_ref().unwrap().0, b"pem");
    }
}
