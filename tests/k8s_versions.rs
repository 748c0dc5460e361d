//! A crate that picks another Kubernetes version than `latest` with k8s-openapi's feature (as
//! k8s-openapi asks of a binary: the oldest API server it supports, `v1_33`): the runtime builds
//! for it without enabling a version of its own, and `kopgen manifests` derives from the source
//! only the kinds whose k8s-openapi types have there the schema kopgen holds (`latest`'s),
//! naming the type that needs compiling.

mod support;

use std::path::Path;

use support::{Session, fails_cleanly_in, run_kopgen};

/// The versions beside `latest` that k8s-openapi supports, as the generated table lists them.
fn other_versions() -> Vec<String> {
    let table = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/manifests/library/k8s_versions.rs"
    ))
    .expect("the versions table");
    let line = table
        .lines()
        .find(|line| line.starts_with("pub const VERSIONS"))
        .expect("VERSIONS");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// k8s-openapi refuses two version features at once, so a library that enables one breaks
/// every operator that picks another: the runtime enables none and compiles under each. Its
/// tests and benchmarks, which a workspace's `cargo clippy --workspace --all-targets` builds
/// when a project inside it makes the runtime's copy a member, compile under the oldest too
/// (kopgen's own build has them under `latest`; every target under each version would take
/// minutes more).
#[test]
fn the_runtime_builds_for_every_kubernetes_version() {
    let versions = other_versions();
    assert_eq!(
        versions.first().map(String::as_str),
        Some("v1_33"),
        "{versions:?}"
    );
    for (i, version) in versions.into_iter().enumerate() {
        let targets = if i == 0 { "--all-targets" } else { "--lib" };
        let number = version.trim_start_matches('v').replace('_', ".");
        // A target directory per version, kept across runs: k8s-openapi and kube build once.
        let target = support::shared_target_dir().join(format!("k8s-{version}"));
        let output = std::process::Command::new(env!("CARGO"))
            .args([
                "check",
                "--quiet",
                targets,
                "--all-features",
                "-p",
                "kopgen-runtime",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("K8S_OPENAPI_ENABLED_VERSION", &number)
            .env("CARGO_TARGET_DIR", target)
            .env_remove("RUSTFLAGS")
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "the runtime under Kubernetes {number}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Switches the project's k8s-openapi version feature from `from` to `to`.
fn pick(project: &Path, from: &str, to: &str) {
    let manifest = project.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("Cargo.toml");
    let from = format!("features = [\"{from}\", \"schemars\"]");
    assert!(text.contains(&from), "{text}");
    let text = text.replace(&from, &format!("features = [\"{to}\", \"schemars\"]"));
    std::fs::write(manifest, text).expect("write");
}

#[test]
fn only_kinds_whose_kubernetes_types_differ_in_the_crates_version_need_compiling() {
    let session = Session::new();
    let project = session.init_project("pinned", &[]);
    let blog = [
        "--group",
        "apps",
        "--version",
        "v1",
        "--kind",
        "Blog",
        "--controller=false",
    ];
    support::create_api_ok(&project, &blog);
    pick(&project, "latest", "v1_33");
    // The scaffolded status holds a `Condition`, the same in every version: derived as it is.
    let run = run_kopgen(&project, &["manifests", "--derive=static"]);
    assert_eq!(run.status, 0, "{}", run.stderr);

    let types = project.join("src/api/apps/v1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let field = "    pub foo: Option<String>,\n";
    assert!(text.contains(field), "{text}");
    let tolerations = "    /// Where it may run.\n    \
                       #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    \
                       pub tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>>,\n";
    std::fs::write(
        &types,
        text.replace(field, &format!("{field}{tolerations}")),
    )
    .expect("write");
    let error = fails_cleanly_in(&project, &["manifests", "--derive=static"]);
    assert!(
        error.contains("blog.rs:")
            && error.contains(
                "`k8s_openapi::api::core::v1::Toleration` has another schema under k8s-openapi's feature `v1_33`"
            )
            && error.contains("`--derive=auto` compiles the crate"),
        "{error}"
    );
    // `earliest` is `v1_33`.
    pick(&project, "v1_33", "earliest");
    let error = fails_cleanly_in(&project, &["manifests", "--derive=static"]);
    assert!(error.contains("feature `v1_33`"), "{error}");
    // With `latest`, kopgen's own schemas are the crate's.
    pick(&project, "earliest", "latest");
    let run = run_kopgen(&project, &["manifests", "--derive=static"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
}
