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
