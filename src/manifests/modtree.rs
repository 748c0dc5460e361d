//! What rustc adds to the module tree beyond `mod name;` with its file beside the declaration:
//! `#[path = ".."] mod name;` (the file is the module `name`, wherever it lies), `include!("..")`
//! (the file's items are the including module's), and macros that expand to custom resources
//! (which kopgen cannot see, so they are errors where they would be compiled, never a kind
//! left out without a word).

use std::{
    collections::HashMap,
    path::{Component, Path, PathBuf},
};

use proc_macro2::Span;
use syn::Item;

use super::{cfg::Cfg, error::SourceError};

/// `p` with `.` and `..` taken out, as a key that two spellings of one path share.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in p.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The sources read, by normalized path.
pub fn by_path(files: &[PathBuf]) -> HashMap<PathBuf, usize> {
    files
        .iter()
        .enumerate()
        .map(|(i, f)| (normalize(f), i))
        .collect()
}

/// The string a `#[path = ".."]` attribute gives, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<(String, Span)> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some((s.value(), s.span())),
            _ => None,
        },
        _ => None,
    })
}

/// Gives the file each `#[path]` module declaration names the module it declares (with the
/// files below it, whose modules were named after where they lie). A declaration whose file
/// kopgen does not read is an error: the module's kinds would be missing.
pub fn follow_path_attributes(
    files: &[PathBuf],
    known: &HashMap<PathBuf, usize>,
    modules: &mut [String],
    parsed: &[Option<syn::File>],
    cfg: &Cfg,
) -> Vec<SourceError> {
    let mut errors = Vec::new();
    for (i, file) in parsed.iter().enumerate() {
        let Some(file) = file else { continue };
        let mut decls = Vec::new();
        path_decls(&file.items, &[], cfg, &mut decls);
        let dir = files[i].parent().unwrap_or(Path::new("")).to_path_buf();
        for (inline, name, (value, span)) in decls {
            let mut target = dir.clone();
            target.extend(&inline);
            let target = normalize(&target.join(&value));
            let Some(&t) = known.get(&target) else {
                errors.push(
                    SourceError::at(
                        &files[i],
                        span,
                        format!(
                            "`#[path]` names {}, which is not among the files kopgen reads",
                            target.display()
                        ),
                    )
                    .help("keep the module's file under the directory kopgen reads (--paths), or declare it with a plain `mod`"),
                );
                continue;
            };
            let mut declared = modules[i].clone();
            for part in inline.iter().chain(std::iter::once(&name)) {
                declared.push_str("::");
                declared.push_str(part);
            }
            let old = modules[t].clone();
            let below = format!("{old}::");
            for module in modules.iter_mut() {
                if *module == old {
                    module.clone_from(&declared);
                } else if let Some(rest) = module.strip_prefix(&below) {
                    *module = format!("{declared}::{rest}");
                }
            }
        }
    }
    errors
}

/// `(inline modules, name, path)` of every `#[path] mod name;` under a true `cfg`.
fn path_decls(
    items: &[Item],
    inline: &[String],
    cfg: &Cfg,
    out: &mut Vec<(Vec<String>, String, (String, Span))>,
) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        if !cfg.enabled(&m.attrs) {
            continue;
        }
        match &m.content {
            None => {
                if let Some(path) = path_attr(&m.attrs) {
                    out.push((inline.to_vec(), m.ident.to_string(), path));
                }
            }
            // Deeper modules are an error of the index; their paths would cost the square.
            Some(_) if inline.len() >= super::index::MAX_MODULE_DEPTH => {}
            Some((_, inner)) => {
                let mut nested = inline.to_vec();
                nested.push(m.ident.to_string());
                path_decls(inner, &nested, cfg, out);
            }
        }
    }
}

/// The file an `include!("..")` in file `from` names, when it is a plain string.
pub fn include_target(mac: &syn::Macro, from: &Path) -> Option<PathBuf> {
    if !mac.path.is_ident("include") {
        return None;
    }
    let lit: syn::LitStr = mac.parse_body().ok()?;
    Some(normalize(
        &from.parent().unwrap_or(Path::new("")).join(lit.value()),
    ))
}

/// Every file some other file `include!`s (by index): its items belong to the including
/// module, not to a module of its own.
pub fn included_files(
    files: &[PathBuf],
    known: &HashMap<PathBuf, usize>,
    parsed: &[Option<syn::File>],
) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, file) in parsed.iter().enumerate() {
        let Some(file) = file else { continue };
        let mut macros = Vec::new();
        item_macros(&file.items, &mut macros);
        for mac in macros {
            if let Some(&t) = include_target(mac, &files[i]).and_then(|p| known.get(&p))
                && t != i
            {
                found.push(t);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

fn item_macros<'a>(items: &'a [Item], out: &mut Vec<&'a syn::Macro>) {
    for item in items {
        match item {
            Item::Macro(m) => out.push(&m.mac),
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    item_macros(inner, out);
                }
            }
            _ => {}
        }
    }
}

/// Whether `tokens` mention `CustomResource` anywhere (a derive a macro would emit).
pub fn mentions_custom_resource(tokens: &proc_macro2::TokenStream) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == "CustomResource",
        proc_macro2::TokenTree::Group(g) => mentions_custom_resource(&g.stream()),
        _ => false,
    })
}

/// An item-level macro call the index could not see into.
#[derive(Debug)]
pub struct Opaque {
    pub module: String,
    pub file: usize,
    pub span: Span,
    /// The macro's name (its path's last segment).
    pub name: String,
    /// `include!` of a file kopgen does not read (or not a plain string).
    pub include: bool,
    /// An `include!` of a build script's output (its path names `OUT_DIR`): generated code,
    /// such as the `built` crate's, that no kind's author writes kinds in.
    pub generated: bool,
    /// The call's own tokens mention `CustomResource`.
    pub mentions: bool,
}

impl Opaque {
    /// The error for this call, if it could hide a custom resource: an `include!` kopgen
    /// cannot follow, or a macro whose call (or, for the crate's own `macro_rules!`, whose
    /// definition) mentions `CustomResource`.
    pub fn error(&self, files: &[PathBuf], defines_kinds: &[String]) -> Option<SourceError> {
        let file = &files[self.file];
        // A build script's output refuses nothing by itself: a kind that names one of its items
        // fails where it names it (the item is not found), and the others are derived.
        if self.include && !self.generated {
            return Some(
                SourceError::at(
                    file,
                    self.span,
                    "kopgen cannot see the items this `include!` brings in (a file it does not read, or a path that is not a plain string)",
                )
                .help("declare the file as a module (`mod name;`), or include a file under the directory kopgen reads with a plain string"),
            );
        }
        (self.mentions || defines_kinds.contains(&self.name)).then(|| {
            SourceError::at(
                file,
                self.span,
                format!(
                    "the custom resources that `{}!` generates are invisible to kopgen (it does not expand macros), so their CRDs would be missing",
                    self.name
                ),
            )
            .help("write each kind out as a struct with #[derive(CustomResource)]; a macro may still generate the rest")
        })
    }
}
