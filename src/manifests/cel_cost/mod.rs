//! The estimated cost of every `x-kubernetes-validations` rule, as the API server estimates
//! it when it admits a CRD (apiextensions-apiserver's `validation.go` and `cel_validation.go`):
//! each rule's (and `messageExpression`'s) most cost times how often it can run (the product
//! of `maxItems`/`maxProperties` above it, or a bound from the request size where one is
//! missing), against a budget per rule and one for all rules of a version.

mod calls;
pub mod decl;
mod estimate;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use decl::{Decl, Kind, MAX_REQUEST_SIZE};

use super::lint::{Finding, Severity};

/// The API server's budget for one rule (`StaticEstimatedCostLimit`).
pub const RULE_LIMIT: u64 = 10_000_000;
/// The API server's budget for all rules of a version (`StaticEstimatedCRDCostLimit`).
pub const CRD_LIMIT: u64 = 100_000_000;

/// One rule's (or message expression's) estimate.
#[derive(Debug, Clone)]
pub struct RuleCost {
    pub version: String,
    /// The rule's node, as the lint's findings name fields.
    pub path: Vec<String>,
    pub expression: String,
    pub message_expression: bool,
    /// The cost times how often the rule can run, or why it could not be estimated.
    pub cost: Result<u64, String>,
    /// What would bring an over-budget rule under: a schema field and the bound it needs.
    pub suggestion: Option<String>,
}

/// Every rule of every version of `crd`, in schema order.
pub fn estimate(crd: &CustomResourceDefinition) -> Vec<RuleCost> {
    let mut out = Vec::new();
    for version in &crd.spec.versions {
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        if let Some(schema) = schema {
            out.extend(estimate_version(&version.name, schema));
        }
    }
    out
}

