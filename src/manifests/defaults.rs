//! `default` values, which kube-derive computes by running Rust (`Default::default()` or the
//! `#[serde(default = "...")]` function, serialized with serde). kopgen folds them statically
//! for literals, std defaults, derived `Default` of the crate's own types, and simple
//! functions and constants; anything else is an error that says how to make it foldable.

use std::path::Path;

use serde_json::{Map, Value};
use syn::{Expr, Fields, Type, spanned::Spanned};

use super::{
    attrs::{self, DefaultAttr, FieldAttrs},
    error::SourceError,
    index::{DefaultImpl, Index, ItemKind},
    known::Generic,
    resolve::{Resolved, expr_path_segments, path_segments, type_args},
    schema::Env,
};

const HELP: &str = "kopgen folds literals, `String::from`, `.into()`, `.to_string()`, `Some(..)`, `vec![..]`, arrays, tuples, \
                    `BTreeMap::from([..])` and other std collections, `u32::MAX`, constants, struct and enum literals, \
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
}

/// One function call being folded; `None` past [`MAX_CALL_DEPTH`].
struct CallDepth;

const MAX_CALL_DEPTH: u32 = 32;

impl CallDepth {
    fn enter() -> Option<Self> {
        CALL_DEPTH.with(|depth| {
            (depth.get() < MAX_CALL_DEPTH).then(|| {
                depth.set(depth.get() + 1);
                CallDepth
            })
        })
    }
}

