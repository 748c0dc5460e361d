//! YAML as kopgen writes it: serde-saphyr's writer with its default options, what kube-rs
//! documents for printing a CRD (`serde_saphyr::to_string(&Foo::crd())`), so a CRD kopgen
//! writes is byte for byte what a kube-rs user's crdgen program prints.
//!
//! Its defaults are what Kubernetes needs: kubectl, kustomize and the API server read YAML 1.1
//! (sigs.k8s.io/yaml), where `n`, `yes`, `on`, `1_000` or `2024-01-02` are booleans, numbers
//! and dates; serde-saphyr quotes every string a YAML 1.1 reader would not read back as that
//! string (a field named `n` written plain would be `required: [false]` to kubectl). Long
//! descriptions are folded (`>-`) and multi-line ones literal (`|-`), which both YAML versions
//! read back to the same text. Why this writer and not serde_yaml: docs/ARCHITECTURE.md.

use serde::Serialize;

/// Why a value could not be written (a map key that is not a string, for example).
pub type Error = serde_saphyr::SerializeError;

/// `value` as YAML that YAML 1.1 readers (Kubernetes tooling) and YAML 1.2 readers read alike.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, Error> {
    serde_saphyr::to_string(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn strings_yaml_1_1_reads_otherwise_are_quoted_and_read_back_the_same() {
        // Each string, and whether the test checks that it is written quoted.
        let cases = [
            ("n", true),
            ("y", true),
            ("on", true),
            ("Off", true),
            ("yes", true),
            ("1_000", true),
            ("0x1F", true),
            ("0777", true),
            (".5", false),
            ("1.", false),
            ("2024-01-02", true),
            ("-.inf", false),
            ("true", false),
            ("plain", false),
            ("n o", false),
            ("name", false),
            ("yesterday", false),
            ("Normal", false),
            ("", false),
        ];
        let map: BTreeMap<String, Vec<String>> = cases
            .iter()
            .map(|(s, _)| (s.to_string(), vec![s.to_string()]))
            .collect();
        let text = to_string(&map).expect("serializes");
        for (quoted, _) in cases.iter().filter(|(_, ambiguous)| *ambiguous) {
            assert!(
                !text
                    .lines()
                    .any(|l| l == format!("{quoted}:") || l == format!("- {quoted}")),
                "{quoted} is written plain:\n{text}"
            );
        }
        assert!(text.contains("name:\n- name\n"), "{text}");
        assert!(text.contains("yesterday:\n- yesterday\n"), "{text}");
        let back: BTreeMap<String, Vec<String>> = serde_yaml::from_str(&text).expect("parses");
        assert_eq!(back, map);
    }

    #[test]
    fn long_and_multi_line_descriptions_read_back_the_same() {
        let long = "word ".repeat(40) + "end";
        let value = BTreeMap::from([
            ("folded", long.as_str()),
            ("literal", "first line\nn\nyes\n\n  indented"),
            ("spaces", "two  spaces   and trailing "),
        ]);
        let text = to_string(&value).expect("yaml");
        assert!(text.contains("folded: >-\n"), "{text}");
        let back: BTreeMap<String, String> = serde_yaml::from_str(&text).expect("parses");
        let expected: BTreeMap<String, String> = value
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(back, expected);
    }
}
