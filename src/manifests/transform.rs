//! Runs the transforms of kube-derive's generator (schemars' openapi3 set and kube-core's
//! structural rewriting) over a root schema, in the order `into_root_schema_for` runs them, with
//! identical results but in time linear in the schema's size.
//!
//! The one transform that is not linear is kube-core's `StructuralSchemaRewriter`: at every node
//! it deserializes the node's entire subtree into its own model and serializes it back, so a
//! tree is re-read once per ancestor. kopgen's [`StructuralRewriter`] does what that round trip
//! does directly on the nodes where the result is plain normalization (most of them), and at
//! the others (`oneOf`/`anyOf`, `uniqueItems`, ...) runs kube-core's rewriter on a shallow copy:
//! grandchildren are set aside behind placeholders (equal subtrees share one, so the rewriter's
//! equality checks still compare content) and put back afterwards. Debug builds (every test)
//! check each shortcut against kube-core.

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

/// The transforms of kube-derive's generator, with kube-core's rewriter replaced by
/// [`StructuralRewriter`].
pub struct Transforms {
    generator: schemars::SchemaGenerator,
}

impl Default for Transforms {
    fn default() -> Self {
        let mut settings = super::settings::kube_settings();
        for transform in &mut settings.transforms {
            if transform.is::<StructuralSchemaRewriter>() {
                *transform = Box::new(StructuralRewriter);
            }
        }
        Self {
            generator: schemars::SchemaGenerator::new(settings),
        }
    }
}

impl Transforms {
    /// Runs the generator's transforms over `schema`, as `into_root_schema_for` does.
    ///
    /// kube-core's structural rewriting panics on schemas it cannot express (kube-derive's
    /// `crd()` would panic at run time); that panic is returned as a message instead.
    pub fn apply(&mut self, schema: &mut Schema) -> Result<(), String> {
        let generator = &mut self.generator;
        super::error::catch_panic(|| {
            for transform in generator.transforms_mut() {
                transform.transform(schema);
            }
        })
    }
}

/// kube-core's `StructuralSchemaRewriter`, in linear time.
///
/// The rewriter deserializes each node into its own schema model and serializes it back. Apart
/// from hoisting `oneOf`/`anyOf`, dropping `uniqueItems` and folding a boolean
/// `additionalProperties` beside `properties`, that round trip only normalizes: `required`
/// sorted and deduplicated, empty `required`/`properties`/`patternProperties` dropped (and if
/// the node does not fit its model, nothing changes). Such nodes, whose children were rewritten
/// already, are normalized here directly; the others go to kube-core, shallow.
#[derive(Debug, Clone)]
pub struct StructuralRewriter;

impl Transform for StructuralRewriter {
    fn transform(&mut self, schema: &mut Schema) {
        schemars::transform::transform_subschemas(self, schema);
        #[cfg(debug_assertions)]
        let original = schema.clone();
        if normalize_for_rewriter(schema) {
            #[cfg(debug_assertions)]
            {
                let mut checked = original;
                rewrite_shallow(&mut checked);
                debug_assert_eq!(
                    &checked, schema,
                    "kopgen normalized a node differently from kube-core's rewriter"
                );
            }
            return;
        }
        #[cfg(debug_assertions)]
        {
            *schema = original;
        }
        rewrite_shallow(schema);
    }
}

/// kube-core's rewriter on `schema` with its grandchildren set aside: its recursion then only
/// revisits the (already rewritten) children, not the whole subtree.
fn rewrite_shallow(schema: &mut Schema) {
    let Some(node) = schema.as_object_mut() else {
        StructuralSchemaRewriter.transform(schema);
        return;
    };
    let mut aside = Aside::default();
    for_each_child(node, |child| {
        if let Value::Object(child) = child {
            for_each_child(child, |grandchild| aside.hide(grandchild));
        }
    });
    StructuralSchemaRewriter.transform(schema);
    let mut value = std::mem::replace(schema, Schema::from(true)).to_value();
    aside.restore(&mut value);
    *schema = Schema::try_from(value).unwrap_or_else(|_| Schema::from(true));
}

/// Subtrees set aside behind placeholders, interned by content.
#[derive(Default)]
struct Aside {
    subtrees: Vec<Value>,
    ids: HashMap<String, usize>,
}

impl Aside {
    fn hide(&mut self, subtree: &mut Value) {
        if !subtree.is_object() {
            return;
        }
        let key = subtree.to_string();
        let id = match self.ids.get(&key) {
            Some(id) => *id,
            None => {
                self.subtrees.push(std::mem::take(subtree));
                self.ids.insert(key, self.subtrees.len() - 1);
                self.subtrees.len() - 1
            }
        };
        let mut placeholder = Map::new();
        placeholder.insert(REF.into(), Value::from(id));
        *subtree = Value::Object(placeholder);
    }

