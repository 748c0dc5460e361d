//! A schema's JSON read as k8s-openapi's `JSONSchemaProps`, without building one.
//!
//! `crd()` puts the generated schema in the CRD through `serde_json::from_value`, and
//! serde_yaml writes the typed `JSONSchemaProps`. Building that typed tree (a struct of some
//! fifty fields per node) and taking it apart again cost more than writing the YAML. Here
//! [`check`] says whether the JSON has exactly the shape that round trip reads (each keyword of
//! the type `JSONSchemaProps` gives it, no `null`s, keys in the order it writes them), and
//! [`Props`] then writes the JSON as the typed tree would be written. Anything else (a
//! `dependencies` keyword, a `null`, a wrong type) takes the typed round trip, which also
//! reports the schemas it cannot read.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde::ser::{Error, Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde_json::{Map, Value};

/// How `JSONSchemaProps` types a keyword.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Bool,
    Int,
    Float,
    /// `JSON`: any value but `null`, which reads as absent.
    Json,
    /// `Vec<JSON>`.
    JsonList,
    Schema,
    SchemaOrBool,
    SchemaOrArray,
    SchemaList,
    SchemaMap,
    StrList,
    Rules,
    /// Rare keywords left to the typed round trip.
    Typed,
}

/// `JSONSchemaProps`' keywords in the order it writes them (which is sorted by bytes, as
/// `serde_json::Map` keeps keys), with their types.
const KEYWORDS: [(&str, Kind); 44] = [
    ("$ref", Kind::Str),
    ("$schema", Kind::Str),
    ("additionalItems", Kind::SchemaOrBool),
    ("additionalProperties", Kind::SchemaOrBool),
    ("allOf", Kind::SchemaList),
    ("anyOf", Kind::SchemaList),
    ("default", Kind::Json),
    ("definitions", Kind::SchemaMap),
    ("dependencies", Kind::Typed),
    ("description", Kind::Str),
    ("enum", Kind::JsonList),
    ("example", Kind::Json),
    ("exclusiveMaximum", Kind::Bool),
    ("exclusiveMinimum", Kind::Bool),
    ("externalDocs", Kind::Typed),
    ("format", Kind::Str),
    ("id", Kind::Str),
    ("items", Kind::SchemaOrArray),
    ("maxItems", Kind::Int),
    ("maxLength", Kind::Int),
    ("maxProperties", Kind::Int),
    ("maximum", Kind::Float),
    ("minItems", Kind::Int),
    ("minLength", Kind::Int),
    ("minProperties", Kind::Int),
    ("minimum", Kind::Float),
    ("multipleOf", Kind::Float),
    ("not", Kind::Schema),
    ("nullable", Kind::Bool),
    ("oneOf", Kind::SchemaList),
    ("pattern", Kind::Str),
    ("patternProperties", Kind::SchemaMap),
    ("properties", Kind::SchemaMap),
    ("required", Kind::StrList),
    ("title", Kind::Str),
    ("type", Kind::Str),
    ("uniqueItems", Kind::Bool),
    ("x-kubernetes-embedded-resource", Kind::Bool),
    ("x-kubernetes-int-or-string", Kind::Bool),
    ("x-kubernetes-list-map-keys", Kind::StrList),
    ("x-kubernetes-list-type", Kind::Str),
    ("x-kubernetes-map-type", Kind::Str),
    ("x-kubernetes-preserve-unknown-fields", Kind::Bool),
    ("x-kubernetes-validations", Kind::Rules),
];

/// `ValidationRule`'s fields, in the order it writes them; `rule` is required.
const RULE_FIELDS: [(&str, Kind); 6] = [
    ("fieldPath", Kind::Str),
    ("message", Kind::Str),
    ("messageExpression", Kind::Str),
    ("optionalOldSelf", Kind::Bool),
    ("reason", Kind::Str),
    ("rule", Kind::Str),
];

