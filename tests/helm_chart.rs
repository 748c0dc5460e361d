//! The Helm chart `kopgen manifests` renders (`kopgen edit --helm`): `helm lint` passes, `helm
//! template` renders what `kubectl kustomize config/default` renders resource by resource (with
//! the optional parts switched on in both), the user's values and templates survive a
//! re-render, and the chart installs on a real control plane, where the manager reconciles a
//! sample, and uninstalls leaving the CRDs.

#[path = "helm_chart/install.rs"]
mod install;
mod support;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
};

use serde_json::Value;
use support::{eventually, kubectl_ok};

fn tool(test: &str) -> bool {
    support::need(
        "helm",
        test,
        "built by .ci/helm.sh from the Go module proxy",
    ) && support::need("kubectl", test, "built by .ci/control-plane.sh")
}

/// `helm` with the words of `line` as arguments.
fn helm(dir: &Path, line: &str) -> std::process::Output {
    Command::new("helm")
        .args(line.split_whitespace())
        .current_dir(dir)
        // Helm keeps caches and a plugin directory; none of the machine's.
        .env("HELM_CACHE_HOME", dir.join(".helm/cache"))
        .env("HELM_CONFIG_HOME", dir.join(".helm/config"))
        .env("HELM_DATA_HOME", dir.join(".helm/data"))
        .output()
        .expect("helm runs")
}

