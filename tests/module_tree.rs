//! The kinds `kopgen manifests` finds are the kinds rustc compiles: items under a false `cfg`
//! and files no `mod` declares are not API; `cfg_attr`, `#[path]` and `include!` are followed;
//! what kopgen cannot see (kinds a macro generates) or cannot run (a hand-written schema) is
//! an error or compiled, never a CRD left out or guessed; and the same files give the same
//! CRDs however they are named on the command line.

mod support;

use support::{Session, fails_cleanly_in};

const HEADER: &str =
    "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n";

/// A custom resource `name` (its spec `<name>Spec`) under the attributes `attrs`.
fn kind_named(name: &str, attrs: &str) -> String {
    format!(
        "{attrs}\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube(group = \"a.example.com\", version = \"v1\", kind = \"{name}\")]\npub struct {name}Spec {{ pub x: i32 }}\n"
    )
}

/// The kinds of the CRDs `args` print, sorted.
fn kinds(session: &Session, args: &[&str]) -> Vec<String> {
    let run = session.kopgen(args);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let mut names: Vec<String> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("    kind: "))
        // A kind named `On` is written `"On"`: kubectl would read it as `true` unquoted.
        .map(|kind| kind.trim_matches(['\'', '"']).to_owned())
        .collect();
    names.sort();
    names
}

/// What a case is, the files it writes, and what the error says.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

const STATIC: [&str; 4] = ["manifests", "--stdout", "--derive", "static"];

#[test]
fn code_that_is_not_compiled_gives_no_crd() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n[features]\ndefault = [\"on\"]\non = []\noff = []\n",
    );
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}pub mod api;\n#[cfg(test)]\nmod tests;\n{}{}{}{}{}",
            kind_named("Never", "#[cfg(any())]"),
            kind_named("Test", "#[cfg(test)]"),
            kind_named("Off", "#[cfg(feature = \"off\")]"),
            kind_named("On", "#[cfg(feature = \"on\")]"),
            kind_named("Plain", ""),
        ),
    );
    session.write("src/api.rs", &format!("{HEADER}{}", kind_named("Foo", "")));
    session.write(
        "src/tests.rs",
        &format!("{HEADER}{}", kind_named("Tested", "")),
    );
    // Not named by any `mod`: not compiled.
    session.write(
        "src/orphan.rs",
        &format!("{HEADER}{}", kind_named("Orphan", "")),
    );
    assert_eq!(kinds(&session, &STATIC), ["Foo", "On", "Plain"]);
    let mut with_off = STATIC.to_vec();
    with_off.extend(["--features", "off"]);
    assert_eq!(kinds(&session, &with_off), ["Foo", "Off", "On", "Plain"]);
}

/// `cfg_attr` is expanded before derives are read, `#[path]` modules and `include!`d files
/// are followed to the files rustc reads.
#[test]
fn cfg_attr_path_and_include_are_followed() {
    let session = Session::new();
    let cfg_attr = "#[cfg_attr(all(), derive(CustomResource), kube(group = \"a.example.com\", version = \"v1\", kind = \"Gated\"))]\n\
         #[cfg_attr(test, kube(plural = \"wrong\"))]\n\
         #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         pub struct GatedSpec { #[cfg_attr(not(test), serde(rename = \"renamed\"))] pub x: i32 }\n";
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}#[path = \"kinds/odd-name.rs\"]\npub mod odd;\ninclude!(\"included.rs\");\n{cfg_attr}"
        ),
    );
    session.write(
        "src/kinds/odd-name.rs",
        &format!("{HEADER}{}", kind_named("Odd", "")),
    );
    session.write("src/included.rs", &kind_named("Included", ""));
    assert_eq!(kinds(&session, &STATIC), ["Gated", "Included", "Odd"]);
    let run = session.kopgen(&STATIC);
    assert!(
        run.stdout.contains("renamed:") && run.stdout.contains("plural: gateds"),
        "{}",
        run.stdout
    );
}

