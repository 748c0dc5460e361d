//! Reads Rust sources with syn into an index of modules: the items each declares and the
//! names its `use` declarations bring into scope. Path resolution works on this index, the
//! way rustc's name resolution would for the subset of Rust that API types are written in.

use std::{
    cell::{OnceCell, RefCell},
    collections::HashMap,
    ops::Range,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use syn::{Item, UseTree};
use xxhash_rust::xxh3::Xxh3;

use super::error::SourceError;

/// An item that can carry a schema or be referenced from one.
#[derive(Debug, Clone, Default)]
pub enum ItemKind {
    Struct(syn::ItemStruct),
    Enum(syn::ItemEnum),
    Alias(syn::ItemType),
    Fn(syn::ItemFn),
    Const(syn::ItemConst),
    /// Read for `#[validate(regex(path = ...))]`, whose pattern a static regex holds.
    Static(syn::ItemStatic),
    /// The body of an item whose file could not be read again (an incremental run whose
    /// cache disagrees with the source): every use is an error, and the caller then derives
    /// everything from scratch.
    #[default]
    Unloaded,
}

/// What kind of item a name denotes, known without its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemTag {
    Struct,
    Enum,
    Alias,
    Fn,
    Const,
    Static,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexedItem {
    /// Canonical module path, e.g. `crate::api::apps::v1alpha1`.
    pub module: String,
    pub name: String,
    pub tag: ItemTag,
    pub file: usize,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
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
    /// Child modules declared `#[cfg(test)] mod name;`, in files of their own: not part of the
    /// crate `crd()` runs in, so their custom resources are not the operator's.
    #[serde(default)]
    pub test_children: Vec<String>,
}

/// A hand-written `impl Default for T`, by the file that holds it.
#[derive(Debug, Default)]
struct DefaultImpl {
    file: usize,
    body: OnceCell<syn::ImplItemFn>,
}

/// A file whose syntax tree is not loaded yet (incremental runs parse a file only when a kind
/// that is derived again reads one of its items).
#[derive(Debug)]
struct Pending {
    module: String,
    text: String,
}

/// The modules and items of a crate. Names, `use` declarations and module structure are always
/// complete, so path resolution never depends on which files are loaded; item bodies may be
/// loaded lazily, and every body read is recorded (see [`Index::take_touched`]) so that an
/// incremental run knows which files each CRD depends on.
#[derive(Debug, Default)]
pub struct Index {
    pub files: Vec<PathBuf>,
    pub items: Vec<IndexedItem>,
    pub modules: HashMap<String, Module>,
    /// Hand-written `impl Default for T { fn default() -> Self { .. } }`, by (module, `T`):
    /// kopgen folds a body that is one foldable expression.
    default_impls: HashMap<(String, String), DefaultImpl>,
    bodies: Vec<OnceCell<ItemKind>>,
    /// The items each file declares: a file's items are contiguous.
    file_items: Vec<Range<usize>>,
    /// Per file: a hash of everything it contributes besides item bodies (names, kinds of
    /// items, `use` declarations, modules, `impl Default`s). Equal hashes for every file mean
    /// equal name resolution.
    structure: Vec<u64>,
    pending: Vec<RefCell<Option<Pending>>>,
    /// Files whose bodies were read since the last [`Index::take_touched`].
    touched: RefCell<FileSet>,
    /// Set when a pending file could not be loaded.
    broken: std::cell::Cell<bool>,
    unloaded: ItemKind,
}

impl Index {
    /// Where item `item`'s name is written, for errors about the item.
    pub fn ident_span(&self, item: usize) -> proc_macro2::Span {
        match self.kind(item) {
            ItemKind::Struct(s) => s.ident.span(),
            ItemKind::Enum(e) => e.ident.span(),
            ItemKind::Alias(a) => a.ident.span(),
            ItemKind::Fn(f) => f.sig.ident.span(),
            ItemKind::Const(c) => c.ident.span(),
            ItemKind::Static(s) => s.ident.span(),
            ItemKind::Unloaded => proc_macro2::Span::call_site(),
        }
    }
}

/// A set of file indexes (the files a derivation read, or those an edit changed), as a bit set:
/// small, and cheap to merge at every schema the builder's cache serves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileSet(Vec<u64>);

impl FileSet {
    pub fn insert(&mut self, file: usize) {
        let word = file / 64;
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (file % 64);
    }

    pub fn contains(&self, file: usize) -> bool {
        self.0
            .get(file / 64)
            .is_some_and(|word| word & (1 << (file % 64)) != 0)
    }

    pub fn union_with(&mut self, other: &FileSet) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (word, bits) in self.0.iter_mut().zip(&other.0) {
            *word |= bits;
        }
    }

    pub fn intersects(&self, other: &FileSet) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }
}

