//! The grants among effects: RBAC per subject, admission (webhooks,
//! admission policies and their bindings), CRDs and their conversion,
//! APIServices, typed from [`crate::rights`]' comparison (which decides
//! what is new by meaning) and from the objects.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Workload, group_of, namespaces};
use crate::apply::reference_of;
use crate::rbac::Access;
use crate::rights::Right;

/// The ClusterRoles every cluster has (Kubernetes' user-facing roles and
/// its `system:` ones): a binding to one hands out what the cluster
/// defines, whatever the content says.
const BUILT_IN_ROLES: [&str; 4] = ["cluster-admin", "admin", "edit", "view"];

/// Effects by kind (what `effects.all` and `effects.new` hold).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Grants {
    /// Namespaces objects are written into.
    pub namespaces: Vec<String>,
    /// RBAC, per subject.
    pub rbac: Vec<RbacEffect>,
    /// Workloads, with the identity and host access they run with.
    pub workloads: Vec<Workload>,
    /// Admission webhooks, admission policies and their bindings.
    pub admission: Vec<AdmissionEffect>,
    /// CRDs, and their conversion webhooks.
    pub crds: Vec<CrdEffect>,
    /// APIServices.
    pub api_services: Vec<ApiServiceEffect>,
    /// The `scope`s among `rbac` (`Cluster`, `Namespace`), each once: a
    /// rule asks `'Cluster' in effects.new.rbacScopes` without iterating.
    pub rbac_scopes: Vec<String>,
    /// The `type`s among `rbac` (`Binding`, `Held`, `Rule`,
    /// `Aggregation`), each once.
    pub rbac_types: Vec<String>,
    /// Whether any workload has host access.
    pub host_access: bool,
    /// The ServiceAccounts workloads run as, `namespace/name`, each once.
    pub service_accounts: Vec<String>,
}

/// One RBAC grant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RbacEffect {
    /// `Held` (a subject gets a rule through a role the content defines,
    /// or, for `ClusterRoleHolders`, through aggregation), `Binding` (a
    /// subject bound to a role the content does not define), `Rule` (a
    /// rule of a role the content defines, whoever holds it) or
    /// `Aggregation` (a ClusterRole that aggregates others' rules).
    #[serde(rename = "type")]
    pub type_: String,
    /// The subject's kind (`ServiceAccount`, `User`, `Group`, or
    /// `ClusterRoleHolders` for whoever holds the ClusterRole
    /// `subjectName`); empty for `Rule` and `Aggregation`.
    pub subject_kind: String,
    /// The subject's namespace (ServiceAccounts).
    pub subject_namespace: String,
    /// The subject's name.
    pub subject_name: String,
    /// `Cluster` when it applies cluster-wide, else `Namespace`.
    pub scope: String,
    /// Where it applies, when `scope` is `Namespace`.
    pub namespace: String,
    /// The verb (`*` for any); empty for `Binding` and `Aggregation`.
    pub verb: String,
    /// The API group (`*` for any).
    pub api_group: String,
    /// The resource (`*` for any).
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The one object it is limited to, if any.
    pub resource_name: String,
    /// A non-resource URL, for such rules.
    pub non_resource_url: String,
    /// For `Binding`: `Role` or `ClusterRole`.
    pub role_kind: String,
    /// For `Binding`: the role bound; for `Aggregation`: the aggregating
    /// ClusterRole.
    pub role_name: String,
    /// For `Binding`: the role is one every cluster has (`cluster-admin`,
    /// `admin`, `edit`, `view`, `system:*`).
    pub built_in_role: bool,
    /// In words, for people.
    pub sentence: String,
}

/// A webhook configuration, an admission policy, or a binding of one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AdmissionEffect {
    /// `ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration`,
    /// `ValidatingAdmissionPolicy`, `ValidatingAdmissionPolicyBinding`,
    /// `MutatingAdmissionPolicy` or `MutatingAdmissionPolicyBinding`.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// For a webhook configuration: the webhook's name in it.
    pub webhook: String,
    /// For a binding: the policy it binds.
    pub policy_name: String,
    /// Digest of its configuration, `caBundle` left out.
    pub config: String,
    /// In words, for people.
    pub sentence: String,
}

