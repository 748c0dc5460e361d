//! Maps a path in a generated schema (`spec.containers[*].image`) back to the Rust field that
//! produced it, so lint findings point into the source.

use std::path::PathBuf;

use proc_macro2::Span;
use syn::{Fields, Type, spanned::Spanned};

use super::{
    attrs,
    index::{Index, ItemKind},
    kinds::{CustomResource, Kind},
    library::known::Generic,
    lint,
    paths::{path_segments, type_args},
    render::Rendered,
    resolve::Resolved,
};

/// Where a schema path comes from: the deepest field found, else the custom resource; and
/// whether the rest of the path lies inside a library type (k8s-openapi's, say), whose fields
/// the user cannot change.
pub fn locate(index: &Index, cr: &CustomResource, path: &[String]) -> (PathBuf, Span, bool) {
    let mut best = (cr.file.clone(), cr.span);
    let mut in_library = false;
    let spec_module = index.items[cr.item].module.clone();
    let (first, rest) = match path.split_first() {
        Some(split) => split,
        None => return (best.0, best.1, false),
    };
    let mut current: Option<(Type, String)> = match first.as_str() {
        "spec" => {
            let name = &index.items[cr.item].name;
            syn::parse_str::<Type>(name)
                .ok()
                .map(|t| (t, spec_module.clone()))
        }
        "status" => cr
            .attrs
            .status
            .as_ref()
            .and_then(|s| syn::parse_str::<Type>(s).ok())
            .map(|t| (t, spec_module.clone())),
        _ => None,
    };
    for segment in rest {
        let Some((ty, module)) = current.take() else {
            break;
        };
        let Some((ty, module)) = unwrap(index, &ty, &module, segment) else {
            break;
        };
        if segment.starts_with('[') || segment.starts_with('{') {
            current = Some((ty, module));
            continue;
        }
        match field_named(index, &ty, &module, segment) {
            Some((file, span, field_ty, field_module)) => {
                best = (file, span);
                current = Some((field_ty, field_module));
            }
            None => {
                in_library = is_external(index, &ty, &module);
                break;
            }
        }
    }
    (best.0, best.1, in_library)
}

/// Whether `ty` is a type of another crate (not one the index holds).
fn is_external(index: &Index, ty: &Type, module: &str) -> bool {
    let Type::Path(p) = ty else { return false };
    matches!(
        index.resolve(module, &path_segments(&p.path)),
        Some(Resolved::External(_))
    )
}

/// Peels `Option`/`Box`/aliases; for `[*]` the item type, for `{*}` the map value type.
fn unwrap(index: &Index, ty: &Type, module: &str, segment: &str) -> Option<(Type, String)> {
    let mut ty = ty.clone();
    let mut module = module.to_owned();
    for _ in 0..16 {
        let Type::Path(p) = &ty else {
            return Some((ty, module));
        };
        let args: Vec<Type> = type_args(&p.path).into_iter().cloned().collect();
        match index.resolve(&module, &path_segments(&p.path))? {
            Resolved::External(path) => match Generic::from_path(&path) {
                Some(Generic::Option | Generic::Transparent) => ty = args.first()?.clone(),
                Some(Generic::BTreeMap | Generic::HashMap | Generic::IndexMap)
                    if segment == "{*}" =>
                {
                    return args.get(1).cloned().map(|t| (t, module));
                }
                Some(_) if segment == "[*]" => return args.first().cloned().map(|t| (t, module)),
                _ => return Some((ty, module)),
            },
            Resolved::Local(item) => match index.kind(item) {
                ItemKind::Alias(alias) => {
                    module = index.items[item].module.clone();
                    ty = (*alias.ty).clone();
                }
                _ => return Some((ty, module)),
            },
        }
    }
    None
}

