//! Older kube and validator spellings that a crate brings when it comes to kopgen: each refused
//! at its line with the spelling to write today, not with a message about something else.

mod support;

use support::Session;

const HEADER: &str =
    "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n";

/// `manifests --derive static` on a crate whose `src/lib.rs` is `source`; its stderr.
fn refused(source: &str) -> String {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
    );
    session.write("src/lib.rs", &format!("{HEADER}{source}"));
    let run = session.kopgen(&["manifests", "--stdout", "--derive", "static"]);
    assert_ne!(run.status, 0, "{}", run.stdout);
    run.stderr
}

#[test]
fn cel_schema_is_named_kube_schema() {
    let stderr = refused(
        "#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         #[kube(group = \"a.example.com\", version = \"v1\", kind = \"App\")]\n\
         pub struct AppSpec { pub rules: Rules }\n\
         #[derive(Deserialize, Serialize, Clone, Debug, kube::CELSchema)]\n\
         pub struct Rules { pub x: i32 }\n",
    );
    assert!(
        stderr.contains("CELSchema, which kube renamed KubeSchema"),
        "{stderr}"
    );
    assert!(stderr.contains("derive KubeSchema instead"), "{stderr}");
    assert!(stderr.contains("src/lib.rs:"), "located: {stderr}");
}

#[test]
fn validator_016_regex_says_what_to_write() {
    let stderr = refused(
        "#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema, validator::Validate)]\n\
         #[kube(group = \"a.example.com\", version = \"v1\", kind = \"App\")]\n\
         pub struct AppSpec {\n    #[validate(regex = \"NAME\")]\n    pub name: String,\n}\n",
    );
    assert!(stderr.contains("validator 0.16's spelling"), "{stderr}");
    assert!(stderr.contains("regex(path = *RE)"), "{stderr}");
    assert!(stderr.contains("src/lib.rs:"), "located: {stderr}");
}
