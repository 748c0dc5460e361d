//! The `Default` of a type as serde writes it: std and k8s-openapi types, the crate's derived
//! and hand-written defaults.

use super::*;

impl Folder<'_> {
    /// `Default::default()` of `ty`, serialized.
    pub(super) fn type_default(
        &self,
        file: &Path,
        module: &str,
        ty: &Type,
    ) -> Result<Value, SourceError> {
        let _depth = Depth::enter(&TYPE_DEPTH, MAX_TYPE_DEPTH).ok_or_else(|| {
            SourceError::at(
                file,
                ty.span(),
                format!("this type nests more than {MAX_TYPE_DEPTH} levels deep"),
            )
            .help("a type alias that names itself (`type X = Vec<X>;`) never ends; give the type a struct of its own")
        })?;
        let unfoldable = || {
            SourceError::at(
                file,
                ty.span(),
                "cannot fold the Default of this type statically",
            )
            .help(HELP)
            .unsupported()
        };
        match ty {
            Type::Paren(p) => return self.type_default(file, module, &p.elem),
            Type::Group(g) => return self.type_default(file, module, &g.elem),
            Type::Tuple(t) if t.elems.is_empty() => return Ok(Value::Null),
            // serde writes tuples as arrays.
            Type::Tuple(t) => {
                return t
                    .elems
                    .iter()
                    .map(|elem| self.type_default(file, module, elem))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array);
            }
            Type::Array(a) => {
                let len = attrs::expr_to_json(&a.len)
                    .and_then(|v| v.as_u64())
                    .ok_or_else(unfoldable)?;
                let item = self.type_default(file, module, &a.elem)?;
                return Ok(Value::Array(vec![item; len as usize]));
            }
            Type::Path(_) => {}
            _ => return Err(unfoldable()),
        }
        let Type::Path(p) = ty else {
            return Err(unfoldable());
        };
        if let Some(binding) = crate::manifests::generics::bound(self.env, &p.path) {
            let folder = Folder {
                index: self.index,
                env: &binding.env,
            };
            return folder.type_default(file, &binding.module, &binding.ty);
        }
        match self.index.resolve(module, &path_segments(&p.path)) {
            Some(Resolved::External(path)) => {
                if let Some(generic) = Generic::from_path(&path) {
                    return match generic {
                        Generic::Option => Ok(Value::Null),
                        Generic::Transparent => {
                            let inner = *type_args(&p.path).first().ok_or_else(unfoldable)?;
                            self.type_default(file, module, inner)
                        }
                        Generic::BTreeMap | Generic::HashMap | Generic::IndexMap => {
                            Ok(Value::Object(Map::new()))
                        }
                        Generic::Phantom => Ok(Value::Null),
                        // No `Default` (Result, Bound), or one kopgen does not fold (Range).
                        Generic::Result | Generic::Range | Generic::Bound => Err(unfoldable()),
                        Generic::Vec
                        | Generic::VecDeque
                        | Generic::LinkedList
                        | Generic::BinaryHeap
                        | Generic::BTreeSet
                        | Generic::HashSet
                        | Generic::IndexSet => Ok(Value::Array(Vec::new())),
                    };
                }
                Ok(match path.as_str() {
                    "bool" | "std::sync::atomic::AtomicBool" => Value::Bool(false),
                    "std::string::String" | "str" => Value::String(String::new()),
                    "char" => Value::String("\0".into()),
                    "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32"
                    | "u64" | "u128" | "usize" => Value::from(0),
                    atomic if atomic.starts_with("std::sync::atomic::Atomic") => Value::from(0),
                    "f32" | "f64" => Value::from(0.0),
                    "serde_json::Value" | "serde_json::value::Value" => Value::Null,
                    "serde_json::Map" | "serde_json::map::Map" => Value::Object(Map::new()),
                    // k8s-openapi types: their real `Default`, serialized.
                    other => match crate::manifests::library::k8s_types::default_value(other)
                        .and_then(|f| f())
                    {
                        Some(value) => value,
                        None => return Err(unfoldable()),
                    },
                })
            }
            Some(Resolved::Local(item)) => {
                let bound = self
                    .generic_env(module, item, &p.path)
                    .ok_or_else(unfoldable)?;
                let folder = Folder {
                    index: self.index,
                    env: bound.as_ref().unwrap_or(self.env),
                };
                folder.item_default(file, item).map_err(|_| unfoldable())
            }
            None => Err(unfoldable()),
        }
    }

    /// `Default::default()` of a local struct deriving `Default`, or of an enum's `#[default]` unit variant.
    /// The environment of item `item` used as `path` (written in `module`): its type
    /// parameters bound to the arguments `path` gives (`Slot<u32>`: `T` is `u32`). `Some(None)`
    /// when it has none; `None` when the arguments do not match them in number.
    pub(super) fn generic_env(
        &self,
        module: &str,
        item: usize,
        path: &syn::Path,
    ) -> Option<Option<Env>> {
        let generics = match self.index.kind(item) {
            ItemKind::Struct(s) => &s.generics,
            ItemKind::Enum(e) => &e.generics,
            ItemKind::Alias(a) => &a.generics,
            _ => return Some(None),
        };
        if generics.type_params().next().is_none() {
            return Some(None);
        }
        crate::manifests::generics::bind_generics(generics, &type_args(path), module, self.env)
            .map(Some)
    }

    pub(super) fn item_default(
        &self,
        file: &Path,
        item_index: usize,
    ) -> Result<Value, SourceError> {
        self.struct_value(file, item_index, &std::collections::HashMap::new(), true)
    }

    /// A local struct serialized by serde: `given` fields as folded, the others from their
    /// types' defaults (`..Default::default()`, or the derived `Default` when `all_default`).
    pub(super) fn struct_value(
        &self,
        file: &Path,
        item_index: usize,
        given: &std::collections::HashMap<String, Value>,
        all_default: bool,
    ) -> Result<Value, SourceError> {
        let item_kind = self.index.kind(item_index);
        let item = &self.index.items[item_index];
        let item_file = self.index.file(item).to_path_buf();
        let module = item.module.clone();
        if all_default && let Some(found) = self.index.default_impl(item_index) {
            return self.hand_written_default(&item.name, found);
        }
        match item_kind {
            ItemKind::Alias(alias) => self.type_default(&item_file, &module, &alias.ty),
            ItemKind::Struct(s) if !all_default || attrs::derives(&s.attrs, "Default") => {
                let cattrs = attrs::container_attrs(&s.attrs)
                    .map_err(|e| crate::manifests::error::syn_error(&item_file, e))?;
                match &s.fields {
                    Fields::Named(named) => {
                        let mut object = Map::new();
                        for field in named
                            .named
                            .iter()
                            .filter(|f| self.index.cfg.enabled(&f.attrs))
                        {
                            let fattrs = attrs::field_attrs(&field.attrs)
                                .map_err(|e| crate::manifests::error::syn_error(&item_file, e))?;
                            if fattrs.skip_serializing {
                                continue;
                            }
                            let Some(ident) = &field.ident else { continue };
                            let value = match given.get(&ident.to_string()) {
                                Some(value) => value.clone(),
                                None => self.type_default(&item_file, &module, &field.ty)?,
                            };
                            if let Some(predicate) = &fattrs.skip_serializing_if
                                && skips(&item_file, predicate, &value)?
                            {
                                continue;
                            }
                            if fattrs.flatten {
                                if let Value::Object(inner) = value {
                                    object.extend(inner);
                                }
                                continue;
                            }
                            object.insert(fattrs.serialized_name(ident, cattrs.rename_all), value);
                        }
                        Ok(Value::Object(object))
                    }
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                        self.type_default(&item_file, &module, &f.unnamed[0].ty)
                    }
                    Fields::Unit => Ok(Value::Null),
                    Fields::Unnamed(_) => {
                        Err(
                            SourceError::at(file, s.span(), "cannot fold tuple struct defaults")
                                .unsupported(),
                        )
                    }
                }
            }
            ItemKind::Enum(e) => {
                let cattrs = attrs::container_attrs(&e.attrs)
                    .map_err(|err| crate::manifests::error::syn_error(&item_file, err))?;
                let variant = e
                    .variants
                    .iter()
                    .find(|v| {
                        v.attrs.iter().any(|a| a.path().is_ident("default"))
                            && matches!(v.fields, Fields::Unit)
                    })
                    .ok_or_else(|| {
                        SourceError::at(file, e.span(), "enum has no #[default] unit variant")
                    })?;
                let vattrs = attrs::container_attrs(&variant.attrs)
                    .map_err(|err| crate::manifests::error::syn_error(&item_file, err))?;
                Ok(Value::String(vattrs.rename.unwrap_or_else(|| {
                    cattrs
                        .rename_all
                        .apply_to_variant(&variant.ident.to_string())
                })))
            }
            _ => Err(SourceError::at(
                &item_file,
                self.index.ident_span(item_index),
                "this type does not derive Default",
            )
            .help(HELP)),
        }
    }

    /// `T::default()` of a hand-written `impl Default for T`: its body folded like a default
    /// function's, in the `impl`'s module (where `Self` already stands for `T`).
    pub(super) fn hand_written_default(
        &self,
        name: &str,
        found: &DefaultImpl,
    ) -> Result<Value, SourceError> {
        let file = self.index.files[found.file].clone();
        let function = &found.function;
        let expr = tail_expr(&function.block).ok_or_else(|| {
            SourceError::at(
                &file,
                function.sig.ident.span(),
                format!("`impl Default for {name}` is not a single expression"),
            )
            .help(HELP)
            .unsupported()
        })?;
        self.expr(&file, &found.module, expr)
    }
}
