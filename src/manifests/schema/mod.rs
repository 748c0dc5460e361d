//! Type → schema, the way `#[derive(JsonSchema)]` (schemars 1) builds it, from syntax alone.
//!
//! Local structs and enums are derived here, following schemars_derive's expansion: field
//! order, `required`, defaults, docs as title/description, `extend`, validations, serde
//! renames and skips. Library types come from [`super::library::known`], so their schemas are
//! the real ones. The generator is configured exactly like kube-derive's `crd()`.

use std::path::Path;

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use syn::{Fields, Type, spanned::Spanned};

use super::{
    attrs::{
        self, ContainerAttrs, DefaultAttr, FieldAttrs, Folded, Metadata, RenameRule, Validation,
    },
    error::{SourceError, syn_error},
    fold,
    generics::{self, Env, bind_generics, bound},
    index::{Index, ItemKind},
    library::{
        Library,
        known::{self, Generic},
    },
    paths::{path_segments, type_args},
    resolve::Resolved,
    settings::kube_settings,
};

mod enums;
mod folding;
mod keywords;
mod leaves;
mod second_use;
mod structs;

pub use keywords::apply_x_kube;
use keywords::*;
use second_use::SecondUse;
/// A type written in some module, with the generic arguments in scope there.
#[derive(Clone)]
pub struct Scoped<'a> {
    pub ty: &'a Type,
    pub module: &'a str,
    pub env: &'a Env,
}

/// How many times one generic item may nest inside itself with other arguments.
const MAX_GENERIC_DEPTH: usize = 16;

/// How deep types may nest (fields, containers, aliases): far beyond any real API, and far
/// within the derive thread's stack.
const MAX_TYPE_DEPTH: usize = 256;

pub struct Builder<'a> {
    pub index: &'a Index,
    pub generator: SchemaGenerator,
    /// The items being derived, with their generic arguments: `Slot<Slot<bool>>` derives
    /// `Slot` twice, with different arguments, which is not recursion.
    stack: Vec<(usize, String)>,
    /// Schemas of items already derived, by item and generic arguments: a type used in many
    /// places is derived once (schemars inlines the same schema everywhere).
    cache: SecondUse<(usize, String), Schema>,
    /// The same for library types, by canonical path.
    leaves: SecondUse<String, Schema>,
    /// Library types' schemas, built without schemars' cost of inlining.
    library: Library,
    /// How deep the type being derived nests (see [`MAX_TYPE_DEPTH`]).
    depth: usize,
    /// The errors of a struct's other fields, beside the one its derivation returned: every
    /// field is tried, so that one run lists every refusal (see [`Builder::take_more`]).
    more: Vec<SourceError>,
    /// The Kubernetes version the crate selects with a k8s-openapi feature, when not `latest`'s
    /// (see [`super::crate_k8s_version::k8s_version`]): a k8s-openapi type whose schema differs there
    /// needs compiling.
    pub k8s_version: Option<String>,
}

/// A built schema and whether the type was an `Option` (so its field is not required).
pub struct Built {
    pub schema: Schema,
    pub is_option: bool,
}

impl<'a> Builder<'a> {
    pub fn new(index: &'a Index) -> Self {
        Self {
            index,
            generator: SchemaGenerator::new(kube_settings()),
            stack: Vec::new(),
            cache: SecondUse::new(),
            leaves: SecondUse::new(),
            library: Library::default(),
            depth: 0,
            more: Vec::new(),
            k8s_version: None,
        }
    }

    /// The errors found beside the ones returned since the last call.
    pub fn take_more(&mut self) -> Vec<SourceError> {
        std::mem::take(&mut self.more)
    }
    pub fn type_schema(&mut self, file: &Path, scoped: &Scoped) -> Result<Built, SourceError> {
        self.nested(file, scoped, Self::type_schema_here)
    }

    /// Runs `f` one level deeper into a type, or fails past [`MAX_TYPE_DEPTH`]: type aliases
    /// that name themselves (`type X = Vec<X>;`) would otherwise expand without end.
    fn nested<T>(
        &mut self,
        file: &Path,
        scoped: &Scoped,
        f: impl FnOnce(&mut Self, &Path, &Scoped) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        if self.depth >= MAX_TYPE_DEPTH {
            return Err(SourceError::at(
                file,
                scoped.ty.span(),
                format!("this type nests more than {MAX_TYPE_DEPTH} levels deep"),
            )
            .help("a type alias that names itself (`type X = Vec<X>;`) never ends; give the type a struct of its own"));
        }
        self.depth += 1;
        let result = f(self, file, scoped);
        self.depth -= 1;
        result
    }

