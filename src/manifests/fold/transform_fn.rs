//! Folds `#[schemars(transform = f)]` functions statically. schemars runs `f(&mut schema)` after
//! the other attributes; kopgen reads `f` instead, when its body is made only of statements
//! whose effect is knowable without running Rust: inserting a literal value, removing a key.

use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::{Expr, Pat, Stmt, spanned::Spanned};

use super::fold_expr;
use crate::manifests::{
    attrs::SchemaOp,
    index::{Index, ItemKind},
    resolve::Resolved,
};

pub const HELP: &str = "kopgen folds transform functions in this crate whose body is only \
    `schema.insert(\"key\".into(), json!(...))` and `schema.remove(\"key\")` statements; \
    write the change as #[schemars(extend(\"key\" = ...))], or generate this CRD with kube-derive's crd()";

/// Where folding failed: the file and span of the statement kopgen cannot read, if it found
/// the function.
pub type Unfoldable = Option<(PathBuf, Span)>;

/// The statements of the transform function at `path` (written in `module`).
pub fn fold(index: &Index, module: &str, path: &[String]) -> Result<Vec<SchemaOp>, Unfoldable> {
    let Some(Resolved::Local(item)) = index.resolve(module, path) else {
        return Err(None);
    };
    let ItemKind::Fn(function) = index.kind(item) else {
        return Err(None);
    };
    let item = &index.items[item];
    let file = index.file(item).to_path_buf();
    let at = |span: Span| Some((file.clone(), span));
    let param = match function.sig.inputs.first() {
        Some(syn::FnArg::Typed(arg)) if function.sig.inputs.len() == 1 => match &*arg.pat {
            Pat::Ident(ident) => ident.ident.to_string(),
            other => return Err(at(other.span())),
        },
        _ => return Err(at(function.sig.ident.span())),
    };
    let mut ops = Vec::new();
    for stmt in &function.block.stmts {
        let expr = match stmt {
            Stmt::Expr(expr, _) => expr,
            other => return Err(at(other.span())),
        };
        ops.push(
            statement(index, &file, &item.module, expr, &param).ok_or_else(|| at(expr.span()))?,
        );
    }
    Ok(ops)
}

/// `schema.insert(key, value)` or `schema.remove(key)` on the function's parameter, with the
/// key and value folded as defaults are (literals, `.into()`, `String::from`, constants, `json!`).
fn statement(
    index: &Index,
    file: &Path,
    module: &str,
    expr: &Expr,
    param: &str,
) -> Option<SchemaOp> {
    let Expr::MethodCall(call) = expr else {
        return None;
    };
    let Expr::Path(receiver) = &*call.receiver else {
        return None;
    };
    if !receiver.path.is_ident(param) {
        return None;
    }
    let fold = |e: &Expr| fold_expr(index, file, module, e).ok();
    let key = |e: &Expr| match fold(e)? {
        serde_json::Value::String(key) => Some(key),
        _ => None,
    };
    let args: Vec<&Expr> = call.args.iter().collect();
    match (call.method.to_string().as_str(), args.as_slice()) {
        ("insert", [k, value]) => Some(SchemaOp::Insert(key(k)?, fold(value)?)),
        ("remove", [k]) => Some(SchemaOp::Remove(key(k)?)),
        _ => None,
    }
}
