//! Assembles CustomResourceDefinitions exactly as kube-derive's `crd()` does: the same root
//! schema, the same generator transforms, the same k8s-openapi structs, merged across versions
//! with kube-core's `merge_crds`, and written by `crate::yaml`.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresourceScale,
    CustomResourceSubresourceStatus, CustomResourceSubresources, CustomResourceValidation,
    JSONSchemaProps, SelectableField,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::Schema;
use serde_json::{Map, Value, json};

use super::{
    error::SourceError,
    index::{Index, ItemKind},
    kinds::CustomResource,
    schema::{Builder, Scoped},
};

/// The type `#[derive(CustomResource)]` is on: kube-derive takes structs and enums.
#[derive(Clone, Copy)]
enum Spec<'a> {
    Struct(&'a syn::ItemStruct),
    Enum(&'a syn::ItemEnum),
}

impl Spec<'_> {
    fn ident(&self) -> &syn::Ident {
        match self {
            Spec::Struct(s) => &s.ident,
            Spec::Enum(e) => &e.ident,
        }
    }

    fn generics(&self) -> &syn::Generics {
        match self {
            Spec::Struct(s) => &s.generics,
            Spec::Enum(e) => &e.generics,
        }
    }
}

/// One version of one kind as the derive stage leaves it: the CRD `<Kind>::crd()` returns, but
/// with its root schema not yet run through the generator's transforms.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The CRD, without `openAPIV3Schema`.
    pub crd: CustomResourceDefinition,
    /// The root schema, before the transforms; `None` under `#[kube(schema = "disabled")]`.
    pub root: Option<Schema>,
    /// Where this version is declared, for errors found while rendering.
    pub at: SourceError,
}

impl Derived {
    pub fn version(&self) -> &str {
        self.crd
            .spec
            .versions
            .first()
            .map_or("", |v| v.name.as_str())
    }

    pub fn storage(&self) -> bool {
        self.crd.spec.versions.first().is_some_and(|v| v.storage)
    }

    /// An error at this version's declaration.
    pub fn error(&self, message: impl Into<String>) -> SourceError {
        self.at.reworded(message)
    }
}

/// Runs the generator's transforms on a derived root schema, as `into_root_schema_for` does,
/// and reads it into the CRD as `crd()` does (through `serde_json::from_value`).
pub fn finish(
    mut derived: Derived,
    transforms: &mut super::transform::Transforms,
) -> Result<CustomResourceDefinition, SourceError> {
    // Under `#[kube(schema = "disabled")]` there is no root, and the version an empty schema.
    let open_api_v3_schema = match derived.root.take() {
        None => None,
        Some(mut root) => {
            transforms.apply(&mut root).map_err(|panic| {
                derived
                    .error(format!("kube-derive's crd() would panic on this schema: {panic}"))
                    .help("kube-core cannot rewrite it into a structural schema; see the enum or flattened type it names")
            })?;
            Some(typed_schema(root.to_value(), &derived.at)?)
        }
    };
    if let Some(version) = derived.crd.spec.versions.first_mut() {
        version.schema = Some(CustomResourceValidation { open_api_v3_schema });
    }
    Ok(derived.crd)
}

/// A version's schema as `crd()` reads it: through `serde_json::from_value`, whose failure
/// `crd()` would panic on.
fn typed_schema(schema: Value, at: &SourceError) -> Result<JSONSchemaProps, SourceError> {
    serde_json::from_value(schema).map_err(|e| {
        at.reworded(format!(
            "the derived schema is not a valid JSONSchemaProps ({e}); kube-derive's crd() would panic on it"
        ))
        .help(
            "a field's type has a schema Kubernetes cannot hold (e.g. chrono::TimeDelta, CString); \
             give that field `#[schemars(with = \"...\")]` or `schema_with` a type Kubernetes accepts",
        )
    })
}