    fn type_schema_here(&mut self, file: &Path, scoped: &Scoped) -> Result<Built, SourceError> {
        let ty = scoped.ty;
        match ty {
            Type::Paren(p) => self.type_schema(
                file,
                &Scoped {
                    ty: &p.elem,
                    ..scoped.clone()
                },
            ),
            Type::Group(g) => self.type_schema(
                file,
                &Scoped {
                    ty: &g.elem,
                    ..scoped.clone()
                },
            ),
            Type::Reference(r) => self.type_schema(
                file,
                &Scoped {
                    ty: &r.elem,
                    ..scoped.clone()
                },
            ),
            Type::Slice(s) => {
                let item = self.type_schema(
                    file,
                    &Scoped {
                        ty: &s.elem,
                        ..scoped.clone()
                    },
                )?;
                Ok(plain(
                    Generic::Vec.schema(&mut self.generator, vec![item.schema]),
                ))
            }
            Type::Array(a) => {
                let item = self.type_schema(
                    file,
                    &Scoped {
                        ty: &a.elem,
                        ..scoped.clone()
                    },
                )?;
                let len = match attrs::expr_to_json(&a.len).and_then(|v| v.as_u64()) {
                    Some(n) => n as usize,
                    None => {
                        return Err(SourceError::at(
                            file,
                            a.len.span(),
                            "array length is not a literal",
                        )
                        .help("write the length as an integer literal"));
                    }
                };
                known::array_schema(&mut self.generator, item.schema, len)
                    .map(plain)
                    .ok_or_else(|| {
                        SourceError::at(
                            file,
                            ty.span(),
                            "arrays longer than 32 elements have no schema in schemars",
                        )
                        .help("use a Vec with a length validation")
                    })
            }
            Type::Tuple(t) => {
                let mut items = Vec::new();
                for elem in &t.elems {
                    items.push(
                        self.type_schema(
                            file,
                            &Scoped {
                                ty: elem,
                                ..scoped.clone()
                            },
                        )?
                        .schema,
                    );
                }
                known::tuple_schema(&mut self.generator, items)
                    .map(plain)
                    .ok_or_else(|| {
                        SourceError::at(
                            file,
                            ty.span(),
                            "tuples of more than 6 elements are not supported",
                        )
                        .help("use a struct with named fields")
                    })
            }
            Type::Path(p) if p.qself.is_none() => self.path_schema(file, scoped, &p.path),
            _ => Err(SourceError::at(
                file,
                ty.span(),
                "this type has no JSON schema kopgen can derive",
            )
            .help("use a named type (struct, enum, std or k8s-openapi type)")),
        }
    }

    fn path_schema(
        &mut self,
        file: &Path,
        scoped: &Scoped,
        path: &syn::Path,
    ) -> Result<Built, SourceError> {
        if let Some(binding) = bound(scoped.env, path) {
            let binding = binding.clone();
            return self.type_schema(
                file,
                &Scoped {
                    ty: &binding.ty,
                    module: &binding.module,
                    env: &binding.env,
                },
            );
        }
        let segments = path_segments(path);
        let args = type_args(path);
        let resolved = self.index.resolve(scoped.module, &segments);
        match resolved {
            Some(Resolved::Local(item)) => self.item_schema(file, path, item, &args, scoped),
            Some(Resolved::External(canonical)) => {
                if let Some(generic) = Generic::from_path(&canonical) {
                    if args.len() < generic.arity() {
                        return Err(SourceError::at(
                            file,
                            path.span(),
                            format!("`{canonical}` without type arguments"),
                        ));
                    }
                    let mut schemas = Vec::new();
                    // `Box<Option<T>>` is an option too: the wrappers forward schemars'
                    // `_schemars_private_is_option`.
                    let mut forwards_option = false;
                    for arg in args.iter().rev().take(generic.arity()).rev() {
                        let built = self.type_schema(
                            file,
                            &Scoped {
                                ty: arg,
                                ..scoped.clone()
                            },
                        )?;
                        forwards_option = built.is_option;
                        schemas.push(built.schema);
                    }
                    let schema = generic.schema(&mut self.generator, schemas);
                    return Ok(Built {
                        schema,
                        is_option: generic == Generic::Option
                            || (generic == Generic::Transparent && forwards_option),
                    });
                }
                // `NonZero<u16>` is `NonZeroU16`, which schemars implements.
                let canonical = match (canonical.as_str(), args.as_slice()) {
                    ("std::num::NonZero", [arg]) => self
                        .primitive_name(&Scoped {
                            ty: arg,
                            ..scoped.clone()
                        })
                        .map_or(canonical, |p| known::non_zero_alias(&p)),
                    _ => canonical,
                };
                if let Some(built) = self.library_type(file, path.span(), &canonical) {
                    return built;
                }
                Err(SourceError::at(
                    file,
                    path.span(),
                    format!("kopgen does not know the type `{canonical}`"),
                )
                .help(
                    "kopgen knows std types, serde_json::Value and every k8s-openapi type; for another crate's type, \
                     use `#[schemars(with = \"KnownType\")]` on the field, or define the type in this crate \
                     (`--derive=auto` compiles the crate for this kind)",
                )
                .unsupported())
            }
            None => Err(SourceError::at(
                file,
                path.span(),
                format!("cannot resolve `{}`", segments.join("::")),
            )
            .help("check the `use` declarations and `mod` tree; kopgen follows them like rustc")),
        }
    }