/// The field of struct `ty` serialized as `name` (looking into flattened fields).
fn field_named(
    index: &Index,
    ty: &Type,
    module: &str,
    name: &str,
) -> Option<(PathBuf, Span, Type, String)> {
    let Type::Path(p) = ty else { return None };
    let Resolved::Local(item) = index.resolve(module, &path_segments(&p.path))? else {
        return None;
    };
    let item_module = index.items[item].module.clone();
    let file = index.file(&index.items[item]).to_path_buf();
    let s = match index.kind(item) {
        ItemKind::Struct(s) => s,
        // An externally tagged enum is an object with a property per variant: a newtype
        // variant's value is its type's (`enum Workload { Job(JobSpec) }`, at `Job`).
        ItemKind::Enum(e) => {
            let cattrs = attrs::container_attrs(&e.attrs).ok()?;
            if cattrs.untagged || cattrs.tag.is_some() {
                return None;
            }
            return e.variants.iter().find_map(|variant| {
                let vattrs = attrs::container_attrs(&variant.attrs).ok()?;
                let serialized = vattrs.rename.clone().unwrap_or_else(|| {
                    cattrs
                        .rename_all
                        .apply_to_variant(&variant.ident.to_string())
                });
                let Fields::Unnamed(one) = &variant.fields else {
                    return None;
                };
                let field = (one.unnamed.len() == 1).then(|| &one.unnamed[0])?;
                (serialized == name).then(|| {
                    (
                        file.clone(),
                        variant.span(),
                        field.ty.clone(),
                        item_module.clone(),
                    )
                })
            });
        }
        _ => return None,
    };
    let cattrs = attrs::container_attrs(&s.attrs).ok()?;
    let Fields::Named(named) = &s.fields else {
        return None;
    };
    for field in &named.named {
        let fattrs = attrs::field_attrs(&field.attrs).ok()?;
        let ident = field.ident.as_ref()?;
        if fattrs.flatten {
            if let Some(found) = field_named(index, &field.ty, &item_module, name) {
                return Some(found);
            }
            continue;
        }
        if fattrs.serialized_name(ident, cattrs.rename_all) == name {
            let ty = fattrs.with.clone().unwrap_or_else(|| field.ty.clone());
            return Some((file, field.span(), ty, item_module));
        }
    }
    None
}

/// A lint finding located in the Rust source.
#[derive(Debug, Clone)]
pub struct Located {
    pub finding: lint::Finding,
    pub crd: String,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.finding.severity {
            lint::Severity::Error => "error",
            lint::Severity::Warning => "warning",
            lint::Severity::Note => "note",
        };
        // The CRD, its version and the schema path, as far as the finding has them.
        let mut place = format!("CRD {}", self.crd);
        if !self.finding.version.is_empty() {
            place = format!("{place} {}", self.finding.version);
        }
        if !self.finding.path.is_empty() {
            let path = self.finding.path.join(".");
            place = format!("{place}, at {}", path.replace(".[", "[").replace(".{", "{"));
        }
        if self.finding.severity == lint::Severity::Note {
            return write!(
                f,
                "{level}[{}]: {}:{}:{}: {} ({place})",
                self.finding.rule,
                self.file.display(),
                self.line,
                self.column,
                self.finding.message
            );
        }
        write!(
            f,
            "{level}[{}]: {}:{}:{}: {} ({place})\n  help: {}",
            self.finding.rule,
            self.file.display(),
            self.line,
            self.column,
            self.finding.message,
            self.finding.fix
        )
    }
}

/// A rendered kind's lint findings, each at the Rust field that produced it.
pub fn locate_findings(index: &Index, kind: &Kind, rendered: &Rendered) -> Vec<Located> {
    let mut located = Vec::with_capacity(rendered.findings.len());
    for finding in &rendered.findings {
        let Some(cr) = kind
            .versions
            .iter()
            .find(|cr| cr.version() == finding.version)
            .or_else(|| kind.versions.first())
        else {
            continue;
        };
        let (file, span, in_library) = locate(index, cr, &finding.path);
        // An empty object inside a Kubernetes type (`managedFields[*].fieldsV1`) is pruned on
        // built-in resources alike, and the user cannot change it: not worth a warning on every
        // run.
        if in_library && finding.rule == "pruned" {
            continue;
        }
        let start = span.start();
        located.push(Located {
            crd: rendered.crd_name.clone(),
            file,
            line: start.line,
            column: start.column + 1,
            finding: finding.clone(),
        });
    }
    located
}
