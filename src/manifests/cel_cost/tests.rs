use serde_json::json;

use super::*;

fn costs(spec: serde_json::Value) -> Vec<RuleCost> {
    let schema: JSONSchemaProps = serde_json::from_value(json!({
        "type": "object",
        "properties": {"spec": spec}
    }))
    .expect("schema");
    estimate_version("v1", &schema)
}

/// Costs worked out by hand from cel-go's rules: an identifier or a field of an object costs 1,
/// a call 1 plus its arguments, a comparison of strings a tenth of the shorter one's length,
/// a comprehension its range's size times its step and condition.
#[test]
fn costs_follow_cel_gos_rules() {
    let spec = json!({"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 1, "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 64}}
        }}
    }, "x-kubernetes-validations": [
        {"rule": "self.items.size() < 3"},
        {"rule": "self.items.all(x, x.name.matches('^[a-z]+$'))"},
        {"rule": "has(self.items)"}
    ]});
    let found: Vec<(String, Result<u64, String>)> = costs(spec)
        .into_iter()
        .map(|r| (r.expression, r.cost))
        .collect();
    assert_eq!(
        found,
        [
            // self (1) .items (1), size (1), < on integers (1).
            ("self.items.size() < 3".to_owned(), Ok(4)),
            // range 2, result 1, and per item: the condition 2, the step: x.name 2,
            // matches ceil((256 + 1) * 0.1) * ceil(8 * 0.25) = 52, and 1 for the accumulator.
            (
                "self.items.all(x, x.name.matches('^[a-z]+$'))".to_owned(),
                Ok(60)
            ),
            // Presence tests cost nothing of their own in Kubernetes.
            ("has(self.items)".to_owned(), Ok(1)),
        ]
    );
}

#[test]
fn an_unknown_function_is_not_estimated_and_an_unbounded_field_is_named() {
    let spec = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}}
    }, "x-kubernetes-validations": [
        {"rule": "self.tags.all(t, t.matches('^[a-z]+$'))"},
        {"rule": "self.tags.frobnicate()"}
    ]});
    let found = costs(spec);
    assert!(
        found[0].cost.as_ref().is_ok_and(|c| *c > RULE_LIMIT),
        "{found:?}"
    );
    let suggestion = found[0].suggestion.as_deref().unwrap_or_default();
    assert!(
        suggestion.starts_with("`spec.tags` has no maxItems: with maxItems = "),
        "{suggestion}"
    );
    assert!(
        found[1]
            .cost
            .as_ref()
            .is_err_and(|why| why.contains("frobnicate"))
    );
}

#[test]
fn over_budget_rules_and_versions_are_lint_errors() {
    let spec = json!({"type": "object", "properties": {
        "tags": {"type": "array", "maxItems": 100000, "items": {"type": "string", "maxLength": 64}}
    }, "x-kubernetes-validations": [
        {"rule": "self.tags.all(t, self.tags.exists(u, u == t))"}
    ]});
    let schema: JSONSchemaProps =
        serde_json::from_value(json!({"type": "object", "properties": {"spec": spec}}))
            .expect("schema");
    let found = findings("v1", &schema);
    assert_eq!(
        found.len(),
        2,
        "the rule, and the version's rules together: {found:?}"
    );
    assert_eq!(found[0].rule, "cel-cost");
    assert_eq!(found[0].path, ["spec"]);
    let message = &found[0].message;
    assert!(
        message.contains("more than 100x the API server's budget of 10000000"),
        "{message}"
    );
    // Quadratic in the list's length: 100000 is far too many, and the bound that fits is named.
    assert!(
        message.contains("`spec.tags` has too large a maxItems: with maxItems = "),
        "{message}"
    );
    assert!(found[1].path.is_empty() && found[1].message.contains("per CRD version"));
}

#[test]
fn names_are_escaped_as_the_api_server_escapes_them() {
    assert_eq!(decl::escape("namespace").as_deref(), Some("__namespace__"));
    assert_eq!(
        decl::escape("x-y.z/w").as_deref(),
        Some("x__dash__y__dot__z__slash__w")
    );
    assert_eq!(decl::escape("a__b").as_deref(), Some("a__underscores__b"));
    assert_eq!(decl::escape("1a"), None);
    assert_eq!(decl::escape("a b"), None);
}
