//! The generated tables in `src/` are what their generator makes of k8s-openapi's sources (the
//! version kopgen builds with, feature `latest`, from the cargo registry): this test fails when
//! they are stale. `KOPGEN_REGENERATE=1 cargo test --test tables` rewrites them.

#[path = "tables/kubernetes.rs"]
mod kubernetes;
mod support;
#[path = "tables/versions.rs"]
mod versions;

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

/// The source directory of the Kubernetes version k8s-openapi's `latest` feature selects.
fn k8s_openapi_latest() -> PathBuf {
    k8s_openapi_version("latest")
}

/// The source directory of the Kubernetes version k8s-openapi's feature `alias` selects.
fn k8s_openapi_version(alias: &str) -> PathBuf {
    let output =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["metadata", "--format-version", "1", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .output()
            .expect("cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata");
    let package = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "k8s-openapi")
        .expect("k8s-openapi is a dependency");
    let latest = package["features"][alias][0]
        .as_str()
        .expect("the feature names a version");
    Path::new(package["manifest_path"].as_str().expect("manifest path"))
        .with_file_name("src")
        .join(latest)
}

/// The module path of a k8s-openapi source `file` under `root` (`api`, `core`, `v1`), and the
/// file parsed.
fn module_and_items(root: &Path, file: &Path) -> (Vec<String>, syn::File) {
    let module = (file.parent().expect("parent"))
        .strip_prefix(root)
        .expect("under root")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let parsed = syn::parse_file(&std::fs::read_to_string(file).expect("read")).expect("parse");
    (module, parsed)
}

/// One non-generic type of k8s-openapi, as its sources declare it.
struct Type {
    /// Public path, `k8s_openapi::api::core::v1::Container`.
    path: String,
    json_schema: bool,
    default: bool,
    /// `impl crate::Resource`: (group, version, kind, plural, namespaced).
    resource: Option<(String, String, String, String, bool)>,
    /// `impl crate::ListableResource`: the kind has a list endpoint, so a controller can watch it.
    listable: bool,
}