/// What kopgen cannot see is a located error, under `static` and `auto` alike, and nothing
/// is written.
#[test]
fn kinds_hidden_from_the_source_reader_are_errors() {
    let cases: [Case; 5] = [
        (
            "a macro_rules! that generates a kind",
            &[(
                "src/lib.rs",
                "macro_rules! kind { ($n:ident) => { #[derive(kube::CustomResource)] pub struct $n; } }\nkind!(FooSpec);\n",
            )],
            "src/lib.rs:2:1: the custom resources that `kind!` generates are invisible to kopgen",
        ),
        (
            "another crate's macro given a derive",
            &[(
                "src/lib.rs",
                "other::kinds! { #[derive(CustomResource)] pub struct FooSpec; }\n",
            )],
            "src/lib.rs:1:1: the custom resources that `kinds!` generates",
        ),
        (
            "include! of a file kopgen does not read",
            &[("src/lib.rs", "include!(\"../elsewhere/kinds.rs\");\n")],
            "src/lib.rs:1:1: kopgen cannot see the items this `include!` brings in",
        ),
        (
            "#[path] out of the files read",
            &[(
                "src/lib.rs",
                "#[path = \"../elsewhere/kinds.rs\"]\npub mod kinds;\n",
            )],
            "src/lib.rs:1:10: `#[path]` names elsewhere/kinds.rs, which is not among the files kopgen reads",
        ),
        (
            // rustc looks for `x_y.rs`: a file named `x-y.rs` is no module.
            "a module whose file name is not its name",
            &[
                ("src/lib.rs", "pub mod x_y;\n"),
                (
                    "src/x-y.rs",
                    &*Box::leak(format!("{HEADER}{}", kind_named("Xy", "")).into_boxed_str()),
                ),
            ],
            "src/lib.rs:1:9: file not found for module `x_y`",
        ),
    ];
    for (what, files, needle) in cases {
        for derive in ["static", "auto"] {
            let session = Session::new();
            for (path, text) in files {
                session.write(path, text);
            }
            let stderr = fails_cleanly_in(
                session.path(),
                &[
                    "manifests",
                    "--paths",
                    "src",
                    "--output-dir",
                    "out",
                    "--derive",
                    derive,
                ],
            );
            assert!(stderr.contains(needle), "{what} ({derive}): {stderr}");
        }
    }
}

/// A type without `JsonSchema` would not compile: an error, never a CRD.
#[test]
fn a_schema_rustc_would_refuse_is_an_error() {
    let session = Session::new();
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"a.example.com\", version = \"v1\", kind = \"Foo\")]\n\
             pub struct FooSpec {{ pub mode: Mode }}\n\
             #[derive(Deserialize, Serialize, Clone, Debug)]\n\
             pub enum Mode {{ A, B }}\n"
        ),
    );
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("src/lib.rs:6:32: `Mode` (at src/lib.rs:8) does not implement JsonSchema"),
        "{stderr}"
    );
    // The spec itself too.
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}#[derive(CustomResource, Deserialize, Serialize, Clone, Debug)]\n\
             #[kube(group = \"a.example.com\", version = \"v1\", kind = \"Foo\")]\n\
             pub struct FooSpec {{ pub x: i32 }}\n"
        ),
    );
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("`FooSpec` (at src/lib.rs:6) does not implement JsonSchema"),
        "{stderr}"
    );
}