    fn item_schema(
        &mut self,
        file: &Path,
        path: &syn::Path,
        item_index: usize,
        args: &[&Type],
        scoped: &Scoped,
    ) -> Result<Built, SourceError> {
        let item_kind = self.index.kind(item_index);
        let item = &self.index.items[item_index];
        let item_file = self.index.file(item).to_path_buf();
        let generics = match item_kind {
            ItemKind::Struct(s) => Some(&s.generics),
            ItemKind::Enum(e) => Some(&e.generics),
            ItemKind::Alias(a) => Some(&a.generics),
            _ => None,
        };
        let Some(generics) = generics else {
            return Err(SourceError::at(
                file,
                path.span(),
                format!("`{}` is not a type", item.name),
            ));
        };
        let env = self.bind_params(file, path, item_index, generics, args, scoped)?;
        if let ItemKind::Alias(alias) = item_kind {
            let module = item.module.clone();
            return self.type_schema(
                &item_file,
                &Scoped {
                    ty: &alias.ty,
                    module: &module,
                    env: &env,
                },
            );
        }
        let cache_key = (item_index, generics::key(&env));
        if let Some(schema) = self.cache.get(&cache_key) {
            return Ok(plain(schema.clone()));
        }
        // The same arguments again is recursion; so is a type that keeps growing its arguments
        // (`Node<T>` holding `Node<Vec<T>>`), which would never end.
        let depth = self.stack.iter().filter(|(i, _)| *i == item_index).count();
        if self.stack.contains(&cache_key) || depth >= MAX_GENERIC_DEPTH {
            return Err(SourceError::at(file, path.span(), format!("`{}` is recursive", item.name)).help(
                "a CRD schema cannot refer to itself (the API server rejects $ref); break the cycle, e.g. with \
                 `#[schemars(with = \"serde_json::Value\")]` and `x-kubernetes-preserve-unknown-fields`",
            ));
        }
        self.implements_schema(file, path.span(), item_index)?;
        self.stack.push(cache_key.clone());
        let result = match item_kind {
            ItemKind::Struct(s) => self.struct_schema(&item_file, &item.module.clone(), s, &env),
            ItemKind::Enum(e) => self.enum_schema(&item_file, &item.module.clone(), e, &env),
            _ => unreachable_type(&item_file, path),
        };
        self.stack.pop();
        let schema = result?;
        self.cache.computed(cache_key, &schema);
        Ok(plain(schema))
    }

    /// Whether the struct or enum `item_index` (used at `span` in `file`) has the schema its
    /// `#[derive(JsonSchema)]` gives: a type without one would not compile, and a hand-written
    /// `impl JsonSchema` is code only compiling can run.
    pub fn implements_schema(
        &self,
        file: &Path,
        span: proc_macro2::Span,
        item_index: usize,
    ) -> Result<(), SourceError> {
        let item = &self.index.items[item_index];
        let attrs = match self.index.kind(item_index) {
            ItemKind::Struct(s) => &s.attrs,
            ItemKind::Enum(e) => &e.attrs,
            _ => return Ok(()),
        };
        if let Some((impl_file, impl_span)) = self.index.schema_impls.get(&item_index) {
            let start = impl_span.start();
            return Err(SourceError::at(
                file,
                span,
                format!(
                    "`{}` implements JsonSchema by hand (at {}:{}), code kopgen does not run",
                    item.name,
                    self.index.files[*impl_file].display(),
                    start.line
                ),
            )
            .help("`--derive=auto` (the default) compiles the crate for this kind; or derive JsonSchema and express the schema with #[schemars(...)] attributes")
            .unsupported());
        }
        // kube's `KubeSchema` derive implements JsonSchema too.
        if crate::manifests::attrs::derives(attrs, "JsonSchema")
            || crate::manifests::attrs::derives(attrs, "KubeSchema")
        {
            return Ok(());
        }
        let start = self.index.ident_span(item_index).start();
        if crate::manifests::attrs::derives(attrs, "CELSchema") {
            return Err(SourceError::at(
                file,
                span,
                format!(
                    "`{}` (at {}:{}) derives CELSchema, which kube renamed KubeSchema",
                    item.name,
                    self.index.file(item).display(),
                    start.line
                ),
            )
            .help("derive KubeSchema instead (use kube::KubeSchema;): kube 5's name for it"));
        }
        Err(SourceError::at(
            file,
            span,
            format!(
                "`{}` (at {}:{}) does not implement JsonSchema, so the crate does not compile",
                item.name,
                self.index.file(item).display(),
                start.line
            ),
        )
        .help("add JsonSchema to its #[derive(...)] (use schemars::JsonSchema;)"))
    }