/// Feeds one structural fact to a file's structure hash; fields are separated so that
/// `("ab", "c")` and `("a", "bc")` differ.
fn feed(hasher: &mut Xxh3, tag: u8, parts: &[&str]) {
    hasher.update(&[tag]);
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(&[0xff]);
    }
}

/// The names and bodies one file adds, in source order.
#[derive(Default)]
struct Added {
    items: Vec<IndexedItem>,
    bodies: Vec<ItemKind>,
    default_impls: Vec<((String, String), syn::ImplItemFn)>,
}

impl Index {
    /// The index of files parsed into `parts` (in file order), with the bodies of the files in
    /// `bodies` filled in and every other file parsed on demand from `texts` (module, text per
    /// file). `None` if a part and its bodies disagree.
    pub fn from_parts(
        parts: &[&FilePart],
        texts: Vec<(String, String)>,
        bodies: Vec<(usize, FileBodies)>,
    ) -> Option<Self> {
        let index = Self::from_structure(Structure::from_parts(parts.iter().copied()), texts)?;
        bodies
            .into_iter()
            .all(|(file, bodies)| index.fill(file, bodies))
            .then_some(index)
    }

    /// Adds a parsed file whose items live in module `module` (e.g. `crate::api`), one after
    /// the other: the reference that [`Structure::from_parts`] is tested against.
    #[cfg(test)]
    pub fn add_file(&mut self, path: &Path, module: &str, file: syn::File) {
        let file_index = self.files.len();
        self.files.push(path.to_path_buf());
        let mut hasher = Xxh3::new();
        let mut added = Added::default();
        self.add_items(module, file.items, file_index, &mut hasher, &mut added);
        self.structure.push(hasher.digest());
        let start = self.items.len();
        self.file_items.push(start..start + added.items.len());
        self.pending.push(RefCell::new(None));
        self.commit(added);
    }

    /// Moves what one file added into the index, numbering its items after those of the files
    /// before it.
    #[cfg(test)]
    fn commit(&mut self, added: Added) {
        let start = self.items.len();
        for (offset, item) in added.items.into_iter().enumerate() {
            self.modules
                .entry(item.module.clone())
                .or_default()
                .items
                .insert(item.name.clone(), start + offset);
            self.items.push(item);
        }
        self.bodies
            .extend(added.bodies.into_iter().map(OnceCell::from));
        for (key, body) in added.default_impls {
            let file = self.files.len() - 1;
            self.default_impls.insert(
                key,
                DefaultImpl {
                    file,
                    body: OnceCell::from(body),
                },
            );
        }
    }

