//! A component as `deploy/` runs it: the ServiceAccount, ClusterRoles,
//! Role and bindings of its file in `deploy/`, applied as they are, and a
//! kubeconfig (or client) holding that ServiceAccount's token (a
//! TokenRequest), so an attack meets the rights a real cluster gives the
//! provisioner or the webhooks, not the admin's. What an admin adds for
//! her own classes (`use` on each, by name, as the files say to) is
//! [`grant_classes`].

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, Context, Kubeconfig, NamedAuthInfo, NamedContext};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// Where `deploy/` runs the provisioners.
pub const NAMESPACE: &str = "pakket-system";
/// A component's identity in `deploy/`: the file that holds its
/// ServiceAccount and rights, and the ServiceAccount's name.
#[derive(Clone, Copy, Debug)]
pub struct Shipped {
    /// The file, relative to the repository.
    pub file: &'static str,
    /// The ServiceAccount in [`NAMESPACE`].
    pub account: &'static str,
}

/// pakket-plain.
pub const PLAIN: Shipped = Shipped {
    file: "deploy/plain/provisioner.yaml",
    account: "pakket-plain",
};
/// pakket-package.
pub const PACKAGE: Shipped = Shipped {
    file: "deploy/package/provisioner.yaml",
    account: "pakket-package",
};
/// pakket-helm.
pub const HELM: Shipped = Shipped {
    file: "deploy/helm/provisioner.yaml",
    account: "pakket-helm",
};
/// pakket-registry-v1.
pub const REGISTRY_V1: Shipped = Shipped {
    file: "deploy/registry-v1/provisioner.yaml",
    account: "pakket-registry-v1",
};
/// pakket-resolveset (the Catalog, Input and Operator controllers, the
/// resolver API and the resolveset provisioner: one process).
pub const RESOLVESET: Shipped = Shipped {
    file: "deploy/resolveset/resolveset.yaml",
    account: "pakket-resolveset",
};
/// The webhooks.
pub const WEBHOOKS: Shipped = Shipped {
    file: "deploy/webhooks/rbac.yaml",
    account: "pakket-webhooks",
};

impl Shipped {
    /// The user name its token authenticates as.
    pub fn user(&self) -> String {
        format!("system:serviceaccount:{NAMESPACE}:{}", self.account)
    }
}

/// The kinds of `deploy/plain/provisioner.yaml` that make its identity and
/// rights (the Deployment is what this harness replaces).
const IDENTITY_KINDS: &[&str] = &[
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

/// Applies the shipped identity and rights of `shipped` (idempotent:
/// every test does it, server-side, with one field manager) and returns a
/// client holding a token of its ServiceAccount; the kubeconfig it wrote
/// in `scope` is [`kubeconfig_for`] (for a process of its own).
pub async fn client(
    admin: &Client,
    admin_kubeconfig: &Path,
    shipped: Shipped,
    scope: &crate::Scope,
) -> Client {
    let kubeconfig = kubeconfig_for(shipped, scope);
    account_kubeconfig(admin, admin_kubeconfig, shipped, &kubeconfig).await;
    let config = Kubeconfig::read_from(&kubeconfig).expect("the shipped account's kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .expect("a client configuration for the shipped account");
    Client::try_from(config).expect("a client for the shipped account")
}

/// Applies the identity kinds of `shipped`'s file and writes a kubeconfig
/// holding a token of its ServiceAccount at `kubeconfig`.
pub async fn account_kubeconfig(
    admin: &Client,
    admin_kubeconfig: &Path,
    shipped: Shipped,
    kubeconfig: &Path,
) {
    let Shipped { file, account } = shipped;
    ensure_namespace(admin).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let shipped = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let documents: Vec<Value> = serde_saphyr::from_multiple(&shipped).expect("valid YAML");
    for document in documents {
        let kind = document["kind"].as_str().unwrap_or_default();
        if IDENTITY_KINDS.contains(&kind) {
            apply(admin, &document).await;
        }
    }
    let token = Api::<ServiceAccount>::namespaced(admin.clone(), NAMESPACE)
        .create_token_request(
            account,
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(3600),
                    ..TokenRequestSpec::default()
                },
                ..TokenRequest::default()
            },
        )
        .await
        .expect("a token for the ServiceAccount")
        .status
        .expect("the token")
        .token;
    write_kubeconfig(admin_kubeconfig, kubeconfig, account, &token);
}

