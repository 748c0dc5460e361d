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
//!
//! Reading goes through the same library ([`from_str`], [`documents`]): one YAML library for
//! everything kopgen reads and writes, with a nesting bound checked first.

use serde::Serialize;

/// Why a value could not be written (a map key that is not a string, for example).
pub type Error = serde_saphyr::SerializeError;

/// `value` as YAML that YAML 1.1 readers (Kubernetes tooling) and YAML 1.2 readers read alike.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, Error> {
    serde_saphyr::to_string(value)
}

/// How deep flow collections (`[...]`, `{...}`) may nest in a YAML text kopgen reads: far
/// beyond any manifest, PROJECT or values file, and far below where a parser's recursion
/// limit is reached only after time quadratic in the input (200 KB of `[` took 49 s).
pub const MAX_DEPTH: usize = 64;

/// `Err((line, message))` when flow collections in `text` nest deeper than [`MAX_DEPTH`]:
/// checked in one pass before any parser sees the text. A bracket counts where a flow
/// collection can open (after an indicator, `:`, `-`, `,`, `[`, `{`, or at the start of a
/// value), not inside a quoted or plain scalar or a comment.
pub fn check_depth(text: &str) -> Result<(), (usize, String)> {
    let mut depth = 0usize;
    for (number, line) in text.lines().enumerate() {
        let mut token_start = true;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '#' if token_start => break,
                '"' | '\'' if token_start => {
                    // A quoted scalar: skip to its closing quote on this line (a scalar that
                    // goes on beyond the line holds no brackets that count).
                    let mut escaped = false;
                    for next in chars.by_ref() {
                        match next {
                            '\\' if c == '"' && !escaped => escaped = true,
                            quote if quote == c && !escaped => break,
                            _ => escaped = false,
                        }
                    }
                    token_start = false;
                }
                '[' | '{' if token_start => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err((
                            number + 1,
                            format!(
                                "flow collections nest deeper than {MAX_DEPTH} levels; no \
                                 manifest needs that many: write the value in block style"
                            ),
                        ));
                    }
                }
                ']' | '}' if depth > 0 => {
                    depth -= 1;
                    token_start = false;
                }
                ',' if depth > 0 => token_start = true,
                ':' | '-' if chars.peek().is_none_or(|n| n.is_whitespace()) => token_start = true,
                c if c.is_whitespace() => {}
                _ => token_start = false,
            }
        }
    }
    Ok(())
}

/// Why a YAML text could not be read, and where (`line` 1-based, 0 when the parser cannot say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.message),
            line => write!(f, "line {line}: {}", self.message),
        }
    }
}

impl std::error::Error for ReadError {}

fn read_error(error: serde_saphyr::Error) -> ReadError {
    let line = error
        .location()
        .map_or(0, |l| usize::try_from(l.line()).unwrap_or(0));
    // The message alone: the line is the caller's to place (a file name, a document's offset).
    let message = error.to_string();
    ReadError { line, message }
}

fn depth(text: &str) -> Result<(), ReadError> {
    check_depth(text).map_err(|(line, message)| ReadError { line, message })
}

/// The one YAML document of `text`, as `T`: the one reader kopgen reads YAML with, after
/// [`check_depth`], with serde-saphyr's limits on aliases (an alias bomb is an error).
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ReadError> {
    depth(text)?;
    serde_saphyr::from_str_with_options(text, options()).map_err(read_error)
}

/// The reader's options: its defaults (YAML 1.1 booleans, as Kubernetes tooling reads them;
/// duplicate keys refused; alias limits), with one-line messages: the caller names the file
/// and line.
fn options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    options
}

/// Every document of `text` (`---`-separated), each as `T`.
pub fn documents<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>, ReadError> {
    depth(text)?;
    serde_saphyr::from_multiple_with_options(text, options()).map_err(read_error)
}

/// [`check_depth`], as the error message of a reader that reports one string.
pub fn bounded(text: &str) -> Result<&str, String> {
    match check_depth(text) {
        Ok(()) => Ok(text),
        Err((line, message)) => Err(format!("line {line}: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_reads_what_kopgen_reads_and_says_where_it_cannot() {
        use serde_json::{Value, json};
        let value: Value = from_str("a: 1\nb: [x, 'y']\nc:\n").expect("reads");
        assert_eq!(value, json!({"a": 1, "b": ["x", "y"], "c": null}));
        assert_eq!(from_str::<Value>("").expect("empty"), Value::Null);
        let docs: Vec<Value> = documents("a: 1\n---\nb: 2\n").expect("reads");
        assert_eq!(docs, [json!({"a": 1}), json!({"b": 2})]);
        let error = from_str::<Value>("a: 1\nb: [\n").expect_err("refused");
        assert!(error.line >= 2, "{error}");
        assert!(!error.message.contains('\n'), "one line: {error}");
        let duplicated = from_str::<Value>("a: 1\na: 2\n").expect_err("refused");
        assert!(duplicated.to_string().contains('a'), "{duplicated}");
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
        assert!(from_str::<Value>(bomb).is_err(), "an alias bomb is refused");
    }

    #[test]
    fn nesting_is_bounded_in_one_pass_and_scalars_do_not_count() {
        let deep = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let refused = check_depth(&deep);
        assert!(refused.is_err_and(|(line, m)| line == 1 && m.contains("64")));
        let fine = [
            "a: [1, [2, {b: [3]}]]\n",
            "jsonPath: .status.conditions[?(@.type==\"Ready\")].status\n",
            "note: \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"\n",
            "note: '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{'\n",
            "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
            "url: http://x/[a]\n",
        ];
        for text in fine {
            assert!(check_depth(text).is_ok(), "{text}");
        }
        let open = format!("a:\n{}", "- [\n".repeat(70));
        assert!(check_depth(&open).is_err(), "across lines");
    }

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
        // serde_yaml, a reader of its own, as a second opinion (a test dependency only).
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
