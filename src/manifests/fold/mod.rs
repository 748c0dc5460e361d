//! Values kube-derive computes by running Rust, folded from the source: `default`s
//! (`Default::default()` or the `#[serde(default = "...")]` function, serialized with serde),
//! examples and attribute values, `transform` functions ([`transform_fn`]) and CEL rules
//! ([`cel`]). kopgen folds literals, constants, std defaults, the crate's own `Default`s and
//! functions whose body is one such expression; anything else is an error marked
//! `unsupported`, which `--derive=auto` compiles instead.

pub mod cel;
mod expr;
mod iter;
pub mod transform_fn;
mod types;
mod values;

use std::path::Path;

use serde_json::{Map, Value};
use syn::{Expr, Fields, Type, spanned::Spanned};

use super::{
    attrs::{self, DefaultAttr, FieldAttrs},
    error::SourceError,
    generics::Env,
    index::{DefaultImpl, Index, ItemKind},
    library::known::Generic,
    paths::{expr_path_segments, path_segments, type_args},
    resolve::Resolved,
};
use values::*;

const HELP: &str = "kopgen folds literals, `String::from`, `.into()`, `.to_string()`, `Some(..)`, `vec![..]`, arrays, tuples, \
                    `BTreeMap::from([..])` and other std collections, `.iter().map(|s| s.to_string()).collect()` over them, `u32::MAX`, constants, struct and enum literals, \
                    k8s-openapi struct literals with `..Default::default()`, std defaults and `Default` (derived, or an \
                    `impl Default` whose body is one such expression) of this crate's types; make the default one of those";

/// The struct-level `#[serde(default)]` a field falls back to.
#[derive(Debug, Clone, Copy)]
pub enum ContainerDefault<'a> {
    /// `#[serde(default)]` with a derived `Default`: the field type's default.
    Derived,
    /// `#[serde(default = "f")]`: `f()` serialized, and the field's serialized name in it.
    Fields(&'a Value, &'a str),
}

/// The `default` schemars writes for a field, folded statically; `None` when it writes none.
pub fn field_default(
    index: &Index,
    file: &Path,
    module: &str,
    field: &syn::Field,
    fattrs: &FieldAttrs,
    container: Option<ContainerDefault<'_>>,
    env: &Env,
) -> Result<Option<Value>, SourceError> {
    if fattrs.skip_serializing || (fattrs.default == DefaultAttr::None && container.is_none()) {
        return Ok(None);
    }
    let folder = Folder { index, env };
    let value = match (&fattrs.default, container) {
        (DefaultAttr::Path(path), _) => folder.call(file, module, path)?,
        (DefaultAttr::Default, _) => folder.type_default(file, module, &field.ty)?,
        // The container's `default = "f"`: the field of `f()`, as serialized (a field that
        // serde skips there has no default here either).
        (DefaultAttr::None, Some(ContainerDefault::Fields(object, name))) => match object.get(name)
        {
            Some(value) => value.clone(),
            None => return Ok(None),
        },
        // The container's derived `Default`: each field takes its own type's default.
        (DefaultAttr::None, _) => folder.type_default(file, module, &field.ty)?,
    };
    if let Some(predicate) = &fattrs.skip_serializing_if
        && skips(file, predicate, &value)?
    {
        return Ok(None);
    }
    // `serde_json::to_value(None)` is `null`, which the CRD model drops.
    Ok(Some(value))
}

/// Folds a call of the default function `path` (e.g. a struct's `#[serde(default = "f")]`).
pub fn call(
    index: &Index,
    file: &Path,
    module: &str,
    path: &syn::Path,
    env: &Env,
) -> Result<Value, SourceError> {
    Folder { index, env }.call(file, module, path)
}

/// An expression folded as a default would be (literals, `.into()`, `String::from`, constants,
/// `json!`, ...), for other attributes that take a value only running Rust would compute.
pub fn fold_expr(
    index: &Index,
    file: &Path,
    module: &str,
    expr: &Expr,
) -> Result<Value, SourceError> {
    Folder {
        index,
        env: &Env::default(),
    }
    .expr(file, module, expr)
}

