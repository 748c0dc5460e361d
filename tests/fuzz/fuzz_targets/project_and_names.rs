//! Arbitrary bytes as a PROJECT file and as the names `init` and `create api` take: parsing,
//! validating and re-rendering return values or errors, never panic; whatever validates is a
//! name Kubernetes and Rust accept, and a parsed PROJECT renders back to one that parses.
//! Run: `cargo +nightly fuzz run --fuzz-dir tests/fuzz project_and_names`.
#![no_main]

use kopgen::{names, project::Project};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(project) = Project::parse(text) {
        let rendered = project.render();
        let again = Project::parse(&rendered).expect("a rendered PROJECT parses");
        assert_eq!(again, project);
    }
    for line in text.lines().take(8) {
        if names::validate_new_kind(line).is_ok() {
            assert!(line.len() <= 62 && line.starts_with(|c: char| c.is_ascii_uppercase()));
        }
        if names::validate_group(line).is_ok() || names::validate_domain(line).is_ok() {
            assert!(line.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'));
        }
        let _ = names::validate_version(line);
        let _ = names::validate_owner(line);
        let _ = names::validate_project_name(line);
    }
});
