//! Differential fuzzing of `kopgen manifests`' cache: the input is three Rust sources separated
//! by NUL bytes. A cached run over (first, second) is followed by a cached run over (first,
//! third), which must give exactly what a run from scratch over (first, third) gives: the same
//! CRDs and findings, or the same errors. Never a panic.
//! Run: `cargo +nightly fuzz run --fuzz-dir tests/fuzz cached_runs`.
#![no_main]

use std::path::PathBuf;

use kopgen::manifests::{Options, discover::Source, generate_cached, generate_with};
use libfuzzer_sys::fuzz_target;

fn sources(lib: &str, other: &str) -> Vec<Source> {
    vec![
        Source {
            path: PathBuf::from("src/lib.rs"),
            module: "crate".into(),
            text: lib.to_owned(),
        },
        Source {
            path: PathBuf::from("src/other.rs"),
            module: "crate::other".into(),
            text: other.to_owned(),
        },
    ]
}

fn outcome(
    result: Result<kopgen::manifests::Generated, kopgen::manifests::error::ManifestError>,
) -> String {
    match result {
        Ok(generated) => {
            let mut text = String::new();
            for output in &generated.outputs {
                text.push_str(&format!("=== {}\n{}", output.path.display(), output.contents));
            }
            for finding in &generated.findings {
                text.push_str(&format!("{finding}\n"));
            }
            text
        }
        Err(e) => format!("error: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.splitn(3, '\0');
    let (Some(lib), Some(before), Some(after)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else { return };
    let cache = dir.path().join("manifests.cache");
    let options = Options { lint: true, max_desc_len: None };
    let _ = generate_cached(&sources(lib, before), &options, &cache);
    let cached = outcome(generate_cached(&sources(lib, after), &options, &cache));
    let fresh = outcome(generate_with(&sources(lib, after), &options));
    assert_eq!(cached, fresh, "the cached run differs from a run from scratch");
    // A run's threads free what they built after it returns: wait, so that libFuzzer's leak
    // check sees everything freed.
    kopgen::manifests::settle();
});
