//! `kopgen manifests` with its cache: after any edit, the result (CRDs, lint findings, errors)
//! must be exactly what a run from scratch gives. Checked on targeted cross-file edits and on
//! random edit sequences over the fixture corpus.

mod support;

use std::path::{Path, PathBuf};

use kopgen::manifests::{Options, discover, generate_cached, generate_with};
use support::Session;

/// The outcome of a run, comparable: every output file, every finding, or the error text.
fn outcome(
    result: Result<kopgen::manifests::Generated, kopgen::manifests::error::ManifestError>,
) -> String {
    match result {
        Ok(generated) => {
            let mut text = String::new();
            for output in &generated.outputs {
                text.push_str(&format!(
                    "=== {}\n{}",
                    output.path.display(),
                    output.contents
                ));
            }
            for finding in &generated.findings {
                text.push_str(&format!(
                    "finding {:?} {finding}\n",
                    finding.finding.severity
                ));
            }
            text
        }
        Err(e) => format!("error: {e}"),
    }
}

/// Runs with the cache and from scratch, asserts both agree, and returns the cached outcome.
fn agree(src: &Path, cache: &Path, step: &str) -> String {
    let options = Options {
        lint: true,
        max_desc_len: None,
    };
    let paths = vec![src.to_path_buf()];
    let sources = discover::sources(&paths).expect("sources");
    let cached = outcome(generate_cached(&sources, &options, cache));
    let full = outcome(generate_with(&sources, &options));
    if cached != full {
        let diff = similar::TextDiff::from_lines(&full, &cached);
        panic!(
            "after {step}: the cached run differs from a full run\n{}",
            diff.unified_diff().header("full", "cached")
        );
    }
    cached
}

const LIB: &str = "pub mod api;\npub mod common;\npub mod defaults;\npub mod inner;\n";
const API: &str = r#"use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Shared;

/// A widget.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "inc.example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    pub shared: Shared,
    pub backup: Shared,
    #[serde(default = "crate::defaults::replicas")]
    pub replicas: i32,
}

/// A gadget: its `Shared` is derived after Widget's two, from kopgen's schema cache.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "inc.example.com", version = "v1", kind = "Gadget")]
pub struct GadgetSpec {
    pub name: String,
    pub shared: Shared,
}
"#;
const COMMON: &str = r#"use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Shared between kinds.
#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema, Default)]
pub struct Shared {
    /// A size.
    pub size: u16,
    pub inner: crate::inner::Inner,
}
"#;
const INNER: &str = r#"/// Inside `Shared`.
#[derive(serde::Deserialize, serde::Serialize, Clone, Debug, schemars::JsonSchema, Default)]
pub struct Inner {
    pub depth: u8,
}
"#;
const DEFAULTS: &str = "pub fn replicas() -> i32 {\n    1\n}\n";

fn project(session: &Session) -> (PathBuf, PathBuf) {
    session.write("src/lib.rs", LIB);
    session.write("src/api.rs", API);
    session.write("src/common.rs", COMMON);
    session.write("src/defaults.rs", DEFAULTS);
    session.write("src/inner.rs", INNER);
    (
        session.join("src"),
        session.join("target/kopgen/manifests.cache"),
    )
}

#[test]
fn edits_in_files_a_crd_reads_are_picked_up() {
    let session = Session::new();
    let (src, cache) = project(&session);
    let first = agree(&src, &cache, "the first run");
    assert!(cache.is_file(), "the first run stores the cache");
    assert_eq!(agree(&src, &cache, "no change"), first);

    // A type in another file, a default function in a third: each edit reaches Widget.
    session.write(
        "src/common.rs",
        &COMMON.replace("pub size: u16,", "pub size: u16,\n    pub label: String,"),
    );
    let widened = agree(&src, &cache, "a field added to Shared");
    assert!(widened.contains("label:"), "{widened}");
    session.write("src/defaults.rs", &DEFAULTS.replace("1\n", "3\n"));
    let defaulted = agree(&src, &cache, "a default function changed");
    assert!(defaulted.contains("default: 3"), "{defaulted}");
    // Gadget reads `Inner` only through the schema of `Shared` that Widget's derivation cached.
    session.write(
        "src/inner.rs",
        &INNER.replace("pub depth: u8,", "pub depth: u8,\n    pub width: u8,"),
    );
    let deeper = agree(&src, &cache, "a field added two files away");
    assert_eq!(deeper.matches("width:").count(), 3, "{deeper}");

    // Structure changes: a new struct, then a `use` that makes a name resolve elsewhere.
    session.write("src/common.rs", &format!("{COMMON}\n#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Other {{\n    pub flag: bool,\n}}\n"));
    agree(&src, &cache, "a struct added");
    session.write(
        "src/api.rs",
        &API.replace(
            "use crate::common::Shared;",
            "use crate::common::Other as Shared;",
        ),
    );
    let aliased = agree(&src, &cache, "an import redirected");
    assert!(aliased.contains("flag:"), "{aliased}");

    // Errors are a full run's errors, and the run after the fix is right again.
    session.write("src/common.rs", "pub struct Broken {");
    let broken = agree(&src, &cache, "a syntax error");
    assert!(broken.starts_with("error:"), "{broken}");
    session.write("src/common.rs", COMMON);
    session.write("src/api.rs", API);
    session.write("src/defaults.rs", DEFAULTS);
    session.write("src/inner.rs", INNER);
    assert_eq!(agree(&src, &cache, "everything restored"), first);

    // A new version of a kind in a new file, then a file removed.
    session.write("src/lib.rs", &format!("{LIB}pub mod v2;\n"));
    session.write(
        "src/v2.rs",
        &API.replace("crate::common::Shared;", "crate::common::Shared;\n")
            .replace(
                "version = \"v1\", kind = \"Gadget\"",
                "version = \"v2\", kind = \"Gadget\", storage = false",
            )
            .replace(
                "version = \"v1\", kind = \"Widget\"",
                "version = \"v2\", kind = \"Widget\", storage = false",
            ),
    );
    let two = agree(&src, &cache, "a second version");
    assert!(two.contains("name: v2"), "{two}");
    std::fs::remove_file(session.join("src/v2.rs")).expect("remove");
    session.write("src/lib.rs", LIB);
    assert_eq!(agree(&src, &cache, "the second version removed"), first);
}

