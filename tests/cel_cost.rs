//! kopgen's estimate of CEL rule costs against the real API server's: for each rule shape,
//! the bound at which kopgen says the rule (or the version's rules together) stops fitting
//! the budget is found by bisection, and the API server must accept the CRD just under it and
//! refuse the CRD just over it, for cost. Prints the agreement table.

mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopgen::manifests::cel_cost::{self, CRD_LIMIT, RULE_LIMIT};
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, Options};

/// A CRD whose spec has `properties` and the `rules` at the spec (`at: "spec"`) or on each
/// item of `spec.items` (`at: "items"`).
fn crd(properties: Value, rules: &[&str], at: &str) -> Value {
    let validations: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    crd_with(properties, validations, at)
}

/// [`crd`] with whole validation rules (messages, message expressions).
fn crd_with(properties: Value, validations: Vec<Value>, at: &str) -> Value {
    let mut spec = json!({"type": "object", "properties": properties});
    match at {
        "items" => {
            spec["properties"]["items"]["items"]["x-kubernetes-validations"] = json!(validations)
        }
        _ => spec["x-kubernetes-validations"] = json!(validations),
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "costs.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "names": {"kind": "Cost", "plural": "costs", "singular": "cost", "listKind": "CostList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}
            }]
        }
    })
}

/// A list of `n` (maxItems) objects with a bounded `name`, and a list of tags.
fn items(n: i64, name_length: i64) -> Value {
    json!({
        "items": {"type": "array", "maxItems": n, "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": name_length}}
        }},
        "tags": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 32}}
    })
}

/// Whether kopgen calls the CRD over budget.
fn kopgen_over(crd: &Value) -> bool {
    let typed: CustomResourceDefinition = serde_json::from_value(crd.clone()).expect("a CRD");
    let costs = cel_cost::estimate(&typed);
    let mut total: u64 = 0;
    let mut over = false;
    for rule in &costs {
        // A rule kopgen cannot estimate is not called over (the run goes on; the report says so).
        let Ok(cost) = rule.cost.clone() else {
            continue;
        };
        total = total.saturating_add(cost);
        over |= cost > RULE_LIMIT;
    }
    over || total > CRD_LIMIT
}

/// The largest `n` in `1..=high` for which kopgen calls `make(n)` within budget.
fn boundary(make: &dyn Fn(i64) -> Value, high: i64) -> i64 {
    assert!(!kopgen_over(&make(1)), "fits at 1");
    assert!(kopgen_over(&make(high)), "over at {high}");
    let (mut low, mut high) = (1, high);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if kopgen_over(&make(middle)) {
            high = middle;
        } else {
            low = middle;
        }
    }
    low
}

/// The API server's verdict: `Some(true)` refused for cost, `Some(false)` accepted, `None`
/// refused for another reason (printed).
fn server_over(plane: &ControlPlane, crd: &Value) -> Result<bool, String> {
    let out =
        plane.kubectl_with_input(&["create", "--dry-run=server", "-f", "-"], &crd.to_string());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(false)
    } else if stderr.contains("exceeds budget") || stderr.contains("exceeding cost limit") {
        Ok(true)
    } else {
        Err(stderr)
    }
}

