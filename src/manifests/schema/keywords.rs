//! The keywords schemars writes from attributes: metadata, validations, extensions, and the
//! `#[x_kube(...)]` rules and merge strategies kube-core applies.

use super::*;

/// `#[x_kube(validation, merge_strategy)]`, applied with kube-core's own functions as
/// `#[derive(KubeSchema)]` does.
pub fn apply_x_kube(file: &Path, schema: &mut Schema, meta: &Metadata) -> Result<(), SourceError> {
    let unfoldable = |expr: &syn::Expr, what: &str| {
        SourceError::at(file, expr.span(), format!("cannot fold this {what} statically"))
            .help("write a string literal, a (rule, message) pair, or Rule::new(\"..\") with .message/.reason/.field_path; merge strategies as ListMerge::Map(vec![\"key\".into()]) and the like")
            .unsupported()
    };
    for expr in &meta.x_kube_rules {
        let rule = crate::manifests::fold::cel::fold_rule(expr)
            .ok_or_else(|| unfoldable(expr, "validation rule"))?;
        kube_core::validate(schema, rule)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
    }
    if let Some(expr) = &meta.x_kube_merge {
        let strategy = crate::manifests::fold::cel::fold_merge_strategy(expr)
            .ok_or_else(|| unfoldable(expr, "merge strategy"))?;
        let mut value = schema.clone().to_value();
        kube_core::merge_strategy(&mut value, strategy)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
        *schema = Schema::try_from(value)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
    }
    Ok(())
}

pub(super) fn unreachable_type(file: &Path, path: &syn::Path) -> Result<Schema, SourceError> {
    Err(SourceError::at(file, path.span(), "not a struct or enum"))
}

pub(super) fn plain(schema: Schema) -> Built {
    Built {
        schema,
        is_option: false,
    }
}

/// What an attribute value must fold to.
pub(super) enum Expect {
    /// `range` bounds.
    Number,
    /// `length` bounds.
    Length,
    /// Patterns and `contains`.
    Text,
}

impl Expect {
    pub(super) fn what(&self) -> &'static str {
        match self {
            Expect::Number => "a number, as `range` needs",
            Expect::Length => "a non-negative integer, as `length` needs",
            Expect::Text => "a string, as a pattern needs",
        }
    }
}