impl Drop for CallDepth {
    fn drop(&mut self) {
        CALL_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

struct Folder<'a> {
    index: &'a Index,
    env: &'a Env,
}

impl Folder<'_> {
    /// `Default::default()` of `ty`, serialized.
    fn type_default(&self, file: &Path, module: &str, ty: &Type) -> Result<Value, SourceError> {
        let unfoldable = || {
            SourceError::at(
                file,
                ty.span(),
                "cannot fold the Default of this type statically",
            )
            .help(HELP)
            .unsupported()
        };
        match ty {
            Type::Paren(p) => return self.type_default(file, module, &p.elem),
            Type::Group(g) => return self.type_default(file, module, &g.elem),
            Type::Tuple(t) if t.elems.is_empty() => return Ok(Value::Null),
            // serde writes tuples as arrays.
            Type::Tuple(t) => {
                return t
                    .elems
                    .iter()
                    .map(|elem| self.type_default(file, module, elem))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array);
            }
            Type::Array(a) => {
                let len = attrs::expr_to_json(&a.len)
                    .and_then(|v| v.as_u64())
                    .ok_or_else(unfoldable)?;
                let item = self.type_default(file, module, &a.elem)?;
                return Ok(Value::Array(vec![item; len as usize]));
            }
            Type::Path(_) => {}
            _ => return Err(unfoldable()),
        }
        let Type::Path(p) = ty else {
            return Err(unfoldable());
        };
        if let Some(binding) = super::schema::bound(self.env, &p.path) {
            let folder = Folder {
                index: self.index,
                env: &binding.env,
            };
            return folder.type_default(file, &binding.module, &binding.ty);
        }
        match self.index.resolve(module, &path_segments(&p.path)) {
            Some(Resolved::External(path)) => {
                if let Some(generic) = Generic::from_path(&path) {
                    return match generic {
                        Generic::Option => Ok(Value::Null),
                        Generic::Transparent => {
                            let inner = *type_args(&p.path).first().ok_or_else(unfoldable)?;
                            self.type_default(file, module, inner)
                        }
                        Generic::BTreeMap | Generic::HashMap | Generic::IndexMap => {
                            Ok(Value::Object(Map::new()))
                        }
                        Generic::Phantom => Ok(Value::Null),
                        // No `Default` (Result, Bound), or one kopgen does not fold (Range).
                        Generic::Result | Generic::Range | Generic::Bound => Err(unfoldable()),
                        Generic::Vec
                        | Generic::VecDeque
                        | Generic::LinkedList
                        | Generic::BinaryHeap
                        | Generic::BTreeSet
                        | Generic::HashSet
                        | Generic::IndexSet => Ok(Value::Array(Vec::new())),
                    };
                }
                Ok(match path.as_str() {
                    "bool" | "std::sync::atomic::AtomicBool" => Value::Bool(false),
                    "std::string::String" | "str" => Value::String(String::new()),
                    "char" => Value::String("\0".into()),
                    "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32"
                    | "u64" | "u128" | "usize" => Value::from(0),
                    atomic if atomic.starts_with("std::sync::atomic::Atomic") => Value::from(0),
                    "f32" | "f64" => Value::from(0.0),
                    "serde_json::Value" | "serde_json::value::Value" => Value::Null,
                    "serde_json::Map" | "serde_json::map::Map" => Value::Object(Map::new()),
                    // k8s-openapi types: their real `Default`, serialized.
                    other => match super::k8s_types::default_value(other).and_then(|f| f()) {
                        Some(value) => value,
                        None => return Err(unfoldable()),
                    },
                })
            }
            Some(Resolved::Local(item)) => {
                let bound = self
                    .generic_env(module, item, &p.path)
                    .ok_or_else(unfoldable)?;
                let folder = Folder {
                    index: self.index,
                    env: bound.as_ref().unwrap_or(self.env),
                };
                folder.item_default(file, item).map_err(|_| unfoldable())
            }
            None => Err(unfoldable()),
        }
    }

    /// `Default::default()` of a local struct deriving `Default`, or of an enum's `#[default]` unit variant.
    /// The environment of item `item` used as `path` (written in `module`): its type
    /// parameters bound to the arguments `path` gives (`Slot<u32>`: `T` is `u32`). `Some(None)`
    /// when it has none; `None` when the arguments do not match them in number.
    fn generic_env(&self, module: &str, item: usize, path: &syn::Path) -> Option<Option<Env>> {
        let generics = match self.index.kind(item) {
            ItemKind::Struct(s) => &s.generics,
            ItemKind::Enum(e) => &e.generics,
            ItemKind::Alias(a) => &a.generics,
            _ => return Some(None),
        };
        if generics.type_params().next().is_none() {
            return Some(None);
        }
        super::schema::bind_generics(generics, &type_args(path), module, self.env).map(Some)
    }

    fn item_default(&self, file: &Path, item_index: usize) -> Result<Value, SourceError> {
        self.struct_value(file, item_index, &std::collections::HashMap::new(), true)
    }

    /// A local struct serialized by serde: `given` fields as folded, the others from their
    /// types' defaults (`..Default::default()`, or the derived `Default` when `all_default`).
    fn struct_value(
        &self,
        file: &Path,
        item_index: usize,
        given: &std::collections::HashMap<String, Value>,
        all_default: bool,
    ) -> Result<Value, SourceError> {
        let item_kind = self.index.kind(item_index);
        let item = &self.index.items[item_index];
        let item_file = self.index.file(item).to_path_buf();
        let module = item.module.clone();
        if all_default && let Some(found) = self.index.default_impl(item_index) {
            return self.hand_written_default(&item.name, found);
        }
        match item_kind {
            ItemKind::Alias(alias) => self.type_default(&item_file, &module, &alias.ty),
            ItemKind::Struct(s) if !all_default || attrs::derives(&s.attrs, "Default") => {
                let cattrs = attrs::container_attrs(&s.attrs)
                    .map_err(|e| super::schema::syn_error(&item_file, e))?;
                match &s.fields {
                    Fields::Named(named) => {
                        let mut object = Map::new();
                        for field in &named.named {
                            let fattrs = attrs::field_attrs(&field.attrs)
                                .map_err(|e| super::schema::syn_error(&item_file, e))?;
                            if fattrs.skip_serializing {
                                continue;
                            }
                            let Some(ident) = &field.ident else { continue };
                            let value = match given.get(&ident.to_string()) {
                                Some(value) => value.clone(),
                                None => self.type_default(&item_file, &module, &field.ty)?,
                            };
                            if let Some(predicate) = &fattrs.skip_serializing_if
                                && skips(&item_file, predicate, &value)?
                            {
                                continue;
                            }
                            if fattrs.flatten {
                                if let Value::Object(inner) = value {
                                    object.extend(inner);
                                }
                                continue;
                            }
                            object.insert(fattrs.serialized_name(ident, cattrs.rename_all), value);
                        }
                        Ok(Value::Object(object))
                    }
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                        self.type_default(&item_file, &module, &f.unnamed[0].ty)
                    }
                    Fields::Unit => Ok(Value::Null),
                    Fields::Unnamed(_) => {
                        Err(
                            SourceError::at(file, s.span(), "cannot fold tuple struct defaults")
                                .unsupported(),
                        )
                    }
                }
            }
            ItemKind::Enum(e) => {
                let cattrs = attrs::container_attrs(&e.attrs)
                    .map_err(|err| super::schema::syn_error(&item_file, err))?;
                let variant = e
                    .variants
                    .iter()
                    .find(|v| {
                        v.attrs.iter().any(|a| a.path().is_ident("default"))
                            && matches!(v.fields, Fields::Unit)
                    })
                    .ok_or_else(|| {
                        SourceError::at(file, e.span(), "enum has no #[default] unit variant")
                    })?;
                let vattrs = attrs::container_attrs(&variant.attrs)
                    .map_err(|err| super::schema::syn_error(&item_file, err))?;
                Ok(Value::String(vattrs.rename.unwrap_or_else(|| {
                    cattrs
                        .rename_all
                        .apply_to_variant(&variant.ident.to_string())
                })))
            }
            _ => Err(SourceError::at(
                &item_file,
                self.index.ident_span(item_index),
                "this type does not derive Default",
            )
            .help(HELP)),
        }
    }

    /// `T::default()` of a hand-written `impl Default for T`: its body folded like a default
    /// function's, in the `impl`'s module (where `Self` already stands for `T`).
    fn hand_written_default(&self, name: &str, found: &DefaultImpl) -> Result<Value, SourceError> {
        let file = self.index.files[found.file].clone();
        let function = &found.function;
        let expr = tail_expr(&function.block).ok_or_else(|| {
            SourceError::at(
                &file,
                function.sig.ident.span(),
                format!("`impl Default for {name}` is not a single expression"),
            )
            .help(HELP)
            .unsupported()
        })?;
        self.expr(&file, &found.module, expr)
    }

    /// Expressions folded into the array serde writes for them (arrays, tuples, `vec![..]`).
    fn array<'e>(
        &self,
        file: &Path,
        module: &str,
        elems: impl IntoIterator<Item = &'e Expr>,
    ) -> Result<Value, SourceError> {
        elems
            .into_iter()
            .map(|e| self.expr(file, module, e))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// Whether `path` is `Default::default` or a function of a generic library type
    /// (`Vec::new`), whose type nothing fixes where schemars calls it.
    fn generic_constructor(&self, module: &str, path: &syn::Path) -> bool {
        let segments = path_segments(path);
        let Some((_, ty)) = segments.split_last() else {
            return false;
        };
        match self.index.resolve(module, ty) {
            Some(Resolved::External(ty)) => {
                ty == "Default" || ty.ends_with("::Default") || Generic::from_path(&ty).is_some()
            }
            _ => false,
        }
    }

    /// Folds a call of the default function at `path` (written in `module`).
    fn call(&self, file: &Path, module: &str, path: &syn::Path) -> Result<Value, SourceError> {
        let unfoldable = |message: &str| {
            SourceError::at(file, path.span(), message.to_owned())
                .help(HELP)
                .unsupported()
        };
        let resolved = self.index.resolve(module, &path_segments(path));
        if let Some(Resolved::Local(item)) = resolved {
            return self.local_call(file, path, item);
        }
        let _depth = self.enter_call(file, path)?;
        match resolved {
            // A constructor of a generic library type, or `Default::default`: schemars calls it
            // where nothing fixes its type, so rustc asks for type annotations.
            Some(Resolved::External(_)) if self.generic_constructor(module, path) => {
                Err(SourceError::at(
                    file,
                    path.span(),
                    "schemars cannot infer the type this function returns (rustc: type annotations needed)",
                )
                .help("use `#[serde(default)]` for the type's Default, or a function of this crate that returns the field's type"))
            }
            // A constructor of a library type (`String::new`, `u32::default`,
            // `Quantity::default`): folded as a call of it.
            Some(Resolved::External(_)) => {
                let call: Expr = syn::parse_quote!(#path());
                self.expr(file, module, &call).map_err(|_| {
                    unfoldable("kopgen cannot fold this library function; use `#[serde(default)]` for the type's Default")
                })
            }
            _ => Err(unfoldable("cannot find this default function in the crate")),
        }
    }

    /// One more call being folded, at `path` in `file`. Functions may call functions: as many
    /// as rustc would evaluate, short of recursion.
    fn enter_call(&self, file: &Path, path: &syn::Path) -> Result<CallDepth, SourceError> {
        CallDepth::enter().ok_or_else(|| {
            SourceError::at(
                file,
                path.span(),
                "the default calls functions more than 32 deep (or calls itself)",
            )
            .help(HELP)
            .unsupported()
        })
    }

    /// Folds a call (at `path` in `file`) of the crate's item `item`, which must be a function
    /// whose body is one foldable expression.
    fn local_call(&self, file: &Path, path: &syn::Path, item: usize) -> Result<Value, SourceError> {
        let unfoldable =
            |message: &str| SourceError::at(file, path.span(), message.to_owned()).help(HELP);
        let _depth = self.enter_call(file, path)?;
        let item_kind = self.index.kind(item);
        let item = &self.index.items[item];
        let item_file = self.index.file(item).to_path_buf();
        let ItemKind::Fn(f) = item_kind else {
            return Err(unfoldable("the default is not a function"));
        };
        let expr = tail_expr(&f.block).ok_or_else(|| {
            SourceError::at(
                &item_file,
                f.sig.ident.span(),
                "this default function is not a single expression",
            )
            .help(HELP)
            .unsupported()
        })?;
        let module = item.module.clone();
        // `Default::default()` (or `Default::default().into()`) takes its type from the
        // function's return type.
        if is_default_call(expr)
            && let syn::ReturnType::Type(_, ty) = &f.sig.output
        {
            return self.type_default(&item_file, &module, ty);
        }
        self.expr(&item_file, &module, expr)
    }

    /// Folds a constant expression.
    fn expr(&self, file: &Path, module: &str, expr: &Expr) -> Result<Value, SourceError> {
        let unfoldable = || {
            SourceError::at(file, expr.span(), "cannot fold this default statically")
                .help(HELP)
                .unsupported()
        };
        if let Some(value) = attrs::expr_to_json(expr) {
            return Ok(value);
        }
        match expr {
            Expr::Paren(p) => self.expr(file, module, &p.expr),
            Expr::Group(g) => self.expr(file, module, &g.expr),
            Expr::Reference(r) => self.expr(file, module, &r.expr),
            // `json!({...})` with literal contents.
            Expr::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "json") =>
            {
                let tokens: Vec<proc_macro2::TokenTree> =
                    m.mac.tokens.clone().into_iter().collect();
                attrs::json_tokens(&tokens).ok_or_else(unfoldable)
            }
            Expr::Block(b) if b.block.stmts.len() == 1 => match tail_expr(&b.block) {
                Some(e) => self.expr(file, module, e),
                None => Err(unfoldable()),
            },
            Expr::Return(r) => r
                .expr
                .as_ref()
                .map_or(Ok(Value::Null), |e| self.expr(file, module, e)),
            Expr::MethodCall(m) if m.args.is_empty() => match m.method.to_string().as_str() {
                "to_string" | "to_owned" | "into" | "clone" => self.expr(file, module, &m.receiver),
                _ => Err(unfoldable()),
            },
            Expr::Cast(c) => {
                let value = self.expr(file, module, &c.expr)?;
                let Type::Path(target) = &*c.ty else {
                    return Err(unfoldable());
                };
                let target = path_segments(&target.path).join("::");
                cast(&value, &target).ok_or_else(unfoldable)
            }
            Expr::Array(a) => self.array(file, module, &a.elems),
            // serde writes tuples as arrays, and `()` as null.
            Expr::Tuple(t) if t.elems.is_empty() => Ok(Value::Null),
            Expr::Tuple(t) => self.array(file, module, &t.elems),
            Expr::Call(c) => {
                let Expr::Path(func) = &*c.func else {
                    return Err(unfoldable());
                };
                let segments = expr_path_segments(func);
                // A function of this crate without arguments: its body, folded.
                if c.args.is_empty()
                    && let Some(Resolved::Local(item)) = self.index.resolve(module, &segments)
                    && matches!(self.index.kind(item), ItemKind::Fn(_))
                {
                    return self.local_call(file, &func.path, item);
                }
                let (last, head) = match segments.as_slice() {
                    [.., head, last] => (last.as_str(), head.as_str()),
                    [last] => (last.as_str(), ""),
                    [] => ("", ""),
                };
                match (last, c.args.len()) {
                    ("Some", 1) => self.expr(file, module, &c.args[0]),
                    ("from" | "new", 1) => {
                        let inner = self.expr(file, module, &c.args[0])?;
                        collection_from(head, inner).ok_or_else(unfoldable)
                    }
                    // `Window::default()`, `Quantity::default()`: the type's default.
                    ("default", 0) if !matches!(head, "" | "Default") => {
                        let mut ty = func.path.clone();
                        ty.segments.pop();
                        ty.segments.pop_punct();
                        let ty = Type::Path(syn::TypePath {
                            qself: None,
                            path: ty,
                        });
                        self.type_default(file, module, &ty)
                    }
                    ("new" | "default", 0) => {
                        // `Vec::new()`, `BTreeMap::new()`, `String::new()`.
                        Ok(match head {
                            "Vec" | "VecDeque" | "LinkedList" | "BTreeSet" | "HashSet"
                            | "IndexSet" => Value::Array(Vec::new()),
                            "BTreeMap" | "HashMap" | "IndexMap" => Value::Object(Map::new()),
                            "String" => Value::String(String::new()),
                            _ => return Err(unfoldable()),
                        })
                    }
                    (_, 1) => {
                        let inner = self.expr(file, module, &c.args[0])?;
                        self.newtype_value(module, &segments, inner)
                            .ok_or_else(unfoldable)
                    }
                    _ => Err(unfoldable()),
                }
            }
            Expr::Struct(literal) => {
                let segments = path_segments(&literal.path);
                let mut given = std::collections::HashMap::new();
                for field in &literal.fields {
                    let syn::Member::Named(name) = &field.member else {
                        return Err(unfoldable());
                    };
                    given.insert(name.to_string(), self.expr(file, module, &field.expr)?);
                }
                // `..Default::default()` (or `..T::default()`) fills the rest with field defaults.
                let rest_is_default = literal.rest.as_deref().is_some_and(|rest| {
                    matches!(rest, Expr::Call(c) if c.args.is_empty()
                        && matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "default")))
                });
                if literal.rest.is_some() && !rest_is_default {
                    return Err(unfoldable());
                }
                if literal.rest.is_none() && self.variant_of(module, &segments).is_some() {
                    return self
                        .struct_variant(file, module, &segments, given)?
                        .ok_or_else(unfoldable);
                }
                match self.index.resolve(module, &segments) {
                    Some(Resolved::Local(item)) => self.struct_value(file, item, &given, false),
                    Some(Resolved::External(path)) => {
                        library_struct(&path, given).ok_or_else(unfoldable)
                    }
                    None => Err(unfoldable()),
                }
            }
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                let elems = m
                    .mac
                    .parse_body_with(
                        syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                    )
                    .map_err(|_| unfoldable())?;
                self.array(file, module, &elems)
            }
            Expr::Path(p) => {
                let segments = expr_path_segments(p);
                if segments == ["None"] {
                    return Ok(Value::Null);
                }
                if let [ty, bound] = segments.as_slice()
                    && let Some(value) = integer_bound(ty, bound)
                {
                    return Ok(value);
                }
                match self.index.resolve(module, &segments) {
                    Some(Resolved::Local(item)) => {
                        let item_kind = self.index.kind(item);
                        let item = &self.index.items[item];
                        match item_kind {
                            ItemKind::Const(c) => {
                                let item_file = self.index.file(item).to_path_buf();
                                self.expr(&item_file, &item.module.clone(), &c.expr)
                            }
                            _ => Err(unfoldable()),
                        }
                    }
                    _ => self.enum_variant(module, &segments).ok_or_else(unfoldable),
                }
            }
            _ => Err(unfoldable()),
        }
    }

    /// `Path(inner)` as serde writes it: a newtype struct of this crate (its field), a newtype
    /// variant of an enum of this crate (tagged by its name, or not when untagged), or
    /// k8s-openapi's `Quantity(..)` and `IntOrString::Int(..)`/`String(..)`.
    fn newtype_value(&self, module: &str, segments: &[String], inner: Value) -> Option<Value> {
        if let Some((variant, name, cattrs)) = self.variant_of(module, segments) {
            return match &variant.fields {
                Fields::Unnamed(f) if f.unnamed.len() == 1 => tagged(&cattrs, name, inner),
                _ => None,
            };
        }
        match self.index.resolve(module, segments) {
            Some(Resolved::Local(item)) => match self.index.kind(item) {
                ItemKind::Struct(s) if matches!(&s.fields, Fields::Unnamed(f) if f.unnamed.len() == 1) => {
                    Some(inner)
                }
                _ => None,
            },
            Some(Resolved::External(path)) => {
                let library = path.starts_with("k8s_openapi::");
                (library
                    && (path.ends_with("::Quantity")
                        || path.ends_with("::IntOrString::Int")
                        || path.ends_with("::IntOrString::String")))
                .then_some(inner)
            }
            None => None,
        }
    }

    /// `Enum::Variant { .. }` of an enum of this crate, as serde writes it.
    fn struct_variant(
        &self,
        file: &Path,
        module: &str,
        segments: &[String],
        given: std::collections::HashMap<String, Value>,
    ) -> Result<Option<Value>, SourceError> {
        let Some((variant, name, cattrs)) = self.variant_of(module, segments) else {
            return Ok(None);
        };
        let Fields::Named(named) = &variant.fields else {
            return Ok(None);
        };
        let vattrs = attrs::container_attrs(&variant.attrs)
            .map_err(|e| super::schema::syn_error(file, e))?;
        let rule = if vattrs.rename_all != attrs::RenameRule::None {
            vattrs.rename_all
        } else {
            cattrs.rename_all_fields
        };
        let mut object = Map::new();
        for field in &named.named {
            let fattrs =
                attrs::field_attrs(&field.attrs).map_err(|e| super::schema::syn_error(file, e))?;
            let Some(ident) = &field.ident else {
                return Ok(None);
            };
            let Some(value) = given.get(&ident.to_string()) else {
                return Ok(None);
            };
            if fattrs.skip_serializing || fattrs.flatten || fattrs.serialize_with.is_some() {
                return Ok(None);
            }
            if let Some(predicate) = &fattrs.skip_serializing_if
                && skips(file, predicate, value)?
            {
                continue;
            }
            object.insert(fattrs.serialized_name(ident, rule), value.clone());
        }
        Ok(tagged(&cattrs, name, Value::Object(object)))
    }

    /// The variant `segments` names in an enum of this crate, with its serialized name and the
    /// enum's attributes.
    fn variant_of(
        &self,
        module: &str,
        segments: &[String],
    ) -> Option<(&syn::Variant, String, attrs::ContainerAttrs)> {
        let (variant, enum_path) = segments.split_last()?;
        let Resolved::Local(item) = self.index.resolve(module, enum_path)? else {
            return None;
        };
        let ItemKind::Enum(e) = self.index.kind(item) else {
            return None;
        };
        let cattrs = attrs::container_attrs(&e.attrs).ok()?;
        let v = e.variants.iter().find(|v| v.ident == variant.as_str())?;
        let vattrs = attrs::container_attrs(&v.attrs).ok()?;
        let name = vattrs
            .rename
            .unwrap_or_else(|| cattrs.rename_all.apply_to_variant(variant));
        // `#[serde(untagged)]` on the variant writes it as the enum's would be.
        let mut cattrs = cattrs;
        cattrs.untagged |= vattrs.untagged;
        Some((v, name, cattrs))
    }

    /// A unit variant path `Enum::Variant` of a local enum, serialized with its renames (an
    /// untagged unit variant is `null`).
    fn enum_variant(&self, module: &str, segments: &[String]) -> Option<Value> {
        let (variant, name, cattrs) = self.variant_of(module, segments)?;
        if !matches!(variant.fields, Fields::Unit) {
            return None;
        }
        Some(if cattrs.untagged {
            Value::Null
        } else {
            Value::String(name)
        })
    }
}

