//! A value checked against the `x-kubernetes-validations` rules of its schema, evaluated with
//! the `cel` crate as the API server evaluates them on a create: `self` is the value at the
//! rule's node, transition rules (those reading `oldSelf`) do not run.
//!
//! Only a rule that evaluates to `false` is a problem. The API server's CEL has libraries the
//! crate lacks (quantities, URLs, IPs, `isSorted`, ...) and fills defaults in before it
//! evaluates, so a rule that cannot be evaluated here is left to the server rather than
//! reported.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// The first rule `value` fails under `schema`, naming where (`spec.ports[1]`) and the rule's
/// message; the rules in `skipped` (those too costly to run) are left to the API server.
pub fn problem(
    schema: &JSONSchemaProps,
    value: &Value,
    skipped: &std::collections::HashSet<String>,
) -> Option<String> {
    check(schema, value, &mut String::new(), skipped)
}

fn check(
    s: &JSONSchemaProps,
    value: &Value,
    at: &mut String,
    skipped: &std::collections::HashSet<String>,
) -> Option<String> {
    // Children first: the server reports the deepest failure too, and a child's message is
    // the more precise one.
    if let Some(items) = value.as_array()
        && let Some(JSONSchemaPropsOrArray::Schema(item)) = &s.items
    {
        for (i, element) in items.iter().enumerate() {
            let len = at.len();
            at.push_str(&format!("[{i}]"));
            let found = check(item, element, at, skipped);
            at.truncate(len);
            if found.is_some() {
                return found;
            }
        }
    }
    if let Some(object) = value.as_object() {
        for (key, field) in object {
            let schema = match (&s.properties, &s.additional_properties) {
                (Some(properties), _) if properties.contains_key(key) => properties.get(key),
                (_, Some(JSONSchemaPropsOrBool::Schema(values))) => Some(values.as_ref()),
                _ => None,
            };
            if let Some(schema) = schema {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(key);
                let found = check(schema, field, at, skipped);
                at.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    for rule in s.x_kubernetes_validations.iter().flatten() {
        if rule.rule.contains("oldSelf") || skipped.contains(&rule.rule) {
            continue;
        }
        if evaluate(&rule.rule, &typed(Some(s), value)) == Some(false) {
            let message = match &rule.message {
                Some(message) if !message.is_empty() => message.clone(),
                _ => format!("failed rule: {}", rule.rule),
            };
            return Some(if at.is_empty() {
                message
            } else {
                format!("at {at}: {message}")
            });
        }
    }
    None
}

/// `value` as the API server's CEL sees it, typed by its schema: an `integer` (or a whole
/// number without a type) is an `int`, a `number` a `double` (the `cel` crate's own conversion
/// makes every non-negative JSON integer a `uint`, which equals no `int`: `self.n == 5` would
/// be false for `n: 5`).
fn typed(schema: Option<&JSONSchemaProps>, value: &Value) -> cel::Value {
    use std::{collections::HashMap, sync::Arc};
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            let number = schema.and_then(|s| s.type_.as_deref()) == Some("number");
            match n.as_i64() {
                Some(int) if !number => cel::Value::Int(int),
                _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item = schema.and_then(|s| match &s.items {
                Some(JSONSchemaPropsOrArray::Schema(item)) => Some(item.as_ref()),
                _ => None,
            });
            cel::Value::List(Arc::new(items.iter().map(|i| typed(item, i)).collect()))
        }
        Value::Object(fields) => {
            let field = |key: &str| {
                let schema = schema?;
                match (&schema.properties, &schema.additional_properties) {
                    (Some(properties), _) if properties.contains_key(key) => properties.get(key),
                    (_, Some(JSONSchemaPropsOrBool::Schema(values))) => Some(values.as_ref()),
                    _ => None,
                }
            };
            let map: HashMap<String, cel::Value> = (fields.iter())
                .map(|(key, value)| (key.clone(), typed(field(key), value)))
                .collect();
            map.into()
        }
    }
}

/// The rule's verdict on `value`, or `None` where the crate cannot say (a function it lacks, a
/// field the server would have defaulted, a rule it cannot parse).
fn evaluate(rule: &str, value: &cel::Value) -> Option<bool> {
    // The crate is third-party code run on the user's rules: a panic in it is "cannot say".
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let program = cel::Program::compile(rule).ok()?;
        // The crate's `size` of a string counts code points, as Kubernetes' does.
        let mut context = cel::Context::default();
        context.add_variable_from_value("self", value.clone());
        match program.execute(&context).ok()? {
            cel::Value::Bool(verdict) => Some(verdict),
            _ => None,
        }
    }))
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rule_that_evaluates_to_false_is_a_problem_at_its_node() {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "ports": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self.name.startsWith('http')", "message": "names start with http"}]
                }}
            },
            "x-kubernetes-validations": [
                {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                {"rule": "self.min == oldSelf.min"},
                {"rule": "quantity(self.max).isGreaterThan(quantity('1'))"}
            ]
        }))
        .expect("schema");
        assert_eq!(
            problem(&schema, &json!({"min": 1, "max": 2}), &Default::default()),
            None
        );
        assert_eq!(
            problem(&schema, &json!({"min": 3, "max": 2}), &Default::default()).as_deref(),
            Some("min must not exceed max")
        );
        assert_eq!(
            problem(
                &schema,
                &json!({"min": 1, "max": 2, "ports": [{"name": "http"}, {"name": "grpc"}]}),
                &Default::default()
            )
            .as_deref(),
            Some("at ports[1]: names start with http")
        );
        // A field the server would default: not evaluated here.
        assert_eq!(
            problem(&schema, &json!({"min": 1}), &Default::default()),
            None
        );
    }

    /// Samples the API server admits are admitted here too: an integer is an `int` (equal to
    /// `5`, in `[1, 5, 7]`), a `number` a `double`, and a string's size is its code points.
    #[test]
    fn values_are_typed_as_the_api_server_types_them() {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "ratio": {"type": "number"},
                "s": {"type": "string"},
            },
            "x-kubernetes-validations": [
                {"rule": "self.n == 5", "message": "n is 5"},
                {"rule": "self.n in [1, 5, 7]", "message": "n is listed"},
                {"rule": "self.ratio == 2.0", "message": "ratio is 2.0"},
                {"rule": "size(self.s) == 1", "message": "one character"},
            ]
        }))
        .expect("a schema");
        let admitted = json!({"n": 5, "ratio": 2, "s": "é"});
        assert_eq!(problem(&schema, &admitted, &Default::default()), None);
        let refused = json!({"n": 6, "ratio": 2, "s": "é"});
        assert_eq!(
            problem(&schema, &refused, &Default::default()).as_deref(),
            Some("n is 5")
        );
        let long = json!({"n": 5, "ratio": 2, "s": "éé"});
        assert_eq!(
            problem(&schema, &long, &Default::default()).as_deref(),
            Some("one character")
        );
    }

    /// A rule left to the API server (too costly to run here) is not evaluated.
    #[test]
    fn skipped_rules_are_not_run() {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "false", "message": "never"}],
        }))
        .expect("a schema");
        assert_eq!(
            problem(&schema, &json!({}), &Default::default()).as_deref(),
            Some("never")
        );
        let skipped = std::collections::HashSet::from(["false".to_owned()]);
        assert_eq!(problem(&schema, &json!({}), &skipped), None);
    }

    /// Repeated unary operators cancel in pairs, as in cel-go (`cel` 0.13 read `!!x` as `!x`).
    #[test]
    fn repeated_negations_cancel_in_pairs() {
        let yes = cel::Value::Bool(true);
        assert_eq!(evaluate("!!self", &yes), Some(true));
        assert_eq!(evaluate("!!!self", &yes), Some(false));
        assert_eq!(evaluate("--1 == 1", &yes), Some(true));
        assert_eq!(evaluate("size('é') == 1", &yes), Some(true));
    }
}
