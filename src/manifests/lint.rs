//! Structural-schema lint: the rules the apiextensions API server enforces for v1 CRDs, checked
//! at generation time, plus warnings for data the API server would prune without a word.
//!
//! Findings name the JSON path in the CRD; the CLI maps that path back to the Rust field that
//! produced it (see the `locate` module).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One rule violation, at a path like `spec.template.containers[*]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub rule: &'static str,
    pub version: String,
    /// Property path below `openAPIV3Schema`, as field names (`spec`, `replicas`, `[*]` for items).
    pub path: Vec<String>,
    pub message: String,
    pub fix: &'static str,
}

/// The rules, for documentation and `--help`: (rule, what it checks, fix).
pub const RULES: &[(&str, &str, &str)] = &[
    (
        "untyped",
        "every schema node has a `type` (unless int-or-string or preserve-unknown-fields)",
        "use a typed field, `#[schemars(schema_with = ...)]`, or `#[schemars(extend(\"x-kubernetes-preserve-unknown-fields\" = true))]`",
    ),
    (
        "forbidden-keyword",
        "no `$ref`, `definitions`, `patternProperties`, `dependencies`, `additionalItems`",
        "avoid recursive types and patterned keys; use a map (`BTreeMap<String, T>`)",
    ),
    (
        "additional-properties-with-properties",
        "`additionalProperties` is not set beside `properties`",
        "flatten into either a struct or a map, not both",
    ),
    (
        "list-map-keys",
        "`x-kubernetes-list-type: map` lists name `x-kubernetes-list-map-keys` that are required scalar properties of the items",
        "make every key field a required (non-Option) string or integer of the item struct",
    ),
    (
        "metadata",
        "`metadata` restricts only `name` and `generateName`",
        "do not put other constraints on metadata",
    ),
    (
        "default-type",
        "defaults match their schema's type",
        "fix the default value or the field type",
    ),
    (
        "value-validation",
        "`anyOf`/`oneOf`/`allOf`/`not` branches do not set `type`, `default`, `nullable`, `additionalProperties` or `description`",
        "use an untagged enum of scalars or a struct with optional fields",
    ),
    (
        "cel",
        "`x-kubernetes-validations` rules are CEL expressions that parse",
        "fix the rule's syntax (see the CEL language definition)",
    ),
    (
        "pruned",
        "(warning) an object with no properties, no additionalProperties and no preserve-unknown-fields keeps no data",
        "type the field, or preserve unknown fields explicitly",
    ),
    (
        "missing-schema",
        "(warning) every version has a schema (the API server rejects a v1 CRD without one)",
        "remove `#[kube(schema = \"disabled\")]`, or install this CRD from the project that owns it",
    ),
];

/// Lints a CRD whose versions hold their schemas.
pub fn check(crd: &CustomResourceDefinition) -> Vec<Finding> {
    let schemas: Vec<(String, Value)> = crd
        .spec
        .versions
        .iter()
        .filter_map(|v| {
            let schema = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
            Some((v.name.clone(), serde_json::to_value(schema).ok()?))
        })
        .collect();
    check_with(crd, |version| {
        schemas
            .iter()
            .find(|(name, _)| name == version)
            .and_then(|(_, schema)| schema.as_object())
    })
}

/// Lints a CRD whose versions' schemas `schema_of` gives as JSON, by version name.
fn check_with<'s>(
    crd: &CustomResourceDefinition,
    schema_of: impl Fn(&str) -> Option<&'s Map<String, Value>>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for version in &crd.spec.versions {
        let mut ctx = Ctx {
            version: version.name.clone(),
            findings: &mut findings,
        };
        let Some(schema) = schema_of(&version.name) else {
            ctx.push(
                Severity::Warning,
                "missing-schema",
                Vec::new(),
                "this version has no schema (`#[kube(schema = \"disabled\")]`)".into(),
            );
            continue;
        };
        ctx.node(schema, &mut Vec::new(), false);
        if let Some(metadata) = object(schema, "properties").and_then(|p| object(p, "metadata")) {
            let extra = object(metadata, "properties")
                .is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"));
            if extra || string(metadata, "type").is_some_and(|t| t != "object") {
                ctx.push(
                    Severity::Error,
                    "metadata",
                    vec!["metadata".into()],
                    "metadata may only restrict name and generateName".into(),
                );
            }
        }
    }
    findings
}

