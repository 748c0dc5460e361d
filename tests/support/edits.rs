//! A scaffolded Blog controller edited as a user would: shared by the tests and the benches, so
//! that both run the same operator.

use std::path::Path;

/// A second child for every Blog, a copy of the first.
pub const TWO_CHILDREN: &[(&str, &str)] = &[(
    "        Desired::new().child(ConfigMap {",
    "        let copy = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!(\"{name}-copy\")),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            data: Some(data.clone()),
            ..ConfigMap::default()
        };
        Desired::new().child(copy)?.child(ConfigMap {",
)];

/// Each `(scaffolded, written)` of `edits` replaces the scaffolded text once in `project`'s
/// Blog controller; a text the scaffold no longer has fails loudly.
pub fn edit_blog_controller(project: &Path, edits: &[(&str, &str)]) {
    edit_scaffolded(
        &project.join("src/controllers/apps/blog_controller.rs"),
        edits,
    );
}

/// Each `(scaffolded, written)` of `edits` replaces the scaffolded text once in the file at
/// `path`, as a user edits what kopgen wrote; a text the scaffold no longer has fails loudly.
pub fn edit_scaffolded(path: &Path, edits: &[(&str, &str)]) {
    let mut code = std::fs::read_to_string(path).expect("a scaffolded file");
    for (scaffolded, written) in edits {
        assert!(code.contains(scaffolded), "{scaffolded}\nnot in\n{code}");
        code = code.replacen(scaffolded, written, 1);
    }
    std::fs::write(path, code).expect("write the scaffolded file");
}
