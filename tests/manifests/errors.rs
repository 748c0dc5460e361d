//! Bad sources: errors that point at the Rust source's file and line, markers counted only
//! where they are compiled, and inputs the fuzzers found.

use super::{SPEC, crate_with};
use crate::support::{Session, run_kopgen, tree};

/// Each case: a source file, and what the error must say (location and message).
fn assert_error(source: &str, expected: &[&str]) {
    let session = Session::new();
    crate_with(&session, &[("src/lib.rs", source)]);
    let before = tree(session.path());
    let run = session.kopgen(&["manifests", "--paths", "src", "--output-dir", "out"]);
    assert_eq!(run.status, 1, "should fail:\n{}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    for needle in expected {
        assert!(
            run.stderr.contains(needle),
            "expected {needle:?} in:\n{}",
            run.stderr
        );
    }
    assert!(
        tree(session.path()) == before,
        "nothing is written on error"
    );
}

#[test]
fn errors_point_at_the_rust_source() {
    let header = "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n";
    let derive = "#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n";
    let kube = "#[kube(group = \"e.example.com\", version = \"v1\", kind = \"E\")]\n";
    assert_error(
        &format!("{header}{derive}{kube}pub struct ESpec {{\n    pub x: other_crate::Thing,\n}}\n"),
        &[
            "src/lib.rs:7:",
            "kopgen does not know the type `other_crate::Thing`",
            "help:",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: Node,\n}}\n#[derive(JsonSchema)]\npub struct Node {{ pub next: Option<Box<Node>> }}\n"
        ),
        &["src/lib.rs:", "`Node` is recursive"],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: T,\n}}\n#[derive(JsonSchema)]\n#[serde(tag = \"type\")]\npub enum T {{ A {{ a: i32 }} }}\n"
        ),
        &[
            "src/lib.rs:11:10:",
            "internally and adjacently tagged enums are not supported",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    #[serde(default = \"compute\")]\n    pub x: i32,\n}}\nfn compute() -> i32 {{ let a = 1; a + 1 }}\n"
        ),
        &[
            "src/lib.rs:",
            "not a single expression",
            "help: kopgen folds literals",
        ],
    );
    assert_error(
        &format!("{header}pub struct Broken {{\n    x: i32,,\n}}\n"),
        &["src/lib.rs:5:", "cannot parse Rust"],
    );
    let v1 = format!(
        "pub mod a {{\n{header}{derive}#[kube(group = \"e.example.com\", version = \"v1\", kind = \"E\")]\npub struct ESpec {{ pub x: i32 }}\n}}\n"
    );
    let v2 = format!(
        "pub mod b {{\n{header}{derive}#[kube(group = \"e.example.com\", version = \"v2\", kind = \"E\")]\npub struct ESpec {{ pub x: i32 }}\n}}\n"
    );
    assert_error(
        &format!("{v1}{v2}"),
        &["are both storage versions of E", "storage = false"],
    );
    // Two kinds that would be one CRD (`foobars.e.example.com`): an error naming both.
    let kind = |name: &str| {
        format!(
            "{derive}#[kube(group = \"e.example.com\", version = \"v1\", kind = \"{name}\")]\npub struct {name}Spec {{ pub x: i32 }}\n"
        )
    };
    assert_error(
        &format!("{header}{}{}", kind("FooBar"), kind("Foobar")),
        &[
            "src/lib.rs:9:12:",
            "kinds FooBar and Foobar would both be the CRD foobars.e.example.com (the other is at src/lib.rs:6:12)",
            "help: give one of them another `plural`",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: Mixed,\n}}\n#[derive(JsonSchema)]\npub enum Mixed {{ A, B(String) }}\n"
        ),
        &[
            "src/lib.rs:10:10:",
            "enum `Mixed` mixes unit variants with data variants",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: Manual,\n}}\n#[derive(JsonSchema)]\n#[serde(default)]\npub struct Manual {{ pub n: i32 }}\nimpl Default for Manual {{ fn default() -> Self {{ let n = 7; Self {{ n }} }} }}\n"
        ),
        &[
            "src/lib.rs:12:30:",
            "`impl Default for Manual` is not a single expression",
            "help: kopgen folds literals",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: Manual,\n}}\n#[derive(JsonSchema)]\n#[serde(default)]\npub struct Manual {{ pub n: i32 }}\n"
        ),
        &[
            "src/lib.rs:11:12:",
            "`#[serde(default)]` on `Manual` needs a `Default`",
            "help: derive Default, write `impl Default`",
        ],
    );
    // A regex kopgen cannot read statically: built by a function, or from another crate.
    assert_error(
        &format!(
            "{header}static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(build);
{derive}{kube}pub struct ESpec {{
    #[validate(regex(path = *RE))]
    pub x: String,
}}
"
        ),
        &[
            "src/lib.rs:8:22:",
            "cannot find the pattern of `RE`",
            "help: point `path` at a `const NAME: &str",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{
    #[validate(regex(path = *other::RE))]
    pub x: String,
}}
"
        ),
        &["src/lib.rs:7:22:", "cannot find the pattern of `other::RE`"],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{
    #[schemars(inner(title = \"t\"))]
    pub x: Vec<String>,
}}
"
        ),
        &[
            "src/lib.rs:7:22:",
            "`title` is not a validation schemars applies to the items of an array",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub x: Pair,\n}}\n#[derive(JsonSchema)]\npub struct Pair(#[schemars(range(min = 1))] i32, String);\n"
        ),
        &[
            "src/lib.rs:10:17:",
            "kopgen does not read attributes on the fields of tuple structs",
            "help: use named fields",
        ],
    );
    assert_error(
        &format!(
            "{header}fn t(schema: &mut schemars::Schema) {{\n    let key = \"a\";\n    schema.remove(key);\n}}\n{derive}{kube}pub struct ESpec {{\n    #[schemars(transform = t)]\n    pub x: String,\n}}\n"
        ),
        &[
            "src/lib.rs:5:5:",
            "kopgen cannot fold `transform = t` statically",
            "help: kopgen folds transform functions",
        ],
    );
    // schemars reads serde's `with` as a type: a module there is an error, as in rustc.
    assert_error(
        &format!(
            "{header}mod as_text {{}}\n{derive}{kube}pub struct ESpec {{\n    #[serde(with = \"as_text\")]\n    pub x: u32,\n}}\n"
        ),
        &[
            "src/lib.rs:8:5:",
            "schemars reads `#[serde(with = \"as_text\")]` as the type of this field's schema",
            "help: kube-derive does not compile here either: add `#[schemars(with = \"T\")]`",
        ],
    );
    // A default schemars would write through a serialize function kopgen cannot run.
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    #[serde(default, serialize_with = \"upper\")]\n    pub x: String,\n}}\n"
        ),
        &[
            "src/lib.rs:7:5:",
            "schemars serializes this field's default with `upper`, which kopgen cannot run",
        ],
    );
    // Doc text that only the compiler can produce.
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    #[doc = include_str!(\"x.md\")]\n    pub x: u32,\n}}\n"
        ),
        &[
            "src/lib.rs:7:13:",
            "kopgen cannot fold `doc = include_str!(..)` statically",
            "help: replace it with the text as a doc comment",
        ],
    );
    // A description schemars would compute by running Rust.
    assert_error(
        &format!(
            "{header}const TEXT: &str = \"t\";\n{derive}{kube}pub struct ESpec {{\n    #[schemars(description = TEXT)]\n    pub x: u32,\n}}\n"
        ),
        &[
            "src/lib.rs:8:30:",
            "kopgen cannot yet fold `description = <expression>`",
        ],
    );
    // A validation value folded from a constant of the wrong type.
    assert_error(
        &format!(
            "{header}const NAME: &str = \"n\";\n{derive}{kube}pub struct ESpec {{\n    #[schemars(length(max = NAME))]\n    pub x: String,\n}}\n"
        ),
        &[
            "src/lib.rs:8:29:",
            "\"n\" is not a non-negative integer, as `length` needs",
        ],
    );
    // kube-derive's own checks: a print column without its required keys; a status type
    // kopgen cannot find, reported at the attribute.
    let derive_kube = |keys: &str| {
        format!(
            "{header}{derive}#[kube(group = \"e.example.com\", version = \"v1\", kind = \"E\", {keys})]\npub struct ESpec {{\n    pub x: u32,\n}}\n"
        )
    };
    assert_error(
        &derive_kube("printcolumn(name = \"A\")"),
        &[
            "src/lib.rs:5:",
            "printcolumn needs `name`, `type_` and `json_path`; missing: `type_`, `json_path`",
        ],
    );
    assert_error(
        &derive_kube("status = \"Missing\""),
        &["src/lib.rs:5:70:", "`Missing`"],
    );
    // The same version of a kind twice.
    let version = |module: &str, extra: &str| {
        format!(
            "pub mod {module} {{\n{header}{derive}#[kube(group = \"e.example.com\", version = \"v2\", kind = \"E\"{extra})]\npub struct ESpec {{ pub x: i32 }}\n}}\n"
        )
    };
    assert_error(
        &format!("{}{}", version("a", ""), version("b", ", plural = \"es\"")),
        &[
            "src/lib.rs:15:12:",
            "version v2 of E is declared twice (also at src/lib.rs:7:12)",
            "help: each version of a kind needs its own",
        ],
    );
    // A generic type that grows its own arguments never ends: reported as recursion.
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub n: Node<u8>,\n}}\n#[derive(JsonSchema)]\npub struct Node<T> {{ pub v: T, pub next: Option<Box<Node<Vec<T>>>> }}\n"
        ),
        &["src/lib.rs:10:", "`Node` is recursive"],
    );
    // kube-derive's KubeSchema takes only structs.
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub m: Mode,\n}}\n#[derive(kube::KubeSchema)]\npub enum Mode {{ A, B }}\n"
        ),
        &[
            "src/lib.rs:10:10:",
            "#[derive(KubeSchema)] on enum `Mode`",
            "derive JsonSchema",
        ],
    );
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    pub p: Port,\n}}\n#[derive(kube::KubeSchema)]\npub struct Port(u16);\n"
        ),
        &[
            "src/lib.rs:10:12:",
            "#[derive(KubeSchema)] on `Port`, which has no named fields",
        ],
    );
    // Library functions kopgen cannot run, or whose type schemars cannot infer, reported at
    // the attribute's string.
    assert_error(
        &format!(
            "{header}{derive}{kube}pub struct ESpec {{\n    #[serde(default = \"u8::from_str_radix\")]\n    pub x: u8,\n}}\n"
        ),
        &[
            "src/lib.rs:7:23:",
            "kopgen cannot fold this library function",
        ],
    );
    for function in ["Vec::new", "Default::default"] {
        assert_error(
            &format!(
                "{header}{derive}{kube}pub struct ESpec {{\n    #[serde(default = \"{function}\")]\n    pub x: Vec<u8>,\n}}\n"
            ),
            &[
                "src/lib.rs:7:23:",
                "schemars cannot infer the type this function returns",
            ],
        );
    }
    // A HashSet's order is random at run time: only one item has a fixed default.
    assert_error(
        &format!(
            "{header}fn tags() -> std::collections::HashSet<String> {{\n    std::collections::HashSet::from([\"a\".into(), \"b\".into()])\n}}\n{derive}{kube}pub struct ESpec {{\n    #[serde(default = \"tags\")]\n    pub x: std::collections::HashSet<String>,\n}}\n"
        ),
        &[
            "src/lib.rs:5:5:",
            "cannot fold this default statically",
            "BTreeMap::from",
        ],
    );
    // An example only running Rust computes; a default function that calls itself.
    assert_error(
        &format!(
            "{header}fn now() -> String {{\n    std::env::var(\"NOW\").unwrap_or_default()\n}}\n{derive}{kube}pub struct ESpec {{\n    #[schemars(example = now())]\n    pub x: String,\n}}\n"
        ),
        &[
            // The expression in the function that cannot be folded.
            "src/lib.rs:5:5:",
            "kopgen cannot fold this example statically",
            "help: write a literal, a constant of this crate, or a function",
        ],
    );
    assert_error(
        &format!(
            "{header}fn again() -> u32 {{\n    again()\n}}\n{derive}{kube}pub struct ESpec {{\n    #[serde(default = \"again\")]\n    pub x: u32,\n}}\n"
        ),
        &["src/lib.rs:", "more than 32 deep (or calls itself)"],
    );
    // A library schema Kubernetes cannot hold: kube-derive's crd() panics on it.
    assert_error(
        &format!("{header}{derive}{kube}pub struct ESpec {{\n    pub x: chrono::TimeDelta,\n}}\n"),
        &[
            "src/lib.rs:6:12:",
            "not a valid JSONSchemaProps",
            "kube-derive's crd() would panic on it",
            "help: a field's type has a schema Kubernetes cannot hold",
        ],
    );
}

