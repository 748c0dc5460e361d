//! Deeply nested flow YAML (`[[[...]]]`) in a file kopgen reads is refused at once, naming the
//! file and line, before any parser spends time quadratic in it.

mod support;

use support::Session;

fn nested(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

#[test]
fn deep_nesting_in_project_or_a_sample_is_refused_at_once() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let path = project.join("PROJECT");
    let text = std::fs::read_to_string(&path).expect("PROJECT");
    let before = support::tree(&project);
    std::fs::write(&path, format!("{text}extra: {}\n", nested(100_000))).expect("write");
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_ne!(run.status, 0);
    assert!(run.stderr.contains("PROJECT"), "{}", run.stderr);
    assert!(run.stderr.contains("nest deeper than 64"), "{}", run.stderr);
    std::fs::write(&path, &text).expect("restore");
    assert_eq!(support::tree(&project), before, "nothing written");

    // A sample: a finding of the samples check naming the file and line, not a long parse.
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let sample = project.join("config/samples/apps_v1_blog.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    std::fs::write(&sample, format!("{text}  deep: {}\n", nested(100_000))).expect("write");
    let run = support::run_kopgen(&project, &["manifests", "--check", "--derive", "static"]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("apps_v1_blog.yaml:"), "{said}");
    assert!(said.contains("nest deeper than 64"), "{said}");
}