/// A ClusterRole granting `shipped`'s ServiceAccount `use` on `classes`
/// and the right to claim them (`provisionerclasses/status`): what an
/// admin adds for each class of hers. Named `name`, labelled `labels`.
pub async fn grant_classes(
    admin: &Client,
    shipped: Shipped,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
    classes: &[String],
) {
    let rules = json!([
        { "apiGroups": [pakket_api::GROUP], "resources": ["provisionerclasses"],
          "resourceNames": classes, "verbs": ["use"] },
        { "apiGroups": [pakket_api::GROUP], "resources": ["provisionerclasses/status"],
          "resourceNames": classes, "verbs": ["patch"] },
    ]);
    grant(admin, shipped, None, name, labels, rules).await;
}

/// `rules` for `shipped`'s ServiceAccount, in `namespace` (a Role and
/// RoleBinding) or cluster-wide (a ClusterRole and binding): what `deploy/`
/// gives it by the names an admin chooses (its classes, its install
/// namespace), given here by the test's own names. Named `name`,
/// labelled `labels`.
pub async fn grant(
    admin: &Client,
    shipped: Shipped,
    namespace: Option<&str>,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
    rules: Value,
) {
    let (role_kind, binding_kind) = match namespace {
        Some(_) => ("Role", "RoleBinding"),
        None => ("ClusterRole", "ClusterRoleBinding"),
    };
    let mut metadata = json!({ "name": name, "labels": labels });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    apply(
        admin,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
            "metadata": metadata, "rules": rules,
        }),
    )
    .await;
    apply(
        admin,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind,
            "metadata": metadata,
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name },
            "subjects": [{ "kind": "ServiceAccount", "name": shipped.account, "namespace": NAMESPACE }],
        }),
    )
    .await;
}

async fn ensure_namespace(admin: &Client) {
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let made = serde_json::from_value(json!({ "metadata": { "name": NAMESPACE } })).unwrap();
    match namespaces.create(&PostParams::default(), &made).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("creating namespace {NAMESPACE}: {error}"),
    }
}

/// Server-side applies one RBAC or core object as the harness.
async fn apply(admin: &Client, object: &Value) {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = format!("{}s", kind.to_lowercase());
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural,
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(admin.clone(), namespace, &resource),
        None => Api::all_with(admin.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply("pakket-trust-harness").force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|error| panic!("applying {kind} {name}: {error}"));
}

/// The admin kubeconfig's cluster, with the token as the only user.
fn write_kubeconfig(admin_kubeconfig: &Path, to: &Path, account: &str, token: &str) {
    let admin = Kubeconfig::read_from(admin_kubeconfig).expect("the test kubeconfig");
    let context = admin
        .contexts
        .iter()
        .find(|context| context.name == pakket_controlplane::ADMIN_CONTEXT)
        .and_then(|context| context.context.clone())
        .expect("the admin context");
    let cluster = admin
        .clusters
        .iter()
        .find(|cluster| cluster.name == context.cluster)
        .cloned()
        .expect("the admin context's cluster");
    let user = format!("system:serviceaccount:{NAMESPACE}:{account}");
    let config = Kubeconfig {
        clusters: vec![cluster.clone()],
        auth_infos: vec![NamedAuthInfo {
            name: user.clone(),
            auth_info: Some(AuthInfo {
                token: Some(token.to_owned().into()),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: "provisioner".into(),
            context: Some(Context {
                cluster: cluster.name.clone(),
                user: Some(user),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some("provisioner".into()),
        ..Kubeconfig::default()
    };
    let text = serde_json::to_string_pretty(&config).expect("a kubeconfig serializes");
    std::fs::write(to, text).expect("writing the shipped account's kubeconfig");
}

/// Where a test keeps `shipped`'s kubeconfig: in the scope's own folder,
/// so the token goes with the scope rather than staying in /tmp.
pub fn kubeconfig_for(shipped: Shipped, scope: &crate::Scope) -> PathBuf {
    scope.path(&format!("{}.kubeconfig", shipped.account))
}

/// The rules of ClusterRole `role` in `deploy/rbac/examples.yaml`, as
/// shipped: what an admin binds to a person (an approver, a decider).
pub fn example_rules(role: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/rbac/examples.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/rbac/examples.yaml");
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).expect("valid YAML");
    documents
        .into_iter()
        .find(|document| document["kind"] == "ClusterRole" && document["metadata"]["name"] == role)
        .map(|document| document["rules"].clone())
        .unwrap_or_else(|| panic!("deploy/rbac/examples.yaml ships no ClusterRole {role}"))
}