/// The keyword's type and its position in write order; `None` for keys the typed tree drops.
/// A `match` (which compiles to a length switch) rather than a search: it runs for every key
/// of every schema node, twice.
fn keyword(key: &str) -> Option<(usize, Kind)> {
    let i = match key {
        "$ref" => 0,
        "$schema" => 1,
        "additionalItems" => 2,
        "additionalProperties" => 3,
        "allOf" => 4,
        "anyOf" => 5,
        "default" => 6,
        "definitions" => 7,
        "dependencies" => 8,
        "description" => 9,
        "enum" => 10,
        "example" => 11,
        "exclusiveMaximum" => 12,
        "exclusiveMinimum" => 13,
        "externalDocs" => 14,
        "format" => 15,
        "id" => 16,
        "items" => 17,
        "maxItems" => 18,
        "maxLength" => 19,
        "maxProperties" => 20,
        "maximum" => 21,
        "minItems" => 22,
        "minLength" => 23,
        "minProperties" => 24,
        "minimum" => 25,
        "multipleOf" => 26,
        "not" => 27,
        "nullable" => 28,
        "oneOf" => 29,
        "pattern" => 30,
        "patternProperties" => 31,
        "properties" => 32,
        "required" => 33,
        "title" => 34,
        "type" => 35,
        "uniqueItems" => 36,
        "x-kubernetes-embedded-resource" => 37,
        "x-kubernetes-int-or-string" => 38,
        "x-kubernetes-list-map-keys" => 39,
        "x-kubernetes-list-type" => 40,
        "x-kubernetes-map-type" => 41,
        "x-kubernetes-preserve-unknown-fields" => 42,
        "x-kubernetes-validations" => 43,
        _ => return None,
    };
    KEYWORDS.get(i).map(|&(_, kind)| (i, kind))
}

/// Whether `schema` reads as a `JSONSchemaProps` that writes back as [`Props`] writes it.
pub fn check(schema: &Map<String, Value>) -> bool {
    let mut last = None;
    for (key, value) in schema {
        let Some((rank, kind)) = keyword(key) else {
            continue;
        };
        // Written in key order: only if that is the typed order.
        if last.is_some_and(|l| l >= rank) {
            return false;
        }
        last = Some(rank);
        if !fits(kind, value) {
            return false;
        }
    }
    true
}

fn fits(kind: Kind, value: &Value) -> bool {
    let schema = |v: &Value| v.as_object().is_some_and(check);
    match kind {
        Kind::Str => value.is_string(),
        Kind::Bool => value.is_boolean(),
        Kind::Int => value.as_i64().is_some(),
        Kind::Float => value.is_number(),
        Kind::Json => !value.is_null(),
        Kind::JsonList => value.is_array(),
        Kind::Schema => schema(value),
        Kind::SchemaOrBool => value.is_boolean() || schema(value),
        Kind::SchemaOrArray => match value {
            Value::Array(items) => items.iter().all(schema),
            other => schema(other),
        },
        Kind::SchemaList => value.as_array().is_some_and(|a| a.iter().all(schema)),
        Kind::SchemaMap => value
            .as_object()
            .is_some_and(|m| m.values().all(schema) && sorted(m)),
        Kind::StrList => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string)),
        Kind::Rules => value.as_array().is_some_and(|rules| {
            rules.iter().all(|rule| {
                rule.as_object().is_some_and(|fields| {
                    fields.contains_key("rule")
                        && fields.iter().all(|(k, v)| {
                            RULE_FIELDS
                                .iter()
                                .find(|(name, _)| name == k)
                                .is_none_or(|(_, kind)| fits(*kind, v))
                        })
                        && sorted(fields)
                })
            })
        }),
        Kind::Typed => false,
    }
}

/// Whether a map's keys come in byte order, as a `BTreeMap<String, _>` writes them.
fn sorted(map: &Map<String, Value>) -> bool {
    map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b)
}

/// A schema [`check`] accepted, written as its `JSONSchemaProps` would be.
pub struct Props<'a>(pub &'a Map<String, Value>);

