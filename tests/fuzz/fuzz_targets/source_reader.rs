//! Arbitrary bytes as a Rust source file: `kopgen manifests` and the RBAC marker reader must
//! return CRDs or errors, never panic.
//! Run: `cargo +nightly fuzz run --fuzz-dir tests/fuzz source_reader`.
#![no_main]

use std::path::{Path, PathBuf};

use kopgen::manifests::{Derive, Options, discover::Source, generate_with};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let sources = [Source {
        path: PathBuf::from("src/lib.rs"),
        module: "crate".into(),
        text: text.to_owned(),
    }];
    // Static only: a fuzz input must never start cargo.
    let options = Options {
        lint: true,
        max_desc_len: Some(40),
        derive: Derive::Static,
        manifest: None,
        features: Vec::new(),
    };
    let _ = generate_with(&sources, &options);
    let _ = kopgen::rbac::parse_markers(Path::new("src/lib.rs"), text);
});
