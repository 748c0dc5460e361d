//! `kopgen manifests --derive`: the compiled fallback for what kopgen cannot derive from the
//! source, and the check of the crate's kube versions.

mod support;

use support::Session;

/// A crate on the versions kopgen reproduces whose `Widget` needs compiling (a `schema_with`
/// function with statements, an `impl Default` that calls another crate's function), beside a
/// `Plain` kind kopgen derives from the source.
const CARGO_TOML: &str = r#"[package]
name = "fallback-demo"
version = "0.1.0"
edition = "2024"

[dependencies]
kube = { version = "~5.0", default-features = false, features = ["derive"] }
k8s-openapi = { version = "~0.29", features = ["latest", "schemars"] }
schemars = "~1.2"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
serde-saphyr = "~2.2"
"#;

const API: &str = r#"use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A widget.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "fb.example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    #[schemars(schema_with = "size_schema")]
    pub size: String,
    #[serde(default)]
    pub settings: Settings,
}

fn size_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = schemars::json_schema!({"type": "string"});
    schema.insert("pattern".into(), serde_json::json!(format!("^[0-9]+{}$", "Gi")));
    schema
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
pub struct Settings {
    pub encoded: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            encoded: serde_json::to_string(&[1, 2, 3]).unwrap_or_default(),
        }
    }
}

/// A gauge whose level has a hand-written schema.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "fb.example.com", version = "v1", kind = "Gauge", namespaced)]
pub struct GaugeSpec {
    pub level: Level,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
pub struct Level(pub u8);

impl JsonSchema for Level {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Level".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "integer", "minimum": 5})
    }
}

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "fb.example.com", version = "v1", kind = "Plain")]
pub struct PlainSpec {
    pub x: i32,
}
"#;

/// Prints each kind's `crd()` as a kube-rs user's crdgen does, with the writer kube-rs
/// documents and kopgen uses (serde-saphyr): the ground truth, byte for byte.
const CRDGEN: &str = r#"use kube::CustomResourceExt;

fn main() {
    print!("{}", serde_saphyr::to_string(&fallback_demo::api::Widget::crd()).unwrap());
    print!("---\n{}", serde_saphyr::to_string(&fallback_demo::api::Plain::crd()).unwrap());
    print!("---\n{}", serde_saphyr::to_string(&fallback_demo::api::Gauge::crd()).unwrap());
}
"#;

fn fallback_crate(session: &Session) {
    session.write("demo/Cargo.toml", CARGO_TOML);
    session.write("demo/src/lib.rs", "pub mod api;\n");
    session.write("demo/src/api.rs", API);
    session.write("demo/examples/crdgen.rs", CRDGEN);
}

/// What the crate's own crdgen example prints, one CRD per entry, each as kopgen writes the
/// file (its header line first): the ground truth the compiled path is compared with.
fn crdgen_files(session: &Session) -> Vec<String> {
    let crdgen = support::cargo(
        &session.join("demo"),
        &["run", "--quiet", "--example", "crdgen"],
    );
    assert!(
        crdgen.status.success(),
        "{}",
        String::from_utf8_lossy(&crdgen.stderr)
    );
    String::from_utf8_lossy(&crdgen.stdout)
        .split("---\n")
        .map(|crd| format!("{}{crd}", kopgen::manifests::HEADER))
        .collect()
}

