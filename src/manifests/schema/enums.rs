//! Enums as schemars' derive expands them: unit enums, externally tagged, untagged.

use super::*;

impl Builder<'_> {
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
        let cfg = &self.index.cfg;
        let variants: Vec<&syn::Variant> = item
            .variants
            .iter()
            .filter(|v| cfg.enabled(&v.attrs))
            .collect();
        for variant in &variants {
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
        let has_unit = variants.iter().any(|v| matches!(v.fields, Fields::Unit));
        let has_data = variants.iter().any(|v| !matches!(v.fields, Fields::Unit));
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

    pub(super) fn variant_body(
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
