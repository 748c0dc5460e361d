//! Values as serde writes them: newtypes, enum variants (tagged or not), library structs and
//! collections, numeric casts and bounds.

use super::*;

impl Folder<'_> {
    /// `Path(inner)` as serde writes it: a newtype struct of this crate (its field), a newtype
    /// variant of an enum of this crate (tagged by its name, or not when untagged), or
    /// k8s-openapi's `Quantity(..)` and `IntOrString::Int(..)`/`String(..)`.
    pub(super) fn newtype_value(
        &self,
        module: &str,
        segments: &[String],
        inner: Value,
    ) -> Option<Value> {
        if let Some((variant, name, cattrs)) = self.variant_of(module, segments) {
            return match &variant.fields {
                Fields::Unnamed(f) if f.unnamed.len() == 1 => tagged(&cattrs, name, inner),
                _ => None,
            };
        }
        match self.index.resolve(module, segments) {
            Some(Resolved::Local(item)) => match self.index.kind(item) {
                ItemKind::Struct(s) if matches!(&s.fields, Fields::Unnamed(f) if f.unnamed.len() == 1) => {
                    Some(inner)
                }
                _ => None,
            },
            Some(Resolved::External(path)) => {
                let library = path.starts_with("k8s_openapi::");
                (library
                    && (path.ends_with("::Quantity")
                        || path.ends_with("::IntOrString::Int")
                        || path.ends_with("::IntOrString::String")))
                .then_some(inner)
            }
            None => None,
        }
    }

    /// `Enum::Variant { .. }` of an enum of this crate, as serde writes it.
    pub(super) fn struct_variant(
        &self,
        file: &Path,
        module: &str,
        segments: &[String],
        given: std::collections::HashMap<String, Value>,
    ) -> Result<Option<Value>, SourceError> {
        let Some((variant, name, cattrs)) = self.variant_of(module, segments) else {
            return Ok(None);
        };
        let Fields::Named(named) = &variant.fields else {
            return Ok(None);
        };
        let vattrs = attrs::container_attrs(&variant.attrs)
            .map_err(|e| crate::manifests::error::syn_error(file, e))?;
        let rule = if vattrs.rename_all != attrs::RenameRule::None {
            vattrs.rename_all
        } else {
            cattrs.rename_all_fields
        };
        let mut object = Map::new();
        for field in &named.named {
            let fattrs = attrs::field_attrs(&field.attrs)
                .map_err(|e| crate::manifests::error::syn_error(file, e))?;
            let Some(ident) = &field.ident else {
                return Ok(None);
            };
            let Some(value) = given.get(&ident.to_string()) else {
                return Ok(None);
            };
            if fattrs.skip_serializing || fattrs.flatten || fattrs.serialize_with.is_some() {
                return Ok(None);
            }
            if let Some(predicate) = &fattrs.skip_serializing_if
                && skips(file, predicate, value)?
            {
                continue;
            }
            object.insert(fattrs.serialized_name(ident, rule), value.clone());
        }
        Ok(tagged(&cattrs, name, Value::Object(object)))
    }

    /// The variant `segments` names in an enum of this crate, with its serialized name and the
    /// enum's attributes.
    pub(super) fn variant_of(
        &self,
        module: &str,
        segments: &[String],
    ) -> Option<(&syn::Variant, String, attrs::ContainerAttrs)> {
        let (variant, enum_path) = segments.split_last()?;
        let Resolved::Local(item) = self.index.resolve(module, enum_path)? else {
            return None;
        };
        let ItemKind::Enum(e) = self.index.kind(item) else {
            return None;
        };
        let cattrs = attrs::container_attrs(&e.attrs).ok()?;
        let v = e.variants.iter().find(|v| v.ident == variant.as_str())?;
        let vattrs = attrs::container_attrs(&v.attrs).ok()?;
        let name = vattrs
            .rename
            .unwrap_or_else(|| cattrs.rename_all.apply_to_variant(variant));
        // `#[serde(untagged)]` on the variant writes it as the enum's would be.
        let mut cattrs = cattrs;
        cattrs.untagged |= vattrs.untagged;
        Some((v, name, cattrs))
    }

    /// A unit variant path `Enum::Variant` of a local enum, serialized with its renames (an
    /// untagged unit variant is `null`).
    pub(super) fn enum_variant(&self, module: &str, segments: &[String]) -> Option<Value> {
        let (variant, name, cattrs) = self.variant_of(module, segments)?;
        if !matches!(variant.fields, Fields::Unit) {
            return None;
        }
        Some(if cattrs.untagged {
            Value::Null
        } else {
            Value::String(name)
        })
    }
}

/// `value as target` for numbers, where the cast loses nothing (a wrapping or truncating cast
/// is left unfolded rather than guessed).
pub(super) fn cast(value: &Value, target: &str) -> Option<Value> {
    let Value::Number(n) = value else { return None };
    macro_rules! ints {
        ($($t:ident)*) => {
            match target {
                $(stringify!($t) => {
                    if let Some(i) = n.as_i64() {
                        return $t::try_from(i).ok().map(Value::from);
                    }
                    return n.as_u64().and_then(|u| $t::try_from(u).ok()).map(Value::from);
                })*
                _ => {}
            }
        };
    }
    ints!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);
    let float = n.as_f64()?;
    match target {
        "f64" => serde_json::Number::from_f64(float).map(Value::Number),
        // serde_json writes an f32 through f64.
        "f32" => serde_json::Number::from_f64(f64::from(float as f32)).map(Value::Number),
        _ => None,
    }
}

