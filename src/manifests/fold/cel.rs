//! CEL validation rules and merge strategies of `#[derive(KubeSchema)]` (`#[x_kube(...)]`) and
//! `#[kube(validation = ...)]`, folded from their Rust expressions into kube-core's own `Rule`
//! and `MergeStrategy` values, then applied with kube-core's functions, as the derive does.

use kube_core::{ListMerge, MapMerge, Message, Reason, Rule, StructMerge, cel::MergeStrategy};
use syn::{Expr, ExprLit, Lit};

use crate::manifests::attrs::expr_to_json;

fn string(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        Expr::Paren(p) => string(&p.expr),
        Expr::Group(g) => string(&g.expr),
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "into" | "to_string" | "to_owned"
            ) =>
        {
            string(&m.receiver)
        }
        Expr::Call(c) if path_last(&c.func).is_some_and(|l| l == "from") && c.args.len() == 1 => {
            string(&c.args[0])
        }
        _ => None,
    }
}

fn path_last(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn path_segments(expr: &Expr) -> Vec<String> {
    match expr {
        Expr::Path(p) => p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// A rule: `"self > 0"`, `("rule", "message")`, or `Rule::new("..")` with `.message(..)`,
/// `.reason(Reason::..)`, `.field_path(..)`, `.optional_old_self(..)`.
pub fn fold_rule(expr: &Expr) -> Option<Rule> {
    if let Some(rule) = string(expr) {
        return Some(Rule::from(rule.as_str()));
    }
    match expr {
        Expr::Paren(p) => fold_rule(&p.expr),
        Expr::Group(g) => fold_rule(&g.expr),
        Expr::Tuple(t) if t.elems.len() == 2 => {
            let rule = string(&t.elems[0])?;
            let message = string(&t.elems[1])?;
            Some(Rule::from((rule.as_str(), message.as_str())))
        }
        Expr::Call(c) if path_last(&c.func).is_some_and(|l| l == "new") && c.args.len() == 1 => {
            Some(Rule::new(string(&c.args[0])?))
        }
        Expr::MethodCall(m) => {
            let rule = fold_rule(&m.receiver)?;
            let arg = m.args.first()?;
            Some(match m.method.to_string().as_str() {
                "message" => rule.message(fold_message(arg)?),
                "reason" => rule.reason(fold_reason(arg)?),
                "field_path" => rule.field_path(string(arg)?),
                "optional_old_self" => rule.optional_old_self(expr_to_json(arg)?.as_bool()?),
                _ => return None,
            })
        }
        _ => None,
    }
}

fn fold_message(expr: &Expr) -> Option<Message> {
    if let Some(s) = string(expr) {
        return Some(Message::from(s.as_str()));
    }
    let Expr::Call(c) = expr else { return None };
    let arg = string(c.args.first()?)?;
    match path_last(&c.func)?.as_str() {
        "Expression" => Some(Message::Expression(arg)),
        "Message" => Some(Message::Message(arg)),
        _ => None,
    }
}

fn fold_reason(expr: &Expr) -> Option<Reason> {
    let name = match string(expr) {
        Some(s) => s,
        None => path_last(expr)?,
    };
    serde_json::from_value(serde_json::Value::String(name)).ok()
}

/// `ListMerge::Atomic | Set | Map(vec![..])`, `MapMerge::..`, `StructMerge::..`.
pub fn fold_merge_strategy(expr: &Expr) -> Option<MergeStrategy> {
    let (segments, args) = match expr {
        Expr::Path(_) => (path_segments(expr), None),
        Expr::Call(c) => (path_segments(&c.func), c.args.first()),
        Expr::Paren(p) => return fold_merge_strategy(&p.expr),
        _ => return None,
    };
    let [.., owner, variant] = segments.as_slice() else {
        return None;
    };
    Some(match (owner.as_str(), variant.as_str()) {
        ("ListMerge", "Atomic") => ListMerge::Atomic.into(),
        ("ListMerge", "Set") => ListMerge::Set.into(),
        ("ListMerge", "Map") => {
            let keys = match args? {
                Expr::Macro(m) if m.mac.path.is_ident("vec") => m
                    .mac
                    .parse_body_with(
                        syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                    )
                    .ok()?
                    .iter()
                    .map(string)
                    .collect::<Option<Vec<_>>>()?,
                Expr::Array(a) => a.elems.iter().map(string).collect::<Option<Vec<_>>>()?,
                _ => return None,
            };
            ListMerge::Map(keys).into()
        }
        ("MapMerge", "Atomic") => MapMerge::Atomic.into(),
        ("MapMerge", "Granular") => MapMerge::Granular.into(),
        ("StructMerge", "Atomic") => StructMerge::Atomic.into(),
        ("StructMerge", "Granular") => StructMerge::Granular.into(),
        _ => return None,
    })
}
