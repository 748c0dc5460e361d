//! Where comment markers (`// +kopgen:rbac:..`, `// +kubebuilder:webhook:..`) count: in the
//! code rustc compiles into the operator, as controller-gen reads them only from the packages
//! it loads. A marker in a file no `mod` declares, in `#[cfg(test)]` code or behind a feature
//! the build leaves off grants nothing; one in `main.rs` (a crate of its own) does.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Options, cfg::Cfg, discover::Source, error::ManifestError, index::Index};

/// The files of `crates` that rustc compiles, each with the lines of the items it leaves out
/// blanked (so line numbers stay those of the file), in path order and each file once.
pub fn compiled(crates: &[Vec<Source>], options: &Options) -> Result<Vec<Source>, ManifestError> {
    let cfg = Cfg::new(options.manifest.as_deref(), &options.features);
    let mut compiled: BTreeMap<PathBuf, Source> = BTreeMap::new();
    let mut errors = Vec::new();
    for sources in crates {
        let (index, found) = Index::read(sources, cfg.clone());
        // Code kopgen cannot derive from (a macro, a hand-written schema) still has its
        // markers; only what rustc would refuse to read is an error here.
        errors.extend(found.into_iter().filter(|e| !e.unsupported));
        for (file, source) in sources.iter().enumerate() {
            let is_compiled = index
                .file_scopes
                .iter()
                .any(|(f, module)| *f == file && index.is_compiled(module));
            if !is_compiled || compiled.contains_key(&source.path) {
                continue;
            }
            let excluded: Vec<(usize, usize)> = index
                .excluded_lines
                .iter()
                .filter(|(f, ..)| *f == file)
                .map(|&(_, first, last)| (first, last))
                .collect();
            let text = blank_lines(&source.text, &excluded);
            compiled.insert(
                source.path.clone(),
                Source {
                    text,
                    ..source.clone()
                },
            );
        }
    }
    if errors.is_empty() {
        Ok(compiled.into_values().collect())
    } else {
        super::error::sort_by_place(&mut errors);
        Err(ManifestError::Many(errors))
    }
}

/// `text` with the lines in `ranges` (1-based, inclusive) emptied and every line break kept.
fn blank_lines(text: &str, ranges: &[(usize, usize)]) -> String {
    if ranges.is_empty() {
        return text.to_owned();
    }
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, line)| {
            let number = i + 1;
            if ranges.iter().any(|&(a, b)| (a..=b).contains(&number)) {
                if line.ends_with("\r\n") {
                    "\r\n"
                } else if line.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                line
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(path: &str, module: &str, text: &str) -> Source {
        Source {
            path: PathBuf::from(path),
            module: module.into(),
            text: text.into(),
        }
    }

    fn compiled_texts(sources: Vec<Source>) -> Vec<(String, String)> {
        compiled(&[sources], &Options::default())
            .expect("reads")
            .into_iter()
            .map(|s| (s.path.display().to_string(), s.text))
            .collect()
    }

    #[test]
    fn test_code_and_undeclared_files_are_left_out() {
        let lib = "pub mod api;\n// a\n#[cfg(test)]\nmod tests {\n    // b\n}\n// c\n";
        let texts = compiled_texts(vec![
            source("src/lib.rs", "crate", lib),
            source("src/api.rs", "crate::api", "// api\n"),
            source("src/stray.rs", "crate::stray", "// stray\n"),
        ]);
        assert_eq!(
            texts,
            vec![
                ("src/api.rs".into(), "// api\n".into()),
                (
                    "src/lib.rs".into(),
                    "pub mod api;\n// a\n\n\n\n\n// c\n".into()
                ),
            ]
        );
    }

    #[test]
    fn test_functions_in_impl_blocks_are_left_out() {
        let lib = "pub struct S;\nimpl S {\n    #[cfg(test)]\n    fn t() {\n        // b\n    }\n    // a\n}\n";
        let texts = compiled_texts(vec![source("src/lib.rs", "crate", lib)]);
        assert_eq!(texts[0].1, "pub struct S;\nimpl S {\n\n\n\n\n    // a\n}\n");
    }

    #[test]
    fn without_a_crate_root_every_file_counts() {
        let texts = compiled_texts(vec![source("x/a.rs", "crate::a", "// a\n")]);
        assert_eq!(texts.len(), 1);
    }

    #[test]
    fn blanking_keeps_line_breaks() {
        assert_eq!(blank_lines("a\r\nb\nc", &[(2, 3)]), "a\r\n\n");
    }
}
