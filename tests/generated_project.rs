//! Generated projects are real projects: they build, pass their own tests (controllers
//! against a mocked API server), are clippy- and rustfmt-clean, and their config/ is valid
//! Kubernetes YAML that kustomize builds.
//!
//! Every generated project builds into one shared cargo target directory (see
//! `support::shared_target_dir`), so kube and k8s-openapi compile once per machine.

mod support;

use std::{path::Path, process::Command};

use support::{Session, cargo_ok, run_kopgen};

fn create_api(project: &Path, args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    support::create_api_ok(project, &args);
}

/// Three own kinds across two groups (one cluster-scoped, one with a long name), a second
/// version of one kind, and controllers for built-in kinds of the core and a named group.
fn multi_kind_project(session: &Session) -> std::path::PathBuf {
    let project = session.init_demo(&[]);
    for args in [
        "--group apps --version v1alpha1 --kind Blog",
        "--group apps --version v1beta1 --kind Blog --controller=false",
        "--group apps --version v1 --kind Blog",
        "--group platform-engineering --version v1beta1 --kind ApplicationNetworkPolicyBinding",
        "--group db --version v1 --kind Db --namespaced=false",
        // Its integration test's arguments pass rustfmt's call width (60): laid out vertically.
        "--group infra --version v1beta1 --kind Tenant --namespaced=false",
        // Names common in Kubernetes but not used by the generated code: they compile.
        "--group web --version v1 --kind Service --controller=false",
        "--group web --version v1 --kind Job --controller=false",
        "--group apps --version v1 --kind Deployment --resource=false",
        "--group core --version v1 --kind ConfigMap --resource=false",
    ] {
        create_api(&project, args);
    }
    for args in [
        "--group apps --version v1 --kind Blog --defaulting --programmatic-validation",
        "--group db --version v1 --kind Db --defaulting",
        "--group platform-engineering --version v1beta1 --kind ApplicationNetworkPolicyBinding --programmatic-validation",
    ] {
        let args: Vec<&str> = ["create", "webhook"]
            .into_iter()
            .chain(args.split_whitespace())
            .collect();
        let run = run_kopgen(&project, &args);
        assert_eq!(run.status, 0, "kopgen {args:?} failed:\n{}", run.stderr);
    }
    project
}