/// A CRD, or its conversion webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CrdEffect {
    /// The CRD's name.
    pub name: String,
    /// Whether this is its conversion webhook (the CRD itself is another
    /// entry).
    pub conversion: bool,
    /// For a conversion: digest of `spec.conversion`, `caBundle` left out.
    pub config: String,
    /// In words, for people.
    pub sentence: String,
}

/// An APIService: an aggregated API the content serves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApiServiceEffect {
    /// Its name.
    pub name: String,
    /// Digest of its spec, `caBundle` left out.
    pub config: String,
    /// In words, for people.
    pub sentence: String,
}

/// The admission policies and bindings among `objects` (placed).
pub(super) fn admission_policies(objects: &[Value]) -> Vec<AdmissionEffect> {
    objects.iter().filter_map(admission_policy).collect()
}

/// An admission policy or a binding of one, as an effect.
fn admission_policy(object: &Value) -> Option<AdmissionEffect> {
    let reference = reference_of(object);
    if group_of(&reference.api_version) != "admissionregistration.k8s.io" {
        return None;
    }
    let binding = match reference.kind.as_str() {
        "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => false,
        "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding" => true,
        _ => return None,
    };
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let policy_name = spec
        .get("policyName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let config = pakket_api::value_digest(&spec);
    let sentence = if binding {
        format!(
            "{} {} putting admission policy {policy_name} in force over others' writes ({})",
            reference.kind,
            reference.name,
            short(&config)
        )
    } else {
        format!(
            "{} {}, which can refuse{} others' writes ({})",
            reference.kind,
            reference.name,
            if reference.kind.starts_with("Mutating") {
                " or change"
            } else {
                ""
            },
            short(&config)
        )
    };
    Some(AdmissionEffect {
        kind: reference.kind,
        name: reference.name,
        webhook: String::new(),
        policy_name,
        config,
        sentence,
    })
}

/// A digest, shortened for a sentence.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min("sha256:".len() + 12)]
}

/// The grants of `objects` (placed): `rights` (all of them, or those
/// beyond what runs), `workloads`, and the admission policies and
/// namespaces of `objects`.
pub(super) fn grants(objects: &[Value], rights: &[&Right], workloads: &[Workload]) -> Grants {
    let mut grants = Grants {
        namespaces: namespaces(objects).into_iter().collect(),
        workloads: workloads.to_vec(),
        admission: admission_policies(objects),
        ..Grants::default()
    };
    for right in rights {
        let sentence = right.to_string();
        match right {
            Right::Rule(access) => grants.rbac.push(RbacEffect {
                type_: "Rule".into(),
                sentence,
                ..access_effect(access)
            }),
            Right::Held { subject, access } => {
                let (subject_kind, subject_namespace, subject_name) = parse_subject(subject);
                grants.rbac.push(RbacEffect {
                    type_: "Held".into(),
                    subject_kind,
                    subject_namespace,
                    subject_name,
                    sentence,
                    ..access_effect(access)
                });
            }
            Right::Binding {
                namespace,
                subject,
                role,
            } => grants.rbac.push(binding_effect(
                namespace.as_deref(),
                subject,
                role,
                sentence,
            )),
            Right::Aggregation(name) => grants.rbac.push(RbacEffect {
                type_: "Aggregation".into(),
                scope: "Cluster".into(),
                role_kind: "ClusterRole".into(),
                role_name: name.clone(),
                sentence,
                ..RbacEffect::default()
            }),
            Right::Crd(name) => grants.crds.push(CrdEffect {
                name: name.clone(),
                conversion: false,
                config: String::new(),
                sentence,
            }),
            Right::CrdConversion { crd, config } => grants.crds.push(CrdEffect {
                name: crd.clone(),
                conversion: true,
                config: config.clone(),
                sentence,
            }),
            Right::Webhook {
                kind,
                configuration,
                webhook,
                config,
            } => grants.admission.push(AdmissionEffect {
                kind: kind.clone(),
                name: configuration.clone(),
                webhook: webhook.clone(),
                policy_name: String::new(),
                config: config.clone(),
                sentence,
            }),
            Right::ApiService { name, config } => grants.api_services.push(ApiServiceEffect {
                name: name.clone(),
                config: config.clone(),
                sentence,
            }),
        }
    }
    summarize(&mut grants);
    grants
}

