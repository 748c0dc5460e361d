//! Conversion webhooks: objects stored as the hub, read as each spoke and back.

use base64::Engine as _;
use serde_json::Value;

use super::{Manager, kubectl_in};
use crate::support::control_plane::Options;
use crate::support::webhook_tls::{certificates, write_certificates};
use crate::support::{self, eventually, kubectl_ok};

/// The user's conversion: v1alpha1 calls the field `legacyFoo`, v1 (the hub) `foo`.
const CONVERSION_EDITS: &[(&str, &str, &str)] = &[
    (
        "src/api/apps/v1alpha1/blog.rs",
        "    pub foo: Option<String>,\n",
        "    pub legacy_foo: Option<String>,\n",
    ),
    (
        "src/webhooks/apps_v1_blog_conversion.rs",
        "            spec: same_fields(spoke.spec)?,\n",
        "            spec: v1::BlogSpec {\n                foo: spoke.spec.legacy_foo,\n            },\n",
    ),
    (
        "src/webhooks/apps_v1_blog_conversion.rs",
        "            spec: same_fields(hub.spec)?,\n",
        "            spec: v1alpha1::BlogSpec {\n                legacy_foo: hub.spec.foo,\n            },\n",
    ),
];

/// Values to store, from a fixed-seed generator: a property checked on many generated objects,
/// the same ones every run.
fn generated_values(count: usize) -> Vec<String> {
    let alphabet: Vec<char> = "abcXYZ019 -_.:/\\\"'{}[]#&*!|>%@`éß日本\u{1F600}"
        .chars()
        .collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = (next() % 40) as usize;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn objects_stored_as_the_hub_read_as_each_spoke_and_back_without_loss() {
    let test = "objects_stored_as_the_hub_read_as_each_spoke_and_back_without_loss";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    session.ok(&[
        "init",
        "--path",
        "conv",
        "--project-name",
        "conv",
        "--domain",
        "example.com",
    ]);
    let project = session.join("conv");
    for version in ["v1", "v1alpha1", "v1beta1"] {
        support::create_api_ok(
            &project,
            &[
                "--group",
                "apps",
                "--version",
                version,
                "--kind",
                "Blog",
                "--controller=false",
            ],
        );
    }
    let run = support::run_kopgen(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--conversion",
            "--spoke",
            "v1alpha1,v1beta1",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    // v1alpha1 renames the field (the user's conversion, below); v1beta1 keeps the scaffolded one.
    for (file, scaffolded, written) in CONVERSION_EDITS {
        let path = project.join(file);
        let code = std::fs::read_to_string(&path).expect("read");
        assert!(
            code.contains(scaffolded),
            "{scaffolded}\nnot in {file}:\n{code}"
        );
        std::fs::write(&path, code.replacen(scaffolded, written, 1)).expect("write");
    }
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let binary = support::build_manager(&project, "conv");

    let certs = session.path().join("certs");
    std::fs::create_dir_all(&certs).expect("mkdir");
    let pair = certificates("conversion test CA");
    write_certificates(&certs, &pair);
    let manager = Manager::start(&binary, &plane, &certs, session.path());
    let webhook_port = manager.webhook_port;
    let context = || manager.context(&plane);

    // The CRD as config/crd builds it (with the conversion patch), its webhook pointed at the
    // manager by URL.
    let crd = plane
        .kubectl()
        .args([
            "kustomize",
            &project.join("config/crd").display().to_string(),
        ])
        .output()
        .expect("kubectl");
    assert!(
        crd.status.success(),
        "{}",
        String::from_utf8_lossy(&crd.stderr)
    );
    let mut crd: Value = serde_yaml::from_slice(&crd.stdout).expect("one CRD");
    let path = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"];
    assert_eq!(path, "/convert", "{crd}");
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = serde_json::json!({
        "url": format!("https://127.0.0.1:{webhook_port}/convert"),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(&pair.ca),
    });
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "-f", "-"],
        &crd.to_string(),
    );
    assert!(ok, "{stderr}");
    kubectl_ok(
        &plane,
        &["wait", "--for=condition=Established", "crd", "--all"],
    );

    let read = |version: &str, name: &str| -> Option<Value> {
        let resource = format!("blogs.{version}.apps.example.com");
        let out = plane
            .kubectl()
            .args(["get", &resource, name, "-o", "json"])
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout)
            .ok()
            .filter(|_| out.status.success())
    };
    let object = |version: &str, name: &str, field: &str, value: &str| {
        serde_json::json!({
            "apiVersion": format!("apps.example.com/{version}"),
            "kind": "Blog",
            "metadata": {"name": name, "namespace": "default", "labels": {"case": name}},
            "spec": {field: value},
        })
        .to_string()
    };
    // The first read through the webhook waits for the API server to trust it.
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &object("v1", "warmup", "foo", "x"),
    );
    assert!(ok, "{stderr}");
    eventually("v1alpha1 is served through /convert", &context, || {
        read("v1alpha1", "warmup").filter(|o| o["spec"]["legacyFoo"] == "x")
    });

    let values = generated_values(25);
    for (i, value) in values.iter().enumerate() {
        let name = format!("case-{i}");
        // Stored as the hub...
        let (ok, _, stderr) = kubectl_in(
            &plane,
            &["create", "-f", "-"],
            &object("v1", &name, "foo", value),
        );
        assert!(ok, "{value:?}: {stderr}");
        let mut stored = value.clone();
        for (spoke_version, field) in [("v1alpha1", "legacyFoo"), ("v1beta1", "foo")] {
            // ...read as each spoke...
            let spoke =
                read(spoke_version, &name).unwrap_or_else(|| panic!("{value:?}\n{}", context()));
            assert_eq!(
                spoke["apiVersion"],
                format!("apps.example.com/{spoke_version}")
            );
            assert_eq!(spoke["spec"][field], stored.as_str(), "{spoke:#}");
            assert_eq!(spoke["metadata"]["labels"]["case"], name.as_str());
            // ...written as it, read as the hub.
            let changed = format!("{stored}~");
            let (ok, _, stderr) = kubectl_in(
                &plane,
                &["apply", "--server-side", "--force-conflicts", "-f", "-"],
                &object(spoke_version, &name, field, &changed),
            );
            assert!(ok, "{changed:?}: {stderr}");
            let hub = read("v1", &name).unwrap_or_else(|| panic!("{changed:?}\n{}", context()));
            assert_eq!(hub["spec"]["foo"], changed.as_str(), "{hub:#}");
            assert!(hub["spec"].get("legacyFoo").is_none(), "{hub:#}");
            stored = changed;
        }
    }
}