    fn add_items(
        &mut self,
        module: &str,
        items: Vec<Item>,
        file: usize,
        hasher: &mut Xxh3,
        added: &mut Added,
    ) {
        feed(hasher, b'm', &[module]);
        self.modules.entry(module.to_owned()).or_default();
        for item in items {
            // Test-only items are not in the crate `crd()` runs in.
            if cfg_test(item_attrs(&item)) {
                if let Item::Mod(m) = &item
                    && m.content.is_none()
                {
                    feed(hasher, b't', &[module, &m.ident.to_string()]);
                    self.module_mut(module)
                        .test_children
                        .push(m.ident.to_string());
                }
                continue;
            }
            let (name, tag, kind) = match item {
                Item::Struct(s) => (s.ident.to_string(), ItemTag::Struct, ItemKind::Struct(s)),
                Item::Enum(e) => (e.ident.to_string(), ItemTag::Enum, ItemKind::Enum(e)),
                Item::Type(t) => (t.ident.to_string(), ItemTag::Alias, ItemKind::Alias(t)),
                Item::Fn(f) => (f.sig.ident.to_string(), ItemTag::Fn, ItemKind::Fn(f)),
                Item::Const(c) => (c.ident.to_string(), ItemTag::Const, ItemKind::Const(c)),
                Item::Static(s) => (s.ident.to_string(), ItemTag::Static, ItemKind::Static(s)),
                Item::Use(u) => {
                    let mut prefix = Vec::new();
                    self.add_use(module, &u.tree, &mut prefix, hasher);
                    continue;
                }
                Item::Impl(imp) => {
                    if let Some((name, function)) = default_impl(imp) {
                        feed(hasher, b'd', &[module, &name]);
                        added
                            .default_impls
                            .push(((module.to_owned(), name), function));
                    }
                    continue;
                }
                Item::Mod(m) => {
                    let child = format!("{module}::{}", m.ident);
                    feed(hasher, b'c', &[module, &m.ident.to_string()]);
                    self.module_mut(module).children.push(m.ident.to_string());
                    if let Some((_, inner)) = m.content {
                        self.add_items(&child, inner, file, hasher, added);
                    } else {
                        feed(hasher, b'm', &[&child]);
                        self.modules.entry(child).or_default();
                    }
                    continue;
                }
                _ => continue,
            };
            feed(hasher, tag as u8, &[module, &name]);
            added.items.push(IndexedItem {
                module: module.to_owned(),
                name,
                tag,
                file,
            });
            added.bodies.push(kind);
        }
    }

    /// Whether `module` is, or is inside, a module declared `#[cfg(test)] mod name;`.
    pub fn in_test_module(&self, module: &str) -> bool {
        let mut parent = String::new();
        for (i, segment) in module.split("::").enumerate() {
            if i > 0 {
                if self
                    .modules
                    .get(&parent)
                    .is_some_and(|m| m.test_children.iter().any(|c| c == segment))
                {
                    return true;
                }
                parent.push_str("::");
            }
            parent.push_str(segment);
        }
        false
    }

    fn module_mut(&mut self, module: &str) -> &mut Module {
        self.modules.entry(module.to_owned()).or_default()
    }

