//! Literal values in attributes (`json!` tokens, literal expressions) as the JSON they denote.

use syn::{Expr, ExprLit, Lit};

/// Folds `json!`-style tokens (literals, `null`, `true`/`false`, `[..]`, `{"k": v, ..}`, `-n`).
pub fn json_tokens(tokens: &[proc_macro2::TokenTree]) -> Option<serde_json::Value> {
    use proc_macro2::{Delimiter, TokenTree};
    use serde_json::Value;
    match tokens {
        [TokenTree::Ident(i)] => match i.to_string().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            "null" => Some(Value::Null),
            _ => None,
        },
        [TokenTree::Literal(_)] | [TokenTree::Punct(_), TokenTree::Literal(_)] => {
            let text: proc_macro2::TokenStream = tokens.iter().cloned().collect();
            expr_to_json(&syn::parse2::<Expr>(text).ok()?)
        }
        [TokenTree::Group(g)] if g.delimiter() == Delimiter::Bracket => {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            split_commas(&inner)
                .into_iter()
                .map(json_tokens)
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)
        }
        [TokenTree::Group(g)] if g.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            let mut object = serde_json::Map::new();
            for entry in split_commas(&inner) {
                let colon = entry
                    .iter()
                    .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))?;
                let key = match json_tokens(&entry[..colon])? {
                    Value::String(k) => k,
                    _ => return None,
                };
                object.insert(key, json_tokens(&entry[colon + 1..])?);
            }
            Some(Value::Object(object))
        }
        [TokenTree::Group(g)]
            if g.delimiter() == Delimiter::None || g.delimiter() == Delimiter::Parenthesis =>
        {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            json_tokens(&inner)
        }
        _ => None,
    }
}

pub(super) fn split_commas(tokens: &[proc_macro2::TokenTree]) -> Vec<&[proc_macro2::TokenTree]> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        if matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
            parts.push(&tokens[start..i]);
            start = i + 1;
        }
    }
    if start < tokens.len() {
        parts.push(&tokens[start..]);
    }
    parts
}

/// Folds a literal Rust expression (as `json!` would read it) into JSON.
pub fn expr_to_json(expr: &Expr) -> Option<serde_json::Value> {
    use serde_json::Value;
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Str(s) => Some(Value::String(s.value())),
            Lit::Bool(b) => Some(Value::Bool(b.value)),
            Lit::Int(i) => i
                .base10_parse::<i64>()
                .ok()
                .map(Value::from)
                .or_else(|| i.base10_parse::<u64>().ok().map(Value::from)),
            Lit::Float(f) => f
                .base10_parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            Lit::Char(c) => Some(Value::String(c.value().to_string())),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match expr_to_json(&u.expr)? {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(Value::from(-i))
                } else {
                    n.as_f64()
                        .and_then(|f| serde_json::Number::from_f64(-f))
                        .map(Value::Number)
                }
            }
            _ => None,
        },
        Expr::Array(a) => a
            .elems
            .iter()
            .map(expr_to_json)
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        Expr::Path(p) if p.path.is_ident("null") => Some(Value::Null),
        Expr::Paren(p) => expr_to_json(&p.expr),
        Expr::Group(g) => expr_to_json(&g.expr),
        _ => None,
    }
}