/// `T::default()` of a hand-written `impl Default for T` (`T` being `name` in `module`),
/// folded; `None` if there is no such impl.
pub fn impl_default(
    index: &Index,
    module: &str,
    name: &str,
    env: &Env,
) -> Result<Option<Value>, SourceError> {
    let Some(item) = index.item_in(module, name) else {
        return Ok(None);
    };
    let Some(found) = index.default_impl(item) else {
        return Ok(None);
    };
    Folder { index, env }
        .hand_written_default(name, found)
        .map(Some)
}

/// The schema a `#[schemars(schema_with = "f")]` function returns, when its body is a
/// `json_schema!({...})` literal (schemars runs the function; kopgen folds the literal).
pub fn schema_with(
    index: &Index,
    file: &Path,
    module: &str,
    function: &syn::Path,
) -> Result<schemars::Schema, SourceError> {
    let unfoldable = |span: proc_macro2::Span| {
        SourceError::at(file, span, format!("cannot fold `schema_with = \"{}\"` statically", quote_path(function)))
            .help("make the function's body a single `json_schema!({ ... })` literal, or use `#[schemars(with = \"Type\")]`")
            .unsupported()
    };
    let Some(Resolved::Local(item)) = index.resolve(module, &path_segments(function)) else {
        return Err(unfoldable(function.span()));
    };
    let ItemKind::Fn(f) = index.kind(item) else {
        return Err(unfoldable(function.span()));
    };
    let item_file = index.file(&index.items[item]).to_path_buf();
    let Some(Expr::Macro(m)) = tail_expr(&f.block) else {
        return Err(unfoldable(function.span()).with_location(&item_file, f.sig.ident.span()));
    };
    if m.mac
        .path
        .segments
        .last()
        .is_none_or(|s| s.ident != "json_schema")
    {
        return Err(unfoldable(function.span()).with_location(&item_file, m.mac.path.span()));
    }
    let tokens: Vec<proc_macro2::TokenTree> = m.mac.tokens.clone().into_iter().collect();
    match attrs::json_tokens(&tokens) {
        Some(Value::Object(object)) => Ok(schemars::Schema::from(object)),
        Some(Value::Bool(b)) => Ok(schemars::Schema::from(b)),
        _ => Err(unfoldable(function.span()).with_location(&item_file, m.mac.path.span())),
    }
}

/// Evaluates a `skip_serializing_if` predicate on a folded value.
fn skips(file: &Path, predicate: &syn::Path, value: &Value) -> Result<bool, SourceError> {
    let name = predicate
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    match name.as_str() {
        "is_none" => Ok(value.is_null()),
        "is_some" => Ok(!value.is_null()),
        "is_empty" => Ok(match value {
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        }),
        "is_false" | "not" => Ok(value == &Value::Bool(false)),
        "is_true" => Ok(value == &Value::Bool(true)),
        "is_zero" => Ok(value.as_f64() == Some(0.0)),
        _ => Err(SourceError::at(
            file,
            predicate.span(),
            format!(
                "cannot evaluate `skip_serializing_if = \"{}\"` on the default statically",
                quote_path(predicate)
            ),
        )
        .help("use Option::is_none, Vec::is_empty, String::is_empty or a map's is_empty")
        .unsupported()),
    }
}

fn quote_path(path: &syn::Path) -> String {
    path_segments(path).join("::")
}

thread_local! {
    static CALL_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    static TYPE_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One level of folding that user input can nest without end (a function calling itself, a
/// type alias naming itself), counted per thread while it lasts; `None` past its limit.
struct Depth(&'static std::thread::LocalKey<std::cell::Cell<u32>>);

/// Function calls a default may go through, as deep as rustc would evaluate short of recursion.
const MAX_CALL_DEPTH: u32 = 32;

/// Types a default may nest through (fields, containers, aliases).
const MAX_TYPE_DEPTH: u32 = 256;

impl Depth {
    fn enter(
        counter: &'static std::thread::LocalKey<std::cell::Cell<u32>>,
        max: u32,
    ) -> Option<Self> {
        counter.with(|depth| {
            (depth.get() < max).then(|| {
                depth.set(depth.get() + 1);
                Depth(counter)
            })
        })
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        self.0
            .with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

struct Folder<'a> {
    index: &'a Index,
    env: &'a Env,
}