/// `value as target` for numbers, where the cast loses nothing (a wrapping or truncating cast
/// is left unfolded rather than guessed).
fn cast(value: &Value, target: &str) -> Option<Value> {
    let Value::Number(n) = value else { return None };
    macro_rules! ints {
        ($($t:ident)*) => {
            match target {
                $(stringify!($t) => {
                    if let Some(i) = n.as_i64() {
                        return $t::try_from(i).ok().map(Value::from);
                    }
                    return n.as_u64().and_then(|u| $t::try_from(u).ok()).map(Value::from);
                })*
                _ => {}
            }
        };
    }
    ints!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);
    let float = n.as_f64()?;
    match target {
        "f64" => serde_json::Number::from_f64(float).map(Value::Number),
        // serde_json writes an f32 through f64.
        "f32" => serde_json::Number::from_f64(f64::from(float as f32)).map(Value::Number),
        _ => None,
    }
}

/// `Default::default()` or `<_>::default()` written without the type, which the context gives.
fn is_default_call(expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) if c.args.is_empty() => matches!(&*c.func, Expr::Path(p)
            if path_segments(&p.path) == ["Default", "default"]
                || path_segments(&p.path) == ["std", "default", "Default", "default"]
                || path_segments(&p.path) == ["core", "default", "Default", "default"]),
        Expr::Paren(p) => is_default_call(&p.expr),
        _ => false,
    }
}