fn helm_ok(dir: &Path, line: &str) -> String {
    let out = helm(dir, line);
    assert!(
        out.status.success(),
        "helm {line}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kustomize(project: &Path) -> String {
    let out = Command::new("kubectl")
        .args(["kustomize", "config/default"])
        .current_dir(project)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn template(project: &Path, set: &[&str]) -> String {
    let mut line = String::from("template demo dist/chart --namespace demo-system");
    for value in set {
        line.push_str(&format!(" --set {value}"));
    }
    helm_ok(project, &line)
}

/// What both tools render the same, by (kind, name): the label saying which tool manages a
/// resource, Helm's keep policy, and empty lists and maps (one writes `[]`, the other nothing)
/// are left out; so is the Namespace, which `helm install --create-namespace` makes.
fn resources(yaml: &str) -> BTreeMap<(String, String), Value> {
    fn prune(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.values_mut().for_each(prune);
                map.retain(|_, v| match v {
                    Value::Null => false,
                    Value::Array(a) => !a.is_empty(),
                    Value::Object(o) => !o.is_empty(),
                    _ => true,
                });
            }
            Value::Array(items) => items.iter_mut().for_each(prune),
            // `minimum: 0.0` as kube-derive writes it and `0` as kustomize writes it back are
            // one number to the API server (Go's float64).
            Value::Number(n) => {
                if let Some(whole) = n.as_f64().filter(|f| f.fract() == 0.0 && n.is_f64()) {
                    *value = serde_json::json!(whole as i64);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let mut value: Value = serde::Deserialize::deserialize(doc).expect("YAML");
        if value.is_null() || value["kind"] == "Namespace" {
            continue;
        }
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            for (field, key) in [
                ("labels", "app.kubernetes.io/managed-by"),
                ("annotations", "helm.sh/resource-policy"),
            ] {
                if let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) {
                    map.remove(key);
                }
            }
        }
        prune(&mut value);
        let key = (
            value["kind"].as_str().unwrap_or_default().to_owned(),
            value["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        assert!(out.insert(key.clone(), value).is_none(), "{key:?} twice");
    }
    out
}

/// Fails with every difference between the chart's and kustomize's resources.
fn same_resources(helm: &str, kustomize: &str, case: &str) {
    let (helm, kustomize) = (resources(helm), resources(kustomize));
    let mut differences = Vec::new();
    for key in helm.keys().chain(kustomize.keys()) {
        match (helm.get(key), kustomize.get(key)) {
            (Some(a), Some(b)) if a != b => differences.push(format!(
                "{key:?} differs:\n--- helm\n{}\n--- kustomize\n{}",
                serde_yaml::to_string(a).unwrap_or_default(),
                serde_yaml::to_string(b).unwrap_or_default()
            )),
            (Some(_), None) => differences.push(format!("{key:?} only in the chart")),
            (None, Some(_)) => differences.push(format!("{key:?} only in kustomize")),
            _ => {}
        }
    }
    differences.dedup();
    assert!(
        differences.is_empty(),
        "{case}: the chart and config/default differ:\n{}",
        differences.join("\n")
    );
    assert!(!helm.is_empty(), "{case}: nothing rendered");
}

/// Uncomments the `#- ../<dir>` line of config/default/kustomization.yaml.
fn enable(project: &Path, dir: &str) {
    let path = project.join("config/default/kustomization.yaml");
    let text = std::fs::read_to_string(&path).expect("kustomization");
    let line = format!("#- ../{dir}\n");
    assert!(text.contains(&line), "{text}");
    std::fs::write(&path, text.replace(&line, &format!("- ../{dir}\n"))).expect("write");
}

/// `kopgen` with the words of `line` as arguments, which must succeed: its output.
fn ok(project: &Path, line: &str) -> String {
    let args: Vec<&str> = line.split_whitespace().collect();
    let run = support::run_kopgen(project, &args);
    assert_eq!(run.status, 0, "kopgen {line}: {}{}", run.stdout, run.stderr);
    run.stdout
}

#[test]
fn the_chart_renders_what_kustomize_renders() {
    let test = "the_chart_renders_what_kustomize_renders";
    if !tool(test) {
        return;
    }
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    for args in [
        "--group apps --version v1 --kind Blog",
        "--group apps --version v2 --kind Blog --controller=false",
        "--group platform --version v1 --kind Tenant --namespaced=false",
    ] {
        support::create_api_ok(&project, &args.split_whitespace().collect::<Vec<_>>());
    }
    ok(
        &project,
        "create webhook --group apps --version v1 --kind Blog --defaulting --programmatic-validation --conversion --spoke v2",
    );
    // A doc comment that is a Helm template action stays text.
    let types = project.join("src/api/platform/v1/tenant.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let text = text.replacen(
        "pub struct TenantSpec {",
        "pub struct TenantSpec {\n    /// Shown as {{ .Release.Name }}, never run: {{- fail \"injected\" }}\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub motto: Option<String>,",
        1,
    );
    std::fs::write(&types, text).expect("write");
    let out = ok(&project, "edit --helm");
    assert!(out.contains("dist/chart/values.yaml"), "{out}");
    assert!(
        std::fs::read_to_string(project.join("PROJECT"))
            .expect("PROJECT")
            .contains("helm: true")
    );
    let lint = helm_ok(&project, "lint --strict dist/chart");
    assert!(lint.contains("0 chart(s) failed"), "{lint}");

    // Defaults: what config/default renders.
    let rendered = template(&project, &[]);
    same_resources(&rendered, &kustomize(&project), "defaults (cert-manager)");
    let crd = resources(&rendered)
        .remove(&(
            "CustomResourceDefinition".into(),
            "tenants.platform.example.com".into(),
        ))
        .expect("the Tenant CRD");
    // A description that reads like a template is shown, never run.
    let motto = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["motto"]["description"];
    assert_eq!(
        motto,
        "Shown as {{ .Release.Name }}, never run: {{- fail \"injected\" }}"
    );
    assert_eq!(crd["metadata"].get("annotations"), None);
    assert!(
        rendered.contains("helm.sh/resource-policy: keep"),
        "CRDs are kept on uninstall"
    );

    // The optional parts, switched on in both.
    enable(&project, "prometheus");
    enable(&project, "network-policy");
    same_resources(
        &template(
            &project,
            &["prometheus.enable=true", "networkPolicy.enable=true"],
        ),
        &kustomize(&project),
        "prometheus and network policies",
    );

    // The other certificate mode: `edit` switches config/ and the chart's value alike.
    ok(&project, "edit --webhook-certificates self-managed");
    ok(&project, "manifests");
    same_resources(
        &template(
            &project,
            &["prometheus.enable=true", "networkPolicy.enable=true"],
        ),
        &kustomize(&project),
        "self-managed certificates",
    );
    helm_ok(&project, "lint --strict dist/chart");

    // Values the schema refuses.
    let refused = helm(
        &project,
        "template demo dist/chart --set manager.replicas=-1",
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("replicas"), "{said}");
    let refused = helm(
        &project,
        "template demo dist/chart --set webhook.certificates=vault",
    );
    assert!(!refused.status.success());

    // Values change the Deployment as they say.
    let values = [
        "manager.replicas=2",
        "manager.image.repository=registry.example.com/demo",
        "manager.image.tag=v1.2.3",
        "manager.leaderElection.enable=false",
        "manager.shards.enable=true",
        "manager.logging.format=text",
        "manager.logging.level=debug",
        "manager.nodeSelector.disk=ssd",
        "manager.imagePullSecrets[0].name=pull",
        "metrics.enable=false",
        "crd.enable=false",
    ];
    let all = resources(&template(&project, &values));
    let deployment = &all[&(
        "Deployment".to_owned(),
        "demo-controller-manager".to_owned(),
    )];
    let spec = &deployment["spec"]["template"]["spec"];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        spec["containers"][0]["image"],
        "registry.example.com/demo:v1.2.3"
    );
    assert_eq!(spec["nodeSelector"]["disk"], "ssd");
    assert_eq!(spec["imagePullSecrets"][0]["name"], "pull");
    let args: Vec<&str> = spec["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!args.contains(&"--leader-elect"), "{args:?}");
    for arg in [
        "--shards=auto",
        "--log-format=text",
        "--log-level=debug",
        "--metrics-bind-address=0",
    ] {
        assert!(args.contains(&arg), "{args:?}");
    }
    assert!(
        !all.keys()
            .any(|(kind, name)| kind == "CustomResourceDefinition"
                || name.contains("metrics-service"))
    );
}

/// A project whose manager watches its own namespace: Roles, and WATCH_NAMESPACE.
#[test]
fn a_namespaced_projects_chart_renders_what_kustomize_renders() {
    let test = "a_namespaced_projects_chart_renders_what_kustomize_renders";
    if !tool(test) {
        return;
    }
    let session = support::Session::new();
    let project = session.init_demo(&["--namespaced"]);
    support::create_api_ok(&project, support::BLOG);
    ok(&project, "edit --helm");
    let rendered = template(&project, &[]);
    same_resources(&rendered, &kustomize(&project), "namespaced");
    assert!(rendered.contains("WATCH_NAMESPACE"), "{rendered}");
}

#[test]
fn values_and_templates_of_the_user_survive_a_re_render() {
    let test = "values_and_templates_of_the_user_survive_a_re_render";
    if !tool(test) {
        return;
    }
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, support::BLOG);
    ok(&project, "edit --helm");
    let values = project.join("dist/chart/values.yaml");
    let edited = std::fs::read_to_string(&values)
        .expect("values")
        .replace("  replicas: 1\n", "  replicas: 3 # three zones\n")
        + "# For my own template.\nteam: blue\n";
    std::fs::write(&values, &edited).expect("write");
    let mine = project.join("dist/chart/templates/team.yaml");
    let template_text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\ndata:\n  team: {{ .Values.team }}\n";
    std::fs::write(&mine, template_text).expect("write");
    ok(&project, "manifests");
    let check = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 0, "{}{}", check.stdout, check.stderr);
    assert_eq!(std::fs::read_to_string(&values).expect("values"), edited);
    assert_eq!(std::fs::read_to_string(&mine).expect("mine"), template_text);
    let rendered = template(&project, &[]);
    assert!(rendered.contains("replicas: 3"), "{rendered}");
    assert!(rendered.contains("team: blue"), "{rendered}");

    // A webhook adds keys: the file gets them, with the user's values and keys kept.
    ok(
        &project,
        "create webhook --group apps --version v1alpha1 --kind Blog --defaulting",
    );
    ok(&project, "manifests");
    let now: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&values).expect("values")).expect("YAML");
    assert_eq!(now["manager"]["replicas"], serde_yaml::Value::from(3));
    assert_eq!(now["team"], serde_yaml::Value::from("blue"));
    assert_eq!(
        now["webhook"]["certificates"],
        serde_yaml::Value::from("cert-manager")
    );
    assert!(
        project
            .join("dist/chart/templates/webhook/manifests.yaml")
            .is_file()
    );

    // `--check` covers the chart: a hand edit of a kopgen template is drift.
    let role = project.join("dist/chart/templates/rbac/role.yaml");
    let role_text = std::fs::read_to_string(&role).expect("role");
    std::fs::write(&role, role_text.replace("manager-role", "other-role")).expect("write");
    let check = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 1, "{}{}", check.stdout, check.stderr);
    assert!(
        check.stdout.contains("dist/chart/templates/rbac/role.yaml"),
        "{}",
        check.stdout
    );

    // A kind that goes takes its CRD template along, and nothing of the user's.
    ok(
        &project,
        "delete webhook --group apps --version v1alpha1 --kind Blog --defaulting",
    );
    ok(
        &project,
        "delete api --group apps --version v1alpha1 --kind Blog",
    );
    ok(&project, "manifests");
    assert!(
        !project
            .join("dist/chart/templates/crd/apps.example.com_blogs.yaml")
            .exists()
    );
    assert!(
        !project
            .join("dist/chart/templates/webhook/manifests.yaml")
            .exists()
    );
    assert_eq!(std::fs::read_to_string(&mine).expect("mine"), template_text);
    helm_ok(&project, "lint --strict dist/chart");
    // The values file still says `webhook:` (the user's now); the manager serves none.
    let rendered = template(&project, &[]);
    assert!(!rendered.contains("webhook"), "{rendered}");

    // A values file that is not YAML is named, and nothing is written.
    std::fs::write(&values, "manager: [\n").expect("write");
    let said = support::fails_cleanly_in(&project, &["manifests"]);
    assert!(said.contains("dist/chart/values.yaml"), "{said}");
}

