use serde_json::{Value, json};

use super::*;

/// A CRD of one kind with the given versions, each `(name, served, storage, spec properties)`.
fn crd(scope: &str, versions: &[(&str, bool, bool, Value)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|(name, served, storage, spec)| {
            json!({
                "name": name,
                "served": served,
                "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec}
                }}}
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blogs.example.com"},
        "spec": {"group": "example.com", "scope": scope, "versions": versions}
    })
}

fn checks(changes: &[Change]) -> Vec<(&'static str, String)> {
    changes
        .iter()
        .map(|c| (c.check, c.path.to_string()))
        .collect()
}

#[test]
fn numbers_compare_by_value_and_go_zero_values_are_absent() {
    // A Rust `f64` bound serializes as 10.0, YAML reads 10; `nullable: false` and an empty
    // description are what Go's structs hold when the key is absent.
    let old = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"size": {"type": "integer", "maximum": 10}}),
        )],
    );
    let new = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"size": {"type": "integer", "maximum": 10.0, "nullable": false, "description": ""}}),
        )],
    );
    assert_eq!(compare(&old, &new, &Config::crdify()), []);
}

#[test]
fn changes_no_check_claims_are_unhandled() {
    let old = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"port": {"type": "integer", "format": "int32"}}),
        )],
    );
    let new = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"port": {"type": "integer", "format": "int64"}}),
        )],
    );
    let changes = compare(&old, &new, &Config::crdify());
    assert_eq!(checks(&changes), [("unhandled", "^.spec.port".to_owned())]);
    assert!(
        changes[0].message.contains(r#"format: "int32" -> "int64""#),
        "{}",
        changes[0].message
    );
    let config = Config::parse("unhandledEnforcement: None").expect("parses");
    assert_eq!(compare(&old, &new, &config), []);
}

#[test]
fn new_served_versions_are_compared_with_the_older_ones_unless_a_webhook_converts() {
    let v1alpha1 = (
        "v1alpha1",
        true,
        false,
        json!({"size": {"type": "integer"}}),
    );
    let old = crd("Namespaced", std::slice::from_ref(&v1alpha1));
    let new = crd(
        "Namespaced",
        &[
            v1alpha1,
            ("v1", true, true, json!({"size": {"type": "string"}})),
        ],
    );
    let changes = compare(&old, &new, &Config::crdify());
    assert!(
        changes
            .iter()
            .any(|c| c.scope == Scope::Served("v1alpha1 -> v1".into()) && c.check == "type"),
        "{changes:#?}"
    );
    // The storage version moved from v1alpha1 to v1, which the old revision stored in.
    assert!(!changes.iter().any(|c| c.check == "storedVersionRemoval"));
    let mut converted = new.clone();
    converted["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let changes = compare(&old, &converted, &Config::kopgen());
    assert!(
        !changes.iter().any(|c| matches!(c.scope, Scope::Served(_))),
        "{changes:#?}"
    );
}

#[test]
fn a_stored_version_or_the_old_storage_version_must_stay() {
    let mut old = crd(
        "Namespaced",
        &[
            ("v1alpha1", true, false, json!({})),
            ("v1", true, true, json!({})),
        ],
    );
    let new = crd("Namespaced", &[("v2", true, true, json!({}))]);
    let changes = compare(&old, &new, &Config::crdify());
    let stored: Vec<&Change> = changes
        .iter()
        .filter(|c| c.check == "storedVersionRemoval")
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].message, "stored versions removed : [v1]");
    // A cluster says which versions hold objects.
    old["status"] = json!({"storedVersions": ["v1alpha1", "v1"]});
    let changes = compare(&old, &new, &Config::crdify());
    let stored: Vec<&Change> = changes
        .iter()
        .filter(|c| c.check == "storedVersionRemoval")
        .collect();
    assert_eq!(stored[0].message, "stored versions removed : [v1alpha1 v1]");
}

#[test]
fn kopgen_defaults_allow_enum_additions_and_warn_on_descriptions() {
    let old = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"mode": {"type": "string", "enum": ["A"], "description": "a"}}),
        )],
    );
    let new = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"mode": {"type": "string", "enum": ["A", "B"], "description": "b"}}),
        )],
    );
    let changes = compare(&old, &new, &Config::kopgen());
    assert_eq!(
        checks(&changes),
        [("description", "^.spec.mode".to_owned())]
    );
    assert_eq!(changes[0].enforcement, Enforcement::Warn);
    let crdify = compare(&old, &new, &Config::crdify());
    assert_eq!(crdify.len(), 2, "{crdify:#?}");
}

