//! The work queue's metrics, under client-go's names as controller-runtime serves them
//! (`workqueue_*{name, controller}`): adds, retries, how long objects wait and how long their
//! reconciles take; depth, unfinished work and the longest running reconcile are computed at
//! each scrape from what is queued and running.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric},
    metrics::{
        MetricType,
        counter::Counter,
        family::Family,
        gauge::ConstGauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

/// The labels of a queue's series: controller-runtime names the queue after its controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue's name (the controller's).
    pub name: String,
    /// The controller's name.
    pub controller: String,
}

fn labels(controller: &str) -> QueueLabels {
    QueueLabels {
        name: controller.to_owned(),
        controller: controller.to_owned(),
    }
}

/// client-go's buckets: 10 ns to 1000 s.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// A running reconcile's place in its queue's bookkeeping.
pub(crate) struct Work {
    id: u64,
}

#[derive(Default)]
struct Queue {
    /// Objects waiting (by a hash of their key: every object waits at once after the first
    /// list and at each resync, and 8 bytes a key keep that small), each with when it is (or
    /// was) due.
    pending: HashMap<u64, Instant>,
    /// Reconciles running, by id, with their start.
    running: HashMap<u64, Instant>,
    next: u64,
}

type Histograms = Family<QueueLabels, Histogram, fn() -> Histogram>;

/// Every controller's queue.
#[derive(Debug)]
pub(crate) struct Queues {
    state: Mutex<HashMap<String, Queue>>,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    waits: Histograms,
    work: Histograms,
    hasher: std::hash::RandomState,
    /// Woken each time an object leaves a queue (to a worker, or deleted before its turn):
    /// what waits behind new work looks at the depth again then, instead of at intervals.
    left: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("pending", &self.pending.len())
            .field("running", &self.running.len())
            .finish()
    }
}

impl Default for Queues {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            adds: Family::default(),
            retries: Family::default(),
            waits: Family::new_with_constructor(queue_histogram as fn() -> Histogram),
            work: Family::new_with_constructor(queue_histogram as fn() -> Histogram),
            hasher: std::hash::RandomState::new(),
            left: Arc::default(),
        }
    }
}

/// Registers the queue's metrics.
pub(super) fn register(registry: &mut Registry, queues: &Arc<Queues>) {
    registry.register(
        "workqueue_adds",
        "Total number of adds handled by workqueue",
        queues.adds.clone(),
    );
    registry.register(
        "workqueue_retries",
        "Total number of retries handled by workqueue",
        queues.retries.clone(),
    );
    registry.register(
        "workqueue_queue_duration_seconds",
        "How long in seconds an item stays in workqueue before being requested",
        queues.waits.clone(),
    );
    registry.register(
        "workqueue_work_duration_seconds",
        "How long in seconds processing an item from workqueue takes",
        queues.work.clone(),
    );
    registry.register_collector(Box::new(Gauges(queues.clone())));
}

impl Queues {
    fn state(&self) -> MutexGuard<'_, HashMap<String, Queue>> {
        // The bookkeeping holds no invariant a panicking holder could break half-way.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `key` is wanted at `due`. An object already waiting is counted once, as client-go's
    /// queue counts it, and becomes due at the earlier time.
    pub(super) fn add(&self, controller: &str, key: &str, due: Instant) {
        let mut state = self.state();
        let queue = state.entry(controller.to_owned()).or_default();
        let key = self.hash(key);
        let added = match queue.pending.get_mut(&key) {
            None => {
                queue.pending.insert(key, due);
                true
            }
            Some(at) if *at > due => {
                *at = due;
                true
            }
            Some(_) => false,
        };
        if added {
            self.adds.get_or_create(&labels(controller)).inc();
        }
    }

    /// Serves the controller's queue series from zero.
    pub(super) fn started(&self, controller: &str) {
        let labels = labels(controller);
        self.adds.get_or_create(&labels).inc_by(0);
        self.retries.get_or_create(&labels).inc_by(0);
        self.state().entry(controller.to_owned()).or_default();
    }

