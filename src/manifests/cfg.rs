//! `#[cfg(...)]` as cargo would evaluate it for the operator's build: items under a false
//! `cfg` are not in the crate whose `crd()` runs, so they are not API. `test` is false (the
//! operator is not a test build), features are the crate's default features plus those asked
//! for with `--features`, and the target is Linux, where operators run.

use std::{collections::BTreeSet, path::Path};

use syn::{Attribute, Meta};

/// The configuration items are compiled under.
#[derive(Debug, Clone, Default)]
pub struct Cfg {
    features: BTreeSet<String>,
    /// What those features enable in dependencies (`k8s-openapi/v1_33`, `k8s-openapi?/v1_33`).
    dependency_features: BTreeSet<String>,
}

impl Cfg {
    /// The crate of `manifest` (if any) with its default features and `extra` ones, each
    /// feature with the features it enables.
    pub fn new(manifest: Option<&Path>, extra: &[String]) -> Self {
        let table = manifest
            .and_then(|m| crate::regular_file::read_to_string(m).ok())
            .and_then(|text| text.parse::<toml::Table>().ok());
        let declared = table
            .as_ref()
            .and_then(|t| t.get("features"))
            .and_then(toml::Value::as_table);
        let mut pending: Vec<String> = extra.to_vec();
        if declared.is_some_and(|d| d.contains_key("default")) {
            pending.push("default".into());
        }
        let mut features = BTreeSet::new();
        let mut dependency_features = BTreeSet::new();
        while let Some(feature) = pending.pop() {
            if !features.insert(feature.clone()) {
                continue;
            }
            let enables = declared
                .and_then(|d| d.get(&feature))
                .and_then(toml::Value::as_array);
            for enabled in enables
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str)
            {
                // `dep:x` and `x/feature` name dependencies' features, not the crate's.
                if enabled.contains('/') {
                    dependency_features.insert(enabled.to_owned());
                } else if !enabled.starts_with("dep:") {
                    pending.push(enabled.to_owned());
                }
            }
        }
        Self {
            features,
            dependency_features,
        }
    }

    /// The features the crate's enabled features turn on in its dependency `alias`.
    pub fn features_of<'a>(&'a self, alias: &'a str) -> impl Iterator<Item = &'a str> {
        self.dependency_features.iter().filter_map(move |entry| {
            let (dependency, feature) = entry.split_once('/')?;
            (dependency.trim_end_matches('?') == alias).then_some(feature)
        })
    }

    /// Whether every `#[cfg(...)]` of `attrs` holds.
    pub fn enabled(&self, attrs: &[Attribute]) -> bool {
        attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .all(|a| a.parse_args::<Meta>().is_ok_and(|meta| self.holds(&meta)))
    }

    /// `file` as rustc sees it before any derive runs: every `#[cfg_attr(predicate, attr, ..)]`
    /// replaced by its attributes where the predicate holds, and removed where it does not (so
    /// `#[cfg_attr(all(), derive(CustomResource), kube(..))]` is a custom resource).
    pub fn expand_cfg_attrs(&self, file: &mut syn::File) {
        syn::visit_mut::VisitMut::visit_file_mut(&mut Expand { cfg: self }, file);
    }

    fn expand(&self, attrs: &mut Vec<Attribute>) {
        if !attrs.iter().any(|a| a.path().is_ident("cfg_attr")) {
            return;
        }
        let mut pending: Vec<Attribute> = std::mem::take(attrs);
        pending.reverse();
        while let Some(attr) = pending.pop() {
            if !attr.path().is_ident("cfg_attr") {
                attrs.push(attr);
                continue;
            }
            let parsed = attr.parse_args_with(
                syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated,
            );
            // Not the form rustc accepts: kept, so that what reads it reports it.
            let Ok(parsed) = parsed else {
                attrs.push(attr);
                continue;
            };
            let mut parts = parsed.into_iter();
            let Some(predicate) = parts.next() else {
                continue;
            };
            if self.holds(&predicate) {
                // In order, before the attributes after this one (nested `cfg_attr` again).
                let expanded: Vec<Attribute> = parts
                    .map(|meta| Attribute {
                        meta,
                        ..attr.clone()
                    })
                    .collect();
                pending.extend(expanded.into_iter().rev());
            }
        }
    }

    fn holds(&self, meta: &Meta) -> bool {
        match meta {
            Meta::Path(p) => !(p.is_ident("test") || p.is_ident("windows") || p.is_ident("miri")),
            Meta::NameValue(nv) => {
                let value = match &nv.value {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => s.value(),
                    _ => return false,
                };
                let key = nv.path.get_ident().map(ToString::to_string);
                match key.as_deref() {
                    Some("feature") => self.features.contains(&value),
                    Some("target_os") => value == "linux",
                    Some("target_family") => value == "unix",
                    _ => true,
                }
            }
            Meta::List(list) => {
                let Ok(inner) = list.parse_args_with(
                    syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated,
                ) else {
                    return false;
                };
                if list.path.is_ident("all") {
                    inner.iter().all(|m| self.holds(m))
                } else if list.path.is_ident("any") {
                    inner.iter().any(|m| self.holds(m))
                } else if list.path.is_ident("not") {
                    inner.len() == 1 && !inner.iter().all(|m| self.holds(m))
                } else {
                    true
                }
            }
        }
    }
}

