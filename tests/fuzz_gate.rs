//! Mutation fuzzing of the parsers this stop added, in seconds and without a fuzzing engine:
//! real inputs (crdify's cases, CEL rules of the fixtures and of real-world CRDs) mutated by a
//! seeded generator (byte flips, deletions, duplications, splices) must give a result or an
//! error, never a panic: the compat config reader, the revision comparison, the CEL cost
//! estimate and the sample rule evaluation.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kopgen::compat::{self, Config};
use serde_json::{Value, json};

/// xorshift64*: deterministic, so a failure names the seed that found it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const ALPHABET: &[u8] = b"()[]{}.,:;'\"\\ \n\t-_/|&!?=<>+*%0123456789abcxyzADself@#$";

/// `seed` with a few random edits.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 if !out.is_empty() => {
                let end = (at + rng.below(8)).min(out.len());
                out.drain(at.min(end)..end);
            }
            1 => out.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
            2 if at < out.len() => out[at] = ALPHABET[rng.below(ALPHABET.len())],
            3 if !out.is_empty() => {
                let start = rng.below(out.len());
                let end = (start + rng.below(16)).min(out.len());
                let piece = out[start..end].to_vec();
                out.splice(at..at, piece);
            }
            _ => out.insert(at, b'('),
        }
    }
    out
}

fn crdify_cases() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crdify");
    let mut texts = Vec::new();
    for case in std::fs::read_dir(root)
        .expect("fixtures")
        .filter_map(Result::ok)
    {
        for side in ["a.yaml", "b.yaml"] {
            if let Ok(text) = std::fs::read_to_string(case.path().join(side)) {
                texts.push(text);
            }
        }
    }
    texts.sort();
    texts
}

fn yaml_to_json(text: &str) -> Option<Value> {
    serde_yaml::from_str::<Value>(text).ok()
}

#[test]
fn the_compat_config_reader_never_panics() {
    let seeds = [
        "unhandledEnforcement: Error\nconversion: Ignore\nratcheting: Warn\nvalidations:\n  - name: enum\n    enforcement: Error\n    configuration:\n      additionPolicy: Allow\n",
        "validations:\n  - name: description\n    enforcement: None\n",
    ];
    let mut rng = Rng(0x5eed_0001);
    for round in 0..3000 {
        let seed = seeds[round % seeds.len()].as_bytes();
        let input = String::from_utf8_lossy(&mutate(&mut rng, seed)).into_owned();
        let _ = Config::parse(&input);
    }
}

#[test]
fn comparing_mutated_revisions_never_panics() {
    let cases = crdify_cases();
    assert!(cases.len() >= 40, "crdify's cases are the seeds");
    let mut rng = Rng(0x5eed_0002);
    let mut compared = 0;
    for round in 0..1500 {
        let old = &cases[round % cases.len()];
        let pick = rng.below(cases.len());
        let new = mutate(&mut rng, cases[pick].as_bytes());
        let (Some(old), Some(new)) = (
            yaml_to_json(old),
            yaml_to_json(&String::from_utf8_lossy(&new)),
        ) else {
            continue;
        };
        compared += 1;
        let _ = compat::compare(&old, &new, &Config::crdify());
        let _ = compat::compare(&new, &old, &Config::kopgen());
    }
    assert!(compared > 100, "{compared} mutated revisions parsed");
}

/// CEL rules as the fixtures and real-world CRDs write them.
const RULES: &[&str] = &[
    "self.items.all(x, x.name.matches('^[a-z]+$'))",
    "self.map(x, x.name).exists_one(m, m == 'a') && self.filter(x, x.size() > 1).size() < 5",
    "!has(self.spec.foo) || self.spec.foo.startsWith('b')",
    "self.all(t, self.exists(u, u == t))",
    "self.split(',').join('-').lowerAscii().replace('a', 'bb').size() < 100",
    "quantity(self.limit).isGreaterThan(quantity('1')) ? self.size() > 0 : [1, 2][0] == 1",
    "{'a': 1}['a'] in [1, 2] && 'x' + self.name + string(1) != ''",
    "self.min <= self.max && self.min >= 0 && int(self.ratio * 2.0) % 2 == 0",
];