    fn add_use(
        &mut self,
        module: &str,
        tree: &UseTree,
        prefix: &mut Vec<String>,
        hasher: &mut Xxh3,
    ) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.add_use(module, &p.tree, prefix, hasher);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last().cloned() {
                        let path = absolutize(module, prefix);
                        self.add_import(module, last, path, hasher);
                    }
                } else {
                    let mut full = prefix.clone();
                    full.push(name.clone());
                    let path = absolutize(module, &full);
                    self.add_import(module, name, path, hasher);
                }
            }
            UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                let path = absolutize(module, &full);
                self.add_import(module, r.rename.to_string(), path, hasher);
            }
            UseTree::Glob(_) => {
                let path = absolutize(module, prefix);
                feed(hasher, b'g', &[module, &path.join("::")]);
                self.module_mut(module).globs.push(path);
            }
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.add_use(module, tree, prefix, hasher);
                }
            }
        }
    }

    fn add_import(&mut self, module: &str, name: String, path: Vec<String>, hasher: &mut Xxh3) {
        feed(hasher, b'u', &[module, &name, &path.join("::")]);
        self.module_mut(module).uses.insert(name, path);
    }

    pub fn file(&self, item: &IndexedItem) -> &Path {
        &self.files[item.file]
    }

    /// Whether the body of item `item` is at hand, without parsing its file.
    pub fn is_loaded(&self, item: usize) -> bool {
        self.bodies
            .get(item)
            .is_some_and(|body| body.get().is_some())
    }

    /// The body of item `item`, parsing its file first if it is not loaded yet.
    pub fn kind(&self, item: usize) -> &ItemKind {
        let Some(meta) = self.items.get(item) else {
            return &self.unloaded;
        };
        self.touch(meta.file);
        if self.bodies[item].get().is_none() {
            self.load(meta.file);
        }
        self.bodies[item].get().unwrap_or(&self.unloaded)
    }

    /// The hand-written `impl Default for name` in `module`, if there is one.
    pub fn default_impl(&self, module: &str, name: &str) -> Option<&syn::ImplItemFn> {
        let found = self
            .default_impls
            .get(&(module.to_owned(), name.to_owned()))?;
        self.touch(found.file);
        if found.body.get().is_none() {
            self.load(found.file);
        }
        found.body.get()
    }

    /// Whether `module` has an `impl Default for name` (known without reading its body).
    pub fn has_default_impl(&self, module: &str, name: &str) -> bool {
        self.default_impls
            .contains_key(&(module.to_owned(), name.to_owned()))
    }

    fn touch(&self, file: usize) {
        self.touched.borrow_mut().insert(file);
    }

    /// The files whose bodies were read since the last call, and forgets them.
    pub fn take_touched(&self) -> FileSet {
        std::mem::take(&mut *self.touched.borrow_mut())
    }

    /// Records `files` (from [`Index::take_touched`]) as read again.
    pub fn merge_touched(&self, files: &FileSet) {
        self.touched.borrow_mut().union_with(files);
    }

    /// Whether a pending file could not be loaded (its text no longer matches the structure
    /// the index was built from).
    pub fn is_broken(&self) -> bool {
        self.broken.get()
    }

    /// Parses a pending file and fills in its bodies.
    fn load(&self, file: usize) {
        let Some(pending) = self.pending.get(file).and_then(|p| p.borrow_mut().take()) else {
            return;
        };
        match syn::parse_file(&pending.text) {
            Ok(parsed) => {
                self.load_parsed(file, &pending.module, parsed);
            }
            Err(_) => self.broken.set(true),
        }
    }

    /// The index without bodies, to be stored and later rebuilt with [`Index::from_structure`].
    pub fn structure(&self) -> Structure {
        Structure {
            files: self.files.clone(),
            items: self.items.clone(),
            modules: self.modules.clone(),
            default_impls: self
                .default_impls
                .iter()
                .map(|((module, name), d)| (module.clone(), name.clone(), d.file))
                .collect(),
            file_items: self.file_items.iter().map(|r| (r.start, r.end)).collect(),
            hashes: self.structure.clone(),
        }
    }

    /// An index whose names come from `structure` and whose bodies are parsed on demand from
    /// `texts` (module, text per file, in file order).
    pub fn from_structure(structure: Structure, texts: Vec<(String, String)>) -> Option<Self> {
        if texts.len() != structure.files.len()
            || structure.file_items.len() != structure.files.len()
            || structure.hashes.len() != structure.files.len()
        {
            return None;
        }
        let items = structure.items.len();
        // A stored structure is trusted no further than it can be checked: every index in range,
        // and each file's items where its range says.
        let in_file = |file: usize, item: usize| {
            structure
                .file_items
                .get(file)
                .is_some_and(|&(a, b)| (a..b).contains(&item))
        };
        if structure
            .file_items
            .iter()
            .any(|&(a, b)| a > b || b > items)
            || structure
                .items
                .iter()
                .enumerate()
                .any(|(i, item)| !in_file(item.file, i))
            || structure.default_impls.iter().any(|d| d.2 >= texts.len())
            || structure
                .modules
                .values()
                .any(|m| m.items.values().any(|&i| i >= items))
        {
            return None;
        }
        Some(Self {
            files: structure.files,
            items: structure.items,
            modules: structure.modules,
            default_impls: structure
                .default_impls
                .into_iter()
                .map(|(module, name, file)| {
                    (
                        (module, name),
                        DefaultImpl {
                            file,
                            body: OnceCell::new(),
                        },
                    )
                })
                .collect(),
            bodies: (0..items).map(|_| OnceCell::new()).collect(),
            file_items: structure.file_items.iter().map(|&(a, b)| a..b).collect(),
            structure: structure.hashes,
            pending: texts
                .into_iter()
                .map(|(module, text)| RefCell::new(Some(Pending { module, text })))
                .collect(),
            touched: RefCell::new(FileSet::default()),
            broken: std::cell::Cell::new(false),
            unloaded: ItemKind::Unloaded,
        })
    }

    /// Fills in the bodies of `file` from `parsed`, its syntax tree, if the file still has the
    /// structure the index was built from; otherwise marks the index broken and returns false.
    pub fn load_parsed(&self, file: usize, module: &str, parsed: syn::File) -> bool {
        let path = self.files.get(file).cloned().unwrap_or_default();
        let (part, bodies) = split_file(&path, module, parsed, file);
        let Some(range) = self.file_items.get(file).cloned() else {
            self.broken.set(true);
            return false;
        };
        let matches = self.structure.get(file) == Some(&part.hash)
            && part.items.len() == range.len()
            && part
                .items
                .iter()
                .zip(&self.items[range])
                .all(|(a, b)| a.name == b.name && a.tag == b.tag && a.module == b.module);
        if !matches {
            if let Some(pending) = self.pending.get(file) {
                pending.borrow_mut().take();
            }
            self.broken.set(true);
            return false;
        }
        self.fill(file, bodies)
    }

    /// Fills in the bodies of `file`, parsed on this thread into `bodies` by [`split_file`] from
    /// the text whose [`FilePart`] the index was built with.
    pub fn fill(&self, file: usize, bodies: FileBodies) -> bool {
        if let Some(pending) = self.pending.get(file) {
            pending.borrow_mut().take();
        }
        let range = match self.file_items.get(file) {
            Some(range) if range.len() == bodies.bodies.len() => range.clone(),
            _ => {
                self.broken.set(true);
                return false;
            }
        };
        for (cell, body) in self.bodies[range].iter().zip(bodies.bodies) {
            let _ = cell.set(body);
        }
        // The last `impl Default` of a name counts, as when the index is built in one go.
        for (key, body) in bodies.default_impls.into_iter().rev() {
            if let Some(slot) = self.default_impls.get(&key)
                && slot.file == file
            {
                let _ = slot.body.set(body);
            }
        }
        true
    }

    /// The items `file` declares.
    pub fn items_of(&self, file: usize) -> Range<usize> {
        self.file_items.get(file).cloned().unwrap_or_default()
    }
}

