//! Reads Rust sources with syn into an index of modules: the items each declares and the
//! names its `use` declarations bring into scope. Path resolution works on this index, the
//! way rustc's name resolution would for the subset of Rust that API types are written in.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use syn::Item;

use super::{cfg::Cfg, discover::Source, error::SourceError, modtree};

mod uses;

/// An item that can carry a schema or be referenced from one.
#[derive(Debug, Clone)]
pub enum ItemKind {
    Struct(syn::ItemStruct),
    Enum(syn::ItemEnum),
    Alias(syn::ItemType),
    Fn(syn::ItemFn),
    Const(syn::ItemConst),
    /// Read for `#[validate(regex(path = ...))]`, whose pattern a static regex holds.
    Static(syn::ItemStatic),
}

#[derive(Debug, Clone)]
pub struct IndexedItem {
    /// Canonical module path, e.g. `crate::api::apps::v1alpha1`.
    pub module: String,
    pub name: String,
    pub file: usize,
    pub kind: ItemKind,
}

#[derive(Debug, Default, Clone)]
pub struct Module {
    /// Items declared here, by name, as indexes into [`Index::items`]. Types and values share
    /// the map; kopgen only looks up types and functions, which rarely collide.
    pub items: HashMap<String, usize>,
    /// `use` imports: local name → absolute path (`crate::...` or an external crate path).
    pub uses: HashMap<String, Vec<String>>,
    /// `use` path::* imports, as absolute paths.
    pub globs: Vec<Vec<String>>,
    /// Child modules declared here.
    pub children: Vec<String>,
    /// Those of [`Module::children`] declared without `pub`: unreachable from another crate.
    pub private_children: Vec<String>,
    /// Names and globs imported with `pub use`: what another crate reaches through here.
    pub exported: Vec<String>,
    pub exported_globs: Vec<Vec<String>>,
    /// Child modules declared under a false `cfg` (`#[cfg(test)] mod name;`), in files of
    /// their own: not part of the crate `crd()` runs in, so their custom resources are not the
    /// operator's.
    pub excluded_children: Vec<String>,
    /// The versions a stackable-versioned `#[versioned(version(..))]` on this module declares:
    /// the macro replaces the module with one module per version (see `attrs::versioned`).
    pub versions: Vec<String>,
}

/// The modules and items of the sources read, all parsed up front.
#[derive(Debug, Default)]
pub struct Index {
    /// The configuration the crate is compiled under: items under a false `cfg` are left out.
    pub cfg: Cfg,
    pub files: Vec<PathBuf>,
    /// The module each file defines (`crate::api`), by file.
    pub file_modules: Vec<String>,
    /// Items declared in modules, then the associated functions and constants of `impl` blocks
    /// (named `Type::name`, in no module's map: they are reached through [`Index::assoc`]).
    pub items: Vec<IndexedItem>,
    pub modules: HashMap<String, Module>,
    /// Hand-written `impl Default for T { fn default() -> Self { .. } }`, by `T`'s item.
    pub(super) default_impls: HashMap<usize, DefaultImpl>,
    /// Associated functions and constants of inherent `impl T { .. }` blocks: (`T`'s item,
    /// name) → item.
    pub(super) assoc: HashMap<(usize, String), usize>,
    /// Hand-written `impl JsonSchema for T` blocks, by `T`'s item: (file, where the impl is).
    /// Such a schema is code kopgen does not run, so the kind is derived by compiling.
    pub(super) schema_impls: HashMap<usize, (usize, proc_macro2::Span)>,
    /// `impl` blocks read but not yet tied to their type: a type's name resolves only once
    /// every file is in the index (then the `impls` stage ties them).
    pub(super) pending_impls: Vec<PendingImpl>,
    /// Every `merge_crds(vec![A::crd(), ..], "version")` call in the crate's functions.
    pub merge_calls: Vec<super::merge_calls::MergeCall>,
    /// `mod name;` declarations at the top of a file, whose file must exist.
    mod_decls: Vec<ModDecl>,
    /// The items of files that another file `include!`s, by file, until the `include!` is met.
    included: HashMap<usize, Vec<Item>>,
    /// Item-level macro calls the index cannot see into.
    opaque: Vec<modtree::Opaque>,
    /// The crate's `macro_rules!` whose bodies mention `CustomResource`.
    kind_macros: Vec<String>,
    /// Every file read, by normalized path (see [`modtree::by_path`]).
    by_path: HashMap<PathBuf, usize>,
    /// Modules nested deeper than [`MAX_MODULE_DEPTH`].
    depth_errors: Vec<SourceError>,
    /// (file, module) for each module a file's items were read into: its own, or the module
    /// that `include!`s it. A file is compiled when one of them is.
    pub(super) file_scopes: Vec<(usize, String)>,
    /// (file, first line, last line), 1-based, of each item left out under a false `cfg`.
    pub(super) excluded_lines: Vec<(usize, usize, usize)>,
}

