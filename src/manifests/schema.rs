//! Type → schema, the way `#[derive(JsonSchema)]` (schemars 1) builds it, from syntax alone.
//!
//! Local structs and enums are derived here, following schemars_derive's expansion: field
//! order, `required`, defaults, docs as title/description, `extend`, validations, serde
//! renames and skips. Library types come from [`super::known`], so their schemas are
//! the real ones. The generator is configured exactly like kube-derive's `crd()`.

use std::{collections::HashMap, path::Path};

use schemars::{Schema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value, json};
use syn::{Fields, Type, spanned::Spanned};

use super::{
    attrs::{
        self, ContainerAttrs, DefaultAttr, FieldAttrs, Folded, Metadata, RenameRule, Validation,
    },
    defaults,
    error::SourceError,
    index::{Index, ItemKind},
    known::{self, Generic},
    library::Library,
    resolve::{Resolved, path_segments, type_args},
};

/// A type written in some module, with the generic arguments in scope there.
#[derive(Clone)]
pub struct Scoped<'a> {
    pub ty: &'a Type,
    pub module: &'a str,
    pub env: &'a Env,
}

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

/// The generator settings of kube-derive 5's `crd()`.
pub fn kube_settings() -> SchemaSettings {
    SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube_core::schema::StructuralSchemaRewriter)
        .with_transform(kube_core::schema::OptionalEnum)
        .with_transform(kube_core::schema::OptionalIntOrString)
}

/// How many times one generic item may nest inside itself with other arguments.
const MAX_GENERIC_DEPTH: usize = 16;

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
}

/// Values kept from their second use on, so that the (common) values used once are never
/// cloned.
struct SecondUse<K, V> {
    values: HashMap<K, V>,
    seen: std::collections::HashSet<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> SecondUse<K, V> {
    fn new() -> Self {
        Self {
            values: HashMap::new(),
            seen: std::collections::HashSet::new(),
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.values.get(key)
    }

    /// Records that `value` was computed for `key`, keeping a copy if it was computed before.
    fn computed(&mut self, key: K, value: &V) {
        if !self.seen.insert(key.clone()) {
            self.values.insert(key, value.clone());
        }
    }
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
        }
    }

    /// A container's or variant's attributes, with `transform` functions folded.
    fn container_attrs(
        &self,
        file: &Path,
        module: &str,
        attrs: &[syn::Attribute],
    ) -> Result<ContainerAttrs, SourceError> {
        let mut cattrs = attrs::container_attrs(attrs).map_err(|e| syn_error(file, e))?;
        self.resolve_validations(file, module, &mut cattrs.meta.validations)?;
        self.fold_examples(file, module, &mut cattrs.meta.examples)?;
        report_unsupported(file, &cattrs.meta)?;
        self.fold_transforms(file, module, &mut cattrs.meta)?;
        Ok(cattrs)
    }

    /// Folds each `#[schemars(transform = f)]` into the statements of `f`.
    fn fold_transforms(
        &self,
        file: &Path,
        module: &str,
        meta: &mut Metadata,
    ) -> Result<(), SourceError> {
        for (path, span) in std::mem::take(&mut meta.transforms) {
            let ops = super::transform_fn::fold(self.index, module, &path).map_err(|at| {
                let error = SourceError::at(
                    file,
                    span,
                    format!(
                        "kopgen cannot fold `transform = {}` statically",
                        path.join("::")
                    ),
                );
                let error = match at {
                    Some((item_file, span)) => error.with_location(&item_file, span),
                    None => error,
                };
                error.help(super::transform_fn::HELP).unsupported()
            })?;
            meta.transform_ops.extend(ops);
        }
        Ok(())
    }

    /// A field's attributes, with `validate(regex(path = ...))` looked up in the sources.
    fn field_attrs(
        &self,
        file: &Path,
        module: &str,
        attrs: &[syn::Attribute],
    ) -> Result<FieldAttrs, SourceError> {
        let mut fattrs = attrs::field_attrs(attrs).map_err(|e| syn_error(file, e))?;
        self.resolve_validations(file, module, &mut fattrs.meta.validations)?;
        self.fold_examples(file, module, &mut fattrs.meta.examples)?;
        report_unsupported(file, &fattrs.meta)?;
        self.fold_transforms(file, module, &mut fattrs.meta)?;
        Ok(fattrs)
    }