/// A binding of `subject` to `role` (`ClusterRole NAME` or `Role NAME`),
/// in `namespace` or cluster-wide.
fn binding_effect(
    namespace: Option<&str>,
    subject: &str,
    role: &str,
    sentence: String,
) -> RbacEffect {
    let (subject_kind, subject_namespace, subject_name) = parse_subject(subject);
    let (role_kind, role_name) = role.split_once(' ').unwrap_or(("", role));
    RbacEffect {
        type_: "Binding".into(),
        subject_kind,
        subject_namespace,
        subject_name,
        scope: if namespace.is_some() {
            "Namespace"
        } else {
            "Cluster"
        }
        .into(),
        namespace: namespace.unwrap_or_default().to_owned(),
        role_kind: role_kind.to_owned(),
        role_name: role_name.to_owned(),
        built_in_role: role_kind == "ClusterRole"
            && (BUILT_IN_ROLES.contains(&role_name) || role_name.starts_with("system:")),
        sentence,
        ..RbacEffect::default()
    }
}

/// Summaries a rule reads without a macro (each macro multiplies a rule's
/// cost bound by the widest list).
fn summarize(grants: &mut Grants) {
    let distinct = |values: Vec<String>| -> Vec<String> {
        values
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    grants.rbac_scopes = distinct(grants.rbac.iter().map(|g| g.scope.clone()).collect());
    grants.rbac_types = distinct(grants.rbac.iter().map(|g| g.type_.clone()).collect());
    grants.host_access = grants.workloads.iter().any(|w| w.host_access);
    grants.service_accounts = distinct(
        grants
            .workloads
            .iter()
            .map(|w| format!("{}/{}", w.namespace, w.service_account))
            .collect(),
    );
}

/// The fields of an RBAC effect one access fills in.
fn access_effect(access: &Access) -> RbacEffect {
    match access {
        Access::Resource {
            group,
            resource,
            subresource,
            verb,
            namespace,
            name,
        } => RbacEffect {
            scope: if namespace.is_some() {
                "Namespace"
            } else {
                "Cluster"
            }
            .into(),
            namespace: namespace.clone().unwrap_or_default(),
            verb: verb.clone(),
            api_group: group.clone(),
            resource: resource.clone(),
            subresource: subresource.clone(),
            resource_name: name.clone().unwrap_or_default(),
            ..RbacEffect::default()
        },
        Access::NonResource { path, verb } => RbacEffect {
            scope: "Cluster".into(),
            verb: verb.clone(),
            non_resource_url: path.clone(),
            ..RbacEffect::default()
        },
    }
}

/// (kind, namespace, name) of a subject as [`Right`] writes it: `Kind
/// namespace/name`, `Kind name`, or `holders of ClusterRole NAME`.
fn parse_subject(subject: &str) -> (String, String, String) {
    if let Some(role) = subject.strip_prefix("holders of ClusterRole ") {
        return ("ClusterRoleHolders".into(), String::new(), role.to_owned());
    }
    let (kind, rest) = subject.split_once(' ').unwrap_or(("", subject));
    let (namespace, name) = rest.split_once('/').unwrap_or(("", rest));
    (kind.to_owned(), namespace.to_owned(), name.to_owned())
}
