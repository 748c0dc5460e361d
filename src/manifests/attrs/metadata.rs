//! What schemars writes into a schema from attributes and docs: title and description,
//! examples, extensions, validations (`length`, `range`, `regex`, garde and validator keys),
//! transforms and `#[x_kube(...)]` rules.

use proc_macro2::Span;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, meta::ParseNestedMeta, spanned::Spanned};

use super::*;

/// Metadata schemars writes into a schema: title and description (from docs or explicit),
/// examples, extensions, and simple validations.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    pub doc: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub deprecated: bool,
    /// `#[schemars(example = ...)]` values: literals, or expressions the builder folds with
    /// the crate's constants and functions.
    pub examples: Vec<Folded>,
    pub extend: Vec<(String, serde_json::Value)>,
    pub validations: Vec<Validation>,
    /// `#[x_kube(validation = ...)]` rules, as written.
    pub x_kube_rules: Vec<Expr>,
    /// `#[x_kube(merge_strategy = ...)]`, as written.
    pub x_kube_merge: Option<Expr>,
    pub unsupported: Vec<(String, Span)>,
    /// `#[schemars(transform = f)]`, as written; the schema builder folds `f` into `ops`.
    pub transforms: Vec<(Vec<String>, Span)>,
    /// What the transform functions do, once folded: applied after `extend`, as schemars does.
    pub transform_ops: Vec<SchemaOp>,
}

/// One statement of a transform function kopgen can fold.
#[derive(Debug, Clone)]
pub enum SchemaOp {
    Insert(String, serde_json::Value),
    Remove(String),
}

#[derive(Debug, Clone)]
pub enum Validation {
    Range {
        min: Option<Folded>,
        max: Option<Folded>,
    },
    Length {
        min: Option<Folded>,
        max: Option<Folded>,
        equal: Option<Folded>,
    },
    Pattern(Folded),
    Format(&'static str),
    Contains(Folded),
    /// `inner(...)`: validations of the items of an array (schemars' `apply_inner_validation`).
    Inner(Vec<Validation>),
    /// `#[validate(regex(path = RE))]`: the pattern the regex at `path` was built from, which
    /// the schema builder looks up (schemars writes `RE.to_string()`).
    RegexPath {
        path: Vec<String>,
        span: Span,
    },
}

/// A value in a validation attribute: a literal, folded as it is read, or another expression
/// (`MAX_LEN`, `LIMIT as u64`), which the schema builder folds with the crate's constants.
#[derive(Debug, Clone)]
pub enum Folded {
    /// The value, and where it is written (for an error if it has the wrong type).
    Value(serde_json::Value, Span),
    Expr(Box<Expr>),
}

impl Folded {
    fn of(expr: Expr) -> Self {
        match expr_to_json(&expr) {
            Some(value) => Folded::Value(value, expr.span()),
            None => Folded::Expr(Box::new(expr)),
        }
    }

    /// The value, once folded (the builder folds every expression before schemas use it).
    pub fn value(&self) -> Option<&serde_json::Value> {
        match self {
            Folded::Value(value, _) => Some(value),
            Folded::Expr(_) => None,
        }
    }
}

/// The doc comment as schemars assembles it: lines joined by `\n`, one leading space stripped.
pub fn doc_of(attrs: &[Attribute]) -> Option<String> {
    doc_and_unfolded(attrs).0
}

/// The doc comment (schemars joins `#[doc = ..]` values with `concat!`, so `concat!` of
/// literals is folded too), and the `#[doc = ..]` values kopgen cannot fold (`include_str!`,
/// `env!`, ...), which are errors rather than a silently missing description.
pub(super) fn doc_and_unfolded(attrs: &[Attribute]) -> (Option<String>, Vec<(String, Span)>) {
    let mut lines = Vec::new();
    let mut unfolded = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let syn::Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) = &nv.value
        {
            let value = s.value();
            lines.push(value.strip_prefix(' ').map(str::to_owned).unwrap_or(value));
            continue;
        }
        match concat_literals(&nv.value) {
            Some(value) => lines.push(value),
            None => unfolded.push((
                match &nv.value {
                    Expr::Macro(m) => format!("doc = {}!(..)", path_name(&m.mac.path)),
                    _ => "doc = ..".to_owned(),
                },
                nv.value.span(),
            )),
        }
    }
    ((!lines.is_empty()).then(|| lines.join("\n")), unfolded)
}