/// A root file's `mod` declarations are followed as rustc would, and a file reached from
/// another root adds nothing: the same files give the same bytes however they are named.
#[test]
fn the_same_files_give_the_same_crds_however_they_are_named() {
    let session = Session::new();
    session.write(
        "blog/mod.rs",
        "pub mod v1;\npub mod v1alpha1;\npub fn crds() -> kube::core::crd::v1::CustomResourceDefinition {\n    kube::core::crd::merge_crds(vec![v1alpha1::Blog::crd(), v1::Blog::crd()], \"v1\").unwrap()\n}\n",
    );
    for version in ["v1", "v1alpha1"] {
        session.write(
            &format!("blog/{version}.rs"),
            &format!(
                "{HEADER}#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube(group = \"a.example.com\", version = \"{version}\", kind = \"Blog\")]\npub struct BlogSpec {{ pub x: i32 }}\n"
            ),
        );
    }
    let print = |paths: &[&str]| {
        let mut args = STATIC.to_vec();
        for path in paths {
            args.extend(["--paths", path]);
        }
        let run = session.kopgen(&args);
        assert_eq!(run.status, 0, "{paths:?}: {}", run.stderr);
        run.stdout
    };
    let whole = print(&["blog"]);
    assert_eq!(whole.matches("kind: CustomResourceDefinition").count(), 1);
    assert!(whole.contains("- name: v1\n") && whole.contains("- name: v1alpha1\n"));
    for paths in [
        &["blog/mod.rs"][..],
        &["blog/mod.rs", "blog/v1alpha1.rs", "blog/v1.rs"],
        &["blog/v1.rs", "blog/mod.rs"],
        &["blog", "blog/v1.rs"],
        &["blog/mod.rs", "./blog/mod.rs"],
    ] {
        assert_eq!(print(paths), whole, "{paths:?}");
    }
}

/// Glob imports that do not hold a name cost work linear in the uses followed, however many:
/// three made use-resolution exponential (it never finished), and globs that re-export each
/// other are followed once per name.
#[test]
fn many_glob_imports_resolve_in_linear_work() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
    );
    let groups = [
        "core::v1",
        "apps::v1",
        "batch::v1",
        "networking::v1",
        "rbac::v1",
        "policy::v1",
        "storage::v1",
        "autoscaling::v2",
        "coordination::v1",
        "discovery::v1",
    ];
    let globs: String = (groups.iter())
        .map(|group| format!("use k8s_openapi::api::{group}::*;\n"))
        .collect();
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}{globs}pub mod a {{ pub use super::b::*; }}\npub mod b {{ pub use super::a::*; }}\nuse a::*;\n\
             #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"a.example.com\", version = \"v1\", kind = \"App\", namespaced)]\n\
             pub struct AppSpec {{ pub target: Option<LocalObjectReference>, pub port: Option<ServicePort> }}\n"
        ),
    );
    let (done, finished) = std::sync::mpsc::channel();
    let run = std::thread::spawn(move || {
        let run = session.kopgen(&STATIC);
        let _ = done.send(());
        run
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("kopgen manifests finishes (it hung on three globs)");
    let run = run.join().expect("joins");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("kind: App"), "{}", run.stdout);
    // The glob-imported types were found, not left as unknown paths.
    assert!(
        run.stdout.contains("targetPort"),
        "ServicePort's schema:\n{}",
        run.stdout
    );
}

/// A build script's output spliced in (`include!(concat!(env!("OUT_DIR"), ..))`, the `built`
/// crate's idiom) refuses nothing by itself: the kinds are derived; a kind that names one of
/// its items fails at that field.
#[test]
fn build_script_output_refuses_only_the_kinds_that_need_it() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
    );
    let built =
        "pub mod built_info {\n    include!(concat!(env!(\"OUT_DIR\"), \"/built.rs\"));\n}\n";
    session.write(
        "src/lib.rs",
        &format!("{HEADER}{built}{}", kind_named("App", "")),
    );
    assert_eq!(kinds(&session, &STATIC), ["App"]);
    session.write(
        "src/lib.rs",
        &format!(
            "{HEADER}{built}{}#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"a.example.com\", version = \"v1\", kind = \"Other\")]\n\
             pub struct OtherSpec {{ pub v: built_info::Version }}\n",
            kind_named("App", "")
        ),
    );
    let stderr = session.fails_cleanly(&STATIC);
    assert!(
        stderr.contains("src/lib.rs:") && stderr.contains("built_info::Version"),
        "{stderr}"
    );
}

/// Conflict markers a merge left (`kopgen upgrade` on both sides' changes, git) are named at
/// their line, not reported as a syntax error somewhere after them.
#[test]
fn conflict_markers_are_named_at_their_line() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
    );
    session.write(
        "src/lib.rs",
        "pub struct A;\n<<<<<<< yours\npub struct B;\n=======\npub struct C;\n>>>>>>> kopgen\n",
    );
    let stderr = session.fails_cleanly(&STATIC);
    assert!(
        stderr.contains("src/lib.rs:2:1: unresolved merge conflict markers"),
        "{stderr}"
    );
}

