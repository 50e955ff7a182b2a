//! The order objects are applied in, so nothing waits on what comes later
//! in the bundle: by phase ([`super::phase`]), Namespaces first and
//! admission webhooks last; within a phase, the bundle's own order (file
//! name, then position) stands. Helm and kapp order much the same way.
//! [`rank`] is the order objects are deleted in, last first.

use std::collections::BTreeMap;

use serde_json::Value;

use super::declared_phases::DeclaredPhases;
use super::phase::Stage;

pub use pakket_api::group_of;

/// The apply rank of a kind: lower goes first (and is deleted last).
pub fn rank(api_version: &str, kind: &str) -> u8 {
    match (group_of(api_version), kind) {
        ("", "Namespace") => 0,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
        (
            "rbac.authorization.k8s.io",
            "ClusterRole" | "Role" | "ClusterRoleBinding" | "RoleBinding",
        ) => 2,
        ("", "ServiceAccount" | "ConfigMap" | "Secret" | "Service") => 3,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("", "Pod") => 4,
        _ => 5,
    }
}

/// The indices of `objects` in apply order: by [`Stage`] (the phases
/// content declares, then the kind's phase), and within a stage in the
/// bundle's own order.
pub fn apply_order(objects: &[Value], phases: &DeclaredPhases) -> Vec<usize> {
    let mut order: Vec<usize> = (0..objects.len()).collect();
    // Cached: a stage matches the object against every declared selector.
    order.sort_by_cached_key(|&index| Stage::of(&objects[index], phases));
    order
}

/// The CRD among `defined` ([`defined_kinds`]) that serves `reference`'s
/// kind: what a custom resource of a kind not served yet waits for.
pub fn crd_defining(
    defined: &BTreeMap<(String, String), String>,
    reference: &pakket_api::ObjectRef,
) -> Option<String> {
    defined
        .get(&(
            group_of(&reference.api_version).to_owned(),
            reference.kind.clone(),
        ))
        .cloned()
}

/// The CustomResourceDefinitions the bundle itself holds, by the
/// `(group, Kind)` they define: their name (`plural.group`).
pub fn defined_kinds(objects: &[Value]) -> BTreeMap<(String, String), String> {
    objects
        .iter()
        .filter(|object| {
            object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        })
        .filter_map(|crd| {
            let group = crd.pointer("/spec/group")?.as_str()?;
            let kind = crd.pointer("/spec/names/kind")?.as_str()?;
            let name = crd.pointer("/metadata/name")?.as_str()?;
            Some(((group.to_owned(), kind.to_owned()), name.to_owned()))
        })
        .collect()
}

/// The resource (plural) and scope of a kind a CustomResourceDefinition in
/// the bundle defines: what a permission check asks about before the CRD
/// is installed.
pub fn defined_resource(objects: &[Value], group: &str, kind: &str) -> Option<(String, bool)> {
    objects.iter().find_map(|crd| {
        (crd.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
            && crd.pointer("/spec/group").and_then(Value::as_str) == Some(group)
            && crd.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind))
        .then(|| {
            let plural = crd.pointer("/spec/names/plural")?.as_str()?.to_owned();
            let namespaced = crd.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
            Some((plural, namespaced))
        })
        .flatten()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(api_version: &str, kind: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": kind.to_lowercase()}})
    }

    #[test]
    fn objects_go_in_phase_order_and_ties_keep_bundle_order() {
        let objects = vec![
            object("example.com/v1", "Widget"),
            object("apps/v1", "Deployment"),
            object("v1", "ConfigMap"),
            object("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            object("rbac.authorization.k8s.io/v1", "ClusterRole"),
            object("v1", "Namespace"),
            object("v1", "Secret"),
        ];
        let kinds: Vec<String> = apply_order(&objects, &DeclaredPhases::default())
            .into_iter()
            .map(|index| objects[index]["kind"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ConfigMap",
                "Secret",
                "CustomResourceDefinition",
                "ClusterRole",
                // Custom resources are workloads' peers, in bundle order.
                "Widget",
                "Deployment",
            ]
        );
    }

    #[test]
    fn a_kind_named_like_a_core_kind_in_another_group_is_not_promoted() {
        let objects = vec![
            object("v1", "ConfigMap"),
            object("example.com/v1", "Namespace"),
        ];
        assert_eq!(apply_order(&objects, &DeclaredPhases::default()), [0, 1]);
    }

    fn crd_again() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"}},
        })
    }

    #[test]
    fn the_crds_a_bundle_holds_are_found_by_group_and_kind() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}},
        });
        let defined = defined_kinds(&[crd]);
        assert_eq!(
            defined
                .get(&("example.com".to_owned(), "Widget".to_owned()))
                .map(String::as_str),
            Some("widgets.example.com")
        );
        assert_eq!(
            defined_resource(&[crd_again()], "example.com", "Widget"),
            Some(("widgets".to_owned(), true))
        );
        assert_eq!(group_of("example.com/v1"), "example.com");
        assert_eq!(group_of("v1"), "");
    }
}
