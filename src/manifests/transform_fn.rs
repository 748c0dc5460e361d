//! Folds `#[schemars(transform = f)]` functions statically. schemars runs `f(&mut schema)` after
//! the other attributes; kopgen reads `f` instead, when its body is made only of statements
//! whose effect is knowable without running Rust: inserting a literal value, removing a key.

use std::path::PathBuf;

use proc_macro2::Span;
use syn::{Expr, Pat, Stmt, spanned::Spanned};

use super::{
    attrs::{SchemaOp, expr_to_json, json_tokens},
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
    let item = &index.items[item];
    let ItemKind::Fn(function) = &item.kind else {
        return Err(None);
    };
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
        ops.push(statement(expr, &param).ok_or_else(|| at(expr.span()))?);
    }
    Ok(ops)
}

/// `schema.insert(key, value)` or `schema.remove(key)` on the function's parameter.
fn statement(expr: &Expr, param: &str) -> Option<SchemaOp> {
    let Expr::MethodCall(call) = expr else {
        return None;
    };
    let Expr::Path(receiver) = &*call.receiver else {
        return None;
    };
    if !receiver.path.is_ident(param) {
        return None;
    }
    let args: Vec<&Expr> = call.args.iter().collect();
    match (call.method.to_string().as_str(), args.as_slice()) {
        ("insert", [key, value]) => Some(SchemaOp::Insert(string(key)?, value_of(value)?)),
        ("remove", [key]) => Some(SchemaOp::Remove(string(key)?)),
        _ => None,
    }
}

/// A string key: `"k"`, `"k".into()`, `"k".to_string()`, `"k".to_owned()`, `String::from("k")`.
fn string(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        Expr::MethodCall(m)
            if m.args.is_empty()
                && ["into", "to_string", "to_owned"].contains(&m.method.to_string().as_str()) =>
        {
            string(&m.receiver)
        }
        Expr::Call(c) if c.args.len() == 1 && is_path(&c.func, &["String", "from"]) => {
            c.args.first().and_then(string)
        }
        Expr::Reference(r) => string(&r.expr),
        _ => None,
    }
}

/// A value: `json!(...)` with literal contents, or a literal with `.into()`.
fn value_of(expr: &Expr) -> Option<serde_json::Value> {
    match expr {
        Expr::Macro(m)
            if m.mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "json") =>
        {
            let tokens: Vec<proc_macro2::TokenTree> = m.mac.tokens.clone().into_iter().collect();
            json_tokens(&tokens)
        }
        Expr::MethodCall(m) if m.args.is_empty() && m.method == "into" => value_of(&m.receiver),
        other => expr_to_json(other),
    }
}

fn is_path(expr: &Expr, segments: &[&str]) -> bool {
    matches!(expr, Expr::Path(p) if p.path.segments.len() == segments.len()
        && p.path.segments.iter().zip(segments).all(|(s, want)| s.ident == want))
}
