//! The structural-schema lint, CRD size budgets and `--max-desc-len`: one failing example per
//! rule, each reported at the Rust field that caused it.

mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use support::{Session, tree};

const HEADER: &str = "use std::collections::BTreeMap;\nuse kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n";

/// A crate whose spec has `fields` (from line 9 of src/lib.rs), plus `extra` items after it.
fn spec(fields: &str, extra: &str) -> String {
    format!(
        "{HEADER}\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         #[kube(group = \"lint.example.com\", version = \"v1\", kind = \"Linty\", namespaced)]\n\
         pub struct LintySpec {{\n{fields}}}\n{extra}"
    )
}

fn manifests(source: &str, lint: &str) -> (support::Run, Session) {
    let session = Session::new();
    session.write("src/lib.rs", source);
    let run = session.kopgen(&[
        "manifests",
        "--paths",
        "src",
        "--output-dir",
        "out",
        &format!("--lint={lint}"),
    ]);
    (run, session)
}

/// Asserts the default lint fails with `expected` in stderr and writes nothing.
fn fails_with(source: &str, expected: &[&str]) {
    let session = Session::new();
    session.write("src/lib.rs", source);
    let before = tree(session.path());
    let run = session.kopgen(&["manifests", "--paths", "src", "--output-dir", "out"]);
    assert_eq!(run.status, 1, "expected a lint error:\n{}", run.stderr);
    for needle in expected {
        assert!(
            run.stderr.contains(needle),
            "expected {needle:?} in:\n{}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert!(tree(session.path()) == before);
}

#[test]
fn untyped_values_are_errors_at_the_field() {
    fails_with(
        &spec("    pub anything: serde_json::Value,\n", ""),
        &[
            "error[untyped]",
            "src/lib.rs:9:5:",
            "at spec.anything",
            "x-kubernetes-preserve-unknown-fields",
        ],
    );
}

#[test]
fn forbidden_keywords_are_errors() {
    fails_with(
        &spec("    pub by_port: BTreeMap<u16, String>,\n", ""),
        &[
            "error[forbidden-keyword]",
            "src/lib.rs:9:5:",
            "`patternProperties` is not allowed",
        ],
    );
    fails_with(
        &spec("    pub pair: (String, i32),\n", ""),
        &[
            "error[forbidden-keyword]",
            "src/lib.rs:9:5:",
            "tuple `items`",
        ],
    );
}

#[test]
fn additional_properties_beside_properties_is_an_error() {
    fails_with(
        &spec(
            "    pub name: String,\n    #[serde(flatten)]\n    pub extra: BTreeMap<String, String>,\n",
            "",
        ),
        &[
            "error[additional-properties-with-properties]",
            "mutually exclusive",
            "at spec)",
        ],
    );
}

#[test]
fn list_map_keys_must_be_required_scalars() {
    let item = "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Item { pub name: Option<String>, pub value: i32 }\n";
    fails_with(
        &spec(
            "    #[schemars(extend(\"x-kubernetes-list-type\" = \"map\", \"x-kubernetes-list-map-keys\" = [\"name\"]))]\n    pub items: Vec<Item>,\n",
            item,
        ),
        &[
            "error[list-map-keys]",
            "src/lib.rs:9:5:",
            "`name` is neither required nor defaulted",
        ],
    );
    fails_with(
        &spec(
            "    #[schemars(extend(\"x-kubernetes-list-type\" = \"map\", \"x-kubernetes-list-map-keys\" = [\"missing\"]))]\n    pub items: Vec<Item>,\n",
            item,
        ),
        &[
            "error[list-map-keys]",
            "`missing` is not a property of the items",
        ],
    );
}

#[test]
fn defaults_must_match_their_type() {
    fails_with(
        &spec(
            "    #[serde(default = \"three\")]\n    #[schemars(with = \"String\")]\n    pub port: i32,\n",
            "fn three() -> i32 { 3 }\n",
        ),
        &[
            "error[default-type]",
            "src/lib.rs:9:5:",
            "default 3 is not of type string",
        ],
    );
}

#[test]
fn cel_rules_must_parse() {
    let rules = "    #[schemars(extend(\"x-kubernetes-validations\" = [{\"rule\": \"self.min <= self.max\"}, {\"rule\": \"self.min <=\", \"message\": \"bad\"}]))]\n    pub range: Range,\n";
    let range = "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Range { pub min: i32, pub max: i32 }\n";
    fails_with(
        &spec(rules, range),
        &[
            "error[cel]",
            "src/lib.rs:9:5:",
            "CEL rule `self.min <=` does not parse",
            "at spec.range",
        ],
    );
    let good = "    #[schemars(extend(\"x-kubernetes-validations\" = [{\"rule\": \"self.min <= self.max\", \"message\": \"min above max\"}]))]\n    pub range: Range,\n";
    let (run, session) = manifests(&spec(good, range), "deny");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let crd =
        std::fs::read_to_string(session.join("out/lint.example.com_linties.yaml")).expect("crd");
    assert!(crd.contains("x-kubernetes-validations:\n                - message: min above max\n                  rule: self.min <= self.max\n"), "{crd}");
}

/// What the API server checks of a rule besides its expression (found by applying the parity
/// fixtures to a real kube-apiserver, see tests/control_plane.rs).
#[test]
fn cel_rule_reasons_field_paths_and_messages_are_what_the_api_server_accepts() {
    let range = "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Range { pub min: i32, pub max: i32, pub labels: std::collections::BTreeMap<String, String> }\n";
    for (rule, expected) in [
        (
            r#"{"rule": "self.min <= self.max", "reason": "FieldValueTooMany"}"#,
            "reason `FieldValueTooMany` of rule `self.min <= self.max` is not one of",
        ),
        (
            r#"{"rule": "self.min <= self.max", "fieldPath": ".name"}"#,
            "fieldPath `.name` of rule `self.min <= self.max` does not name a field",
        ),
        (
            r#"{"rule": "self.min <= self.max", "fieldPath": "min"}"#,
            "fieldPath `min` of rule",
        ),
        (
            r#"{"rule": "self.min <= self.max", "message": "two\nlines"}"#,
            "has a line break",
        ),
        (r#"{"rule": " "}"#, "a validation rule is empty"),
    ] {
        let field = format!(
            "    #[schemars(extend(\"x-kubernetes-validations\" = [{rule}]))]\n    pub range: Range,\n"
        );
        fails_with(&spec(&field, range), &["error[cel]", expected]);
    }
    for good in [
        r#"{"rule": "self.min <= self.max", "fieldPath": ".max", "reason": "FieldValueInvalid"}"#,
        r#"{"rule": "true", "fieldPath": ".labels['app']"}"#,
        r#"{"rule": "true", "fieldPath": "['min']"}"#,
    ] {
        let field = format!(
            "    #[schemars(extend(\"x-kubernetes-validations\" = [{good}]))]\n    pub range: Range,\n"
        );
        let (run, _) = manifests(&spec(&field, range), "deny");
        assert_eq!(run.status, 0, "{good}: {}", run.stderr);
    }
}

#[test]
fn groups_of_the_kubernetes_project_need_the_approval_annotation() {
    let source = |annotation: &str| {
        format!(
            "{HEADER}\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"gateway.networking.k8s.io\", version = \"v1\", kind = \"Route\"{annotation})]\n\
             pub struct RouteSpec {{\n    pub x: i32,\n}}\n"
        )
    };
    fails_with(
        &source(""),
        &[
            "error[api-approval]",
            "group gateway.networking.k8s.io is reserved for the Kubernetes project",
        ],
    );
    fails_with(
        &source(", annotation(\"api-approved.kubernetes.io\", \"pending\")"),
        &["error[api-approval]"],
    );
    for ok in [
        "https://github.com/kubernetes-sigs/gateway-api/pull/3328",
        "unapproved, experimental-only",
    ] {
        let (run, _) = manifests(
            &source(&format!(
                ", annotation(\"api-approved.kubernetes.io\", \"{ok}\")"
            )),
            "deny",
        );
        assert_eq!(run.status, 0, "{ok}: {}", run.stderr);
    }
}

#[test]
fn pruned_objects_are_warnings_that_deny_turns_into_errors() {
    let source = spec(
        "    pub empty: Empty,\n",
        "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Empty {}\n",
    );
    let (run, session) = manifests(&source, "error");
    assert_eq!(
        run.status, 0,
        "warnings do not fail by default: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("warning[pruned]: src/lib.rs:9:5:"),
        "{}",
        run.stderr
    );
    assert!(session.join("out/lint.example.com_linties.yaml").exists());
    let (run, session) = manifests(&source, "deny");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(!session.join("out").exists(), "deny writes nothing");
}

/// Empty objects inside a Kubernetes type (`metadata.managedFields[*].fieldsV1` of a
/// `PodTemplateSpec`) are pruned on built-in resources alike and are not the user's to change:
/// no warning for them, while the user's own empty struct beside them is still reported.
#[test]
fn pruned_objects_inside_kubernetes_types_are_not_reported() {
    let source = spec(
        "    pub template: k8s_openapi::api::core::v1::PodTemplateSpec,\n    pub empty: Empty,\n",
        "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Empty {}\n",
    );
    let (run, _session) = manifests(&source, "deny");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("warning[pruned]").count(),
        1,
        "only the user's own: {}",
        run.stderr
    );
    assert!(run.stderr.contains("at spec.empty)"), "{}", run.stderr);
}

/// The API server refuses a v1 CRD version without a schema, so kopgen does too, unless the
/// user asks to write it anyway.
#[test]
fn a_disabled_schema_is_an_error_as_on_the_api_server() {
    let source = format!(
        "{HEADER}\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug)]\n\
         #[kube(group = \"lint.example.com\", version = \"v1\", kind = \"Linty\", schema = \"disabled\")]\n\
         pub struct LintySpec {{\n    pub x: i32,\n}}\n"
    );
    let (run, session) = manifests(&source, "error");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error[missing-schema]: src/lib.rs:8:12: this version has no schema"),
        "{}",
        run.stderr
    );
    assert!(!session.join("out").exists(), "nothing written");
    let (run, session) = manifests(&source, "warn");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let written = std::fs::read_to_string(session.join("out/lint.example.com_linties.yaml"))
        .expect("written");
    assert!(written.contains("    schema: {}\n"), "{written}");
}

#[test]
fn lint_modes_warn_and_off() {
    let source = spec("    pub anything: serde_json::Value,\n", "");
    let (run, session) = manifests(&source, "warn");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[untyped]"),
        "warn still reports: {}",
        run.stderr
    );
    assert!(
        session.join("out/lint.example.com_linties.yaml").exists(),
        "warn still writes"
    );
    let (run, _) = manifests(&source, "off");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("untyped"),
        "off skips the lint: {}",
        run.stderr
    );
}

