//! What becomes of one scaffolded file in an upgrade, from three texts: what the old kopgen
//! wrote (the base), the file now (ours), and what this kopgen writes for the same PROJECT
//! (theirs). The user's changes always win over silence: a file is replaced only when the user
//! never changed it, and removed only then.

/// The fate of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to write: the file is what this kopgen writes, or only the user changed it.
    Unchanged,
    /// The user never changed it: this kopgen's text replaces it.
    Replace(String),
    /// Both changed it, in different places: the user's changes on top of this kopgen's.
    Merged(String),
    /// Both changed the same lines: the file with conflict markers.
    Conflict(String),
    /// New in this kopgen.
    Create(String),
    /// No longer scaffolded, and the user never changed it.
    Delete,
    /// No longer scaffolded, but the user changed it: it stays, and `diff` (unified, from what
    /// the old kopgen wrote) shows what the user changed.
    KeptChanged { diff: String },
    /// The user deleted a file this kopgen writes differently now: it is not brought back.
    KeptDeleted,
    /// Not merged, kept as it is (too large to merge, a link, not a file, unreadable), and why.
    Kept(&'static str),
}

/// Decides the fate of a file from its base, ours and theirs (`None`: no such file). A file
/// the user has with CRLF line endings (a Windows checkout, `core.autocrlf`) is compared and
/// merged line by line as the same text with LF, and what is written keeps its CRLF.
pub fn decide(base: Option<&str>, ours: Option<&str>, theirs: Option<&str>) -> Outcome {
    let Some(lf) = ours
        .filter(|ours| ours.contains("\r\n"))
        .map(|o| o.replace("\r\n", "\n"))
    else {
        return decide_lf(base, ours, theirs);
    };
    let crlf = |text: String| text.replace("\r\n", "\n").replace('\n', "\r\n");
    match decide_lf(base, Some(&lf), theirs) {
        Outcome::Replace(text) => Outcome::Replace(crlf(text)),
        Outcome::Merged(text) => Outcome::Merged(crlf(text)),
        Outcome::Conflict(text) => Outcome::Conflict(crlf(text)),
        other => other,
    }
}

fn decide_lf(base: Option<&str>, ours: Option<&str>, theirs: Option<&str>) -> Outcome {
    if ours == theirs {
        return Outcome::Unchanged;
    }
    match (base, ours, theirs) {
        (None, None, Some(theirs)) => Outcome::Create(theirs.to_owned()),
        (Some(base), None, Some(theirs)) if base != theirs => Outcome::KeptDeleted,
        (_, None, _) => Outcome::Unchanged,
        (None, Some(_), None) => Outcome::Unchanged,
        (Some(base), Some(ours), None) if base == ours => Outcome::Delete,
        (Some(base), Some(ours), None) => Outcome::KeptChanged {
            diff: diffy::create_patch(base, ours).to_string(),
        },
        (Some(base), Some(ours), Some(theirs)) if base == ours => {
            Outcome::Replace(theirs.to_owned())
        }
        (Some(base), Some(_), Some(theirs)) if base == theirs => Outcome::Unchanged,
        // A file of the user's where this kopgen now writes one: both kept, as a conflict.
        (base, Some(ours), Some(theirs)) => match diffy::merge(base.unwrap_or(""), ours, theirs) {
            Ok(merged) if merged == ours => Outcome::Unchanged,
            Ok(merged) => Outcome::Merged(merged),
            Err(conflicted) => Outcome::Conflict(conflicted),
        },
    }
}

