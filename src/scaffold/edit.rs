//! Edits of a project's files: lines inserted at (and removed from) the marked insertion
//! points, blocks of lines commented and uncommented, files a command owns put in place.

use thiserror::Error;

use crate::{
    changeset::{ChangeError, ChangeSet},
    insertion::{InsertionError, Placement, insert_at_marker, remove_at_marker},
    templates::TemplateError,
};

#[derive(Debug, Error)]
pub enum EditError {
    #[error(
        "{0}: already exists and was not scaffolded for this kind by kopgen. Move it away or pass --force to overwrite it"
    )]
    FileExists(String),
    #[error(
        "{file}: enabling kopgen's commented lines here would leave YAML that kustomize refuses ({message}); \
         merge them into your own entries by hand (see a newly initialized project's {file}), then run this again"
    )]
    BrokenYaml { file: String, message: String },
    #[error(
        "{0} was changed by hand, and kopgen writes it whole (the CRDs whose conversion the manager serves): \
         move your rules into a file of your own listed in config/selfmanaged/kustomization.yaml, or pass --force \
         (where the command has it) to overwrite them"
    )]
    HandEdited(String),
    #[error(transparent)]
    Insertion(#[from] InsertionError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// Uncomments each block of consecutive lines of `file` written as `#<line>` (or `# <line>`,
/// as editors comment). A block the user removed or changed stays as it is.
pub(super) fn uncomment(
    changes: &mut ChangeSet,
    file: &str,
    blocks: &[&[&str]],
) -> Result<(), EditError> {
    rewrite_blocks(changes, file, blocks, true)
}

/// Comments out each block of consecutive lines of `file` (the opposite of [`uncomment`]).
pub(super) fn comment(
    changes: &mut ChangeSet,
    file: &str,
    blocks: &[&[&str]],
) -> Result<(), EditError> {
    rewrite_blocks(changes, file, blocks, false)
}

/// Where `block` stands in `lines` written as `prefix<line>`, all its lines indented as its
/// first one is (the user may have indented the list).
fn find_block(lines: &[String], block: &[&str], prefix: &str) -> Option<usize> {
    lines.windows(block.len()).position(|window| {
        let first = &window[0];
        let indent = &first[..first.len() - first.trim_start().len()];
        window.iter().zip(block).all(|(line, wanted)| {
            line.strip_prefix(indent)
                .and_then(|rest| rest.strip_prefix(prefix))
                .map(|rest| without_comment(rest).trim_end())
                == Some(*wanted)
        })
    })
}

/// `line` without a trailing YAML comment (` # keep`): a `#` after whitespace, outside quotes.
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(open), c) if c == open => quote = None,
            (None, '#') if previous.is_whitespace() && at > 0 => return &line[..at],
            _ => {}
        }
        previous = c;
    }
    line
}

/// Whether `block` stands in `lines`, enabled (not commented out).
pub(super) fn has_block(lines: &[String], block: &[&str]) -> bool {
    find_block(lines, block, "").is_some()
}

fn rewrite_blocks(
    changes: &mut ChangeSet,
    file: &str,
    blocks: &[&[&str]],
    enable: bool,
) -> Result<(), EditError> {
    let Some(text) = changes.read(file)? else {
        return Ok(());
    };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for block in blocks {
        // The block as it stands, with the comment marker it carries (none when enabled).
        let prefixes: &[&str] = if enable { &["#", "# "] } else { &[""] };
        let found = (prefixes.iter())
            .find_map(|prefix| find_block(&lines, block, prefix).map(|at| (at, *prefix)));
        if let Some((start, prefix)) = found {
            // The block keeps the indentation its first line has in the file (a list the user
            // indented stays one list), and each line its own trailing comment.
            let first = &lines[start];
            let indent = first[..first.len() - first.trim_start().len()].to_owned();
            for line in &mut lines[start..start + block.len()] {
                let rest = line.strip_prefix(indent.as_str()).unwrap_or(line);
                let rest = rest.strip_prefix(prefix).unwrap_or(rest);
                *line = match enable {
                    true => format!("{indent}{rest}"),
                    false => format!("{indent}#{rest}"),
                };
            }
        }
    }
    let edited = crate::insertion::join_lines(&lines, &text, true);
    if edited == text {
        return Ok(());
    }
    // The edit must leave YAML a YAML reader takes: uncommenting a key the user already wrote
    // (a second `patches:`) would make kustomize refuse the whole file.
    let parsed = crate::yaml::from_str::<serde_json::Value>(&edited).map_err(|e| e.to_string());
    if let Err(message) = parsed {
        return Err(EditError::BrokenYaml {
            file: file.to_owned(),
            message,
        });
    }
    changes.put(file, edited);
    Ok(())
}

/// `file` without its lines equal to `line` (trimmed), in the file's own line endings.
pub(super) fn drop_line(changes: &mut ChangeSet, file: &str, line: &str) -> Result<(), EditError> {
    let Some(text) = changes.read(file)? else {
        return Ok(());
    };
    let kept: Vec<&str> = text.lines().filter(|l| l.trim() != line).collect();
    let edited = crate::insertion::join_lines(&kept, &text, true);
    if edited != text {
        changes.put(file, edited);
    }
    Ok(())
}

