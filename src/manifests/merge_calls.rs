//! kube-rs users' `merge_crds(vec![v1::Foo::crd(), v2::Foo::crd()], "v1")` calls, found in the
//! crate's functions: they name the storage version and the order of a kind's versions.

use syn::Item;

use super::cfg::Cfg;
use super::index::{MAX_MODULE_DEPTH, item_attrs};

/// A call `merge_crds(vec![v1::Foo::crd(), v2::Foo::crd()], "v1")`: how kube-rs users merge the
/// versions of a kind (every version's `crd()` says `storage: true`; the call picks one).
#[derive(Debug, Clone)]
pub struct MergeCall {
    /// The module the call is written in, where its paths resolve.
    pub module: String,
    pub file: usize,
    pub span: proc_macro2::Span,
    /// The types whose `crd()` is merged, in the call's order (`v1::Foo`).
    pub types: Vec<Vec<String>>,
    /// The storage version, when the call gives it as a string literal.
    pub storage: Option<String>,
}

/// The `merge_crds` calls of `file`, whose items are in `module`.
pub fn find(cfg: &Cfg, module: &str, file_index: usize, file: &syn::File) -> Vec<MergeCall> {
    let mut calls = MergeCalls {
        cfg,
        modules: vec![module.to_owned()],
        file: file_index,
        found: Vec::new(),
    };
    syn::visit::Visit::visit_file(&mut calls, file);
    calls.found
}

/// Finds `merge_crds(..)` calls in a file's functions, outside code under a false `cfg`.
struct MergeCalls<'c> {
    cfg: &'c Cfg,
    /// The module being visited, innermost last.
    modules: Vec<String>,
    file: usize,
    found: Vec<MergeCall>,
}

impl<'ast> syn::visit::Visit<'ast> for MergeCalls<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !self.cfg.enabled(item_attrs(item)) {
            return;
        }
        if let Item::Mod(m) = item {
            // Deeper modules are an error of the index; their paths would cost the square.
            if self.modules.len() > MAX_MODULE_DEPTH {
                return;
            }
            let parent = self.modules.last().cloned().unwrap_or_default();
            self.modules.push(format!("{parent}::{}", m.ident));
            syn::visit::visit_item_mod(self, m);
            self.modules.pop();
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        syn::visit::visit_expr_call(self, call);
        let syn::Expr::Path(func) = &*call.func else {
            return;
        };
        if func
            .path
            .segments
            .last()
            .is_none_or(|s| s.ident != "merge_crds")
        {
            return;
        }
        let mut args = call.args.iter();
        let (Some(syn::Expr::Macro(list)), storage) = (args.next(), args.next()) else {
            return;
        };
        let Ok(elems) = list.mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) else {
            return;
        };
        // Each element `path::Type::crd()`: the type's path.
        let types: Option<Vec<Vec<String>>> = elems
            .iter()
            .map(|e| match e {
                syn::Expr::Call(c) if c.args.is_empty() => match &*c.func {
                    syn::Expr::Path(p) => {
                        let mut segments = super::paths::path_segments(&p.path);
                        (segments.pop().as_deref() == Some("crd") && !segments.is_empty())
                            .then_some(segments)
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let storage = match storage {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            })) => Some(s.value()),
            _ => None,
        };
        if let Some(types) = types {
            self.found.push(MergeCall {
                module: self.modules.last().cloned().unwrap_or_default(),
                file: self.file,
                span: syn::spanned::Spanned::span(&func.path),
                types,
                storage,
            });
        }
    }
}
