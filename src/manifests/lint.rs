//! Structural-schema lint: the rules the apiextensions API server enforces for v1 CRDs, checked
//! at generation time, plus warnings for data the API server would prune without a word.
//!
//! Findings name the JSON path in the CRD; the CLI maps that path back to the Rust field that
//! produced it (see the `locate` module).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSON, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Information asked for (`--cel-cost`): never blocks a run.
    Note,
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
        "defaults hold to their schema all the way down (types, enums, bounds, lengths, patterns, no field the schema would prune)",
        "fix the default value or the field type",
    ),
    (
        "value-validation",
        "`anyOf`/`oneOf`/`allOf`/`not` branches do not set `type`, `default`, `nullable`, `additionalProperties` or `description`",
        "use an untagged enum of scalars or a struct with optional fields",
    ),
    (
        "cel",
        "`x-kubernetes-validations` rules are CEL expressions that parse (nested at most 250 levels deep, as cel-go parses), with a one-line `message`, a `reason` the API server knows and a `fieldPath` that names a field of the schema",
        "fix the rule's syntax (see the CEL language definition)",
    ),
    (
        "api-approval",
        "a CRD in a group under `k8s.io` or `kubernetes.io` carries the `api-approved.kubernetes.io` annotation (a URL, or a reason starting with `unapproved`)",
        "use a group of your own domain, or add `#[kube(annotation(\"api-approved.kubernetes.io\", \"<URL of the approval>\"))]`",
    ),
    (
        "storage-version",
        "exactly one version of the CRD is its storage version",
        "leave `#[kube(storage = false)]` off exactly one version (the one objects are stored in)",
    ),
    (
        "labels",
        "the CRD's label and annotation keys are qualified names, its label values at most 63 letters, digits, '-', '_' and '.'",
        "fix `#[kube(label(..))]` or `#[kube(annotation(..))]`: a key like `example.com/tier`, a value like `gold`",
    ),
    (
        "pattern",
        "every `pattern` is a regular expression Go's RE2 (the API server's) compiles",
        "fix the regular expression; look-around and back-references are not supported",
    ),
    (
        "selectable-fields",
        "at most 8 selectable fields per version, each naming a string, boolean or integer field outside `metadata`, none twice",
        "point `#[kube(selectable = \".spec.field\")]` at a scalar field of the spec or status",
    ),
    (
        "cel-cost",
        "each CEL rule's cost, as the API server estimates it from the `maxItems`, `maxLength` and `maxProperties` of what it reads and of the lists above it, stays within 10,000,000, and all rules of a version within 100,000,000",
        "bound the fields the rule reads (the message names one and the bound that fits), or simplify the rule; `kopgen manifests --cel-cost` prints every rule's share",
    ),
    (
        "pruned",
        "(warning) an object with no properties, no additionalProperties and no preserve-unknown-fields keeps no data",
        "type the field, or preserve unknown fields explicitly",
    ),
    (
        "missing-schema",
        "every version has a schema (the API server rejects a v1 CRD without one)",
        "remove `#[kube(schema = \"disabled\")]`, or install this CRD from the project that owns it",
    ),
];