    /// Folds `example = ...` values that are not literals, as a default is folded: schemars
    /// serializes whatever the expression evaluates to.
    fn fold_examples(
        &self,
        file: &Path,
        module: &str,
        examples: &mut [Folded],
    ) -> Result<(), SourceError> {
        const WHAT: &str = "kopgen cannot fold this example statically";
        const HELP: &str = "write a literal, a constant of this crate, or a function kopgen folds as a default (literals, `String::from`, `.into()`, `vec![..]`, struct literals)";
        examples
            .iter_mut()
            .try_for_each(|example| self.fold_expr(file, module, example, WHAT, HELP))
    }

    /// Folds `value` if it is still an expression, as [`super::defaults::fold_expr`] folds a
    /// default; an error says `what` and `help`.
    fn fold_expr(
        &self,
        file: &Path,
        module: &str,
        value: &mut Folded,
        what: &str,
        help: &str,
    ) -> Result<(), SourceError> {
        if let Folded::Expr(expr) = value {
            let span = expr.span();
            let folded =
                super::defaults::fold_expr(self.index, file, module, expr).map_err(|e| {
                    let reworded = e.reworded(what).help(help);
                    if e.unsupported {
                        reworded.unsupported()
                    } else {
                        reworded
                    }
                })?;
            *value = Folded::Value(folded, span);
        }
        Ok(())
    }

    /// Folds what validations name in the sources: regex statics and constants.
    fn resolve_validations(
        &self,
        file: &Path,
        module: &str,
        validations: &mut [Validation],
    ) -> Result<(), SourceError> {
        for validation in validations {
            match validation {
                Validation::Inner(inner) => self.resolve_validations(file, module, inner)?,
                Validation::RegexPath { path, span } => {
                    let pattern = regex_pattern(self.index, module, path).ok_or_else(|| {
                        SourceError::at(
                            file,
                            *span,
                            format!("kopgen cannot find the pattern of `{}`", path.join("::")),
                        )
                        .help(
                            "point `path` at a `const NAME: &str = \"...\"` or a \
                             `static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(\"...\").unwrap())` \
                             in this crate, or write #[schemars(regex(pattern = \"...\"))]",
                        )
                        .unsupported()
                    })?;
                    *validation = Validation::Pattern(Folded::Value(pattern.into(), *span));
                }
                Validation::Range { min, max } => {
                    for bound in [min, max].into_iter().flatten() {
                        self.fold_value(file, module, bound, Expect::Number)?;
                    }
                }
                Validation::Length { min, max, equal } => {
                    for bound in [min, max, equal].into_iter().flatten() {
                        self.fold_value(file, module, bound, Expect::Length)?;
                    }
                }
                Validation::Pattern(value) | Validation::Contains(value) => {
                    self.fold_value(file, module, value, Expect::Text)?;
                }
                Validation::Format(_) => {}
            }
        }
        Ok(())
    }

    /// Folds an attribute value written as an expression (`MAX_LEN`, `LIMIT as u64`) with the
    /// crate's constants, as the compiler would; a pattern may also name a regex static.
    fn fold_value(
        &self,
        file: &Path,
        module: &str,
        value: &mut Folded,
        expect: Expect,
    ) -> Result<(), SourceError> {
        // A pattern may name a regex static.
        if let (Expect::Text, Folded::Expr(expr)) = (&expect, &*value)
            && let syn::Expr::Path(p) = &**expr
            && let Some(pattern) = regex_pattern(self.index, module, &path_segments(&p.path))
        {
            *value = Folded::Value(Value::String(pattern), expr.span());
        }
        const WHAT: &str = "kopgen cannot fold this attribute value statically";
        const HELP: &str = "write a literal, or a constant of this crate (`const MAX: u64 = 63;`) that kopgen can fold";
        self.fold_expr(file, module, value, WHAT, HELP)?;
        let Folded::Value(folded, span) = value else {
            return Ok(());
        };
        let fits = match expect {
            Expect::Number => folded.is_number(),
            Expect::Length => folded.is_u64(),
            Expect::Text => folded.is_string(),
        };
        if !fits {
            return Err(SourceError::at(
                file,
                *span,
                format!("{folded} is not {}", expect.what()),
            ));
        }
        Ok(())
    }

