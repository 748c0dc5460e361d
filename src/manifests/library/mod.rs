//! Schemas of library types (k8s-openapi, chrono, ...), as kube-derive's inlining generator
//! builds them, at a cost linear in their size.
//!
//! With `inline_subschemas`, each k8s-openapi `json_schema` copies its fields' schemas into
//! its own through `json_schema!` (a serialization), so `PodTemplateSpec` copies `Container`'s
//! schema once per level above it: most of the time spent deriving a kind that uses it. Here
//! each type's schema is generated once per run with subschemas left as `$ref`s, and the
//! references are then replaced by copies of their definitions. That is the same schema:
//! where the inlining generator would keep a `$ref` (a type nested in itself), or the
//! definitions do not read as expected, the inlining generator builds it instead.

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

pub mod k8s_types;
pub mod k8s_versions;
pub mod known;

use known::SchemaFn;

/// Where schemars' OpenAPI 3 settings put definitions, as a `$ref` names them.
const DEFINITIONS: &str = "#/components/schemas/";

pub struct Library {
    /// kube-derive's settings without inlining: its definitions are the types' own schemas.
    flat: SchemaGenerator,
}

impl Default for Library {
    fn default() -> Self {
        let settings =
            crate::manifests::settings::kube_settings().with(|s| s.inline_subschemas = false);
        Self {
            flat: SchemaGenerator::new(settings),
        }
    }
}

impl Library {
    /// The schema `f` gives under `inlining` (kube-derive's generator), built through the
    /// definitions where that gives the same schema.
    pub fn schema(&mut self, f: SchemaFn, inlining: &mut SchemaGenerator) -> Schema {
        let mut schema = f(&mut self.flat);
        let inlined = match schema.as_object_mut() {
            Some(object) => inline_object(object, self.flat.definitions(), &mut Vec::new()),
            None => true,
        };
        if inlined { schema } else { f(inlining) }
    }
}

/// Replaces every `$ref` in `schema` and its subschemas by a copy of its definition; see
/// [`inline_object`].
fn inline_refs(
    schema: &mut Value,
    definitions: &Map<String, Value>,
    stack: &mut Vec<String>,
) -> bool {
    match schema {
        Value::Object(object) => inline_object(object, definitions, stack),
        _ => true,
    }
}

/// A `$ref` in `object` becomes a copy of its definition, with the reference's sibling
/// keywords on top (as `ensure_object().insert(..)` on an inlined schema leaves them), and so
/// on in every subschema. `false` when that would not be what inlining builds: a definition
/// that refers back to one being inlined (schemars keeps a `$ref` there), or a reference or
/// definition of another form.
fn inline_object(
    object: &mut Map<String, Value>,
    definitions: &Map<String, Value>,
    stack: &mut Vec<String>,
) -> bool {
    let Some(reference) = object.get("$ref") else {
        return subschemas(object, definitions, stack);
    };
    let name = match reference.as_str().and_then(|r| r.strip_prefix(DEFINITIONS)) {
        // Encoded names (`~0`, `%20`) and recursion are left to the inlining generator.
        Some(name) if !name.contains(['~', '%']) && !stack.iter().any(|s| s == name) => {
            name.to_owned()
        }
        _ => return false,
    };
    let Some(Value::Object(definition)) = definitions.get(&name) else {
        return false;
    };
    let mut inlined = definition.clone();
    object.remove("$ref");
    inlined.append(object);
    *object = inlined;
    stack.push(name);
    let inlined = subschemas(object, definitions, stack);
    stack.pop();
    inlined
}

/// [`inline_refs`] on each subschema of `object`, at the keywords schemars' own
/// `transform_subschemas` visits.
fn subschemas(
    object: &mut Map<String, Value>,
    definitions: &Map<String, Value>,
    stack: &mut Vec<String>,
) -> bool {
    let all = |values: &mut [Value], stack: &mut Vec<String>| {
        values
            .iter_mut()
            .all(|v| inline_refs(v, definitions, stack))
    };
    object
        .iter_mut()
        .all(|(key, value)| match (key.as_str(), value) {
            (
                "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "additionalProperties"
                | "propertyNames"
                | "additionalItems",
                value,
            ) => inline_refs(value, definitions, stack),
            ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(items)) => {
                all(items, stack)
            }
            ("items", value) => inline_refs(value, definitions, stack),
            ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(map)) => {
                map.values_mut().all(|v| inline_refs(v, definitions, stack))
            }
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::settings::kube_settings;

    /// The paths a `match` in `source` maps to schema functions (its string patterns).
    fn paths_in(source: &str, from: &str) -> Vec<String> {
        let start = source.find(from).unwrap_or_default();
        let body = &source[start..];
        let end = body.find("_ => return").unwrap_or(body.len());
        body[..end]
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('"') && l.contains("=>"))
            .flat_map(|l| {
                let patterns = l.split("=>").next().unwrap_or_default();
                patterns
                    .split('|')
                    .map(|p| p.trim().trim_matches('"').to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every library type's schema (std, chrono, jiff, serde_json, kube and every k8s-openapi
    /// type) equals what kube-derive's inlining generator builds.
    #[test]
    fn every_library_type_matches_the_inlining_generator() {
        let k8s = paths_in(include_str!("k8s_types.rs"), "pub fn lookup(");
        assert_eq!(k8s.len(), k8s_types::COUNT);
        let std = paths_in(include_str!("known.rs"), "pub fn leaf(");
        assert!(std.len() > 60, "{std:?}");
        let mut library = Library::default();
        let mut inlining = SchemaGenerator::new(kube_settings());
        for path in std.iter().chain(&k8s) {
            let f = super::known::leaf(path).expect(path);
            let expected = f(&mut SchemaGenerator::new(kube_settings()));
            assert_eq!(library.schema(f, &mut inlining), expected, "{path}");
        }
    }

    /// A type nested in itself keeps schemars' `$ref`: the inlining generator builds it.
    #[test]
    fn recursion_falls_back_to_the_inlining_generator() {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
        let f: SchemaFn = |g| g.subschema_for::<JSONSchemaProps>();
        let mut inlining = SchemaGenerator::new(kube_settings());
        let schema = Library::default().schema(f, &mut inlining);
        assert_eq!(schema, f(&mut SchemaGenerator::new(kube_settings())));
        assert!(
            serde_json::to_string(&schema)
                .unwrap_or_default()
                .contains("$ref")
        );
    }
}