    /// An object's key as the queue holds it. Two keys of one hash would count as one object
    /// in the metrics, never in the controller.
    fn hash(&self, key: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, key)
    }

    pub(super) fn retried(&self, controller: &str) {
        self.retries.get_or_create(&labels(controller)).inc();
    }

    /// How many objects wait for `controller` and are due now (the queue's depth).
    pub(super) fn depth(&self, controller: &str) -> usize {
        let now = Instant::now();
        let state = self.state();
        let Some(queue) = state.get(controller) else {
            return 0;
        };
        queue.pending.values().filter(|due| **due <= now).count()
    }

    /// `key` leaves the queue for a worker at `now`.
    pub(super) fn start(&self, controller: &str, key: &str, now: Instant) -> Work {
        let mut state = self.state();
        let queue = state.entry(controller.to_owned()).or_default();
        let waited = queue
            .pending
            .remove(&self.hash(key))
            .map_or(0.0, |due| now.saturating_duration_since(due).as_secs_f64());
        self.waits
            .get_or_create(&labels(controller))
            .observe(waited);
        let id = queue.next;
        queue.next = queue.next.wrapping_add(1);
        queue.running.insert(id, now);
        self.left.notify_waiters();
        Work { id }
    }

    /// The reconcile of `work` ended after `elapsed` seconds.
    pub(super) fn done(&self, controller: &str, work: &Work, elapsed: f64) {
        if let Some(queue) = self.state().get_mut(controller) {
            queue.running.remove(&work.id);
        }
        self.work
            .get_or_create(&labels(controller))
            .observe(elapsed);
    }

    /// `key` is gone (deleted before its turn): it no longer waits.
    pub(super) fn forget(&self, controller: &str, key: &str) {
        if let Some(queue) = self.state().get_mut(controller) {
            queue.pending.remove(&self.hash(key));
        }
        self.left.notify_waiters();
    }

    /// Woken each time an object leaves a queue.
    pub(super) fn left(&self) -> Arc<tokio::sync::Notify> {
        self.left.clone()
    }
}

/// Depth, unfinished work and the longest running reconcile, computed at each scrape.
#[derive(Debug)]
struct Gauges(Arc<Queues>);

impl Collector for Gauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let mut rows: Vec<(QueueLabels, i64, f64, f64)> = Vec::new();
        for (controller, queue) in self.0.state().iter() {
            let depth = queue.pending.values().filter(|due| **due <= now).count();
            let running = queue
                .running
                .values()
                .map(|start| now.saturating_duration_since(*start).as_secs_f64());
            let (unfinished, longest) = running.fold((0.0, 0.0), |(sum, max): (f64, f64), s| {
                (sum + s, max.max(s))
            });
            rows.push((
                labels(controller),
                i64::try_from(depth).unwrap_or(i64::MAX),
                unfinished,
                longest,
            ));
        }
        rows.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let mut gauge = encoder.encode_descriptor(
            "workqueue_depth",
            "Current depth of workqueue",
            None,
            MetricType::Gauge,
        )?;
        for (labels, depth, _, _) in &rows {
            ConstGauge::new(*depth).encode(gauge.encode_family(labels)?)?;
        }
        let mut gauge = encoder.encode_descriptor(
            "workqueue_unfinished_work_seconds",
            concat!(
                "How many seconds of work has done that is in progress and hasn't been observed ",
                "by work_duration. Large values indicate stuck threads. One can deduce the number ",
                "of stuck threads by observing the rate at which this increases."
            ),
            None,
            MetricType::Gauge,
        )?;
        for (labels, _, unfinished, _) in &rows {
            ConstGauge::new(*unfinished).encode(gauge.encode_family(labels)?)?;
        }
        let mut gauge = encoder.encode_descriptor(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            None,
            MetricType::Gauge,
        )?;
        for (labels, _, _, longest) in &rows {
            ConstGauge::new(*longest).encode(gauge.encode_family(labels)?)?;
        }
        Ok(())
    }
}