/// What one parsed file adds to the index besides its item bodies: names, `use`
/// declarations, modules. Unlike syntax trees, it can move between threads, so each thread of
/// a run can parse some files and still resolve names across all of them.
#[derive(Debug, Clone)]
pub struct FilePart {
    path: PathBuf,
    /// The modules the file adds to, with their `use`s and children (no items).
    modules: HashMap<String, Module>,
    items: Vec<IndexedItem>,
    default_impls: Vec<(String, String)>,
    hash: u64,
}

/// The item bodies of one parsed file, which stay on the thread that parsed it.
pub struct FileBodies {
    bodies: Vec<ItemKind>,
    default_impls: Vec<((String, String), syn::ImplItemFn)>,
}

/// Parses file number `file` (of module `module`) and splits it as [`split_file`] does.
pub fn parse_part(
    path: &Path,
    module: &str,
    text: &str,
    file: usize,
) -> Result<(FilePart, FileBodies), SourceError> {
    parse_file(path, text).map(|parsed| split_file(path, module, parsed, file))
}

/// Splits parsed file number `file` (of module `module`) into what every thread needs and the
/// bodies that stay here.
pub fn split_file(
    path: &Path,
    module: &str,
    parsed: syn::File,
    file: usize,
) -> (FilePart, FileBodies) {
    let mut scratch = Index::default();
    let mut hasher = Xxh3::new();
    let mut added = Added::default();
    scratch.add_items(module, parsed.items, file, &mut hasher, &mut added);
    let part = FilePart {
        path: path.to_path_buf(),
        modules: scratch.modules,
        items: added.items,
        default_impls: added
            .default_impls
            .iter()
            .map(|(key, _)| key.clone())
            .collect(),
        hash: hasher.digest(),
    };
    let bodies = FileBodies {
        bodies: added.bodies,
        default_impls: added.default_impls,
    };
    (part, bodies)
}

