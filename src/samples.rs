//! `config/samples/*.yaml` checked against the CRDs `kopgen manifests` derives, offline: a
//! sample the API server would refuse (a field of the wrong type, a value outside its enum or
//! bounds, a required field missing, a field the schema does not have, which `kubectl apply`'s
//! strict field validation refuses) is reported at the sample's document, and fails `--check`.
//! Validation rules (CEL) are left to the API server.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::manifests::{rule_check, value_check};

mod sized;
mod yaml11;

pub use yaml11::as_kubectl_reads;

/// `[sample]: <file>:<line>: ...` (the caller puts the level in front) for every sample document of a kind among `crds` that
/// its version's schema refuses (`root`: the project; `shown`: how to print a path).
pub fn problems(
    root: &Path,
    crds: &[CustomResourceDefinition],
    shown: &dyn Fn(&Path) -> String,
) -> Vec<String> {
    let dir = root.join("config/samples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = match crate::regular_file::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => {
                found.push(format!(
                    "[sample]: {}: cannot be read ({e})\n  help: a sample is a UTF-8 YAML file of at most {} MiB, as kubectl reads it",
                    shown(&file),
                    crate::regular_file::MAX_BYTES >> 20
                ));
                continue;
            }
        };
        // kubectl reads a file that starts with a byte order mark as if it had none.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if let Err((line, problem)) = crate::yaml::check_depth(text) {
            found.push(format!("[sample]: {}:{line}: {problem}", shown(&file)));
            continue;
        }
        for (line, document) in documents(text) {
            let document = yaml11::as_kubectl_reads(document);
            let object = match crate::yaml::from_str::<Value>(&document) {
                Ok(object) => object,
                Err(e) => {
                    let at = line + e.line.saturating_sub(1);
                    let e = &e.message;
                    found.push(format!(
                        "[sample]: {}:{at}: not YAML kubectl can apply: {e}",
                        shown(&file)
                    ));
                    continue;
                }
            };
            if let Some(problem) = problem(crds, &object) {
                found.push(format!(
                    "[sample]: {}:{line}: {problem}\n  help: make the sample hold to the kind's schema (the API server would refuse it)",
                    shown(&file)
                ));
            }
        }
    }
    found
}

/// The documents of a multi-document YAML text, each with the line it starts on.
fn documents(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut start, mut start_line, mut offset) = (0, 1, 0);
    for (number, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" {
            out.push((start_line, &text[start..offset]));
            start = offset + line.len();
            start_line = number + 2;
        }
        offset += line.len();
    }
    out.push((start_line, &text[start..]));
    out.retain(|(_, doc)| !doc.trim().is_empty());
    out
}

/// What `object`'s CRD version refuses in it, if it is an object of one of `crds`.
fn problem(crds: &[CustomResourceDefinition], object: &Value) -> Option<String> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/')?;
    let crd = crds
        .iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == kind)?;
    let Some(served) = crd.spec.versions.iter().find(|v| v.name == version) else {
        return Some(format!(
            "{kind} has no version {version} (the CRD serves {})",
            crd.spec
                .versions
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let schema = served.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    // apiVersion, kind and metadata are the API server's own, validated apart.
    let mut body = object.clone();
    if let Some(map) = body.as_object_mut() {
        for key in ["apiVersion", "kind", "metadata"] {
            map.remove(key);
        }
    }
    // A rule the API server would refuse for its cost (or that cannot be priced) is not run:
    // evaluated on a sample it can take longer than anything else kopgen does (40 nested
    // `all()` over two items never finished). Nor is one that, priced at this sample's sizes,
    // costs more than the server lets one call run (it took seconds per document).
    let over = |priced: Vec<crate::manifests::cel_cost::RuleCost>, limit: u64| {
        (priced.into_iter())
            .filter(move |rule| rule.cost.as_ref().map_or(true, |cost| *cost > limit))
            .map(|rule| rule.expression)
    };
    let mut refused: std::collections::HashSet<String> = over(
        crate::manifests::cel_cost::estimate_version(version, schema),
        crate::manifests::cel_cost::RULE_LIMIT,
    )
    .collect();
    let sized = sized::to_sample(schema, &body);
    refused.extend(over(
        crate::manifests::cel_cost::estimate_version(version, &sized),
        sized::CALL_LIMIT,
    ));
    value_check::object_problem(schema, &body)
        .or_else(|| rule_check::problem(schema, &body, &refused))
        .map(|p| format!("{kind} {}: {p}", name_of(object)))
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(no name)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_lines() {
        let text = "a: 1\n---\nb: 2\nc: 3\n---\n";
        assert_eq!(documents(text), vec![(1, "a: 1\n"), (3, "b: 2\nc: 3\n")]);
    }
}
