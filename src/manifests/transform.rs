//! Runs the generator's transforms (schemars' openapi3 set and kube-core's structural
//! rewriting) bottom-up over a schema with identical results to running them over the whole
//! tree, but in time linear in the schema's size.
//!
//! kube-core's `StructuralSchemaRewriter` deserializes a node's entire subtree at every node,
//! which is quadratic in depth. Here each node is transformed once, with its children already
//! transformed and its grandchildren replaced by small placeholders, so every transform sees
//! only a shallow tree. Equal subtrees share one placeholder (interned by content), so the
//! rewriter's equality checks between variants still compare content. The transforms are
//! idempotent on already-transformed subtrees (kopgen's parity tests check the result against
//! kube-derive's `crd()` on every fixture and real-world CRD).

use std::collections::HashMap;

use kube_core::schema::StructuralSchemaRewriter;
use schemars::{Schema, transform::Transform};
use serde_json::{Map, Value};

const REF: &str = "$kopgen-ref";

/// Keys whose value is one subschema, an array of subschemas, or a map of subschemas, as in
/// schemars' `transform_subschemas`.
const SINGLE: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "contains",
    "additionalProperties",
    "propertyNames",
    "additionalItems",
];
const ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// Transformed nodes, shared by every CRD of one run.
#[derive(Default)]
pub struct Arena {
    values: Vec<Value>,
    ids: HashMap<String, usize>,
    /// Nodes already transformed, keyed by their untransformed form with children as
    /// placeholders: a type used in many places is transformed once.
    done: HashMap<String, Value>,
}

impl Arena {
    /// Interns a transformed (shallow) node and returns its placeholder.
    fn intern(&mut self, value: Value) -> Value {
        let key = value.to_string();
        let id = match self.ids.get(&key) {
            Some(id) => *id,
            None => {
                let id = self.values.len();
                self.values.push(value);
                self.ids.insert(key, id);
                id
            }
        };
        let mut placeholder = Map::new();
        placeholder.insert(REF.into(), Value::from(id));
        Value::Object(placeholder)
    }

    /// The interned node of a placeholder (with any keys a transform set on the placeholder
    /// laid over it), or the value itself.
    fn resolve(&self, value: &Value) -> Value {
        if let Value::Object(map) = value
            && let Some(id) = map.get(REF).and_then(Value::as_u64)
            && let Some(stored) = self.values.get(id as usize)
        {
            let mut node = stored.clone();
            if let Value::Object(node_map) = &mut node {
                for (k, v) in map {
                    if k != REF {
                        node_map.insert(k.clone(), v.clone());
                    }
                }
            }
            return node;
        }
        value.clone()
    }

    /// Expands every placeholder, recursively, building each node once.
    fn expand(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let stored = map
                    .get(REF)
                    .and_then(Value::as_u64)
                    .and_then(|id| self.values.get(id as usize));
                let mut out = match stored {
                    Some(Value::Object(node)) => node
                        .iter()
                        .map(|(k, v)| (k.clone(), self.expand(v)))
                        .collect(),
                    Some(other) => return other.clone(),
                    None => Map::new(),
                };
                for (k, v) in map {
                    if k != REF {
                        out.insert(k.clone(), self.expand(v));
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.expand(v)).collect()),
            other => other.clone(),
        }
    }
}

/// Applies `f` to every direct subschema of `node`.
fn for_each_child(node: &mut Map<String, Value>, mut f: impl FnMut(&mut Value)) {
    for (key, value) in node.iter_mut() {
        let key = key.as_str();
        if SINGLE.contains(&key) {
            f(value);
        } else if ARRAYS.contains(&key) || (key == "items" && value.is_array()) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(&mut f);
            }
        } else if key == "items" {
            f(value);
        } else if MAPS.contains(&key)
            && let Value::Object(map) = value
        {
            map.values_mut().for_each(&mut f);
        }
    }
}

/// The transforms of kube-derive's generator with the nodes they have already transformed: one
/// per render thread, kept across the CRDs it renders so that a type shared by many CRDs is
/// transformed once.
pub struct Transforms {
    generator: schemars::SchemaGenerator,
    arena: Arena,
}

