//! The attributes that shape a CRD, parsed once into typed structs: `#[kube(...)]` (as
//! kube-derive 5 reads it), and the `#[serde(...)]` / `#[schemars(...)]` keys that schemars 1
//! honours. Everything downstream works on these structs, never on raw tokens.

use proc_macro2::Span;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, meta::ParseNestedMeta, spanned::Spanned};

/// `#[kube(printcolumn(...))]` or its JSON string form.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrintColumn {
    pub description: Option<String>,
    pub format: Option<String>,
    pub json_path: String,
    pub name: String,
    pub priority: Option<i32>,
    #[serde(rename = "type")]
    pub type_: String,
}

/// `#[kube(scale(...))]` or its JSON string form: the scale subresource.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scale {
    pub label_selector_path: Option<String>,
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
}

/// Every `#[kube(...)]` key of kube-derive 5.
#[derive(Debug, Clone, Default)]
pub struct KubeAttrs {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub root: Option<String>,
    pub singular: Option<String>,
    pub plural: Option<String>,
    pub namespaced: bool,
    /// `#[kube(no_spec)]`: the spec's fields sit on the root object (flattened), not in `spec`.
    pub no_spec: bool,
    pub status: Option<String>,
    /// Where `status = "..."` is written, for errors in the status type.
    pub status_span: Option<Span>,
    pub derives: Vec<String>,
    pub shortnames: Vec<String>,
    pub categories: Vec<String>,
    pub printcolumns: Vec<PrintColumn>,
    pub selectable: Vec<String>,
    pub doc: Option<String>,
    pub annotations: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    pub storage: Option<bool>,
    pub served: Option<bool>,
    /// `Some(None)`: deprecated without a warning; `Some(Some(w))`: with warning `w`.
    pub deprecated: Option<Option<String>>,
    pub schema: Option<String>,
    pub scale: Option<Scale>,
    /// `#[kube(validation = ...)]`: CEL rules on the root object.
    pub validations: Vec<Expr>,
}

/// The case conventions of `#[serde(rename_all = "...")]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenameRule {
    None,
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "lowercase" => RenameRule::Lower,
            "UPPERCASE" => RenameRule::Upper,
            "PascalCase" => RenameRule::Pascal,
            "camelCase" => RenameRule::Camel,
            "snake_case" => RenameRule::Snake,
            "SCREAMING_SNAKE_CASE" => RenameRule::ScreamingSnake,
            "kebab-case" => RenameRule::Kebab,
            "SCREAMING-KEBAB-CASE" => RenameRule::ScreamingKebab,
            _ => return None,
        })
    }

    /// serde's rule for struct fields (written in snake_case).
    pub fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::None | RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// serde's rule for enum variants (written in PascalCase).
    pub fn apply_to_variant(self, variant: &str) -> String {
        match self {
            RenameRule::None | RenameRule::Pascal => variant.to_owned(),
            RenameRule::Lower => variant.to_ascii_lowercase(),
            RenameRule::Upper => variant.to_ascii_uppercase(),
            RenameRule::Camel => {
                let mut chars = variant.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            }
            RenameRule::Snake => {
                let mut snake = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            RenameRule::ScreamingSnake => RenameRule::Snake
                .apply_to_variant(variant)
                .to_ascii_uppercase(),
            RenameRule::Kebab => RenameRule::Snake
                .apply_to_variant(variant)
                .replace('_', "-"),
            RenameRule::ScreamingKebab => RenameRule::ScreamingSnake
                .apply_to_variant(variant)
                .replace('_', "-"),
        }
    }
}

/// How a field or container takes its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultAttr {
    None,
    /// `#[serde(default)]`: `Default::default()`.
    Default,
    /// `#[serde(default = "path")]`.
    Path(syn::Path),
}