/// Every type of the k8s-openapi sources under `root`, sorted by path.
fn types(root: &Path) -> Vec<Type> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.expect("walk");
        let file = entry.path();
        if file.extension().is_none_or(|e| e != "rs")
            || file
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "list.rs")
        {
            continue;
        }
        let (module, parsed) = module_and_items(root, file);
        for item in &parsed.items {
            let (ident, generics, attrs) = match item {
                syn::Item::Struct(s) => (&s.ident, &s.generics, &s.attrs),
                syn::Item::Enum(e) => (&e.ident, &e.generics, &e.attrs),
                _ => continue,
            };
            if !generics.params.is_empty() {
                continue;
            }
            let name = ident.to_string();
            let derives_default = attrs.iter().any(|a| {
                a.path().is_ident("derive") && quote::quote!(#a).to_string().contains("Default")
            });
            let mut ty = Type {
                path: format!("k8s_openapi::{}::{name}", module.join("::")),
                json_schema: false,
                default: derives_default,
                resource: None,
                listable: false,
            };
            for item in &parsed.items {
                let syn::Item::Impl(imp) = item else { continue };
                let self_ty = &imp.self_ty;
                if quote::quote!(#self_ty).to_string() != name {
                    continue;
                }
                let Some((_, trait_path, _)) = &imp.trait_ else {
                    continue;
                };
                let trait_name = quote::quote!(#trait_path).to_string().replace(' ', "");
                match trait_name.as_str() {
                    "crate::schemars::JsonSchema" => ty.json_schema = true,
                    "Default" | "std::default::Default" => ty.default = true,
                    "crate::Resource" => ty.resource = resource(imp),
                    "crate::ListableResource" => ty.listable = true,
                    _ => {}
                }
            }
            found.push(ty);
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The (group, version, kind, plural, namespaced) an `impl crate::Resource` states.
fn resource(imp: &syn::ItemImpl) -> Option<(String, String, String, String, bool)> {
    let constant = |name: &str| {
        imp.items.iter().find_map(|item| match item {
            syn::ImplItem::Const(c) if c.ident == name => match &c.expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
    };
    let (group, version, kind, plural) = (
        constant("GROUP")?,
        constant("VERSION")?,
        constant("KIND")?,
        constant("URL_PATH_SEGMENT")?,
    );
    let namespaced = imp.items.iter().any(|item| {
        matches!(item, syn::ImplItem::Type(t) if t.ident == "Scope"
            && quote::quote!(#t).to_string().contains("NamespaceResourceScope"))
    });
    Some((group, version, kind, plural, namespaced))
}

/// `src/manifests/library/k8s_types.rs`: the schema and default functions of every k8s-openapi type.
fn k8s_types_rs(types: &[Type]) -> String {
    let schema: Vec<&Type> = types.iter().filter(|t| t.json_schema).collect();
    let mut out = String::from(
        "//! Schemas of every k8s-openapi type, taken from the crate itself (feature `latest`).\n\
         //!\n\
         //! Generated from k8s-openapi 0.29's sources by `tests/tables.rs` (`KOPGEN_REGENERATE=1 cargo\n\
         //! test --test tables`): one entry per type that implements `JsonSchema`, keyed by the type's\n\
         //! public path, which is how user code names it.\n\n\
         use schemars::{JsonSchema, Schema, SchemaGenerator};\n\n\
         /// Produces a type's schema with a generator configured like kube-derive's.\n\
         pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;\n\n\
         /// Produces the serialized `Default::default()` of a k8s-openapi type.\n\
         pub type DefaultFn = fn() -> Option<serde_json::Value>;\n\n\
         fn default_of<T: Default + serde::Serialize>() -> Option<serde_json::Value> {\n\
         \x20   serde_json::to_value(T::default()).ok()\n\
         }\n\n\
         fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {\n\
         \x20   generator.subschema_for::<T>()\n\
         }\n\n",
    );
    let _ = write!(
        out,
        "/// Number of k8s-openapi types known.\npub const COUNT: usize = {};\n\n\
         /// The schema function of the k8s-openapi type at `path`\n\
         /// (e.g. `k8s_openapi::api::core::v1::Container`).\n\
         pub fn lookup(path: &str) -> Option<SchemaFn> {{\n    let f: SchemaFn = match path {{\n",
        schema.len()
    );
    for t in &schema {
        let _ = writeln!(out, "        \"{0}\" => schema_of::<{0}>,", t.path);
    }
    out.push_str(
        "        _ => return None,\n    };\n    Some(f)\n}\n\n\
         /// The serialized `Default::default()` of the k8s-openapi type at `path`, for\n\
         /// `#[serde(default)]` fields of that type.\n\
         pub fn default_value(path: &str) -> Option<DefaultFn> {\n    let f: DefaultFn = match path {\n",
    );
    for t in schema.iter().filter(|t| t.default) {
        let _ = writeln!(out, "        \"{0}\" => default_of::<{0}>,", t.path);
    }
    out.push_str("        _ => return None,\n    };\n    Some(f)\n}\n");
    out
}

/// `src/data/k8s_kinds.tsv`: the built-in kinds `create api --resource=false` scaffolds
/// controllers for (those with a list endpoint: `ListableResource`).
fn k8s_kinds_tsv(types: &[Type]) -> String {
    let mut rows: Vec<String> = types
        .iter()
        .filter(|t| t.listable)
        .filter_map(|t| {
            let (group, version, kind, plural, namespaced) = t.resource.as_ref()?;
            Some(format!(
                "{}\t{version}\t{kind}\t{plural}\t{}\t{}",
                if group.is_empty() { "core" } else { group },
                if *namespaced { "namespaced" } else { "cluster" },
                t.path
            ))
        })
        .collect();
    rows.sort();
    format!(
        "# group\tversion\tkind\tplural\tscope\trust_path\n{}\n",
        rows.join("\n")
    )
}

/// Compares `path` with `generated`, or rewrites it under `KOPGEN_REGENERATE=1`.
fn check(path: &str, generated: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("KOPGEN_REGENERATE").is_some() {
        std::fs::write(&file, generated).expect("write");
        return;
    }
    let committed = std::fs::read_to_string(&file).expect("read");
    if committed != generated {
        let diff = similar::TextDiff::from_lines(committed.as_str(), generated);
        panic!(
            "{path} is stale; run `KOPGEN_REGENERATE=1 cargo test --test tables`:\n{}",
            diff.unified_diff().context_radius(1)
        );
    }
}

#[test]
fn k8s_types_table_is_generated_from_k8s_openapi() {
    let types = types(&k8s_openapi_latest());
    check("src/manifests/library/k8s_types.rs", &k8s_types_rs(&types));
}

#[test]
fn k8s_versions_table_is_generated_from_k8s_openapi() {
    let earliest = k8s_openapi_version("earliest");
    let earliest = earliest.file_name().expect("a version").to_string_lossy();
    let generated = versions::k8s_versions_rs(&k8s_openapi_latest(), &earliest);
    check("src/manifests/library/k8s_versions.rs", &generated);
}

#[test]
fn k8s_kinds_table_is_generated_from_k8s_openapi() {
    let types = types(&k8s_openapi_latest());
    check("src/data/k8s_kinds.tsv", &k8s_kinds_tsv(&types));
}

/// Kubernetes' annotations of its types (`runtime/src/crds/kubernetes.json`), from the OpenAPI v3
/// documents and Go sources of the release the control plane is built from, which must be the
/// one k8s-openapi's `latest` feature targets.
#[test]
fn kubernetes_annotations_table_is_generated_from_kubernetes_openapi_documents() {
    let test = "kubernetes_annotations_table_is_generated_from_kubernetes_openapi_documents";
    let release = kubernetes::release();
    let latest = k8s_openapi_latest();
    let minor = release.split('.').take(2).collect::<Vec<_>>().join("_");
    assert!(
        latest.ends_with(format!("v{minor}")),
        "k8s-openapi's latest is {}, the control plane {release}: build the control plane of the release k8s-openapi targets",
        latest.display()
    );
    let staging = format!(
        "v0.{}",
        release.split_once('.').map_or("", |(_, rest)| rest)
    );
    let modules = (
        kubernetes::go_module("k8s.io/kubernetes", &format!("v{release}")),
        kubernetes::go_module("k8s.io/api", &staging),
        kubernetes::go_module("k8s.io/apimachinery", &staging),
    );
    let (Some(kubernetes_dir), Some(api), Some(apimachinery)) = modules else {
        support::skip(test, "no go command to fetch Kubernetes' sources");
        return;
    };
    // The signature of each k8s-openapi type, by its OpenAPI name, as kube-derive inlines it.
    let settings = kopgen::manifests::settings::kube_settings;
    let mut signatures = BTreeMap::new();
    for ty in types(&latest).iter().filter(|t| t.json_schema) {
        let Some(f) = kopgen::manifests::library::k8s_types::lookup(&ty.path) else {
            continue;
        };
        let mut flat =
            schemars::SchemaGenerator::new(settings().with(|s| s.inline_subschemas = false));
        let reference = f(&mut flat);
        let Some(name) = reference
            .get("$ref")
            .and_then(|r| r.as_str())
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
        else {
            continue;
        };
        let inlined = f(&mut schemars::SchemaGenerator::new(settings()));
        if let Some(serde_json::Value::Object(properties)) = inlined.get("properties") {
            signatures.insert(
                name.to_owned(),
                kopgen::manifests::kubernetes::signature(properties),
            );
        }
    }
    check(
        "runtime/src/crds/kubernetes.json",
        &kubernetes::table(&kubernetes_dir, &api, &apimachinery, &signatures),
    );
}