impl Serialize for Props<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = self.0.keys().filter(|k| keyword(k).is_some()).count();
        let mut state = serializer.serialize_struct("JSONSchemaProps", fields)?;
        for (key, value) in self.0 {
            let Some((rank, kind)) = keyword(key) else {
                continue;
            };
            let name = KEYWORDS[rank].0;
            state.serialize_field(name, &Typed(kind, value))?;
        }
        state.end()
    }
}

/// One keyword's value, written as its type in `JSONSchemaProps`.
struct Typed<'a>(Kind, &'a Value);

impl<'a> Serialize for Typed<'a> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let unchecked = || S::Error::custom("a schema keyword that check() did not accept");
        let schema = |v: &'a Value| v.as_object().map(Props).ok_or_else(unchecked);
        match (self.0, self.1) {
            (Kind::Str | Kind::Bool | Kind::Json | Kind::JsonList | Kind::StrList, value) => {
                value.serialize(serializer)
            }
            (Kind::Int, value) => value.as_i64().ok_or_else(unchecked)?.serialize(serializer),
            (Kind::Float, value) => value.as_f64().ok_or_else(unchecked)?.serialize(serializer),
            (Kind::SchemaOrBool, Value::Bool(b)) => b.serialize(serializer),
            (Kind::Schema | Kind::SchemaOrBool | Kind::SchemaOrArray, Value::Object(map)) => {
                Props(map).serialize(serializer)
            }
            (Kind::SchemaOrArray | Kind::SchemaList, Value::Array(items)) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&schema(item)?)?;
                }
                seq.end()
            }
            (Kind::SchemaMap, Value::Object(map)) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    out.serialize_entry(key, &schema(value)?)?;
                }
                out.end()
            }
            (Kind::Rules, Value::Array(rules)) => {
                let mut seq = serializer.serialize_seq(Some(rules.len()))?;
                for rule in rules {
                    seq.serialize_element(&Rule(rule.as_object().ok_or_else(unchecked)?))?;
                }
                seq.end()
            }
            _ => Err(unchecked()),
        }
    }
}

/// A `ValidationRule`, written as k8s-openapi writes it.
struct Rule<'a>(&'a Map<String, Value>);

impl Serialize for Rule<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = |k: &String| RULE_FIELDS.iter().find(|(name, _)| name == k);
        let fields = self.0.keys().filter(|k| known(k).is_some()).count();
        let mut state = serializer.serialize_struct("ValidationRule", fields)?;
        for (key, value) in self.0 {
            if let Some((name, _)) = known(key) {
                state.serialize_field(name, value)?;
            }
        }
        state.end()
    }
}

/// A CRD whose versions' schemas are JSON that [`check`] accepted, by version name, written
/// as k8s-openapi writes the CRD holding their `JSONSchemaProps`.
pub struct Crd<'a> {
    pub crd: &'a CustomResourceDefinition,
    pub schemas: &'a [(String, &'a Map<String, Value>)],
}

impl<'a> Crd<'a> {
    /// The schema of the version named `version`, if it has one.
    pub fn schema_of(&self, version: &str) -> Option<&'a Map<String, Value>> {
        self.schemas
            .iter()
            .find(|(name, _)| name == version)
            .map(|(_, schema)| *schema)
    }
}

impl Serialize for Crd<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let crd = self.crd;
        let kind = <CustomResourceDefinition as k8s_openapi::Resource>::KIND;
        let mut state = serializer.serialize_struct(kind, 4 + usize::from(crd.status.is_some()))?;
        state.serialize_field(
            "apiVersion",
            <CustomResourceDefinition as k8s_openapi::Resource>::API_VERSION,
        )?;
        state.serialize_field("kind", kind)?;
        state.serialize_field("metadata", &crd.metadata)?;
        state.serialize_field("spec", &Spec(self))?;
        if let Some(status) = &crd.status {
            state.serialize_field("status", status)?;
        }
        state.end()
    }
}

