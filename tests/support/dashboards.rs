//! The scaffolded Grafana dashboards against what a manager serves.

use std::path::{Path, PathBuf};

/// Labels Prometheus adds when it scrapes (from the target), which a manager never serves.
const SCRAPE_LABELS: [&str; 7] = [
    "instance",
    "job",
    "namespace",
    "pod",
    "service",
    "endpoint",
    "container",
];

/// What the Grafana dashboards of `project/grafana/` read that the manager's `/metrics`
/// (`scrape`, OpenMetrics text) does not serve: each metric name a query uses, and each label
/// it groups by or shows in a legend (besides those Prometheus adds at scrape time).
pub fn problems(project: &Path, scrape: &str) -> Vec<String> {
    let metric = regex::Regex::new(
        r"\b((?:controller_runtime|workqueue|process|leader_election|certwatcher)_[a-z_]+)",
    )
    .expect("regex");
    let grouped = regex::Regex::new(r"by \(([^)]*)\)").expect("regex");
    let legend = regex::Regex::new(r"\{\{\s*(\w+)\s*\}\}").expect("regex");
    let mut problems = Vec::new();
    let dir = project.join("grafana");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for file in files {
        let dashboard: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
        let mut targets = Vec::new();
        collect_targets(&dashboard, &mut targets);
        for (expr, legend_format) in targets {
            let names: Vec<&str> = metric
                .captures_iter(&expr)
                .filter_map(|c| c.get(1))
                .map(|m| m.as_str())
                .collect();
            let mut labels: Vec<String> = grouped
                .captures_iter(&expr)
                .flat_map(|c| {
                    c[1].split(',')
                        .map(|l| l.trim().to_owned())
                        .collect::<Vec<_>>()
                })
                .chain(
                    legend
                        .captures_iter(&legend_format)
                        .map(|c| c[1].to_owned()),
                )
                .filter(|l| !l.is_empty() && !SCRAPE_LABELS.contains(&l.as_str()))
                .collect();
            labels.sort();
            labels.dedup();
            for name in &names {
                let series: Vec<&str> = scrape
                    .lines()
                    .filter(|l| {
                        l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}{{"))
                    })
                    .collect();
                if series.is_empty() {
                    problems.push(format!(
                        "{}: `{expr}` reads {name}, which the manager does not serve",
                        file.display()
                    ));
                    continue;
                }
                for label in &labels {
                    let on_series = series.iter().any(|l| l.contains(&format!("{label}=\"")));
                    // A label of another metric of the same query (`by (le)` of a histogram).
                    let elsewhere = names.iter().any(|other| {
                        other != name
                            && scrape.lines().any(|l| {
                                l.starts_with(&format!("{other}{{"))
                                    && l.contains(&format!("{label}=\""))
                            })
                    });
                    if !on_series && !elsewhere {
                        problems.push(format!(
                            "{}: `{expr}` uses label `{label}`, which {name} does not carry",
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// Every (expression, legend format) of a dashboard's panels and template variables.
fn collect_targets(value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(expr) = map.get("expr").and_then(|e| e.as_str()) {
                let legend = map
                    .get("legendFormat")
                    .and_then(|l| l.as_str())
                    .unwrap_or_default();
                out.push((expr.to_owned(), legend.to_owned()));
            }
            if let Some(query) = map
                .get("query")
                .and_then(|q| q.get("query"))
                .and_then(|q| q.as_str())
            {
                out.push((query.to_owned(), String::new()));
            }
            map.values().for_each(|v| collect_targets(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_targets(v, out)),
        _ => {}
    }
}
