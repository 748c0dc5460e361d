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
    #[error(transparent)]
    Insertion(#[from] InsertionError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// Uncomments each block of consecutive lines of `file` written as `#<line>`. A block the user
/// removed or changed stays as it is.
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
        let commented: Vec<String> = block.iter().map(|line| format!("#{line}")).collect();
        let (from, to): (Vec<&str>, Vec<&str>) = if enable {
            (
                commented.iter().map(String::as_str).collect(),
                block.to_vec(),
            )
        } else {
            (
                block.to_vec(),
                commented.iter().map(String::as_str).collect(),
            )
        };
        if let Some(start) = lines
            .windows(block.len())
            .position(|window| window.iter().zip(&from).all(|(l, f)| l.trim_end() == *f))
        {
            for (offset, line) in to.iter().enumerate() {
                lines[start + offset] = (*line).to_owned();
            }
        }
    }
    let mut edited = lines.join("\n");
    edited.push('\n');
    if edited != text {
        changes.put(file, edited);
    }
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