impl Default for Transforms {
    fn default() -> Self {
        let mut settings = super::schema::kube_settings();
        for transform in &mut settings.transforms {
            if transform.is::<StructuralSchemaRewriter>() {
                *transform = Box::new(StructuralRewriter);
            }
        }
        Self {
            generator: schemars::SchemaGenerator::new(settings),
            arena: Arena::default(),
        }
    }
}

/// kube-core's `StructuralSchemaRewriter`, without its serde round trip where that round trip
/// cannot change the node.
///
/// The rewriter deserializes each node into its own schema model and serializes it back. Apart
/// from hoisting `oneOf`/`anyOf`, dropping `uniqueItems` and folding a boolean
/// `additionalProperties` beside `properties`, that round trip only normalizes: `required`
/// sorted and deduplicated, empty `required`/`properties`/`patternProperties` and null values
/// of its known keys dropped (and if the node does not fit its model, nothing changes). A node
/// with none of those shapes, whose children were rewritten already, comes back unchanged, so
/// it is left as it is; that is most nodes, and the round trip was most of the cost of
/// `kopgen manifests`. Debug builds (so every test) check each skipped node against kube-core.
#[derive(Debug, Clone)]
pub struct StructuralRewriter;

impl Transform for StructuralRewriter {
    fn transform(&mut self, schema: &mut Schema) {
        #[cfg(debug_assertions)]
        let original = schema.clone();
        if !normalize_for_rewriter(schema) {
            #[cfg(debug_assertions)]
            {
                *schema = original;
            }
            StructuralSchemaRewriter.transform(schema);
            return;
        }
        schemars::transform::transform_subschemas(self, schema);
        #[cfg(debug_assertions)]
        {
            let mut checked = original;
            StructuralSchemaRewriter.transform(&mut checked);
            debug_assert_eq!(
                &checked, schema,
                "kopgen skipped kube-core's rewriter on a node it changes"
            );
        }
    }
}

/// The keys kube-core's schema model reads; a null value of one of them is dropped.
const MODEL_KEYS: &[&str] = &[
    "description",
    "type",
    "format",
    "enum",
    "items",
    "additionalItems",
    "maxItems",
    "minItems",
    "contains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
];

/// Does what kube-core's round trip does to this node (its children already rewritten) and
/// returns true, or returns false if the node needs the rewriter itself. A node is only changed
/// when it returns true.
fn normalize_for_rewriter(schema: &mut Schema) -> bool {
    let Some(node) = schema.as_object_mut() else {
        return true;
    };
    if ["anyOf", "oneOf", "uniqueItems"]
        .iter()
        .any(|k| node.contains_key(*k))
    {
        return false;
    }
    if MODEL_KEYS
        .iter()
        .any(|k| node.get(*k).is_some_and(Value::is_null))
        || node.get("description").is_some_and(|d| !d.is_string())
        || node.get("required").is_some_and(|r| {
            r.as_array()
                .is_none_or(|names| !names.iter().all(Value::is_string))
        })
    {
        return false;
    }
    for key in ["properties", "patternProperties"] {
        if node.get(key).is_some_and(|p| !p.is_object()) {
            return false;
        }
    }
    if node
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
        && node
            .get("additionalProperties")
            .is_some_and(Value::is_boolean)
    {
        return false;
    }
    // The model keeps `required` as a set and omits empty collections.
    if let Some(Value::Array(names)) = node.get_mut("required") {
        names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        names.dedup();
    }
    for key in ["required", "properties", "patternProperties"] {
        let empty = match node.get(key) {
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::Object(map)) => map.is_empty(),
            _ => false,
        };
        if empty {
            node.remove(key);
        }
    }
    true
}

/// Past this many nodes the arena starts over: sharing pays off within a project's few
/// large library types, and an unbounded arena would grow with the project.
const ARENA_LIMIT: usize = 20_000;