/// The deepest module path kopgen reads (`crate::a::b::..`): far beyond any real crate.
pub const MAX_MODULE_DEPTH: usize = 64;

/// `mod name;` at the top of file `file`.
#[derive(Debug)]
struct ModDecl {
    file: usize,
    name: String,
    span: proc_macro2::Span,
}

/// A hand-written `Default` of a type of the crate.
#[derive(Debug)]
pub struct DefaultImpl {
    /// The module of the `impl`, where the names in its body resolve.
    pub module: String,
    pub file: usize,
    /// `fn default()`, with `Self` replaced by the type's path as the `impl` writes it.
    pub function: syn::ImplItemFn,
}

/// An `impl` block as the index reads it; the `impls` stage ties it to its type.
#[derive(Debug)]
pub struct PendingImpl {
    pub module: String,
    pub file: usize,
    pub item: syn::ItemImpl,
}

impl Index {
    /// Parses every source; every file's syntax error is reported, not just the first.
    pub fn build(sources: &[Source], cfg: Cfg) -> Result<Self, Vec<SourceError>> {
        let (index, errors) = Self::read(sources, cfg);
        if errors.is_empty() {
            Ok(index)
        } else {
            Err(errors)
        }
    }

    /// The index of `sources` with every error found in them, for callers that can use an
    /// index of code kopgen cannot derive from (what is compiled, where the markers are).
    pub fn read(sources: &[Source], cfg: Cfg) -> (Self, Vec<SourceError>) {
        let mut index = Self {
            cfg,
            ..Self::default()
        };
        let mut errors = Vec::new();
        let mut parsed = Vec::with_capacity(sources.len());
        for source in sources {
            match parse_file(&source.path, &source.text) {
                Ok(mut file) => {
                    index.cfg.expand_cfg_attrs(&mut file);
                    parsed.push(Some(file));
                }
                Err(e) => {
                    errors.push(e);
                    parsed.push(None);
                }
            }
        }
        index.files = sources.iter().map(|s| s.path.clone()).collect();
        index.file_modules = sources.iter().map(|s| s.module.clone()).collect();
        index.by_path = modtree::by_path(&index.files);
        errors.extend(modtree::follow_path_attributes(
            &index.files,
            &index.by_path,
            &mut index.file_modules,
            &parsed,
            &index.cfg,
        ));
        for i in modtree::included_files(&index.files, &index.by_path, &parsed) {
            if let Some(file) = parsed[i].take() {
                index.included.insert(i, file.items);
            }
        }
        for (i, file) in parsed.into_iter().enumerate() {
            if let Some(file) = file {
                index.add_parsed(i, file);
            }
        }
        errors.extend(index.missing_module_files());
        errors.extend(std::mem::take(&mut index.depth_errors));
        let opaque = std::mem::take(&mut index.opaque);
        errors.extend(
            opaque
                .iter()
                .filter(|o| index.is_compiled(&o.module))
                .filter_map(|o| o.error(&index.files, &index.kind_macros)),
        );
        (index, errors)
    }