/// Every rule of one version's schema.
pub fn estimate_version(version: &str, schema: &JSONSchemaProps) -> Vec<RuleCost> {
    let mut out = Vec::new();
    walk(
        schema,
        &mut Vec::new(),
        Some(1),
        true,
        version,
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// The lint's `cel-cost` errors for one version: each rule over its budget, and the version's
/// rules over theirs together.
pub fn findings(version: &str, schema: &JSONSchemaProps) -> Vec<Finding> {
    let costs = estimate_version(version, schema);
    let mut findings = Vec::new();
    let mut total: u64 = 0;
    for rule in &costs {
        let Ok(cost) = rule.cost else { continue };
        total = total.saturating_add(cost);
        if cost > RULE_LIMIT {
            let what = if rule.message_expression {
                "messageExpression"
            } else {
                "rule"
            };
            let mut message = format!(
                "CEL {what} `{}` is estimated at {cost}, {} the API server's budget of {RULE_LIMIT} per rule",
                rule.expression,
                factor(cost, RULE_LIMIT)
            );
            if let Some(suggestion) = &rule.suggestion {
                message.push_str(&format!("; {suggestion}"));
            }
            findings.push(finding(version, rule.path.clone(), message));
        }
    }
    if total > CRD_LIMIT {
        let mut largest: Vec<&RuleCost> = costs.iter().filter(|r| r.cost.is_ok()).collect();
        largest.sort_by_key(|r| std::cmp::Reverse(r.cost.as_ref().copied().unwrap_or(0)));
        let named: Vec<String> = largest
            .iter()
            .take(4)
            .map(|r| {
                format!(
                    "`{}` at {} ({})",
                    r.expression,
                    shown(&r.path),
                    r.cost.as_ref().copied().unwrap_or(0)
                )
            })
            .collect();
        findings.push(finding(
            version,
            Vec::new(),
            format!(
                "the CEL rules of this version are estimated at {total} together, {} the API server's budget of {CRD_LIMIT} per CRD version; the largest: {}",
                factor(total, CRD_LIMIT),
                named.join(", ")
            ),
        ));
    }
    findings
}

/// Every rule's cost as a share of its budget, and each version's total, as notes.
pub fn notes(crd: &CustomResourceDefinition) -> Vec<Finding> {
    let mut notes = Vec::new();
    for version in &crd.spec.versions {
        let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            continue;
        };
        let mut total: u64 = 0;
        let costs = estimate_version(&version.name, schema);
        for rule in &costs {
            let what = if rule.message_expression {
                "messageExpression"
            } else {
                "rule"
            };
            let message = match &rule.cost {
                Ok(cost) => {
                    total = total.saturating_add(*cost);
                    format!(
                        "CEL {what} `{}` costs {cost}: {} of the per-rule budget",
                        rule.expression,
                        share(*cost, RULE_LIMIT)
                    )
                }
                Err(why) => format!("CEL {what} `{}`: not estimated ({why})", rule.expression),
            };
            let mut note = finding(&version.name, rule.path.clone(), message);
            note.severity = Severity::Note;
            notes.push(note);
        }
        if !costs.is_empty() {
            let mut note = finding(
                &version.name,
                Vec::new(),
                format!(
                    "the CEL rules of this version cost {total} together: {} of the per-version budget",
                    share(total, CRD_LIMIT)
                ),
            );
            note.severity = Severity::Note;
            notes.push(note);
        }
    }
    notes
}

fn finding(version: &str, path: Vec<String>, message: String) -> Finding {
    Finding {
        severity: Severity::Error,
        rule: "cel-cost",
        version: version.to_owned(),
        path,
        message,
        fix: "bound the fields the rule reads with maxItems, maxLength or maxProperties (`#[schemars(length(max = ..))]`), or simplify the rule",
    }
}

/// How far over a budget, as the API server words it.
fn factor(cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    if factor > 100.0 {
        "more than 100x".into()
    } else {
        format!("{factor:.1}x")
    }
}

/// Where an ancestor's missing `maxItems`/`maxProperties` leaves the rule's count unbounded.
#[derive(Clone)]
struct Ancestor {
    path: Vec<String>,
    keyword: &'static str,
}

fn walk(
    s: &JSONSchemaProps,
    path: &mut Vec<String>,
    cardinality: Option<u64>,
    root: bool,
    version: &str,
    ancestors: &mut Vec<Ancestor>,
    out: &mut Vec<RuleCost>,
) {
    let rules = s.x_kubernetes_validations.as_deref().unwrap_or_default();
    if !rules.is_empty()
        && let Some(decl) = decl::decl(s, root || s.x_kubernetes_embedded_resource == Some(true))
    {
        for rule in rules {
            let expressions = std::iter::once((rule.rule.as_str(), false))
                .chain(rule.message_expression.as_deref().map(|m| (m, true)));
            for (expression, message_expression) in expressions {
                if expression.trim().is_empty() {
                    continue;
                }
                // The API server counts a message expression once, not once per element.
                let times = if message_expression {
                    Some(1)
                } else {
                    cardinality
                };
                let (cost, suggestion) = cost_of(expression, &decl, times, path, ancestors);
                out.push(RuleCost {
                    version: version.to_owned(),
                    path: path.clone(),
                    expression: expression.to_owned(),
                    message_expression,
                    cost,
                    suggestion,
                });
            }
        }
    }
    // How often a child can occur: this node's bound times its own count.
    let (elements, keyword) = match s.type_.as_deref() {
        Some("object") if s.additional_properties.is_some() => (s.max_properties, "maxProperties"),
        Some("array") => (s.max_items, "maxItems"),
        _ => (Some(1), ""),
    };
    let child = match (cardinality, elements) {
        (Some(c), Some(n)) => Some(c.saturating_mul(n.max(0) as u64)),
        _ => None,
    };
    let unbounded_here = elements.is_none();
    if unbounded_here {
        ancestors.push(Ancestor {
            path: path.clone(),
            keyword,
        });
    }
    for (name, property) in s.properties.iter().flatten() {
        path.push(name.clone());
        walk(property, path, child, false, version, ancestors, out);
        path.pop();
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &s.additional_properties {
        path.push("{*}".into());
        walk(values, path, child, false, version, ancestors, out);
        path.pop();
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &s.items {
        path.push("[*]".into());
        walk(items, path, child, false, version, ancestors, out);
        path.pop();
    }
    if unbounded_here {
        ancestors.pop();
    }
}

/// A rule's cost at its node, and for one over the budget, the bound that brings it under.
fn cost_of(
    expression: &str,
    decl: &Decl,
    cardinality: Option<u64>,
    path: &[String],
    ancestors: &[Ancestor],
) -> (Result<u64, String>, Option<String>) {
    let Ok(parsed) = super::validation_rules::parser().parse(expression) else {
        // The lint's `cel` rule reports what does not parse.
        return (Err("the rule does not parse".into()), None);
    };
    let estimate = match estimate::max_cost(&parsed, decl) {
        Ok(estimate) => estimate,
        Err(why) => {
            return (
                Err(format!("{why} is not known to kopgen's estimate")),
                None,
            );
        }
    };
    // Where no ancestor bounds it, the rule may run once per element a request can hold.
    let times = cardinality.unwrap_or_else(|| (MAX_REQUEST_SIZE / (decl.min_size + 1)) as u64);
    let cost = estimate.max.saturating_mul(times);
    if cost <= RULE_LIMIT {
        return (Ok(cost), None);
    }
    let suggestion = bound_within(&parsed, decl, times, &estimate.sized, path).or_else(|| {
        // The rule alone fits: what multiplies it is a list or map above it without a bound.
        let ancestor = ancestors.last()?;
        let per_run = estimate.max.max(1);
        let most = RULE_LIMIT / per_run;
        (most > 0).then(|| {
            format!(
                "`{}` has no {}: with {} = {most} (or less) the rule fits",
                shown(&ancestor.path),
                ancestor.keyword,
                ancestor.keyword
            )
        })
    });
    (Ok(cost), suggestion)
}

/// The largest bound on one of the fields the rule reads that brings its cost under the
/// budget (fields without a bound tried first), found by bisection: the cost grows with
/// every bound.
fn bound_within(
    parsed: &cel::common::ast::IdedExpr,
    decl: &Decl,
    times: u64,
    sized: &[(Vec<String>, bool)],
    path: &[String],
) -> Option<String> {
    for (field, bounded) in sized {
        let steps = field.get(1..).unwrap_or_default();
        let kind = decl.clone().at_mut(steps)?.kind.clone();
        let cost_with = |bound: i64| -> Option<u64> {
            let mut trial = decl.clone();
            trial.at_mut(steps)?.max_elements = bound;
            let estimate = estimate::max_cost(parsed, &trial).ok()?;
            Some(estimate.max.saturating_mul(times))
        };
        if cost_with(0)? > RULE_LIMIT {
            continue;
        }
        let (mut low, mut high) = (0i64, MAX_REQUEST_SIZE);
        while low < high {
            let middle = low + (high - low + 1) / 2;
            if cost_with(middle)? <= RULE_LIMIT {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        let keyword = keyword_of(&kind);
        // The estimate counts four bytes per character of a `maxLength`.
        let value = if matches!(kind, Kind::String | Kind::IntOrString) {
            low / 4
        } else {
            low
        };
        let has = if *bounded {
            format!("has too large a {keyword}")
        } else {
            format!("has no {keyword}")
        };
        let others: Vec<String> = sized
            .iter()
            .filter(|(other, bounded)| !bounded && other != field)
            .filter_map(|(other, _)| {
                let steps = other.get(1..).unwrap_or_default();
                let kind = decl.clone().at_mut(steps)?.kind.clone();
                Some(format!(
                    "`{}` ({})",
                    shown(&field_path(path, steps)),
                    keyword_of(&kind)
                ))
            })
            .collect();
        let also = if others.is_empty() {
            String::new()
        } else {
            format!("; also unbounded: {}", others.join(", "))
        };
        return Some(format!(
            "`{}` {has}: with {keyword} = {value} (or less) the rule fits{also}",
            shown(&field_path(path, steps))
        ));
    }
    None
}

/// The schema keyword that bounds a node of this kind.
fn keyword_of(kind: &Kind) -> &'static str {
    match kind {
        Kind::List(_) => "maxItems",
        Kind::Map(_) => "maxProperties",
        _ => "maxLength",
    }
}

/// A field below the rule's node (`@items` steps and all) as the lint names fields.
fn field_path(path: &[String], steps: &[String]) -> Vec<String> {
    let mut out = path.to_vec();
    out.extend(steps.iter().map(|s| match s.as_str() {
        "@items" => "[*]".to_owned(),
        "@values" => "{*}".to_owned(),
        other => other.to_owned(),
    }));
    out
}

fn shown(path: &[String]) -> String {
    if path.is_empty() {
        return "the root".into();
    }
    path.join(".").replace(".[", "[").replace(".{", "{")
}

/// The budget shares, for the report: `12.5%`.
pub fn share(cost: u64, limit: u64) -> String {
    format!("{:.1}%", cost as f64 * 100.0 / limit as f64)
}

#[cfg(test)]
mod tests;
