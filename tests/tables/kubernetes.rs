//! The generator of `runtime/src/crds/kubernetes.json`: Kubernetes' own annotations of its
//! types, from the OpenAPI v3 documents (`api/openapi-spec/v3/*.json`) and the Go sources of the
//! release the control plane is built from (`.ci/control-plane.sh`, the release k8s-openapi's
//! `latest` feature targets), found in a CRD by the signature of k8s-openapi's schema.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{Value, json};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
/// controller-gen's pattern for `resource.Quantity` (the OpenAPI documents give none).
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The Kubernetes release `.ci/control-plane.sh` builds.
pub fn release() -> String {
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/control-plane.sh"))
            .expect("control-plane.sh");
    script
        .lines()
        .find_map(|l| l.strip_prefix("K8S_VERSION=\"${K8S_VERSION:-"))
        .and_then(|rest| rest.strip_suffix("}\""))
        .expect("K8S_VERSION in control-plane.sh")
        .to_owned()
}

/// The directory of Go module `module@version`, downloaded into Go's module cache if need be;
/// `None` without Go.
pub fn go_module(module: &str, version: &str) -> Option<PathBuf> {
    let output = Command::new("go")
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .env("GOFLAGS", "-mod=mod")
        .env("GOWORK", "off")
        .output()
        .ok()?;
    assert!(
        output.status.success(),
        "go mod download {module}@{version}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let info: Value = serde_json::from_slice(&output.stdout).expect("go's JSON");
    Some(PathBuf::from(info["Dir"].as_str().expect("Dir")))
}

/// Every schema of the OpenAPI v3 documents under `kubernetes`, by name.
fn openapi(kubernetes: &Path) -> BTreeMap<String, Value> {
    let mut schemas = BTreeMap::new();
    let dir = kubernetes.join("api/openapi-spec/v3");
    for entry in std::fs::read_dir(&dir).expect("openapi-spec/v3") {
        let path = entry.expect("entry").path();
        let document: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        if let Some(Value::Object(found)) = document.pointer("/components/schemas") {
            schemas.extend(found.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    schemas
}

/// `+kubebuilder:validation:` markers of struct fields in the Go sources under `root` (a module
/// whose packages are named `<prefix><package path with dots>.<Type>`), as schema keywords by
/// (type, JSON field).
fn go_validations(root: &Path, prefix: &str, out: &mut BTreeMap<(String, String), Value>) {
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.expect("walk");
        if entry.file_name() != "types.go" {
            continue;
        }
        let package = entry
            .path()
            .parent()
            .and_then(|p| p.strip_prefix(root).ok())
            .expect("under root")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(".");
        let text = std::fs::read_to_string(entry.path()).expect("read");
        let mut current: Option<String> = None;
        let mut markers = serde_json::Map::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("type ")
                && let Some(name) = rest.strip_suffix(" struct {")
            {
                current = Some(format!("{prefix}{package}.{name}"));
                markers.clear();
            } else if let Some(marker) = line.strip_prefix("// +kubebuilder:validation:") {
                let (name, value) = marker.split_once('=').unwrap_or((marker, ""));
                let value = value.trim_matches('`');
                let keyword = match name {
                    "MaxLength" => Some(("maxLength", json!(value.parse::<i64>().ok()))),
                    "MinLength" => Some(("minLength", json!(value.parse::<i64>().ok()))),
                    "Maximum" => Some(("maximum", number(value))),
                    "Minimum" => Some(("minimum", number(value))),
                    "Pattern" => Some(("pattern", json!(value))),
                    "Enum" => Some(("enum", json!(value.split(';').collect::<Vec<_>>()))),
                    _ => None,
                };
                if let Some((key, value)) = keyword.filter(|(_, v)| !v.is_null()) {
                    markers.insert(key.to_owned(), value);
                }
            } else if line.starts_with("//") {
            } else if let (Some(ty), Some(tag)) = (&current, line.split("json:\"").nth(1)) {
                let field = tag.split([',', '"']).next().unwrap_or_default();
                if !field.is_empty() && field != "-" && !markers.is_empty() {
                    let key = (ty.clone(), field.to_owned());
                    out.insert(key, Value::Object(std::mem::take(&mut markers)));
                }
                markers.clear();
            } else {
                markers.clear();
            }
        }
    }
}

/// A marker's number, an integer where it is one.
fn number(text: &str) -> Value {
    match text.parse::<i64>() {
        Ok(n) => json!(n),
        Err(_) => json!(text.parse::<f64>().ok()),
    }
}

/// The name a `$ref` (or a one-element `allOf` of one) in `schema` points to.
fn reference(schema: &Value) -> Option<&str> {
    let reference = schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))?;
    reference.as_str()?.strip_prefix("#/components/schemas/")
}

