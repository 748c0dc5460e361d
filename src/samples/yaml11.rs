//! Samples read as `kubectl apply` reads them. kubectl decodes YAML with sigs.k8s.io/yaml, a
//! YAML 1.1 reader, where kopgen's reader is YAML 1.2: an unquoted `yes`, `off` or `n` is a
//! boolean to kubectl and a string to kopgen, `0777` an octal 511, `1_000` a thousand. So that
//! the check sees what the API server will receive, such plain scalars in block style are
//! rewritten to the value kubectl reads before the document is parsed. (Flow collections,
//! `[yes, no]`, are left as they are.)

use std::borrow::Cow;

/// `document` with every block-style plain scalar that YAML 1.1 reads as a boolean or an
/// integer written as YAML 1.2 reads that value.
pub fn as_kubectl_reads(document: &str) -> Cow<'_, str> {
    let mut out = String::with_capacity(document.len());
    let mut changed = false;
    // The indent below which a block scalar (`|`, `>`) ends: its lines are text, never values.
    let mut block_scalar: Option<usize> = None;
    for line in document.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        if let Some(parent) = block_scalar {
            if body.trim().is_empty() || indent > parent {
                out.push_str(line);
                continue;
            }
            block_scalar = None;
        }
        let (head, value) = split_value(body);
        let (scalar, comment) = match value.find(" #") {
            Some(at) => (&value[..at], &value[at..]),
            None => (value, ""),
        };
        if scalar.starts_with(['|', '>']) {
            block_scalar = Some(indent);
        }
        match read_as_yaml11(scalar.trim_end()) {
            Some(read) => {
                changed = true;
                out.push_str(head);
                out.push_str(&read);
                out.push_str(comment);
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(document)
    }
}

/// A line as (everything up to its value, its value): `key: value`, `- value`, `- key: value`.
fn split_value(line: &str) -> (&str, &str) {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') {
        return (line, "");
    }
    let mut at = line.len() - trimmed.len();
    // List item markers.
    while line[at..].starts_with("- ") {
        at += 2;
        at += line[at..].len() - line[at..].trim_start().len();
    }
    let rest = &line[at..];
    // A plain key (no quotes, no flow): `name: value`.
    if !rest.starts_with(['"', '\'', '[', '{'])
        && let Some(colon) = rest.find(": ")
        && !rest[..colon].contains(['#', '"', '\''])
    {
        let value_at = at + colon + 2;
        let spaces = line[value_at..].len() - line[value_at..].trim_start().len();
        return line.split_at(value_at + spaces);
    }
    line.split_at(at)
}

/// The YAML 1.2 spelling of what YAML 1.1 (go-yaml v2) reads `plain` as, where the two differ.
fn read_as_yaml11(plain: &str) -> Option<String> {
    const TRUE: &[&str] = &["y", "Y", "yes", "Yes", "YES", "on", "On", "ON"];
    const FALSE: &[&str] = &["n", "N", "no", "No", "NO", "off", "Off", "OFF"];
    if TRUE.contains(&plain) {
        return Some("true".into());
    }
    if FALSE.contains(&plain) {
        return Some("false".into());
    }
    let (sign, digits) = match plain.strip_prefix(['-', '+']) {
        Some(rest) => (&plain[..1], rest),
        None => ("", plain),
    };
    let sign = if sign == "-" { "-" } else { "" };
    // Octal with a bare leading zero, binary, and digits grouped with `_`.
    let value = if let Some(octal) = digits.strip_prefix('0').filter(|d| !d.is_empty()) {
        i64::from_str_radix(octal, 8).ok()?
    } else if let Some(binary) = digits.strip_prefix("0b") {
        i64::from_str_radix(&binary.replace('_', ""), 2).ok()?
    } else if digits.contains('_')
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        && !digits.starts_with('_')
    {
        digits.replace('_', "").parse::<i64>().ok()?
    } else {
        return None;
    };
    Some(format!("{sign}{value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_read_as_kubectl_reads_them() {
        let sample = "spec:\n  enabled: yes\n  name: \"yes\"\n  other: 'no'\n  mode: 0777 # octal\n  big: 1_000\n  list:\n  - off\n  - key: N\n  text: |\n    yes\n    0777\n  after: on\n  plain: yesterday\n  zero: 0\n  hex: 0x1F\n";
        let read = as_kubectl_reads(sample);
        assert_eq!(
            read,
            "spec:\n  enabled: true\n  name: \"yes\"\n  other: 'no'\n  mode: 511 # octal\n  big: 1000\n  list:\n  - false\n  - key: false\n  text: |\n    yes\n    0777\n  after: true\n  plain: yesterday\n  zero: 0\n  hex: 0x1F\n"
        );
        let untouched = "spec:\n  name: blog\n";
        assert!(matches!(as_kubectl_reads(untouched), Cow::Borrowed(_)));
    }
}