/// `n` documented fields of ~500 bytes of description each.
fn documented_fields(n: usize) -> String {
    let doc = "A long description of this field that explains far too much. ".repeat(8);
    (0..n)
        .map(|i| format!("    /// {doc}\n    pub field_{i}: Option<String>,\n"))
        .collect()
}

#[test]
fn size_budgets_and_max_desc_len() {
    // About 1.2 MB as JSON: over the warning, under the limit; written, with a size report.
    let (run, session) = manifests(&spec(&documented_fields(2200), ""), "error");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning[size]: out/lint.example.com_linties.yaml: the CRD is 11")
            && run.stderr.contains("of the API server's limit of 1.5 MiB")
            && run.stderr.contains("kopgen edit --max-desc-len N"),
        "{}",
        run.stderr
    );
    let full =
        std::fs::read_to_string(session.join("out/lint.example.com_linties.yaml")).expect("crd");
    assert!(full.len() > 1_048_576);
    let report = session.kopgen(&[
        "manifests",
        "--paths",
        "src",
        "--output-dir",
        "out",
        "--sizes",
    ]);
    assert!(
        report.stderr.contains("CRD sizes as JSON")
            && report
                .stderr
                .contains("%  out/lint.example.com_linties.yaml"),
        "{}",
        report.stderr
    );

    let short = session.kopgen(&[
        "manifests",
        "--paths",
        "src",
        "--output-dir",
        "short",
        "--max-desc-len",
        "40",
    ]);
    assert_eq!(short.status, 0, "{}", short.stderr);
    assert!(!short.stderr.contains("warning[size]"), "{}", short.stderr);
    let text =
        std::fs::read_to_string(session.join("short/lint.example.com_linties.yaml")).expect("crd");
    assert!(
        text.contains("description: A long description of this field that...\n"),
        "{}",
        &text[..2000]
    );
    let none = session.kopgen(&[
        "manifests",
        "--paths",
        "src",
        "--output-dir",
        "none",
        "--max-desc-len",
        "0",
    ]);
    assert_eq!(none.status, 0);
    let text =
        std::fs::read_to_string(session.join("none/lint.example.com_linties.yaml")).expect("crd");
    assert!(!text.contains("description:"), "0 drops descriptions");
}