/// `Default::default()` or `<_>::default()` written without the type, which the context gives.
pub(super) fn is_default_call(expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) if c.args.is_empty() => matches!(&*c.func, Expr::Path(p)
            if path_segments(&p.path) == ["Default", "default"]
                || path_segments(&p.path) == ["std", "default", "Default", "default"]
                || path_segments(&p.path) == ["core", "default", "Default", "default"]),
        Expr::Paren(p) => is_default_call(&p.expr),
        _ => false,
    }
}

/// `u64::MAX`, `i32::MIN`, ...: the bounds of the integer types that serde_json can hold.
pub(super) fn integer_bound(ty: &str, bound: &str) -> Option<Value> {
    macro_rules! bounds {
        ($($t:ident)*) => {
            match (ty, bound) {
                $((stringify!($t), "MAX") => Some(Value::from($t::MAX)),
                  (stringify!($t), "MIN") => Some(Value::from($t::MIN)),)*
                _ => None,
            }
        };
    }
    bounds!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize)
}

/// A data variant's value as serde writes it: externally tagged (`{"name": value}`) or
/// untagged. Internally and adjacently tagged enums are not folded (kube-derive rejects them).
pub(super) fn tagged(cattrs: &attrs::ContainerAttrs, name: String, value: Value) -> Option<Value> {
    if cattrs.untagged {
        return Some(value);
    }
    if cattrs.tag.is_some() {
        return None;
    }
    Some(Value::Object(Map::from_iter([(name, value)])))
}

/// `T::from(x)` / `T::new(x)` serialized, for the std type named `head`: maps from pairs,
/// sets in the order serde writes them. `None` when that order is not fixed (a `HashSet` of
/// several items) or the items cannot be keys.
pub(super) fn collection_from(head: &str, inner: Value) -> Option<Value> {
    match head {
        "BTreeMap" | "HashMap" | "IndexMap" => {
            let Value::Array(pairs) = inner else {
                return None;
            };
            let mut object = Map::new();
            for pair in pairs {
                let Value::Array(kv) = pair else { return None };
                let [key, value] = <[Value; 2]>::try_from(kv).ok()?;
                let key = match key {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return None,
                };
                object.insert(key, value);
            }
            Some(Value::Object(object))
        }
        "BTreeSet" => {
            let Value::Array(mut items) = inner else {
                return None;
            };
            if items.iter().all(Value::is_string) {
                items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            } else if items.iter().all(|v| v.is_i64() || v.is_u64()) {
                items.sort_by_key(|v| {
                    v.as_i64()
                        .map_or(i128::from(v.as_u64().unwrap_or(0)), i128::from)
                });
            } else {
                return None;
            }
            items.dedup();
            Some(Value::Array(items))
        }
        "IndexSet" | "HashSet" => {
            let Value::Array(items) = inner else {
                return None;
            };
            let mut unique: Vec<Value> = Vec::with_capacity(items.len());
            for item in items {
                if !unique.contains(&item) {
                    unique.push(item);
                }
            }
            // A `HashSet` iterates in a random order: one item is the only fixed one.
            (head == "IndexSet" || unique.len() <= 1).then_some(Value::Array(unique))
        }
        "BinaryHeap" => match &inner {
            Value::Array(items) if items.len() > 1 => None,
            _ => Some(inner),
        },
        _ => Some(inner),
    }
}

/// A k8s-openapi struct literal (`ResourceRequirements { limits: Some(..), ..Default::default() }`)
/// as serde writes it: the type's `Default`, with each given field under the property whose
/// snake-case name it is (k8s-openapi's naming; `type_` is `type`), and `None` left out.
pub(super) fn library_struct(
    path: &str,
    given: std::collections::HashMap<String, Value>,
) -> Option<Value> {
    use heck::ToSnakeCase;
    let Value::Object(mut object) = crate::manifests::library::k8s_types::default_value(path)?()?
    else {
        return None;
    };
    let schema_fn = crate::manifests::library::k8s_types::lookup(path)?;
    let mut generator = schemars::SchemaGenerator::new(
        schemars::generate::SchemaSettings::default().with(|s| s.inline_subschemas = true),
    );
    let schema = schema_fn(&mut generator);
    let properties: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for (field, value) in given {
        let field = field.trim_end_matches('_');
        let key = properties
            .iter()
            .find(|p| p.to_snake_case() == field)?
            .clone();
        if value.is_null() {
            object.remove(&key);
        } else {
            object.insert(key, value);
        }
    }
    Some(Value::Object(object))
}

/// The value expression of a function body made of one expression (or `return expr;`).
pub(super) fn tail_expr(block: &syn::Block) -> Option<&Expr> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => Some(e),
        [syn::Stmt::Expr(Expr::Return(r), Some(_))] => r.expr.as_deref(),
        _ => None,
    }
}