/// The index without item bodies, as an incremental run stores it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Structure {
    pub files: Vec<PathBuf>,
    pub items: Vec<IndexedItem>,
    pub modules: HashMap<String, Module>,
    pub default_impls: Vec<(String, String, usize)>,
    pub file_items: Vec<(usize, usize)>,
    pub hashes: Vec<u64>,
}

impl Structure {
    /// The structure of the files whose parts `parts` holds, in file order: the names
    /// [`Index::add_file`] would give them one after the other.
    pub fn from_parts<'p>(parts: impl IntoIterator<Item = &'p FilePart>) -> Self {
        let mut structure = Self::default();
        for (file, part) in parts.into_iter().enumerate() {
            structure.files.push(part.path.clone());
            for (name, added) in &part.modules {
                let module = structure.modules.entry(name.clone()).or_default();
                module
                    .uses
                    .extend(added.uses.iter().map(|(k, v)| (k.clone(), v.clone())));
                module.globs.extend(added.globs.iter().cloned());
                module.children.extend(added.children.iter().cloned());
                module
                    .test_children
                    .extend(added.test_children.iter().cloned());
            }
            let start = structure.items.len();
            for item in &part.items {
                let at = structure.items.len();
                structure
                    .modules
                    .entry(item.module.clone())
                    .or_default()
                    .items
                    .insert(item.name.clone(), at);
                structure.items.push(IndexedItem {
                    file,
                    ..item.clone()
                });
            }
            structure.file_items.push((start, structure.items.len()));
            structure.default_impls.extend(
                part.default_impls
                    .iter()
                    .map(|(module, name)| (module.clone(), name.clone(), file)),
            );
            structure.hashes.push(part.hash);
        }
        structure
    }
}

/// The attributes of the items the index reads.
fn item_attrs(item: &Item) -> &[syn::Attribute] {
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
        _ => &[],
    }
}

/// Whether `#[cfg(test)]` (or `#[cfg(all(.., test, ..))]`) removes an item outside tests.
fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    fn requires_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|metas| metas.iter().any(requires_test)),
            _ => false,
        }
    }
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| requires_test(&meta))
    })
}

/// `impl Default for Name { fn default() ... }`: the type's name and the function.
fn default_impl(imp: syn::ItemImpl) -> Option<(String, syn::ImplItemFn)> {
    let (_, trait_path, _) = imp.trait_.as_ref()?;
    let is_default = trait_path
        .segments
        .last()
        .is_some_and(|s| s.ident == "Default");
    // Only `impl Default for Name`: a path to a type elsewhere could name a type of the
    // same name in this module, and kopgen would fold the wrong impl.
    let syn::Type::Path(self_ty) = &*imp.self_ty else {
        return None;
    };
    let name = self_ty.path.get_ident().map(ToString::to_string)?;
    if !is_default || !imp.generics.params.is_empty() {
        return None;
    }
    let function = imp.items.into_iter().find_map(|item| match item {
        syn::ImplItem::Fn(f) if f.sig.ident == "default" => Some(f),
        _ => None,
    })?;
    Some((name, function))
}

/// Makes a `use` path absolute: `crate::`, `self::`, `super::` are resolved against `module`;
/// anything else stays as written (an external crate, or a child module, which resolution
/// checks first).
fn absolutize(module: &str, path: &[String]) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    let mut iter = path.iter().peekable();
    match iter.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.push("crate".into());
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

/// Parses `text` (the contents of `path`) into a syn file, with the error located.
pub fn parse_file(path: &Path, text: &str) -> Result<syn::File, SourceError> {
    syn::parse_file(text).map_err(|e| {
        SourceError::at(path, e.span(), format!("cannot parse Rust: {e}"))
            .help("kopgen reads the source without compiling it; fix the syntax error (cargo check shows it too)")
    })
}