/// `kopgen manifests` and the project's drift test (`kopgen_runtime::crds::Settings`) cut
/// descriptions alike, on text with multi-byte characters and every kind of whitespace, at
/// every length, in every place a schema holds one.
#[test]
fn manifests_and_the_runtime_cut_descriptions_alike() {
    let words = [
        "a",
        "ünïcødé",
        "🦀🦀",
        " ",
        "\t",
        "\n",
        "word",
        "longerword",
        "  ",
        "x.y",
        "",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..200 {
        let mut text = || -> String { (0..next(12)).map(|_| words[next(words.len())]).collect() };
        let schema = serde_json::json!({
            "type": "object",
            "description": text(),
            "properties": {
                "a": {"type": "array", "description": text(), "items": {"type": "string", "description": text()}},
                "m": {"type": "object", "additionalProperties": {"type": "string", "description": text()}},
                "o": {"anyOf": [{"description": text()}], "oneOf": [{"description": text()}], "allOf": [{"description": text()}], "not": {"description": text()}}
            }
        });
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "xs.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "X", "plural": "xs"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}
        }))
        .expect("a CRD");
        for max in 0..24 {
            let mut by_manifests = crd.clone();
            kopgen::manifests::descriptions::truncate(&mut by_manifests, max);
            let mut by_runtime = crd.clone();
            kopgen_runtime::crds::Settings::default()
                .with_max_desc_len(Some(max))
                .apply(&mut by_runtime);
            assert_eq!(by_manifests, by_runtime, "max {max}");
        }
    }
}