#[test]
fn a_multi_kind_project_builds_tests_and_lints_clean() {
    let session = Session::new();
    let project = multi_kind_project(&session);
    // `create api` wrote what `kopgen manifests` writes: nothing is stale, so the project's own
    // tests (which compare config/crd/bases with kube-derive's crd()) pass with no
    // `make manifests` in between.
    let check = run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 0, "stale after create api:\n{}", check.stdout);
    let run = run_kopgen(&project, &["manifests", "--lint=deny"]);
    assert_eq!(run.status, 0, "kopgen manifests failed:\n{}", run.stderr);
    assert_valid_kubernetes_yaml(&project);
    if let Some(out) = kustomize(&project, "config/default") {
        assert_eq!(
            out.matches("kind: CustomResourceDefinition").count(),
            6,
            "{out}"
        );
        // The webhooks, their Service and cert-manager's CA injection.
        for expected in [
            "kind: MutatingWebhookConfiguration",
            "kind: ValidatingWebhookConfiguration",
            "cert-manager.io/inject-ca-from: demo-system/demo-serving-cert",
            "- demo-webhook-service.demo-system.svc",
            "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
            "path: /mutate-db-example-com-v1-db",
            "path: /validate-apps-example-com-v1-blog",
        ] {
            assert!(out.contains(expected), "{expected}:\n{out}");
        }
    }
    cargo_ok(&project, &["fmt", "--all", "--", "--check"]);
    cargo_ok(&project, &["build", "--all-targets"]);
    // Every scaffolded test ran and passed, by name; the integration and e2e tests are the
    // ignored ones (they need a control plane or a cluster).
    let output = support::cargo(&project, &["test"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "cargo test failed:\n{stdout}");
    let expected: Vec<(String, String)> = support::declared_tests(&project)
        .into_iter()
        .map(|(name, ignored)| (name, if ignored { "ignored" } else { "ok" }.to_owned()))
        .collect();
    assert!(expected.len() > 20, "scaffolded tests: {expected:?}");
    assert_eq!(support::reported_tests(&stdout), expected, "{stdout}");
    cargo_ok(
        &project,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    // A newcomer's first edit: a field with a default in the spec. The scaffolded tests build
    // their objects from the samples, so they still compile and pass.
    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let edited = text.replacen(
        "    pub foo: Option<String>,\n",
        "    pub foo: Option<String>,\n\n    /// How many replicas.\n    #[serde(default)]\n    pub replicas: i32,\n",
        1,
    );
    assert_ne!(edited, text, "the spec has the example field");
    std::fs::write(&types, edited).expect("write");
    assert_eq!(run_kopgen(&project, &["manifests"]).status, 0);
    cargo_ok(&project, &["test"]);

    // A CRD file with no kind behind it (a kind deleted from the code) fails tests/crds.rs.
    std::fs::write(
        project.join("config/crd/bases/old.example.com_gones.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n",
    )
    .expect("write");
    let stray = support::cargo(&project, &["test", "--test", "crds"]);
    let stdout = String::from_utf8_lossy(&stray.stdout);
    assert!(!stray.status.success(), "{stdout}");
    assert!(
        stdout.contains("config/crd/bases/old.example.com_gones.yaml belongs to no kind"),
        "{stdout}"
    );
}

/// Every YAML file under `config/` that holds Kubernetes objects: not kustomize's own inputs
/// (transformer configurations, JSON patches, replacements), which have no `kind`.
fn config_yaml_files(project: &Path) -> Vec<String> {
    let is_objects = |bytes: &[u8]| {
        serde_yaml::Deserializer::from_slice(bytes).all(|doc| {
            <serde_yaml::Value as serde::Deserialize>::deserialize(doc)
                .is_ok_and(|doc| doc.get("kind").is_some())
        })
    };
    let mut files: Vec<String> = support::tree(&project.join("config"))
        .into_iter()
        .filter(|(path, contents)| {
            path.ends_with(".yaml") && contents.as_deref().is_some_and(is_objects)
        })
        .map(|(path, _)| format!("config/{path}"))
        .collect();
    files.sort();
    files
}

fn assert_valid_kubernetes_yaml(project: &Path) {
    if !support::need(
        "kubernetes-validate",
        "schema validation of config/",
        "pip install kubernetes-validate",
    ) {
        return;
    }
    let files = config_yaml_files(project);
    let output = Command::new("kubernetes-validate")
        .args(["--strict", "--quiet"])
        .args(&files)
        .current_dir(project)
        .output()
        .expect("kubernetes-validate runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && !stdout.contains("ERROR"),
        "kubernetes-validate --strict failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn kustomize(project: &Path, dir: &str) -> Option<String> {
    if !support::need(
        "kubectl",
        &format!("kubectl kustomize {dir}"),
        "see kubernetes.io/docs/tasks/tools",
    ) {
        return None;
    }
    let output = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(project)
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl kustomize {dir} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn config_of_a_fresh_project_is_valid_and_builds_with_kustomize() {
    for flags in [&[][..], &["--namespaced"]] {
        let session = Session::new();
        let project = session.init_demo(flags);
        assert_valid_kubernetes_yaml(&project);
        if let Some(out) = kustomize(&project, "config/default") {
            assert!(
                out.contains("name: demo-controller-manager"),
                "name prefix applied:\n{out}"
            );
            assert!(
                out.contains("namespace: demo-system"),
                "namespace applied:\n{out}"
            );
            assert!(out.contains("readOnlyRootFilesystem: true"), "{out}");
            let binding_kind = if flags.is_empty() {
                "kind: ClusterRoleBinding"
            } else {
                "kind: RoleBinding"
            };
            assert!(out.contains(binding_kind), "{out}");
        }
        for optional in ["config/prometheus", "config/network-policy"] {
            kustomize(&project, optional);
        }
    }
}

#[test]
fn config_after_create_api_is_valid() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create_api(&project, "--group apps --version v1alpha1 --kind Blog");
    create_api(
        &project,
        "--group apps --version v1 --kind Deployment --resource=false",
    );
    assert_valid_kubernetes_yaml(&project);
    if let Some(rbac) = kustomize(&project, "config/rbac") {
        assert!(rbac.contains("name: apps-blog-editor-role"), "{rbac}");
    }
    let default = project.join("config/default/kustomization.yaml");
    let default = std::fs::read_to_string(default).expect("default kustomization");
    assert!(
        default.contains("\n- ../crd\n"),
        "create api enables the CRDs: {default}"
    );
    if let Some(samples) = kustomize(&project, "config/samples") {
        assert!(samples.contains("kind: Blog"), "{samples}");
    }
}