/// Whether `text` still holds conflict markers a merge wrote (at the start of a line).
pub fn has_conflict_markers(text: &str) -> bool {
    text.lines()
        .any(|line| line.starts_with("<<<<<<< ") || line.starts_with(">>>>>>> "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "a\nb\nc\nd\ne\nf\n";

    #[test]
    fn a_file_the_user_never_changed_is_replaced() {
        let theirs = "a\nB\nc\nd\ne\nf\n";
        assert_eq!(
            decide(Some(BASE), Some(BASE), Some(theirs)),
            Outcome::Replace(theirs.into())
        );
    }

    #[test]
    fn a_file_only_the_user_changed_is_left_alone() {
        assert_eq!(
            decide(Some(BASE), Some("a\nmine\n"), Some(BASE)),
            Outcome::Unchanged
        );
    }

    #[test]
    fn changes_in_different_places_merge() {
        let ours = "a\nb\nc\nd\ne\nf\nmine\n";
        let theirs = "a\nB\nc\nd\ne\nf\n";
        assert_eq!(
            decide(Some(BASE), Some(ours), Some(theirs)),
            Outcome::Merged("a\nB\nc\nd\ne\nf\nmine\n".into())
        );
    }

    #[test]
    fn changes_to_the_same_lines_conflict_with_markers() {
        let Outcome::Conflict(text) = decide(
            Some(BASE),
            Some("a\nmine\nc\nd\ne\nf\n"),
            Some("a\nB\nc\nd\ne\nf\n"),
        ) else {
            panic!("a conflict");
        };
        assert!(has_conflict_markers(&text), "{text}");
        assert!(text.contains("mine") && text.contains("B"), "{text}");
    }

    #[test]
    fn a_file_no_longer_scaffolded_goes_only_if_unchanged() {
        assert_eq!(decide(Some(BASE), Some(BASE), None), Outcome::Delete);
        let Outcome::KeptChanged { diff } =
            decide(Some(BASE), Some("a\nb\nc\nd\ne\nf\nmine\n"), None)
        else {
            panic!("kept");
        };
        assert!(diff.contains("+mine"), "{diff}");
    }

    #[test]
    fn new_files_are_created_and_deleted_ones_stay_deleted() {
        assert_eq!(
            decide(None, None, Some("x\n")),
            Outcome::Create("x\n".into())
        );
        assert_eq!(decide(Some(BASE), None, Some("x\n")), Outcome::KeptDeleted);
        assert_eq!(decide(Some(BASE), None, Some(BASE)), Outcome::Unchanged);
        assert_eq!(decide(Some(BASE), None, None), Outcome::Unchanged);
    }

    #[test]
    fn a_users_file_where_kopgen_now_writes_one_conflicts() {
        assert!(matches!(
            decide(None, Some("mine\n"), Some("kopgen's\n")),
            Outcome::Conflict(_)
        ));
        assert_eq!(
            decide(None, Some("same\n"), Some("same\n")),
            Outcome::Unchanged
        );
    }

    #[test]
    fn a_second_run_changes_nothing() {
        let theirs = "a\nB\nc\nd\ne\nf\n";
        let Outcome::Merged(merged) =
            decide(Some(BASE), Some("a\nb\nc\nd\ne\nf\nmine\n"), Some(theirs))
        else {
            panic!("merged");
        };
        // After the upgrade the base is this kopgen's text.
        assert_eq!(
            decide(Some(theirs), Some(&merged), Some(theirs)),
            Outcome::Unchanged
        );
    }

    /// A CRLF checkout of an untouched file is untouched: replaced (with CRLF), never wrapped
    /// in conflict markers; the user's change in a CRLF file merges and keeps CRLF.
    #[test]
    fn crlf_files_merge_as_their_lf_text_and_keep_crlf() {
        let crlf = |text: &str| text.replace('\n', "\r\n");
        let theirs = "a\nB\nc\nd\ne\nf\n";
        assert_eq!(
            decide(Some(BASE), Some(&crlf(BASE)), Some(theirs)),
            Outcome::Replace(crlf(theirs))
        );
        assert_eq!(
            decide(Some(BASE), Some(&crlf(BASE)), Some(BASE)),
            Outcome::Unchanged
        );
        let ours = crlf("a\nb\nc\nd\ne\nf\nmine\n");
        assert_eq!(
            decide(Some(BASE), Some(&ours), Some(theirs)),
            Outcome::Merged(crlf("a\nB\nc\nd\ne\nf\nmine\n"))
        );
    }
}