    /// A `mod name;` whose file is neither `name.rs` nor `name/mod.rs` beside its declaring file
    /// (as rustc looks for it): an error there, as cargo would give, rather than types that
    /// seem not to exist.
    fn missing_module_files(&self) -> Vec<SourceError> {
        let mut errors = Vec::new();
        for decl in &self.mod_decls {
            // A module read from memory (sources kopgen is about to write) has its file.
            let child = format!("{}::{}", self.file_modules[decl.file], decl.name);
            if self.file_modules.contains(&child) {
                continue;
            }
            let file = &self.files[decl.file];
            let dir = match file.file_stem().and_then(|s| s.to_str()) {
                Some("mod" | "lib" | "main") => file.parent().map(Path::to_path_buf),
                Some(stem) => file.parent().map(|p| p.join(stem)),
                None => None,
            };
            let Some(dir) = dir else { continue };
            let flat = dir.join(format!("{}.rs", decl.name));
            let nested = dir.join(&decl.name).join("mod.rs");
            if !flat.is_file() && !nested.is_file() {
                errors.push(
                    SourceError::at(
                        file,
                        decl.span,
                        format!("file not found for module `{}`", decl.name),
                    )
                    .help(format!(
                        "create {} or {}, or remove the declaration",
                        flat.display(),
                        nested.display()
                    )),
                );
            }
        }
        errors
    }

    /// The associated function or constant `name` of the type `ty` (an inherent `impl`).
    pub fn assoc(&self, ty: usize, name: &str) -> Option<usize> {
        self.assoc.get(&(ty, name.to_owned())).copied()
    }

    /// Adds parsed file `file` (already in [`Index::files`], with its module).
    fn add_parsed(&mut self, file_index: usize, file: syn::File) {
        let module = self.file_modules[file_index].clone();
        self.merge_calls.extend(super::merge_calls::find(
            &self.cfg, &module, file_index, &file,
        ));
        self.add_items(&module, file.items, file_index);
    }

    /// Where item `item`'s name is written, for errors about the item.
    pub fn ident_span(&self, item: usize) -> proc_macro2::Span {
        match self.items.get(item).map(|i| &i.kind) {
            Some(ItemKind::Struct(s)) => s.ident.span(),
            Some(ItemKind::Enum(e)) => e.ident.span(),
            Some(ItemKind::Alias(a)) => a.ident.span(),
            Some(ItemKind::Fn(f)) => f.sig.ident.span(),
            Some(ItemKind::Const(c)) => c.ident.span(),
            Some(ItemKind::Static(s)) => s.ident.span(),
            None => proc_macro2::Span::call_site(),
        }
    }

    /// The body of item `item` (an index this index handed out).
    pub fn kind(&self, item: usize) -> &ItemKind {
        &self.items[item].kind
    }