    pub fn type_schema(&mut self, file: &Path, scoped: &Scoped) -> Result<Built, SourceError> {
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
                if let Some(f) = known::leaf(&canonical) {
                    // Library schemas are the same wherever they are used: from the second use
                    // on (`Condition` in every status), a copy of one generated before.
                    if let Some(schema) = self.leaves.get(&canonical) {
                        return Ok(plain(schema.clone()));
                    }
                    let schema = self.library.schema(f, &mut self.generator);
                    self.leaves.computed(canonical, &schema);
                    return Ok(plain(schema));
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
        let cache_key = (item_index, cache_key_of(&env));
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

    pub fn struct_schema(
        &mut self,
        file: &Path,
        module: &str,
        item: &syn::ItemStruct,
        env: &Env,
    ) -> Result<Schema, SourceError> {
        let mut cattrs = self.container_attrs(file, module, &item.attrs)?;
        cattrs.kube_schema = attrs::derives(&item.attrs, "KubeSchema");
        if cattrs.kube_schema && !matches!(item.fields, Fields::Named(_)) {
            return Err(SourceError::at(
                file,
                item.ident.span(),
                format!("#[derive(KubeSchema)] on `{}`, which has no named fields", item.ident),
            )
            .help("kube-derive's KubeSchema takes only structs with named fields; derive JsonSchema here"));
        }
        cattrs.derives_default = attrs::derives(&item.attrs, "Default");
        cattrs.ident = Some(item.ident.to_string());
        if cattrs.default == DefaultAttr::Default
            && !cattrs.derives_default
            && self
                .index
                .item_in(module, &item.ident.to_string())
                .is_none_or(|i| self.index.default_impl(i).is_none())
        {
            return Err(SourceError::at(file, item.ident.span(), format!(
                "`#[serde(default)]` on `{}` needs a `Default`, and kopgen finds neither a derived one nor an `impl Default` in the crate", item.ident
            ))
            .help("derive Default, write `impl Default` for it, or use `#[serde(default = \"f\")]`"));
        }
        if let Some(schema) = self.schema_via_from(file, module, &cattrs, env)? {
            return Ok(schema);
        }
        let mut schema = match &item.fields {
            Fields::Named(named) if !cattrs.transparent => self.named_fields(
                file,
                module,
                &cattrs,
                named.named.iter(),
                env,
                cattrs.rename_all,
            )?,
            Fields::Named(named) => {
                let field = named.named.first().ok_or_else(|| {
                    SourceError::at(file, item.span(), "empty transparent struct")
                })?;
                self.type_schema(
                    file,
                    &Scoped {
                        ty: &field.ty,
                        module,
                        env,
                    },
                )?
                .schema
            }
            Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
                // A newtype struct has the schema of its field.
                let field = &unnamed.unnamed[0];
                let fattrs = self.field_attrs(file, module, &field.attrs)?;
                let mut built = self
                    .field_type_schema(file, module, field, &fattrs, env)?
                    .schema;
                add_field_mutators(&mut built, &fattrs);
                add_field_post_mutators(&mut built, &fattrs);
                built
            }
            Fields::Unnamed(unnamed) => self.tuple_schema(
                file,
                module,
                &unnamed.unnamed,
                env,
                item.span(),
                "tuple structs",
            )?,
            Fields::Unit => json_schema_null(),
        };
        add_container_mutators(&mut schema, &cattrs.meta);
        apply_x_kube(file, &mut schema, &cattrs.meta)?;
        Ok(schema)
    }

    fn field_type_schema(
        &mut self,
        file: &Path,
        module: &str,
        field: &syn::Field,
        fattrs: &FieldAttrs,
        env: &Env,
    ) -> Result<Built, SourceError> {
        if let Some(function) = &fattrs.schema_with {
            let schema = super::defaults::schema_with(self.index, file, module, function)?;
            return Ok(Built {
                schema,
                is_option: false,
            });
        }
        let ty = fattrs.with.as_ref().unwrap_or(&field.ty);
        let built = self
            .type_schema(file, &Scoped { ty, module, env })
            .map_err(|e| match &fattrs.with_from_serde {
                Some(written) => SourceError::at(
                    file,
                    field.span(),
                    format!(
                        "schemars reads `#[serde(with = \"{written}\")]` as the type of this field's schema, and kopgen cannot use `{written}` as one: {}",
                        e.message
                    ),
                )
                .help("kube-derive does not compile here either: add `#[schemars(with = \"T\")]` with the type the module reads and writes (e.g. `String`)"),
                None => e,
            })?;
        if fattrs.required
            && built.is_option
            && let Some(schema) = self.option_payload_schema(file, &Scoped { ty, module, env })?
        {
            return Ok(Built {
                schema,
                is_option: true,
            });
        }
        Ok(built)
    }

    fn named_fields<'f>(
        &mut self,
        file: &Path,
        module: &str,
        cattrs: &ContainerAttrs,
        fields: impl Iterator<Item = &'f syn::Field>,
        env: &Env,
        rename_all: RenameRule,
    ) -> Result<Schema, SourceError> {
        let mut schema = if cattrs.deny_unknown_fields {
            Schema::from(
                json!({"type": "object", "additionalProperties": false})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
        } else {
            Schema::from(
                json!({"type": "object"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
        };
        let container_default = match &cattrs.default {
            DefaultAttr::None => None,
            other => Some(other.clone()),
        };
        // `#[serde(default = "f")]` on the struct: fields default to `f()`'s fields.
        let container_value = match &cattrs.default {
            DefaultAttr::Path(path) => Some(defaults::call(self.index, file, module, path, env)?),
            // A hand-written `impl Default`: each field takes its value in `T::default()`.
            DefaultAttr::Default if !cattrs.derives_default => match &cattrs.ident {
                Some(name) => defaults::impl_default(self.index, module, name, env)?,
                None => None,
            },
            _ => None,
        };
        for field in fields {
            let kept: Vec<syn::Attribute>;
            let field_attrs = if cattrs.kube_schema {
                kept = field
                    .attrs
                    .iter()
                    .filter(|a| !a.path().is_ident("garde"))
                    .cloned()
                    .collect();
                &kept
            } else {
                &field.attrs
            };
            let fattrs = self.field_attrs(file, module, field_attrs)?;
            // kube-derive's schema describes deserialization (schemars' default contract).
            if fattrs.skip_deserializing {
                continue;
            }
            let Some(ident) = &field.ident else { continue };
            let name = fattrs.serialized_name(ident, rename_all);
            if fattrs.flatten {
                let ty = fattrs.with.as_ref().unwrap_or(&field.ty);
                let built = self.type_schema(file, &Scoped { ty, module, env })?;
                let inner = if built.is_option {
                    self.option_payload_schema(file, &Scoped { ty, module, env })?
                } else {
                    None
                };
                let flattened = known::flatten_schema(
                    &mut self.generator,
                    built.schema,
                    inner,
                    fattrs.required,
                );
                schemars_flatten(&mut schema, flattened);
                continue;
            }
            let built = self.field_type_schema(file, module, field, &fattrs, env)?;
            let is_option = built.is_option;
            let mut field_schema = built.schema;
            add_field_mutators(&mut field_schema, &fattrs);
            if let Some(value) = defaults::field_default(
                self.index,
                file,
                module,
                field,
                &fattrs,
                match (&container_default, &container_value) {
                    (_, Some(object)) => Some(defaults::ContainerDefault::Fields(object, &name)),
                    (Some(_), None) => Some(defaults::ContainerDefault::Derived),
                    (None, None) => None,
                },
                env,
            )? {
                if let Some(function) = &fattrs.serialize_with {
                    return Err(SourceError::at(
                        file,
                        field.span(),
                        format!("schemars serializes this field's default with `{function}`, which kopgen cannot run"),
                    )
                    .help("remove the default, or the `serialize_with`/`with` that changes how it is written")
                    .unsupported());
                }
                field_schema.insert("default".into(), value);
            }
            add_field_post_mutators(&mut field_schema, &fattrs);
            apply_x_kube(file, &mut field_schema, &fattrs.meta)?;
            let has_default = container_default.is_some() || fattrs.default != DefaultAttr::None;
            // Deserialize contract (kube-derive's): optional when it has a default, or is an
            // Option that is not marked required.
            let optional = has_default || (!fattrs.required && is_option);
            insert_property(&mut schema, &name, optional, field_schema);
        }
        Ok(schema)
    }

    /// The schema of positional fields, via schemars' tuple impls.
    fn tuple_schema<'f>(
        &mut self,
        file: &Path,
        module: &str,
        fields: impl IntoIterator<Item = &'f syn::Field>,
        env: &Env,
        span: proc_macro2::Span,
        what: &str,
    ) -> Result<Schema, SourceError> {
        let mut items = Vec::new();
        for field in fields {
            if let Some(attr) = field.attrs.iter().find(|a| {
                ["schemars", "serde", "validate", "garde"]
                    .iter()
                    .any(|name| a.path().is_ident(name))
            }) {
                return Err(SourceError::at(
                    file,
                    attr.span(),
                    format!("kopgen does not read attributes on the fields of {what}"),
                )
                .help("use named fields, or a newtype around the field's type"));
            }
            items.push(
                self.type_schema(
                    file,
                    &Scoped {
                        ty: &field.ty,
                        module,
                        env,
                    },
                )?
                .schema,
            );
        }
        known::tuple_schema(&mut self.generator, items).ok_or_else(|| {
            SourceError::at(
                file,
                span,
                format!("{what} of more than 6 fields are not supported"),
            )
            .help("use named fields")
        })
    }

    /// `#[serde(from = "T")]` / `try_from` on a struct or enum: `T`'s schema with the
    /// container's own metadata, as schemars derives it; `None` without such an attribute.
    fn schema_via_from(
        &mut self,
        file: &Path,
        module: &str,
        cattrs: &ContainerAttrs,
        env: &Env,
    ) -> Result<Option<Schema>, SourceError> {
        let Some(from) = &cattrs.from else {
            return Ok(None);
        };
        let mut schema = self
            .type_schema(
                file,
                &Scoped {
                    ty: from,
                    module,
                    env,
                },
            )?
            .schema;
        add_container_mutators(&mut schema, &cattrs.meta);
        Ok(Some(schema))
    }

    pub fn enum_schema(
        &mut self,
        file: &Path,
        module: &str,
        item: &syn::ItemEnum,
        env: &Env,
    ) -> Result<Schema, SourceError> {
        let cattrs = self.container_attrs(file, module, &item.attrs)?;
        if attrs::derives(&item.attrs, "KubeSchema") {
            return Err(SourceError::at(
                file,
                item.ident.span(),
                format!("#[derive(KubeSchema)] on enum `{}`", item.ident),
            )
            .help("kube-derive's KubeSchema takes only structs with named fields (\"Unsupported shape `enum`\"); derive JsonSchema on the enum"));
        }
        if let Some(schema) = self.schema_via_from(file, module, &cattrs, env)? {
            return Ok(schema);
        }
        if item.variants.is_empty() {
            return Ok(Schema::from(false));
        }
        if cattrs.tag.is_some() || cattrs.content.is_some() {
            return Err(SourceError::at(file, item.ident.span(), "internally and adjacently tagged enums are not supported")
                .help("kube-derive's structural schema rewriting cannot express them (it panics at run time); use an externally tagged or untagged enum, or a struct with optional fields"));
        }
        let mut unit_names = Vec::new();
        let mut complex: Vec<Schema> = Vec::new();
        // A variant marked `#[serde(untagged)]` makes schemars list the variants in `anyOf`:
        // they may overlap.
        let mut any_untagged = false;
        for variant in &item.variants {
            let vattrs = self.container_attrs(file, module, &variant.attrs)?;
            if vattrs.skip {
                continue;
            }
            let raw = variant.ident.to_string();
            let name = vattrs
                .rename
                .clone()
                .unwrap_or_else(|| cattrs.rename_all.apply_to_variant(&raw));
            let is_unit = matches!(variant.fields, Fields::Unit);
            let default_attrs = vattrs.meta.doc.is_none()
                && vattrs.meta.title.is_none()
                && vattrs.meta.description.is_none()
                && vattrs.meta.extend.is_empty()
                && vattrs.meta.transform_ops.is_empty()
                && !vattrs.meta.deprecated;
            if cattrs.untagged || vattrs.untagged {
                any_untagged |= vattrs.untagged;
                let mut schema = self.variant_body(file, module, variant, &vattrs, &cattrs, env)?;
                add_container_mutators(&mut schema, &vattrs.meta);
                complex.push(schema);
                continue;
            }
            if is_unit && default_attrs {
                unit_names.push(Value::String(name));
                continue;
            }
            let mut schema = if is_unit {
                Schema::from(
                    json!({"type": "string", "const": name})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                )
            } else {
                let body = self.variant_body(file, module, variant, &vattrs, &cattrs, env)?;
                let mut properties = Map::new();
                properties.insert(name.clone(), body.to_value());
                Schema::from(
                    json!({
                        "type": "object",
                        "properties": Value::Object(properties),
                        "required": [name],
                        "additionalProperties": false,
                    })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                )
            };
            add_container_mutators(&mut schema, &vattrs.meta);
            complex.push(schema);
        }
        let has_unit = item
            .variants
            .iter()
            .any(|v| matches!(v.fields, Fields::Unit));
        let has_data = item
            .variants
            .iter()
            .any(|v| !matches!(v.fields, Fields::Unit));
        if !cattrs.untagged && has_unit && has_data {
            return Err(SourceError::at(file, item.ident.span(), format!(
                "enum `{}` mixes unit variants with data variants", item.ident
            ))
            .help("kube-derive's structural rewriting panics on it at run time; make the unit variants struct variants (`Variant {}`), or split the enum"));
        }
        let unit_schema = || {
            Schema::from(
                json!({"type": "string", "enum": unit_names.clone()})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
        };
        let mut schema = if cattrs.untagged {
            Schema::from(
                json!({"anyOf": complex.iter().map(|s| s.clone().to_value()).collect::<Vec<_>>()})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
        } else if complex.is_empty() {
            unit_schema()
        } else {
            let mut all = Vec::new();
            if !unit_names.is_empty() {
                all.push(unit_schema().to_value());
            }
            all.extend(complex.iter().map(|s| s.clone().to_value()));
            let keyword = if any_untagged { "anyOf" } else { "oneOf" };
            let mut object = Map::new();
            object.insert(keyword.to_owned(), Value::Array(all));
            Schema::from(object)
        };
        add_container_mutators(&mut schema, &cattrs.meta);
        Ok(schema)
    }

    fn variant_body(
        &mut self,
        file: &Path,
        module: &str,
        variant: &syn::Variant,
        vattrs: &ContainerAttrs,
        cattrs: &ContainerAttrs,
        env: &Env,
    ) -> Result<Schema, SourceError> {
        match &variant.fields {
            Fields::Unit => Ok(json_schema_null()),
            Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                let field = &f.unnamed[0];
                let fattrs = self.field_attrs(file, module, &field.attrs)?;
                let mut schema = self
                    .field_type_schema(file, module, field, &fattrs, env)?
                    .schema;
                add_field_mutators(&mut schema, &fattrs);
                add_field_post_mutators(&mut schema, &fattrs);
                Ok(schema)
            }
            Fields::Unnamed(f) => self.tuple_schema(
                file,
                module,
                &f.unnamed,
                env,
                variant.span(),
                "tuple variants",
            ),
            Fields::Named(named) => {
                let rule = if vattrs.rename_all != RenameRule::None {
                    vattrs.rename_all
                } else {
                    cattrs.rename_all_fields
                };
                let inner = ContainerAttrs {
                    deny_unknown_fields: cattrs.deny_unknown_fields,
                    ..ContainerAttrs::default()
                };
                self.named_fields(file, module, &inner, named.named.iter(), env, rule)
            }
        }
    }
}

/// `#[x_kube(validation, merge_strategy)]`, applied with kube-core's own functions as
/// `#[derive(KubeSchema)]` does.
pub fn apply_x_kube(file: &Path, schema: &mut Schema, meta: &Metadata) -> Result<(), SourceError> {
    let unfoldable = |expr: &syn::Expr, what: &str| {
        SourceError::at(file, expr.span(), format!("cannot fold this {what} statically"))
            .help("write a string literal, a (rule, message) pair, or Rule::new(\"..\") with .message/.reason/.field_path; merge strategies as ListMerge::Map(vec![\"key\".into()]) and the like")
            .unsupported()
    };
    for expr in &meta.x_kube_rules {
        let rule =
            super::cel::fold_rule(expr).ok_or_else(|| unfoldable(expr, "validation rule"))?;
        kube_core::validate(schema, rule)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
    }
    if let Some(expr) = &meta.x_kube_merge {
        let strategy = super::cel::fold_merge_strategy(expr)
            .ok_or_else(|| unfoldable(expr, "merge strategy"))?;
        let mut value = schema.clone().to_value();
        kube_core::merge_strategy(&mut value, strategy)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
        *schema = Schema::try_from(value)
            .map_err(|e| SourceError::at(file, expr.span(), e.to_string()))?;
    }
    Ok(())
}

/// A stable key for generic arguments: each parameter's type, as written, and its module.
fn cache_key_of(env: &Env) -> String {
    use quote::ToTokens;
    let mut parts: Vec<String> = env
        .iter()
        .map(|(param, b)| {
            format!(
                "{param}={}@{}{{{}}}",
                b.ty.to_token_stream(),
                b.module,
                cache_key_of(&b.env)
            )
        })
        .collect();
    parts.sort();
    parts.join(";")
}

fn unreachable_type(file: &Path, path: &syn::Path) -> Result<Schema, SourceError> {
    Err(SourceError::at(file, path.span(), "not a struct or enum"))
}

fn plain(schema: Schema) -> Built {
    Built {
        schema,
        is_option: false,
    }
}

/// What an attribute value must fold to.
enum Expect {
    /// `range` bounds.
    Number,
    /// `length` bounds.
    Length,
    /// Patterns and `contains`.
    Text,
}

impl Expect {
    fn what(&self) -> &'static str {
        match self {
            Expect::Number => "a number, as `range` needs",
            Expect::Length => "a non-negative integer, as `length` needs",
            Expect::Text => "a string, as a pattern needs",
        }
    }
}

/// `()`'s schema: `{"type": "null"}`.
fn json_schema_null() -> Schema {
    Schema::from(
        json!({"type": "null"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

pub fn syn_error(file: &Path, error: syn::Error) -> SourceError {
    SourceError::at(file, error.span(), error.to_string())
}

fn report_unsupported(file: &Path, meta: &Metadata) -> Result<(), SourceError> {
    if let Some((key, span)) = meta.unsupported.first()
        && key.starts_with("doc =")
    {
        return Err(SourceError::at(file, *span, format!("kopgen cannot fold `{key}` statically: schemars would put its text in the description"))
            .help("replace it with the text as a doc comment (`/// ...`), or remove it and give `#[schemars(description = \"...\")]`")
            .unsupported());
    }
    if let Some((key, span)) = meta.unsupported.first() {
        return Err(SourceError::at(file, *span, format!("kopgen cannot yet fold `{key}` statically"))
            .help("remove it, or replace it with an attribute kopgen folds (see the attribute reference in kopgen's README)")
            .unsupported());
    }
    Ok(())
}

/// schemars' `insert_object_property`.
fn insert_property(schema: &mut Schema, key: &str, optional: bool, sub_schema: Schema) {
    let obj = schema.ensure_object();
    if let Some(properties) = obj
        .entry("properties")
        .or_insert(Value::Object(Map::new()))
        .as_object_mut()
    {
        properties.insert(key.to_owned(), sub_schema.into());
    }
    if !optional
        && let Some(required) = obj
            .entry("required")
            .or_insert(Value::Array(Vec::new()))
            .as_array_mut()
    {
        required.push(key.into());
    }
}

/// schemars' common metadata mutators (`add_mutators`): title and description (explicit, or
/// from the doc comment), `deprecated`, `examples`.
fn add_common_metadata(schema: &mut Schema, meta: &Metadata) {
    let (doc_title, doc_description) = meta
        .doc
        .as_deref()
        .map(schemars::_private::get_title_and_description)
        .unwrap_or(("", ""));
    let title = meta.title.as_deref().unwrap_or(doc_title);
    let description = meta.description.as_deref().unwrap_or(doc_description);
    if !title.is_empty() {
        schema.insert("title".into(), title.into());
    }
    if !description.is_empty() {
        schema.insert("description".into(), description.into());
    }
    if meta.deprecated {
        schema.insert("deprecated".into(), true.into());
    }
    if !meta.examples.is_empty() {
        let examples = meta.examples.iter().filter_map(Folded::value).cloned();
        schema.insert("examples".into(), Value::Array(examples.collect()));
    }
}

/// A container's mutators: common metadata, then its extensions (schemars' post-mutators).
fn add_container_mutators(schema: &mut Schema, meta: &Metadata) {
    add_common_metadata(schema, meta);
    for (key, value) in &meta.extend {
        schema.insert(key.clone(), value.clone());
    }
    apply_ops(schema, &meta.transform_ops);
}

/// A field's post-mutators: its extensions, then its folded `transform` functions.
fn add_field_post_mutators(schema: &mut Schema, fattrs: &FieldAttrs) {
    for (key, value) in &fattrs.meta.extend {
        schema.insert(key.clone(), value.clone());
    }
    apply_ops(schema, &fattrs.meta.transform_ops);
}

/// Folded `transform` functions, run as schemars runs them: after the extensions.
fn apply_ops(schema: &mut Schema, ops: &[attrs::SchemaOp]) {
    for op in ops {
        match op {
            attrs::SchemaOp::Insert(key, value) => {
                schema.insert(key.clone(), value.clone());
            }
            attrs::SchemaOp::Remove(key) => {
                schema.remove(key);
            }
        }
    }
}

/// A field's mutators: common metadata, validations, readOnly/writeOnly (extensions come last,
/// after the default, as schemars' post-mutators).
fn add_field_mutators(schema: &mut Schema, fattrs: &FieldAttrs) {
    let meta = &fattrs.meta;
    add_common_metadata(schema, meta);
    for validation in &meta.validations {
        apply_validation(schema, validation);
    }
    if fattrs.skip_deserializing {
        schema.insert("readOnly".into(), true.into());
    }
    if fattrs.skip_serializing {
        schema.insert("writeOnly".into(), true.into());
    }
}

/// schemars' `Schema::has_type` (private there).
fn has_type(schema: &Schema, ty: &str) -> bool {
    let is = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(t)),
        _ => false,
    };
    is(ty) || (ty == "number" && is("integer"))
}

fn apply_validation(schema: &mut Schema, validation: &Validation) {
    match validation {
        Validation::Length { min, max, equal } => {
            let value = |bound: &Option<Folded>| bound.as_ref().and_then(Folded::value).cloned();
            for (ty, suffix) in [("string", "Length"), ("array", "Items")] {
                if has_type(schema, ty) {
                    if let Some(n) = value(min).or_else(|| value(equal)) {
                        schema.insert(format!("min{suffix}"), n);
                    }
                    if let Some(n) = value(max).or_else(|| value(equal)) {
                        schema.insert(format!("max{suffix}"), n);
                    }
                }
            }
        }
        Validation::Range { min, max } => {
            if has_type(schema, "number") {
                if let Some(v) = min.as_ref().and_then(Folded::value) {
                    schema.insert("minimum".into(), v.clone());
                }
                if let Some(v) = max.as_ref().and_then(Folded::value) {
                    schema.insert("maximum".into(), v.clone());
                }
            }
        }
        Validation::Pattern(p) => {
            if has_type(schema, "string")
                && let Some(p) = p.value()
            {
                schema.insert("pattern".into(), p.clone());
            }
        }
        Validation::Contains(s) => {
            if has_type(schema, "string")
                && let Some(Value::String(s)) = s.value()
            {
                schema.insert("pattern".into(), regex_escape(s).into());
            }
        }
        Validation::Format(f) => {
            schema.insert("format".into(), (*f).into());
        }
        Validation::Inner(inner) => {
            if let Some(items) = schema.get_mut("items")
                && let Ok(items) = <&mut Schema>::try_from(items)
            {
                for validation in inner {
                    apply_validation(items, validation);
                }
            }
        }
        // Resolved to `Pattern` when the field's attributes are read.
        Validation::RegexPath { .. } => {}
    }
}

/// The pattern string of the regex a `validate(regex(path))` names: a string constant or
/// static, or a static built with `Regex::new("...")` (in `LazyLock::new`, `Lazy::new`, ...),
/// whose `to_string()` is that pattern.
fn regex_pattern(index: &Index, module: &str, path: &[String]) -> Option<String> {
    let Resolved::Local(item) = index.resolve(module, path)? else {
        return None;
    };
    let item_kind = index.kind(item);
    let item = &index.items[item];
    let string =
        |expr: &syn::Expr| match defaults::fold_expr(index, index.file(item), &item.module, expr)
            .ok()?
        {
            Value::String(s) => Some(s),
            _ => None,
        };
    match item_kind {
        ItemKind::Const(c) => string(&c.expr),
        ItemKind::Static(s) => string(&s.expr).or_else(|| regex_literal(&s.expr)),
        _ => None,
    }
}

/// The literal of a `Regex::new("...")` call inside a static's initializer.
fn regex_literal(expr: &syn::Expr) -> Option<String> {
    use syn::Expr;
    match expr {
        Expr::Call(call) => {
            let is_regex_new = matches!(&*call.func, Expr::Path(p)
                if p.path.segments.len() >= 2
                    && p.path.segments.iter().rev().nth(1).is_some_and(|s| s.ident == "Regex")
                    && p.path.segments.last().is_some_and(|s| s.ident == "new"));
            if is_regex_new && call.args.len() == 1 {
                return call
                    .args
                    .first()
                    .and_then(attrs::expr_to_json)
                    .and_then(|v| v.as_str().map(str::to_owned));
            }
            call.args.iter().find_map(regex_literal)
        }
        Expr::MethodCall(m) => regex_literal(&m.receiver),
        Expr::Closure(c) => regex_literal(&c.body),
        Expr::Paren(p) => regex_literal(&p.expr),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => regex_literal(e),
            _ => None,
        },
        _ => None,
    }
}

/// `regex_syntax::escape`.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '.'
                | '+'
                | '*'
                | '?'
                | '('
                | ')'
                | '|'
                | '['
                | ']'
                | '{'
                | '}'
                | '^'
                | '$'
                | '#'
                | '&'
                | '-'
                | '~'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// schemars' `_private::flatten`, which merges a flattened field into its struct.
fn schemars_flatten(schema: &mut Schema, other: Schema) {
    schemars::_private::flatten(schema, other);
}