/// Nesting as deep as a file allows is parsed on a stack sized for it, by whichever thread
/// parses the file: no overflow, no abort.
#[test]
fn deeply_nested_source_does_not_overflow_the_stack() {
    for source in [
        format!("static X: i32 = {}1;\n", "|| ".repeat(20_000)),
        format!(
            "static X: i32 = {}1{};\n",
            "(".repeat(20_000),
            ")".repeat(20_000)
        ),
    ] {
        let session = Session::new();
        session.write(
            "src/lib.rs",
            &format!("pub mod a;\npub mod b;\npub mod c;\n{source}"),
        );
        for module in ["a", "b", "c"] {
            session.write(&format!("src/{module}.rs"), &source);
        }
        let run = session.kopgen(&["manifests", "--paths", "src", "--stdout"]);
        assert!(run.status == 0 || run.status == 1, "{}", run.stderr);
        assert!(!run.stderr.contains("overflow"), "{}", run.stderr);
    }
}

/// Inputs the fuzzer found: each must give an error, never a panic.
#[test]
fn fuzz_regressions_are_errors_not_panics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    for entry in std::fs::read_dir(dir).expect("fuzz fixtures") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let session = Session::new();
        session.write("src/lib.rs", &text);
        let run = session.kopgen(&["manifests", "--paths", "src", "--stdout"]);
        assert!(
            !run.stderr.contains("panicked"),
            "{}: {}",
            path.display(),
            run.stderr
        );
        assert!(
            run.status == 0 || run.status == 1,
            "{}: status {}",
            path.display(),
            run.status
        );
    }
}

