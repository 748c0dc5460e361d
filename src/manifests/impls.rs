//! Ties `impl` blocks to the crate's types once every file is indexed (a type's name resolves
//! only then): `impl Default for T` becomes `T`'s hand-written default, and the functions and
//! constants of an inherent `impl T` become items reached as `T::name`; a hand-written
//! `impl JsonSchema for T` is recorded, since kopgen cannot run it.

use super::{
    index::{DefaultImpl, Index, IndexedItem, ItemKind, PendingImpl},
    paths::path_segments,
    resolve::Resolved,
};

/// Ties each `impl` block to the item of its type (`Self` in its items replaced by the type's
/// path as the `impl` writes it).
pub fn link(index: &mut Index) {
    for PendingImpl {
        module,
        file,
        item: imp,
    } in std::mem::take(&mut index.pending_impls)
    {
        let syn::Type::Path(self_ty) = &*imp.self_ty else {
            continue;
        };
        if self_ty.qself.is_some() {
            continue;
        }
        let segments = path_segments(&self_ty.path);
        let Some(Resolved::Local(ty)) = index.resolve(&module, &segments) else {
            continue;
        };
        let trait_name = imp
            .trait_
            .as_ref()
            .and_then(|(_, path, _)| path.segments.last())
            .map(|s| s.ident.to_string());
        if trait_name.as_deref() == Some("JsonSchema") {
            let span = syn::spanned::Spanned::span(&imp.self_ty);
            index.schema_impls.insert(ty, (file, span));
            continue;
        }
        // Generic impls hold items for many types; a spec names one.
        if !imp.generics.params.is_empty() {
            continue;
        }
        let self_tokens = quote::ToTokens::to_token_stream(&self_ty.path);
        for impl_item in imp.items {
            let tokens = replace_self(quote::ToTokens::to_token_stream(&impl_item), &self_tokens);
            let Ok(impl_item) = syn::parse2::<syn::ImplItem>(tokens) else {
                continue;
            };
            match (trait_name.as_deref(), impl_item) {
                (Some("Default"), syn::ImplItem::Fn(function))
                    if function.sig.ident == "default" =>
                {
                    index.default_impls.insert(
                        ty,
                        DefaultImpl {
                            module: module.clone(),
                            file,
                            function,
                        },
                    );
                }
                (None, syn::ImplItem::Fn(f)) => {
                    let kind = ItemKind::Fn(syn::ItemFn {
                        attrs: f.attrs,
                        vis: f.vis,
                        sig: f.sig,
                        block: Box::new(f.block),
                    });
                    add_assoc(index, ty, &module, file, kind);
                }
                (None, syn::ImplItem::Const(c)) => {
                    let kind = ItemKind::Const(syn::ItemConst {
                        attrs: c.attrs,
                        vis: c.vis,
                        const_token: c.const_token,
                        ident: c.ident,
                        generics: c.generics,
                        colon_token: c.colon_token,
                        ty: Box::new(c.ty),
                        eq_token: c.eq_token,
                        expr: Box::new(c.expr),
                        semi_token: c.semi_token,
                    });
                    add_assoc(index, ty, &module, file, kind);
                }
                _ => {}
            }
        }
    }
}

fn add_assoc(index: &mut Index, ty: usize, module: &str, file: usize, kind: ItemKind) {
    let name = match &kind {
        ItemKind::Fn(f) => f.sig.ident.to_string(),
        ItemKind::Const(c) => c.ident.to_string(),
        _ => return,
    };
    let item = index.items.len();
    let qualified = format!("{}::{name}", index.items[ty].name);
    index.items.push(IndexedItem {
        module: module.to_owned(),
        name: qualified,
        file,
        kind,
    });
    index.assoc.insert((ty, name), item);
}

/// `tokens` with every `Self` replaced by `path` (the `Self` token's span kept on the first
/// token, so errors still point into the `impl`).
fn replace_self(
    tokens: proc_macro2::TokenStream,
    path: &proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, TokenTree};
    let mut out = proc_macro2::TokenStream::new();
    for token in tokens {
        match token {
            TokenTree::Ident(ident) if ident == "Self" => {
                out.extend(path.clone().into_iter().map(|mut t| {
                    t.set_span(ident.span());
                    t
                }));
            }
            TokenTree::Group(group) => {
                let mut replaced =
                    Group::new(group.delimiter(), replace_self(group.stream(), path));
                replaced.set_span(group.span());
                out.extend([TokenTree::Group(replaced)]);
            }
            other => out.extend([other]),
        }
    }
    out
}