/// Runs kopgen in `demo/` with the shared target directory, as a user whose crate builds there.
fn kopgen_in_demo(session: &Session, args: &[&str]) -> support::Run {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(args)
        .current_dir(session.join("demo"))
        .env("CARGO_TARGET_DIR", support::shared_target_dir())
        .output()
        .expect("kopgen runs");
    support::Run {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn what_needs_compiling_is_compiled_under_auto_and_refused_under_static() {
    let session = Session::new();
    fallback_crate(&session);

    // `static`: a located error at the attribute, and nothing else.
    let refused = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "static"]);
    assert_eq!(refused.status, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("src/api.rs:15:4:")
            && refused
                .stderr
                .contains("cannot fold `schema_with = \"size_schema\"` statically")
            && refused.stderr.contains("--derive=auto"),
        "{}",
        refused.stderr
    );
    // A hand-written `impl JsonSchema` is code kopgen does not run: never guessed.
    assert!(
        refused
            .stderr
            .contains("src/api.rs:38:16: `Level` implements JsonSchema by hand (at ")
            && refused
                .stderr
                .contains("src/api.rs:44), code kopgen does not run"),
        "{}",
        refused.stderr
    );

    // `auto`: the compiled kind is named with its reason; the other is derived statically.
    let auto = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(auto.status, 0, "{}", auto.stderr);
    assert!(
        auto.stderr
            .contains("note: compiled the crate for Widget.fb.example.com (")
            && auto.stderr.contains("Gauge.fb.example.com (")
            && !auto.stderr.contains("Plain.fb.example.com"),
        "{}",
        auto.stderr
    );

    // The bytes are `crd()`'s, as the crate's own crdgen prints them.
    let expected = crdgen_files(&session);
    let ours: Vec<&str> = auto.stdout.split("---\n").skip(1).collect();
    // kopgen prints CRDs by file name: gauges, plains, widgets.
    assert_eq!(
        ours,
        [
            expected[2].as_str(),
            expected[1].as_str(),
            expected[0].as_str()
        ]
    );
    assert!(ours[2].contains("pattern: ^[0-9]+Gi$") && ours[2].contains("encoded: \"[1,2,3]\""));
    assert!(ours[0].contains("minimum: 5"), "{}", ours[0]);

    // `compile`: every kind compiled, the same bytes.
    let compiled = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "compile"]);
    assert_eq!(compiled.status, 0, "{}", compiled.stderr);
    assert_eq!(compiled.stdout, auto.stdout);
    assert_eq!(
        compiled
            .stderr
            .matches("note: compiled the crate for")
            .count(),
        3
    );
}

/// A library, as k8s-openapi asks of one, leaves the Kubernetes version to the binary that uses
/// it and picks one only for its tests and examples: built alone, as `kopgen manifests` builds
/// it, k8s-openapi refuses to build without a version, so kopgen names the dev-dependency's.
#[test]
fn a_library_that_leaves_the_kubernetes_version_to_its_binary_is_compiled() {
    let session = Session::new();
    fallback_crate(&session);
    let library = CARGO_TOML.replace(
        "features = [\"latest\", \"schemars\"]",
        "features = [\"schemars\"]",
    ) + "\n[dev-dependencies]\nk8s-openapi = { version = \"~0.29\", features = [\"latest\"] }\n";
    session.write("demo/Cargo.toml", &library);
    let compiled = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "compile"]);
    assert_eq!(compiled.status, 0, "{}", compiled.stderr);
    let expected = crdgen_files(&session);
    let ours: Vec<&str> = compiled.stdout.split("---\n").skip(1).collect();
    assert_eq!(
        ours,
        [
            expected[2].as_str(),
            expected[1].as_str(),
            expected[0].as_str()
        ]
    );
}

