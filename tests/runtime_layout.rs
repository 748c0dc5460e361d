//! The runtime's modules depend on each other one way: no two of its top-level modules use each
//! other, directly or through others (data flows one way; a cycle is a tangle a newcomer cannot
//! read in one order). Tests are left out: a module's tests may use anything.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// Each top-level module of the runtime, with the files of its code (not of its tests).
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("runtime/src") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() {
            let files = walk(&path);
            modules.insert(name, files);
        } else if name != "lib" && !is_test(&path) {
            modules.insert(name, vec![path]);
        }
    }
    modules
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a module directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() && !is_test(&path) {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test(&path) {
            files.push(path);
        }
    }
    files
}

fn is_test(path: &Path) -> bool {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    name == "tests" || name.ends_with("_tests")
}

/// The top-level modules among `names` that `code` uses (`crate::name`, or `name` first in a
/// `use crate::{…}` group), its inline `mod tests` left out.
fn used(code: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or(code);
    let paths = regex::Regex::new(r"crate::(\w+)").expect("a regex");
    let groups = regex::Regex::new(r"(?s)use crate::\{(.*?)\};").expect("a regex");
    let heads = regex::Regex::new(r"(?m)(?:^|[\s{,])(\w+)(?:::|\s*[,}]|\s*$)").expect("a regex");
    let mut used: BTreeSet<String> = (paths.captures_iter(code))
        .map(|c| c[1].to_owned())
        .collect();
    for group in groups.captures_iter(code) {
        used.extend(heads.captures_iter(&group[1]).map(|c| c[1].to_owned()));
    }
    used.retain(|name| names.contains(name));
    used
}

/// A cycle through `from`, as the modules on it, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut path = vec![from.to_owned()];
    let mut seen = BTreeSet::new();
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        from: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let last = path.last().cloned().unwrap_or_default();
        for next in graph.get(&last).into_iter().flatten() {
            if next == from {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if visit(graph, from, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    visit(graph, from, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_runtimes_modules_use_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let modules = modules(&src);
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = (modules.iter())
        .map(|(name, files)| {
            let mut uses = BTreeSet::new();
            for file in files {
                let code = std::fs::read_to_string(file).expect("a source file");
                uses.extend(used(&code, &names));
            }
            uses.remove(name);
            (name.clone(), uses)
        })
        .collect();
    assert!(
        graph
            .get("reconciler")
            .is_some_and(|uses| uses.contains("caches")),
        "the test reads the uses: {graph:?}"
    );
    for name in &names {
        if let Some(cycle) = cycle(&graph, name) {
            panic!("the runtime's modules use each other in a cycle: {cycle:?} -> {name}");
        }
    }
}

#[test]
fn a_cycle_is_found() {
    let names: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", used("use crate::{b::X, Error};", &names)),
        ("b", used("fn f() { crate::c::g() }", &names)),
        ("c", used("use crate::{\n    a,\n};", &names)),
    ]
    .map(|(name, uses)| (name.to_owned(), uses))
    .into();
    assert_eq!(
        cycle(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    let acyclic: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &[])]
            .map(|(name, uses)| {
                (
                    name.to_owned(),
                    uses.iter().map(|u| u.to_string()).collect(),
                )
            })
            .into();
    assert_eq!(cycle(&acyclic, "a"), None);
}
