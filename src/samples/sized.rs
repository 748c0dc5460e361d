//! A schema bounded by one sample's sizes (each list's `maxItems`, string's `maxLength` and
//! map's `maxProperties` no more than the sample's largest there), so that the cost estimator
//! prices a rule as it would run on that sample. A rule the API server accepts (its static
//! cost under 10,000,000) can still cost millions of steps on a small sample; the server stops
//! a call at 1,000,000 ([`CALL_LIMIT`]), and kopgen does not run what would cost more.

use std::collections::HashMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// The API server's cost limit for one call of a rule (`PerCallLimit`).
pub const CALL_LIMIT: u64 = 1_000_000;

/// `schema` with its size bounds lowered to what `value` holds.
pub fn to_sample(schema: &JSONSchemaProps, value: &Value) -> JSONSchemaProps {
    let mut sizes = HashMap::new();
    observe(value, &mut Vec::new(), &mut sizes);
    let mut sized = schema.clone();
    apply(&mut sized, &mut Vec::new(), &sizes);
    sized
}

/// The largest size seen at each schema path (`[*]` for list items, `{*}` for map values).
fn observe(value: &Value, path: &mut Vec<String>, sizes: &mut HashMap<Vec<String>, usize>) {
    let size = match value {
        Value::Array(items) => items.len(),
        Value::String(s) => s.chars().count(),
        Value::Object(map) => map.len(),
        _ => return,
    };
    let seen = sizes.entry(path.clone()).or_insert(0);
    *seen = (*seen).max(size);
    match value {
        Value::Array(items) => {
            path.push("[*]".into());
            for item in items {
                observe(item, path, sizes);
            }
            path.pop();
        }
        Value::Object(map) => {
            for (key, child) in map {
                // A property and a map value: the schema says which; both are recorded.
                for step in [key.as_str(), "{*}"] {
                    path.push(step.into());
                    observe(child, path, sizes);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn lower(bound: &mut Option<i64>, seen: usize) {
    let seen = i64::try_from(seen).unwrap_or(i64::MAX);
    *bound = Some(bound.map_or(seen, |b| b.min(seen)));
}

fn apply(s: &mut JSONSchemaProps, path: &mut Vec<String>, sizes: &HashMap<Vec<String>, usize>) {
    if let Some(&seen) = sizes.get(path.as_slice()) {
        match s.type_.as_deref() {
            Some("array") => lower(&mut s.max_items, seen),
            Some("string") => lower(&mut s.max_length, seen),
            Some("object") if s.properties.is_none() => lower(&mut s.max_properties, seen),
            _ => {}
        }
    }
    for (name, child) in s.properties.iter_mut().flatten() {
        path.push(name.clone());
        apply(child, path, sizes);
        path.pop();
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = &mut s.additional_properties {
        path.push("{*}".into());
        apply(child, path, sizes);
        path.pop();
    }
    if let Some(JSONSchemaPropsOrArray::Schema(child)) = &mut s.items {
        path.push("[*]".into());
        apply(child, path, sizes);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bounds_come_down_to_the_samples_largest() {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "l": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
                "m": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 2}},
                "u": {"type": "array", "items": {"type": "integer"}}
            }
        }))
        .expect("schema");
        let sized = to_sample(
            &schema,
            &json!({"l": ["a", "abc"], "m": {"k": "xyz", "j": ""}, "u": [1, 2, 3]}),
        );
        let props = sized.properties.as_ref().expect("properties");
        assert_eq!(props["l"].max_items, Some(2));
        let Some(JSONSchemaPropsOrArray::Schema(item)) = &props["l"].items else {
            panic!("items");
        };
        assert_eq!(item.max_length, Some(3));
        assert_eq!(props["m"].max_properties, Some(2));
        let Some(JSONSchemaPropsOrBool::Schema(value)) = &props["m"].additional_properties else {
            panic!("values");
        };
        assert_eq!(value.max_length, Some(2), "the schema's bound is lower");
        assert_eq!(
            props["u"].max_items,
            Some(3),
            "an unbounded list gets the sample's"
        );
    }
}