/// Serde and schemars attributes of a struct, enum or variant.
#[derive(Debug, Clone)]
pub struct ContainerAttrs {
    pub rename: Option<String>,
    pub rename_all: RenameRule,
    pub rename_all_fields: RenameRule,
    pub deny_unknown_fields: bool,
    pub default: DefaultAttr,
    pub tag: Option<String>,
    pub content: Option<String>,
    pub untagged: bool,
    pub transparent: bool,
    pub skip: bool,
    /// `#[serde(from = "T")]` / `try_from`: deserialized through `T`, so `T`'s schema.
    pub from: Option<syn::Type>,
    /// `#[derive(KubeSchema)]` re-derives the struct keeping only serde, schemars, doc and
    /// validate attributes: garde's are ignored there.
    pub kube_schema: bool,
    /// Whether the type derives `Default` (what `#[serde(default)]` on it then means).
    pub derives_default: bool,
    /// The struct's name, set by the schema builder, to find a hand-written `impl Default`.
    pub ident: Option<String>,
    pub meta: Metadata,
}

/// Serde and schemars attributes of a field.
#[derive(Debug, Clone)]
pub struct FieldAttrs {
    pub rename: Option<String>,
    pub default: DefaultAttr,
    pub skip_serializing: bool,
    pub skip_deserializing: bool,
    pub skip_serializing_if: Option<syn::Path>,
    pub flatten: bool,
    pub required: bool,
    /// `#[schemars(with = "Type")]`: the schema of another type.
    pub with: Option<syn::Type>,
    /// `#[schemars(schema_with = "f")]`: `f`'s schema, folded when its body is a `json_schema!` literal.
    pub schema_with: Option<syn::Path>,
    /// `with` came from `#[serde(with = "...")]`, which schemars reads as a type (so a module
    /// there does not compile): the string as written, for the error.
    pub with_from_serde: Option<String>,
    /// `#[serde(serialize_with = "f")]` or `#[serde(with = "m")]`: schemars serializes the
    /// field's default through it, which kopgen cannot run.
    pub serialize_with: Option<String>,
    pub meta: Metadata,
}

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

impl Default for ContainerAttrs {
    fn default() -> Self {
        Self {
            rename: None,
            rename_all: RenameRule::None,
            rename_all_fields: RenameRule::None,
            deny_unknown_fields: false,
            default: DefaultAttr::None,
            tag: None,
            content: None,
            untagged: false,
            transparent: false,
            skip: false,
            from: None,
            kube_schema: false,
            derives_default: false,
            ident: None,
            meta: Metadata::default(),
        }
    }
}

impl FieldAttrs {
    /// The property name serde gives field `ident`: its `rename`, else the container's
    /// `rename_all` applied to the name as written (without `r#`).
    pub fn serialized_name(&self, ident: &syn::Ident, rename_all: RenameRule) -> String {
        let raw = ident.to_string();
        let raw = raw.strip_prefix("r#").unwrap_or(&raw);
        self.rename
            .clone()
            .unwrap_or_else(|| rename_all.apply_to_field(raw))
    }
}

