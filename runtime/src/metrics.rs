//! Prometheus metrics in OpenMetrics format: how often each controller reconciles, how often it
//! fails (by error kind) and how long reconciles take.

use std::time::Instant;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

/// The labels of a controller's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller's name.
    pub controller: String,
}

/// The labels of a controller's failures.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller's name.
    pub controller: String,
    /// The error's class ([`crate::Error::metric_label`]).
    pub error: String,
}

/// The manager's metrics, served at `/metrics`.
pub struct Metrics {
    /// Where every metric is registered; a project may register its own here.
    pub registry: Registry,
    /// Reconciles started, per controller.
    pub reconciles: Family<ControllerLabels, Counter>,
    /// Reconciles failed, per controller and error class.
    pub failures: Family<ErrorLabels, Counter>,
    /// How long reconciles took, per controller.
    pub duration: Family<ControllerLabels, Histogram>,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

impl Default for Metrics {
    /// Metrics named `kopgen_*`.
    fn default() -> Self {
        Self::new("kopgen")
    }
}

impl Metrics {
    /// Metrics whose names start with `prefix` (see [`crate::Identity::metrics_prefix`]).
    pub fn new(prefix: &str) -> Self {
        let mut registry = Registry::with_prefix(prefix);
        let reconciles = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        let duration = Family::<ControllerLabels, Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        registry.register("reconciles", "Reconciliations started", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconciliations that failed, by error kind",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time a reconciliation took",
            duration.clone(),
        );
        Self {
            registry,
            reconciles,
            failures,
            duration,
        }
    }
}

impl Metrics {
    /// Counts a reconcile of `controller` and returns a guard that records its duration when
    /// dropped.
    pub fn reconcile_started(&self, controller: &str) -> ReconcileTimer<'_> {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.reconciles.get_or_create(&labels).inc();
        ReconcileTimer {
            metrics: self,
            labels,
            start: Instant::now(),
        }
    }

    /// Counts a failed reconcile of `controller`, by the error's class.
    pub fn reconcile_failed(&self, controller: &str, error: &crate::Error) {
        self.failures
            .get_or_create(&ErrorLabels {
                controller: controller.to_owned(),
                error: error.metric_label().to_owned(),
            })
            .inc();
    }

    /// The registry in OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Records a reconcile's duration when dropped.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    labels: ControllerLabels,
    start: Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics
            .duration
            .get_or_create(&self.labels)
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_are_counted_and_timed() {
        let metrics = Metrics::default();
        drop(metrics.reconcile_started("blog"));
        metrics.reconcile_failed("blog", &crate::Error::MissingObjectKey("metadata.name"));
        let text = metrics.encode().expect("metrics encode");
        let expected = [
            r#"_reconciles_total{controller="blog"} 1"#,
            r#"_reconcile_errors_total{controller="blog",error="missing_object_key"} 1"#,
            r#"_reconcile_duration_seconds_count{controller="blog"} 1"#,
        ];
        for line in expected {
            assert!(text.contains(line), "{line} missing from {text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