/// `file` with `line` appended where no line equals it yet, in the file's own line endings.
pub(super) fn append_line(
    changes: &mut ChangeSet,
    file: &str,
    line: &str,
) -> Result<(), EditError> {
    let Some(text) = changes.read(file)? else {
        return Ok(());
    };
    if text.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    let mut lines: Vec<&str> = text.trim_end().lines().collect();
    lines.push(line);
    changes.put(file, crate::insertion::join_lines(&lines, &text, true));
    Ok(())
}

/// Declares `pub mod <module>;` in `parent` and creates the module file if it is new.
pub(super) fn register_module(
    changes: &mut ChangeSet,
    parent: &str,
    marker: &str,
    module: &str,
    render: impl FnOnce() -> Result<String, TemplateError>,
    module_file: &str,
) -> Result<(), EditError> {
    if !changes.exists(module_file) {
        changes.put(module_file, render()?);
    }
    edit_sorted(changes, parent, marker, &[format!("pub mod {module};")])
}

/// Inserts `lines` right above `marker` in `file`, which must exist.
pub(super) fn edit(
    changes: &mut ChangeSet,
    file: &str,
    marker: &str,
    lines: &[String],
) -> Result<(), EditError> {
    edit_at(changes, file, marker, lines, Placement::Append)
}

/// Inserts `lines` into the sorted list above `marker` (module and `use` lists).
pub(super) fn edit_sorted(
    changes: &mut ChangeSet,
    file: &str,
    marker: &str,
    lines: &[String],
) -> Result<(), EditError> {
    edit_at(changes, file, marker, lines, Placement::Sorted)
}

fn edit_at(
    changes: &mut ChangeSet,
    file: &str,
    marker: &str,
    lines: &[String],
    placement: Placement,
) -> Result<(), EditError> {
    let contents = changes
        .read(file)?
        .ok_or_else(|| InsertionError::MissingMarker {
            file: file.to_owned(),
            marker: marker.to_owned(),
        })?;
    let edited = insert_at_marker(file, &contents, marker, lines, placement)?;
    if edited != contents {
        changes.put(file, edited);
    }
    Ok(())
}

/// Adds a file this command owns; an existing one is only replaced with --force.
pub(super) fn put_new(
    changes: &mut ChangeSet,
    file: &str,
    text: String,
    force: bool,
) -> Result<(), EditError> {
    if !force && changes.exists(file) {
        return Err(EditError::FileExists(file.to_owned()));
    }
    changes.put(file, text);
    Ok(())
}

/// Removes `lines` from the lines of `file` above `marker` (the lines a command inserted there),
/// leaving every other line as it is. The marker must be there, as for an insertion.
pub(super) fn unedit(
    changes: &mut ChangeSet,
    file: &str,
    marker: &str,
    lines: &[String],
) -> Result<(), EditError> {
    let Some(contents) = changes.read(file)? else {
        return Err(InsertionError::MissingMarker {
            file: file.to_owned(),
            marker: marker.to_owned(),
        }
        .into());
    };
    let edited = remove_at_marker(file, &contents, marker, lines)?;
    if edited != contents {
        changes.put(file, edited);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_the_indentation_the_user_gave_the_list() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = "k.yaml";
        let text = "resources:\n  - ../rbac\n  #- ../webhook\n  # - ../certmanager\npatches:\n  #- path: p.yaml\n  #  target:\n  #    kind: Deployment\n";
        std::fs::write(tmp.path().join(file), text).expect("write");
        let mut changes = ChangeSet::new(tmp.path());
        uncomment(
            &mut changes,
            file,
            &[
                &["- ../webhook"],
                &["- ../certmanager"],
                &["- path: p.yaml", "  target:", "    kind: Deployment"],
            ],
        )
        .expect("uncommented");
        let edited = changes.read(file).expect("read").expect("there");
        assert_eq!(
            edited,
            "resources:\n  - ../rbac\n  - ../webhook\n  - ../certmanager\npatches:\n  - path: p.yaml\n    target:\n      kind: Deployment\n"
        );
        comment(&mut changes, file, &[&["- ../webhook"]]).expect("commented");
        let again = changes.read(file).expect("read").expect("there");
        assert!(again.contains("\n  #- ../webhook\n"), "{again}");
    }

    /// An entry the user gave a trailing comment (`- ../certmanager  # keep`) is still the
    /// entry: switched off (and on) with its comment kept, never left on beside its
    /// replacement; a `#` inside quotes is no comment.
    #[test]
    fn entries_with_a_trailing_comment_are_switched_and_keep_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = "k.yaml";
        let text = "resources:\n- ../certmanager  # keep\n#- ../selfmanaged # ours\n- \"a #b\"\n";
        std::fs::write(tmp.path().join(file), text).expect("write");
        let mut changes = ChangeSet::new(tmp.path());
        assert!(has_block(
            &text.lines().map(str::to_owned).collect::<Vec<_>>(),
            &["- ../certmanager"]
        ));
        comment(&mut changes, file, &[&["- ../certmanager"]]).expect("commented");
        uncomment(&mut changes, file, &[&["- ../selfmanaged"]]).expect("uncommented");
        let edited = changes.read(file).expect("read").expect("there");
        assert_eq!(
            edited,
            "resources:\n#- ../certmanager  # keep\n- ../selfmanaged # ours\n- \"a #b\"\n"
        );
        assert_eq!(without_comment("- \"a #b\""), "- \"a #b\"");
    }
}
