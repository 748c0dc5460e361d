//! The types CEL rules see, with the bounds the API server's cost estimate reads: the most
//! elements (characters, items, properties) each value can hold and the least bytes it takes
//! serialized, derived from the schema as apiserver's `SchemaDeclType` derives them.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// The API server's request size limit, which bounds what a schema leaves unbounded.
pub const MAX_REQUEST_SIZE: i64 = 3 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// `x-kubernetes-int-or-string`: an integer or a string, typed `dyn`.
    IntOrString,
    List(Box<Decl>),
    Map(Box<Decl>),
    Object(BTreeMap<String, Decl>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    pub kind: Kind,
    /// The most characters, items or properties; 0 for scalars, as the API server has it.
    pub max_elements: i64,
    pub min_size: i64,
    /// Whether the schema bounds `max_elements` (`maxLength`, `maxItems`, `maxProperties`, an
    /// enum, a format) rather than the request size limit.
    pub bounded: bool,
}

impl Decl {
    fn new(kind: Kind, max_elements: i64, min_size: i64) -> Decl {
        Decl {
            kind,
            max_elements,
            min_size,
            bounded: true,
        }
    }

    fn unbounded(mut self, unbounded: bool) -> Decl {
        self.bounded = !unbounded;
        self
    }

    /// The node at `path` (field names, `@items`, `@values`), for changing a bound.
    pub fn at_mut(&mut self, path: &[String]) -> Option<&mut Decl> {
        let mut node = self;
        for step in path {
            node = match (step.as_str(), &mut node.kind) {
                ("@items" | "@values", Kind::List(item) | Kind::Map(item)) => item,
                (_, Kind::Object(fields)) => fields.get_mut(step)?,
                _ => return None,
            };
        }
        Some(node)
    }
}

/// The type of the schema node a rule sits on. `root`: the resource's root (or an embedded
/// resource), which gains `apiVersion`, `kind` and `metadata.name`/`generateName`.
pub fn decl(s: &JSONSchemaProps, root: bool) -> Option<Decl> {
    if s.x_kubernetes_int_or_string == Some(true) {
        let max = match s.max_length {
            Some(max) => max.max(0) * 4,
            None => MAX_REQUEST_SIZE - 2,
        };
        return Some(Decl::new(Kind::IntOrString, max, 1).unbounded(s.max_length.is_none()));
    }
    match s.type_.as_deref()? {
        "array" => {
            let Some(JSONSchemaPropsOrArray::Schema(items)) = &s.items else {
                return None;
            };
            let item = decl(items, items.x_kubernetes_embedded_resource == Some(true))?;
            let max = match s.max_items {
                Some(max) => max.max(0),
                None => (MAX_REQUEST_SIZE - 2) / (item.min_size + 1),
            };
            Some(Decl::new(Kind::List(Box::new(item)), max, 2).unbounded(s.max_items.is_none()))
        }
        "object" => {
            if let Some(JSONSchemaPropsOrBool::Schema(values)) = &s.additional_properties {
                let value = decl(values, values.x_kubernetes_embedded_resource == Some(true))?;
                let max = match s.max_properties {
                    Some(max) => max.max(0),
                    None => (MAX_REQUEST_SIZE - 2) / (value.min_size + 6),
                };
                return Some(
                    Decl::new(Kind::Map(Box::new(value)), max, 2)
                        .unbounded(s.max_properties.is_none()),
                );
            }
            let mut fields = BTreeMap::new();
            let mut min_size = 2;
            let required: Vec<&String> = s.required.iter().flatten().collect();
            for (name, property) in s.properties.iter().flatten() {
                let Some(field) = decl(
                    property,
                    property.x_kubernetes_embedded_resource == Some(true),
                ) else {
                    continue;
                };
                if required.contains(&name) && property.default.is_none() {
                    min_size += name.len() as i64 + field.min_size + 4;
                }
                if let Some(escaped) = escape(name) {
                    fields.insert(escaped, field);
                }
            }
            if root {
                let string = || Decl::new(Kind::String, MAX_REQUEST_SIZE - 2, 2).unbounded(true);
                fields.entry("apiVersion".into()).or_insert_with(string);
                fields.entry("kind".into()).or_insert_with(string);
                let metadata = fields
                    .entry("metadata".into())
                    .or_insert_with(|| Decl::new(Kind::Object(BTreeMap::new()), 0, 2));
                if let Kind::Object(meta) = &mut metadata.kind {
                    meta.entry("name".into()).or_insert_with(string);
                    meta.entry("generateName".into()).or_insert_with(string);
                }
            }
            Some(Decl::new(Kind::Object(fields), 0, min_size))
        }
        "string" => Some(string_decl(s)),
        "boolean" => Some(Decl::new(Kind::Bool, 0, 4)),
        "number" => Some(Decl::new(Kind::Double, 0, 1)),
        "integer" => Some(Decl::new(Kind::Int, 0, 1)),
        _ => None,
    }
}

fn string_decl(s: &JSONSchemaProps) -> Decl {
    let unbounded = MAX_REQUEST_SIZE - 2;
    match s.format.as_deref() {
        Some("byte") => Decl::new(Kind::Bytes, s.max_length.map_or(unbounded, |m| m.max(0)), 2)
            .unbounded(s.max_length.is_none()),
        Some("duration") => Decl::new(Kind::Duration, 32, 3),
        Some("date") => Decl::new(Kind::Timestamp, 12, 12),
        Some("date-time") => Decl::new(Kind::Timestamp, 32, 21),
        _ => {
            let (max, bounded) = match (s.max_length, &s.enum_) {
                (Some(max), _) => (max.max(0) * 4, true),
                (None, Some(values)) if !values.is_empty() => (
                    values
                        .iter()
                        .filter_map(|v| v.0.as_str())
                        .map(|v| v.len() as i64)
                        .max()
                        .unwrap_or(0),
                    true,
                ),
                _ => (unbounded, false),
            };
            Decl::new(Kind::String, max, 2).unbounded(!bounded)
        }
    }
}

/// A property name as CEL rules spell it (apiserver's `Escape`): reserved words and the
/// characters `_`, `.`, `-`, `/` escaped; `None` for names CEL cannot reach.
pub fn escape(name: &str) -> Option<String> {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if name.is_empty()
        || name.starts_with(|c: char| c.is_ascii_digit())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}
