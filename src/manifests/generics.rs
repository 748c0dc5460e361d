//! Generic parameters: what `T` stands for while a generic item of the crate is expanded
//! (`Page<Vec<T>>` inside `List<T>` resolves `T` where it was written).

use std::collections::HashMap;

use syn::Type;

/// A generic parameter's argument: the type as written, where it was written, and the
/// parameters in scope there (so `Page<Vec<T>>` inside a generic item resolves `T` too).
#[derive(Clone)]
pub struct Binding {
    pub ty: Type,
    pub module: String,
    pub env: std::rc::Rc<Env>,
}

/// Generic parameters of the item being expanded, bound to the types they were given.
pub type Env = HashMap<String, Binding>;

/// What a path naming a generic parameter (`T`) stands for in `env`.
pub fn bound<'e>(env: &'e Env, path: &syn::Path) -> Option<&'e Binding> {
    env.get(&path.get_ident()?.to_string())
}

/// The environment of an item with `generics` used with `args`, written in `module` under
/// `env`: each type parameter bound to the type its argument denotes where it was written.
/// `None` when the arguments do not match the parameters in number.
pub fn bind_generics(
    generics: &syn::Generics,
    args: &[&Type],
    module: &str,
    env: &Env,
) -> Option<Env> {
    if generics.type_params().count() != args.len() {
        return None;
    }
    let outer = std::rc::Rc::new(env.clone());
    Some(
        generics
            .type_params()
            .zip(args)
            .map(|(param, arg)| {
                let binding = match arg {
                    Type::Path(p) => bound(env, &p.path).cloned(),
                    _ => None,
                };
                let binding = binding.unwrap_or_else(|| Binding {
                    ty: (*arg).clone(),
                    module: module.to_owned(),
                    env: outer.clone(),
                });
                (param.ident.to_string(), binding)
            })
            .collect(),
    )
}

/// A stable key for generic arguments: each parameter's type, as written, and its module.
pub fn key(env: &Env) -> String {
    use quote::ToTokens;
    let mut parts: Vec<String> = env
        .iter()
        .map(|(param, b)| {
            format!(
                "{param}={}@{}{{{}}}",
                b.ty.to_token_stream(),
                b.module,
                key(&b.env)
            )
        })
        .collect();
    parts.sort();
    parts.join(";")
}
