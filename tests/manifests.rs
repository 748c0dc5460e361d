//! `kopgen manifests` from the command line: where it writes, `--check`, `--stdout`,
//! `--paths`/`--output-dir`, determinism, and errors that point into the source.

#[path = "manifests/errors.rs"]
mod errors;
mod support;

use support::{Session, run_kopgen, tree};

const SPEC: &str = r#"
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A widget.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "widgets.example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    pub size: i32,
}
"#;

fn crate_with(session: &Session, files: &[(&str, &str)]) {
    for (path, text) in files {
        session.write(path, text);
    }
}

#[test]
fn in_a_kopgen_project_it_needs_no_flags() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let created = support::create_api_ok(&project, support::BLOG);
    // `create api` already wrote what `kopgen manifests` writes.
    assert!(
        created
            .stdout
            .contains("Created config/crd/bases/apps.example.com_blogs.yaml")
            && created.stdout.contains("Updated config/rbac/role.yaml"),
        "{}",
        created.stdout
    );
    std::fs::remove_file(project.join("config/crd/bases/apps.example.com_blogs.yaml"))
        .expect("remove");
    let run = run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("Created config/crd/bases/apps.example.com_blogs.yaml"),
        "{}",
        run.stdout
    );
    let role = std::fs::read_to_string(project.join("config/rbac/role.yaml")).expect("role");
    insta::assert_snapshot!("scaffolded_blog_role", role);
    let crd = std::fs::read_to_string(project.join("config/crd/bases/apps.example.com_blogs.yaml"))
        .expect("crd");
    insta::assert_snapshot!("scaffolded_blog_crd", crd);
    let again = run_kopgen(&project, &["manifests"]);
    assert_eq!(again.stdout, "", "a second run changes nothing");
}

#[test]
fn check_passes_when_current_and_fails_with_a_diff_when_stale() {
    let session = Session::new();
    // A description long enough for the writer to fold.
    let spec = SPEC.replace(
        "    pub size: i32,",
        "    /// The size of the widget, in the units its maker chose long before anyone asked why.\n    pub size: i32,",
    );
    crate_with(&session, &[("src/lib.rs", &spec)]);
    let args = ["manifests", "--paths", "src", "--output-dir", "crds"];
    assert_eq!(session.kopgen(&args).status, 0);
    let mut check = args.to_vec();
    check.push("--check");
    let run = session.kopgen(&check);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("up to date"), "{}", run.stdout);

    // The same CRD as kopgen 0.2 wrote it (serde_yaml's style): one note naming the file, and
    // no diff of every line.
    let file = "crds/widgets.example.com_widgets.yaml";
    let current = session.read(file);
    let value: serde_yaml::Value = serde_yaml::from_str(&current).expect("YAML");
    let old_style = format!(
        "{}{}",
        kopgen::manifests::HEADER,
        serde_yaml::to_string(&value).expect("YAML")
    );
    assert_ne!(old_style, current, "the writers differ on this CRD");
    session.write(file, &old_style);
    let run = session.kopgen(&check);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "note: 1 file(s) hold the same manifests in an older kopgen's YAML style: {file}"
        )) && !run.stdout.contains("@@"),
        "{}",
        run.stdout
    );
    assert_eq!(session.read(file), old_style, "--check writes nothing");
    assert_eq!(session.kopgen(&args).status, 0);
    assert_eq!(session.read(file), current);

    session.write(
        "src/lib.rs",
        &spec.replace("pub size: i32,", "pub size: i32,\n    pub color: String,"),
    );
    let before = tree(session.path());
    let run = session.kopgen(&check);
    assert_eq!(run.status, 1);
    assert!(
        run.stdout.contains("+              color:"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("out of date"), "{}", run.stderr);
    assert!(tree(session.path()) == before, "--check writes nothing");
}

#[test]
fn a_second_run_writes_only_what_an_edit_changed() {
    let session = Session::new();
    crate_with(
        &session,
        &[
            ("Cargo.toml", "[package]\nname = \"demo\"\n"),
            ("src/lib.rs", SPEC),
        ],
    );
    let args = ["manifests", "--paths", "src", "--output-dir", "crds"];
    let run = session.kopgen(&args);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Created crds/"), "{}", run.stdout);
    assert_eq!(session.kopgen(&args).stdout, "", "nothing changed");
    session.write(
        "src/lib.rs",
        &SPEC.replace("pub size: i32,", "pub size: i32,\n    pub color: String,"),
    );
    let run = session.kopgen(&args);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Updated crds/"), "{}", run.stdout);
    let crd = session.read("crds/widgets.example.com_widgets.yaml");
    assert!(crd.contains("color:"), "{crd}");
    assert!(
        !session.join("target").exists(),
        "kopgen keeps nothing between runs"
    );
}