/// Expands `cfg_attr` on every item, field and variant that can carry an attribute that
/// shapes a CRD (derives, `kube`, `serde`, `schemars`, `cfg`, `path`).
struct Expand<'a> {
    cfg: &'a Cfg,
}

macro_rules! expand_in {
    ($($visit:ident: $node:ty),* $(,)?) => {
        impl syn::visit_mut::VisitMut for Expand<'_> {
            $(
                fn $visit(&mut self, node: &mut $node) {
                    self.cfg.expand(&mut node.attrs);
                    syn::visit_mut::$visit(self, node);
                }
            )*
        }
    };
}

expand_in! {
    visit_item_struct_mut: syn::ItemStruct,
    visit_item_enum_mut: syn::ItemEnum,
    visit_item_type_mut: syn::ItemType,
    visit_item_mod_mut: syn::ItemMod,
    visit_item_fn_mut: syn::ItemFn,
    visit_item_const_mut: syn::ItemConst,
    visit_item_static_mut: syn::ItemStatic,
    visit_item_impl_mut: syn::ItemImpl,
    visit_item_use_mut: syn::ItemUse,
    visit_item_macro_mut: syn::ItemMacro,
    visit_field_mut: syn::Field,
    visit_variant_mut: syn::Variant,
    visit_impl_item_fn_mut: syn::ImplItemFn,
    visit_impl_item_const_mut: syn::ImplItemConst,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(cfg: &Cfg, attr: &str) -> bool {
        let item: syn::ItemStruct = syn::parse_str(&format!("{attr} struct X;")).expect("item");
        cfg.enabled(&item.attrs)
    }

    #[test]
    fn evaluates_like_the_operators_build() {
        let cfg = Cfg {
            features: ["v2".to_owned()].into(),
            ..Cfg::default()
        };
        assert!(!holds(&cfg, "#[cfg(test)]"));
        assert!(holds(&cfg, "#[cfg(not(test))]"));
        assert!(!holds(&cfg, "#[cfg(any())]"));
        assert!(holds(&cfg, "#[cfg(all())]"));
        assert!(!holds(&cfg, "#[cfg(all(unix, test))]"));
        assert!(holds(&cfg, "#[cfg(feature = \"v2\")]"));
        assert!(!holds(&cfg, "#[cfg(feature = \"v3\")]"));
        assert!(holds(&cfg, "#[cfg(target_os = \"linux\")]"));
        assert!(!holds(&cfg, "#[cfg(windows)]"));
        assert!(holds(&cfg, "#[derive(Debug)]"));
    }

    #[test]
    fn cfg_attr_is_expanded_where_its_predicate_holds() {
        let cfg = Cfg::default();
        let mut file: syn::File = syn::parse_str(
            "#[cfg_attr(all(), derive(Debug), cfg_attr(not(test), serde(rename = \"x\")))]\n\
             #[cfg_attr(test, derive(Clone))]\n\
             #[doc = \"kept\"]\n\
             struct X { #[cfg_attr(not(windows), serde(default))] a: u8 }",
        )
        .expect("file");
        cfg.expand_cfg_attrs(&mut file);
        let syn::Item::Struct(item) = &file.items[0] else {
            panic!("a struct");
        };
        let attrs: Vec<String> = item
            .attrs
            .iter()
            .map(|a| quote::ToTokens::to_token_stream(a).to_string())
            .collect();
        assert_eq!(
            attrs,
            [
                "# [derive (Debug)]",
                "# [serde (rename = \"x\")]",
                "# [doc = \"kept\"]"
            ]
        );
        let field = item.fields.iter().next().expect("a field");
        assert!(field.attrs[0].path().is_ident("serde"));
    }

    #[test]
    fn default_features_are_followed_through_what_they_enable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[package]\nname = \"x\"\n[features]\ndefault = [\"a\"]\na = [\"b\", \"dep:serde\", \"serde/std\"]\nb = []\nc = []\n",
        )
        .expect("write");
        let cfg = Cfg::new(Some(&manifest), &["c".into()]);
        let enabled: Vec<&str> = cfg.features.iter().map(String::as_str).collect();
        assert_eq!(enabled, ["a", "b", "c", "default"]);
    }
}
