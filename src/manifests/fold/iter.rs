//! Iterator chains over literal collections, folded: `["a", "b"].iter().map(|s|
//! s.to_string()).collect()` is a static value however it is spelled, so a default function
//! written that way needs no compiling.

use super::*;

/// Methods that pass a sequence through unchanged.
const PASS_THROUGH: &[&str] = &["iter", "into_iter", "cloned", "copied", "to_vec"];

/// Functions given to `.map(..)` that leave a string or number as it is.
const IDENTITY_FNS: &[&str] = &["from", "to_string", "to_owned", "into", "clone"];

impl Folder<'_> {
    /// The value of `m` if it is a step of an iterator chain (`None` if it is no such step).
    /// `collect()` only with a `Vec` turbofish: what it collects into decides the value (a
    /// `BTreeSet` sorts), and only the function's return type says so otherwise (see
    /// [`Folder::collected`]).
    pub(super) fn iterator_step(
        &self,
        file: &Path,
        module: &str,
        m: &syn::ExprMethodCall,
    ) -> Option<Result<Value, SourceError>> {
        let method = m.method.to_string();
        let sequence = || self.sequence(file, module, &m.receiver);
        match (method.as_str(), m.args.len()) {
            (name, 0) if PASS_THROUGH.contains(&name) => Some(sequence().map(Value::Array)),
            ("collect", 0) if turbofish_is_vec(m) => Some(sequence().map(Value::Array)),
            ("map", 1) => Some(sequence().and_then(|items| {
                items
                    .into_iter()
                    .map(|item| self.apply(file, module, &m.args[0], item))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array)
            })),
            _ => None,
        }
    }

    /// The value of a function's tail `expr` that ends in `.collect()`, when the function
    /// returns `ty`: a sequence only if `ty` is one that keeps the order.
    pub(super) fn collected(
        &self,
        file: &Path,
        module: &str,
        expr: &Expr,
        ty: &Type,
    ) -> Option<Result<Value, SourceError>> {
        let Expr::MethodCall(m) = expr else {
            return None;
        };
        if m.method != "collect" || !m.args.is_empty() {
            return None;
        }
        let Type::Path(p) = ty else { return None };
        let last = p.path.segments.last()?.ident.to_string();
        if !matches!(last.as_str(), "Vec" | "VecDeque" | "LinkedList") {
            return None;
        }
        Some(self.sequence(file, module, &m.receiver).map(Value::Array))
    }

    /// The items of `expr`, which must fold to a sequence.
    fn sequence(&self, file: &Path, module: &str, expr: &Expr) -> Result<Vec<Value>, SourceError> {
        match self.expr(file, module, expr)? {
            Value::Array(items) => Ok(items),
            _ => Err(unfoldable_at(file, expr.span())),
        }
    }

    /// `f(item)` for the function or one-argument closure `f` given to `.map(..)`: the closure's
    /// body folded with its parameter replaced by the item's value.
    fn apply(
        &self,
        file: &Path,
        module: &str,
        f: &Expr,
        item: Value,
    ) -> Result<Value, SourceError> {
        match f {
            Expr::Path(p)
                if p.path
                    .segments
                    .last()
                    .is_some_and(|s| IDENTITY_FNS.contains(&s.ident.to_string().as_str())) =>
            {
                Ok(item)
            }
            Expr::Closure(c) if c.inputs.len() == 1 => {
                let name =
                    closure_param(&c.inputs[0]).ok_or_else(|| unfoldable_at(file, f.span()))?;
                let literal = literal_expr(&item).ok_or_else(|| unfoldable_at(file, f.span()))?;
                let body = substitute(
                    quote::ToTokens::to_token_stream(&c.body),
                    &name,
                    &quote::ToTokens::to_token_stream(&literal),
                );
                let body: Expr =
                    syn::parse2(body).map_err(|_| unfoldable_at(file, c.body.span()))?;
                self.expr(file, module, &body)
            }
            _ => Err(unfoldable_at(file, f.span())),
        }
    }
}

fn unfoldable_at(file: &Path, span: proc_macro2::Span) -> SourceError {
    SourceError::at(file, span, "cannot fold this default statically")
        .help(HELP)
        .unsupported()
}

fn turbofish_is_vec(m: &syn::ExprMethodCall) -> bool {
    m.turbofish.as_ref().is_some_and(|t| {
        matches!(t.args.first(), Some(syn::GenericArgument::Type(Type::Path(p)))
            if p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
    })
}

/// The name a closure parameter binds: `s`, `&s`, `s: &str`.
fn closure_param(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        syn::Pat::Reference(r) => closure_param(&r.pat),
        syn::Pat::Type(t) => closure_param(&t.pat),
        _ => None,
    }
}

/// A literal expression whose folded value is `value` (strings, numbers, booleans).
fn literal_expr(value: &Value) -> Option<Expr> {
    let span = proc_macro2::Span::call_site();
    let lit = match value {
        Value::String(s) => syn::Lit::Str(syn::LitStr::new(s, span)),
        Value::Bool(b) => syn::Lit::Bool(syn::LitBool::new(*b, span)),
        Value::Number(n) => {
            let text = n.to_string();
            if n.is_f64() {
                syn::Lit::Float(syn::LitFloat::new(&text, span))
            } else {
                syn::Lit::Int(syn::LitInt::new(&text, span))
            }
        }
        _ => return None,
    };
    Some(Expr::Lit(syn::ExprLit {
        attrs: Vec::new(),
        lit,
    }))
}

/// `tokens` with every identifier `name` replaced by `(with)`.
fn substitute(
    tokens: proc_macro2::TokenStream,
    name: &str,
    with: &proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(ident) if ident == name => {
                TokenTree::Group(Group::new(Delimiter::Parenthesis, with.clone()))
            }
            TokenTree::Group(group) => {
                let mut replaced =
                    Group::new(group.delimiter(), substitute(group.stream(), name, with));
                replaced.set_span(group.span());
                TokenTree::Group(replaced)
            }
            other => other,
        })
        .collect()
}
