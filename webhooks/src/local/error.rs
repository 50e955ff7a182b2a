//! What can go wrong starting or removing [`super::LocalWebhooks`], each
//! said with what to do about it.

use std::time::Duration;

use crate::StartError;

/// Why local webhooks could not start or be removed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// [`LocalOptions::name`](super::LocalOptions::name) makes no valid object name.
    #[error(
        "local webhooks name {name:?} {problem}; it names the configurations pakket-webhooks-<name>"
    )]
    Name {
        /// The name given.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// rcgen could not make the CA or the serving certificate.
    #[error("making the loopback CA or serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A certificate file could not be written.
    #[error("writing {path}: {source}")]
    WriteFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No temporary directory for the certificate files.
    #[error("making a temporary directory for the serving certificate: {0}; check $TMPDIR")]
    TempDir(#[source] std::io::Error),
    /// The record key file cannot be used.
    #[error("{0}")]
    RecordKey(String),
    /// The server did not start.
    #[error("starting the webhook server: {0}")]
    Start(#[from] StartError),
    /// The apiserver does not serve Bundles or Instances.
    #[error(
        "the apiserver does not serve Pakket's kinds ({0}); install the CRDs first: kubectl apply -f crds/"
    )]
    CrdsMissing(#[source] kube::Error),
    /// A request the start needs failed.
    #[error("listing {what}: {source}")]
    Cluster {
        /// What was being listed.
        what: &'static str,
        /// What the client said.
        source: kube::Error,
    },
    /// The watches of Bundles and ProvisionerClasses did not sync.
    #[error(
        "the Bundle and ProvisionerClass watches did not sync within {waited:?}; the client \
         needs list and watch on bundles and provisionerclasses.core.pakket.dev"
    )]
    NotSynced {
        /// How long it waited.
        waited: Duration,
    },
    /// A configuration could not be created.
    #[error(
        "registering {kind} {name}: {source}; registering webhooks needs a cluster admin's kubeconfig"
    )]
    Register {
        /// `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// What the apiserver said.
        source: kube::Error,
    },
    /// The apiserver never called the server.
    #[error(
        "the apiserver did not call the webhook server at {url} within {waited:?} (last probe: \
         {last}); it must run on this machine (a loopback control plane such as `pakket-dev up`) \
         to reach 127.0.0.1"
    )]
    NotCalled {
        /// The server's base URL.
        url: String,
        /// How long it waited.
        waited: Duration,
        /// What the apiserver answered to the last probe.
        last: String,
    },
    /// A configuration could not be deleted.
    #[error(
        "deleting {resource} {name}: {source}; delete it by hand: kubectl delete {resource} {name}"
    )]
    Unregister {
        /// `validatingwebhookconfiguration` or `mutatingwebhookconfiguration`.
        resource: &'static str,
        /// Its name.
        name: String,
        /// What the apiserver said.
        source: kube::Error,
    },
}