    /// Puts every subtree back where its placeholder ended up, with any keys the rewriter set
    /// on the placeholder laid over it.
    fn restore(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                let stored = map
                    .get(REF)
                    .and_then(Value::as_u64)
                    .and_then(|id| self.subtrees.get(id as usize));
                if let Some(stored) = stored {
                    let mut subtree = stored.clone();
                    if let Value::Object(node) = &mut subtree {
                        for (k, v) in std::mem::take(map) {
                            if k != REF {
                                node.insert(k, v);
                            }
                        }
                    }
                    *value = subtree;
                    return;
                }
                map.values_mut().for_each(|v| self.restore(v));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.restore(v)),
            _ => {}
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
    // One look at each entry (a node has a handful) instead of a lookup per model key.
    let mut properties = false;
    let mut boolean_additional = false;
    let mut required = None;
    let mut empty = [false; 2];
    for (key, value) in node.iter() {
        match key.as_str() {
            "anyOf" | "oneOf" | "uniqueItems" => return false,
            "description" if !value.is_string() => return false,
            "required" => match value.as_array() {
                Some(names) if names.iter().all(Value::is_string) => {
                    required = Some(names.is_empty());
                }
                _ => return false,
            },
            "properties" | "patternProperties" => match value.as_object() {
                Some(map) => {
                    let is_properties = key == "properties";
                    properties |= is_properties && !map.is_empty();
                    empty[usize::from(!is_properties)] = map.is_empty();
                }
                None => return false,
            },
            "additionalProperties" if value.is_null() => return false,
            "additionalProperties" => boolean_additional = value.is_boolean(),
            key if value.is_null() && MODEL_KEYS.contains(&key) => return false,
            _ => {}
        }
    }
    if properties && boolean_additional {
        return false;
    }
    // The model keeps `required` as a set and omits empty collections.
    match required {
        Some(true) => {
            node.remove("required");
        }
        Some(false) => {
            if let Some(Value::Array(names)) = node.get_mut("required")
                && !names.is_sorted_by(|a, b| a.as_str() < b.as_str())
            {
                names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                names.dedup();
            }
        }
        None => {}
    }
    for (key, empty) in ["properties", "patternProperties"].into_iter().zip(empty) {
        if empty {
            node.remove(key);
        }
    }
    true
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

    /// With the linear rewriter in kube-core's place, the transforms give what kube-derive's
    /// generator gives: each keyword some transform rewrites, nested deep in the tree.
    #[test]
    fn transforms_equal_kube_derives_generator() {
        let nested = |inner: Value| json!({"type": "object", "properties": {"outer": {"type": "array", "items": {"type": "object", "properties": {"a": inner}}}}});
        let cases = [
            nested(json!({"type": "string", "const": "x"})),
            nested(json!({"type": "string", "examples": ["e", "f"]})),
            nested(json!({"type": "array", "prefixItems": [{"type": "string"}], "items": false})),
            nested(json!({"$ref": "#/components/schemas/X", "description": "d"})),
            nested(
                json!({"type": "object", "properties": {"b": {"type": "string"}}, "unevaluatedProperties": false, "allOf": [{"properties": {"c": {"type": "integer"}}}]}),
            ),
            nested(
                json!({"type": "object", "properties": {"b": true, "c": {"type": "array", "items": true}}}),
            ),
            nested(json!({"type": "null"})),
            nested(json!({"type": ["string", "null"]})),
            nested(
                json!({"anyOf": [{"type": "string", "enum": ["A", "B"]}, {"enum": [null], "nullable": true}]}),
            ),
            nested(
                json!({"type": "object", "properties": {"q": {"x-kubernetes-int-or-string": true}}}),
            ),
            nested(json!({"type": "object", "required": ["q"], "properties": {
                "q": {"x-kubernetes-int-or-string": true},
                "r": {"x-kubernetes-int-or-string": true, "nullable": false},
                "s": {"x-kubernetes-int-or-string": true},
            }})),
            nested(
                json!({"type": "object", "additionalProperties": false, "properties": {"b": {"type": "string"}}}),
            ),
            nested(json!({"type": "string"})),
            json!(true),
        ];
        let mut transforms = Transforms::default();
        for case in cases {
            let mut ours = Schema::try_from(case.clone()).expect("schema");
            let ours_result = transforms.apply(&mut ours);
            let mut generator =
                schemars::SchemaGenerator::new(super::super::settings::kube_settings());
            let mut theirs = Schema::try_from(case.clone()).expect("schema");
            let theirs_result = crate::manifests::error::catch_panic(|| {
                for transform in generator.transforms_mut() {
                    transform.transform(&mut theirs);
                }
            });
            assert_eq!(ours_result.is_ok(), theirs_result.is_ok(), "on {case}");
            if ours_result.is_ok() {
                assert_eq!(ours, theirs, "on {case}");
            }
        }
    }
}
