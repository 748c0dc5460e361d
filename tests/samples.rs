//! The samples check runs only what the API server would run: a rule it would refuse for its
//! cost is left out, so no sample makes `kopgen manifests` take unbounded time.

mod support;

use support::{Session, create_api_ok};

#[test]
fn a_rule_over_the_cost_budget_is_not_run_on_the_sample() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let types = project.join("src/api/apps/v1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let mut rule = "true".to_owned();
    for level in 0..40 {
        rule = format!("self.spec.l.all(x{level}, {rule})");
    }
    let text = text
        .replacen(
            "    category = ",
            &format!("    validation = \"{rule}\",\n    category = "),
            1,
        )
        .replacen(
            "    pub foo: Option<String>,",
            "    pub foo: Option<String>,\n    #[serde(default)]\n    pub l: Vec<String>,",
            1,
        );
    std::fs::write(&types, text).expect("write");
    let sample = project.join("config/samples/apps_v1_blog.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    std::fs::write(&sample, format!("{text}  l: [a, b]\n")).expect("write");
    let (done, finished) = std::sync::mpsc::channel();
    let run = std::thread::spawn(move || {
        let run = support::run_kopgen(&project, &["manifests", "--derive", "static"]);
        let _ = done.send(());
        run
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("kopgen manifests finishes (the rule ran on the sample for ever)");
    let run = run.join().expect("joins");
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains("budget"),
        "the cost lint names the rule:\n{said}"
    );
}

/// Samples are read as `kubectl apply` reads them (YAML 1.1): an unquoted `yes` where the
/// schema wants a string is a boolean to kubectl and refused by the API server, so the check
/// refuses it too; quoted, it passes. A sample that cannot be read (not UTF-8, a FIFO) or is
/// not YAML is named, not skipped; a byte order mark is read past, as kubectl does.
#[test]
fn samples_are_read_as_kubectl_reads_them_and_none_is_skipped_unsaid() {
    let session = Session::new();
    let project = session.init_project("yaml11samples", &[]);
    create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let samples = project.join("config/samples");
    let sample = samples.join("apps_v1_blog.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    let check = || {
        let run = support::run_kopgen(&project, &["manifests", "--check", "--derive", "static"]);
        (run.status, format!("{}{}", run.stdout, run.stderr))
    };
    std::fs::write(&sample, text.replace("foo: bar", "foo: yes")).expect("write");
    let (status, said) = check();
    assert_ne!(status, 0, "{said}");
    assert!(
        said.contains("apps_v1_blog.yaml") && said.contains("foo"),
        "{said}"
    );
    std::fs::write(
        &sample,
        format!("\u{feff}{}", text.replace("foo: bar", "foo: \"yes\"")),
    )
    .expect("write");
    let (status, said) = check();
    assert_eq!(status, 0, "{said}");

    std::fs::write(samples.join("broken.yaml"), b"spec:\n  foo: \xff\xfe\n").expect("write");
    std::fs::write(samples.join("notyaml.yaml"), "spec: [\n").expect("write");
    let (status, said) = check();
    assert_ne!(status, 0, "{said}");
    assert!(said.contains("broken.yaml: cannot be read"), "{said}");
    assert!(
        said.contains("notyaml.yaml:") && said.contains("not YAML kubectl can apply"),
        "{said}"
    );
}

/// A rule the API server accepts (its static cost under the budget) that would still run
/// millions of steps on the sample is not run: priced at the sample's sizes it costs more than
/// the server lets one call run (it took seconds per document). Its verdict is the server's.
#[test]
fn a_rule_over_the_per_call_limit_at_the_samples_sizes_is_not_run() {
    let session = Session::new();
    let project = session.init_project("callcost", &[]);
    create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let types = project.join("src/api/apps/v1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    // 8^7 steps: under the static budget of 10,000,000 with `maxItems: 8`, over the per-call
    // limit of 1,000,000 on a sample with 8 items.
    let mut rule = "false".to_owned();
    for level in 0..7 {
        rule = format!("self.spec.l.all(x{level}, {rule})");
    }
    let text = text
        .replacen(
            "    category = ",
            &format!("    validation = \"!has(self.spec.l) || {rule}\",\n    category = "),
            1,
        )
        .replacen(
            "    pub foo: Option<String>,",
            "    pub foo: Option<String>,\n    #[serde(default)]\n    #[schemars(length(max = 8))]\n    pub l: Vec<i32>,",
            1,
        );
    std::fs::write(&types, text).expect("write");
    let sample = project.join("config/samples/apps_v1_blog.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    std::fs::write(&sample, format!("{text}  l: [1, 2, 3, 4, 5, 6, 7, 8]\n")).expect("write");
    let run = support::run_kopgen(&project, &["manifests", "--derive", "static"]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(run.status, 0, "the API server accepts the rule: {said}");
    assert!(
        !said.contains("failed rule"),
        "the rule ran on the sample: {said}"
    );
}
