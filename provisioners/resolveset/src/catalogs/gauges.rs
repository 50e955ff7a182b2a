//! The Catalog gauges, computed at each scrape from what this replica
//! already holds: the Catalog controller's cache (every Catalog and the
//! status the leader wrote) and the content its own resolver answers from.
//!
//! - `pakket_catalog_serving{catalog}`: 1 while this replica's resolver
//!   answers from some content of the Catalog (maybe an older digest),
//!   0 while it answers from none; per replica, because each replica
//!   loads on its own and a client may reach any of them.
//! - `pakket_catalog_unpacked{catalog, reason}`: 1 while the newest
//!   content loaded (`Unpacked` True), 0 while it fails (the reason
//!   says why); absent before the first status is written.

use std::sync::Arc;

use kube::ResourceExt as _;
use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::catalogs::catalog::Catalog;
use crate::catalogs::condition::ConditionType;
use crate::catalogs::serving::Catalogs;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CatalogLabels {
    catalog: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnpackedLabels {
    catalog: String,
    reason: String,
}

/// One Catalog as the gauges show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The Catalog.
    pub catalog: String,
    /// Whether this replica's resolver answers from its content.
    pub serving: bool,
    /// `Unpacked`'s status is True, and its reason; `None` before a status.
    pub unpacked: Option<(bool, String)>,
}

/// What the gauges show for `catalog`, which this replica serves or not. Pure.
pub fn shown(catalog: &Catalog, serving: bool) -> Shown {
    Shown {
        catalog: catalog.name_any(),
        serving,
        unpacked: catalog
            .condition(ConditionType::Unpacked)
            .map(|condition| (condition.status == "True", condition.reason.clone())),
    }
}

/// Registered once per process (see `controller::run`).
pub struct CatalogGauges {
    /// The Catalog controller's cache.
    pub cache: Store<Catalog>,
    /// What this replica serves.
    pub catalogs: Arc<Catalogs>,
}

impl std::fmt::Debug for CatalogGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogGauges").finish_non_exhaustive()
    }
}

impl Collector for CatalogGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let served = self.catalogs.snapshot();
        let serving = Family::<CatalogLabels, Gauge>::default();
        let unpacked = Family::<UnpackedLabels, Gauge>::default();
        for catalog in self.cache.state() {
            let shown = shown(&catalog, served.digest(&catalog.name_any()).is_some());
            let labels = CatalogLabels {
                catalog: shown.catalog.clone(),
            };
            serving.get_or_create(&labels).set(i64::from(shown.serving));
            if let Some((loaded, reason)) = shown.unpacked {
                let labels = UnpackedLabels {
                    catalog: shown.catalog,
                    reason,
                };
                unpacked.get_or_create(&labels).set(i64::from(loaded));
            }
        }
        serving.encode(encoder.encode_descriptor(
            "pakket_catalog_serving",
            "1 while this replica's resolver answers from the Catalog's content, else 0",
            None,
            serving.metric_type(),
        )?)?;
        unpacked.encode(encoder.encode_descriptor(
            "pakket_catalog_unpacked",
            "1 while the Catalog's newest content loaded, 0 while it fails (by reason)",
            None,
            unpacked.metric_type(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogs::catalog::CatalogStatus;
    use crate::catalogs::condition::{self, Reason};

    fn catalog(reasons: &[Reason]) -> Catalog {
        let mut catalog: Catalog = serde_json::from_value(serde_json::json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": "community"},
            "spec": {"source": {"image": {"ref": "example.com/catalog:latest"}}},
        }))
        .unwrap();
        if !reasons.is_empty() {
            catalog.status = Some(CatalogStatus {
                conditions: reasons
                    .iter()
                    .map(|reason| {
                        condition::new(*reason, "m", Some(1), jiff::Timestamp::UNIX_EPOCH)
                    })
                    .collect(),
                ..CatalogStatus::default()
            });
        }
        catalog
    }

    #[test]
    fn serving_is_this_replicas_and_unpacked_the_status() {
        let unwritten = shown(&catalog(&[]), false);
        assert_eq!(
            (unwritten.serving, unwritten.unpacked),
            (false, None),
            "before the first status"
        );
        let loaded = shown(
            &catalog(&[Reason::ServingLatest, Reason::UnpackSucceeded]),
            true,
        );
        assert_eq!(
            (loaded.serving, loaded.unpacked),
            (true, Some((true, "UnpackSucceeded".to_owned())))
        );
        let failing = shown(
            &catalog(&[Reason::ServingPrevious, Reason::UnpackFailed]),
            true,
        );
        assert_eq!(
            failing.unpacked,
            Some((false, "UnpackFailed".to_owned())),
            "newest content fails, older still served"
        );
    }
}
