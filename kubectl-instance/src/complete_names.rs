//! The names a completion offers, read from the cluster as the caller:
//! Instances, and the other kinds a verb takes as `PREFIX/NAME` or
//! `PREFIX/NAMESPACE/NAME` (`complete` decides which).

use clap::{Args, FromArgMatches};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use pakket_api::Instance;
use pakket_helm_api::HelmChart;
use pakket_operators_api::{Operator, OperatorRequest};
use pakket_packages_api::{ClusterPackage, Package};
use pakket_resolve_api::Input;

use crate::connect::ClusterArgs;

/// A kind whose names are completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// Instances, by bare name.
    Instance,
    /// `operator/NAME`.
    Operator,
    /// `input/NAME`.
    Input,
    /// `clusterpackage/NAME`.
    ClusterPackage,
    /// `package/NAMESPACE/NAME`.
    Package,
    /// `operatorrequest/NAMESPACE/NAME`.
    OperatorRequest,
    /// `helmchart/NAMESPACE/NAME`.
    HelmChart,
    /// Namespaces (`-n`).
    Namespace,
}

impl Named {
    /// The prefix a verb takes this kind's names with.
    fn prefix(self) -> &'static str {
        match self {
            Self::Instance | Self::Namespace => "",
            Self::Operator => "operator/",
            Self::Input => "input/",
            Self::ClusterPackage => "clusterpackage/",
            Self::Package => "package/",
            Self::OperatorRequest => crate::operator_request::PREFIX,
            Self::HelmChart => crate::helm_chart::PREFIX,
        }
    }

    /// Whether a name is `NAMESPACE/NAME`.
    fn namespaced(self) -> bool {
        matches!(
            self,
            Self::Package | Self::OperatorRequest | Self::HelmChart
        )
    }
}

/// The names of `kind` on the cluster (in `namespace` if given), as a verb
/// takes them: `PREFIX[NAMESPACE/]NAME`, with the prefix when `prefixed`.
async fn names(
    client: &kube::Client,
    kind: Named,
    namespace: Option<&str>,
    prefixed: bool,
) -> Result<Vec<String>, kube::Error> {
    let params = ListParams::default();
    let listed: Vec<(Option<String>, Option<String>)> = match kind {
        Named::Instance => metadata(Api::<Instance>::all(client.clone()), &params).await?,
        Named::Operator => metadata(Api::<Operator>::all(client.clone()), &params).await?,
        Named::Input => metadata(Api::<Input>::all(client.clone()), &params).await?,
        Named::ClusterPackage => {
            metadata(Api::<ClusterPackage>::all(client.clone()), &params).await?
        }
        Named::Namespace => metadata(Api::<Namespace>::all(client.clone()), &params).await?,
        Named::Package => match namespace {
            Some(ns) => metadata(Api::<Package>::namespaced(client.clone(), ns), &params).await?,
            None => metadata(Api::<Package>::all(client.clone()), &params).await?,
        },
        Named::OperatorRequest => match namespace {
            Some(ns) => {
                metadata(
                    Api::<OperatorRequest>::namespaced(client.clone(), ns),
                    &params,
                )
                .await?
            }
            None => metadata(Api::<OperatorRequest>::all(client.clone()), &params).await?,
        },
        Named::HelmChart => match namespace {
            Some(ns) => metadata(Api::<HelmChart>::namespaced(client.clone(), ns), &params).await?,
            None => metadata(Api::<HelmChart>::all(client.clone()), &params).await?,
        },
    };
    let prefix = if prefixed { kind.prefix() } else { "" };
    Ok(listed
        .into_iter()
        .filter_map(|(namespace, name)| {
            let name = name?;
            Some(match namespace.filter(|_| kind.namespaced()) {
                Some(namespace) => format!("{prefix}{namespace}/{name}"),
                None => format!("{prefix}{name}"),
            })
        })
        .collect())
}

/// Each object's namespace and name, without the rest of it.
async fn metadata<K>(
    api: Api<K>,
    params: &ListParams,
) -> Result<Vec<(Option<String>, Option<String>)>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list_metadata(params).await?;
    Ok(list
        .items
        .into_iter()
        .map(|item| (item.metadata.namespace, item.metadata.name))
        .collect())
}

/// The candidates for `Wanted::Names`, given what is typed: with a
/// `PREFIX/` typed, that kind's names (in `NAMESPACE` once it is typed
/// too); else the bare kinds' names and the prefixes themselves. Any read
/// that fails fails the whole.
pub async fn cluster_names(
    client: &kube::Client,
    bare: &[Named],
    prefixed: &[Named],
    partial: &str,
) -> Result<Vec<String>, kube::Error> {
    if let Some(&kind) = prefixed
        .iter()
        .find(|kind| partial.starts_with(kind.prefix()))
    {
        let rest = &partial[kind.prefix().len()..];
        let namespace = kind
            .namespaced()
            .then(|| rest.split_once('/').map(|(namespace, _)| namespace))
            .flatten();
        return names(client, kind, namespace, true).await;
    }
    let mut found = Vec::new();
    for &kind in bare {
        found.extend(names(client, kind, None, false).await?);
    }
    found.extend(prefixed.iter().map(|kind| kind.prefix().to_owned()));
    Ok(found)
}

/// A client for the cluster the typed flags name.
pub async fn client(cluster: &[String]) -> Option<kube::Client> {
    let command = ClusterArgs::augment_args(clap::Command::new("kubectl-instance"));
    let argv = std::iter::once("kubectl-instance".to_owned()).chain(cluster.iter().cloned());
    let matches = command.try_get_matches_from(argv).ok()?;
    let args = ClusterArgs::from_arg_matches(&matches).ok()?;
    args.client().await.ok()
}
