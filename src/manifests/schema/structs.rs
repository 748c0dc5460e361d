//! Structs as schemars' derive expands them: named fields (flatten, skip, defaults, renames),
//! tuple structs and newtypes, `from`/`try_from`.

use super::*;

impl Builder<'_> {
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

    pub(super) fn field_type_schema(
        &mut self,
        file: &Path,
        module: &str,
        field: &syn::Field,
        fattrs: &FieldAttrs,
        env: &Env,
    ) -> Result<Built, SourceError> {
        if let Some(function) = &fattrs.schema_with {
            let schema = crate::manifests::fold::schema_with(self.index, file, module, function)?;
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

    pub(super) fn named_fields<'f>(
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
            DefaultAttr::Path(path) => Some(fold::call(self.index, file, module, path, env)?),
            // A hand-written `impl Default`: each field takes its value in `T::default()`.
            DefaultAttr::Default if !cattrs.derives_default => match &cattrs.ident {
                Some(name) => fold::impl_default(self.index, module, name, env)?,
                None => None,
            },
            _ => None,
        };
        let mut errors: Vec<SourceError> = Vec::new();
        // A field under a false `cfg` does not exist in the operator's build.
        for field in fields.filter(|f| self.index.cfg.enabled(&f.attrs)) {
            // Every field is tried: the first error is the struct's, the others go to `more`.
            let mut one_field = || -> Result<(), SourceError> {
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
                    return Ok(());
                }
                let Some(ident) = &field.ident else {
                    return Ok(());
                };
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
                    return Ok(());
                }
                let built = self.field_type_schema(file, module, field, &fattrs, env)?;
                let is_option = built.is_option;
                let mut field_schema = built.schema;
                add_field_mutators(&mut field_schema, &fattrs);
                if let Some(value) = fold::field_default(
                    self.index,
                    file,
                    module,
                    field,
                    &fattrs,
                    match (&container_default, &container_value) {
                        (_, Some(object)) => Some(fold::ContainerDefault::Fields(object, &name)),
                        (Some(_), None) => Some(fold::ContainerDefault::Derived),
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
                let has_default =
                    container_default.is_some() || fattrs.default != DefaultAttr::None;
                // Deserialize contract (kube-derive's): optional when it has a default, or is an
                // Option that is not marked required.
                let optional = has_default || (!fattrs.required && is_option);
                insert_property(&mut schema, &name, optional, field_schema);
                Ok(())
            };
            if let Err(error) = one_field() {
                errors.push(error);
            }
        }
        if !errors.is_empty() {
            let first = errors.remove(0);
            self.more.extend(errors);
            return Err(first);
        }
        Ok(schema)
    }

    /// The schema of positional fields, via schemars' tuple impls.
    pub(super) fn tuple_schema<'f>(
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
    pub(super) fn schema_via_from(
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
}