/// The module path of a file inside a crate's `src/` directory: `src/lib.rs` → `crate`,
/// `src/api/mod.rs` → `crate::api`, `src/api/apps.rs` → `crate::api::apps`.
pub fn module_of(src_root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src_root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        if !matches!(stem.as_str(), "mod" | "lib" | "main") {
            parts.push(stem);
        }
    }
    let mut module = String::from("crate");
    for part in parts {
        module.push_str("::");
        module.push_str(&part.replace('-', "_"));
    }
    module
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::discover;

    /// The structure as the index keeps it, in a form that compares (maps sorted).
    fn comparable(structure: &Structure) -> String {
        let mut modules: Vec<_> = structure.modules.iter().collect();
        modules.sort_by_key(|(name, _)| *name);
        let modules: Vec<String> = modules
            .into_iter()
            .map(|(name, m)| {
                let mut items: Vec<_> = m.items.iter().collect();
                items.sort();
                let mut uses: Vec<_> = m.uses.iter().collect();
                uses.sort();
                format!(
                    "{name}: {items:?} {uses:?} {:?} {:?} {:?}",
                    m.globs, m.children, m.test_children
                )
            })
            .collect();
        let mut default_impls = structure.default_impls.clone();
        default_impls.sort();
        format!(
            "{:?}\n{:?}\n{modules:#?}\n{default_impls:?}\n{:?}\n{:?}",
            structure.files, structure.items, structure.file_items, structure.hashes
        )
    }

    /// Files parsed apart (as the threads of a run parse them) and put together give the
    /// index that adding them one after the other gives, for the fixture corpus and for a
    /// crate whose modules span files (`use`, globs, `#[cfg(test)]` modules, `impl Default`).
    #[test]
    fn parts_put_together_equal_files_added_in_turn() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for dir in ["crds", "crate/src"] {
            let sources = discover::sources(&[root.join(dir)]).expect("fixtures");
            let mut index = Index::default();
            let mut parts = Vec::new();
            for (file, source) in sources.iter().enumerate() {
                let parsed = parse_file(&source.path, &source.text).expect("fixture parses");
                index.add_file(&source.path, &source.module, parsed.clone());
                parts.push(split_file(&source.path, &source.module, parsed, file).0);
            }
            assert_eq!(
                comparable(&Structure::from_parts(&parts)),
                comparable(&index.structure()),
                "{dir}"
            );
        }
    }

    /// A name declared twice keeps its last declaration, whether the index is built in one
    /// go or from a structure with its files filled in later.
    #[test]
    fn the_last_impl_default_counts_when_filled_in() {
        let first = "pub struct A { pub n: u32 }\nimpl Default for A { fn default() -> Self { A { n: 1 } } }\n";
        let second = "impl Default for A { fn default() -> Self { A { n: 2 } } }\nimpl Default for A { fn default() -> Self { A { n: 3 } } }\n";
        let sources = [("src/a.rs", first), ("src/b.rs", second)];
        let mut whole = Index::default();
        let mut parts = Vec::new();
        let mut bodies = Vec::new();
        for (file, (path, text)) in sources.iter().enumerate() {
            let parsed = syn::parse_file(text).expect("parses");
            whole.add_file(Path::new(path), "crate", parsed.clone());
            let (part, body) = split_file(Path::new(path), "crate", parsed, file);
            parts.push(part);
            bodies.push(body);
        }
        let texts = vec![(String::new(), String::new()); 2];
        let filled = Index::from_structure(Structure::from_parts(&parts), texts).expect("valid");
        for (file, body) in bodies.into_iter().enumerate() {
            assert!(filled.fill(file, body));
        }
        let body = |index: &Index| {
            index
                .default_impl("crate", "A")
                .map(|f| quote::quote!(#f).to_string())
        };
        assert!(body(&whole).is_some_and(|b| b.contains("n : 3")));
        assert_eq!(body(&filled), body(&whole));
    }
}
