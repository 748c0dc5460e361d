//! Path resolution over the [`Index`]: what a type name written in some module refers to.

use super::{
    index::{Index, ItemKind, crate_root, is_crate_root},
    paths::path_segments,
};

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// An item of the crate being read, as an index into [`Index::items`].
    Local(usize),
    /// A type from another crate (or std), by canonical path, e.g. `std::vec::Vec`.
    External(String),
}

/// Names in Rust's prelude and the primitive types, with their canonical paths.
fn prelude(name: &str) -> Option<&'static str> {
    Some(match name {
        "Option" => "std::option::Option",
        "Vec" => "std::vec::Vec",
        "String" => "std::string::String",
        "Box" => "std::boxed::Box",
        "Result" => "std::result::Result",
        "bool" => "bool",
        "char" => "char",
        "str" => "str",
        "i8" => "i8",
        "i16" => "i16",
        "i32" => "i32",
        "i64" => "i64",
        "i128" => "i128",
        "isize" => "isize",
        "u8" => "u8",
        "u16" => "u16",
        "u32" => "u32",
        "u64" => "u64",
        "u128" => "u128",
        "usize" => "usize",
        "f32" => "f32",
        "f64" => "f64",
        _ => return None,
    })
}

/// Canonical spellings of re-exported std paths (`std::collections::btree_map::BTreeMap` is
/// the same type as `std::collections::BTreeMap`).
fn canonical_external(path: &str) -> String {
    let path = path.strip_prefix("::").unwrap_or(path);
    let path = match path.split_once("::") {
        Some(("alloc" | "core", rest)) => format!("std::{rest}"),
        _ => path.to_owned(),
    };
    for module in [
        "btree_map",
        "hash_map",
        "btree_set",
        "hash_set",
        "vec_deque",
    ] {
        if let Some(rest) = path.strip_prefix(&format!("std::collections::{module}::")) {
            return format!("std::collections::{rest}");
        }
    }
    kube_reexport(&path).unwrap_or(path)
}

/// kube's re-exports of the types a spec may hold: `kube::api::ObjectMeta` and
/// `kube::core::ObjectMeta` are k8s-openapi's; `kube::core::Duration` is kube-core's.
fn kube_reexport(path: &str) -> Option<String> {
    let (module, name) = path.rsplit_once("::")?;
    let kube_core = matches!(
        module,
        "kube::core"
            | "kube::api"
            | "kube::core::metadata"
            | "kube::core::duration"
            | "kube_core"
            | "kube_core::metadata"
            | "kube_core::duration"
            | "kube_client::api"
            | "kube_client::core"
            | "kube_client::core::metadata"
    );
    if !kube_core {
        return None;
    }
    Some(match name {
        "ObjectMeta" | "ListMeta" => {
            format!("k8s_openapi::apimachinery::pkg::apis::meta::v1::{name}")
        }
        "Duration" => "kube_core::Duration".to_owned(),
        _ => return None,
    })
}

impl Index {
    /// Resolves `segments` as written in `module`: a path to an item, or `Type::name`, an
    /// associated function or constant of an inherent `impl` of the crate's `Type`.
    pub fn resolve(&self, module: &str, segments: &[String]) -> Option<Resolved> {
        let found = Walker::new(self).resolve(module, segments, 0, true);
        if matches!(found, Some(Resolved::Local(_))) {
            return found;
        }
        if let [head @ .., last] = segments
            && !head.is_empty()
            && let Some(ty) = self.local_type(module, head)
            && let Some(item) = self.assoc(ty, last)
        {
            return Some(Resolved::Local(item));
        }
        found
    }

    /// The crate's struct or enum `segments` names in `module`, through type aliases.
    fn local_type(&self, module: &str, segments: &[String]) -> Option<usize> {
        let mut module = module.to_owned();
        let mut segments = segments.to_vec();
        // Each step follows one alias; a cycle of aliases ends here.
        for _ in 0..32 {
            let Resolved::Local(item) = Walker::new(self).resolve(&module, &segments, 0, true)?
            else {
                return None;
            };
            match self.kind(item) {
                ItemKind::Struct(_) | ItemKind::Enum(_) => return Some(item),
                ItemKind::Alias(alias) => {
                    let syn::Type::Path(target) = &*alias.ty else {
                        return None;
                    };
                    segments = path_segments(&target.path);
                    module = self.items[item].module.clone();
                }
                _ => return None,
            }
        }
        None
    }
}

/// The most steps one lookup may take: far above what any crate needs (a name through a few
/// `use`s and globs takes tens), so that no input makes resolution unbounded.
const MAX_STEPS: usize = 10_000;

/// One lookup's walk over the index: the (module, name) pairs whose globs it followed, and the
/// steps it took, so that its work is linear in the uses it follows whatever the globs.
struct Walker<'a> {
    index: &'a Index,
    globbed: std::collections::HashSet<(String, String)>,
    steps: usize,
}

impl<'a> Walker<'a> {
    fn new(index: &'a Index) -> Self {
        Self {
            index,
            globbed: std::collections::HashSet::new(),
            steps: 0,
        }
    }

