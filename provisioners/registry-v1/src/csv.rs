//! The parts of a ClusterServiceVersion the conversion reads. Everything
//! else in the CSV is OLM's business (UI metadata, owned CRD
//! descriptions) and is ignored on purpose.

use serde::Deserialize;
use serde_json::{Map, Value};

/// A ClusterServiceVersion (`operators.coreos.com/v1alpha1`).
#[derive(Debug, Deserialize)]
pub struct Csv {
    /// Name and annotations.
    pub metadata: CsvMetadata,
    /// What to install.
    pub spec: CsvSpec,
}

/// The CSV's metadata.
#[derive(Debug, Deserialize)]
pub struct CsvMetadata {
    /// `etcdoperator.v0.9.4`.
    pub name: String,
    /// Including `operatorframework.io/suggested-namespace`.
    #[serde(default)]
    pub annotations: Map<String, Value>,
}

/// The CSV's spec, as far as installing goes.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    /// How to install: the deployment strategy and its RBAC.
    pub install: Install,
    /// Which namespaces the operator can watch.
    #[serde(default)]
    pub install_modes: Vec<InstallMode>,
    /// Admission and conversion webhooks the operator serves.
    #[serde(default)]
    pub webhookdefinitions: Vec<Value>,
    /// Aggregated API servers the operator serves.
    #[serde(default)]
    pub apiservicedefinitions: Option<ApiServiceDefinitions>,
    /// The oldest Kubernetes the operator runs on (`1.21.0`).
    #[serde(default)]
    pub min_kube_version: Option<String>,
}

/// `spec.install`.
#[derive(Debug, Deserialize)]
pub struct Install {
    /// Always `deployment` in registry+v1.
    pub strategy: String,
    /// The deployments and permissions.
    #[serde(default)]
    pub spec: StrategySpec,
}

/// `spec.install.spec`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategySpec {
    /// The operator's Deployments.
    #[serde(default)]
    pub deployments: Vec<DeploymentSpec>,
    /// Namespaced rules, granted in each watched namespace.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// Cluster-wide rules.
    #[serde(default)]
    pub cluster_permissions: Vec<Permission>,
}

/// One Deployment of the install strategy.
#[derive(Debug, Deserialize)]
pub struct DeploymentSpec {
    /// The Deployment's name.
    pub name: String,
    /// Labels for the Deployment object.
    #[serde(default)]
    pub label: Map<String, Value>,
    /// A Deployment spec, as written.
    pub spec: Value,
}

/// RBAC rules for one ServiceAccount.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permission {
    /// The ServiceAccount the rules are bound to.
    pub service_account_name: String,
    /// `rbac/v1` PolicyRules, as written.
    #[serde(default)]
    pub rules: Vec<Value>,
}

/// One install mode and whether the operator supports it.
#[derive(Debug, Deserialize)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub mode: String,
    /// Whether the operator supports it.
    pub supported: bool,
}

/// `spec.apiservicedefinitions`.
#[derive(Debug, Default, Deserialize)]
pub struct ApiServiceDefinitions {
    /// API services the operator serves.
    #[serde(default)]
    pub owned: Vec<Value>,
}

impl CsvSpec {
    /// Whether the CSV supports install mode `mode`.
    pub fn supports(&self, mode: &str) -> bool {
        self.install_modes
            .iter()
            .any(|install_mode| install_mode.mode == mode && install_mode.supported)
    }

    /// The modes it supports, for messages.
    pub fn supported_modes(&self) -> Vec<&str> {
        self.install_modes
            .iter()
            .filter(|install_mode| install_mode.supported)
            .map(|install_mode| install_mode.mode.as_str())
            .collect()
    }
}