#[test]
fn the_cost_estimate_and_rule_evaluation_never_panic() {
    let schema: JSONSchemaProps = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "name": {"type": "string", "maxLength": 10},
            "min": {"type": "integer"}, "max": {"type": "integer"}, "ratio": {"type": "number"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "limit": {"x-kubernetes-int-or-string": true}
        }
    }))
    .expect("schema");
    let value = json!({"items": [{"name": "a"}], "name": "abc", "min": 1, "max": 2, "ratio": 0.5, "labels": {"a": "b"}, "limit": "1Gi"});
    let mut rng = Rng(0x5eed_0003);
    for round in 0..1500 {
        let rule =
            String::from_utf8_lossy(&mutate(&mut rng, RULES[round % RULES.len()].as_bytes()))
                .into_owned();
        let mut node = schema.clone();
        node.x_kubernetes_validations = Some(vec![
            serde_json::from_value(json!({"rule": rule})).expect("rule"),
        ]);
        let wrapped: JSONSchemaProps =
            serde_json::from_value(json!({"type": "object", "properties": {"spec": node}}))
                .expect("schema");
        let _ = kopgen::manifests::cel_cost::estimate_version("v1", &wrapped);
        let _ = kopgen::manifests::rule_check::problem(&node, &value, &Default::default());
    }
}

/// The chart's values file, as users edit it: a mutated one gives values (which a second
/// render keeps as they are) or an error, never a panic; resource files of `config/` mutated
/// the same way become templates or an error.
#[test]
fn the_chart_reads_mutated_values_and_resources_without_panicking() {
    use kopgen::chart::{resources, values};
    let facts = values::Facts {
        webhooks: Some(kopgen::project::Certificates::CertManager),
    };
    let seeds = [
        values::render(&facts, None).expect("renders"),
        "manager:\n  replicas: 3\n  tolerations:\n  - key: a\nteam: {a: [1, 2]}\nwebhook: x\n"
            .into(),
    ];
    let resource = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: kustomize\n  name: leader-election-rolebinding\n  namespace: system\nroleRef:\n  kind: Role\n  name: leader-election-role\nsubjects:\n- kind: ServiceAccount\n  name: controller-manager\n  namespace: system\nwebhooks:\n- clientConfig:\n    service: {name: webhook-service, namespace: system}\nspec:\n  dnsNames: [a.b.svc]\n  issuerRef: {name: i}\n";
    let names = resources::Names::default();
    let mut rng = Rng(0x5eed_0004);
    for round in 0..1500 {
        let text =
            String::from_utf8_lossy(&mutate(&mut rng, seeds[round % 2].as_bytes())).into_owned();
        if let Ok(rendered) = values::render(&facts, Some(&text)) {
            let again = values::render(&facts, Some(&rendered)).unwrap_or_else(|e| {
                panic!("round {round}: {e}\n--- input\n{text}\n--- rendered\n{rendered}")
            });
            assert_eq!(
                again, rendered,
                "round {round}: a second render changed\n{text}"
            );
        }
        let _ = values::with_certificates(&text, kopgen::project::Certificates::SelfManaged);
        let doc = String::from_utf8_lossy(&mutate(&mut rng, resource.as_bytes())).into_owned();
        if let Ok(value) = serde_yaml::from_str::<Value>(&doc) {
            let _ = resources::to_yaml(resources::chartify(value, &names), &["    a: b".into()]);
        }
    }
}

/// The YAML readers of files users write: PROJECT, the depth pre-scan every reader runs first,
/// and the samples' YAML 1.1 reading, on mutated real files: a result or an error, never a
/// panic; the samples' reading keeps every line it does not rewrite.
#[test]
fn the_yaml_readers_never_panic_on_mutated_files() {
    let project = "cliVersion: 0.2.0\ndomain: example.com\nlayout:\n- rust.kopgen.dev/v1\nprojectName: shop\nrepo: shop\nresources:\n- api:\n    crdVersion: v1\n    namespaced: true\n  controller: true\n  domain: example.com\n  group: apps\n  kind: Blog\n  version: v1\nversion: \"3\"\n";
    let sample = "apiVersion: apps.example.com/v1\nkind: Blog\nmetadata:\n  name: blog-sample\nspec:\n  enabled: yes\n  mode: 0777\n  list:\n  - off\n  - key: N\n  text: |\n    yes\n  flow: [yes, {a: no}]\n";
    let mut rng = Rng(0x5eed_0005);
    for round in 0..3000 {
        let seed = if round % 2 == 0 { project } else { sample };
        let text = String::from_utf8_lossy(&mutate(&mut rng, seed.as_bytes())).into_owned();
        let _ = kopgen::yaml::check_depth(&text);
        let _ = kopgen::project::Project::parse(&text);
        let read = kopgen::samples::as_kubectl_reads(&text);
        assert_eq!(
            read.lines().count(),
            text.lines().count(),
            "round {round}: lines lost\n{text}"
        );
        let _ = serde_yaml::from_str::<Value>(&read);
    }
}