/// `--paths` anywhere inside a crate reads the crate from its root: `crate::` paths from
/// `src/api/` resolve (they broke every kind that used one), the kinds derived are those below
/// the paths given, and the crate's directory means its `src/`, so a file no `mod` declares
/// (or one under `tests/`) gives no kind.
#[test]
fn paths_inside_a_crate_read_the_crate_from_its_root() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );
    session.write(
        "src/lib.rs",
        "pub mod api;\npub mod labels;\npub mod other;\n",
    );
    session.write(
        "src/labels.rs",
        "#[derive(serde::Deserialize, serde::Serialize, Clone, Debug, schemars::JsonSchema)]\npub struct Selector { pub app: String }\n",
    );
    session.write("src/api/mod.rs", "pub mod blog;\n");
    session.write(
        "src/api/blog.rs",
        &format!(
            "{HEADER}use crate::labels;\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube(group = \"a.example.com\", version = \"v1\", kind = \"Blog\")]\npub struct BlogSpec {{ pub selector: labels::Selector }}\n"
        ),
    );
    session.write(
        "src/other.rs",
        &format!("{HEADER}{}", kind_named("Other", "")),
    );
    session.write(
        "src/orphan.rs",
        &format!("{HEADER}{}", kind_named("Orphan", "")),
    );
    session.write(
        "tests/it.rs",
        &format!("{HEADER}{}", kind_named("InTests", "")),
    );
    let with = |paths: &[&str]| {
        let mut args = STATIC.to_vec();
        for path in paths {
            args.extend(["--paths", path]);
        }
        kinds(&session, &args)
    };
    assert_eq!(with(&["src/api"]), ["Blog"]);
    assert_eq!(with(&["src/api/blog.rs"]), ["Blog"]);
    assert_eq!(with(&["src/api", "src/other.rs"]), ["Blog", "Other"]);
    assert_eq!(with(&["."]), ["Blog", "Other"]);
    assert_eq!(with(&["src"]), ["Blog", "Other"]);
}

/// Every refusal of a run is listed at once, those of one kind's fields too: a schema
/// function, a default with statements and a hand-written `impl JsonSchema` took three runs.
#[test]
fn every_refusal_of_a_kind_is_listed_in_one_run() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );
    session.write("src/lib.rs", "pub mod blog;\npub mod shared;\n");
    session.write(
        "src/shared.rs",
        "pub struct Shared;\nimpl schemars::JsonSchema for Shared {\n    fn schema_name() -> std::borrow::Cow<'static, str> { \"Shared\".into() }\n    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema { schemars::json_schema!({\"type\": \"string\"}) }\n}\n",
    );
    session.write(
        "src/blog.rs",
        &format!(
            "{HEADER}fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {{ let x = 1; let _ = x; schemars::json_schema!({{\"type\": \"string\"}}) }}\nfn five() -> i32 {{ let x = 5; x }}\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube(group = \"a.example.com\", version = \"v1\", kind = \"Blog\")]\npub struct BlogSpec {{\n    #[schemars(schema_with = \"schema\")]\n    pub s: String,\n    pub shared: crate::shared::Shared,\n    #[serde(default = \"five\")]\n    pub n: i32,\n}}\n"
        ),
    );
    let stderr = fails_cleanly_in(
        session.path(),
        &[
            "manifests",
            "--paths",
            "src",
            "--derive",
            "static",
            "--stdout",
        ],
    );
    for refusal in [
        "src/blog.rs:4:4: cannot fold `schema_with",
        "src/blog.rs:5:4: this default function is not a single expression",
        "src/blog.rs:11:17: `Shared` implements JsonSchema by hand",
    ] {
        assert!(stderr.contains(refusal), "{refusal}:\n{stderr}");
    }
}