type Schema = Map<String, Value>;

fn object<'s>(schema: &'s Schema, key: &str) -> Option<&'s Schema> {
    schema.get(key).and_then(Value::as_object)
}

fn string<'s>(schema: &'s Schema, key: &str) -> Option<&'s str> {
    schema.get(key).and_then(Value::as_str)
}

/// Keywords no structural schema may hold.
const FORBIDDEN: [&str; 5] = [
    "$ref",
    "definitions",
    "patternProperties",
    "dependencies",
    "additionalItems",
];

/// Keywords not allowed inside a value validation (`anyOf`, `oneOf`, `allOf`, `not`).
const VALUE_VALIDATION: [&str; 5] = [
    "type",
    "default",
    "nullable",
    "additionalProperties",
    "description",
];

/// The keywords of one node that the lint reads, gathered in one pass over its entries: a
/// node has a handful, and the lint asks about twenty (a lookup each would compare keys a
/// hundred times per node, on thousands of nodes).
#[derive(Default)]
struct Keywords<'s> {
    ty: Option<&'s Value>,
    preserve: bool,
    int_or_string: bool,
    embedded: bool,
    forbidden: [bool; 5],
    value_validation: [bool; 5],
    properties: Option<&'s Value>,
    additional: Option<&'s Value>,
    default: Option<&'s Value>,
    validations: Option<&'s Value>,
    list_type: Option<&'s Value>,
    items: Option<&'s Value>,
    /// `anyOf`, `oneOf`, `allOf`, in that order.
    branches: [Option<&'s Value>; 3],
    not: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s Schema) -> Self {
        let mut k = Self::default();
        for (key, value) in schema {
            let key = key.as_str();
            if let Some(i) = FORBIDDEN.iter().position(|f| *f == key) {
                k.forbidden[i] = true;
            }
            if let Some(i) = VALUE_VALIDATION.iter().position(|v| *v == key) {
                k.value_validation[i] = true;
            }
            let is_true = value.as_bool() == Some(true);
            match key {
                "type" => k.ty = Some(value),
                "x-kubernetes-preserve-unknown-fields" => k.preserve = is_true,
                "x-kubernetes-int-or-string" => k.int_or_string = is_true,
                "x-kubernetes-embedded-resource" => k.embedded = is_true,
                "properties" => k.properties = Some(value),
                "additionalProperties" => k.additional = Some(value),
                "default" => k.default = Some(value),
                "x-kubernetes-validations" => k.validations = Some(value),
                "x-kubernetes-list-type" => k.list_type = Some(value),
                "items" => k.items = Some(value),
                "anyOf" => k.branches[0] = Some(value),
                "oneOf" => k.branches[1] = Some(value),
                "allOf" => k.branches[2] = Some(value),
                "not" => k.not = Some(value),
                _ => {}
            }
        }
        k
    }
}

struct Ctx<'a> {
    version: String,
    findings: &'a mut Vec<Finding>,
}

fn fix_of(rule: &str) -> &'static str {
    RULES
        .iter()
        .find(|(r, _, _)| *r == rule)
        .map_or("", |(_, _, fix)| fix)
}

