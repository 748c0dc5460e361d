//! Prometheus metrics in OpenMetrics format, under the names controller-runtime gives them
//! (`controller_runtime_reconcile_total`, `workqueue_depth`, `process_cpu_seconds_total`, ...),
//! so that dashboards, ServiceMonitors and alerts written for Kubebuilder operators read a
//! kopgen operator unchanged. kube-runtime keeps its queue to itself, so the queue is measured
//! from outside: an object is queued when a watch or a requeue asks for it (due at once, or
//! after its delay) and leaves the queue when its reconcile starts.
//!
//! The kopgen metrics that have no controller-runtime counterpart keep the operator's prefix:
//! `<prefix>_reconcile_errors_by_kind_total{controller, error}`, the size of each cache
//! `<prefix>_cache_objects{controller, kind, cache}` (controller-runtime#3182 asks for it),
//! and with `--shards`, the ranges this replica holds, `<prefix>_shard_range{range}`, and how
//! many buckets, `<prefix>_shard_buckets`.

mod process;
mod queue;

use std::{sync::Arc, time::Instant};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use queue::Queues;

/// How the work queue's metrics name an object: `namespace/name`, or `name`.
pub(crate) fn queue_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// The labels of a controller's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller's name.
    pub controller: String,
}

/// The labels of `controller_runtime_reconcile_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// The controller's name.
    pub controller: String,
    /// `success`, `error`, `requeue_after` (the controller asked to run again at a time).
    pub result: String,
}

/// The labels of a controller's failures by class.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller's name.
    pub controller: String,
    /// The error's class ([`crate::Error::metric_label`]).
    pub error: String,
}

/// The labels of a cache's size.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CacheLabels {
    /// The controller whose cache it is.
    pub controller: String,
    /// The kind of its objects.
    pub kind: String,
    /// `objects` (the kind the controller reconciles), `children` (labelled as this
    /// manager's) or `names` (the other objects of a child's kind, names only).
    pub cache: String,
}

/// The labels of a held range of the hash space.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RangeLabels {
    /// `0x…-0x…`, start inclusive, end exclusive, as the API server's `shardRange` reads them.
    pub range: String,
}

/// How a reconcile ended, for `controller_runtime_reconcile_total{result}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done; the object is reconciled again when it (or a child) changes, or at the resync.
    Success,
    /// Done, and the controller asked to run again after a delay it computed.
    RequeueAfter,
    /// Failed; the error policy decides when it runs again.
    Error,
}

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

/// client-go's help text of `leader_election_master_status`.
const LEADER_HELP: &str = concat!(
    "Gauge of if the reporting system is master of the relevant lease, ",
    "0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease."
);

/// The manager's metrics, served at `/metrics`.
pub struct Metrics {
    /// Where every metric is registered; a project may register its own here.
    pub registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    error_kinds: Family<ErrorLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    leader: Family<LeaderLabels, Gauge>,
    cache_objects: Family<CacheLabels, Gauge>,
    shard_ranges: Family<RangeLabels, Gauge>,
    shard_buckets: Gauge,
    /// Served with or without webhooks (always 0 without), as dashboards expect the series.
    #[cfg_attr(not(feature = "webhooks"), allow(dead_code))]
    webhook_panics: Counter,
    queues: Arc<Queues>,
}

/// The labels of `leader_election_master_status`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaderLabels {
    /// The Lease's name.
    pub name: String,
}

impl Default for Metrics {
    /// Metrics whose one kopgen-specific series is prefixed `kopgen_`.
    fn default() -> Self {
        Self::new("kopgen")
    }
}