/// `concat!(..)` of literals (and nested `concat!`), as rustc expands it.
pub(super) fn concat_literals(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Str(s) => Some(s.value()),
            Lit::Char(c) => Some(c.value().to_string()),
            Lit::Bool(b) => Some(b.value.to_string()),
            Lit::Int(i) => Some(i.base10_digits().to_owned()),
            Lit::Float(f) => Some(f.base10_digits().to_owned()),
            _ => None,
        },
        Expr::Macro(m)
            if matches!(
                path_name(&m.mac.path).as_str(),
                "concat" | "core::concat" | "std::concat"
            ) =>
        {
            let parts = m
                .mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            parts.iter().map(concat_literals).collect()
        }
        Expr::Group(g) => concat_literals(&g.expr),
        _ => None,
    }
}

/// schemars marks items with Rust's `#[deprecated]` as `deprecated: true`.
pub(super) fn is_deprecated(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("deprecated"))
}

/// Parses the metadata keys schemars shares between containers, variants and fields.
/// Returns false if the key is not one of them.
pub(super) fn parse_metadata(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<bool> {
    let name = path_name(&meta.path);
    match name.as_str() {
        "title" | "description" => {
            let expr: Expr = meta.value()?.parse()?;
            // schemars evaluates any expression here; kopgen folds literals and `concat!`.
            let Some(text) = concat_literals(&expr) else {
                out.unsupported
                    .push((format!("{name} = <expression>"), expr.span()));
                return Ok(true);
            };
            if name == "title" {
                out.title = Some(text);
            } else {
                out.description = Some(text);
            }
        }
        "extend" => {
            let content;
            syn::parenthesized!(content in meta.input);
            while !content.is_empty() {
                let key: LitStr = content.parse()?;
                content.parse::<syn::Token![=]>()?;
                // The value is `json!` syntax (objects included), up to the next top-level comma.
                let mut tokens = Vec::new();
                while !content.is_empty() && !content.peek(syn::Token![,]) {
                    tokens.push(content.parse::<proc_macro2::TokenTree>()?);
                }
                let _ = content.parse::<Option<syn::Token![,]>>()?;
                let json = json_tokens(&tokens).ok_or_else(|| {
                    syn::Error::new(key.span(), "kopgen folds only literal JSON in `extend` (strings, numbers, booleans, null, arrays, objects)")
                })?;
                out.extend.push((key.value(), json));
            }
        }
        "range" => {
            let (mut min, mut max) = (None, None);
            meta.parse_nested_meta(|inner| {
                let value = Folded::of(inner.value()?.parse()?);
                if inner.path.is_ident("min") {
                    min = Some(value);
                } else if inner.path.is_ident("max") {
                    max = Some(value);
                }
                Ok(())
            })?;
            out.validations.push(Validation::Range { min, max });
        }
        "length" => {
            let (mut min, mut max, mut equal) = (None, None, None);
            meta.parse_nested_meta(|inner| {
                let value = Folded::of(inner.value()?.parse()?);
                if inner.path.is_ident("min") {
                    min = Some(value);
                } else if inner.path.is_ident("max") {
                    max = Some(value);
                } else if inner.path.is_ident("equal") {
                    equal = Some(value);
                }
                Ok(())
            })?;
            out.validations.push(Validation::Length { min, max, equal });
        }
        // schemars' and garde's `pattern(expr)`.
        "pattern" if meta.input.peek(syn::token::Paren) => garde_pattern(meta, out)?,
        "regex" | "pattern" => {
            if meta.input.peek(syn::Token![=]) {
                let value: Expr = meta.value()?.parse()?;
                out.validations.push(Validation::Pattern(Folded::of(value)));
            } else {
                meta.parse_nested_meta(|inner| {
                    let value: Expr = inner.value()?.parse()?;
                    if inner.path.is_ident("pattern") {
                        out.validations.push(Validation::Pattern(Folded::of(value)));
                    } else {
                        out.unsupported.push(("regex".into(), inner.path.span()));
                    }
                    Ok(())
                })?;
            }
        }
        "contains" => {
            // schemars: `contains(pattern = "x")` (validator style) or `contains("x")` (garde style).
            let content;
            syn::parenthesized!(content in meta.input);
            let value: Expr = if content.peek(syn::Ident) && content.peek2(syn::Token![=]) {
                let _key: syn::Ident = content.parse()?;
                content.parse::<syn::Token![=]>()?;
                content.parse()?
            } else {
                content.parse()?
            };
            out.validations
                .push(Validation::Contains(Folded::of(value)));
        }
        "email" => out.validations.push(Validation::Format("email")),
        "url" => out.validations.push(Validation::Format("uri")),
        "ip" => out.validations.push(Validation::Format("ip")),
        "ipv4" => out.validations.push(Validation::Format("ipv4")),
        "ipv6" => out.validations.push(Validation::Format("ipv6")),
        "example" => {
            let value: Expr = meta.value()?.parse()?;
            if let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &value
                && syn::parse_str::<syn::Path>(&s.value()).is_ok()
            {
                return Err(meta.error(
                    "schemars rejects string examples that look like function paths; write `example = f()` or another value",
                ));
            }
            out.examples.push(Folded::of(value));
        }
        "inner" => {
            let inner = inner_validations(meta, false)?;
            out.validations.push(Validation::Inner(inner.validations));
            out.unsupported.extend(inner.unsupported);
        }
        "transform" => {
            let value: Expr = meta.value()?.parse()?;
            match value {
                Expr::Path(p) => out.transforms.push((
                    crate::manifests::paths::path_segments(&p.path),
                    p.path.span(),
                )),
                _ => out.unsupported.push((name, meta.path.span())),
            }
        }
        "crate" | "bound" => skip_value(meta)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The validation keys of an `inner(...)` list, for the items of an array. In garde's attribute
/// (`garde = true`) garde's own pattern syntax applies and keys schemars ignores are skipped.
pub(super) fn inner_validations(meta: &ParseNestedMeta, garde: bool) -> syn::Result<Metadata> {
    let mut inner = Metadata::default();
    meta.parse_nested_meta(|m| {
        let key = path_name(&m.path);
        match key.as_str() {
            "inner" => {
                let nested = inner_validations(&m, garde)?;
                inner
                    .validations
                    .push(Validation::Inner(nested.validations));
                inner.unsupported.extend(nested.unsupported);
            }
            "length" | "range" | "regex" | "pattern" | "contains" | "email" | "url" | "ip"
            | "ipv4" | "ipv6" => {
                parse_metadata(&m, &mut inner)?;
            }
            "required" => {}
            _ if garde => skip_value(&m)?,
            _ => {
                return Err(m.error(format!(
                    "`{key}` is not a validation schemars applies to the items of an array"
                )));
            }
        }
        Ok(())
    })?;
    Ok(inner)
}

/// `pattern("...")`, as schemars and garde write it.
pub(super) fn garde_pattern(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<()> {
    let content;
    syn::parenthesized!(content in meta.input);
    let value: Expr = content.parse()?;
    out.validations.push(Validation::Pattern(Folded::of(value)));
    Ok(())
}

/// validator's `regex(path = RE)` (also `path = "RE"`, `*RE`, `&RE`): the path of the regex.
pub(super) fn validate_regex(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        return Err(meta.error(
            "`regex = \"...\"` is validator 0.16's spelling; validator 0.18 and later (what \
             schemars 1 reads, with kube 5) write `regex(path = *RE)` with RE a static Regex: \
             write that",
        ));
    }
    let mut found = None;
    meta.parse_nested_meta(|m| {
        if m.path.is_ident("path") {
            let mut expr: Expr = m.value()?.parse()?;
            if let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &expr
            {
                expr = s.parse()?;
            }
            loop {
                expr = match expr {
                    Expr::Unary(syn::ExprUnary {
                        op: syn::UnOp::Deref(_),
                        expr,
                        ..
                    }) => *expr,
                    Expr::Reference(r) => *r.expr,
                    Expr::Paren(p) => *p.expr,
                    other => break found = Some((other, m.path.span())),
                };
            }
        } else {
            skip_value(&m)?;
        }
        Ok(())
    })?;
    match found {
        Some((Expr::Path(p), span)) => out.validations.push(Validation::RegexPath {
            path: crate::manifests::paths::path_segments(&p.path),
            span,
        }),
        Some((_, span)) => out.unsupported.push(("validate(regex)".into(), span)),
        None => return Err(meta.error("validate(regex(...)) needs `path = ...`")),
    }
    Ok(())
}

/// Parses `#[x_kube(validation = .., merge_strategy = ..)]` of `#[derive(KubeSchema)]`.
pub(super) fn parse_x_kube(attrs: &[Attribute], meta_out: &mut Metadata) -> syn::Result<()> {
    for attr in attrs.iter().filter(|a| a.path().is_ident("x_kube")) {
        attr.parse_nested_meta(|meta| {
            match path_name(&meta.path).as_str() {
                "validation" => meta_out.x_kube_rules.push(meta.value()?.parse()?),
                "merge_strategy" => meta_out.x_kube_merge = Some(meta.value()?.parse()?),
                _ => skip_value(&meta)?,
            }
            Ok(())
        })?;
    }
    Ok(())
}

impl Metadata {
    /// The metadata every item starts with: its doc comment and Rust's `#[deprecated]`.
    pub(super) fn of(attrs: &[Attribute]) -> Self {
        let (doc, unfolded) = doc_and_unfolded(attrs);
        Self {
            doc,
            deprecated: is_deprecated(attrs),
            unsupported: unfolded,
            ..Self::default()
        }
    }
}
