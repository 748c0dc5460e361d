//! The render stage: from the derived versions of one kind to its YAML file (transforms, merge,
//! description limit, lint, serialization). It holds no syntax tree, so an incremental run
//! renders on worker threads while the derive stage, which must stay on the parsing thread,
//! goes on.

use std::path::PathBuf;

use super::{
    HEADER, Options, Output,
    crd::{self, Derived},
    error::SourceError,
    lint, props,
    transform::Transforms,
};

/// Every version of one (group, kind), derived.
pub struct Job {
    /// Position of the kind in the run, so results are ordered whatever thread rendered them.
    pub position: usize,
    /// In Kubernetes version priority order, as the deriving thread sorts them.
    pub versions: Vec<Derived>,
}

/// One kind's file and the lint findings on its CRD (located in the source by the caller).
pub struct Rendered {
    pub position: usize,
    pub output: Output,
    pub crd_name: String,
    pub findings: Vec<lint::Finding>,
}

/// Renders one kind: each version through the transforms, then one CRD as `merge_crds` builds it.
pub fn render(
    job: Job,
    transforms: &mut Transforms,
    options: &Options,
) -> Result<Rendered, Vec<SourceError>> {
    let versions = job.versions;
    let Some(first) = versions.first() else {
        return Err(Vec::new());
    };
    let first_at = first.at.clone();
    for (i, later) in versions.iter().enumerate() {
        if let Some(earlier) = versions[..i]
            .iter()
            .find(|d| d.version() == later.version())
        {
            let kind = later.crd.spec.names.kind.clone();
            return Err(vec![
                later
                    .at
                    .reworded(format!(
                        "version {} of {kind} is declared twice (also at {}:{})",
                        later.version(),
                        earlier.at.file.display(),
                        earlier.at.line
                    ))
                    .help("each version of a kind needs its own `#[kube(version = ...)]`; remove or rename one"),
            ]);
        }
    }
    // Named after the first version in priority order, whichever version is stored.
    let path = PathBuf::from(format!(
        "{}_{}.yaml",
        first.crd.spec.group, first.crd.spec.names.plural
    ));
    let stored: Vec<(String, SourceError)> = versions
        .iter()
        .filter(|d| d.storage())
        .map(|d| (d.version().to_owned(), d.at.clone()))
        .collect();
    let mut crds = Vec::with_capacity(versions.len());
    let mut schemas = Vec::with_capacity(versions.len());
    let mut errors = Vec::new();
    for derived in versions {
        match crd::render(derived, transforms) {
            Ok(rendered) => {
                let version = rendered.crd.spec.versions.first().map(|v| v.name.clone());
                if let (Some(version), Some(schema)) = (version, rendered.schema) {
                    schemas.push((version, schema, rendered.at));
                }
                crds.push(rendered.crd);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Schemas that read as `JSONSchemaProps` are linted and written from their JSON; otherwise
    // (or to truncate descriptions) every version takes `crd()`'s typed round trip, which
    // reports the schemas it cannot read.
    let direct = options.max_desc_len.is_none()
        && schemas
            .iter()
            .all(|(_, schema, _)| schema.as_object().is_some_and(props::check));
    let mut typed = Vec::new();
    if !direct {
        for (version, schema, at) in std::mem::take(&mut schemas) {
            match crd::typed_schema(schema, &at) {
                Ok(schema) => typed.push((version, schema)),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
    }
    let kind = crds
        .first()
        .map(|c| c.spec.names.kind.clone())
        .unwrap_or_default();
    let mut merged = if crds.len() == 1 {
        crds.remove(0)
    } else {
        match stored.as_slice() {
            [(version, _)] => kube_core::crd::merge_crds(crds, version).map_err(|e| {
                vec![first_at
                    .reworded(format!("cannot merge the versions of {kind}: {e}"))
                    .help("kube's merge_crds needs every version of a kind to agree on `namespaced`, the group and the names (plural, singular, short names, categories); make them the same")]
            })?,
            [] => {
                return Err(vec![
                    first_at
                        .reworded(format!("no version of {kind} is the storage version"))
                        .help("exactly one version needs storage (the default); remove `storage = false` from one"),
                ]);
            }
            [(a, at), (b, b_at), ..] => {
                let second = format!("{}:{}", b_at.file.display(), b_at.line);
                return Err(vec![
                    at.reworded(format!(
                        "{a} and {b} (at {second}) are both storage versions of {kind}"
                    ))
                    .help("mark all but one version with #[kube(storage = false)]"),
                ]);
            }
        }
    };
    let (findings, yaml) = if direct {
        let json: Vec<(String, &serde_json::Map<String, serde_json::Value>)> = schemas
            .iter()
            .filter_map(|(version, schema, _)| Some((version.clone(), schema.as_object()?)))
            .collect();
        let crd = props::Crd {
            crd: &merged,
            schemas: &json,
        };
        let findings = if options.lint {
            lint::check_with(&merged, |version| crd.schema_of(version))
        } else {
            Vec::new()
        };
        let yaml = crd::to_yaml(HEADER, &crd).map_err(|e| vec![first_at.reworded(e)])?;
        if cfg!(debug_assertions) {
            assert_eq!(
                yaml,
                typed_yaml(&merged, &schemas),
                "the JSON schema writer departs from the typed CRD"
            );
        }
        (findings, yaml)
    } else {
        for (version, schema) in typed {
            crd::put_schema(&mut merged, &version, schema);
        }
        if let Some(max) = options.max_desc_len {
            lint::truncate_descriptions(&mut merged, max);
        }
        let findings = if options.lint {
            lint::check(&merged)
        } else {
            Vec::new()
        };
        let yaml = crd::to_yaml(HEADER, &merged).map_err(|e| vec![first_at.reworded(e)])?;
        (findings, yaml)
    };
    Ok(Rendered {
        position: job.position,
        output: Output {
            path,
            contents: yaml,
        },
        crd_name: merged.metadata.name.clone().unwrap_or_default(),
        findings,
    })
}

/// The CRD as `crd()` builds it, with typed schemas, written: what the JSON writer must equal
/// (checked in debug builds, so by every test).
fn typed_yaml(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    schemas: &[(String, serde_json::Value, SourceError)],
) -> String {
    let mut crd = crd.clone();
    for (version, schema, at) in schemas {
        if let Ok(schema) = crd::typed_schema(schema.clone(), at) {
            crd::put_schema(&mut crd, version, schema);
        }
    }
    crd::to_yaml(HEADER, &crd).unwrap_or_default()
}