#[test]
fn ratcheting_sets_the_enforcement_of_tightened_validations_only() {
    let old = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"size": {"type": "integer", "maximum": 10}}),
        )],
    );
    let new = crd(
        "Namespaced",
        &[(
            "v1",
            true,
            true,
            json!({"size": {"type": "string", "maximum": 5}}),
        )],
    );
    let config = Config::parse("ratcheting: Warn").expect("parses");
    let changes = compare(&old, &new, &config);
    let by_check: Vec<(&str, Enforcement, bool)> = changes
        .iter()
        .map(|c| (c.check, c.enforcement, c.ratcheted))
        .collect();
    assert_eq!(
        by_check,
        [
            ("maximum", Enforcement::Warn, true),
            ("type", Enforcement::Error, false)
        ]
    );
    assert_eq!(rule("maximum", true), "ratcheted/maximum");
    assert_eq!(rule("type", false), "breaking/type");
}

#[test]
fn config_errors_name_the_line_and_what_is_allowed() {
    let (line, message) =
        Config::parse("validations:\n  - name: enum\n    enforcement: Sometimes\n")
            .expect_err("bad enforcement");
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("Error"), "{message}");
    let (_, message) = Config::parse("validations:\n  - name: enums\n    enforcement: Warn\n")
        .expect_err("unknown validation");
    assert!(
        message.contains("unknown validation \"enums\"") && message.contains("maxLength"),
        "{message}"
    );
    let (_, message) = Config::parse(
        "validations:\n  - name: maximum\n    enforcement: Warn\n    configuration:\n      additionPolicy: Allow\n",
    )
    .expect_err("maximum has no policy");
    assert!(
        message.contains("maximum has no configuration"),
        "{message}"
    );
    let (line, _) = Config::parse("unhandledEnforcment: Warn\n").expect_err("typo");
    assert_eq!(line, 1);
    let config = Config::parse(
        "validations:\n  - name: enum\n    enforcement: Error\n    configuration:\n      additionPolicy: Disallow\n",
    )
    .expect("parses");
    assert_eq!(
        config.policy("enum", "additionPolicy"),
        config::Policy::Disallow
    );
    assert_eq!(
        Config::parse("").expect("empty is the defaults"),
        Config::kopgen()
    );
}

#[test]
fn paths_read_as_crdify_prints_them_and_as_rust_fields() {
    let path = Path(vec![
        Step::Field("spec".into()),
        Step::Field("ports".into()),
        Step::Items,
        Step::Field("name".into()),
        Step::AnyOf(1),
    ]);
    assert_eq!(path.to_string(), "^.spec.ports.items.name.anyOf[1]");
    assert_eq!(path.fields(), ["spec", "ports", "[*]", "name"]);
}

/// Served versions cost what they hold, not their square: versions with one schema are not
/// compared with each other (2,000 of them against themselves find nothing, at once), and past
/// `MAX_PAIRWISE` each is compared with the next only (so 100 versions that each change a type
/// give 99 findings, not 4,950).
#[test]
fn many_served_versions_are_compared_in_linear_work() {
    let same: Vec<(String, Value)> = (1..=2000)
        .map(|i| (format!("v{i}"), json!({"size": {"type": "integer"}})))
        .collect();
    let versions: Vec<(&str, bool, bool, Value)> = same
        .iter()
        .map(|(name, spec)| (name.as_str(), true, name == "v1", spec.clone()))
        .collect();
    let big = crd("Namespaced", &versions);
    assert!(compare(&big, &big, &Config::kopgen()).is_empty());
    assert!(served_compared_in_sequence(&big));

    let types = ["integer", "string", "boolean"];
    let names: Vec<String> = (1..=100).map(|i| format!("v{i}")).collect();
    let versions: Vec<(&str, bool, bool, Value)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let spec = json!({"size": {"type": types[i % 3]}});
            (name.as_str(), true, i == 0, spec)
        })
        .collect();
    let new = crd("Namespaced", &versions);
    let old = crd("Namespaced", &versions[..1]);
    let served = compare(&old, &new, &Config::crdify())
        .into_iter()
        .filter(|c| matches!(c.scope, Scope::Served(_)))
        .count();
    assert_eq!(served, 99);
}
