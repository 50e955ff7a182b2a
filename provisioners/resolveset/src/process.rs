//! The controller and the API in one process, as the binary and the
//! tests start them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use pakket_runtime::kernel::content::{ImageSources, UnpackOptions};
use pakket_runtime::kernel::controller::StoreGc;
use pakket_runtime::kernel::leader::LeaderState;
use pakket_runtime::kernel::serve::Metrics;
use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::kernel::store::Store;

use crate::api::auth::Authenticator;
use crate::api::listen::{self, Transport};
use crate::api::{self, ApiState};
use crate::catalogs::controller::{self, Context};
use crate::catalogs::serving::Catalogs;
use crate::catalogs::source::Fetcher;
use crate::catalogs::store_gc::{self, Loading};
use crate::inputs::input_controller::{self, InputContext};
use crate::operators::operator_controller::{self, OperatorContext};
use crate::operators::request_controller::{self, RequestContext};

/// Bytes one catalog file may unpack to: the community catalog is one
/// 6.6 MB file, past the runtime's 4 MiB default for manifests.
pub const DEFAULT_MAX_CATALOG_FILE: u64 = 64 << 20;

/// How long a "yes" for a token is reused.
const AUTH_TTL: Duration = Duration::from_secs(10);

/// What the process is started with.
pub struct Options {
    /// The content store's folder.
    pub store: PathBuf,
    /// Timeouts, extra CA roots, pull-secret namespace.
    pub sources: SourceOptions,
    /// Whether `https` sources may reach loopback, private and
    /// cluster-internal addresses.
    pub allow_internal_addresses: bool,
    /// Most bytes one catalog file may hold.
    pub max_catalog_file: u64,
    /// Where the API listens; port 0 picks a free one.
    pub api_address: SocketAddr,
    /// HTTPS, or plain HTTP on loopback.
    pub transport: Transport,
    /// Whether this replica writes status; `None`: always.
    pub leader: Option<LeaderState>,
    /// Only Catalogs whose labels match (`key=value,…`); `None`: all.
    pub selector: Option<String>,
    /// Reconcile metrics.
    pub metrics: Arc<Metrics>,
    /// When old catalog content leaves the store.
    pub store_gc: StoreGc,
    /// Where the Input controller writes the resolved set.
    pub set: SetOptions,
    /// The key of the webhooks' requester records: the Input controller
    /// verifies who wrote each Input with it, and the Operator controller
    /// seals an Operator's author on the Input it writes. `None`: no
    /// record is trusted, so nothing is installed on anyone's behalf.
    pub record_key: Option<pakket_api::RecordKey>,
}

/// Where the resolved set goes: its ConfigMaps' namespace, the resolveset
/// Instance's name, and the ProvisionerClass that installs it.
#[derive(Clone, Debug)]
pub struct SetOptions {
    /// The namespace of the set's ConfigMaps (the process's own).
    pub namespace: String,
    /// The resolveset Instance.
    pub instance: String,
    /// Its ProvisionerClass.
    pub class: String,
}

impl Default for SetOptions {
    /// `pakket-system`, Instance `resolveset` of class `resolveset`.
    fn default() -> Self {
        Self {
            namespace: "pakket-system".into(),
            instance: "resolveset".into(),
            class: "resolveset".into(),
        }
    }
}

/// A started process.
pub struct Running {
    /// Where the API answers.
    pub api_address: SocketAddr,
    /// What it serves.
    pub catalogs: Arc<Catalogs>,
    /// Reconcile every Catalog again (a new leader writes every status).
    pub resync: futures::channel::mpsc::UnboundedSender<()>,
    /// What `/metrics` serves, the Catalog gauges included.
    pub metrics: Arc<Metrics>,
}

/// How Catalogs are fetched: the runtime's content fetchers, bounded by
/// the catalog file limit and this process's reach.
fn catalog_unpack_options(options: &Options) -> UnpackOptions {
    let mut unpack = UnpackOptions::default();
    unpack.limits.max_file_size = options.max_catalog_file;
    unpack.limits.max_total_size = unpack.limits.max_total_size.max(options.max_catalog_file);
    unpack.allow_internal_addresses = options.allow_internal_addresses;
    unpack.internal_addresses_advice = Some(
        "pakket-resolveset does not fetch Catalogs from internal addresses unless its admin \
         starts it with --allow-internal-addresses; serve the catalog from a public address, \
         an image or a ConfigMap"
            .into(),
    );
    // A Catalog's ConfigMap is marked as catalog content, not as a Bundle's.
    unpack.content_label = crate::catalogs::source::CATALOG_CONTENT_LABEL;
    unpack
}