    fn add_items(&mut self, module: &str, items: Vec<Item>, file: usize) {
        self.modules.entry(module.to_owned()).or_default();
        self.file_scopes.push((file, module.to_owned()));
        for item in items {
            // Items under a false `cfg` (tests, other features) are not in the crate `crd()`
            // runs in.
            if !self.cfg.enabled(item_attrs(&item)) {
                let span = syn::spanned::Spanned::span(&item);
                self.excluded_lines
                    .push((file, span.start().line, span.end().line));
                if let Item::Mod(m) = &item
                    && m.content.is_none()
                {
                    self.module_mut(module)
                        .excluded_children
                        .push(m.ident.to_string());
                }
                continue;
            }
            let (name, kind) = match item {
                Item::Struct(s) => (s.ident.to_string(), ItemKind::Struct(s)),
                Item::Enum(e) => (e.ident.to_string(), ItemKind::Enum(e)),
                Item::Type(t) => (t.ident.to_string(), ItemKind::Alias(t)),
                Item::Fn(f) => (f.sig.ident.to_string(), ItemKind::Fn(f)),
                Item::Const(c) => (c.ident.to_string(), ItemKind::Const(c)),
                Item::Static(s) => (s.ident.to_string(), ItemKind::Static(s)),
                Item::Use(u) => {
                    let public = matches!(u.vis, syn::Visibility::Public(_));
                    let mut prefix = Vec::new();
                    self.add_use(module, &u.tree, &mut prefix, public);
                    continue;
                }
                Item::Impl(imp) => {
                    // Associated items under a false `cfg` (a `#[cfg(test)] fn`) hold no
                    // markers either.
                    for item in &imp.items {
                        let attrs = match item {
                            syn::ImplItem::Fn(f) => &f.attrs,
                            syn::ImplItem::Const(c) => &c.attrs,
                            syn::ImplItem::Type(t) => &t.attrs,
                            syn::ImplItem::Macro(m) => &m.attrs,
                            _ => continue,
                        };
                        if !self.cfg.enabled(attrs) {
                            let span = syn::spanned::Spanned::span(item);
                            self.excluded_lines
                                .push((file, span.start().line, span.end().line));
                        }
                    }
                    self.pending_impls.push(PendingImpl {
                        module: module.to_owned(),
                        file,
                        item: imp,
                    });
                    continue;
                }
                Item::Macro(m) => {
                    self.add_macro(module, m, file);
                    continue;
                }
                Item::Mod(m) => {
                    let child = format!("{module}::{}", m.ident);
                    self.module_mut(module).children.push(m.ident.to_string());
                    if let Some(versioned) = super::attrs::versioned(&m.attrs) {
                        self.module_mut(&child).versions = versioned.versions;
                    }
                    if !matches!(m.vis, syn::Visibility::Public(_)) {
                        self.module_mut(module)
                            .private_children
                            .push(m.ident.to_string());
                    }
                    if let Some((_, inner)) = m.content {
                        // Each level's path holds the levels above it: without a bound, memory
                        // would grow with the square of the nesting.
                        if child.matches("::").count() > MAX_MODULE_DEPTH {
                            self.depth_errors.push(
                                SourceError::at(
                                    &self.files[file],
                                    m.ident.span(),
                                    format!(
                                        "modules nest more than {MAX_MODULE_DEPTH} levels deep"
                                    ),
                                )
                                .help("flatten the module tree; no API needs this depth"),
                            );
                            continue;
                        }
                        self.add_items(&child, inner, file);
                    } else {
                        if self.file_modules.get(file).is_some_and(|m| m == module)
                            && !m.attrs.iter().any(|a| a.path().is_ident("path"))
                        {
                            self.mod_decls.push(ModDecl {
                                file,
                                name: m.ident.to_string(),
                                span: m.ident.span(),
                            });
                        }
                        self.modules.entry(child).or_default();
                    }
                    continue;
                }
                _ => continue,
            };
            let at = self.items.len();
            self.module_mut(module).items.insert(name.clone(), at);
            self.items.push(IndexedItem {
                module: module.to_owned(),
                name,
                file,
                kind,
            });
        }
    }

    /// An item-level macro: `macro_rules!` noted if it could define kinds, `include!` of a
    /// file kopgen reads spliced in, any other call kept to be judged once the module tree is
    /// known.
    fn add_macro(&mut self, module: &str, item: syn::ItemMacro, file: usize) {
        let mac = &item.mac;
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if name == "macro_rules" {
            if let Some(ident) = &item.ident
                && modtree::mentions_custom_resource(&mac.tokens)
            {
                self.kind_macros.push(ident.to_string());
            }
            return;
        }
        if let Some(&t) = modtree::include_target(mac, &self.files[file])
            .as_ref()
            .and_then(|target| self.by_path.get(target))
            && let Some(items) = self.included.remove(&t)
        {
            self.add_items(module, items, t);
            return;
        }
        self.opaque.push(modtree::Opaque {
            module: module.to_owned(),
            file,
            span: syn::spanned::Spanned::span(&mac.path),
            include: name == "include",
            generated: name == "include" && mac.tokens.to_string().contains("OUT_DIR"),
            mentions: modtree::mentions_custom_resource(&mac.tokens),
            name,
        });
    }

    /// Whether `module` is compiled into the crate: inside no module declared under a false
    /// `cfg`, and, where the crate root (`lib.rs`) was read, reached from it by `mod`
    /// declarations (a file no `mod` names is not compiled).
    pub fn is_compiled(&self, module: &str) -> bool {
        let root = crate_root(module);
        let has_root = self.file_modules.iter().any(|m| m == root);
        let mut parent = root.to_owned();
        for segment in module.split("::").skip(1) {
            let Some(declared) = self.modules.get(&parent) else {
                return !has_root;
            };
            if declared.excluded_children.iter().any(|c| c == segment)
                || (has_root && !declared.children.iter().any(|c| c == segment))
            {
                return false;
            }
            parent.push_str("::");
            parent.push_str(segment);
        }
        true
    }