/// What a schema referring to `name` becomes, if anything.
fn replacement(name: &str, kind_holder: bool) -> Option<Value> {
    match name {
        QUANTITY => Some(json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": true,
        })),
        INT_OR_STRING => Some(json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        })),
        // In a template (not a kind's own metadata), what controller-gen keeps of ObjectMeta
        // with `generateEmbeddedObjectMeta`: the fields the API server reads there.
        OBJECT_META if !kind_holder => Some(json!({
            "type": "object",
            "properties": {
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "name": {"type": "string"},
                "namespace": {"type": "string"},
            },
        })),
        _ => None,
    }
}

/// What Kubernetes says of one field beyond k8s-openapi's schema.
fn field_entry(
    schema: &Value,
    required: bool,
    kind_holder: bool,
    validations: Option<&Value>,
) -> serde_json::Map<String, Value> {
    let mut entry = serde_json::Map::new();
    let mut set = serde_json::Map::new();
    for key in [
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    ] {
        if let Some(value) = schema.get(key) {
            set.insert(key.to_owned(), value.clone());
        }
    }
    // A required field's default is the Go zero value the documents write for every non-pointer
    // field, and an empty object a struct's: neither is one of Kubernetes' defaults.
    if let Some(default) = schema.get("default")
        && !required
        && default != &json!({})
    {
        set.insert("default".to_owned(), default.clone());
    }
    if let Some(Value::Object(validations)) = validations {
        set.extend(validations.clone());
    }
    if let Some(replace) = reference(schema).and_then(|r| replacement(r, kind_holder)) {
        entry.insert("replace".to_owned(), replace);
    }
    for key in ["items", "additionalProperties"] {
        let sub = schema.get(key).and_then(reference);
        if let Some(replace) = sub.and_then(|r| replacement(r, kind_holder)) {
            entry.insert(key.to_owned(), json!({ "replace": replace }));
        }
    }
    if !set.is_empty() {
        entry.insert("set".to_owned(), Value::Object(set));
    }
    entry
}

/// The table: per Kubernetes type that k8s-openapi has a schema for (`signatures`: by OpenAPI
/// name, the signature of k8s-openapi's schema), its signature and its annotations. Types whose
/// signatures collide with different annotations are left out: they could not be told apart.
pub fn table(
    kubernetes: &Path,
    api: &Path,
    apimachinery: &Path,
    signatures: &BTreeMap<String, (String, String)>,
) -> String {
    let schemas = openapi(kubernetes);
    let mut validations = BTreeMap::new();
    go_validations(api, "io.k8s.api.", &mut validations);
    go_validations(
        &apimachinery.join("pkg"),
        "io.k8s.apimachinery.pkg.",
        &mut validations,
    );
    let mut entries: BTreeMap<String, Value> = BTreeMap::new();
    for (name, schema) in &schemas {
        let Some((names, hash)) = signatures.get(name) else {
            continue;
        };
        let Some(Value::Object(properties)) = schema.get("properties") else {
            continue;
        };
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let kind_holder = schema.get("x-kubernetes-group-version-kind").is_some();
        let mut entry = serde_json::Map::new();
        if let Some(map_type) = schema.get("x-kubernetes-map-type") {
            entry.insert("set".into(), json!({ "x-kubernetes-map-type": map_type }));
        }
        let mut fields = serde_json::Map::new();
        for (field, field_schema) in properties {
            let key = (name.clone(), field.clone());
            let found = field_entry(
                field_schema,
                required.contains(&field.as_str()),
                kind_holder,
                validations.get(&key),
            );
            if !found.is_empty() {
                fields.insert(field.clone(), Value::Object(found));
            }
        }
        if !fields.is_empty() {
            entry.insert("properties".into(), Value::Object(fields));
        }
        if !entry.is_empty() {
            entry.insert("match".into(), json!([names, hash]));
            entries.insert(name.clone(), Value::Object(entry));
        }
    }
    // Types that share a signature but not their annotations cannot be told apart in a CRD.
    let mut by_signature: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for entry in entries.values() {
        by_signature
            .entry(entry["match"].to_string())
            .or_default()
            .push(entry);
    }
    let ambiguous: Vec<String> = by_signature
        .into_iter()
        .filter(|(_, found)| found.iter().any(|e| *e != found[0]))
        .map(|(signature, _)| signature)
        .collect();
    entries.retain(|_, e| !ambiguous.contains(&e["match"].to_string()));
    let lines: Vec<String> = entries
        .iter()
        .map(|(name, entry)| format!("{}: {}", json!(name), entry))
        .collect();
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}