#[test]
fn kopgen_and_the_api_server_agree_on_which_rules_fit_the_cost_budget() {
    let test = "kopgen_and_the_api_server_agree_on_which_rules_fit_the_cost_budget";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    type Make = Box<dyn Fn(i64) -> Value>;
    let shapes: Vec<(&str, Make, i64)> = vec![
        (
            "all + matches, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 64),
                    &["self.items.all(x, x.name.matches('^[a-z]+$'))"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "nested exists (quadratic), by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 16),
                    &["self.items.all(x, self.items.exists(y, y.name == x.name))"],
                    "spec",
                )
            }),
            100_000,
        ),
        (
            "contains, by maxLength",
            Box::new(|n| {
                crd(
                    items(4, n),
                    &["self.items.all(x, x.name.contains('abc'))"],
                    "spec",
                )
            }),
            100_000_000,
        ),
        (
            "rule on each item (cardinality), by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 64),
                    &["self.name.startsWith('x') && self.name.endsWith('y')"],
                    "items",
                )
            }),
            100_000_000,
        ),
        (
            "map/filter/exists_one, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &[
                        "self.items.map(x, x.name).exists_one(m, m == 'a') && self.items.filter(x, x.name.startsWith('a')).size() < 5",
                    ],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "exists_one over a mapped list, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &["self.items.map(x, x.name).exists_one(m, m == 'a')"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "filter, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &["self.items.filter(x, x.name.startsWith('a')).size() < 5"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "map, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &["self.items.map(x, x.name).size() < 5"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "exists_one, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &["self.items.exists_one(x, x.name == 'a')"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "quantities (Kubernetes' library), by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &[
                        "self.items.all(x, !isQuantity(x.name) || quantity(x.name).isGreaterThan(quantity('1')))",
                    ],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "a message expression on each item (counted once), by maxLength",
            Box::new(|n| {
                let rule = json!({"rule": "self.name.size() > 0", "messageExpression": "'bad: ' + self.name.lowerAscii()"});
                crd_with(items(1000, n), vec![rule], "items")
            }),
            100_000_000,
        ),
        (
            "in a list, by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 32),
                    &["self.items.all(x, x.name in self.tags)"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "join, split and lowerAscii, by maxItems",
            Box::new(|n| {
                let properties = json!({"tags": {"type": "array", "maxItems": n,
                    "items": {"type": "string", "maxLength": 32}}});
                crd(
                    properties,
                    &["self.tags.join(',').lowerAscii().split(',').size() < 100"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "map keys and values, by maxProperties",
            Box::new(|n| {
                let properties = json!({"labels": {"type": "object", "maxProperties": n,
                    "additionalProperties": {"type": "string", "maxLength": 63}}});
                crd(
                    properties,
                    &["self.labels.all(k, self.labels[k].size() <= 63 && k.startsWith('a'))"],
                    "spec",
                )
            }),
            10_000_000,
        ),
        (
            "twelve rules together (the CRD budget), by maxItems",
            Box::new(|n| {
                crd(
                    items(n, 64),
                    &["self.items.all(x, x.name.matches('^[a-z]+$'))"; 12],
                    "spec",
                )
            }),
            10_000_000,
        ),
    ];
    let mut rows = Vec::new();
    let mut disagreements = Vec::new();
    // The bound kopgen suggests for an unbounded list brings the rule under, by the server's
    // estimate too, and one more item puts it over.
    let unbounded = |max: Option<i64>| {
        let mut tags = json!({"type": "array", "items": {"type": "string", "maxLength": 64}});
        if let Some(max) = max {
            tags["maxItems"] = json!(max);
        }
        crd(
            json!({"tags": tags}),
            &["self.tags.all(t, t.matches('^[a-z]+$'))"],
            "spec",
        )
    };
    let typed: CustomResourceDefinition = serde_json::from_value(unbounded(None)).expect("a CRD");
    let suggestion = cel_cost::estimate(&typed)[0]
        .suggestion
        .clone()
        .expect("a suggestion");
    let suggested: i64 = suggestion
        .split("maxItems = ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a bound in {suggestion}"));
    for (n, over) in [(suggested, false), (suggested + 1, true)] {
        let server = server_over(&plane, &unbounded(Some(n)));
        rows.push(format!(
            "{:<55} n={n:<9} suggested   server {server:?}",
            "the bound kopgen suggests"
        ));
        if server.as_ref().ok() != Some(&over) {
            disagreements.push(format!("suggested bound {n}: {server:?}"));
        }
    }
    // Shapes over budget at any size: the API server sizes what a comprehension builds as
    // unbounded, and so does kopgen.
    for (name, crd) in [
        (
            "join of a mapped list (unbounded)",
            crd(
                items(1, 32),
                &["self.items.map(x, x.name).join(',').size() < 100"],
                "spec",
            ),
        ),
        (
            "no maxItems (bounded by the request size)",
            crd(
                json!({"tags": {"type": "array", "items": {"type": "string"}}}),
                &["self.tags.all(t, t.matches('^[a-z]+$'))"],
                "spec",
            ),
        ),
    ] {
        let kopgen = kopgen_over(&crd);
        let server = server_over(&plane, &crd);
        let agree = server.as_ref().is_ok_and(|s| *s == kopgen);
        rows.push(format!(
            "{name:<55} {:<11} kopgen {:<6} server {:?} {}",
            "",
            if kopgen { "over" } else { "under" },
            server,
            if agree { "agree" } else { "DISAGREE" }
        ));
        if !agree {
            disagreements.push(format!("{name}: {server:?}"));
        }
    }
    for (name, make, high) in &shapes {
        let at = boundary(make.as_ref(), *high);
        for (n, kopgen) in [(at, false), (at + 1, true)] {
            let server = server_over(&plane, &make(n));
            let agree = server.as_ref().is_ok_and(|s| *s == kopgen);
            rows.push(format!(
                "{name:<55} n={n:<9} kopgen {:<6} server {:<6} {}",
                if kopgen { "over" } else { "under" },
                match &server {
                    Ok(true) => "over",
                    Ok(false) => "under",
                    Err(_) => "error",
                },
                if agree { "agree" } else { "DISAGREE" }
            ));
            if !agree {
                disagreements.push(format!("{name} at n={n}: {server:?}"));
            }
        }
    }
    println!("{}", rows.join("\n"));
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// Real-world CRDs (the corpus beside the project) with their CEL rules: kopgen calls each
/// within budget exactly when the API server accepts it.
#[test]
fn real_world_crds_fit_the_budget_as_the_api_server_says() {
    let test = "real_world_crds_fit_the_budget_as_the_api_server_says";
    let Some(dir) = support::corpus::corpus_dir() else {
        // Data beside the repository, not a tool: its absence is never a CI failure.
        support::control_plane::skip_notice(test, "../shared/corpus/crds not found");
        return;
    };
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let (mut rules, mut estimated, mut disagreements) = (0, 0, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let Ok(crd) = serde_yaml::from_str::<Value>(&text) else {
            continue;
        };
        if crd["kind"] != "CustomResourceDefinition" {
            continue;
        }
        let typed: CustomResourceDefinition = serde_json::from_value(crd.clone()).expect("a CRD");
        let costs = cel_cost::estimate(&typed);
        rules += costs.len();
        estimated += costs.iter().filter(|c| c.cost.is_ok()).count();
        let kopgen = kopgen_over(&crd);
        let server = server_over(&plane, &crd);
        println!(
            "{:<45} {:>4} rules  kopgen {:<6} server {server:?}",
            file.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
            costs.len(),
            if kopgen { "over" } else { "under" }
        );
        if server.as_ref().ok() != Some(&kopgen) {
            disagreements.push(format!("{}: {server:?}", file.display()));
        }
    }
    println!("{rules} rules, {estimated} estimated");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