#[test]
fn a_crate_that_does_not_compile_is_a_clear_error() {
    let session = Session::new();
    fallback_crate(&session);
    session.write(
        "demo/src/api.rs",
        &format!("{API}\npub fn broken() -> u32 {{ \"not a number\" }}\n"),
    );
    let run = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("the crate does not compile")
            && run.stderr.contains("mismatched types"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_private_module_is_named_with_what_to_do() {
    let session = Session::new();
    fallback_crate(&session);
    session.write("demo/src/lib.rs", "mod api;\n");
    session.write("demo/examples/crdgen.rs", "fn main() {}\n");
    let run = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("module `api` is private")
            && run
                .stderr
                .contains("must be public and reachable from the crate root"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_binary_only_crate_cannot_be_compiled_and_says_so() {
    let session = Session::new();
    session.write("demo/Cargo.toml", CARGO_TOML);
    session.write("demo/src/main.rs", "mod api;\nfn main() {}\n");
    session.write("demo/src/api.rs", API);
    let run = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("the crate has no library target")
            && run.stderr.contains("move the API types into `src/lib.rs`"),
        "{}",
        run.stderr
    );
}

#[test]
fn loose_files_are_derived_statically_only() {
    let session = Session::new();
    session.write("api.rs", API);
    let run = session.kopgen(&["manifests", "--stdout", "--paths", "api.rs"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("api.rs:15:4:") && run.stderr.contains("not the library of a crate"),
        "{}",
        run.stderr
    );
}

/// A crate on another kube version: `static` refuses and says why; the versions come from
/// `Cargo.lock` where there is one, else from `Cargo.toml`.
#[test]
fn another_kube_version_is_named() {
    let session = Session::new();
    session.write(
        "demo/Cargo.toml",
        &CARGO_TOML.replace("version = \"~5.0\"", "version = \"4\""),
    );
    session.write("demo/src/lib.rs", "pub mod api;\n");
    session.write("demo/src/api.rs", API);
    let run = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "static"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains(
            "demo/Cargo.toml: the crate uses kube-derive 4, and kopgen reproduces kube-derive 5.0"
        ) && run.stderr.contains("--derive=compile"),
        "{}",
        run.stderr
    );
    // `auto` says so at once too, instead of building the whole operator without a word.
    let run = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("kopgen reproduces kube-derive 5.0")
            && !run.stderr.contains("Compiling"),
        "{}",
        run.stderr
    );
    session.write(
        "demo/Cargo.lock",
        "version = 4\n\n[[package]]\nname = \"schemars\"\nversion = \"0.8.22\"\n",
    );
    let run = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "static"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains(
            "demo/Cargo.lock: the crate uses schemars 0.8.22, and kopgen reproduces schemars 1.2"
        ),
        "{}",
        run.stderr
    );
}

/// Kinds whose `#[kube(...)]` stackable-versioned's `#[versioned]` writes (both spellings: on a
/// struct, and on a module around it), with a field only the later version has. `static`
/// says why they need compiling; `auto` compiles them, and the CRD holds each version's own
/// schema, as the crate's crdgen prints it.
#[test]
fn stackable_versioned_kinds_are_compiled_with_a_reason() {
    let session = Session::new();
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/versioned");
    session.write(
        "demo/Cargo.toml",
        &format!(
            "{}stackable-versioned = {{ path = \"{}\" }}\n",
            CARGO_TOML.replace("fallback-demo", "versioned-demo"),
            fake.display()
        ),
    );
    session.write("demo/src/lib.rs", "pub mod api;\n");
    session.write(
        "demo/src/api.rs",
        r#"use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stackable_versioned::versioned;

/// A widget, in two versions.
#[versioned(
    version(name = "v1alpha1"),
    version(name = "v1"),
    k8s(group = "sv.example.com", namespaced)
)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
pub struct WidgetSpec {
    pub size: i32,
    #[versioned(added(since = "v1"))]
    pub colour: Option<String>,
}

#[versioned(version(name = "v1beta1"))]
pub mod versioned {
    use super::*;

    /// A gadget.
    #[versioned(crd(group = "sv.example.com", shortname = "gd"))]
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    pub struct GadgetSpec {
        pub level: u8,
    }
}
"#,
    );
    session.write(
        "demo/examples/crdgen.rs",
        r#"use kube::CustomResourceExt;
use versioned_demo::api;

fn main() {
    let widget = kube::core::crd::merge_crds(vec![api::v1::Widget::crd(), api::v1alpha1::Widget::crd()], "v1").unwrap();
    print!("{}", serde_saphyr::to_string(&api::v1beta1::Gadget::crd()).unwrap());
    print!("---\n{}", serde_saphyr::to_string(&widget).unwrap());
}
"#,
    );
    let refused = kopgen_in_demo(&session, &["manifests", "--stdout", "--derive", "static"]);
    assert_eq!(refused.status, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "stackable-versioned's #[versioned] writes the #[kube(...)] of Widget (v1, v1alpha1) when the crate compiles"
        ) && refused.stderr.contains("of Gadget (v1beta1)")
            && !refused.stderr.contains("needs `group`"),
        "{}",
        refused.stderr
    );
    let auto = kopgen_in_demo(&session, &["manifests", "--stdout"]);
    assert_eq!(auto.status, 0, "{}", auto.stderr);
    assert!(
        auto.stderr
            .contains("note: compiled the crate for Gadget.sv.example.com (")
            && auto.stderr.contains("Widget.sv.example.com ("),
        "{}",
        auto.stderr
    );
    let expected = crdgen_files(&session);
    let ours: Vec<&str> = auto.stdout.split("---\n").skip(1).collect();
    assert_eq!(ours, [expected[0].as_str(), expected[1].as_str()]);
    // v1 has `colour`, v1alpha1 does not: the versions' own schemas, not one guessed for both.
    assert_eq!(ours[1].matches("colour:").count(), 1, "{}", ours[1]);
}
