//! The attributes that shape a CRD, parsed once into typed structs: `#[kube(...)]` (as
//! kube-derive 5 reads it), and the `#[serde(...)]` / `#[schemars(...)]` keys that schemars 1
//! honours. Everything downstream works on these structs, never on raw tokens.

mod kube;
mod metadata;
mod serde_attrs;
mod values;
mod versioned;

use proc_macro2::Span;
use syn::{Attribute, Expr, LitStr, meta::ParseNestedMeta, spanned::Spanned};

pub use kube::*;
pub use metadata::*;
pub use serde_attrs::*;
pub use values::*;
pub use versioned::*;

/// `default` (the type's `Default`) or `default = "path"` (a function).
pub(super) fn default_attr(meta: &ParseNestedMeta) -> syn::Result<DefaultAttr> {
    if meta.input.peek(syn::Token![=]) {
        Ok(DefaultAttr::Path(parse_string_value(meta)?))
    } else {
        Ok(DefaultAttr::Default)
    }
}

/// A string value parsed as Rust (`default = "f"`, `with = "T"`), with the spans of the
/// string, so that errors about what it names point at the attribute.
pub(super) fn parse_string_value<T: syn::parse::Parse>(meta: &ParseNestedMeta) -> syn::Result<T> {
    let lit: LitStr = meta.value()?.parse()?;
    lit.parse()
}

pub(super) fn string_value(meta: &ParseNestedMeta) -> syn::Result<String> {
    let lit: LitStr = meta.value()?.parse()?;
    Ok(lit.value())
}

/// `rename = "x"` or `rename(deserialize = "x", serialize = "y")`: the deserialize side, which
/// is the one kube-derive's schema describes (schemars' default contract).
pub(super) fn deserialize_side(meta: &ParseNestedMeta) -> syn::Result<Option<String>> {
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

pub(super) fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

pub(super) fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
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
