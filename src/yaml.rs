//! YAML as Kubernetes reads it. serde_yaml writes YAML 1.2, where `n`, `yes`, `on` or `1_000`
//! are strings and need no quotes; kubectl, kustomize and the API server read YAML 1.1
//! (sigs.k8s.io/yaml), where they are booleans and numbers. A field named `n` written plain is
//! `required: [false]` to kubectl, which the API server refuses. So every string such a reader
//! would not read back as that string is written single-quoted, as controller-gen's YAML
//! writer does; everything else is serde_yaml's output, byte for byte.
//!
//! serde_yaml has no per-scalar style switch, so those strings are fenced with a character no
//! YAML text kopgen writes contains (U+E000, private use) before serialising, which keeps them
//! plain, and the fence is then turned into quotes.

use serde::Serialize;
use serde_yaml::Value;

const FENCE: char = '\u{E000}';

/// `value` as YAML that YAML 1.1 readers (Kubernetes tooling) and YAML 1.2 readers read alike.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, serde_yaml::Error> {
    // One serialization: the strings are looked at (and fenced where needed) in the value tree,
    // which costs a fraction of writing it.
    let mut value = serde_yaml::to_value(value)?;
    if !any_ambiguous(&value) || holds_fence(&value) {
        return serde_yaml::to_string(&value);
    }
    fence(&mut value);
    Ok(serde_yaml::to_string(&value)?.replace(FENCE, "'"))
}

/// Whether any string (keys too) is one YAML 1.1 reads as something else.
fn any_ambiguous(value: &Value) -> bool {
    match value {
        Value::String(s) => is_ambiguous(s),
        Value::Sequence(items) => items.iter().any(any_ambiguous),
        Value::Mapping(map) => map
            .iter()
            .any(|(k, v)| any_ambiguous(k) || any_ambiguous(v)),
        Value::Tagged(tagged) => any_ambiguous(&tagged.value),
        _ => false,
    }
}

/// Whether any string holds the fence character, which would then be turned into a quote.
fn holds_fence(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(FENCE),
        Value::Sequence(items) => items.iter().any(holds_fence),
        Value::Mapping(map) => map.iter().any(|(k, v)| holds_fence(k) || holds_fence(v)),
        Value::Tagged(tagged) => holds_fence(&tagged.value),
        _ => false,
    }
}

/// Fences every string (keys too) that YAML 1.1 reads as something else; true if any was.
fn fence(value: &mut Value) -> bool {
    match value {
        Value::String(s) if is_ambiguous(s) => {
            *s = format!("{FENCE}{s}{FENCE}");
            true
        }
        Value::Sequence(items) => items.iter_mut().fold(false, |any, item| fence(item) | any),
        Value::Mapping(map) => {
            let mut any = false;
            let entries = std::mem::take(map);
            for (mut key, mut item) in entries {
                any |= fence(&mut key);
                any |= fence(&mut item);
                map.insert(key, item);
            }
            any
        }
        Value::Tagged(tagged) => fence(&mut tagged.value),
        _ => false,
    }
}

/// Whether a YAML 1.1 reader (go-yaml v2, under sigs.k8s.io/yaml) resolves the plain scalar
/// `s` to a boolean, null, number or timestamp, where serde_yaml would write it plain.
pub fn is_ambiguous(s: &str) -> bool {
    const WORDS: [&str; 22] = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
        "OFF", "true", "True", "TRUE", "false", "False", "FALSE",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    // Numbers in the forms go-yaml v2 accepts beyond YAML 1.2: `_` separators, `0b`/`0o`/`0x`,
    // leading-zero octals, `.5`, `1.`, `.inf`, `.NaN`; and dates such as `2024-01-02`.
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if [".inf", ".nan"].contains(&unsigned) {
        return true;
    }
    !unsigned.is_empty()
        && unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && unsigned.chars().any(|c| c.is_ascii_digit())
        && unsigned.chars().all(|c| {
            c.is_ascii_hexdigit()
                || matches!(
                    c,
                    '_' | '.' | 'x' | 'o' | 'e' | '+' | '-' | ':' | 't' | 'z' | ' '
                )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn strings_yaml_1_1_reads_otherwise_are_quoted_and_read_back_the_same() {
        let mut map = BTreeMap::new();
        for s in [
            "n",
            "y",
            "on",
            "Off",
            "yes",
            "1_000",
            "0x1F",
            "0777",
            ".5",
            "1.",
            "2024-01-02",
            "-.inf",
            "true",
            "plain",
            "n o",
            "name",
            "yesterday",
            "Normal",
            "",
        ] {
            map.insert(s.to_string(), vec![s.to_string()]);
        }
        let text = to_string(&map).expect("serializes");
        assert!(text.contains("'n':\n- 'n'\n"), "{text}");
        assert!(text.contains("'1_000':\n- '1_000'\n"), "{text}");
        assert!(text.contains("'2024-01-02':\n- '2024-01-02'\n"), "{text}");
        assert!(text.contains("name:\n- name\n"), "{text}");
        assert!(text.contains("yesterday:\n- yesterday\n"), "{text}");
        let back: BTreeMap<String, Vec<String>> = serde_yaml::from_str(&text).expect("parses");
        assert_eq!(back, map);
    }

    #[test]
    fn output_without_ambiguous_strings_is_serde_yaml_s() {
        let value: BTreeMap<&str, Vec<&str>> = [
            ("required", vec!["name", "replicas"]),
            ("a", vec!["b: c", "|x"]),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            to_string(&value).expect("yaml"),
            serde_yaml::to_string(&value).expect("yaml")
        );
    }

    #[test]
    fn multi_line_strings_keep_their_block_style() {
        let value = BTreeMap::from([("description", "first line\nn\nyes")]);
        let text = to_string(&value).expect("yaml");
        assert_eq!(text, serde_yaml::to_string(&value).expect("yaml"));
    }

    #[test]
    fn a_string_holding_the_fence_character_is_left_to_serde_yaml() {
        let value = BTreeMap::from([("n", "\u{E000}")]);
        let text = to_string(&value).expect("yaml");
        assert_eq!(text, serde_yaml::to_string(&value).expect("yaml"));
    }
}