/// `()`'s schema: `{"type": "null"}`.
pub(super) fn json_schema_null() -> Schema {
    Schema::from(
        json!({"type": "null"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

pub(super) fn report_unsupported(file: &Path, meta: &Metadata) -> Result<(), SourceError> {
    if let Some((key, span)) = meta.unsupported.first()
        && key.starts_with("doc =")
    {
        return Err(SourceError::at(file, *span, format!("kopgen cannot fold `{key}` statically: schemars would put its text in the description"))
            .help("replace it with the text as a doc comment (`/// ...`), or remove it and give `#[schemars(description = \"...\")]`")
            .unsupported());
    }
    if let Some((key, span)) = meta.unsupported.first() {
        return Err(SourceError::at(file, *span, format!("kopgen cannot yet fold `{key}` statically"))
            .help("remove it, or replace it with an attribute kopgen folds (see the attribute reference in kopgen's README)")
            .unsupported());
    }
    Ok(())
}

/// schemars' `insert_object_property`.
pub(super) fn insert_property(schema: &mut Schema, key: &str, optional: bool, sub_schema: Schema) {
    let obj = schema.ensure_object();
    if let Some(properties) = obj
        .entry("properties")
        .or_insert(Value::Object(Map::new()))
        .as_object_mut()
    {
        properties.insert(key.to_owned(), sub_schema.into());
    }
    if !optional
        && let Some(required) = obj
            .entry("required")
            .or_insert(Value::Array(Vec::new()))
            .as_array_mut()
    {
        required.push(key.into());
    }
}

/// schemars' common metadata mutators (`add_mutators`): title and description (explicit, or
/// from the doc comment), `deprecated`, `examples`.
pub(super) fn add_common_metadata(schema: &mut Schema, meta: &Metadata) {
    let (doc_title, doc_description) = meta
        .doc
        .as_deref()
        .map(schemars::_private::get_title_and_description)
        .unwrap_or(("", ""));
    let title = meta.title.as_deref().unwrap_or(doc_title);
    let description = meta.description.as_deref().unwrap_or(doc_description);
    if !title.is_empty() {
        schema.insert("title".into(), title.into());
    }
    if !description.is_empty() {
        schema.insert("description".into(), description.into());
    }
    if meta.deprecated {
        schema.insert("deprecated".into(), true.into());
    }
    if !meta.examples.is_empty() {
        let examples = meta.examples.iter().filter_map(Folded::value).cloned();
        schema.insert("examples".into(), Value::Array(examples.collect()));
    }
}

/// A container's mutators: common metadata, then its extensions (schemars' post-mutators).
pub(super) fn add_container_mutators(schema: &mut Schema, meta: &Metadata) {
    add_common_metadata(schema, meta);
    for (key, value) in &meta.extend {
        schema.insert(key.clone(), value.clone());
    }
    apply_ops(schema, &meta.transform_ops);
}

/// A field's post-mutators: its extensions, then its folded `transform` functions.
pub(super) fn add_field_post_mutators(schema: &mut Schema, fattrs: &FieldAttrs) {
    for (key, value) in &fattrs.meta.extend {
        schema.insert(key.clone(), value.clone());
    }
    apply_ops(schema, &fattrs.meta.transform_ops);
}

/// Folded `transform` functions, run as schemars runs them: after the extensions.
pub(super) fn apply_ops(schema: &mut Schema, ops: &[attrs::SchemaOp]) {
    for op in ops {
        match op {
            attrs::SchemaOp::Insert(key, value) => {
                schema.insert(key.clone(), value.clone());
            }
            attrs::SchemaOp::Remove(key) => {
                schema.remove(key);
            }
        }
    }
}

/// A field's mutators: common metadata, validations, readOnly/writeOnly (extensions come last,
/// after the default, as schemars' post-mutators).
pub(super) fn add_field_mutators(schema: &mut Schema, fattrs: &FieldAttrs) {
    let meta = &fattrs.meta;
    add_common_metadata(schema, meta);
    for validation in &meta.validations {
        apply_validation(schema, validation);
    }
    if fattrs.skip_deserializing {
        schema.insert("readOnly".into(), true.into());
    }
    if fattrs.skip_serializing {
        schema.insert("writeOnly".into(), true.into());
    }
}

/// schemars' `Schema::has_type` (private there).
pub(super) fn has_type(schema: &Schema, ty: &str) -> bool {
    let is = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(t)),
        _ => false,
    };
    is(ty) || (ty == "number" && is("integer"))
}

pub(super) fn apply_validation(schema: &mut Schema, validation: &Validation) {
    match validation {
        Validation::Length { min, max, equal } => {
            let value = |bound: &Option<Folded>| bound.as_ref().and_then(Folded::value).cloned();
            for (ty, suffix) in [("string", "Length"), ("array", "Items")] {
                if has_type(schema, ty) {
                    if let Some(n) = value(min).or_else(|| value(equal)) {
                        schema.insert(format!("min{suffix}"), n);
                    }
                    if let Some(n) = value(max).or_else(|| value(equal)) {
                        schema.insert(format!("max{suffix}"), n);
                    }
                }
            }
        }
        Validation::Range { min, max } => {
            if has_type(schema, "number") {
                if let Some(v) = min.as_ref().and_then(Folded::value) {
                    schema.insert("minimum".into(), v.clone());
                }
                if let Some(v) = max.as_ref().and_then(Folded::value) {
                    schema.insert("maximum".into(), v.clone());
                }
            }
        }
        Validation::Pattern(p) => {
            if has_type(schema, "string")
                && let Some(p) = p.value()
            {
                schema.insert("pattern".into(), p.clone());
            }
        }
        Validation::Contains(s) => {
            if has_type(schema, "string")
                && let Some(Value::String(s)) = s.value()
            {
                schema.insert("pattern".into(), regex_escape(s).into());
            }
        }
        Validation::Format(f) => {
            schema.insert("format".into(), (*f).into());
        }
        Validation::Inner(inner) => {
            if let Some(items) = schema.get_mut("items")
                && let Ok(items) = <&mut Schema>::try_from(items)
            {
                for validation in inner {
                    apply_validation(items, validation);
                }
            }
        }
        // Resolved to `Pattern` when the field's attributes are read.
        Validation::RegexPath { .. } => {}
    }
}

/// The pattern string of the regex a `validate(regex(path))` names: a string constant or
/// static, or a static built with `Regex::new("...")` (in `LazyLock::new`, `Lazy::new`, ...),
/// whose `to_string()` is that pattern.
pub(super) fn regex_pattern(index: &Index, module: &str, path: &[String]) -> Option<String> {
    let Resolved::Local(item) = index.resolve(module, path)? else {
        return None;
    };
    let item_kind = index.kind(item);
    let item = &index.items[item];
    let string =
        |expr: &syn::Expr| match fold::fold_expr(index, index.file(item), &item.module, expr)
            .ok()?
        {
            Value::String(s) => Some(s),
            _ => None,
        };
    match item_kind {
        ItemKind::Const(c) => string(&c.expr),
        ItemKind::Static(s) => string(&s.expr).or_else(|| regex_literal(&s.expr)),
        _ => None,
    }
}

/// The literal of a `Regex::new("...")` call inside a static's initializer.
pub(super) fn regex_literal(expr: &syn::Expr) -> Option<String> {
    use syn::Expr;
    match expr {
        Expr::Call(call) => {
            let is_regex_new = matches!(&*call.func, Expr::Path(p)
                if p.path.segments.len() >= 2
                    && p.path.segments.iter().rev().nth(1).is_some_and(|s| s.ident == "Regex")
                    && p.path.segments.last().is_some_and(|s| s.ident == "new"));
            if is_regex_new && call.args.len() == 1 {
                return call
                    .args
                    .first()
                    .and_then(attrs::expr_to_json)
                    .and_then(|v| v.as_str().map(str::to_owned));
            }
            call.args.iter().find_map(regex_literal)
        }
        Expr::MethodCall(m) => regex_literal(&m.receiver),
        Expr::Closure(c) => regex_literal(&c.body),
        Expr::Paren(p) => regex_literal(&p.expr),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => regex_literal(e),
            _ => None,
        },
        _ => None,
    }
}

/// `regex_syntax::escape`.
pub(super) fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '.'
                | '+'
                | '*'
                | '?'
                | '('
                | ')'
                | '|'
                | '['
                | ']'
                | '{'
                | '}'
                | '^'
                | '$'
                | '#'
                | '&'
                | '-'
                | '~'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// schemars' `_private::flatten`, which merges a flattened field into its struct.
pub(super) fn schemars_flatten(schema: &mut Schema, other: Schema) {
    schemars::_private::flatten(schema, other);
}
