//! controller-gen's `maxDescLen` on a CRD. Compiled into kopgen-runtime and into kopgen (`kopgen
//! manifests`), so the YAML kopgen writes and the CRDs the project's drift test expects are cut
//! by the one function.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// Cuts every description of every version's schema to `max` characters at the last word
/// boundary, with `...` after it, as controller-gen does; `0` drops them.
pub fn truncate(crd: &mut CustomResourceDefinition, max: usize) {
    for version in &mut crd.spec.versions {
        let schema = version.schema.as_mut();
        if let Some(schema) = schema.and_then(|s| s.open_api_v3_schema.as_mut()) {
            truncate_schema(schema, max);
        }
    }
}

fn truncate_schema(schema: &mut JSONSchemaProps, max: usize) {
    if let Some(description) = &schema.description {
        if max == 0 {
            schema.description = None;
        } else if description.chars().count() > max {
            let cut: String = description.chars().take(max).collect();
            let shortened = match cut.rfind(char::is_whitespace) {
                Some(n) if n > 0 => format!("{}...", &cut[..n]),
                _ => format!("{cut}..."),
            };
            schema.description = Some(shortened);
        }
    }
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        truncate_schema(child, max);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = &mut schema.additional_properties {
        truncate_schema(child, max);
    }
    match &mut schema.items {
        Some(JSONSchemaPropsOrArray::Schema(child)) => truncate_schema(child, max),
        Some(JSONSchemaPropsOrArray::Schemas(children)) => {
            children.iter_mut().for_each(|c| truncate_schema(c, max))
        }
        None => {}
    }
    for branch in [&mut schema.any_of, &mut schema.one_of, &mut schema.all_of]
        .into_iter()
        .flatten()
    {
        branch.iter_mut().for_each(|c| truncate_schema(c, max));
    }
    if let Some(not) = &mut schema.not {
        truncate_schema(not, max);
    }
}