/// Starts the Catalog controller and the API on the calling runtime.
pub async fn start(client: Client, options: Options) -> anyhow::Result<Running> {
    let store = Arc::new(Store::open(&options.store)?);
    let unpack = catalog_unpack_options(&options);
    let catalogs = Arc::new(Catalogs::new());
    let loading = Arc::new(Loading::default());
    tokio::spawn(store_gc::run(
        Arc::clone(&store),
        Arc::clone(&catalogs),
        Arc::clone(&loading),
        Arc::clone(&options.metrics),
        options.store_gc,
    ));
    if let Transport::Tls { cert, .. } = &options.transport {
        options
            .metrics
            .register_collector(pakket_runtime::kernel::serve::CertificateExpiry(
                Arc::clone(cert),
            ));
    }
    let metrics = Arc::clone(&options.metrics);
    let context = Arc::new(Context {
        client: client.clone(),
        fetcher: Fetcher {
            client: client.clone(),
            store,
            sources: ImageSources::new(options.sources),
            options: unpack,
        },
        catalogs: Arc::clone(&catalogs),
        loading,
        recorder: pakket_runtime::kernel::controller::recorder(client.clone(), controller::MANAGER),
        leader: options.leader,
        metrics: options.metrics,
    });
    let (resync, requests) = futures::channel::mpsc::unbounded();
    let inputs = Arc::new(InputContext {
        client: client.clone(),
        catalogs: Arc::clone(&catalogs),
        leader: context.leader.clone(),
        recorder: context.recorder.clone(),
        namespace: options.set.namespace,
        instance: options.set.instance.clone(),
        class: options.set.class,
        record_key: options.record_key.clone(),
        cluster_version: Default::default(),
        generated_labels: equality_labels(options.selector.as_deref()),
    });
    tokio::spawn(input_controller::run(inputs, options.selector.clone()));
    let operators = Arc::new(OperatorContext {
        client: client.clone(),
        catalogs: Arc::clone(&catalogs),
        leader: context.leader.clone(),
        set_instance: options.set.instance,
        record_key: options.record_key.clone(),
    });
    tokio::spawn(operator_controller::run(
        operators,
        options.selector.clone(),
    ));
    let requests_context = Arc::new(RequestContext {
        client: client.clone(),
        leader: context.leader.clone(),
        record_key: options.record_key.clone(),
        selector: options.selector.clone(),
    });
    tokio::spawn(request_controller::run(
        requests_context,
        options.selector.clone(),
    ));
    tokio::spawn(controller::run(context, options.selector, requests));

    let auth = options
        .transport
        .authenticates()
        .then(|| Arc::new(Authenticator::new(client, AUTH_TTL)));
    let router = api::router(ApiState {
        catalogs: Arc::clone(&catalogs),
        auth,
    });
    let listener = tokio::net::TcpListener::bind(options.api_address).await?;
    let api_address = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(error) = listen::serve(listener, router, options.transport).await {
            tracing::error!(%error, "the resolver API stopped");
        }
    });
    Ok(Running {
        api_address,
        catalogs,
        resync,
        metrics,
    })
}

/// The `key=value` terms of a label selector: what an object must carry
/// for a process limited by it to see the object.
pub(crate) fn equality_labels(
    selector: Option<&str>,
) -> std::collections::BTreeMap<String, String> {
    selector
        .unwrap_or_default()
        .split(',')
        .filter_map(|term| {
            let (key, value) = term.split_once('=')?;
            let key = key.trim().trim_end_matches('!');
            (!key.is_empty() && !term.contains("!=")).then(|| {
                (
                    key.to_owned(),
                    value.trim_start_matches('=').trim().to_owned(),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_equality_terms_become_labels() {
        let labels = super::equality_labels(Some("a=b, c==d,e!=f,g in (x),h"));
        assert_eq!(
            labels,
            [
                ("a".to_owned(), "b".to_owned()),
                ("c".to_owned(), "d".to_owned())
            ]
            .into()
        );
        assert!(super::equality_labels(None).is_empty());
    }
}
