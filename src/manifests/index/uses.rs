//! The names a module's `use` declarations bring into scope, as absolute paths: what path
//! resolution looks up before the module's own items.

use syn::UseTree;

use super::{Index, crate_root};

impl Index {
    /// Records the names `tree` (a `use` declaration, below `prefix`) brings into `module`;
    /// those of a `pub use` are also what another crate reaches through `module`.
    pub(super) fn add_use(
        &mut self,
        module: &str,
        tree: &UseTree,
        prefix: &mut Vec<String>,
        public: bool,
    ) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.add_use(module, &p.tree, prefix, public);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last().cloned() {
                        let path = absolutize(module, prefix);
                        self.import(module, last, path, public);
                    }
                } else {
                    let mut full = prefix.clone();
                    full.push(name.clone());
                    let path = absolutize(module, &full);
                    self.import(module, name, path, public);
                }
            }
            UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                let path = absolutize(module, &full);
                self.import(module, r.rename.to_string(), path, public);
            }
            UseTree::Glob(_) => {
                let path = absolutize(module, prefix);
                let declared = self.module_mut(module);
                if public {
                    declared.exported_globs.push(path.clone());
                }
                declared.globs.push(path);
            }
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.add_use(module, tree, prefix, public);
                }
            }
        }
    }

    fn import(&mut self, module: &str, name: String, path: Vec<String>, public: bool) {
        let declared = self.module_mut(module);
        if public {
            declared.exported.push(name.clone());
        }
        declared.uses.insert(name, path);
    }
}

/// Makes a `use` path absolute: `crate::`, `self::`, `super::` are resolved against `module`;
/// anything else stays as written (an external crate, or a child module, which resolution
/// checks first).
fn absolutize(module: &str, path: &[String]) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    let mut iter = path.iter().peekable();
    match iter.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.push(crate_root(module).into());
            iter.next();
        }
        Some("self") => {
            segments.extend(module.split("::").map(str::to_owned));
            iter.next();
        }
        Some("super") => {
            segments.extend(module.split("::").map(str::to_owned));
            while iter.peek().map(|s| s.as_str()) == Some("super") {
                iter.next();
                if segments.len() > 1 {
                    segments.pop();
                }
            }
        }
        _ => {
            // A path like `v1alpha1::Blog` inside `crate::api::apps` names a child module
            // (2018 uniform paths); mark it relative, resolution decides.
            segments.push(format!("{{relative:{module}}}"));
        }
    }
    segments.extend(iter.cloned());
    segments
}