/// RBAC and webhook markers count where rustc compiles them: `main.rs` does, a string literal,
/// a block comment, `#[cfg(test)]` code, a feature left off and a file no `mod` declares do not.
#[test]
fn markers_count_only_in_compiled_code() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let grant =
        |group: &str| format!("// +kopgen:rbac:groups={group},resources=things,verbs=get\n");
    let append = |path: &str, text: &str| {
        let file = project.join(path);
        let mut all = std::fs::read_to_string(&file).unwrap_or_default();
        all.push_str(text);
        std::fs::write(&file, all).expect("write");
    };
    append("src/main.rs", &grant("in-main"));
    append(
        "src/lib.rs",
        &format!(
            "{}\npub const H: &str = r#\"\n{}\"#;\n/*\n{}*/\n#[cfg(test)]\nmod marker_tests {{\n    {}}}\n#[cfg(feature = \"off\")]\npub mod off {{\n    {}}}\n",
            grant("in-lib"),
            grant("in-string"),
            grant("in-block-comment"),
            grant("in-test-code"),
            grant("in-feature-off"),
        ),
    );
    append("src/stray.rs", &grant("in-stray-file"));
    let run = run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let role = std::fs::read_to_string(project.join("config/rbac/role.yaml")).expect("role");
    for granted in ["in-main", "in-lib"] {
        assert!(role.contains(granted), "{granted} missing:\n{role}");
    }
    for ignored in [
        "in-string",
        "in-block-comment",
        "in-test-code",
        "in-feature-off",
        "in-stray-file",
    ] {
        assert!(!role.contains(ignored), "{ignored} granted:\n{role}");
    }
}

/// A Kubebuilder habit (`// +kubebuilder:validation:Minimum=1` above a field) does nothing in
/// Rust: it is reported at its line with the attribute to write instead, and `--lint=deny`
/// refuses it.
#[test]
fn kubebuilder_validation_markers_are_reported_at_their_line() {
    let session = Session::new();
    let spec = SPEC.replace(
        "    pub size: i32,",
        "    // +kubebuilder:validation:Minimum=1\n    pub size: i32,",
    );
    assert_ne!(spec, SPEC);
    crate_with(&session, &[("src/lib.rs", &spec)]);
    let line = spec
        .lines()
        .position(|l| l.contains("+kubebuilder:validation"))
        .expect("marker")
        + 1;
    let run = run_kopgen(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "warning[kubebuilder-marker]: src/lib.rs:{line}:5:"
        )) && run.stderr.contains("#[schemars(range(min = 1"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(session.join("out")).expect("rm out");
    let denied = run_kopgen(
        session.path(),
        &[
            "manifests",
            "--paths",
            "src",
            "--output-dir",
            "out",
            "--lint=deny",
        ],
    );
    assert_eq!(denied.status, 1, "{}", denied.stderr);
    assert!(!session.join("out").exists(), "nothing written");
}