impl Ctx<'_> {
    fn push(&mut self, severity: Severity, rule: &'static str, path: Vec<String>, message: String) {
        self.findings.push(Finding {
            severity,
            rule,
            version: self.version.clone(),
            path,
            message,
            fix: fix_of(rule),
        });
    }

    fn node(&mut self, s: &Schema, path: &mut Vec<String>, in_value_validation: bool) {
        let keywords = Keywords::of(s);
        let preserve = keywords.preserve;
        let int_or_string = keywords.int_or_string;
        let ty = keywords.ty.and_then(Value::as_str);
        if !in_value_validation && ty.is_none() && !preserve && !int_or_string {
            self.push(
                Severity::Error,
                "untyped",
                path.clone(),
                "schema has no type".into(),
            );
        }
        for (keyword, present) in FORBIDDEN.into_iter().zip(keywords.forbidden) {
            if present {
                self.push(
                    Severity::Error,
                    "forbidden-keyword",
                    path.clone(),
                    format!("`{keyword}` is not allowed in a structural schema"),
                );
            }
        }
        let properties = keywords.properties.and_then(Value::as_object);
        let additional = keywords.additional;
        if properties.is_some_and(|p| !p.is_empty()) && additional.is_some() {
            self.push(
                Severity::Error,
                "additional-properties-with-properties",
                path.clone(),
                "`additionalProperties` and `properties` are mutually exclusive".into(),
            );
        }
        if in_value_validation {
            for (key, present) in VALUE_VALIDATION.into_iter().zip(keywords.value_validation) {
                if present {
                    self.push(
                        Severity::Error,
                        "value-validation",
                        path.clone(),
                        format!("`{key}` inside anyOf/oneOf/allOf/not"),
                    );
                }
            }
        }
        if let (Some(default), Some(ty)) = (keywords.default, ty) {
            let ok = match ty {
                "string" => default.is_string() || (int_or_string && default.is_number()),
                "integer" => {
                    default.is_i64() || default.is_u64() || (int_or_string && default.is_string())
                }
                "number" => default.is_number(),
                "boolean" => default.is_boolean(),
                "array" => default.is_array(),
                "object" => default.is_object(),
                _ => true,
            };
            if !ok {
                self.push(
                    Severity::Error,
                    "default-type",
                    path.clone(),
                    format!("default {default} is not of type {ty}"),
                );
            }
        }
        let rules = keywords.validations.and_then(Value::as_array);
        for rule in rules
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("rule")?.as_str())
        {
            let parsed = super::error::catch_panic(|| {
                cel_parser::Parser::new()
                    .parse(rule)
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
            if let Err(error) = parsed.and_then(|result| result) {
                let first = error.lines().next().unwrap_or_default().to_owned();
                self.push(
                    Severity::Error,
                    "cel",
                    path.clone(),
                    format!("CEL rule `{rule}` does not parse: {first}"),
                );
            }
        }
        if keywords.list_type.and_then(Value::as_str) == Some("map") {
            self.list_map(s, path);
        }
        if ty == Some("object")
            && !preserve
            && properties.is_none_or(|p| p.is_empty())
            && additional.is_none()
            && !keywords.embedded
        {
            self.push(
                Severity::Warning,
                "pruned",
                path.clone(),
                "object with no properties: the API server prunes all its fields".into(),
            );
        }
        for (name, child) in properties.into_iter().flatten() {
            if let Some(child) = child.as_object() {
                path.push(name.clone());
                self.node(child, path, false);
                path.pop();
            }
        }
        if let Some(child) = additional.and_then(Value::as_object) {
            path.push("{*}".into());
            self.node(child, path, false);
            path.pop();
        }
        match keywords.items {
            Some(Value::Object(child)) => {
                path.push("[*]".into());
                self.node(child, path, false);
                path.pop();
            }
            Some(Value::Array(children)) => {
                self.push(
                    Severity::Error,
                    "forbidden-keyword",
                    path.clone(),
                    "tuple `items` (an array of schemas) is not structural".into(),
                );
                for child in children.iter().filter_map(Value::as_object) {
                    path.push("[*]".into());
                    self.node(child, path, false);
                    path.pop();
                }
            }
            _ => {}
        }
        for branch in keywords.branches {
            let children = branch.and_then(Value::as_array);
            for child in children.into_iter().flatten().filter_map(Value::as_object) {
                // The API server allows `anyOf: [{type: integer}, {type: string}]` under
                // int-or-string; nothing else may carry a type inside a value validation.
                if int_or_string && !child.contains_key("properties") && child.contains_key("type")
                {
                    continue;
                }
                self.node(child, path, true);
            }
        }
        if let Some(not) = keywords.not.and_then(Value::as_object) {
            self.node(not, path, true);
        }
    }

    fn list_map(&mut self, s: &Schema, path: &[String]) {
        let strings = |schema: &Schema, key: &str| -> Vec<String> {
            let list = schema.get(key).and_then(Value::as_array);
            list.into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let keys = strings(s, "x-kubernetes-list-map-keys");
        if keys.is_empty() {
            self.push(
                Severity::Error,
                "list-map-keys",
                path.to_vec(),
                "x-kubernetes-list-type: map without x-kubernetes-list-map-keys".into(),
            );
            return;
        }
        let Some(items) = object(s, "items") else {
            self.push(
                Severity::Error,
                "list-map-keys",
                path.to_vec(),
                "x-kubernetes-list-type: map on a schema without items".into(),
            );
            return;
        };
        let required = strings(items, "required");
        for key in keys {
            match object(items, "properties").and_then(|p| object(p, &key)) {
                None => self.push(
                    Severity::Error,
                    "list-map-keys",
                    path.to_vec(),
                    format!("list-map key `{key}` is not a property of the items"),
                ),
                Some(prop) => {
                    if !matches!(
                        string(prop, "type"),
                        Some("string" | "integer" | "boolean" | "number")
                    ) {
                        self.push(
                            Severity::Error,
                            "list-map-keys",
                            path.to_vec(),
                            format!("list-map key `{key}` is not a scalar"),
                        );
                    }
                    if !required.contains(&key) && !prop.contains_key("default") {
                        self.push(
                            Severity::Error,
                            "list-map-keys",
                            path.to_vec(),
                            format!("list-map key `{key}` is neither required nor defaulted"),
                        );
                    }
                }
            }
        }
    }
}

/// controller-gen's `maxDescLen`: descriptions longer than `max` are cut at the last word
/// boundary and end in `...`; `0` drops them.
pub fn truncate_descriptions(crd: &mut CustomResourceDefinition, max: usize) {
    fn walk(s: &mut JSONSchemaProps, max: usize) {
        if let Some(desc) = &s.description {
            if max == 0 {
                s.description = None;
            } else if desc.chars().count() > max {
                let cut: String = desc.chars().take(max).collect();
                let shortened = match cut.rfind(char::is_whitespace) {
                    Some(n) if n > 0 => format!("{}...", &cut[..n]),
                    _ => format!("{cut}..."),
                };
                s.description = Some(shortened);
            }
        }
        for child in s.properties.iter_mut().flat_map(|p| p.values_mut()) {
            walk(child, max);
        }
        if let Some(JSONSchemaPropsOrBool::Schema(child)) = &mut s.additional_properties {
            walk(child, max);
        }
        match &mut s.items {
            Some(JSONSchemaPropsOrArray::Schema(child)) => walk(child, max),
            Some(JSONSchemaPropsOrArray::Schemas(children)) => {
                children.iter_mut().for_each(|c| walk(c, max))
            }
            None => {}
        }
        for branch in [&mut s.any_of, &mut s.one_of, &mut s.all_of]
            .into_iter()
            .flatten()
        {
            branch.iter_mut().for_each(|c| walk(c, max));
        }
    }
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            walk(schema, max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd_with(schema: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "xs.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "X", "plural": "xs"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
            }
        }))
        .expect("valid CRD")
    }

    fn rules(schema: serde_json::Value) -> Vec<&'static str> {
        check(&crd_with(schema))
            .into_iter()
            .map(|f| f.rule)
            .collect()
    }

    #[test]
    fn metadata_may_only_restrict_name() {
        let bad = serde_json::json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}
        }});
        assert!(rules(bad).contains(&"metadata"));
        let ok = serde_json::json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}
        }});
        assert!(!rules(ok).contains(&"metadata"));
    }

    #[test]
    fn value_validations_carry_no_structure() {
        let bad = serde_json::json!({"type": "object", "properties": {"x": {
            "type": "string", "anyOf": [{"type": "string", "description": "no"}]
        }}});
        assert_eq!(rules(bad), ["value-validation", "value-validation"]);
        let ok = serde_json::json!({"type": "object", "properties": {"x": {
            "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]
        }}});
        assert!(rules(ok).is_empty());
    }

    #[test]
    fn a_clean_schema_has_no_findings() {
        let ok = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "n": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }}}});
        assert!(check(&crd_with(ok)).is_empty());
    }
}
