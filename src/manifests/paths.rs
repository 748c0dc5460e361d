//! The parts of syn paths that name resolution reads: segments as strings, and type arguments.

/// The segments of a syn path, as strings (a leading `::` becomes an empty first segment).
pub fn path_segments(path: &syn::Path) -> Vec<String> {
    let mut segments = Vec::new();
    if path.leading_colon.is_some() {
        segments.push(String::new());
    }
    segments.extend(path.segments.iter().map(|s| s.ident.to_string()));
    segments
}

/// The segments of a path expression, with `<Type>::name` read as `Type::name` (an associated
/// item of `Type`; a trait's `<Type as Trait>::name` is left to the caller).
pub fn expr_path_segments(path: &syn::ExprPath) -> Vec<String> {
    match &path.qself {
        Some(qself) if qself.position == 0 => match &*qself.ty {
            syn::Type::Path(ty) if ty.qself.is_none() => {
                let mut segments = path_segments(&ty.path);
                segments.extend(path.path.segments.iter().map(|s| s.ident.to_string()));
                segments
            }
            _ => path_segments(&path.path),
        },
        _ => path_segments(&path.path),
    }
}

/// The type arguments of a path's last segment (lifetimes and constants left out).
pub fn type_args(path: &syn::Path) -> Vec<&syn::Type> {
    match path.segments.last().map(|s| &s.arguments) {
        Some(syn::PathArguments::AngleBracketed(a)) => a
            .args
            .iter()
            .filter_map(|arg| match arg {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
