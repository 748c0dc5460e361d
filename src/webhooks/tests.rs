//! The webhook markers' parsing and rendering, against controller-gen's output and the API
//! server's rules.

use super::*;

const MUTATE: &str = "// +kubebuilder:webhook:path=/mutate-apps-example-com-v1-blog,mutating=true,\
failurePolicy=fail,sideEffects=None,groups=apps.example.com,resources=blogs,verbs=create;update,\
versions=v1,name=mblog-v1.apps.example.com,admissionReviewVersions=v1\n";
const VALIDATE: &str = "// +kopgen:webhook:path=/validate-apps-example-com-v1-blog,mutating=false,\
failurePolicy=Ignore,sideEffects=NoneOnDryRun,groups=apps.example.com,resources=blogs,\
verbs=create;update;delete,versions=v1,name=vblog-v1.apps.example.com,admissionReviewVersions=v1;v1beta1,\
timeoutSeconds=5,matchPolicy=Exact,serviceName=svc,serviceNamespace=ops,servicePort=8443\n";

fn parse(text: &str) -> Result<Markers, SourceError> {
    let mut found = Markers::default();
    parse_into(Path::new("src/webhooks/blog.rs"), text, &mut found)?;
    Ok(found)
}

fn error(text: &str) -> String {
    parse(text).expect_err("an error").to_string()
}

#[test]
fn renders_like_controller_gen() {
    let found = parse(&format!("{VALIDATE}{MUTATE}")).expect("parses");
    let yaml = render(&found).expect("manifests");
    insta::assert_snapshot!(yaml);
}

#[test]
fn no_markers_no_file() {
    assert_eq!(render(&parse("fn main() {}\n").expect("parses")), None);
}

#[test]
fn configuration_names_and_patches_apply() {
    let text = format!(
        "{}// +kopgen:webhookconfiguration:mutating=true,name=blog-defaults\n",
        MUTATE.trim_end().to_owned()
            + ",patch=`{\"namespaceSelector\":{\"matchLabels\":{\"a\":\"b\"}},\"timeoutSeconds\":3}`\n"
    );
    let yaml = render(&parse(&text).expect("parses")).expect("manifests");
    assert!(yaml.contains("name: blog-defaults"), "{yaml}");
    assert!(
        yaml.contains("namespaceSelector:\n    matchLabels:\n      a: b"),
        "{yaml}"
    );
    assert!(yaml.contains("timeoutSeconds: 3"), "{yaml}");
}

#[test]
fn bad_markers_are_errors_at_their_line() {
    let cases = [
        ("sideEffects=None", "sideEffects=Some", "not allowed"),
        ("sideEffects=None,", "", "missing `sideEffects=`"),
        ("verbs=create;update", "verbs=create;get", "verbs=get"),
        (
            "failurePolicy=fail",
            "failurePolicy=sometimes",
            "expected one of Fail, Ignore",
        ),
        (
            "name=mblog-v1.apps.example.com",
            "name=mblog",
            "three segments",
        ),
        (
            "mutating=true",
            "url=https://x/m,mutating=true",
            "exactly one of",
        ),
        ("mutating=true", "mutating=yes", "true or false"),
        (
            "admissionReviewVersions=v1",
            "admissionReviewVersions=v2",
            "unknown version",
        ),
        (
            "groups=apps",
            "colour=red,groups=apps",
            "unknown key `colour`",
        ),
    ];
    for (from, to, expected) in cases {
        let text = format!("fn a() {{}}\n\n{}", MUTATE.replacen(from, to, 1));
        let message = error(&text);
        assert!(
            message.starts_with("src/webhooks/blog.rs:3:1: "),
            "{message}"
        );
        assert!(message.contains(expected), "{from} -> {to}: {message}");
    }
    let patched = format!("{},patch=`[1]`\n", MUTATE.trim_end());
    assert!(error(&patched).contains("not a JSON object"));
    let twice = "// +kopgen:webhookconfiguration:mutating=false,name=a\n\
                 // +kopgen:webhookconfiguration:mutating=false,name=b\n";
    assert!(error(twice).contains("second validating"));
    assert!(error("// +kopgen:webhook:timeoutSeconds=31").contains("between 1 and 30"));
}

#[test]
fn what_a_patch_sets_is_checked_like_the_keys() {
    for (patch, expected) in [
        (r#"{"timeoutSeconds":100}"#, "timeoutSeconds 100"),
        (r#"{"sideEffects":"Some"}"#, "sideEffects `Some`"),
        (
            r#"{"clientConfig":{"service":null,"url":"http://x.example.com/m"}}"#,
            "scheme must be https",
        ),
        (
            r#"{"clientConfig":{"service":{"path":"/Mutate"}}}"#,
            "DNS-1123 subdomain",
        ),
        (
            r#"{"namespaceSelector":{"matchLabels":{"-bad":"x"}}}"#,
            "not a valid label",
        ),
        (
            r#"{"objectSelector":{"matchExpressions":[{"key":"a","operator":"In"}]}}"#,
            "need values",
        ),
        (r#"{"name":"short.name"}"#, "three segments"),
        (
            r#"{"rules":[{"operations":["*","CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}"#,
            "only entry",
        ),
    ] {
        let text = format!("{},patch=`{patch}`\n", MUTATE.trim_end());
        let message = error(&text);
        assert!(message.contains(expected), "{patch}: {message}");
    }
    let fine = format!(
        "{},patch=`{{\"namespaceSelector\":{{\"matchLabels\":{{\"app.kubernetes.io/name\":\"x\"}}}}}}`\n",
        MUTATE.trim_end()
    );
    assert!(parse(&fine).is_ok());
}

#[test]
fn two_webhooks_of_one_configuration_need_two_names() {
    let twice = format!("{MUTATE}{MUTATE}");
    assert!(error(&twice).contains("a second webhook named `mblog-v1.apps.example.com`"));
    let validating = MUTATE.replacen("mutating=true", "mutating=false", 1);
    assert!(parse(&format!("{MUTATE}{validating}")).is_ok());
}

#[test]
fn any_input_is_an_error_or_a_webhook_never_a_panic() {
    let pieces = [
        "",
        "=",
        ",",
        "`",
        "\"",
        ";",
        "mutating=true",
        "name=a.b.c",
        "patch=`{`",
        "patch=`null`",
        "patch=`{\"rules\":7}`",
        "timeoutSeconds=99999999999",
        "groups=",
        "verbs=;",
    ];
    for a in pieces {
        for b in pieces {
            let _ = parse(&format!("// +kopgen:webhook:{a},{b}\n"));
            let _ = parse(&format!("// +kopgen:webhookconfiguration:{a}{b}\n"));
        }
    }
}
