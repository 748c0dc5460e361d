//! Where a Rust file names the items of one API version module (`<group>::<version>`), however
//! it spells them: the full path, an alias of the module or of the item (`use
//! crate::api::apps::{v1alpha1 as va}; va::Blog`), a glob import, or inside a macro call. So
//! that `delete api` refuses exactly when code would stop building, and never for a kind of the
//! same name in another group.

use std::collections::BTreeMap;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// What is about to go: the items of module `group::version` (and, if `module_gone`, the
/// module itself).
pub struct Target<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub items: &'a [String],
    pub module_gone: bool,
}

/// The first line of `text` that names something of `target`; `Err(())` if the file does not
/// parse as Rust (the caller falls back to reading words). `inside`: the file is in the
/// module's own directory, where its items are in scope unqualified.
pub fn first_use(text: &str, target: &Target, inside: bool) -> Result<Option<usize>, ()> {
    let file = syn::parse_file(text).map_err(|_| ())?;
    let mut uses = Uses::default();
    uses.visit_file(&file);
    let glob = inside
        || uses
            .globs
            .iter()
            .any(|path| ends_with_module(&uses.expand(path), target));
    let mut first: Option<usize> = None;
    let mut found = |line: usize| first = Some(first.map_or(line, |f| f.min(line)));
    for (line, path) in &uses.leaves {
        if names(path, target) {
            found(*line);
        }
    }
    for (line, path) in &uses.paths {
        let expanded = uses.expand(path);
        let bare_item = path.len() == 1
            && target.items.contains(&path[0])
            && !uses.aliases.contains_key(&path[0])
            && glob;
        if bare_item || names(&expanded, target) {
            found(*line);
        }
    }
    Ok(first)
}

/// Whether `path` names an item of `target`, or the module when it goes.
fn names(path: &[String], target: &Target) -> bool {
    path.windows(2).enumerate().any(|(at, pair)| {
        pair[0] == target.group
            && pair[1] == target.version
            && match path.get(at + 2) {
                Some(item) => target.items.contains(item) || target.module_gone,
                None => target.module_gone,
            }
    })
}

fn ends_with_module(path: &[String], target: &Target) -> bool {
    path.len() >= 2
        && path[path.len() - 2] == target.group
        && path[path.len() - 1] == target.version
}

/// The `use` declarations of a file and every path it writes, each with its line.
#[derive(Default)]
struct Uses {
    /// Local name → the path it stands for.
    aliases: BTreeMap<String, Vec<String>>,
    /// The modules imported with `*`.
    globs: Vec<Vec<String>>,
    /// Every path a `use` imports, with its line.
    leaves: Vec<(usize, Vec<String>)>,
    /// Every other path (types, expressions, patterns, macro arguments), with its line.
    paths: Vec<(usize, Vec<String>)>,
}

impl Uses {
    /// `path` with its first segment replaced by what an alias stands for.
    fn expand(&self, path: &[String]) -> Vec<String> {
        match path.first().and_then(|first| self.aliases.get(first)) {
            Some(full) => full.iter().chain(&path[1..]).cloned().collect(),
            None => path.to_vec(),
        }
    }

    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.tree(prefix, &path.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let full: Vec<String> = prefix
                    .iter()
                    .cloned()
                    .chain([name.ident.to_string()])
                    .collect();
                if name.ident != "self" {
                    self.aliases.insert(name.ident.to_string(), full.clone());
                } else if let Some(last) = prefix.last() {
                    self.aliases.insert(last.clone(), prefix.clone());
                }
                self.leaves.push((line, full));
            }
            syn::UseTree::Rename(rename) => {
                let full: Vec<String> = prefix
                    .iter()
                    .cloned()
                    .chain([rename.ident.to_string()])
                    .collect();
                let full = match full.last().map(String::as_str) {
                    Some("self") => prefix.clone(),
                    _ => full,
                };
                self.aliases.insert(rename.rename.to_string(), full.clone());
                self.leaves.push((line, full));
            }
            syn::UseTree::Glob(_) => self.globs.push(prefix.clone()),
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.tree(prefix, item, line);
                }
            }
        }
    }

    /// The paths inside a macro call's tokens: `a::b::C` and single identifiers.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut line = 0;
        let mut colons = 0;
        let flush = |current: &mut Vec<String>, line: usize, paths: &mut Vec<_>| {
            if !current.is_empty() {
                paths.push((line, std::mem::take(current)));
            }
        };
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => {
                    if colons != 2 {
                        flush(&mut current, line, &mut self.paths);
                        line = ident.span().start().line;
                    }
                    current.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' && !current.is_empty() => {
                    colons += 1;
                }
                TokenTree::Group(group) => {
                    flush(&mut current, line, &mut self.paths);
                    colons = 0;
                    self.tokens(group.stream());
                }
                _ => {
                    flush(&mut current, line, &mut self.paths);
                    colons = 0;
                }
            }
        }
        flush(&mut current, line, &mut self.paths);
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let line = item.use_token.span.start().line;
        self.tree(&mut Vec::new(), &item.tree, line);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.paths.push((line, segments));
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blog(text: &str, module_gone: bool) -> Option<usize> {
        let items = [
            "Blog".to_owned(),
            "BlogSpec".to_owned(),
            "BlogStatus".to_owned(),
        ];
        let target = Target {
            group: "apps",
            version: "v1alpha1",
            items: &items,
            module_gone,
        };
        first_use(text, &target, false).expect("parses")
    }

    #[test]
    fn every_spelling_of_a_use_is_found_and_no_other_kind() {
        let cases: &[(&str, Option<usize>)] = &[
            (
                "use crate::api::apps::v1alpha1::Blog;\nfn f() {}\n",
                Some(1),
            ),
            (
                "use crate::api::apps::{v1alpha1 as va};\n\nfn f(_: va::Blog) {}\n",
                Some(3),
            ),
            (
                "use crate::api::apps::v1alpha1 as va;\n\nfn f(_: va::BlogSpec) {}\n",
                Some(3),
            ),
            (
                "use crate::api::apps::v1alpha1::*;\n\nfn f() -> Blog { todo!() }\n",
                Some(3),
            ),
            (
                "fn f() {\n    let _ = vec![crate::api::apps::v1alpha1::Blog::default()];\n}\n",
                Some(2),
            ),
            // Another group's Blog, and this version's other kinds, are not uses.
            (
                "use crate::api::web::v1::Blog;\nuse crate::api::apps::v1alpha1::Comment;\nfn f(_: Blog, _: Comment) {}\n",
                None,
            ),
            (
                "use crate::api::apps::v1alpha1::*;\nuse crate::api::web::v1::Blog;\nfn f(_: Blog) {}\n",
                None,
            ),
        ];
        for (text, line) in cases {
            assert_eq!(blog(text, false), *line, "{text}");
        }
        // With the version gone, any use of the module is one.
        let text = "use crate::api::apps::v1alpha1::Comment;\n";
        assert_eq!(blog(text, false), None);
        assert_eq!(blog(text, true), Some(1));
    }
}
