//! Kubebuilder-style comment markers (`// +kopgen:rbac:groups=apps,verbs=get;list`), read the
//! same way by every generator that takes them, so a marker that works for RBAC is written the
//! same way for webhooks.

/// One marker found in a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker<'a> {
    /// 1-based line and column of the comment, for located errors.
    pub line: usize,
    pub column: usize,
    /// The prefix that matched, e.g. `+kubebuilder:webhook:`.
    pub prefix: &'a str,
    /// What follows the prefix: `key=value,key=a;b`.
    pub body: &'a str,
}

/// Every line comment of `text` (`//`, `///` or `//!`) that starts with one of `prefixes`.
pub fn find<'a>(text: &'a str, prefixes: &'a [&'a str]) -> Vec<Marker<'a>> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let Some(comment) = trimmed.strip_prefix("//") else {
            continue;
        };
        let comment = comment.trim_start_matches(['/', '!']).trim();
        let Some((prefix, body)) = prefixes
            .iter()
            .find_map(|p| comment.strip_prefix(p).map(|body| (*p, body)))
        else {
            continue;
        };
        found.push(Marker {
            line: number + 1,
            column: line.len() - trimmed.len() + 1,
            prefix,
            body: body.trim(),
        });
    }
    found
}

/// Splits on `sep` outside double quotes and backticks (controller-gen's two ways to quote a
/// value that holds commas); empty pieces are dropped.
pub fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '`' => quote = Some(c),
            None if c == sep => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            None => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// A value without its surrounding double quotes or backticks.
pub fn unquote(value: &str) -> &str {
    let value = value.trim();
    ['"', '`']
        .iter()
        .find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_markers_in_every_kind_of_line_comment() {
        let text = "fn a() {}\n  // +x:rbac:a=b\n/// +x:rbac:c=d\n//! +y:e=f\n// + x:rbac:no\n";
        let found = find(text, &["+x:rbac:", "+y:"]);
        let bodies: Vec<(usize, usize, &str)> =
            found.iter().map(|m| (m.line, m.column, m.body)).collect();
        assert_eq!(bodies, [(2, 3, "a=b"), (3, 1, "c=d"), (4, 1, "e=f")]);
    }

    #[test]
    fn quoted_separators_do_not_split() {
        assert_eq!(
            split_top(r#"a=1,p=`{"x":1,"y":2}`,q="c,d",,"#, ','),
            ["a=1", r#"p=`{"x":1,"y":2}`"#, r#"q="c,d""#]
        );
        assert_eq!(unquote(" `{}` "), "{}");
        assert_eq!(unquote("\"a\""), "a");
        assert_eq!(unquote("\"a"), "\"a");
    }
}
