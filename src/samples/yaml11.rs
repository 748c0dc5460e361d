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
        // A key YAML 1.1 reads as a boolean (`n:`, `on:`) becomes "false"/"true" to kubectl.
        let key = key_as_yaml11(head);
        let read = read_as_yaml11(scalar.trim_end());
        if key.is_none() && read.is_none() {
            out.push_str(line);
            continue;
        }
        changed = true;
        out.push_str(key.as_deref().unwrap_or(head));
        match read {
            Some(read) => {
                out.push_str(&read);
                out.push_str(comment);
            }
            None => out.push_str(value),
        }
        out.push_str(&line[body.len()..]);
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
    let colon = rest
        .find(": ")
        .or_else(|| rest.strip_suffix(':').map(str::len));
    if !rest.starts_with(['"', '\'', '[', '{'])
        && let Some(colon) = colon
        && !rest[..colon].contains(['#', '"', '\''])
    {
        let value_at = (at + colon + 2).min(line.len());
        let spaces = line[value_at..].len() - line[value_at..].trim_start().len();
        return line.split_at(value_at + spaces);
    }
    line.split_at(at)
}

/// `head` (a line up to its value) with its plain key quoted as the boolean YAML 1.1 reads it
/// as, if it is one.
fn key_as_yaml11(head: &str) -> Option<String> {
    let key_end = head.trim_end().strip_suffix(':')?.len();
    let start = head[..key_end].rfind([' ', '-']).map_or(0, |at| at + 1);
    let key = &head[start..key_end];
    let read = read_as_yaml11(key).filter(|r| r == "true" || r == "false")?;
    Some(format!("{}\"{read}\"{}", &head[..start], &head[key_end..]))
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
        let keys = as_kubectl_reads("spec:\n  n: 5\n  on:\n    y: x\n  - no: 1\n");
        assert_eq!(
            keys,
            "spec:\n  \"false\": 5\n  \"true\":\n    \"true\": x\n  - \"false\": 1\n"
        );
        let untouched = "spec:\n  name: blog\n";
        assert!(matches!(as_kubectl_reads(untouched), Cow::Borrowed(_)));
    }
}