    /// A path another crate can name `module::name` by: the module itself when every module
    /// on the way is `pub`, else the nearest module above that re-exports the item with `pub
    /// use` (as `pub use batch::*;` in a scaffolded version module does).
    pub fn public_path(&self, module: &str, name: &str) -> Option<String> {
        let mut module = module.to_owned();
        loop {
            if self.is_public(&module) {
                return Some(format!("{module}::{name}"));
            }
            let (parent, child) = module.rsplit_once("::")?;
            let declared = self.modules.get(parent)?;
            // `pub use child::*` names the child module relative to the parent.
            let relative = [format!("{{relative:{parent}}}"), child.to_owned()];
            let names_module = |path: &[String]| {
                path == relative || path.iter().map(String::as_str).eq(module.split("::"))
            };
            let named = declared.exported.iter().any(|n| n == name)
                && declared.uses.get(name).is_some_and(|path| {
                    path.last() == Some(&name.to_owned()) && names_module(&path[..path.len() - 1])
                });
            let globbed = declared
                .exported_globs
                .iter()
                .any(|glob| names_module(glob));
            if !named && !globbed {
                return None;
            }
            module = parent.to_owned();
        }
    }

    /// Whether every module from the crate root down to `module` is `pub`.
    fn is_public(&self, module: &str) -> bool {
        let mut parent = String::new();
        for segment in module.split("::") {
            if !parent.is_empty() {
                let private = self
                    .modules
                    .get(&parent)
                    .is_some_and(|m| m.private_children.iter().any(|c| c == segment));
                if private {
                    return false;
                }
                parent.push_str("::");
            }
            parent.push_str(segment);
        }
        true
    }

    fn module_mut(&mut self, module: &str) -> &mut Module {
        self.modules.entry(module.to_owned()).or_default()
    }

    pub fn file(&self, item: &IndexedItem) -> &Path {
        &self.files[item.file]
    }

    /// The hand-written `impl Default` of the crate's type `item`, if there is one.
    pub fn default_impl(&self, item: usize) -> Option<&DefaultImpl> {
        self.default_impls.get(&item)
    }

    /// The item `name` declared in `module`.
    pub fn item_in(&self, module: &str, name: &str) -> Option<usize> {
        self.modules.get(module)?.items.get(name).copied()
    }
}

/// The attributes of the items the index reads.
pub(super) fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Struct(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Const(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// Parses `text` (the contents of `path`) into a syn file, with the error located.
pub fn parse_file(path: &Path, text: &str) -> Result<syn::File, SourceError> {
    syn::parse_file(text).map_err(|e| {
        // Conflict markers a merge left (`kopgen upgrade`, git) say more than where the parser
        // stumbled on them.
        let marker = (text.lines().enumerate())
            .find(|(_, line)| line.starts_with("<<<<<<< ") || line.starts_with(">>>>>>> "));
        match marker {
            Some((line, _)) => SourceError {
                line: line + 1,
                column: 1,
                ..SourceError::at(
                    path,
                    e.span(),
                    "unresolved merge conflict markers (`<<<<<<<`, `=======`, `>>>>>>>`)",
                )
            }
            .help("resolve the conflict (keep your lines, this kopgen's, or both) and remove the markers"),
            None => SourceError::at(path, e.span(), format!("cannot parse Rust: {e}"))
                .help("kopgen reads the source without compiling it; fix the syntax error (cargo check shows it too)"),
        }
    })
}

/// The crate root a module belongs to: its first segment (`crate`, or `crate@<path>` when
/// several roots are read at once; see [`super::discover::sources`]).
pub fn crate_root(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// Whether a path's first segment names a crate root.
pub fn is_crate_root(segment: &str) -> bool {
    segment == "crate" || segment.starts_with("crate@")
}
