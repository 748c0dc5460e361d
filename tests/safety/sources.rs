//! Bad Rust sources and unreadable inputs of `kopgen manifests`.

use std::path::Path;

use super::{GOOD, HEADER, kind};
use crate::support::{Session, fails_cleanly_in};

/// One bad input: what to write under `src/`, and what the error must say.
struct Row {
    what: &'static str,
    lib: String,
    needle: &'static str,
}

fn row(what: &'static str, lib: String, needle: &'static str) -> Row {
    Row { what, lib, needle }
}

/// Names and paths the API server refuses, or that would lead out of the output directory.
fn bad_attributes() -> Vec<Row> {
    let with = |extra: &str| kind(&format!("{GOOD}, {extra}"), "pub x: i32,");
    let group = |g: &str| {
        kind(
            &format!("group = \"{g}\", version = \"v1\", kind = \"Foo\""),
            "pub x: i32,",
        )
    };
    vec![
        row(
            "group climbing out",
            group("../../../src/evil"),
            "group \"../../../src/evil\" is not a DNS-1123 subdomain",
        ),
        row(
            "absolute group",
            group("/tmp/evil.example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group with a slash",
            group("a/b.example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group without a dot",
            group("example"),
            "with at least one dot",
        ),
        row(
            "uppercase group",
            group("Example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group too long",
            group(&format!("{}.example.com", "a".repeat(250))),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "empty version",
            kind(
                "group = \"a.example.com\", version = \"\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"\" is not a DNS-1035 label",
        ),
        row(
            "uppercase version",
            kind(
                "group = \"a.example.com\", version = \"V1\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"V1\"",
        ),
        row(
            "version with a dot",
            kind(
                "group = \"a.example.com\", version = \"v1.2\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"v1.2\"",
        ),
        row(
            "kind too long",
            kind(
                &format!(
                    "group = \"a.example.com\", version = \"v1\", kind = \"K{}\"",
                    "a".repeat(63)
                ),
                "pub x: i32,",
            ),
            "is not a PascalCase name of at most 63",
        ),
        row(
            "lowercase kind",
            kind(
                "group = \"a.example.com\", version = \"v1\", kind = \"foo\"",
                "pub x: i32,",
            ),
            "kind \"foo\"",
        ),
        row(
            "plural climbing out",
            with("plural = \"../foos\""),
            "plural \"../foos\" is not a DNS-1035 label",
        ),
        row(
            "plural with a slash",
            with("plural = \"a/b\""),
            "plural \"a/b\"",
        ),
        row(
            "uppercase plural",
            with("plural = \"Foos\""),
            "plural \"Foos\"",
        ),
        row(
            "plural too long",
            with(&format!("plural = \"{}\"", "f".repeat(64))),
            "is not a DNS-1035 label",
        ),
        row(
            "singular with a space",
            with("singular = \"a foo\""),
            "singular \"a foo\"",
        ),
        row(
            "short name with a dot",
            with("shortname = \"f.o\""),
            "short name \"f.o\"",
        ),
        row(
            "category uppercase",
            with("category = \"All\""),
            "category \"All\"",
        ),
        row(
            "printcolumn type",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"text\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "printcolumn \"X\" has type \"text\"",
        ),
        row(
            "printcolumn format",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"string\",\"format\":\"hex\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "has format \"hex\"",
        ),
        row(
            "printcolumn path",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"string\",\"jsonPath\":\"spec.x\"}\"#",
            ),
            "has json_path \"spec.x\"",
        ),
        row(
            "selectable path",
            with("selectable = \"spec.x\""),
            "selectable field \"spec.x\" is not a JSON path",
        ),
        row(
            "scale spec path",
            with(
                "status = \"FooStatus\", scale(spec_replicas_path = \".status.n\", status_replicas_path = \".status.n\")",
            ),
            "scale spec_replicas_path",
        ),
        row(
            "printer column without a name",
            with(
                "printcolumn = r#\"{\"name\":\"\",\"type\":\"string\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "a printcolumn has no name",
        ),
        row(
            "label value with a space",
            with("label(\"tier\", \"gold plated\")"),
            "label `tier: gold plated` is not one the API server accepts",
        ),
        row(
            "annotation key with two slashes",
            with("annotation(\"a/b/c\", \"x\")"),
            "annotation `a/b/c: x`",
        ),
        row(
            "selectable list",
            kind(
                &format!("{GOOD}, selectable = \".spec.tags\""),
                "pub tags: Vec<String>,",
            ),
            "selectable field `.spec.tags` does not name a string, boolean or integer field",
        ),
        row(
            "selectable metadata",
            with("selectable = \".metadata.name\""),
            "points into metadata",
        ),
        row(
            "selectable twice",
            with("selectable = \".spec.x\", selectable = \".spec.x\""),
            "is given twice",
        ),
        row(
            "nine selectable fields",
            kind(
                &format!(
                    "{GOOD}, {}",
                    (0..9)
                        .map(|i| format!("selectable = \".spec.f{i}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &(0..9)
                    .map(|i| format!("pub f{i}: i32,"))
                    .collect::<String>(),
            ),
            "9 selectable fields",
        ),
        row(
            "look-ahead pattern",
            kind(
                GOOD,
                "#[schemars(regex(pattern = \"^(?=a).*$\"))]\npub x: String,",
            ),
            "is not a regular expression the API server (Go's RE2) compiles",
        ),
        row(
            "CEL nested too deep",
            with(&format!(
                "validation = \"{}self.spec.x{} > 0\"",
                "(".repeat(260),
                ")".repeat(260)
            )),
            "nests 261 levels deep",
        ),
        row(
            "CRD name too long",
            kind(
                &format!(
                    "group = \"{}.{}.{}.{}.io\", version = \"v1\", kind = \"Foo\", plural = \"{}\"",
                    "a".repeat(60),
                    "b".repeat(60),
                    "c".repeat(60),
                    "d".repeat(50),
                    "f".repeat(20)
                ),
                "pub x: i32,",
            ),
            "is longer than 195 characters",
        ),
    ]
}

/// Inputs that once crashed or looped: now each is an error.
fn bad_sources() -> Vec<Row> {
    vec![
        row(
            "alias cycle",
            format!(
                "{}pub type X = Y;\npub type Y = Vec<X>;\n",
                kind(GOOD, "pub x: X,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "alias naming itself",
            format!("{}pub type X = X;\n", kind(GOOD, "pub x: X,")),
            "nests more than 256 levels deep",
        ),
        row(
            "generic alias growing",
            format!(
                "{}pub type W<T> = Vec<W<T>>;\n",
                kind(GOOD, "pub x: W<u8>,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "alias cycle in a default",
            format!(
                "{}pub type X = X;\n",
                kind(GOOD, "#[serde(default)]\npub x: X,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "kinds colliding",
            format!(
                "{}{}",
                kind(GOOD, "pub x: i32,"),
                kind(GOOD, "pub x: i32,")
                    .replace("FooSpec", "FoOSpec")
                    .replace("kind = \"Foo\"", "kind = \"FoO\"")
                    .replace(HEADER, "")
            ),
            "would both be the CRD foos.a.example.com",
        ),
        row(
            "versions of one kind with different plurals",
            format!(
                "pub mod v1 {{\n{}}}\npub mod v2 {{\n{}}}\n",
                kind(&format!("{GOOD}, plural = \"foos\""), "pub x: i32,"),
                kind(
                    "group = \"a.example.com\", version = \"v2\", kind = \"Foo\", plural = \"fooz\", storage = false",
                    "pub x: i32,"
                )
            ),
            "has the plural `foos` and version v2",
        ),
        row(
            "a kind colliding with another kind's non-storage version",
            format!(
                "pub mod v1 {{\n{}}}\npub mod v2 {{\n{}}}\npub mod bar {{\n{}}}\n",
                kind(&format!("{GOOD}, plural = \"foos\""), "pub x: i32,"),
                kind(
                    "group = \"a.example.com\", version = \"v2\", kind = \"Foo\", plural = \"fooz\", storage = false",
                    "pub x: i32,"
                ),
                kind(
                    "group = \"a.example.com\", version = \"v1\", kind = \"Bar\", plural = \"fooz\"",
                    "pub x: i32,"
                )
                .replace("FooSpec", "BarSpec")
            ),
            "kinds Bar and Foo would both be the CRD fooz.a.example.com",
        ),
        row("syntax error", "pub struct {".into(), "cannot parse Rust"),
        row(
            "missing group",
            kind("version = \"v1\", kind = \"Foo\"", "pub x: i32,"),
            "needs `group`",
        ),
        row(
            "module file missing",
            format!("mod missing;\n{}", kind(GOOD, "pub x: i32,")),
            "file not found for module `missing`",
        ),
    ]
}

#[test]
fn bad_input_in_the_source_is_an_error_and_changes_nothing() {
    let rows: Vec<Row> = bad_attributes().into_iter().chain(bad_sources()).collect();
    assert!(rows.len() >= 30);
    for row in rows {
        let session = Session::new();
        session.write("src/lib.rs", &row.lib);
        session.write("out/keep.yaml", "kept\n");
        let stderr = fails_cleanly_in(
            session.path(),
            &["manifests", "--paths", "src", "--output-dir", "out"],
        );
        assert!(
            stderr.contains("src/lib.rs:") && stderr.contains(row.needle),
            "{}: expected {:?} in:\n{stderr}",
            row.what,
            row.needle
        );
        assert!(
            !session.join("src/evil_foos.yaml").exists()
                && !Path::new("/tmp/evil.example.com_foos.yaml").exists()
        );
    }
}

/// Files kopgen cannot read as Rust, and output paths it cannot write: errors that say where
/// and why, with nothing written.
#[test]
fn unreadable_sources_and_blocked_outputs_are_errors() {
    let session = Session::new();
    session.write("src/lib.rs", &kind(GOOD, "pub x: i32,"));
    std::fs::write(session.join("src/bad.rs"), b"pub struct A;\n// caf\xe9\n").expect("write");
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("src/bad.rs:2:7: the file is not UTF-8"),
        "{stderr}"
    );
    std::fs::remove_file(session.join("src/bad.rs")).expect("remove");

    session.write("src/huge.rs", &format!("// {}\n", "x".repeat(9 << 20)));
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("src/huge.rs") && stderr.contains("over kopgen's limit"),
        "{stderr}"
    );
    std::fs::remove_file(session.join("src/huge.rs")).expect("remove");

    session.write("out", "a file\n");
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("is a file (or a link to nothing) where a directory is needed"),
        "{stderr}"
    );
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out/crds"],
    );
    assert!(
        stderr.contains("is a file (or a link to nothing) where a directory is needed"),
        "{stderr}"
    );

    session.write("empty/lib.rs", "pub struct Nothing;\n");
    let run = session.kopgen(&["manifests", "--paths", "empty", "--stdout"]);
    assert_eq!(run.status, 0);
    assert!(
        run.stderr
            .contains("note: no #[derive(CustomResource)] in empty"),
        "{}",
        run.stderr
    );
}