/// A resource a kustomization lists that is a link to a file outside its directory (a Secret
/// elsewhere on the machine) is refused, as kustomize's load restrictor refuses it, and never
/// copied into the chart.
#[test]
fn a_listed_file_that_leaves_its_directory_is_refused() {
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    ok(&project, "edit --helm");
    let outside = session.path().join("outside");
    std::fs::create_dir_all(&outside).expect("dir");
    std::fs::write(
        outside.join("secret.yaml"),
        "kind: Secret\ndata: {token: c2VjcmV0}\n",
    )
    .expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.join("secret.yaml"),
        project.join("config/rbac/extra.yaml"),
    )
    .expect("link");
    let kustomization = project.join("config/rbac/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).expect("kustomization");
    let listed = text.replacen("resources:\n", "resources:\n- extra.yaml\n", 1);
    std::fs::write(&kustomization, listed).expect("write");
    let before = support::tree(&project.join("dist"));
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_ne!(run.status, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("extra.yaml") && run.stderr.contains("outside config/rbac"),
        "{}",
        run.stderr
    );
    assert_eq!(
        support::tree(&project.join("dist")),
        before,
        "the chart is unchanged"
    );
}

/// With the chart on, every command that writes manifests renders the chart with them, so the
/// project's `manifests --check` (its CI) passes right after `create` and `delete`; and
/// `edit --helm` racing `create api` ends with the new kind in the chart whichever goes
/// first (both hold the project).
#[test]
fn the_chart_follows_every_command_and_a_racing_edit() {
    let session = support::Session::new();
    let project = session.init_project("chartfollows", &[]);
    ok(&project, "edit --helm");
    let check = |after: &str| {
        let run = support::run_kopgen(&project, &["manifests", "--check"]);
        assert_eq!(run.status, 0, "after {after}: {}{}", run.stdout, run.stderr);
    };
    for line in [
        "create api --group apps --version v1 --kind Blog",
        "create webhook --group apps --version v1 --kind Blog --defaulting",
        "delete webhook --group apps --version v1 --kind Blog --defaulting --force",
        "delete api --group apps --version v1 --kind Blog --force",
    ] {
        ok(&project, line);
        check(line);
    }

    for trial in 0..4 {
        let project = session.init_project(&format!("race{trial}"), &[]);
        let spawn = |args: &str| {
            std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
                .args(args.split_whitespace())
                .current_dir(&project)
                .env("SOURCE_DATE_EPOCH", support::SOURCE_DATE_EPOCH)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("kopgen runs")
        };
        let mut edit = spawn("edit --helm");
        let mut create = spawn("create api --group apps --version v1 --kind Blog");
        assert!(edit.wait().expect("edit").success());
        assert!(create.wait().expect("create").success());
        assert!(
            project
                .join("dist/chart/templates/crd/apps.example.com_blogs.yaml")
                .is_file(),
            "trial {trial}: the chart lacks the new CRD"
        );
        let run = support::run_kopgen(&project, &["manifests", "--check"]);
        assert_eq!(run.status, 0, "trial {trial}: {}{}", run.stdout, run.stderr);
    }
}