/// Over the API server's limit a CRD cannot be applied: an error, and nothing written.
#[test]
fn a_crd_over_the_api_servers_limit_is_an_error() {
    let (run, session) = manifests(&spec(&documented_fields(3300), ""), "error");
    assert_ne!(run.status, 0);
    assert!(
        run.stderr
            .contains("error[size]: out/lint.example.com_linties.yaml: the CRD is")
            && run
                .stderr
                .contains("over the API server's limit of 1.5 MiB"),
        "{}",
        run.stderr
    );
    assert!(!session.join("out/lint.example.com_linties.yaml").exists());
}

#[test]
fn scaffolded_projects_are_lint_clean() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, support::BLOG);
    let run = support::run_kopgen(&project, &["manifests", "--lint=deny"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
}

/// What kube-derive writes and the API server refuses at install: a default that does not
/// hold to its schema below the top (a list of strings with a boolean in its default, a number
/// outside the field's range), and a kind whose only version is not the storage version.
#[test]
fn defaults_are_checked_all_the_way_down_and_one_version_is_stored() {
    let source = spec(
        "    #[serde(default = \"tags\")]\n    #[schemars(with = \"Vec<String>\")]\n    pub tags: Vec<serde_json::Value>,\n",
        "fn tags() -> Vec<serde_json::Value> {\n    vec![serde_json::json!(\"a\"), serde_json::json!(true)]\n}\n",
    );
    let (run, _session) = manifests(&source, "error");
    assert!(
        run.stderr.contains("error[default-type]")
            && run.stderr.contains("at [1]: true is not of type string"),
        "{}",
        run.stderr
    );
    let ranged = spec(
        "    #[serde(default = \"ten\")]\n    #[schemars(range(min = 1, max = 5))]\n    pub size: i32,\n",
        "fn ten() -> i32 {\n    10\n}\n",
    );
    let (run, _session) = manifests(&ranged, "error");
    assert!(run.stderr.contains("above the maximum"), "{}", run.stderr);
    let unstored =
        spec("    pub x: i32,\n", "").replace("namespaced)]", "namespaced, storage = false)]");
    let (run, session) = manifests(&unstored, "error");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[storage-version]") && run.stderr.contains("0 versions"),
        "{}",
        run.stderr
    );
    assert!(!session.join("out").exists());
}

/// The same inside a Kubernetes type that an enum variant carries (`enum Workload {
/// Job(JobSpec), Pod(PodSpec) }`): the path goes through the variant to the library type.
#[test]
fn pruned_objects_inside_kubernetes_types_of_enum_variants_are_not_reported() {
    let source = spec(
        "    pub workload: Workload,\n    pub empty: Empty,\n",
        "#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Empty {}\n\n\
         #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[serde(rename_all = \"camelCase\")]\n\
         pub enum Workload {\n    JobSpec(k8s_openapi::api::batch::v1::JobSpec),\n    PodSpec(k8s_openapi::api::core::v1::PodSpec),\n}\n",
    );
    let (run, _session) = manifests(&source, "deny");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("warning[pruned]").count(),
        1,
        "only the user's own: {}",
        run.stderr
    );
    assert!(run.stderr.contains("at spec.empty)"), "{}", run.stderr);
}