/// `CustomResourceDefinitionSpec`, as k8s-openapi writes it.
struct Spec<'a>(&'a Crd<'a>);

impl Serialize for Spec<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let spec = &self.0.crd.spec;
        let fields = 4
            + usize::from(spec.conversion.is_some())
            + usize::from(spec.preserve_unknown_fields.is_some());
        let mut state = serializer.serialize_struct("CustomResourceDefinitionSpec", fields)?;
        if let Some(conversion) = &spec.conversion {
            state.serialize_field("conversion", conversion)?;
        }
        state.serialize_field("group", &spec.group)?;
        state.serialize_field("names", &spec.names)?;
        if let Some(preserve) = &spec.preserve_unknown_fields {
            state.serialize_field("preserveUnknownFields", preserve)?;
        }
        state.serialize_field("scope", &spec.scope)?;
        let versions: Vec<Version<'_>> = spec
            .versions
            .iter()
            .map(|version| Version {
                version,
                schema: self.0.schema_of(&version.name),
            })
            .collect();
        state.serialize_field("versions", &versions)?;
        state.end()
    }
}

/// `CustomResourceDefinitionVersion`, with its schema from JSON where there is one.
struct Version<'a> {
    version: &'a CustomResourceDefinitionVersion,
    schema: Option<&'a Map<String, Value>>,
}

impl Serialize for Version<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let v = self.version;
        let has_schema = self.schema.is_some() || v.schema.is_some();
        let fields = 3
            + usize::from(v.additional_printer_columns.is_some())
            + usize::from(v.deprecated.is_some())
            + usize::from(v.deprecation_warning.is_some())
            + usize::from(has_schema)
            + usize::from(v.selectable_fields.is_some())
            + usize::from(v.subresources.is_some());
        let mut state = serializer.serialize_struct("CustomResourceDefinitionVersion", fields)?;
        if let Some(columns) = &v.additional_printer_columns {
            state.serialize_field("additionalPrinterColumns", columns)?;
        }
        if let Some(deprecated) = &v.deprecated {
            state.serialize_field("deprecated", deprecated)?;
        }
        if let Some(warning) = &v.deprecation_warning {
            state.serialize_field("deprecationWarning", warning)?;
        }
        state.serialize_field("name", &v.name)?;
        match (self.schema, &v.schema) {
            (Some(schema), _) => state.serialize_field("schema", &Validation(schema))?,
            (None, Some(typed)) => state.serialize_field("schema", typed)?,
            (None, None) => {}
        }
        if let Some(fields) = &v.selectable_fields {
            state.serialize_field("selectableFields", fields)?;
        }
        state.serialize_field("served", &v.served)?;
        state.serialize_field("storage", &v.storage)?;
        if let Some(subresources) = &v.subresources {
            state.serialize_field("subresources", subresources)?;
        }
        state.end()
    }
}

/// `CustomResourceValidation` holding a schema.
struct Validation<'a>(&'a Map<String, Value>);

