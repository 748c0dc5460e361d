use std::time::{Duration, Instant};

use super::*;

fn scrape(metrics: &Metrics) -> String {
    let text = metrics.encode().expect("metrics encode");
    assert!(text.ends_with("# EOF\n"), "{text}");
    text
}

fn assert_has(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            text.lines().any(|l| l == *line),
            "`{line}` missing from\n{text}"
        );
    }
}

#[test]
fn reconciles_are_counted_by_result_as_controller_runtime_counts_them() {
    let metrics = Metrics::new("blog_operator");
    metrics.controller_started("blog", 4);
    metrics.queued("blog", "default/a");
    metrics
        .reconcile_started("blog", "default/a")
        .finish(Outcome::Success);
    metrics.queued("blog", "default/b");
    metrics
        .reconcile_started("blog", "default/b")
        .finish(Outcome::RequeueAfter);
    metrics.queued("blog", "default/c");
    let failed = metrics.reconcile_started("blog", "default/c");
    metrics.reconcile_failed("blog", &crate::Error::Panicked("boom".into()), false);
    drop(failed);
    metrics.reconcile_failed("blog", &crate::Error::InvalidSpec("bad".into()), true);
    let text = scrape(&metrics);
    assert_has(
        &text,
        &[
            r#"controller_runtime_reconcile_total{controller="blog",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="blog",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_total{controller="blog",result="error"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="blog"} 2"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="blog"} 1"#,
            r#"controller_runtime_reconcile_panics_total{controller="blog"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="blog"} 3"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="blog"} 4"#,
            r#"controller_runtime_active_workers{controller="blog"} 0"#,
            r#"workqueue_adds_total{name="blog",controller="blog"} 3"#,
            r#"workqueue_queue_duration_seconds_count{name="blog",controller="blog"} 3"#,
            r#"workqueue_work_duration_seconds_count{name="blog",controller="blog"} 3"#,
            r#"workqueue_depth{name="blog",controller="blog"} 0"#,
            r#"blog_operator_reconcile_errors_by_kind_total{controller="blog",error="panic"} 1"#,
        ],
    );
    #[cfg(target_os = "linux")]
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} in\n{text}"
        );
    }
}

#[test]
fn the_queue_counts_an_object_once_and_only_when_it_is_due() {
    let metrics = Metrics::default();
    metrics.queued("blog", "default/a");
    metrics.queued("blog", "default/a");
    metrics.queued("blog", "default/b");
    // A retry an hour from now waits, and is not yet in the queue's depth.
    metrics.requeued(
        "blog",
        "default/c",
        Instant::now() + Duration::from_secs(3600),
        true,
    );
    let text = scrape(&metrics);
    assert_has(
        &text,
        &[
            r#"workqueue_depth{name="blog",controller="blog"} 2"#,
            r#"workqueue_adds_total{name="blog",controller="blog"} 3"#,
            r#"workqueue_retries_total{name="blog",controller="blog"} 1"#,
        ],
    );
    // A watch event for the waiting object makes it due now.
    metrics.queued("blog", "default/c");
    let running = metrics.reconcile_started("blog", "default/a");
    std::thread::sleep(Duration::from_millis(20));
    let text = scrape(&metrics);
    assert_has(
        &text,
        &[
            r#"workqueue_depth{name="blog",controller="blog"} 2"#,
            r#"controller_runtime_active_workers{controller="blog"} 1"#,
        ],
    );
    let longest = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                r#"workqueue_longest_running_processor_seconds{name="blog",controller="blog"} "#,
            )
        })
        .and_then(|v| v.parse::<f64>().ok())
        .expect("longest running");
    assert!(longest >= 0.02, "{longest}");
    running.finish(Outcome::Success);
    metrics.forget("blog", "default/b");
    let text = scrape(&metrics);
    assert_has(
        &text,
        &[
            r#"workqueue_depth{name="blog",controller="blog"} 1"#,
            r#"workqueue_longest_running_processor_seconds{name="blog",controller="blog"} 0.0"#,
        ],
    );
}

/// What waits for room hears each object that leaves a queue, to a worker or deleted first.
#[test]
fn an_object_leaving_the_queue_wakes_what_waits_for_room() {
    let metrics = Metrics::default();
    let left = metrics.queue_left();
    metrics.queued("blog", "default/a");
    metrics.queued("blog", "default/b");
    let started = || drop(metrics.reconcile_started("blog", "default/a"));
    let deleted = || metrics.forget("blog", "default/b");
    for leave in [&started as &dyn Fn(), &deleted] {
        let woken = left.notified();
        let mut woken = std::pin::pin!(woken);
        woken.as_mut().enable();
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(
            woken.as_mut().poll(&mut cx).is_pending(),
            "nothing left yet"
        );
        leave();
        assert!(woken.as_mut().poll(&mut cx).is_ready(), "the leave woke it");
    }
    assert_eq!(metrics.depth("blog"), 0);
}
