//! Arbitrary text as the comments of a source file: RBAC and webhook markers parse into rules
//! and webhooks or into located errors, never a panic, and parsed webhooks render to YAML that
//! parses back. Run: `cargo +nightly fuzz run --fuzz-dir tests/fuzz markers`.
#![no_main]

use std::path::Path;

use kopgen::{rbac, webhooks};
use serde::Deserialize;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file = Path::new("src/fuzz.rs");
    if let Ok(rules) = rbac::parse_markers(file, text) {
        let _ = rbac::render(&rules, false);
    }
    let mut found = webhooks::Markers::default();
    if webhooks::parse_into(file, text, &mut found).is_ok() {
        if let Some(yaml) = webhooks::render(&found) {
            for doc in serde_yaml::Deserializer::from_str(&yaml) {
                serde_yaml::Value::deserialize(doc).expect("rendered YAML parses");
            }
        }
    }
});
