//! `#[serde(...)]` and `#[schemars(...)]` keys of containers and fields, as schemars 1 reads
//! them (schemars' own serde-like keys replace serde's).

use syn::{Attribute, meta::ParseNestedMeta, spanned::Spanned};

use super::*;

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

/// Walks the keys of `#[serde(...)]` and `#[schemars(...)]`: schemars' metadata and validation
/// keys go into `metadata`; every other key is passed to `handle` with its name, whether it
/// came from `schemars`, and `metadata` for reporting unsupported keys.
///
/// schemars' own serde-like keys replace serde's, whatever their order (its
/// `schemars_to_serde`): a `#[schemars(rename_all = ..)]` drops every `#[serde(rename_all)]`,
/// `#[schemars(skip)]` drops serde's skips, `#[schemars(!default)]` drops `#[serde(default)]`,
/// and serde's `bound` is never read.
pub(super) fn serde_and_schemars_keys(
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
pub(super) const SERDE_KEYWORDS: &[&str] = &[
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
pub(super) fn top_level_keys(attr: &Attribute) -> Vec<String> {
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
pub(super) fn list_items(attr: &Attribute) -> Option<Vec<Vec<proc_macro2::TokenTree>>> {
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
pub(super) fn split_unset(attr: &Attribute) -> (Attribute, Vec<String>) {
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