    /// The environment of an item used as `path`: each type parameter of `generics` bound to
    /// the argument given for it.
    fn bind_params(
        &self,
        file: &Path,
        path: &syn::Path,
        item_index: usize,
        generics: &syn::Generics,
        args: &[&Type],
        scoped: &Scoped,
    ) -> Result<Env, SourceError> {
        bind_generics(generics, args, scoped.module, scoped.env).ok_or_else(|| {
            SourceError::at(
                file,
                path.span(),
                format!(
                    "`{}` takes {} type arguments, {} given",
                    self.index.items[item_index].name,
                    generics.type_params().count(),
                    args.len()
                ),
            )
        })
    }

    /// schemars' `_schemars_private_non_optional_json_schema` of an option: the schema of the `T`
    /// in `Option<T>`, seen through whatever forwards the option (parentheses, references,
    /// generic parameters, aliases, `Box` and the other transparent wrappers). `None` when the
    /// type is not an option.
    fn option_payload_schema(
        &mut self,
        file: &Path,
        scoped: &Scoped,
    ) -> Result<Option<Schema>, SourceError> {
        self.nested(file, scoped, Self::option_payload_here)
    }

    fn option_payload_here(
        &mut self,
        file: &Path,
        scoped: &Scoped,
    ) -> Result<Option<Schema>, SourceError> {
        let elem = match scoped.ty {
            Type::Paren(p) => Some(&*p.elem),
            Type::Group(g) => Some(&*g.elem),
            Type::Reference(r) => Some(&*r.elem),
            _ => None,
        };
        if let Some(ty) = elem {
            return self.option_payload_schema(
                file,
                &Scoped {
                    ty,
                    ..scoped.clone()
                },
            );
        }
        let Type::Path(p) = scoped.ty else {
            return Ok(None);
        };
        if p.qself.is_some() {
            return Ok(None);
        }
        let path = &p.path;
        if let Some(binding) = bound(scoped.env, path) {
            let binding = binding.clone();
            return self.option_payload_schema(
                file,
                &Scoped {
                    ty: &binding.ty,
                    module: &binding.module,
                    env: &binding.env,
                },
            );
        }
        let args = type_args(path);
        match self.index.resolve(scoped.module, &path_segments(path)) {
            Some(Resolved::External(canonical)) => {
                let Some(&arg) = args.last() else {
                    return Ok(None);
                };
                let arg = Scoped {
                    ty: arg,
                    ..scoped.clone()
                };
                match Generic::from_path(&canonical) {
                    Some(Generic::Option) => Ok(Some(self.type_schema(file, &arg)?.schema)),
                    Some(Generic::Transparent) => self.option_payload_schema(file, &arg),
                    _ => Ok(None),
                }
            }
            Some(Resolved::Local(item_index)) => {
                let ItemKind::Alias(alias) = self.index.kind(item_index) else {
                    return Ok(None);
                };
                let env =
                    self.bind_params(file, path, item_index, &alias.generics, &args, scoped)?;
                let item = &self.index.items[item_index];
                let item_file = self.index.file(item).to_path_buf();
                let module = item.module.clone();
                self.option_payload_schema(
                    &item_file,
                    &Scoped {
                        ty: &alias.ty,
                        module: &module,
                        env: &env,
                    },
                )
            }
            None => Ok(None),
        }
    }

    /// The primitive a type argument names (`u16`), through generic parameters.
    fn primitive_name(&self, scoped: &Scoped) -> Option<String> {
        let Type::Path(p) = scoped.ty else {
            return None;
        };
        p.path.get_ident()?;
        if let Some(binding) = bound(scoped.env, &p.path) {
            return self.primitive_name(&Scoped {
                ty: &binding.ty,
                module: &binding.module,
                env: &binding.env,
            });
        }
        match self.index.resolve(scoped.module, &path_segments(&p.path))? {
            Resolved::External(name) if !name.contains("::") => Some(name),
            _ => None,
        }
    }
}
