//! The parity harness's own view of which custom resources a source holds, read with syn: it
//! never asks kopgen, so a kind kopgen misses (or invents) shows up as a difference.

use std::path::{Path, PathBuf};

use syn::{Attribute, Item};

/// One `#[derive(CustomResource)]` the compiled crate has at module level.
#[derive(Debug, Clone)]
pub struct Found {
    /// Rust path of its module relative to the crate root (`""`, `"api::v1"`).
    pub module: String,
    pub group: String,
    pub kind: String,
    pub version: String,
    /// The type kube-derive generates (`kind`, or `root`).
    pub root: String,
    /// `#[kube(storage = false)]` absent.
    pub storage: bool,
}

/// Custom resources of one file read as the module `module` (inline `mod`s included, items
/// under `#[cfg(test)]` left out).
pub fn file(path: &Path, module: &str) -> Vec<Found> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut found = Vec::new();
    items(&parsed.items, module, &mut found, &mut |_, _| {});
    found
}

/// Custom resources of the crate whose root is `src/lib.rs`, following `mod name;`
/// declarations as rustc does (`name.rs` or `name/mod.rs`), not into `#[cfg(test)]` ones.
pub fn krate(src: &Path) -> Vec<Found> {
    let mut found = Vec::new();
    module_file(&src.join("lib.rs"), src, "", &mut found);
    found
}

fn module_file(path: &Path, dir: &Path, module: &str, found: &mut Vec<Found>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut children: Vec<(String, String)> = Vec::new();
    items(&parsed.items, module, found, &mut |module, name| {
        children.push((module.to_owned(), name.to_owned()))
    });
    for (parent, name) in children {
        // Only declarations of this file's own module (inline modules hold none here).
        if parent != module {
            continue;
        }
        let child_dir: PathBuf = dir.join(&name);
        let child = if module.is_empty() {
            name.clone()
        } else {
            format!("{module}::{name}")
        };
        let flat = dir.join(format!("{name}.rs"));
        if flat.is_file() {
            module_file(&flat, &child_dir, &child, found);
        } else {
            module_file(&child_dir.join("mod.rs"), &child_dir, &child, found);
        }
    }
}

fn items(
    items: &[Item],
    module: &str,
    found: &mut Vec<Found>,
    declared: &mut dyn FnMut(&str, &str),
) {
    for item in items {
        let attrs = match item {
            Item::Struct(s) => &s.attrs,
            Item::Enum(e) => &e.attrs,
            Item::Mod(m) => {
                if cfg_test(&m.attrs) {
                    continue;
                }
                let inner = if module.is_empty() {
                    m.ident.to_string()
                } else {
                    format!("{module}::{}", m.ident)
                };
                match &m.content {
                    Some((_, content)) => self::items(content, &inner, found, declared),
                    None => declared(module, &m.ident.to_string()),
                }
                continue;
            }
            _ => continue,
        };
        if cfg_test(attrs) || !derives_custom_resource(attrs) {
            continue;
        }
        let mut cr = Found {
            module: module.to_owned(),
            group: String::new(),
            kind: String::new(),
            version: String::new(),
            root: String::new(),
            storage: true,
        };
        for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
            let _ = attr.parse_nested_meta(|meta| {
                let key = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                if meta.input.peek(syn::Token![=]) {
                    let value: syn::Expr = meta.value()?.parse()?;
                    let text = match &value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => s.value(),
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Bool(b),
                            ..
                        }) => b.value.to_string(),
                        _ => String::new(),
                    };
                    match key.as_str() {
                        "group" => cr.group = text,
                        "version" => cr.version = text,
                        "kind" => cr.kind = text,
                        "root" => cr.root = text,
                        "storage" => cr.storage = text != "false",
                        _ => {}
                    }
                } else if meta.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let _: proc_macro2::TokenStream = content.parse()?;
                }
                Ok(())
            });
        }
        if cr.root.is_empty() {
            cr.root = cr.kind.clone();
        }
        found.push(cr);
    }
}

fn derives_custom_resource(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| {
                paths.iter().any(|p| {
                    p.segments
                        .last()
                        .is_some_and(|s| s.ident == "CustomResource")
                })
            })
        })
}

fn cfg_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let tokens = l.tokens.to_string();
                tokens == "test" || (tokens.starts_with("all") && tokens.contains("test"))
            })
    })
}

/// A `merge_crds(vec![a::Foo::crd(), ..], "v1")` call at a file's top level (in a function of
/// its root module): the types as written there, in order, and the storage version.
#[derive(Debug, Clone)]
pub struct Merge {
    pub types: Vec<String>,
    pub storage: String,
}

/// The `merge_crds` calls in the functions of `path`'s root module.
pub fn merges(path: &Path) -> Vec<Merge> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut found = Vec::new();
    for item in &parsed.items {
        if let Item::Fn(f) = item {
            let body = quote::quote!(#f).to_string();
            let mut rest = body.as_str();
            while let Some(at) = rest.find("merge_crds (vec ! [") {
                rest = &rest[at + "merge_crds (vec ! [".len()..];
                let Some(end) = rest.find(']') else { break };
                let types = rest[..end]
                    .split(',')
                    .map(|t| {
                        t.trim()
                            .trim_end_matches("crd ()")
                            .trim()
                            .trim_end_matches("::")
                            .replace(' ', "")
                    })
                    .filter(|t| !t.is_empty())
                    .collect();
                let storage = rest[end..].split('"').nth(1).unwrap_or_default().to_owned();
                found.push(Merge { types, storage });
            }
        }
    }
    found
}

/// Kubernetes' version priority, as `kubectl` orders versions: GA before beta before alpha,
/// higher numbers first, anything else last by name. kopgen merges versions in this order.
pub fn priority(version: &str) -> (u8, i64, i64, String) {
    let Some(rest) = version.strip_prefix('v') else {
        return (3, 0, 0, version.to_owned());
    };
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let Ok(major) = rest[..digits].parse::<i64>() else {
        return (3, 0, 0, version.to_owned());
    };
    let tail = &rest[digits..];
    let (level, minor) = match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
        _ if tail.is_empty() => return (0, -major, 0, String::new()),
        (Some(m), _) => (1, m),
        (_, Some(m)) => (2, m),
        _ => return (3, 0, 0, version.to_owned()),
    };
    match minor.parse::<i64>() {
        Ok(minor) => (level, -major, -minor, String::new()),
        Err(_) => (3, 0, 0, version.to_owned()),
    }
}