impl Default for FieldAttrs {
    fn default() -> Self {
        Self {
            rename: None,
            default: DefaultAttr::None,
            skip_serializing: false,
            skip_deserializing: false,
            skip_serializing_if: None,
            flatten: false,
            required: false,
            with: None,
            schema_with: None,
            with_from_serde: None,
            serialize_with: None,
            meta: Metadata::default(),
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
fn doc_and_unfolded(attrs: &[Attribute]) -> (Option<String>, Vec<(String, Span)>) {
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
fn concat_literals(expr: &Expr) -> Option<String> {
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
fn is_deprecated(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("deprecated"))
}

/// `default` (the type's `Default`) or `default = "path"` (a function).
fn default_attr(meta: &ParseNestedMeta) -> syn::Result<DefaultAttr> {
    if meta.input.peek(syn::Token![=]) {
        Ok(DefaultAttr::Path(parse_string_value(meta)?))
    } else {
        Ok(DefaultAttr::Default)
    }
}

/// A string value parsed as Rust (`default = "f"`, `with = "T"`), with the spans of the
/// string, so that errors about what it names point at the attribute.
fn parse_string_value<T: syn::parse::Parse>(meta: &ParseNestedMeta) -> syn::Result<T> {
    let lit: LitStr = meta.value()?.parse()?;
    lit.parse()
}

fn string_value(meta: &ParseNestedMeta) -> syn::Result<String> {
    let lit: LitStr = meta.value()?.parse()?;
    Ok(lit.value())
}

/// `rename = "x"` or `rename(deserialize = "x", serialize = "y")`: the deserialize side, which
/// is the one kube-derive's schema describes (schemars' default contract).
fn deserialize_side(meta: &ParseNestedMeta) -> syn::Result<Option<String>> {
    if meta.input.peek(syn::Token![=]) {
        return string_value(meta).map(Some);
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let value = string_value(&inner)?;
        if inner.path.is_ident("deserialize") {
            found = Some(value);
        }
        Ok(())
    })?;
    Ok(found)
}

fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Parses the metadata keys schemars shares between containers, variants and fields.
/// Returns false if the key is not one of them.
fn parse_metadata(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<bool> {
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
                Expr::Path(p) => out
                    .transforms
                    .push((super::resolve::path_segments(&p.path), p.path.span())),
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
fn inner_validations(meta: &ParseNestedMeta, garde: bool) -> syn::Result<Metadata> {
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
fn garde_pattern(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<()> {
    let content;
    syn::parenthesized!(content in meta.input);
    let value: Expr = content.parse()?;
    out.validations.push(Validation::Pattern(Folded::of(value)));
    Ok(())
}

/// validator's `regex(path = RE)` (also `path = "RE"`, `*RE`, `&RE`): the path of the regex.
fn validate_regex(meta: &ParseNestedMeta, out: &mut Metadata) -> syn::Result<()> {
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
            path: super::resolve::path_segments(&p.path),
            span,
        }),
        Some((_, span)) => out.unsupported.push(("validate(regex)".into(), span)),
        None => return Err(meta.error("validate(regex(...)) needs `path = ...`")),
    }
    Ok(())
}

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

fn split_commas(tokens: &[proc_macro2::TokenTree]) -> Vec<&[proc_macro2::TokenTree]> {
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

/// Parses `#[x_kube(validation = .., merge_strategy = ..)]` of `#[derive(KubeSchema)]`.
fn parse_x_kube(attrs: &[Attribute], meta_out: &mut Metadata) -> syn::Result<()> {
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

/// Parses `#[kube(...)]` attributes.
pub fn kube_attrs(attrs: &[Attribute]) -> syn::Result<KubeAttrs> {
    let mut out = KubeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
        attr.parse_nested_meta(|meta| {
            let key = path_name(&meta.path);
            match key.as_str() {
                "group" => out.group = Some(string_value(&meta)?),
                "version" => out.version = Some(string_value(&meta)?),
                "kind" => out.kind = Some(string_value(&meta)?),
                "root" => out.root = Some(string_value(&meta)?),
                "singular" => out.singular = Some(string_value(&meta)?),
                "plural" => out.plural = Some(string_value(&meta)?),
                "namespaced" => {
                    out.namespaced = if meta.input.peek(syn::Token![=]) {
                        let b: syn::LitBool = meta.value()?.parse()?;
                        b.value
                    } else {
                        true
                    }
                }
                "status" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.status = Some(lit.value());
                    out.status_span = Some(lit.span());
                }
                "derive" => out.derives.push(string_value(&meta)?),
                "shortname" => out.shortnames.push(string_value(&meta)?),
                "category" => out.categories.push(string_value(&meta)?),
                "selectable" => out.selectable.push(string_value(&meta)?),
                "doc" => out.doc = Some(string_value(&meta)?),
                "schema" => out.schema = Some(string_value(&meta)?),
                "storage" | "served" => {
                    let value = if meta.input.peek(syn::Token![=]) {
                        let b: syn::LitBool = meta.value()?.parse()?;
                        b.value
                    } else {
                        true
                    };
                    if key == "storage" {
                        out.storage = Some(value);
                    } else {
                        out.served = Some(value);
                    }
                }
                "deprecated" => {
                    out.deprecated = Some(if meta.input.peek(syn::Token![=]) {
                        Some(string_value(&meta)?)
                    } else {
                        None
                    })
                }
                "annotation" | "label" => {
                    // `annotation("key", "value")`, one pair per attribute.
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let k: LitStr = content.parse()?;
                    content.parse::<syn::Token![,]>()?;
                    let v: LitStr = content.parse()?;
                    let _ = content.parse::<Option<syn::Token![,]>>()?;
                    if key == "annotation" {
                        out.annotations.push((k.value(), v.value()));
                    } else {
                        out.labels.push((k.value(), v.value()));
                    }
                }
                "printcolumn" => {
                    if meta.input.peek(syn::Token![=]) {
                        let json = string_value(&meta)?;
                        let column: PrintColumn = serde_json::from_str(&json).map_err(|e| {
                            meta.error(format!("printcolumn is not valid JSON: {e}"))
                        })?;
                        out.printcolumns.push(column);
                    } else {
                        let mut column = PrintColumn::default();
                        let mut given = Vec::new();
                        meta.parse_nested_meta(|inner| {
                            let name = path_name(&inner.path);
                            given.push(name.clone());
                            match name.as_str() {
                                "name" => column.name = string_value(&inner)?,
                                "type_" => column.type_ = string_value(&inner)?,
                                "json_path" => column.json_path = string_value(&inner)?,
                                "description" => column.description = Some(string_value(&inner)?),
                                "format" => column.format = Some(string_value(&inner)?),
                                "priority" => {
                                    let p: syn::LitInt = inner.value()?.parse()?;
                                    column.priority = Some(p.base10_parse()?);
                                }
                                other => {
                                    return Err(
                                        inner.error(format!("unknown printcolumn field `{other}`"))
                                    );
                                }
                            }
                            Ok(())
                        })?;
                        let missing: Vec<&str> = ["name", "type_", "json_path"]
                            .into_iter()
                            .filter(|key| !given.iter().any(|g| g == key))
                            .collect();
                        if !missing.is_empty() {
                            return Err(meta.error(format!(
                                "printcolumn needs `name`, `type_` and `json_path`; missing: `{}`",
                                missing.join("`, `")
                            )));
                        }
                        out.printcolumns.push(column);
                    }
                }
                "scale" => {
                    if meta.input.peek(syn::Token![=]) {
                        let json = string_value(&meta)?;
                        out.scale =
                            Some(serde_json::from_str(&json).map_err(|e| {
                                meta.error(format!("scale is not valid JSON: {e}"))
                            })?);
                    } else {
                        let mut scale = Scale::default();
                        meta.parse_nested_meta(|inner| {
                            let value = string_value(&inner)?;
                            match path_name(&inner.path).as_str() {
                                "spec_replicas_path" => scale.spec_replicas_path = value,
                                "status_replicas_path" => scale.status_replicas_path = value,
                                "label_selector_path" => scale.label_selector_path = Some(value),
                                other => {
                                    return Err(
                                        inner.error(format!("unknown scale field `{other}`"))
                                    );
                                }
                            }
                            Ok(())
                        })?;
                        out.scale = Some(scale);
                    }
                }
                "validation" => out.validations.push(meta.value()?.parse()?),
                "cel" => {
                    // Generates a client-side validation method; the CRD is unchanged.
                    skip_value(&meta)?;
                }
                "no_spec" => out.no_spec = true,
                // Crate paths and attributes of the generated struct: no effect on the CRD.
                "attr" | "crates" => skip_value(&meta)?,
                other => {
                    return Err(meta.error(format!(
                        "unknown #[kube] key `{other}` (kube-derive 5 does not know it either)"
                    )));
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

impl Metadata {
    /// The metadata every item starts with: its doc comment and Rust's `#[deprecated]`.
    fn of(attrs: &[Attribute]) -> Self {
        let (doc, unfolded) = doc_and_unfolded(attrs);
        Self {
            doc,
            deprecated: is_deprecated(attrs),
            unsupported: unfolded,
            ..Self::default()
        }
    }
}

/// Walks the keys of `#[serde(...)]` and `#[schemars(...)]`: schemars' metadata and validation
/// keys go into `metadata`; every other key is passed to `handle` with its name, whether it
/// came from `schemars`, and `metadata` for reporting unsupported keys.
///
/// schemars' own serde-like keys replace serde's, whatever their order (its
/// `schemars_to_serde`): a `#[schemars(rename_all = ..)]` drops every `#[serde(rename_all)]`,
/// `#[schemars(skip)]` drops serde's skips, `#[schemars(!default)]` drops `#[serde(default)]`,
/// and serde's `bound` is never read.
fn serde_and_schemars_keys(
    attrs: &[Attribute],
    metadata: &mut Metadata,
    mut handle: impl FnMut(&ParseNestedMeta, &str, bool, &mut Metadata) -> syn::Result<()>,
) -> syn::Result<()> {
    let mut overridden: Vec<String> = Vec::new();
    let mut schemars_attrs = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("schemars")) {
        let (kept, unset) = split_unset(attr);
        overridden.extend(unset);
        overridden.extend(
            top_level_keys(&kept)
                .into_iter()
                .filter(|key| SERDE_KEYWORDS.contains(&key.as_str())),
        );
        schemars_attrs.push(kept);
    }
    if overridden.iter().any(|k| k == "skip") {
        overridden.extend([
            "skip_serializing".to_owned(),
            "skip_deserializing".to_owned(),
        ]);
    }
    for attr in &schemars_attrs {
        attr.parse_nested_meta(|meta| {
            if parse_metadata(&meta, metadata)? {
                return Ok(());
            }
            let key = path_name(&meta.path);
            handle(&meta, &key, true, metadata)
        })?;
    }
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = path_name(&meta.path);
            if key == "bound" || overridden.contains(&key) {
                return skip_value(&meta);
            }
            handle(&meta, &key, false, metadata)
        })?;
    }
    Ok(())
}

/// The keys schemars copies from its attributes over serde's (`SERDE_KEYWORDS` in
/// schemars_derive, less `with` and `serialize_with`, which it handles itself).
const SERDE_KEYWORDS: &[&str] = &[
    "rename",
    "rename_all",
    "rename_all_fields",
    "deny_unknown_fields",
    "tag",
    "content",
    "untagged",
    "default",
    "skip",
    "skip_serializing",
    "skip_serializing_if",
    "skip_deserializing",
    "flatten",
    "remote",
    "transparent",
    "into",
    "from",
    "try_from",
    "bound",
];

/// The top-level keys of an attribute's list (`rename` in `#[schemars(rename = "x", extend(..))]`),
/// read from its tokens so that any value shape is accepted.
fn top_level_keys(attr: &Attribute) -> Vec<String> {
    list_items(attr)
        .into_iter()
        .flatten()
        .filter_map(|item| match item.first() {
            Some(proc_macro2::TokenTree::Ident(ident)) => Some(ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The tokens of each item of an attribute's list, split at its top-level commas; `None`
/// when the attribute is not a list.
fn list_items(attr: &Attribute) -> Option<Vec<Vec<proc_macro2::TokenTree>>> {
    let list = attr.meta.require_list().ok()?;
    let mut items: Vec<Vec<proc_macro2::TokenTree>> = vec![Vec::new()];
    for token in list.tokens.clone() {
        match &token {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ',' => items.push(Vec::new()),
            _ => {
                if let Some(last) = items.last_mut() {
                    last.push(token);
                }
            }
        }
    }
    Some(items)
}

/// Splits `#[schemars(!default, rename = "x")]` into the attribute without its `!key` items,
/// and those keys (schemars' way to drop a serde key).
fn split_unset(attr: &Attribute) -> (Attribute, Vec<String>) {
    let Some(items) = list_items(attr) else {
        return (attr.clone(), Vec::new());
    };
    let mut unset = Vec::new();
    let mut kept = proc_macro2::TokenStream::new();
    for item in items {
        match item.as_slice() {
            [
                proc_macro2::TokenTree::Punct(bang),
                proc_macro2::TokenTree::Ident(key),
            ] if bang.as_char() == '!' => {
                unset.push(key.to_string());
            }
            [] => {}
            _ => {
                if !kept.is_empty() {
                    kept.extend([proc_macro2::TokenTree::Punct(proc_macro2::Punct::new(
                        ',',
                        proc_macro2::Spacing::Alone,
                    ))]);
                }
                kept.extend(item);
            }
        }
    }
    if unset.is_empty() {
        return (attr.clone(), unset);
    }
    let mut attr = attr.clone();
    if let syn::Meta::List(list) = &mut attr.meta {
        list.tokens = kept;
    }
    (attr, unset)
}

/// Parses serde and schemars attributes of a struct, enum or variant.
pub fn container_attrs(attrs: &[Attribute]) -> syn::Result<ContainerAttrs> {
    let mut out = ContainerAttrs {
        meta: Metadata::of(attrs),
        ..ContainerAttrs::default()
    };
    serde_and_schemars_keys(attrs, &mut out.meta, |meta, key, _schemars, metadata| {
        match key {
            "rename" => {
                if let Some(name) = deserialize_side(meta)? {
                    out.rename = Some(name);
                }
            }
            "rename_all" | "rename_all_fields" => {
                if let Some(rule) = deserialize_side(meta)? {
                    let rule = RenameRule::parse(&rule)
                        .ok_or_else(|| meta.error(format!("unknown rename rule {rule:?}")))?;
                    if key == "rename_all" {
                        out.rename_all = rule;
                    } else {
                        out.rename_all_fields = rule;
                    }
                }
            }
            "deny_unknown_fields" => out.deny_unknown_fields = true,
            "default" => out.default = default_attr(meta)?,
            "tag" => out.tag = Some(string_value(meta)?),
            "content" => out.content = Some(string_value(meta)?),
            "untagged" => out.untagged = true,
            "transparent" => out.transparent = true,
            "skip" | "skip_deserializing" => {
                out.skip = true;
                skip_value(meta)?;
            }
            "from" | "try_from" => out.from = Some(parse_string_value(meta)?),
            "into" => {
                // Serialization only: kube-derive's schema describes deserialization.
                skip_value(meta)?;
            }
            "remote" | "with" => {
                metadata
                    .unsupported
                    .push((key.to_owned(), meta.path.span()));
                skip_value(meta)?;
            }
            _ => skip_value(meta)?,
        }
        Ok(())
    })?;
    parse_x_kube(attrs, &mut out.meta)?;
    Ok(out)
}

/// Parses serde and schemars attributes of a field.
pub fn field_attrs(attrs: &[Attribute]) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs {
        meta: Metadata::of(attrs),
        ..FieldAttrs::default()
    };
    for attr in attrs
        .iter()
        .filter(|a| a.path().is_ident("validate") || a.path().is_ident("garde"))
    {
        // schemars reads the validation keys of validator's and garde's attributes too.
        let is_garde = attr.path().is_ident("garde");
        attr.parse_nested_meta(|meta| {
            let key = path_name(&meta.path);
            match key.as_str() {
                "required" => out.required = true,
                "length" | "range" | "email" | "url" | "ip" | "ipv4" | "ipv6" | "contains" => {
                    parse_metadata(&meta, &mut out.meta)?;
                }
                "pattern" if is_garde => garde_pattern(&meta, &mut out.meta)?,
                "regex" if !is_garde => validate_regex(&meta, &mut out.meta)?,
                "inner" if is_garde => {
                    let inner = inner_validations(&meta, true)?;
                    out.meta
                        .validations
                        .push(Validation::Inner(inner.validations));
                    out.meta.unsupported.extend(inner.unsupported);
                }
                _ => skip_value(&meta)?,
            }
            Ok(())
        })?;
    }
    let mut serde_with = None;
    serde_and_schemars_keys(attrs, &mut out.meta, |meta, key, is_schemars, _| {
        match key {
            "rename" => {
                if let Some(name) = deserialize_side(meta)? {
                    out.rename = Some(name);
                }
            }
            "default" => out.default = default_attr(meta)?,
            "skip" => {
                out.skip_serializing = true;
                out.skip_deserializing = true;
            }
            "skip_serializing" => out.skip_serializing = true,
            "skip_deserializing" => out.skip_deserializing = true,
            "skip_serializing_if" => out.skip_serializing_if = Some(parse_string_value(meta)?),
            "flatten" => out.flatten = true,
            "required" if is_schemars => out.required = true,
            "with" if is_schemars => out.with = Some(parse_string_value(meta)?),
            "schema_with" if is_schemars => out.schema_with = Some(parse_string_value(meta)?),
            // schemars reads serde's `with` as a type, after its own `with` and `schema_with`.
            "with" => {
                let module = string_value(meta)?;
                out.serialize_with = Some(format!("{module}::serialize"));
                serde_with = Some((module, meta.path.span()));
            }
            "serialize_with" => out.serialize_with = Some(string_value(meta)?),
            // Neither changes the schema.
            "deserialize_with" | "getter" => skip_value(meta)?,
            _ => skip_value(meta)?,
        }
        Ok(())
    })?;
    if out.with.is_none()
        && out.schema_with.is_none()
        && let Some((written, span)) = serde_with
    {
        out.with =
            Some(syn::parse_str(&written).map_err(|e| {
                syn::Error::new(span, format!("`{written}` in #[serde(with)]: {e}"))
            })?);
        out.with_from_serde = Some(written);
    }
    parse_x_kube(attrs, &mut out.meta)?;
    Ok(out)
}

/// Whether `attrs` derive `name` (e.g. `CustomResource`), under any path.
pub fn derives(attrs: &[Attribute], name: &str) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|attr| {
            // A scan of the tokens, not a parse: this runs on every item of every file.
            let syn::Meta::List(list) = &attr.meta else {
                return false;
            };
            let mut last: Option<proc_macro2::Ident> = None;
            for token in list.tokens.clone() {
                match token {
                    proc_macro2::TokenTree::Ident(ident) => last = Some(ident),
                    // A comma ends a path: was its last segment `name`?
                    proc_macro2::TokenTree::Punct(p)
                        if p.as_char() == ',' && last.take().is_some_and(|i| i == name) =>
                    {
                        return true;
                    }
                    _ => {}
                }
            }
            last.is_some_and(|i| i == name)
        })
}

/// The span to report for an attribute list.
pub fn attr_span(attrs: &[Attribute], name: &str) -> Option<Span> {
    attrs
        .iter()
        .find(|a| a.path().is_ident(name))
        .map(|a| a.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_rename_rules() {
        assert_eq!(
            RenameRule::Camel.apply_to_field("observed_generation"),
            "observedGeneration"
        );
        assert_eq!(RenameRule::Pascal.apply_to_field("a_b"), "AB");
        assert_eq!(RenameRule::Kebab.apply_to_field("a_b"), "a-b");
        assert_eq!(RenameRule::ScreamingKebab.apply_to_field("a_b"), "A-B");
        assert_eq!(RenameRule::Snake.apply_to_variant("HttpGet"), "http_get");
        assert_eq!(RenameRule::Camel.apply_to_variant("HttpGet"), "httpGet");
        assert_eq!(
            RenameRule::ScreamingKebab.apply_to_variant("HttpGet"),
            "HTTP-GET"
        );
        assert_eq!(RenameRule::Lower.apply_to_variant("HttpGet"), "httpget");
    }

    #[test]
    fn derives_matches_the_last_segment_of_each_path() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[derive(Clone, kube::CustomResource, schemars::JsonSchema)]
            #[derive(Default)]
            struct S {}
        };
        assert!(derives(&item.attrs, "CustomResource"));
        assert!(derives(&item.attrs, "JsonSchema"));
        assert!(derives(&item.attrs, "Default"));
        assert!(derives(&item.attrs, "Clone"));
        assert!(!derives(&item.attrs, "kube"));
        assert!(!derives(&item.attrs, "Resource"));
    }

    #[test]
    fn kube_attrs_both_printcolumn_forms() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[kube(group = "a.b", version = "v1", kind = "K", namespaced, storage = false,
                   printcolumn = r#"{"name":"X","type":"string","jsonPath":".x"}"#,
                   printcolumn(name = "Y", type_ = "date", json_path = ".y", priority = 1),
                   shortname = "k", shortname = "kk", deprecated = "old")]
            struct KSpec {}
        };
        let attrs = kube_attrs(&item.attrs).expect("parses");
        assert_eq!(attrs.group.as_deref(), Some("a.b"));
        assert!(attrs.namespaced);
        assert_eq!(attrs.storage, Some(false));
        assert_eq!(attrs.printcolumns.len(), 2);
        assert_eq!(attrs.printcolumns[1].priority, Some(1));
        assert_eq!(attrs.shortnames, ["k", "kk"]);
        assert_eq!(attrs.deprecated, Some(Some("old".into())));
    }
}