impl Metrics {
    /// The metrics, with `prefix` (see [`crate::Identity::metrics_prefix`]) on the one series
    /// controller-runtime has no name for.
    pub fn new(prefix: &str) -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ControllerLabels, Counter>::default();
        let terminal_errors = Family::<ControllerLabels, Counter>::default();
        let panics = Family::<ControllerLabels, Counter>::default();
        let error_kinds = Family::<ErrorLabels, Counter>::default();
        let reconcile_time = Family::<ControllerLabels, Histogram>::new_with_constructor(
            reconcile_histogram as fn() -> Histogram,
        );
        let max_concurrent = Family::<ControllerLabels, Gauge>::default();
        let active_workers = Family::<ControllerLabels, Gauge>::default();
        let leader = Family::<LeaderLabels, Gauge>::default();
        let webhook_panics = Counter::default();
        let cache_objects = Family::<CacheLabels, Gauge>::default();
        let shard_ranges = Family::<RangeLabels, Gauge>::default();
        let shard_buckets = Gauge::default();
        let queues = Arc::new(Queues::default());
        let c = &mut registry;
        c.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        c.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        c.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            terminal_errors.clone(),
        );
        c.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            panics.clone(),
        );
        c.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time.clone(),
        );
        c.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        c.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        c.register("leader_election_master_status", LEADER_HELP, leader.clone());
        c.register(
            "controller_runtime_webhook_panics",
            "Total number of webhook panics",
            webhook_panics.clone(),
        );
        queue::register(c, &queues);
        c.register_collector(Box::new(process::Process));
        let own = registry.sub_registry_with_prefix(prefix);
        own.register(
            "reconcile_errors_by_kind",
            "Reconciliations that failed, by error kind",
            error_kinds.clone(),
        );
        own.register(
            "cache_objects",
            "Objects in each cache of each controller",
            cache_objects.clone(),
        );
        own.register(
            "shard_range",
            "1 for each range of the hash space this replica holds (--shards)",
            shard_ranges.clone(),
        );
        own.register(
            "shard_buckets",
            "How many of the hash space's 60 buckets this replica holds (--shards)",
            shard_buckets.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            terminal_errors,
            panics,
            error_kinds,
            reconcile_time,
            max_concurrent,
            active_workers,
            leader,
            cache_objects,
            shard_ranges,
            shard_buckets,
            webhook_panics,
            queues,
        }
    }

    /// How many objects wait for `controller`'s workers now (`workqueue_depth`).
    pub(crate) fn depth(&self, controller: &str) -> usize {
        self.queues.depth(controller)
    }

    /// Woken each time an object leaves a queue, any controller's: the depth may be lower.
    pub(crate) fn queue_left(&self) -> Arc<tokio::sync::Notify> {
        self.queues.left()
    }

    /// A webhook handler panicked (the API server was answered 500).
    #[cfg(feature = "webhooks")]
    pub(crate) fn webhook_panicked(&self) {
        self.webhook_panics.inc();
    }

    /// Records a controller's worker limit, and serves its series from zero, as
    /// controller-runtime does, so that a dashboard's rate of errors is 0 rather than empty.
    pub(crate) fn controller_started(&self, controller: &str, max_concurrent: u16) {
        let labels = labels(controller);
        self.max_concurrent
            .get_or_create(&labels)
            .set(i64::from(max_concurrent));
        self.active_workers.get_or_create(&labels).inc_by(0);
        for counter in [&self.errors, &self.terminal_errors, &self.panics] {
            counter.get_or_create(&labels).inc_by(0);
        }
        for result in ["success", "error", "requeue_after"] {
            let labels = ResultLabels {
                controller: controller.to_owned(),
                result: result.to_owned(),
            };
            self.reconciles.get_or_create(&labels).inc_by(0);
        }
        self.queues.started(controller);
    }

    /// A watch (or an owned child's change) asked for the object `key` now.
    pub(crate) fn queued(&self, controller: &str, key: &str) {
        self.queues.add(controller, key, Instant::now());
    }

    /// The error policy or the controller asked for `key` again at `due`; `retry`: after a
    /// failure.
    pub(crate) fn requeued(&self, controller: &str, key: &str, due: Instant, retry: bool) {
        self.queues.add(controller, key, due);
        if retry {
            self.queues.retried(controller);
        }
    }

    /// `key` is gone (deleted before its turn): it no longer waits.
    pub(crate) fn forget(&self, controller: &str, key: &str) {
        self.queues.forget(controller, key);
    }

    /// A reconcile of `key` starts: it leaves the queue and takes a worker until the returned
    /// guard is finished (or dropped, which counts as an error).
    pub(crate) fn reconcile_started(&self, controller: &str, key: &str) -> ReconcileTimer<'_> {
        let labels = labels(controller);
        self.active_workers.get_or_create(&labels).inc();
        let work = self.queues.start(controller, key, Instant::now());
        ReconcileTimer {
            metrics: self,
            labels,
            work,
            start: Instant::now(),
            outcome: Outcome::Error,
        }
    }

    /// Counts a failed reconcile of `controller` by the error's class; `terminal`: it is not
    /// retried until the object changes.
    pub fn reconcile_failed(&self, controller: &str, error: &crate::Error, terminal: bool) {
        let labels = labels(controller);
        self.errors.get_or_create(&labels).inc();
        if terminal {
            self.terminal_errors.get_or_create(&labels).inc();
        }
        if matches!(error, crate::Error::Panicked(_)) {
            self.panics.get_or_create(&labels).inc();
        }
        self.error_kinds
            .get_or_create(&ErrorLabels {
                controller: controller.to_owned(),
                error: error.metric_label().to_owned(),
            })
            .inc();
    }

    /// Whether this replica holds the Lease `name`.
    pub(crate) fn leading(&self, name: &str, leading: bool) {
        self.leader
            .get_or_create(&LeaderLabels {
                name: name.to_owned(),
            })
            .set(i64::from(leading));
    }

    /// `controller`'s cache `cache` of `kind` holds `objects` objects.
    pub(crate) fn cached(&self, controller: &str, kind: &str, cache: &str, objects: usize) {
        let labels = CacheLabels {
            controller: controller.to_owned(),
            kind: kind.to_owned(),
            cache: cache.to_owned(),
        };
        let objects = i64::try_from(objects).unwrap_or(i64::MAX);
        self.cache_objects.get_or_create(&labels).set(objects);
    }

    /// This replica holds `buckets` buckets, in the ranges named `ranges` (`0x…-0x…`).
    pub(crate) fn shards(&self, buckets: usize, ranges: impl IntoIterator<Item = String>) {
        self.shard_buckets
            .set(i64::try_from(buckets).unwrap_or(i64::MAX));
        self.shard_ranges.clear();
        for range in ranges {
            self.shard_ranges
                .get_or_create(&RangeLabels { range })
                .set(1);
        }
    }

    /// The registry in OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

fn labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_owned(),
    }
}

/// A reconcile in progress: its worker, its time, and how it ended.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    labels: ControllerLabels,
    work: queue::Work,
    start: Instant,
    outcome: Outcome,
}

impl ReconcileTimer<'_> {
    /// How the reconcile ended (an error unless said otherwise).
    pub fn finish(mut self, outcome: Outcome) {
        self.outcome = outcome;
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        let metrics = self.metrics;
        let elapsed = self.start.elapsed().as_secs_f64();
        metrics.active_workers.get_or_create(&self.labels).dec();
        metrics
            .reconcile_time
            .get_or_create(&self.labels)
            .observe(elapsed);
        metrics
            .queues
            .done(&self.labels.controller, &self.work, elapsed);
        let result = match self.outcome {
            Outcome::Success => "success",
            Outcome::RequeueAfter => "requeue_after",
            Outcome::Error => "error",
        };
        metrics
            .reconciles
            .get_or_create(&ResultLabels {
                controller: self.labels.controller.clone(),
                result: result.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests;