/// `u64::MAX`, `i32::MIN`, ...: the bounds of the integer types that serde_json can hold.
fn integer_bound(ty: &str, bound: &str) -> Option<Value> {
    macro_rules! bounds {
        ($($t:ident)*) => {
            match (ty, bound) {
                $((stringify!($t), "MAX") => Some(Value::from($t::MAX)),
                  (stringify!($t), "MIN") => Some(Value::from($t::MIN)),)*
                _ => None,
            }
        };
    }
    bounds!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize)
}

/// A data variant's value as serde writes it: externally tagged (`{"name": value}`) or
/// untagged. Internally and adjacently tagged enums are not folded (kube-derive rejects them).
fn tagged(cattrs: &attrs::ContainerAttrs, name: String, value: Value) -> Option<Value> {
    if cattrs.untagged {
        return Some(value);
    }
    if cattrs.tag.is_some() {
        return None;
    }
    Some(Value::Object(Map::from_iter([(name, value)])))
}

/// `T::from(x)` / `T::new(x)` serialized, for the std type named `head`: maps from pairs,
/// sets in the order serde writes them. `None` when that order is not fixed (a `HashSet` of
/// several items) or the items cannot be keys.
fn collection_from(head: &str, inner: Value) -> Option<Value> {
    match head {
        "BTreeMap" | "HashMap" | "IndexMap" => {
            let Value::Array(pairs) = inner else {
                return None;
            };
            let mut object = Map::new();
            for pair in pairs {
                let Value::Array(kv) = pair else { return None };
                let [key, value] = <[Value; 2]>::try_from(kv).ok()?;
                let key = match key {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return None,
                };
                object.insert(key, value);
            }
            Some(Value::Object(object))
        }
        "BTreeSet" => {
            let Value::Array(mut items) = inner else {
                return None;
            };
            if items.iter().all(Value::is_string) {
                items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            } else if items.iter().all(|v| v.is_i64() || v.is_u64()) {
                items.sort_by_key(|v| {
                    v.as_i64()
                        .map_or(i128::from(v.as_u64().unwrap_or(0)), i128::from)
                });
            } else {
                return None;
            }
            items.dedup();
            Some(Value::Array(items))
        }
        "IndexSet" | "HashSet" => {
            let Value::Array(items) = inner else {
                return None;
            };
            let mut unique: Vec<Value> = Vec::with_capacity(items.len());
            for item in items {
                if !unique.contains(&item) {
                    unique.push(item);
                }
            }
            // A `HashSet` iterates in a random order: one item is the only fixed one.
            (head == "IndexSet" || unique.len() <= 1).then_some(Value::Array(unique))
        }
        "BinaryHeap" => match &inner {
            Value::Array(items) if items.len() > 1 => None,
            _ => Some(inner),
        },
        _ => Some(inner),
    }
}

