//! Rights a test gives its users: cluster-wide rules (a ClusterRole and
//! its binding) and a ClusterRole bound in one namespace, each labelled
//! with the scope so the scope's cleanup takes it.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::Scope;

/// `user` may do `rules` cluster-wide: ClusterRole and ClusterRoleBinding
/// `scope.name(user)`.
pub async fn grant(scope: &Scope, user: &str, rules: Value) {
    let name = scope.name(user);
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": scope.labels() },
        "rules": rules,
    }))
    .unwrap();
    Api::<ClusterRole>::all(scope.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": scope.labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(scope.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// `user` gets ClusterRole `role` in `namespace` only: RoleBinding
/// `<user>-<role>` there.
pub async fn bind_in(scope: &Scope, namespace: &str, user: &str, role: &str) {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": format!("{user}-{role}"), "namespace": namespace, "labels": scope.labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(scope.client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}