impl Transforms {
    /// Runs the generator's transforms over `schema`, as `into_root_schema_for` does.
    ///
    /// kube-core's structural rewriting panics on schemas it cannot express (kube-derive's
    /// `crd()` would panic at run time); that panic is returned as a message instead.
    pub fn apply(&mut self, schema: &mut Schema) -> Result<(), String> {
        if self.arena.values.len() > ARENA_LIMIT {
            self.arena = Arena::default();
        }
        let generator = &mut self.generator;
        let arena = &mut self.arena;
        super::error::catch_panic(|| {
            let mut transforms: Vec<&mut dyn Transform> = generator
                .transforms_mut()
                .map(|t| t as &mut dyn Transform)
                .collect();
            apply(schema, &mut transforms, arena);
        })
    }
}

/// Transforms `schema` with `transforms`, bottom-up.
pub fn apply(schema: &mut Schema, transforms: &mut [&mut dyn Transform], arena: &mut Arena) {
    let root = std::mem::replace(schema, Schema::from(true)).to_value();
    let placeholder = process(root, transforms, arena);
    let expanded = arena.expand(&placeholder);
    *schema = Schema::try_from(expanded).unwrap_or_else(|_| Schema::from(true));
}

/// Transforms `node` (whose subtree is untransformed) and returns its placeholder.
fn process(node: Value, transforms: &mut [&mut dyn Transform], arena: &mut Arena) -> Value {
    let Value::Object(mut map) = node else {
        return node;
    };
    // 1. Children first, each to a placeholder.
    for_each_child(&mut map, |child| {
        let owned = std::mem::take(child);
        *child = process(owned, transforms, arena);
    });
    // The result depends only on this node's own keys and its (transformed) children.
    let memo_key = serde_json::to_string(&map).unwrap_or_default();
    if let Some(done) = arena.done.get(&memo_key) {
        return done.clone();
    }
    // 2. Bring the children back as their shallow transformed nodes (grandchildren stay placeholders).
    for_each_child(&mut map, |child| *child = arena.resolve(child));
    // 3. The transforms, on this shallow tree.
    let mut shallow = match Schema::try_from(Value::Object(map)) {
        Ok(schema) => schema,
        Err(_) => return Value::Null,
    };
    for transform in transforms.iter_mut() {
        transform.transform(&mut shallow);
    }
    // 4. Children back to placeholders, then this node.
    let mut value = shallow.to_value();
    if let Value::Object(map) = &mut value {
        for_each_child(map, |child| {
            if child.is_object() && child.get(REF).is_none() {
                let owned = std::mem::take(child);
                *child = arena.intern(owned);
            }
        });
    }
    let result = if value.is_object() {
        arena.intern(value)
    } else {
        value
    };
    arena.done.insert(memo_key, result.clone());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// kopgen's rewriter and kube-core's agree on every shape the shortcut handles or refuses.
    #[test]
    fn rewriter_shortcut_matches_kube_core() {
        let cases = [
            json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "required": ["b", "a", "b"]}),
            json!({"type": "object", "properties": {}, "required": []}),
            json!({"type": "object", "patternProperties": {}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            json!({"description": null, "type": "string"}),
            json!({"description": 5, "type": "string"}),
            json!({"type": "string", "format": null}),
            json!({"type": "object", "required": ["a", 1]}),
            json!({"type": "object", "properties": []}),
            json!({"type": "strange"}),
            json!({"type": "integer", "maxItems": -1, "default": null}),
            json!({"oneOf": [{"type": "string", "enum": ["A"]}, {"type": "string", "enum": ["B"]}]}),
            json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}, "x-kubernetes-int-or-string": true}),
            json!(true),
        ];
        for case in cases {
            let mut ours = Schema::try_from(case.clone()).expect("schema");
            let mut theirs = ours.clone();
            StructuralRewriter.transform(&mut ours);
            StructuralSchemaRewriter.transform(&mut theirs);
            assert_eq!(ours, theirs, "on {case}");
        }
    }

    #[test]
    fn shortcut_applies_to_plain_struct_nodes() {
        let mut node = Schema::try_from(
            json!({"type": "object", "properties": {"b": {}, "a": {}}, "required": ["b", "a"]}),
        )
        .expect("schema");
        assert!(normalize_for_rewriter(&mut node));
        assert_eq!(node.get("required"), Some(&json!(["a", "b"])));
        let mut hoisted = Schema::try_from(json!({"oneOf": []})).expect("schema");
        assert!(!normalize_for_rewriter(&mut hoisted));
    }
}
