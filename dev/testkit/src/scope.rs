//! One test's private corner of the shared control plane.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Client, Resource};
use pakket_api::{Bundle, Instance, ProvisionerClass};
use rand::distr::{Alphanumeric, SampleString};

use crate::{SCOPE_LABEL, TestCluster};

/// A namespace and a label that belong to one test.
pub struct Scope {
    /// Admin client on the calling test's runtime.
    pub client: Client,
    /// The scope's id: lowercase, unique per test run.
    pub id: String,
    /// The scope's namespace (named after the id).
    pub namespace: String,
    /// The shared control plane.
    pub cluster: &'static TestCluster,
    /// Files the test keeps on disk (provisioner stores): removed when the
    /// scope is dropped, after a failure too, so runs leave nothing in /tmp.
    files: tempfile::TempDir,
}

impl Scope {
    /// Makes a scope for the test `test`: a namespace `t-<test>-<random>`
    /// labelled with the scope id, and an admin client.
    pub async fn new(test: &str) -> Self {
        let cluster = crate::cluster();
        let client = cluster.admin().await;
        // Once per test process: what killed runs left on a kept control
        // plane goes before anything else is made.
        static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
        SWEPT.get_or_init(|| crate::leftovers::sweep(&client)).await;
        let slug: String = test
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let suffix = Alphanumeric
            .sample_string(&mut rand::rng(), 6)
            .to_lowercase();
        let id = format!("t-{}-{suffix}", slug.trim_matches('-'));
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(id.clone()),
                labels: Some(BTreeMap::from([(SCOPE_LABEL.to_owned(), id.clone())])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap_or_else(|error| panic!("creating namespace {id}: {error}"));
        let files = tempfile::Builder::new()
            .prefix(&format!("pakket-{id}-"))
            .tempdir()
            .unwrap_or_else(|error| panic!("making a temporary folder for {id}: {error}"));
        Self {
            client,
            namespace: id.clone(),
            id,
            cluster,
            files,
        }
    }

    /// A cluster-unique name for an object of this test: `<scope id>-<suffix>`.
    pub fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.id)
    }

    /// A path named `name` inside the scope's own temporary folder (not
    /// created): for a provisioner's store, say. The folder goes when the
    /// scope is dropped.
    pub fn path(&self, name: &str) -> PathBuf {
        self.files.path().join(name)
    }

    /// The scope label, for `metadata.labels` and label selectors.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(SCOPE_LABEL.to_owned(), self.id.clone())])
    }

    /// `test.pakket.dev/scope=<id>`, for list calls and `kubectl -l`.
    pub fn selector(&self) -> String {
        format!("{SCOPE_LABEL}={}", self.id)
    }

    /// Metadata for a cluster-scoped object of this test.
    pub fn meta(&self, suffix: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name(suffix)),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    /// Deletes the namespace and every core Pakket object with the scope label.
    pub async fn cleanup(self) {
        self.delete_labelled::<Instance>().await;
        self.delete_labelled::<Bundle>().await;
        self.delete_labelled::<ProvisionerClass>().await;
        self.delete_labelled::<pakket_api::ApprovalPolicy>().await;
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(&self.namespace, &DeleteParams::default())
            .await;
    }

    async fn delete_labelled<K>(&self)
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let api: Api<K> = Api::all(self.client.clone());
        let params = ListParams::default().labels(&self.selector());
        // The CRD may not be installed in tests that never needed it.
        let _ = api
            .delete_collection(&DeleteParams::default(), &params)
            .await;
    }
}