#[test]
fn a_damaged_or_foreign_cache_is_not_used() {
    let session = Session::new();
    let (src, cache) = project(&session);
    let first = agree(&src, &cache, "the first run");
    for garbage in [&b""[..], b"kopgen-manifests-cache 2\n{\"key\": 1}", b"{}"] {
        std::fs::write(&cache, garbage).expect("write");
        assert_eq!(agree(&src, &cache, "a damaged cache"), first);
    }
    // CRD text changed behind the cache's back (the blob beside it): no source changed, but
    // the outputs' hashes do not match, so everything is derived again.
    let blob = cache.with_extension("blob");
    let mut bytes = std::fs::read(&blob).expect("read");
    let at = bytes.len() - 2;
    bytes[at] = b'#';
    std::fs::write(&blob, &bytes).expect("write");
    assert_eq!(agree(&src, &cache, "a tampered blob"), first);
    std::fs::write(&blob, b"").expect("write");
    session.write("src/api.rs", &format!("{API}\n"));
    agree(&src, &cache, "an edit after the blob was emptied");
    std::fs::remove_file(&blob).expect("remove");
    assert_eq!(agree(&src, &cache, "a missing blob"), first);

    // A cache that reads back but whose indexes point nowhere is not trusted either.
    type Corrupt = fn(&mut serde_json::Value);
    let corruptions: [(&str, Corrupt); 2] = [
        ("module items out of range", |state| {
            for module in state["structure"]["modules"]
                .as_object_mut()
                .expect("modules")
                .values_mut()
            {
                for item in module["items"].as_object_mut().expect("items").values_mut() {
                    *item = serde_json::json!(1_000_000);
                }
            }
        }),
        ("items outside their file", |state| {
            for item in state["structure"]["items"].as_array_mut().expect("items") {
                item["file"] = serde_json::json!(0);
            }
        }),
    ];
    for (step, corrupt) in corruptions {
        let text = std::fs::read_to_string(&cache).expect("read");
        let (magic, json) = text.split_once('\n').expect("magic line");
        let mut state: serde_json::Value = serde_json::from_str(json).expect("json");
        corrupt(&mut state);
        std::fs::write(&cache, format!("{magic}\n{state}")).expect("write");
        // An edit, so that the cache's structure is read.
        let api = session.read("src/api.rs");
        let edited = if api.ends_with("\n\n") {
            API.to_owned()
        } else {
            format!("{API}\n")
        };
        session.write("src/api.rs", &edited);
        assert_eq!(agree(&src, &cache, step), first);
    }
}

/// A tiny deterministic generator, so failures replay.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// One random edit of the kind a user makes: a field added or removed, a type or doc changed,
/// a struct added, a file restored.
fn edit(text: &str, original: &str, rng: &mut Rng, step: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let pick = |rng: &mut Rng, want: &dyn Fn(&str) -> bool| {
        let found: Vec<usize> = (0..lines.len()).filter(|&i| want(lines[i])).collect();
        (!found.is_empty()).then(|| found[rng.below(found.len())])
    };
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    match rng.below(7) {
        0 => {
            if let Some(i) = pick(rng, &|l| l.starts_with("pub struct") && l.ends_with('{')) {
                out.insert(i + 1, format!("    pub added{step}: Option<i64>,"));
            }
        }
        1 => {
            if let Some(i) = pick(rng, &|l| l.trim_start().starts_with("pub ") && l.ends_with(',')) {
                out.remove(i);
            }
        }
        2 => {
            if let Some(i) = pick(rng, &|l| l.contains("String")) {
                out[i] = out[i].replacen("String", "u32", 1);
            }
        }
        3 => {
            if let Some(i) = pick(rng, &|l| l.trim_start().starts_with("pub ")) {
                out.insert(i, format!("    /// Edited doc {step}."));
            }
        }
        4 => out.push(format!(
            "\n#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]\npub struct Added{step} {{\n    pub x: bool,\n}}"
        )),
        5 => {
            if let Some(i) = pick(rng, &|l| l.contains(": i32") || l.contains(": bool")) {
                out[i] = out[i].replacen(": i32", ": Vec<i32>", 1).replacen(": bool", ": String", 1);
            }
        }
        _ => return original.to_owned(),
    }
    let mut joined = out.join("\n");
    joined.push('\n');
    joined
}

#[test]
fn random_edits_over_the_fixture_corpus_match_full_runs() {
    let session = Session::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&fixtures)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("read");
            (name, text)
        })
        .collect();
    files.sort();
    for (name, text) in &files {
        session.write(&format!("src/{name}"), text);
    }
    let src = session.join("src");
    let cache = session.join("target/kopgen/manifests.cache");
    agree(&src, &cache, "the first run");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for step in 0..24 {
        // One to three files per step, as a save of several files would.
        for _ in 0..=rng.below(3) {
            let (name, original) = &files[rng.below(files.len())];
            let rel = format!("src/{name}");
            let edited = edit(&session.read(&rel), original, &mut rng, step);
            session.write(&rel, &edited);
        }
        agree(&src, &cache, &format!("random step {step}"));
    }
}