/// Lints a CRD whose versions hold their schemas, on the typed schemas the CRD is written from.
pub fn check(crd: &CustomResourceDefinition) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(message) = api_approval_problem(crd) {
        findings.push(Finding {
            severity: Severity::Error,
            rule: "api-approval",
            version: String::new(),
            path: Vec::new(),
            message,
            fix: fix_of("api-approval"),
        });
    }
    let stored = crd.spec.versions.iter().filter(|v| v.storage).count();
    if stored != 1 {
        findings.push(Finding {
            severity: Severity::Error,
            rule: "storage-version",
            version: String::new(),
            path: Vec::new(),
            message: format!(
                "{stored} versions are marked as the storage version; the API server needs exactly one"
            ),
            fix: fix_of("storage-version"),
        });
    }
    let labels = crd.metadata.labels.iter().flatten();
    let annotations = crd.metadata.annotations.iter().flatten();
    for (key, value, is_label) in labels
        .map(|(k, v)| (k, v, true))
        .chain(annotations.map(|(k, v)| (k, v, false)))
    {
        let fits = crate::names::is_qualified_name(key)
            && (!is_label || crate::names::is_label_value(value));
        if !fits {
            let what = if is_label { "label" } else { "annotation" };
            findings.push(Finding {
                severity: Severity::Error,
                rule: "labels",
                version: String::new(),
                path: Vec::new(),
                message: format!("{what} `{key}: {value}` is not one the API server accepts"),
                fix: fix_of("labels"),
            });
        }
    }
    for version in &crd.spec.versions {
        let mut ctx = Ctx {
            version: version.name.clone(),
            findings: &mut findings,
        };
        let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            ctx.push(
                Severity::Error,
                "missing-schema",
                Vec::new(),
                "this version has no schema (`#[kube(schema = \"disabled\")]`)".into(),
            );
            continue;
        };
        ctx.node(schema, &mut Vec::new(), false);
        ctx.findings
            .extend(super::cel_cost::findings(&version.name, schema));
        for problem in super::selectable::problems(schema, version.selectable_fields.as_deref()) {
            ctx.push(Severity::Error, "selectable-fields", Vec::new(), problem);
        }
        if let Some(metadata) = schema.properties.as_ref().and_then(|p| p.get("metadata")) {
            let extra = metadata
                .properties
                .as_ref()
                .is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"));
            if extra || metadata.type_.as_deref().is_some_and(|t| t != "object") {
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

/// Keywords no structural schema may hold, and whether `s` holds each.
fn forbidden(s: &JSONSchemaProps) -> [(&'static str, bool); 5] {
    [
        ("$ref", s.ref_path.is_some()),
        ("definitions", s.definitions.is_some()),
        ("patternProperties", s.pattern_properties.is_some()),
        ("dependencies", s.dependencies.is_some()),
        ("additionalItems", s.additional_items.is_some()),
    ]
}

/// Keywords not allowed inside a value validation (`anyOf`, `oneOf`, `allOf`, `not`), and
/// whether `s` holds each.
fn value_validation(s: &JSONSchemaProps) -> [(&'static str, bool); 5] {
    [
        ("type", s.type_.is_some()),
        ("default", s.default.is_some()),
        ("nullable", s.nullable.is_some()),
        ("additionalProperties", s.additional_properties.is_some()),
        ("description", s.description.is_some()),
    ]
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

    fn node(&mut self, s: &JSONSchemaProps, path: &mut Vec<String>, in_value_validation: bool) {
        let preserve = s.x_kubernetes_preserve_unknown_fields == Some(true);
        let int_or_string = s.x_kubernetes_int_or_string == Some(true);
        let ty = s.type_.as_deref();
        if !in_value_validation && ty.is_none() && !preserve && !int_or_string {
            self.push(
                Severity::Error,
                "untyped",
                path.clone(),
                "schema has no type".into(),
            );
        }
        for (keyword, present) in forbidden(s) {
            if present {
                self.push(
                    Severity::Error,
                    "forbidden-keyword",
                    path.clone(),
                    format!("`{keyword}` is not allowed in a structural schema"),
                );
            }
        }
        let properties = s.properties.as_ref();
        let additional = s.additional_properties.as_ref();
        if properties.is_some_and(|p| !p.is_empty()) && additional.is_some() {
            self.push(
                Severity::Error,
                "additional-properties-with-properties",
                path.clone(),
                "`additionalProperties` and `properties` are mutually exclusive".into(),
            );
        }
        if in_value_validation {
            for (key, present) in value_validation(s) {
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
        // A default is validated against its own schema, all the way down, as the API server
        // validates it when it admits the CRD (examples it does not validate).
        if let Some(JSON(value)) = &s.default
            && let Some(problem) = super::value_check::problem(s, value)
        {
            self.push(
                Severity::Error,
                "default-type",
                path.clone(),
                format!("default {problem}"),
            );
        }
        for validation in s.x_kubernetes_validations.iter().flatten() {
            if let Some(problem) = super::validation_rules::problem(s, validation) {
                self.push(Severity::Error, "cel", path.clone(), problem);
            }
        }
        if let Some(pattern) = &s.pattern
            && let Err(e) = regex::Regex::new(pattern)
        {
            let reason = e.to_string().lines().last().unwrap_or_default().to_owned();
            self.push(
                Severity::Error,
                "pattern",
                path.clone(),
                format!("pattern `{pattern}` is not a regular expression the API server (Go's RE2) compiles: {reason}"),
            );
        }
        if s.x_kubernetes_list_type.as_deref() == Some("map") {
            self.list_map(s, path);
        }
        if ty == Some("object")
            && !preserve
            && properties.is_none_or(|p| p.is_empty())
            && additional.is_none()
            && s.x_kubernetes_embedded_resource != Some(true)
        {
            self.push(
                Severity::Warning,
                "pruned",
                path.clone(),
                "object with no properties: the API server prunes all its fields".into(),
            );
        }
        for (name, child) in properties.into_iter().flatten() {
            path.push(name.clone());
            self.node(child, path, false);
            path.pop();
        }
        if let Some(JSONSchemaPropsOrBool::Schema(child)) = additional {
            path.push("{*}".into());
            self.node(child, path, false);
            path.pop();
        }
        match &s.items {
            Some(JSONSchemaPropsOrArray::Schema(child)) => {
                path.push("[*]".into());
                self.node(child, path, false);
                path.pop();
            }
            Some(JSONSchemaPropsOrArray::Schemas(children)) => {
                self.push(
                    Severity::Error,
                    "forbidden-keyword",
                    path.clone(),
                    "tuple `items` (an array of schemas) is not structural".into(),
                );
                for child in children {
                    path.push("[*]".into());
                    self.node(child, path, false);
                    path.pop();
                }
            }
            None => {}
        }
        for branch in [&s.any_of, &s.one_of, &s.all_of] {
            for child in branch.iter().flatten() {
                // The API server allows `anyOf: [{type: integer}, {type: string}]` under
                // int-or-string; nothing else may carry a type inside a value validation.
                if int_or_string && child.properties.is_none() && child.type_.is_some() {
                    continue;
                }
                self.node(child, path, true);
            }
        }
        if let Some(not) = &s.not {
            self.node(not, path, true);
        }
    }

    fn list_map(&mut self, s: &JSONSchemaProps, path: &[String]) {
        let keys = s.x_kubernetes_list_map_keys.clone().unwrap_or_default();
        if keys.is_empty() {
            self.push(
                Severity::Error,
                "list-map-keys",
                path.to_vec(),
                "x-kubernetes-list-type: map without x-kubernetes-list-map-keys".into(),
            );
            return;
        }
        let Some(JSONSchemaPropsOrArray::Schema(items)) = &s.items else {
            self.push(
                Severity::Error,
                "list-map-keys",
                path.to_vec(),
                "x-kubernetes-list-type: map on a schema without items".into(),
            );
            return;
        };
        let required = items.required.as_deref().unwrap_or_default();
        for key in keys {
            match items.properties.as_ref().and_then(|p| p.get(&key)) {
                None => self.push(
                    Severity::Error,
                    "list-map-keys",
                    path.to_vec(),
                    format!("list-map key `{key}` is not a property of the items"),
                ),
                Some(prop) => {
                    if !matches!(
                        prop.type_.as_deref(),
                        Some("string" | "integer" | "boolean" | "number")
                    ) {
                        self.push(
                            Severity::Error,
                            "list-map-keys",
                            path.to_vec(),
                            format!("list-map key `{key}` is not a scalar"),
                        );
                    }
                    if !required.contains(&key) && prop.default.is_none() {
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

/// The API server keeps the groups of the Kubernetes project (`k8s.io`, `kubernetes.io` and
/// their subdomains) for APIs approved through its review; a CRD there needs the approval
/// annotation, a URL (`scheme://host...`) or a reason starting with `unapproved`.
fn api_approval_problem(crd: &CustomResourceDefinition) -> Option<String> {
    const ANNOTATION: &str = "api-approved.kubernetes.io";
    let group = crd.spec.group.as_str();
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|root| group == *root || group.ends_with(&format!(".{root}")));
    if !protected {
        return None;
    }
    let value = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default();
    let is_url = value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/')
    });
    if value.starts_with("unapproved") || is_url {
        return None;
    }
    Some(format!(
        "group {group} is reserved for the Kubernetes project: the API server refuses its CRDs without an `{ANNOTATION}` annotation holding a URL or a reason starting with `unapproved`"
    ))
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
