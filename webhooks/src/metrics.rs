//! The webhook's Prometheus metrics, served at `/metrics` (each one is
//! described in `docs/metrics.md`).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::tls::ReloadingCert;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdmissionLabels {
    /// `validate` or `mutate`.
    webhook: &'static str,
    /// `bundles`, `instances`, `instances/status`, `configmaps`, `other`.
    resource: &'static str,
    /// `allowed`, `denied`, `error`.
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    /// `cache` or `list`.
    source: &'static str,
}

/// Counters and histograms, shared by the handlers, the authorizer and the
/// certificate watcher.
pub struct Metrics {
    registry: Registry,
    admissions: Family<AdmissionLabels, Counter>,
    duration: Family<WebhookLabels, Histogram>,
    access_reviews: Family<ResultLabels, Counter>,
    certificate_reloads: Family<ResultLabels, Counter>,
    provided_lookups: Family<SourceLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let admissions = Family::<AdmissionLabels, Counter>::default();
        registry.register(
            "pakket_webhook_admissions",
            "Admission reviews answered, by webhook, resource and result",
            admissions.clone(),
        );
        // 50 µs to ~1.6 s: a cached answer takes microseconds, a review
        // that waits on the apiserver milliseconds.
        let duration = Family::<WebhookLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
        });
        registry.register(
            "pakket_webhook_admission_duration_seconds",
            "Time from receiving an admission review to answering it",
            duration.clone(),
        );
        let access_reviews = Family::<ResultLabels, Counter>::default();
        registry.register(
            "pakket_webhook_subject_access_reviews",
            "Permission checks: cached, allowed, denied or error",
            access_reviews.clone(),
        );
        let certificate_reloads = Family::<ResultLabels, Counter>::default();
        registry.register(
            "pakket_webhook_certificate_reloads",
            "Serving certificate reloads after the files changed: ok or error",
            certificate_reloads.clone(),
        );
        let provided_lookups = Family::<SourceLabels, Counter>::default();
        registry.register(
            "pakket_webhook_provided_lookups",
            "Instance deletions' look-ups of the CRDs and APIServices the Instance installed: \
             from the watch cache, or listed (until the cache has synced)",
            provided_lookups.clone(),
        );
        Self {
            registry,
            admissions,
            duration,
            access_reviews,
            certificate_reloads,
            provided_lookups,
        }
    }

    /// Shows `pakket_serving_certificate_expiration_timestamp_seconds`:
    /// when the certificate `cert` now serves expires, read at each scrape.
    pub fn show_certificate_expiry(&mut self, cert: Arc<ReloadingCert>) {
        self.registry.register_collector(Box::new(
            pakket_runtime::kernel::serve::CertificateExpiry(cert),
        ));
    }

    /// Counts one answered review.
    pub fn admitted(
        &self,
        webhook: &'static str,
        resource: &'static str,
        result: &'static str,
        took: Duration,
    ) {
        self.admissions
            .get_or_create(&AdmissionLabels {
                webhook,
                resource,
                result,
            })
            .inc();
        self.duration
            .get_or_create(&WebhookLabels { webhook })
            .observe(took.as_secs_f64());
    }

    /// How many reviews of `resource` (a [`crate::review::Target`] label)
    /// `webhook` has answered, whatever the answer. Reads without adding a
    /// series, so `/metrics` shows only what happened.
    pub fn answered(&self, webhook: &'static str, resource: &'static str) -> u64 {
        ["allowed", "denied", "error"]
            .into_iter()
            .filter_map(|result| {
                self.admissions
                    .get(&AdmissionLabels {
                        webhook,
                        resource,
                        result,
                    })
                    .map(|counter| counter.get())
            })
            .sum()
    }

    /// Counts one permission check by its outcome.
    pub fn access_reviewed(&self, result: &'static str) {
        self.access_reviews
            .get_or_create(&ResultLabels { result })
            .inc();
    }

    /// Counts one look-up of what an Instance provides, by `source`
    /// (`cache` or `list`).
    pub fn provided_looked_up(&self, source: &'static str) {
        self.provided_lookups
            .get_or_create(&SourceLabels { source })
            .inc();
    }

    /// How many look-ups of what an Instance provides came from `source`
    /// (`cache` or `list`). Reads without adding a series.
    pub fn provided_lookups(&self, source: &'static str) -> u64 {
        self.provided_lookups
            .get(&SourceLabels { source })
            .map_or(0, |counter| counter.get())
    }

    /// Counts one certificate reload by its outcome.
    pub fn certificate_reloaded(&self, result: &'static str) {
        self.certificate_reloads
            .get_or_create(&ResultLabels { result })
            .inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_named_in_the_text() {
        let metrics = Metrics::new();
        metrics.admitted(
            "validate",
            "instances",
            "denied",
            Duration::from_micros(300),
        );
        metrics.access_reviewed("cached");
        metrics.certificate_reloaded("ok");
        metrics.provided_looked_up("cache");
        assert_eq!(metrics.provided_lookups("cache"), 1);
        assert_eq!(metrics.provided_lookups("list"), 0);
        assert_eq!(metrics.answered("validate", "instances"), 1);
        assert_eq!(metrics.answered("mutate", "instances"), 0);
        let text = metrics.encode();
        for expected in [
            r#"pakket_webhook_admissions_total{webhook="validate",resource="instances",result="denied"} 1"#,
            r#"pakket_webhook_admission_duration_seconds_count{webhook="validate"} 1"#,
            r#"pakket_webhook_subject_access_reviews_total{result="cached"} 1"#,
            r#"pakket_webhook_certificate_reloads_total{result="ok"} 1"#,
            r#"pakket_webhook_provided_lookups_total{source="cache"} 1"#,
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }
}
