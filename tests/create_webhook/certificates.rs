//! Where the webhook server's certificate comes from: chosen at `create webhook`, switched with\n`kopgen edit`, and kustomizations that enable it.

use super::*;

/// `kubectl kustomize config/default`, or `None` (with a notice) where kubectl is missing.
fn deployed(project: &Path, test: &str) -> Option<String> {
    if !support::need("kubectl", test, "install kubectl") {
        return None;
    }
    let out = std::process::Command::new("kubectl")
        .args([
            "kustomize",
            &project.join("config/default").display().to_string(),
        ])
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_certificate_mode_is_chosen_at_create_webhook_and_switched_with_edit() {
    let test = "the_certificate_mode_is_chosen_at_create_webhook_and_switched_with_edit";
    let session = Session::new();
    let project = project_with_blog(&session);
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting --conversion --spoke v1alpha1 \
         --certificates self-managed",
    );
    assert!(read(&project, "PROJECT").contains("\nwebhookCertificates: self-managed\n"));
    let default = read(&project, "config/default/kustomization.yaml");
    for enabled in [
        "\n- ../selfmanaged\n",
        "\n- path: manager_self_managed_patch.yaml\n",
        "\n#- ../certmanager\n",
        "\n#- path: manager_webhook_patch.yaml\n",
        "\n#replacements:\n",
    ] {
        assert!(default.contains(enabled), "{enabled:?} in {default}");
    }
    // The ClusterRole names exactly the manager's configurations and the converted CRD.
    let role = read(&project, "config/selfmanaged/cluster_role.yaml");
    assert!(role.contains("  - blogs.apps.example.com\n"), "{role}");
    assert!(
        role.contains("  - demo-mutating-webhook-configuration\n"),
        "{role}"
    );
    let self_managed = deployed(&project, test);
    if let Some(yaml) = &self_managed {
        assert!(
            yaml.contains("--webhook-cert-secret=demo-webhook-server-cert"),
            "{yaml}"
        );
        assert!(yaml.contains("  - demo-webhook-server-cert\n"), "{yaml}");
        assert!(!yaml.contains("kind: Certificate\n"), "{yaml}");
        assert!(!yaml.contains("secretName: webhook-server-cert"), "{yaml}");
    }

    // Switched to cert-manager and back: each mode's lines, and the same files as before.
    let first = tree(&project);
    let run = run_kopgen(
        &project,
        &["edit", "--webhook-certificates", "cert-manager"],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(read(&project, "PROJECT").contains("\nwebhookCertificates: cert-manager\n"));
    let default = read(&project, "config/default/kustomization.yaml");
    for enabled in [
        "\n#- ../selfmanaged\n",
        "\n#- path: manager_self_managed_patch.yaml\n",
        "\n- ../certmanager\n",
        "\n- path: manager_webhook_patch.yaml\n",
        "\nreplacements:\n",
    ] {
        assert!(default.contains(enabled), "{enabled:?} in {default}");
    }
    if let Some(yaml) = deployed(&project, test) {
        assert!(yaml.contains("kind: Certificate\n"), "{yaml}");
        assert!(!yaml.contains("--webhook-cert-secret"), "{yaml}");
        assert!(!yaml.contains("webhook-certificate-role"), "{yaml}");
    }
    // A later create webhook keeps the project's mode.
    webhook_ok(
        &project,
        "--group apps --version v1alpha1 --kind Blog --defaulting",
    );
    assert!(read(&project, "config/default/kustomization.yaml").contains("\n- ../certmanager\n"));
    let run = run_kopgen(
        &project,
        &["edit", "--webhook-certificates", "self-managed"],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let again = run_kopgen(
        &project,
        &["edit", "--webhook-certificates", "self-managed"],
    );
    assert_eq!(again.status, 0, "{}", again.stderr);
    let after = tree(&project);
    let default = "config/default/kustomization.yaml";
    assert_eq!(
        after[default], first[default],
        "back to the first mode's lines"
    );
}

#[test]
fn edit_refuses_a_project_without_webhooks_or_without_the_lines_and_changes_nothing() {
    let session = Session::new();
    let project = project_with_blog(&session);
    let stderr = fails_cleanly_in(
        &project,
        &["edit", "--webhook-certificates", "self-managed"],
    );
    assert!(stderr.contains("no webhooks yet"), "{stderr}");
    assert!(stderr.contains("kopgen create webhook"), "{stderr}");

    // A project from before self-managed certificates: its config/default has no such lines.
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting",
    );
    let file = project.join("config/default/kustomization.yaml");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, text.replace("#- ../selfmanaged\n", "")).expect("write");
    let stderr = fails_cleanly_in(
        &project,
        &["edit", "--webhook-certificates", "self-managed"],
    );
    assert!(
        stderr.contains("config/default/kustomization.yaml"),
        "{stderr}"
    );
    assert!(stderr.contains("- ../selfmanaged"), "{stderr}");
}

/// Hand edits of config/default/kustomization.yaml are read as YAML, not misread: lines
/// commented with `# `, CRLF line endings, a `patches:` of the user's own (which enabling
/// kopgen's would duplicate) and a removed block each give a working file or a clear error.
#[test]
fn hand_edited_kustomizations_are_enabled_or_refused_never_misread() {
    const FILE: &str = "config/default/kustomization.yaml";
    const ARGS: &str = "--group apps --version v1 --kind Blog --defaulting";
    let session = Session::new();
    let project = project_with_blog(&session);
    let original = read(&project, FILE);
    let set = |text: &str| std::fs::write(project.join(FILE), text).expect("write");

    // Commented the way editors do, with CRLF endings.
    set(&original
        .replace("#- ../webhook", "# - ../webhook")
        .replace('\n', "\r\n"));
    webhook_ok(&project, ARGS);
    let enabled = read(&project, FILE);
    assert!(enabled.contains("\r\n- ../webhook\r\n"), "{enabled}");
    assert!(enabled.contains("\r\npatches:\r\n"), "{enabled}");
    assert!(!enabled.replace("\r\n", "").contains('\n'), "LF crept in");
    let value: serde_yaml::Value = serde_yaml::from_str(&enabled).expect("YAML");
    assert!(
        value["resources"]
            .as_sequence()
            .is_some_and(|r| r.iter().any(|e| e.as_str() == Some("../webhook"))),
        "{enabled}"
    );

    // The user's own `patches:`: a second one would be a duplicate key.
    let fresh = session.init_project("dup", &[]);
    support::create_api_ok(
        &fresh,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let own = read(&fresh, FILE).replace(
        "resources:\n",
        "patches:\n- path: my_patch.yaml\nresources:\n",
    );
    std::fs::write(fresh.join(FILE), own).expect("write");
    let stderr = fails_cleanly_in(
        &fresh,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    assert!(
        stderr.contains(FILE) && stderr.contains("by hand"),
        "{stderr}"
    );

    // A removed block is named, not skipped.
    let removed = session.init_project("removed", &[]);
    support::create_api_ok(
        &removed,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let without = read(&removed, FILE).replace("#- ../webhook\n", "");
    std::fs::write(removed.join(FILE), without).expect("write");
    let stderr = fails_cleanly_in(
        &removed,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    assert!(stderr.contains("- ../webhook"), "{stderr}");
}
