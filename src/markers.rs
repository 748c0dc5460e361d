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

/// Every line comment of `text` (`//`, `///` or `//!`) on a line of its own that starts with
/// one of `prefixes`. Only real comments count: `//` inside a string literal or a block comment
/// is text, as rustc reads it (a marker there would grant what no one wrote as a marker).
pub fn find<'a>(text: &'a str, prefixes: &'a [&'a str]) -> Vec<Marker<'a>> {
    let comments = comment_lines(text);
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if comments.binary_search(&number).is_err() {
            continue;
        }
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

/// What a line of Rust source begins with (after white space), as rustc's lexer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineStart {
    /// Nothing: the line is empty or white space.
    Blank,
    /// A line comment (`//`, `///`, `//!`).
    LineComment,
    /// A block comment that starts on this line.
    BlockComment,
    /// The inside of a block comment or string literal that began on an earlier line.
    Inside,
    /// Code: an item, an attribute, an expression.
    Code,
}

/// The 0-based numbers of the lines that begin (after whitespace) with a line comment.
pub(crate) fn comment_lines(text: &str) -> Vec<usize> {
    line_starts(text)
        .iter()
        .enumerate()
        .filter(|(_, start)| **start == LineStart::LineComment)
        .map(|(line, _)| line)
        .collect()
}

/// What each line of `text` begins with, by 0-based line number (as `str::lines` counts them).
/// String, raw string, byte string and char literals and nested block comments are skipped as
/// rustc skips them, so `//` or `pub mod x;` inside them starts nothing.
pub(crate) fn line_starts(text: &str) -> Vec<LineStart> {
    let bytes = text.as_bytes();
    let mut starts = vec![LineStart::Blank];
    // Whether the current line's start has been classified.
    let mut seen = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if !seen && !rest[0].is_ascii_whitespace() {
            seen = true;
            if let Some(last) = starts.last_mut() {
                *last = if rest.starts_with(b"//") {
                    LineStart::LineComment
                } else if rest.starts_with(b"/*") {
                    LineStart::BlockComment
                } else {
                    LineStart::Code
                };
            }
        }
        let next = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| i + n)
        } else if rest.starts_with(b"/*") {
            block_comment_end(bytes, i)
        } else if let Some(end) = raw_string_end(bytes, i) {
            end
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\'', '\u{..}') ends at its closing quote; a lifetime
            // ('a) has none and is passed over like any identifier.
            let close = match rest.get(1) {
                Some(b'\\') => rest.iter().skip(3).position(|&b| b == b'\'').map(|n| n + 4),
                Some(_) => {
                    let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (rest.get(1 + width) == Some(&b'\'')).then_some(width + 2)
                }
                None => None,
            };
            i + close.unwrap_or(1)
        } else {
            i + 1
        };
        let next = next.min(bytes.len());
        for at in (i..next).filter(|&at| bytes[at] == b'\n') {
            // A line that starts inside what was skipped begins inside it.
            let inside = at + 1 < next;
            starts.push(if inside {
                LineStart::Inside
            } else {
                LineStart::Blank
            });
            seen = inside;
        }
        i = next;
    }
    // `str::lines` has no line after a final line break.
    if text.ends_with('\n') {
        starts.pop();
    }
    starts
}

/// Where the block comment starting at `i` ends (block comments nest).
fn block_comment_end(bytes: &[u8], i: usize) -> usize {
    let (mut depth, mut j) = (0usize, i);
    while j < bytes.len() {
        if bytes[j..].starts_with(b"/*") {
            depth += 1;
            j += 2;
        } else if bytes[j..].starts_with(b"*/") {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    j
}

/// Where the raw string literal (`r"…"`, `r#"…"#`, `br##"…"##`, `cr"…"`) starting at `i` ends.
fn raw_string_end(bytes: &[u8], i: usize) -> Option<usize> {
    // An identifier ending in `r` (`for`) is not a raw string's start.
    if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if matches!(bytes.get(j), Some(b'b' | b'c')) {
        j += 1;
    }
    if bytes.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = bytes[j..].iter().take_while(|&&b| b == b'#').count();
    j += hashes;
    if bytes.get(j) != Some(&b'"') {
        return None;
    }
    let mut closing = vec![b'"'];
    closing.extend(std::iter::repeat_n(b'#', hashes));
    let body = j + 1;
    bytes[body..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice())
        .map(|n| body + n + closing.len())
        .or(Some(bytes.len()))
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
    fn comment_text_inside_literals_and_block_comments_is_no_marker() {
        let text = concat!(
            "pub const H: &str = r#\"\n// +x:rbac:raw\n\"#;\n",
            "pub const S: &str = \"a \\\" quote\n// +x:rbac:string\n\";\n",
            "pub const B: &[u8] = br\"\n// +x:rbac:bytes\n\";\n",
            "/* outer /* nested */\n// +x:rbac:block\n*/\n",
            "fn f<'a>(x: &'a str) -> char { let _ = x; '\"' }\n",
            "// +x:rbac:real=1\n",
            "let c = '\\'';\n",
            "    // +x:rbac:real=2\n",
            "let s = \"// +x:rbac:same-line\"; // +x:rbac:trailing\n",
        );
        let found: Vec<&str> = find(text, &["+x:rbac:"]).iter().map(|m| m.body).collect();
        assert_eq!(found, ["real=1", "real=2"], "{text}");
        let lines: Vec<usize> = find(text, &["+x:rbac:"]).iter().map(|m| m.line).collect();
        assert_eq!(lines, [14, 16]);
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
