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
/// message.
pub fn problem(schema: &JSONSchemaProps, value: &Value) -> Option<String> {
    check(schema, value, &mut String::new())
}

fn check(s: &JSONSchemaProps, value: &Value, at: &mut String) -> Option<String> {
    // Children first: the server reports the deepest failure too, and a child's message is
    // the more precise one.
    if let Some(items) = value.as_array()
        && let Some(JSONSchemaPropsOrArray::Schema(item)) = &s.items
    {
        for (i, element) in items.iter().enumerate() {
            let len = at.len();
            at.push_str(&format!("[{i}]"));
            let found = check(item, element, at);
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
                let found = check(schema, field, at);
                at.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    for rule in s.x_kubernetes_validations.iter().flatten() {
        if rule.rule.contains("oldSelf") {
            continue;
        }
        if evaluate(&rule.rule, value) == Some(false) {
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

/// The rule's verdict on `value`, or `None` where the crate cannot say (a function it lacks, a
/// field the server would have defaulted, a rule it cannot parse).
fn evaluate(rule: &str, value: &Value) -> Option<bool> {
    // The crate is third-party code run on the user's rules: a panic in it is "cannot say".
    std::panic::catch_unwind(|| {
        let program = cel::Program::compile(rule).ok()?;
        let mut context = cel::Context::default();
        context
            .add_variable("self", cel::to_value(value).ok()?)
            .ok()?;
        match program.execute(&context).ok()? {
            cel::Value::Bool(verdict) => Some(verdict),
            _ => None,
        }
    })
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
        assert_eq!(problem(&schema, &json!({"min": 1, "max": 2})), None);
        assert_eq!(
            problem(&schema, &json!({"min": 3, "max": 2})).as_deref(),
            Some("min must not exceed max")
        );
        assert_eq!(
            problem(
                &schema,
                &json!({"min": 1, "max": 2, "ports": [{"name": "http"}, {"name": "grpc"}]})
            )
            .as_deref(),
            Some("at ports[1]: names start with http")
        );
        // A field the server would default: not evaluated here.
        assert_eq!(problem(&schema, &json!({"min": 1})), None);
    }
}
