//! `src/manifests/library/k8s_versions.rs`: which k8s-openapi types have, under each of its
//! Kubernetes version features, the schema they have under `latest` (the one kopgen's table
//! holds). A type's schema is its `impl JsonSchema` (descriptions, properties, required) and the
//! schemas of the k8s-openapi types it names there, inlined as kube-derive inlines them; so two
//! versions give a type the same schema when that impl's tokens are the same in both and so is
//! every type it names. Where k8s-openapi changed an impl without changing its output, the type
//! counts as different: the check errs towards compiling the crate, never towards a wrong CRD.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    path::Path,
};

/// A type's `impl JsonSchema`, as tokens, and the k8s-openapi types it names.
struct SchemaImpl {
    tokens: String,
    names: Vec<String>,
}

/// Every `impl crate::schemars::JsonSchema` of the k8s-openapi sources under `root` (one
/// Kubernetes version), by the public path of the type.
fn schema_impls(root: &Path) -> BTreeMap<String, SchemaImpl> {
    let mut found = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.expect("walk");
        let file = entry.path();
        if file.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let (module, parsed) = super::module_and_items(root, file);
        for item in &parsed.items {
            let syn::Item::Impl(imp) = item else { continue };
            let Some((_, trait_path, _)) = &imp.trait_ else {
                continue;
            };
            let trait_name = quote::quote!(#trait_path).to_string().replace(' ', "");
            let self_ty = &imp.self_ty;
            let name = quote::quote!(#self_ty).to_string();
            if trait_name != "crate::schemars::JsonSchema" || !imp.generics.params.is_empty() {
                continue;
            }
            let tokens = quote::quote!(#imp).to_string().replace(" :: ", "::");
            found.insert(
                format!("k8s_openapi::{}::{name}", module.join("::")),
                SchemaImpl {
                    names: named_types(&tokens),
                    tokens,
                },
            );
        }
    }
    found
}

/// The k8s-openapi types (`crate::api::core::v1::PodSpec`) named in `tokens`.
fn named_types(tokens: &str) -> Vec<String> {
    let mut names: Vec<String> = tokens
        .match_indices("crate::")
        .map(|(at, _)| {
            let rest = &tokens[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches(':').to_owned()
        })
        .filter(|path| {
            let last = path.rsplit("::").next().unwrap_or_default();
            !path.starts_with("schemars") && last.starts_with(|c: char| c.is_ascii_uppercase())
        })
        .map(|path| format!("k8s_openapi::{path}"))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether `path` has the same schema in `other` as in `latest`; `pending` breaks cycles
/// (`JSONSchemaProps` names itself) by taking a type being decided as the same.
fn same(
    path: &str,
    latest: &BTreeMap<String, SchemaImpl>,
    other: &BTreeMap<String, SchemaImpl>,
    decided: &mut HashMap<String, bool>,
) -> bool {
    if let Some(same) = decided.get(path) {
        return *same;
    }
    let (Some(new), Some(old)) = (latest.get(path), other.get(path)) else {
        return false;
    };
    if new.tokens != old.tokens {
        decided.insert(path.to_owned(), false);
        return false;
    }
    decided.insert(path.to_owned(), true);
    let same = new
        .names
        .iter()
        .all(|name| same(name, latest, other, decided));
    decided.insert(path.to_owned(), same);
    same
}

/// The generated file, for the version directories beside `latest_dir` (`src/v1_33`, ...).
pub fn k8s_versions_rs(latest_dir: &Path, earliest: &str) -> String {
    let latest_name = latest_dir
        .file_name()
        .expect("a version directory")
        .to_string_lossy()
        .into_owned();
    let parent = latest_dir.parent().expect("k8s-openapi's src");
    let mut versions: Vec<String> = std::fs::read_dir(parent)
        .expect("src")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("v1_") && *name != latest_name)
        .collect();
    versions.sort_by_key(|v| v["v1_".len()..].parse::<u32>().unwrap_or(u32::MAX));
    assert!(
        versions.len() <= 8,
        "one bit per version in a u8: {versions:?}"
    );
    let latest = schema_impls(latest_dir);
    let mut masks: BTreeMap<&str, u8> = BTreeMap::new();
    for (bit, version) in versions.iter().enumerate() {
        let other = schema_impls(&parent.join(version));
        let mut decided = HashMap::new();
        for path in latest.keys() {
            if same(path, &latest, &other, &mut decided) {
                *masks.entry(path.as_str()).or_default() |= 1 << bit;
            }
        }
    }
    let listed: Vec<String> = versions.iter().map(|v| format!("\"{v}\"")).collect();
    let mut out = format!(
        "//! Which k8s-openapi types have, under each Kubernetes version feature, the schema they have\n\
         //! under `latest`, whose schemas `k8s_types.rs` holds: a crate that enables another version\n\
         //! gets its own schema of a type that differs there by compiling.\n\
         //!\n\
         //! Generated from k8s-openapi 0.29's sources by `tests/tables.rs` (`KOPGEN_REGENERATE=1 cargo\n\
         //! test --test tables`): a type is the same when its `impl JsonSchema` and those of the types\n\
         //! it names are token for token the same.\n\n\
         /// The version k8s-openapi's `latest` feature selects.\n\
         pub const LATEST: &str = \"{latest_name}\";\n\n\
         /// The version k8s-openapi's `earliest` feature selects.\n\
         pub const EARLIEST: &str = \"{earliest}\";\n\n\
         /// The other versions: bit `i` of [`same_as_latest`] stands for `VERSIONS[i]`.\n\
         pub const VERSIONS: &[&str] = &[{}];\n\n\
         /// The versions in which the type at `path` has its schema under `latest`, as bits of\n\
         /// [`VERSIONS`]; 0 for a type that differs in every one (or is not k8s-openapi's).\n\
         pub fn same_as_latest(path: &str) -> u8 {{\n    match path {{\n",
        listed.join(", ")
    );
    for (path, mask) in &masks {
        let arm = format!("        \"{path}\" => {mask:#010b},");
        // As rustfmt lays out an arm past 100 columns.
        if arm.len() <= 100 {
            let _ = writeln!(out, "{arm}");
        } else {
            let _ = writeln!(
                out,
                "        \"{path}\" => {{\n            {mask:#010b}\n        }}"
            );
        }
    }
    out.push_str("        _ => 0,\n    }\n}\n");
    out
}