/// One version of one kind: its CRD as `<Kind>::crd()` returns it, but for the transforms of
/// the root schema, which [`render`] runs.
pub fn single_version_crd(
    builder: &mut Builder,
    index: &Index,
    cr: &CustomResource,
) -> Result<Derived, SourceError> {
    let item = &index.items[cr.item];
    let spec = match index.kind(cr.item) {
        ItemKind::Struct(s) => Spec::Struct(s),
        ItemKind::Enum(e) => Spec::Enum(e),
        _ => {
            return Err(SourceError::at(
                &cr.file,
                cr.span,
                "#[derive(CustomResource)] on something that is neither a struct nor an enum",
            ));
        }
    };
    let module = item.module.clone();
    let group = cr.group().to_owned();
    let version = cr.version().to_owned();
    let kind = cr.kind().to_owned();
    if cr.attrs.schema.as_deref() == Some("manual") {
        return Err(SourceError::at(
            &cr.file,
            cr.span,
            "`schema = \"manual\"` takes the schema from a hand-written `impl JsonSchema`, which only running Rust can read",
        )
        .help("`kopgen manifests --derive=auto` (the default) compiles the crate for this kind; or derive JsonSchema instead")
        .unsupported());
    }
    if cr
        .attrs
        .schema
        .as_deref()
        .is_some_and(|m| m != "derived" && m != "disabled")
    {
        return Err(SourceError::at(
            &cr.file,
            cr.span,
            "`schema` takes \"derived\", \"disabled\" or \"manual\"",
        ));
    }
    if spec
        .generics()
        .params
        .iter()
        .any(|p| matches!(p, syn::GenericParam::Type(_)))
    {
        return Err(SourceError::at(
            &cr.file,
            spec.ident().span(),
            "generic spec types cannot be a CustomResource",
        )
        .help("kube-derive needs a concrete spec type; remove the type parameters"));
    }
    if let (Spec::Enum(e), true) = (spec, cr.attrs.no_spec) {
        return Err(SourceError::at(
            &cr.file,
            e.ident.span(),
            "`kube(no_spec)` requires a struct with named fields; an enum has no properties to lift onto the root",
        )
        .help("remove `no_spec`, or make the spec a struct"));
    }

    // `schema = "disabled"`: `crd()` carries no schema, and the types need not derive JsonSchema.
    let root = if cr.attrs.schema.as_deref() == Some("disabled") {
        None
    } else {
        Some(root_schema(builder, cr, &module, spec, &kind)?)
    };

    let plural = cr.plural();
    let singular = cr.singular();
    let opt_vec = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    let annotations = (!cr.attrs.annotations.is_empty()).then(|| {
        cr.attrs
            .annotations
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>()
    });
    let labels = (!cr.attrs.labels.is_empty())
        .then(|| cr.attrs.labels.iter().cloned().collect::<BTreeMap<_, _>>());
    let printer_columns = (!cr.attrs.printcolumns.is_empty()).then(|| {
        cr.attrs
            .printcolumns
            .iter()
            .map(|p| CustomResourceColumnDefinition {
                description: p.description.clone(),
                format: p.format.clone(),
                json_path: p.json_path.clone(),
                name: p.name.clone(),
                priority: p.priority,
                type_: p.type_.clone(),
            })
            .collect()
    });
    let selectable_fields = (!cr.attrs.selectable.is_empty()).then(|| {
        cr.attrs
            .selectable
            .iter()
            .map(|path| SelectableField {
                json_path: path.clone(),
            })
            .collect()
    });
    let subresources = cr
        .attrs
        .status
        .as_ref()
        .map(|_| CustomResourceSubresources {
            scale: cr
                .attrs
                .scale
                .as_ref()
                .map(|s| CustomResourceSubresourceScale {
                    label_selector_path: s.label_selector_path.clone(),
                    spec_replicas_path: s.spec_replicas_path.clone(),
                    status_replicas_path: s.status_replicas_path.clone(),
                }),
            status: Some(CustomResourceSubresourceStatus(json!({}))),
        });
    let (deprecated, deprecation_warning) = match &cr.attrs.deprecated {
        None => (None, None),
        Some(warning) => (Some(true), warning.clone()),
    };
    let crd = CustomResourceDefinition {
        metadata: ObjectMeta {
            annotations,
            labels,
            name: Some(format!("{plural}.{group}")),
            ..Default::default()
        },
        spec: CustomResourceDefinitionSpec {
            group,
            names: CustomResourceDefinitionNames {
                categories: opt_vec(&cr.attrs.categories),
                kind,
                plural,
                short_names: opt_vec(&cr.attrs.shortnames),
                singular: Some(singular),
                ..Default::default()
            },
            scope: if cr.attrs.namespaced {
                "Namespaced"
            } else {
                "Cluster"
            }
            .into(),
            versions: vec![CustomResourceDefinitionVersion {
                additional_printer_columns: printer_columns,
                deprecated,
                deprecation_warning,
                name: version,
                schema: None,
                selectable_fields,
                served: cr.attrs.served.unwrap_or(true),
                storage: cr.attrs.storage.unwrap_or(true),
                subresources,
            }],
            ..Default::default()
        },
        ..Default::default()
    };
    Ok(Derived {
        crd,
        root,
        at: SourceError::at(&cr.file, cr.span, ""),
    })
}