#[test]
fn stdout_prints_instead_of_writing() {
    let session = Session::new();
    crate_with(&session, &[("src/lib.rs", SPEC)]);
    let before = tree(session.path());
    let run = session.kopgen(&["manifests", "--paths", "src", "--stdout"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("---\n# Generated by `kopgen manifests`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("name: widgets.widgets.example.com"),
        "{}",
        run.stdout
    );
    assert!(tree(session.path()) == before);
}

#[test]
fn output_is_identical_whatever_the_file_order() {
    let session = Session::new();
    let other = SPEC.replace("Widget", "Gadget");
    crate_with(
        &session,
        &[
            ("src/lib.rs", "pub mod a;\npub mod b;\n"),
            ("src/a.rs", SPEC),
            ("src/b.rs", &other),
        ],
    );
    let first = session.kopgen(&["manifests", "--paths", "src", "--stdout"]);
    let second = session.kopgen(&[
        "manifests",
        "--paths",
        "src/b.rs",
        "--paths",
        "src/a.rs",
        "--stdout",
    ]);
    assert_eq!(first.status, 0, "{}", first.stderr);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(
        first
            .stdout
            .matches("kind: CustomResourceDefinition")
            .count(),
        2
    );
}

/// One version of kind `Backup` in a file of its own, each with its own `BackupStatus`.
fn backup_version(version: &str, storage: bool, status_field: &str) -> String {
    let storage = if storage { "" } else { ", storage = false" };
    format!(
        "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{{Deserialize, Serialize}};\n\n\
         #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         #[kube(group = \"backup.example.com\", version = \"{version}\", kind = \"Backup\", status = \"BackupStatus\"{storage})]\n\
         pub struct BackupSpec {{\n    pub schedule: String,\n}}\n\n\
         #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         pub struct BackupStatus {{\n    pub {status_field}: String,\n}}\n"
    )
}

/// Files given one by one are crates of their own: each version keeps its own `BackupStatus`,
/// whatever the order of `--paths`.
#[test]
fn loose_files_keep_their_own_types_whatever_the_order() {
    let session = Session::new();
    session.write(
        "v1alpha1.rs",
        &backup_version("v1alpha1", false, "alphaPhase"),
    );
    session.write("v1beta1.rs", &backup_version("v1beta1", false, "betaPhase"));
    session.write("v1.rs", &backup_version("v1", true, "phase"));
    let files = ["v1alpha1.rs", "v1beta1.rs", "v1.rs"];
    let mut outputs = Vec::new();
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]] {
        let mut args = vec!["manifests", "--stdout"];
        for i in order {
            args.extend(["--paths", files[i]]);
        }
        let run = session.kopgen(&args);
        assert_eq!(run.status, 0, "{}", run.stderr);
        outputs.push(run.stdout);
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{outputs:#?}");
    let crd: serde_yaml::Value =
        serde_yaml::from_str(outputs[0].trim_start_matches("---\n")).expect("yaml");
    for (version, field) in [
        ("v1alpha1", "alphaPhase"),
        ("v1beta1", "betaPhase"),
        ("v1", "phase"),
    ] {
        let versions = crd["spec"]["versions"].as_sequence().expect("versions");
        let found = versions
            .iter()
            .find(|v| v["name"] == version)
            .expect("version");
        let status = &found["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
        assert!(
            status.get(field).is_some(),
            "{version}'s status has its own {field}: {status:?}"
        );
    }
}

/// The fixture corpus, its files given in several orders, gives the same bytes.
#[test]
fn the_fixture_corpus_gives_the_same_bytes_in_any_order() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.expect("entry").path().display().to_string())
        .filter(|p| p.ends_with(".rs"))
        .collect();
    files.sort();
    let session = Session::new();
    let mut outputs = Vec::new();
    for permutation in 0..3 {
        match permutation {
            1 => files.reverse(),
            2 => {
                let third = files.len() / 3;
                files.rotate_left(third);
            }
            _ => {}
        }
        let mut args = vec!["manifests", "--stdout", "--lint", "off"];
        for file in &files {
            args.extend(["--paths", file.as_str()]);
        }
        let run = session.kopgen(&args);
        assert_eq!(run.status, 0, "{}", run.stderr);
        outputs.push(run.stdout);
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
    assert!(outputs[0].matches("kind: CustomResourceDefinition").count() >= 70);
}

/// A sample the API server would refuse (a field of the wrong type, one the schema does not
/// have) fails `kopgen manifests --check` at the sample's document, and nothing is written;
/// plain `kopgen manifests` warns; the scaffolded sample passes.
#[test]
fn samples_that_the_api_server_would_refuse_fail_the_check() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, support::BLOG);
    let sample = project.join("config/samples/apps_v1alpha1_blog.yaml");
    let good = std::fs::read_to_string(&sample).expect("sample");
    let check = run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(
        check.status, 0,
        "the scaffolded sample passes: {}",
        check.stderr
    );
    for (bad, needle) in [
        (
            good.replace("foo: bar", "foo: 3"),
            "at spec.foo: 3 is not of type string",
        ),
        (
            good.replace("foo: bar", "foo: bar\n  colour: red"),
            "`colour` is no field of the schema",
        ),
        (
            format!("{good}---\n{}", good.replace("foo: bar", "foo: [1]")),
            "apps_v1alpha1_blog.yaml:12:",
        ),
    ] {
        std::fs::write(&sample, &bad).expect("write");
        // While the types are being reshaped, `make manifests` warns and writes.
        let run = run_kopgen(&project, &["manifests"]);
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert!(run.stderr.contains("warning[sample]"), "{}", run.stderr);
        let stderr = support::fails_cleanly_in(&project, &["manifests", "--check"]);
        assert!(
            stderr.contains("error[sample]: config/samples/apps_v1alpha1_blog.yaml:")
                && stderr.contains(needle),
            "{needle}: {stderr}"
        );
    }
}
