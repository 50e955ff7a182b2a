//! pakket-plain and the webhooks as `deploy/` runs them: the shared
//! harness (`pakket_testkit::shipped`) with plain's file and account.

use std::path::{Path, PathBuf};

use kube::Client;
use pakket_testkit::Scope;
use pakket_testkit::shipped::{self, PLAIN, WEBHOOKS};

pub use pakket_testkit::shipped::NAMESPACE;

/// Applies plain's shipped identity and rights and writes a kubeconfig for
/// its ServiceAccount at `kubeconfig`.
pub async fn provisioner_kubeconfig(admin: &Client, admin_kubeconfig: &Path, kubeconfig: &Path) {
    shipped::account_kubeconfig(admin, admin_kubeconfig, PLAIN, kubeconfig).await;
}

/// A client holding the token of the webhooks' ServiceAccount, with
/// `deploy/webhooks/rbac.yaml` applied as it is.
pub async fn webhooks_client(admin: &Client, admin_kubeconfig: &Path, scope: &Scope) -> Client {
    shipped::client(admin, admin_kubeconfig, WEBHOOKS, scope).await
}

/// `use` on `classes` for plain's ServiceAccount (what an admin adds for
/// each class of hers).
pub async fn grant_classes(
    admin: &Client,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
    classes: &[String],
) {
    shipped::grant_classes(admin, PLAIN, name, labels, classes).await;
}

/// Where a stage keeps its provisioner's kubeconfig.
pub fn kubeconfig_for(scope: &Scope) -> PathBuf {
    shipped::kubeconfig_for(PLAIN, scope)
}