/// The root schema `crd()` derives, before the generator's transforms: the root object
/// kube-derive generates (`metadata` skipped, `spec`, `status`) with its doc and rules.
fn root_schema(
    builder: &mut Builder,
    cr: &CustomResource,
    module: &str,
    spec: Spec,
    kind: &str,
) -> Result<Schema, SourceError> {
    // The root object kube-derive generates: `metadata` (skipped), `spec`, and `status`.
    builder.implements_schema(&cr.file, cr.span, cr.item)?;
    let mut root = match spec {
        Spec::Struct(s) if cr.attrs.no_spec => no_spec_root(builder, cr, module, s)?,
        _ => spec_root(builder, cr, module, spec)?,
    };
    // `#[kube(validation = ...)]`: kube-derive derives KubeSchema for the root with these rules.
    let root_rules = super::attrs::Metadata {
        x_kube_rules: cr.attrs.validations.clone(),
        ..Default::default()
    };
    let root_ident = cr.attrs.root.clone().unwrap_or_else(|| kind.to_owned());
    let doc = cr.attrs.doc.clone().unwrap_or_else(|| {
        format!(
            " Auto-generated derived type for {} via `CustomResource`",
            spec.ident()
        )
    });
    let doc = doc.strip_prefix(' ').unwrap_or(&doc).to_owned();
    let (title, description) = schemars::_private::get_title_and_description(&doc);
    if !title.is_empty() {
        root.insert("title".into(), title.into());
    }
    if !description.is_empty() {
        root.insert("description".into(), description.into());
    }
    super::schema::apply_x_kube(&cr.file, &mut root, &root_rules)?;
    if root.get("title").is_none() {
        root.insert("title".into(), root_ident.clone().into());
    }
    Ok(root)
}

/// The type `#[kube(status = "...")]` names, if any.
fn status_type(cr: &CustomResource) -> Result<Option<syn::Type>, SourceError> {
    cr.attrs
        .status
        .as_ref()
        .map(|status| {
            // Parsed as the literal, so that errors in the type point at `status = "..."`.
            let span = cr.attrs.status_span.unwrap_or(cr.span);
            syn::LitStr::new(status, span).parse().map_err(|e| {
                SourceError::at(
                    &cr.file,
                    span,
                    format!("status = {status:?} is not a type: {e}"),
                )
            })
        })
        .transpose()
}

/// The root schema of a custom resource: `spec` (required) and `status` (optional).
fn spec_root(
    builder: &mut Builder,
    cr: &CustomResource,
    module: &str,
    spec: Spec,
) -> Result<Schema, SourceError> {
    let env = Default::default();
    let spec_schema = match spec {
        Spec::Struct(s) => builder.struct_schema(&cr.file, module, s, &env)?,
        Spec::Enum(e) => builder.enum_schema(&cr.file, module, e, &env)?,
    };
    let mut root = Schema::from(
        json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let mut properties = Map::new();
    properties.insert("spec".into(), spec_schema.to_value());
    let required = vec![Value::from("spec")];
    if let Some(status_ty) = status_type(cr)? {
        let option: syn::Type = syn::parse_quote!(Option<#status_ty>);
        let built = builder.type_schema(
            &cr.file,
            &Scoped {
                ty: &option,
                module,
                env: &env,
            },
        )?;
        properties.insert("status".into(), built.schema.to_value());
    }
    root.insert("properties".into(), Value::Object(properties));
    root.insert("required".into(), Value::Array(required));
    Ok(root)
}

/// The root schema under `#[kube(no_spec)]`: kube-derive's root struct then carries
/// `#[serde(flatten)] spec: Spec` and `status: Option<Status>`, so the schema is that of such a
/// struct, which kopgen derives like any other.
fn no_spec_root(
    builder: &mut Builder,
    cr: &CustomResource,
    module: &str,
    spec: &syn::ItemStruct,
) -> Result<Schema, SourceError> {
    let spec_ident = &spec.ident;
    let status_field = status_type(cr)?.map(|ty| quote::quote! { pub status: Option<#ty>, });
    let root: syn::ItemStruct = syn::parse_quote! {
        #[serde(rename_all = "camelCase")]
        pub struct KopgenNoSpecRoot {
            #[serde(flatten)]
            pub spec: #spec_ident,
            #status_field
        }
    };
    builder.struct_schema(&cr.file, module, &root, &Default::default())
}