    /// Resolves `segments` as written in `module`; `globs`: whether a name not found otherwise
    /// may be looked up through the module's glob imports (not for a path that is itself a
    /// glob's expansion: its first segment is the glob's crate, never a name a glob brings).
    fn resolve(
        &mut self,
        module: &str,
        segments: &[String],
        depth: usize,
        globs: bool,
    ) -> Option<Resolved> {
        self.steps += 1;
        if depth > 32 || segments.is_empty() || self.steps > MAX_STEPS {
            return None;
        }
        let first = segments[0].as_str();
        if let Some(relative_to) = first
            .strip_prefix("{relative:")
            .and_then(|s| s.strip_suffix('}'))
        {
            // A `use` path that did not start with crate/self/super: a child module of the
            // module that declared the `use`, else an external crate.
            let rest = &segments[1..];
            if let Some(head) = rest.first()
                && self
                    .index
                    .modules
                    .contains_key(&format!("{relative_to}::{head}"))
            {
                return self.walk(&format!("{relative_to}::{head}"), &rest[1..], depth);
            }
            return self
                .resolve(relative_to, rest, depth + 1, globs)
                .or_else(|| Some(Resolved::External(canonical_external(&rest.join("::")))));
        }
        if first == "crate" {
            return self.walk(crate_root(module), &segments[1..], depth);
        }
        if is_crate_root(first) {
            return self.walk(first, &segments[1..], depth);
        }
        match first {
            "self" => return self.walk(module, &segments[1..], depth),
            "super" => {
                let mut base: Vec<&str> = module.split("::").collect();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    if base.len() > 1 {
                        base.pop();
                    }
                    rest = &rest[1..];
                }
                return self.walk(&base.join("::"), rest, depth);
            }
            "" => {
                return Some(Resolved::External(canonical_external(
                    &segments[1..].join("::"),
                )));
            }
            _ => {}
        }
        let scope = self.index.modules.get(module);
        if let Some(scope) = scope {
            if segments.len() == 1
                && let Some(&item) = scope.items.get(first)
            {
                return Some(Resolved::Local(item));
            }
            if let Some(target) = scope.uses.get(first) {
                let mut full = target.clone();
                full.extend_from_slice(&segments[1..]);
                return self.resolve(module, &full, depth + 1, true);
            }
            if scope.children.iter().any(|c| c == first) {
                return self.walk(&format!("{module}::{first}"), &segments[1..], depth);
            }
        }
        if segments.len() == 1
            && let Some(path) = prelude(first)
        {
            return Some(Resolved::External(path.to_owned()));
        }
        if let Some(scope) = scope.filter(|_| globs) {
            for glob in &scope.globs {
                if let Some(found) = self.resolve_in_glob(module, glob, segments, depth) {
                    return Some(found);
                }
            }
        }
        Some(Resolved::External(canonical_external(&segments.join("::"))))
    }

    fn resolve_in_glob(
        &mut self,
        module: &str,
        glob: &[String],
        segments: &[String],
        depth: usize,
    ) -> Option<Resolved> {
        let mut full = glob.to_vec();
        full.extend_from_slice(segments);
        let local_glob = glob.first().is_some_and(|s| is_crate_root(s));
        match self.resolve(module, &full, depth + 1, false)? {
            Resolved::Local(item) => Some(Resolved::Local(item)),
            // Through a glob of this crate, a name resolves only via an explicit `use` there.
            found @ Resolved::External(_) if local_glob => Some(found),
            // An external glob (`use k8s_openapi::api::core::v1::*`) can only be checked against
            // the types kopgen knows.
            Resolved::External(path)
                if super::library::known::leaf(&path).is_some()
                    || super::library::known::Generic::from_path(&path).is_some() =>
            {
                Some(Resolved::External(path))
            }
            Resolved::External(_) => None,
        }
    }

    /// Follows `rest` from module `base` of this crate.
    fn walk(&mut self, base: &str, rest: &[String], depth: usize) -> Option<Resolved> {
        let (last, middle) = rest.split_last()?;
        let mut module = base.to_owned();
        for (index, segment) in middle.iter().enumerate() {
            let child = format!("{module}::{segment}");
            if self.index.modules.contains_key(&child) {
                module = child;
                continue;
            }
            // A re-exported module (`pub use other::module;`).
            let target = self.index.modules.get(&module)?.uses.get(segment)?;
            let mut full = target.clone();
            full.extend_from_slice(&middle[index + 1..]);
            full.push(last.clone());
            return self.resolve(&module, &full, depth + 1, true);
        }
        let scope = self.index.modules.get(&module)?;
        if let Some(&item) = scope.items.get(last) {
            return Some(Resolved::Local(item));
        }
        if let Some(target) = scope.uses.get(last) {
            return self.resolve(&module, target, depth + 1, true);
        }
        // Each module's globs are followed once per name: globs that re-export each other
        // (`pub use a::*` in b, `pub use b::*` in a) would otherwise be walked round and round.
        if !self.globbed.insert((module.clone(), last.clone())) {
            return None;
        }
        for glob in &scope.globs {
            let mut full = glob.clone();
            full.push(last.clone());
            if let Some(Resolved::Local(item)) = self.resolve(&module, &full, depth + 1, true) {
                return Some(Resolved::Local(item));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_external;

    #[test]
    fn kube_reexports_are_the_types_they_name() {
        let meta = "k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta";
        for path in [
            "kube::api::ObjectMeta",
            "kube::core::ObjectMeta",
            "::kube::core::metadata::ObjectMeta",
            "kube_core::ObjectMeta",
        ] {
            assert_eq!(canonical_external(path), meta, "{path}");
        }
        assert_eq!(
            canonical_external("kube::core::Duration"),
            "kube_core::Duration"
        );
        // Names kube does not re-export from k8s-openapi stay as written.
        assert_eq!(canonical_external("kube::core::Thing"), "kube::core::Thing");
        assert_eq!(
            canonical_external("alloc::collections::btree_map::BTreeMap"),
            "std::collections::BTreeMap"
        );
    }
}
