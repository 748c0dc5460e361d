//! A value checked against the schema it sits in, as the API server checks a schema's
//! `default` and `example` when it admits a CRD: types all the way down (a list of strings
//! whose default holds a boolean is refused), enums, bounds, lengths, patterns, and no field
//! the schema would prune.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// The first problem with `value` under `schema`, naming where (`[1].name`) inside the value.
/// Required fields are not asked for: the API server fills a default's nested defaults before
/// it validates it.
pub fn problem(schema: &JSONSchemaProps, value: &Value) -> Option<String> {
    check(schema, value, &mut String::new(), false)
}

/// [`problem`] for an object a user writes (a sample): required fields without a default
/// must be there too.
pub fn object_problem(schema: &JSONSchemaProps, value: &Value) -> Option<String> {
    check(schema, value, &mut String::new(), true)
}

fn check(s: &JSONSchemaProps, value: &Value, at: &mut String, required: bool) -> Option<String> {
    let where_ = at.clone();
    let here = |message: String| {
        Some(if where_.is_empty() {
            message
        } else {
            format!("at {where_}: {message}")
        })
    };
    if s.x_kubernetes_preserve_unknown_fields == Some(true) && s.type_.is_none() {
        return None;
    }
    if value.is_null() {
        return match s.nullable {
            Some(true) => None,
            _ => here("null, and the schema is not nullable".into()),
        };
    }
    if s.x_kubernetes_int_or_string == Some(true) {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            return here(format!("{value} is neither an integer nor a string"));
        }
    } else if let Some(ty) = s.type_.as_deref() {
        let fits = match ty {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !fits {
            return here(format!("{value} is not of type {ty}"));
        }
    }
    if let Some(allowed) = &s.enum_
        && !allowed.iter().any(|a| a.0 == *value)
    {
        return here(format!("{value} is not one of the enum's values"));
    }
    if let Some(n) = value.as_f64() {
        let below = |bound: f64, exclusive: Option<bool>| {
            if exclusive == Some(true) {
                n <= bound
            } else {
                n < bound
            }
        };
        let above = |bound: f64, exclusive: Option<bool>| {
            if exclusive == Some(true) {
                n >= bound
            } else {
                n > bound
            }
        };
        if s.minimum.is_some_and(|m| below(m, s.exclusive_minimum)) {
            return here(format!("{value} is below the minimum"));
        }
        if s.maximum.is_some_and(|m| above(m, s.exclusive_maximum)) {
            return here(format!("{value} is above the maximum"));
        }
    }
    if let Some(text) = value.as_str() {
        let length = text.chars().count() as i64;
        if s.min_length.is_some_and(|m| length < m) || s.max_length.is_some_and(|m| length > m) {
            return here(format!("{value} has a length outside minLength/maxLength"));
        }
        if let Some(pattern) = &s.pattern
            && regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text))
        {
            return here(format!("{value} does not match the pattern `{pattern}`"));
        }
    }
    if let Some(items) = value.as_array() {
        let count = items.len() as i64;
        if s.min_items.is_some_and(|m| count < m) || s.max_items.is_some_and(|m| count > m) {
            return here(format!("{count} items, outside minItems/maxItems"));
        }
        if let Some(JSONSchemaPropsOrArray::Schema(item)) = &s.items {
            for (i, element) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                let found = check(item, element, at, required);
                at.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    if let Some(object) = value.as_object() {
        if required {
            let defaulted = |name: &String| {
                (s.properties.as_ref())
                    .and_then(|p| p.get(name))
                    .is_some_and(|p| p.default.is_some())
            };
            if let Some(missing) = (s.required.iter().flatten())
                .find(|name| !object.contains_key(*name) && !defaulted(name))
            {
                return here(format!("the required field `{missing}` is missing"));
            }
        }
        let preserve = s.x_kubernetes_preserve_unknown_fields == Some(true);
        for (key, field) in object {
            let schema = match (&s.properties, &s.additional_properties) {
                (Some(properties), _) if properties.contains_key(key) => properties.get(key),
                (_, Some(JSONSchemaPropsOrBool::Schema(values))) => Some(values.as_ref()),
                (_, Some(JSONSchemaPropsOrBool::Bool(true))) => None,
                _ if preserve || s.x_kubernetes_embedded_resource == Some(true) => None,
                _ => {
                    return here(format!(
                        "`{key}` is no field of the schema (the API server refuses a default it would prune, and kubectl's strict field validation such an object)"
                    ));
                }
            };
            if let Some(schema) = schema {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(key);
                let found = check(schema, field, at, required);
                at.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(json: Value) -> JSONSchemaProps {
        serde_json::from_value(json).expect("schema")
    }

    #[test]
    fn values_are_checked_all_the_way_down() {
        let list = schema(serde_json::json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(problem(&list, &serde_json::json!(["a", "b"])), None);
        assert!(
            problem(&list, &serde_json::json!(["a", true])).is_some_and(|p| p.contains("at [1]"))
        );
        let object = schema(serde_json::json!({
            "type": "object",
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "name": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"}
            }
        }));
        assert_eq!(
            problem(&object, &serde_json::json!({"size": 3, "mode": "a"})),
            None
        );
        for bad in [
            serde_json::json!({"size": 0}),
            serde_json::json!({"size": 11}),
            serde_json::json!({"mode": "c"}),
            serde_json::json!({"name": "abcd"}),
            serde_json::json!({"name": "AB"}),
            serde_json::json!({"other": 1}),
            serde_json::json!({"size": "3"}),
        ] {
            assert!(problem(&object, &bad).is_some(), "{bad}");
        }
        let int_or_string = schema(serde_json::json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(problem(&int_or_string, &serde_json::json!("50%")), None);
        assert!(problem(&int_or_string, &serde_json::json!(true)).is_some());
    }
}