/// A k8s-openapi struct literal (`ResourceRequirements { limits: Some(..), ..Default::default() }`)
/// as serde writes it: the type's `Default`, with each given field under the property whose
/// snake-case name it is (k8s-openapi's naming; `type_` is `type`), and `None` left out.
fn library_struct(path: &str, given: std::collections::HashMap<String, Value>) -> Option<Value> {
    use heck::ToSnakeCase;
    let Value::Object(mut object) = super::k8s_types::default_value(path)?()? else {
        return None;
    };
    let schema_fn = super::k8s_types::lookup(path)?;
    let mut generator = schemars::SchemaGenerator::new(
        schemars::generate::SchemaSettings::default().with(|s| s.inline_subschemas = true),
    );
    let schema = schema_fn(&mut generator);
    let properties: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for (field, value) in given {
        let field = field.trim_end_matches('_');
        let key = properties
            .iter()
            .find(|p| p.to_snake_case() == field)?
            .clone();
        if value.is_null() {
            object.remove(&key);
        } else {
            object.insert(key, value);
        }
    }
    Some(Value::Object(object))
}

/// The value expression of a function body made of one expression (or `return expr;`).
fn tail_expr(block: &syn::Block) -> Option<&Expr> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => Some(e),
        [syn::Stmt::Expr(Expr::Return(r), Some(_))] => r.expr.as_deref(),
        _ => None,
    }
}
