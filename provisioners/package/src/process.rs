//! Everything one pakket-package replica runs while it leads: the
//! PackageRepository and PackageInfo controllers, the ClusterPackage and Package controllers, and
//! the runtime's controller for the package provisioner.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::source::SourceOptions;

use crate::charts::ChartLocator;
use crate::helm::Helm;
use crate::info_controller;
use crate::package_controller::{self, PackageContext};
use crate::provisioner::PackageProvisioner;
use crate::repository_controller;
use crate::secret_values::SecretValues;
use pakket_packages_api::{ClusterPackage, Package};
use pakket_packages_client::repository::RepositoryClient;

/// How a replica is set up.
pub struct Options {
    /// The provisioner's id.
    pub id: String,
    /// The ProvisionerClass packages' Instances name.
    pub class: String,
    /// Sources (extra roots) for repository reads.
    pub sources: SourceOptions,
    /// Whether repositories at internal addresses may be read.
    pub allow_internal_addresses: bool,
    /// The helm binary; without it, Helm packages are refused.
    pub helm: Option<std::path::PathBuf>,
    /// Where repository credentials are read.
    pub namespace: String,
    /// How often an unpinned package looks for a newer version.
    pub update_interval: Duration,
    /// How often a PackageInfo is read again.
    pub resync: Duration,
    /// Only objects with these labels (tests).
    pub selector: Option<String>,
    /// The runtime's options.
    pub runtime: RunOptions,
}

/// Runs until the process ends (or the caller drops the future).
pub async fn run(
    client: Client,
    options: Options,
) -> Result<(), pakket_runtime::kernel::store::StoreError> {
    let info = Arc::new(info_controller::Context {
        client: client.clone(),
        repositories: RepositoryClient::new(options.sources, options.allow_internal_addresses),
        namespace: options.namespace,
        resync: options.resync,
    });
    let secret_values = Arc::new(SecretValues::default());
    let packages = Arc::new(PackageContext {
        info: Arc::clone(&info),
        class: options.class,
        update_interval: options.update_interval,
        record_key: options.runtime.record_key.clone(),
        charts: ChartLocator::default(),
        secret_values: Arc::clone(&secret_values),
        recorder: pakket_runtime::kernel::controller::recorder(
            client.clone(),
            crate::package_controller::MANAGER,
        ),
    });
    let provisioner =
        PackageProvisioner::new(options.id, options.helm.map(Helm::new), secret_values);
    let selector = options.selector;
    tokio::select! {
        () = repository_controller::run(Arc::clone(&info), selector.clone()) => Ok(()),
        () = info_controller::run(info, selector.clone()) => Ok(()),
        () = package_controller::run::<ClusterPackage>(Arc::clone(&packages), selector.clone()) => Ok(()),
        () = package_controller::run::<Package>(packages, selector) => Ok(()),
        result = controller::run_with(client, provisioner, options.runtime) => result,
    }
}
