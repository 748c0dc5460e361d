//! Editing files at marked insertion points.
//!
//! `init` lays markers such as `// +kopgen:scaffold:api-modules`; later commands insert lines
//! just above them, indented like the marker, and nowhere else. Lines already present are not
//! inserted again, so re-running a command never duplicates code, and user code around the
//! markers is never touched.

use thiserror::Error;

use crate::markers::LineStart;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum InsertionError {
    #[error(
        "{file}: the insertion point `{marker}` is missing. kopgen edits this file only at that marker; \
         restore the line `{marker}` where new entries should go (see a freshly initialised project), then re-run"
    )]
    MissingMarker { file: String, marker: String },
    #[error("{file}: the insertion point `{marker}` appears {count} times; keep exactly one")]
    DuplicateMarker {
        file: String,
        marker: String,
        count: usize,
    },
}

/// Where new lines go relative to the lines already above a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Right above the marker, in the order given.
    Append,
    /// Into the run of lines directly above the marker, keeping it in rustfmt's order
    /// (`mod` and `use` lists), so that generated code stays rustfmt-clean.
    Sorted,
}

/// Returns `contents` with `lines` inserted at the line containing `marker`, placed as
/// `placement` says. Lines already present (compared without surrounding white space) are
/// skipped.
pub fn insert_at_marker(
    file: &str,
    contents: &str,
    marker: &str,
    lines: &[String],
    placement: Placement,
) -> Result<String, InsertionError> {
    let index = marker_line(file, contents, marker)?;
    let all_lines: Vec<&str> = contents.lines().collect();
    let kinds = line_kinds(file, contents, all_lines.len());
    // A line is already there when code says it: text inside a comment or string is not.
    let existing: Vec<&str> = (all_lines.iter().zip(&kinds))
        .filter(|(_, kind)| **kind != LineKind::Other)
        .map(|(line, _)| line.trim())
        .collect();
    let marker_line = all_lines[index];
    let indent = &marker_line[..marker_line.len() - marker_line.trim_start().len()];
    let new_lines: Vec<String> = lines
        .iter()
        .filter(|line| !existing.contains(&line.trim()))
        .map(|line| format!("{indent}{line}"))
        .collect();
    if new_lines.is_empty() {
        return Ok(contents.to_owned());
    }
    let mut out: Vec<String> = all_lines.iter().map(|line| (*line).to_owned()).collect();
    match placement {
        Placement::Append => {
            out.splice(index..index, new_lines);
        }
        Placement::Sorted => {
            let block_start = (0..index)
                .rev()
                .take_while(|&i| kinds[i] != LineKind::Other && !is_macro_use(all_lines[i]))
                .last()
                .unwrap_or(index);
            // Each item with the attributes and doc comments above it, as rustfmt moves them;
            // attributes with no item below them (before the marker) stay last, on what
            // follows the marker.
            let mut units: Vec<Vec<String>> = Vec::new();
            let mut pending: Vec<String> = Vec::new();
            for (line, kind) in out
                .drain(block_start..index)
                .zip(&kinds[block_start..index])
            {
                pending.push(line);
                if *kind == LineKind::Item {
                    units.push(std::mem::take(&mut pending));
                }
            }
            units.extend(new_lines.into_iter().map(|line| vec![line]));
            let key = |unit: &Vec<String>| unit.last().map(|l| l.trim().to_owned());
            units.sort_by(|a, b| {
                version_cmp(&key(a).unwrap_or_default(), &key(b).unwrap_or_default())
            });
            units.push(pending);
            out.splice(block_start..block_start, units.into_iter().flatten());
        }
    }
    Ok(join_lines(&out, contents, contents.ends_with('\n')))
}

/// What a line is to the sorted insertion: an item, what belongs to the item below it (an
/// attribute, a doc comment), or anything else (a blank line, a comment, the inside of a block
/// comment or string), which ends the run of items above a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Item,
    Attached,
    Other,
}

