//! `#[kube(...)]`, every key of kube-derive 5, parsed into [`KubeAttrs`].

use proc_macro2::Span;
use syn::{Attribute, Expr, LitStr};

use super::*;

/// `#[kube(printcolumn(...))]` or its JSON string form.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrintColumn {
    pub description: Option<String>,
    pub format: Option<String>,
    pub json_path: String,
    pub name: String,
    pub priority: Option<i32>,
    #[serde(rename = "type")]
    pub type_: String,
}

/// `#[kube(scale(...))]` or its JSON string form: the scale subresource.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scale {
    pub label_selector_path: Option<String>,
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
}

/// Every `#[kube(...)]` key of kube-derive 5.
#[derive(Debug, Clone, Default)]
pub struct KubeAttrs {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub root: Option<String>,
    pub singular: Option<String>,
    pub plural: Option<String>,
    pub namespaced: bool,
    /// `#[kube(no_spec)]`: the spec's fields sit on the root object (flattened), not in `spec`.
    pub no_spec: bool,
    pub status: Option<String>,
    /// Where `status = "..."` is written, for errors in the status type.
    pub status_span: Option<Span>,
    pub derives: Vec<String>,
    pub shortnames: Vec<String>,
    pub categories: Vec<String>,
    pub printcolumns: Vec<PrintColumn>,
    pub selectable: Vec<String>,
    pub doc: Option<String>,
    pub annotations: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    pub storage: Option<bool>,
    pub served: Option<bool>,
    /// `Some(None)`: deprecated without a warning; `Some(Some(w))`: with warning `w`.
    pub deprecated: Option<Option<String>>,
    pub schema: Option<String>,
    pub scale: Option<Scale>,
    /// `#[kube(validation = ...)]`: CEL rules on the root object.
    pub validations: Vec<Expr>,
}

/// Parses `#[kube(...)]` attributes.
pub fn kube_attrs(attrs: &[Attribute]) -> syn::Result<KubeAttrs> {
    let mut out = KubeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
        attr.parse_nested_meta(|meta| {
            let key = path_name(&meta.path);
            match key.as_str() {
                "group" => out.group = Some(string_value(&meta)?),
                "version" => out.version = Some(string_value(&meta)?),
                "kind" => out.kind = Some(string_value(&meta)?),
                "root" => out.root = Some(string_value(&meta)?),
                "singular" => out.singular = Some(string_value(&meta)?),
                "plural" => out.plural = Some(string_value(&meta)?),
                "namespaced" => {
                    out.namespaced = if meta.input.peek(syn::Token![=]) {
                        let b: syn::LitBool = meta.value()?.parse()?;
                        b.value
                    } else {
                        true
                    }
                }
                "status" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.status = Some(lit.value());
                    out.status_span = Some(lit.span());
                }
                "derive" => out.derives.push(string_value(&meta)?),
                "shortname" => out.shortnames.push(string_value(&meta)?),
                "category" => out.categories.push(string_value(&meta)?),
                "selectable" => out.selectable.push(string_value(&meta)?),
                "doc" => out.doc = Some(string_value(&meta)?),
                "schema" => out.schema = Some(string_value(&meta)?),
                "storage" | "served" => {
                    let value = if meta.input.peek(syn::Token![=]) {
                        let b: syn::LitBool = meta.value()?.parse()?;
                        b.value
                    } else {
                        true
                    };
                    if key == "storage" {
                        out.storage = Some(value);
                    } else {
                        out.served = Some(value);
                    }
                }
                "deprecated" => {
                    out.deprecated = Some(if meta.input.peek(syn::Token![=]) {
                        Some(string_value(&meta)?)
                    } else {
                        None
                    })
                }
                "annotation" | "label" => {
                    // `annotation("key", "value")`, one pair per attribute.
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let k: LitStr = content.parse()?;
                    content.parse::<syn::Token![,]>()?;
                    let v: LitStr = content.parse()?;
                    let _ = content.parse::<Option<syn::Token![,]>>()?;
                    if key == "annotation" {
                        out.annotations.push((k.value(), v.value()));
                    } else {
                        out.labels.push((k.value(), v.value()));
                    }
                }
                "printcolumn" => {
                    if meta.input.peek(syn::Token![=]) {
                        let json = string_value(&meta)?;
                        let column: PrintColumn = serde_json::from_str(&json).map_err(|e| {
                            meta.error(format!("printcolumn is not valid JSON: {e}"))
                        })?;
                        out.printcolumns.push(column);
                    } else {
                        let mut column = PrintColumn::default();
                        let mut given = Vec::new();
                        meta.parse_nested_meta(|inner| {
                            let name = path_name(&inner.path);
                            given.push(name.clone());
                            match name.as_str() {
                                "name" => column.name = string_value(&inner)?,
                                "type_" => column.type_ = string_value(&inner)?,
                                "json_path" => column.json_path = string_value(&inner)?,
                                "description" => column.description = Some(string_value(&inner)?),
                                "format" => column.format = Some(string_value(&inner)?),
                                "priority" => {
                                    let p: syn::LitInt = inner.value()?.parse()?;
                                    column.priority = Some(p.base10_parse()?);
                                }
                                other => {
                                    return Err(
                                        inner.error(format!("unknown printcolumn field `{other}`"))
                                    );
                                }
                            }
                            Ok(())
                        })?;
                        let missing: Vec<&str> = ["name", "type_", "json_path"]
                            .into_iter()
                            .filter(|key| !given.iter().any(|g| g == key))
                            .collect();
                        if !missing.is_empty() {
                            return Err(meta.error(format!(
                                "printcolumn needs `name`, `type_` and `json_path`; missing: `{}`",
                                missing.join("`, `")
                            )));
                        }
                        out.printcolumns.push(column);
                    }
                }
                "scale" => {
                    if meta.input.peek(syn::Token![=]) {
                        let json = string_value(&meta)?;
                        out.scale =
                            Some(serde_json::from_str(&json).map_err(|e| {
                                meta.error(format!("scale is not valid JSON: {e}"))
                            })?);
                    } else {
                        let mut scale = Scale::default();
                        meta.parse_nested_meta(|inner| {
                            let value = string_value(&inner)?;
                            match path_name(&inner.path).as_str() {
                                "spec_replicas_path" => scale.spec_replicas_path = value,
                                "status_replicas_path" => scale.status_replicas_path = value,
                                "label_selector_path" => scale.label_selector_path = Some(value),
                                other => {
                                    return Err(
                                        inner.error(format!("unknown scale field `{other}`"))
                                    );
                                }
                            }
                            Ok(())
                        })?;
                        out.scale = Some(scale);
                    }
                }
                "validation" => out.validations.push(meta.value()?.parse()?),
                "cel" => {
                    // Generates a client-side validation method; the CRD is unchanged.
                    skip_value(&meta)?;
                }
                "no_spec" => out.no_spec = true,
                // Crate paths and attributes of the generated struct: no effect on the CRD.
                "attr" | "crates" => skip_value(&meta)?,
                other => {
                    return Err(meta.error(format!(
                        "unknown #[kube] key `{other}` (kube-derive 5 does not know it either)"
                    )));
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}