impl Serialize for Validation<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("CustomResourceValidation", 1)?;
        state.serialize_field("openAPIV3Schema", &Props(self.0))?;
        state.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn typed(value: &Value) -> Option<String> {
        let props: JSONSchemaProps = serde_json::from_value(value.clone()).ok()?;
        serde_yaml::to_string(&props).ok()
    }

    #[test]
    fn keywords_are_in_write_order() {
        for (i, (name, _)) in KEYWORDS.iter().enumerate() {
            assert_eq!(keyword(name).map(|(rank, _)| rank), Some(i), "{name}");
        }
        assert!(keyword("x-unknown").is_none());
        let all: Vec<&str> = KEYWORDS.iter().map(|(k, _)| *k).collect();
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted);
        let names: Vec<&str> = RULE_FIELDS.iter().map(|(k, _)| *k).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    /// Every keyword of every type, nested: written as the typed round trip writes it.
    #[test]
    fn accepted_schemas_write_as_the_typed_tree() {
        let mut schema = json!({
            "$ref": "#/x", "$schema": "s", "additionalItems": false,
            "additionalProperties": {"type": "string", "x-unknown": 1},
            "allOf": [{"minimum": 1}], "anyOf": [{"type": "integer"}, {"type": "string"}],
            "default": {"a": [1, 2.5, null]}, "definitions": {"d": {"type": "object"}},
            "description": "multi\nline", "enum": [null, 1, "a"], "example": 3,
            "exclusiveMaximum": true, "exclusiveMinimum": false, "format": "int32", "id": "i",
        });
        let more = [
            json!({
                "items": [{"type": "string"}, {"maxLength": 3}], "maxItems": 9, "maxLength": 8,
                "maxProperties": 7, "maximum": 5, "minItems": 1, "minLength": 2,
                "minProperties": 3, "minimum": -1.5, "multipleOf": 2, "not": {"pattern": "^a"},
            }),
            json!({
                "nullable": true, "oneOf": [{"required": ["a"]}], "pattern": "p",
                "patternProperties": {"^x": {}},
                "properties": {"b": {"items": {"type": "integer"}}, "a": {"title": "t"}},
                "required": ["a", "b"], "title": "T", "type": "object", "uniqueItems": true,
            }),
            json!({
                "x-kubernetes-embedded-resource": false, "x-kubernetes-int-or-string": true,
                "x-kubernetes-list-map-keys": ["k"], "x-kubernetes-list-type": "map",
                "x-kubernetes-map-type": "atomic", "x-kubernetes-preserve-unknown-fields": true,
                "x-other": {"ignored": true},
            }),
            json!({"x-kubernetes-validations": [
                {"rule": "self.a > 0", "message": "m", "optionalOldSelf": true, "extra": 1},
                {"rule": "r", "fieldPath": ".a", "messageExpression": "e", "reason": "FieldValueInvalid"},
            ]}),
        ];
        for part in more {
            if let (Some(all), Value::Object(part)) = (schema.as_object_mut(), part) {
                all.extend(part);
            }
        }
        let map = schema.as_object().expect("object");
        assert!(check(map));
        assert_eq!(serde_yaml::to_string(&Props(map)).ok(), typed(&schema));
        assert_eq!(
            crate::manifests::yaml::to_string(&Props(map)).ok(),
            typed(&schema)
        );
    }

    /// The schemas kube-derive's generator makes take the JSON path: `PodTemplateSpec`'s, with
    /// every transform `crd()` runs, is accepted and writes as its typed tree.
    #[test]
    fn generated_schemas_are_accepted() {
        use k8s_openapi::api::core::v1::PodTemplateSpec;
        let generator = schemars::SchemaGenerator::new(crate::manifests::schema::kube_settings());
        let schema = generator
            .into_root_schema_for::<PodTemplateSpec>()
            .to_value();
        let map = schema.as_object().expect("object");
        assert!(check(map));
        assert_eq!(
            crate::manifests::yaml::to_string(&Props(map)).ok(),
            typed(&schema)
        );
    }

    /// What the typed round trip reads differently, or cannot read, is left to it.
    #[test]
    fn other_shapes_are_left_to_the_typed_round_trip() {
        for schema in [
            json!({"description": null}),
            json!({"default": null}),
            json!({"maxLength": 2.0}),
            json!({"maxLength": "2"}),
            json!({"type": ["string", "null"]}),
            json!({"properties": {"a": {"nullable": "yes"}}}),
            json!({"items": [{"type": 1}]}),
            json!({"x-kubernetes-validations": [{"message": "no rule"}]}),
            json!({"x-kubernetes-validations": [{"rule": "r", "optionalOldSelf": "true"}]}),
            json!({"dependencies": {"a": ["b"]}}),
            json!({"externalDocs": {"url": "u"}}),
            json!({"additionalProperties": 1}),
        ] {
            assert!(!check(schema.as_object().expect("object")), "{schema}");
        }
    }
}
