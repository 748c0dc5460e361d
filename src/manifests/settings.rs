//! The schema generator settings of kube-derive's `crd()`: every stage that builds or transforms
//! a schema uses these, so kopgen's schemas are schemars' own.

use schemars::generate::SchemaSettings;

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