/// The kind of each of the `count` lines of `contents`: read as Rust in a `.rs` file; elsewhere
/// a line starting with `#` or `//` is a comment.
fn line_kinds(file: &str, contents: &str, count: usize) -> Vec<LineKind> {
    let starts = file
        .ends_with(".rs")
        .then(|| crate::markers::line_starts(contents));
    contents
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let t = line.trim();
            let code = match &starts {
                Some(starts) => match starts.get(i) {
                    Some(LineStart::Code) => true,
                    Some(LineStart::LineComment) if is_doc_comment(t) => {
                        return LineKind::Attached;
                    }
                    _ => false,
                },
                None => !(t.is_empty() || t.starts_with("//") || t.starts_with('#')),
            };
            match (code, t.starts_with("#[")) {
                (false, _) => LineKind::Other,
                (true, true) => LineKind::Attached,
                (true, false) => LineKind::Item,
            }
        })
        .chain(std::iter::repeat(LineKind::Other))
        .take(count)
        .collect()
}

/// `///` (not `////`): the outer doc comment of the item below.
fn is_doc_comment(trimmed: &str) -> bool {
    trimmed.starts_with("///") && !trimmed.starts_with("////")
}

/// rustfmt does not reorder a module with `#[macro_use]`: it ends the run.
fn is_macro_use(line: &str) -> bool {
    line.trim_start().starts_with("#[macro_use")
}

/// Returns `contents` without `lines` where they stand above the line containing `marker` (in
/// the run of lines a command inserts into there): what [`insert_at_marker`] added, taken out
/// again. Other lines, the user's included, stay; a line not found is no error.
pub fn remove_at_marker(
    file: &str,
    contents: &str,
    marker: &str,
    lines: &[String],
) -> Result<String, InsertionError> {
    let index = marker_line(file, contents, marker)?;
    let all: Vec<&str> = contents.lines().collect();
    let kinds = line_kinds(file, contents, all.len());
    let mut drop = vec![false; all.len()];
    for line in lines {
        let wanted: Vec<&str> = line.lines().map(str::trim).collect();
        if wanted.is_empty() {
            continue;
        }
        let at = |start: usize, end: usize| {
            start + wanted.len() <= end
                && (0..wanted.len()).all(|i| {
                    !drop[start + i]
                        && kinds[start + i] != LineKind::Other
                        && all[start + i].trim() == wanted[i]
                })
        };
        // The nearest occurrence above the marker; below it where the user moved the marker up.
        let found = (0..index)
            .rev()
            .find(|&start| at(start, index))
            .or_else(|| (index + 1..all.len()).find(|&start| at(start, all.len())));
        if let Some(start) = found {
            drop[start..start + wanted.len()]
                .iter_mut()
                .for_each(|d| *d = true);
        }
    }
    if !drop.contains(&true) {
        return Ok(contents.to_owned());
    }
    let kept: Vec<&str> = (all.iter().zip(&drop))
        .filter(|(_, drop)| !**drop)
        .map(|(line, _)| *line)
        .collect();
    Ok(join_lines(&kept, contents, contents.ends_with('\n')))
}

/// `lines` joined in the line endings of `original` (`lines()` drops the `\r` before each
/// `\n`: a file with CRLF line endings keeps them), ended by a line break if `final_break`.
pub(crate) fn join_lines<S: AsRef<str>>(lines: &[S], original: &str, final_break: bool) -> String {
    let newline = if original.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut text = lines
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<&str>>()
        .join(newline);
    if final_break {
        text.push_str(newline);
    }
    text
}

/// The index of the one line containing `marker`.
fn marker_line(file: &str, contents: &str, marker: &str) -> Result<usize, InsertionError> {
    // In Rust, only a real line comment is a marker: not one inside a block comment or string.
    let comments = file
        .ends_with(".rs")
        .then(|| crate::markers::comment_lines(contents));
    let positions: Vec<usize> = contents
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_end().ends_with(marker))
        .map(|(i, _)| i)
        .filter(|i| {
            comments
                .as_ref()
                .is_none_or(|lines| lines.binary_search(i).is_ok())
        })
        .collect();
    match positions.as_slice() {
        [index] => Ok(*index),
        [] => Err(InsertionError::MissingMarker {
            file: file.to_owned(),
            marker: marker.to_owned(),
        }),
        more => Err(InsertionError::DuplicateMarker {
            file: file.to_owned(),
            marker: marker.to_owned(),
            count: more.len(),
        }),
    }
}

