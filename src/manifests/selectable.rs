//! The API server's rules for a version's selectable fields.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

/// The API server's rules for selectable fields: at most 8, each a `.a.b` path (no brackets)
/// to a string, boolean or integer field outside `metadata`, none twice.
pub fn problems(
    schema: &JSONSchemaProps,
    fields: Option<
        &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::SelectableField],
    >,
) -> Vec<String> {
    let fields = fields.unwrap_or_default();
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for field in fields {
        let path = field.json_path.as_str();
        let node = (!path.contains('['))
            .then(|| super::validation_rules::field_at(schema, path))
            .flatten();
        if path == ".metadata" || path.starts_with(".metadata.") {
            problems.push(format!("selectable field `{path}` points into metadata"));
        } else if !node
            .is_some_and(|n| matches!(n.type_.as_deref(), Some("string" | "boolean" | "integer")))
        {
            problems.push(format!(
                "selectable field `{path}` does not name a string, boolean or integer field of the schema (write `.spec.field`)"
            ));
        }
        if !seen.insert(path) {
            problems.push(format!("selectable field `{path}` is given twice"));
        }
    }
    if seen.len() > 8 {
        problems.push(format!(
            "{} selectable fields: the API server takes at most 8 per version",
            seen.len()
        ));
    }
    problems
}