/// rustfmt's "version sorting" (style edition 2024): digit runs compare as numbers, so
/// `v2` sorts before `v10`; everything else compares as text.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return std::cmp::Ordering::Equal,
            (true, false) => return std::cmp::Ordering::Less,
            (false, true) => return std::cmp::Ordering::Greater,
            _ => {}
        }
        let a_digits = a.bytes().take_while(u8::is_ascii_digit).count();
        let b_digits = b.bytes().take_while(u8::is_ascii_digit).count();
        let ordering = if a_digits > 0 && b_digits > 0 {
            let (x, y) = (
                a[..a_digits].trim_start_matches('0'),
                b[..b_digits].trim_start_matches('0'),
            );
            x.len().cmp(&y.len()).then_with(|| x.cmp(y))
        } else {
            a.as_bytes()[0].cmp(&b.as_bytes()[0])
        };
        if ordering != std::cmp::Ordering::Equal {
            return ordering;
        }
        let (step_a, step_b) = if a_digits > 0 && b_digits > 0 {
            (a_digits, b_digits)
        } else {
            (1, 1)
        };
        a = &a[step_a..];
        b = &b[step_b..];
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let contents = "mod a;\r\n// +kopgen:scaffold:mods\r\n";
        let out = insert_at_marker(
            "f.rs",
            contents,
            "+kopgen:scaffold:mods",
            &["mod b;".into()],
            Placement::Sorted,
        )
        .expect("inserted");
        assert_eq!(out, "mod a;\r\nmod b;\r\n// +kopgen:scaffold:mods\r\n");
    }

    use super::*;

    #[test]
    fn what_was_inserted_is_removed_and_nothing_else() {
        let before = "pub mod apps;\n// mine\npub mod web;\n// +kopgen:scaffold:m\n";
        let lines = vec!["pub mod batch;".to_owned()];
        let inserted = insert_at_marker(
            "m.rs",
            before,
            "+kopgen:scaffold:m",
            &lines,
            Placement::Sorted,
        )
        .expect("inserted");
        assert_ne!(inserted, before);
        let removed =
            remove_at_marker("m.rs", &inserted, "+kopgen:scaffold:m", &lines).expect("removed");
        assert_eq!(removed, before);
        let call = vec!["converges_and_cleans_up!(\n    long_name,\n    \"x\"\n);".to_owned()];
        let with_call =
            "a\nconverges_and_cleans_up!(\n    long_name,\n    \"x\"\n);\n// +kopgen:scaffold:t\n";
        assert_eq!(
            remove_at_marker("t.rs", with_call, "+kopgen:scaffold:t", &call).expect("removed"),
            "a\n// +kopgen:scaffold:t\n",
            "a call over several lines"
        );
        assert!(remove_at_marker("t.rs", "a\n", "+kopgen:scaffold:t", &call).is_err());
    }

    #[test]
    fn sorted_placement_keeps_rustfmt_order() {
        let text = "//! doc\n\npub mod apps;\npub mod web;\n// +kopgen:scaffold:m\n";
        let lines = vec!["pub mod batch;".to_owned()];
        let out = insert_at_marker(
            "m.rs",
            text,
            "+kopgen:scaffold:m",
            &lines,
            Placement::Sorted,
        )
        .expect("marker");
        assert_eq!(
            out,
            "//! doc\n\npub mod apps;\npub mod batch;\npub mod web;\n// +kopgen:scaffold:m\n"
        );
        let first = insert_at_marker(
            "m.rs",
            "// +kopgen:scaffold:m\n",
            "+kopgen:scaffold:m",
            &lines,
            Placement::Sorted,
        );
        assert_eq!(
            first.expect("marker"),
            "pub mod batch;\n// +kopgen:scaffold:m\n"
        );
    }

    #[test]
    fn attributes_and_doc_comments_stay_with_their_item() {
        let text = "pub mod apps;\n#[cfg(feature = \"web\")]\n/// Web.\npub mod web;\n// +kopgen:scaffold:m\n";
        let out = insert_at_marker(
            "m.rs",
            text,
            "+kopgen:scaffold:m",
            &["pub mod shop;".to_owned(), "pub mod batch;".to_owned()],
            Placement::Sorted,
        )
        .expect("marker");
        assert_eq!(
            out,
            "pub mod apps;\npub mod batch;\npub mod shop;\n#[cfg(feature = \"web\")]\n/// Web.\npub mod web;\n// +kopgen:scaffold:m\n"
        );
        // An attribute right above the marker belongs to what follows the marker.
        let dangling = "pub mod web;\n#[cfg(test)]\n// +kopgen:scaffold:m\nmod tests;\n";
        let out = insert_at_marker(
            "m.rs",
            dangling,
            "+kopgen:scaffold:m",
            &["pub mod apps;".to_owned()],
            Placement::Sorted,
        )
        .expect("marker");
        assert_eq!(
            out,
            "pub mod apps;\npub mod web;\n#[cfg(test)]\n// +kopgen:scaffold:m\nmod tests;\n"
        );
    }

    #[test]
    fn a_line_inside_a_comment_or_string_is_not_there() {
        let text = "/*\npub mod web;\n*/\nconst S: &str = \"\npub mod shop;\n\";\npub mod apps;\n// +kopgen:scaffold:m\n";
        let lines = vec!["pub mod web;".to_owned(), "pub mod shop;".to_owned()];
        let out = insert_at_marker(
            "m.rs",
            text,
            "+kopgen:scaffold:m",
            &lines,
            Placement::Sorted,
        )
        .expect("marker");
        assert!(
            out.ends_with("pub mod apps;\npub mod shop;\npub mod web;\n// +kopgen:scaffold:m\n"),
            "{out}"
        );
        let removed = remove_at_marker("m.rs", &out, "+kopgen:scaffold:m", &lines).expect("marker");
        assert_eq!(removed, text, "the commented and quoted lines stay");
    }

    #[test]
    fn version_sorting() {
        let mut names = vec![
            "pub mod v10;",
            "pub mod v2;",
            "pub mod v1beta1;",
            "pub mod v1;",
            "pub mod v1alpha1;",
        ];
        names.sort_by(|a, b| version_cmp(a, b));
        assert_eq!(
            names,
            [
                "pub mod v1;",
                "pub mod v1alpha1;",
                "pub mod v1beta1;",
                "pub mod v2;",
                "pub mod v10;"
            ]
        );
    }

    #[test]
    fn inserts_above_marker_with_its_indentation_once() {
        let text = "fn f() {\n    // user code\n    // +kopgen:scaffold:x\n}\n";
        let lines = vec!["a();".to_owned()];
        let once = insert_at_marker(
            "f.rs",
            text,
            "+kopgen:scaffold:x",
            &lines,
            Placement::Append,
        )
        .expect("marker");
        assert_eq!(
            once,
            "fn f() {\n    // user code\n    a();\n    // +kopgen:scaffold:x\n}\n"
        );
        let twice = insert_at_marker(
            "f.rs",
            &once,
            "+kopgen:scaffold:x",
            &lines,
            Placement::Append,
        )
        .expect("marker");
        assert_eq!(once, twice);
    }

    #[test]
    fn missing_and_duplicate_markers_are_errors() {
        let lines = vec!["a".to_owned()];
        assert!(matches!(
            insert_at_marker(
                "f.rs",
                "nothing\n",
                "+kopgen:scaffold:x",
                &lines,
                Placement::Append
            ),
            Err(InsertionError::MissingMarker { .. })
        ));
        assert!(matches!(
            insert_at_marker(
                "f.yaml",
                "# +kopgen:scaffold:x\n# +kopgen:scaffold:x\n",
                "+kopgen:scaffold:x",
                &lines,
                Placement::Append
            ),
            Err(InsertionError::DuplicateMarker { count: 2, .. })
        ));
    }

    #[test]
    fn a_marker_inside_a_block_comment_or_string_is_no_marker() {
        let lines = vec!["pub mod web;".to_owned()];
        let commented = "/*\npub mod apps;\n// +kopgen:scaffold:x\n*/\n";
        assert!(matches!(
            insert_at_marker(
                "f.rs",
                commented,
                "+kopgen:scaffold:x",
                &lines,
                Placement::Sorted
            ),
            Err(InsertionError::MissingMarker { .. })
        ));
        let both = "const S: &str = \"\n// +kopgen:scaffold:x\n\";\npub mod apps;\n// +kopgen:scaffold:x\n";
        let edited = insert_at_marker(
            "f.rs",
            both,
            "+kopgen:scaffold:x",
            &lines,
            Placement::Sorted,
        )
        .expect("the real marker");
        assert!(
            edited.ends_with("pub mod apps;\npub mod web;\n// +kopgen:scaffold:x\n"),
            "{edited}"
        );
    }
}
