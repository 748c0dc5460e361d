//! The names a kind's files and templates need, derived once from its group, version and kind.

use heck::{ToKebabCase, ToSnakeCase};

use crate::{
    names,
    project::{Project, Resource},
};

/// The kind being scaffolded, with every name the templates need derived once.
pub(super) struct Kind {
    pub(super) group: String,
    pub(super) full_group: String,
    pub(super) version: String,
    pub(super) kind: String,
    pub(super) plural: String,
    pub(super) namespaced: bool,
    pub(super) group_mod: String,
    pub(super) version_mod: String,
    pub(super) kind_snake: String,
}

impl Kind {
    /// The kind a PROJECT entry of this project's own types describes.
    pub(super) fn of(resource: &Resource) -> Self {
        Self::new(
            &resource.group,
            &resource.full_group(),
            &resource.version,
            &resource.kind,
            resource.plural(),
            resource.api.as_ref().is_some_and(|a| a.namespaced),
        )
    }

    pub(super) fn new(
        group: &str,
        full_group: &str,
        version: &str,
        kind: &str,
        plural: String,
        namespaced: bool,
    ) -> Self {
        Self {
            group: group.to_owned(),
            full_group: full_group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural,
            namespaced,
            group_mod: names::module_name(group),
            version_mod: names::module_name(version),
            kind_snake: names::module_name(kind),
        }
    }

    /// The kind's line in the project's `tests/crds.rs` (the drift test): its `crd()` by the
    /// path the crate's code names it, which `create api` adds and `delete api` removes.
    pub(super) fn crd_entry(&self, project: &Project) -> String {
        format!(
            "{}::api::{}::{}::{}::crd(),",
            project.project_name.replace('-', "_"),
            self.group_mod,
            self.version_mod,
            self.kind
        )
    }

    pub(super) fn context(&self, project: &Project, header: &str) -> tera::Context {
        let mut context = tera::Context::new();
        context.insert("header", header);
        context.insert("project_name", &project.project_name);
        context.insert("crate_name", &project.project_name.replace('-', "_"));
        context.insert("domain", &project.domain);
        context.insert("group", &self.group);
        context.insert("full_group", &self.full_group);
        context.insert("version", &self.version);
        context.insert("kind", &self.kind);
        context.insert("kind_snake", &self.kind_snake);
        context.insert("object_var", &object_var(&self.kind_snake));
        context.insert("kind_kebab", &self.kind.to_kebab_case());
        context.insert("plural", &self.plural);
        context.insert(
            "plural_ident",
            &names::module_name(&self.plural.replace('-', "_")),
        );
        context.insert("namespaced", &self.namespaced);
        context.insert("group_mod", &self.group_mod);
        context.insert("version_mod", &self.version_mod);
        context.insert("shortname", &shortname(&self.kind));
        context.insert("storage", &true);
        context
    }
}

/// The name of the reconciled object in the controller's functions: the kind in snake case
/// (`blog`), unless that is a name the scaffolded code uses for something else.
fn object_var(kind_snake: &str) -> String {
    const TAKEN: &[&str] = &[
        "ctx",
        "data",
        "name",
        "namespace",
        "observed",
        "value",
        "object",
        "reconciler",
    ];
    if TAKEN.contains(&kind_snake) {
        format!("this_{kind_snake}")
    } else {
        kind_snake.to_owned()
    }
}

/// Initials of a multi-word kind (`BackupPolicy` → `bp`), the way built-in short names look;
/// single-word kinds get none, since their singular name is already short, and neither do
/// kinds whose initials a built-in resource holds (`CronJob`'s `cj`: kubectl would list the
/// built-ins for it).
fn shortname(kind: &str) -> Option<String> {
    let initials = kind
        .chars()
        .filter(char::is_ascii_uppercase)
        .collect::<String>()
        .to_ascii_lowercase();
    (initials.len() >= 2 && !crate::k8s_kinds::is_builtin_name(&initials)).then_some(initials)
}

/// `config/samples/<group>_<version>_<kind>.yaml`, Kubebuilder's sample name.
pub(crate) fn sample_file(group: &str, version: &str, kind: &str) -> String {
    format!("{group}_{version}_{}.yaml", kind.to_snake_case())
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_names_never_take_a_built_in_one() {
        assert_eq!(super::shortname("BackupPolicy").as_deref(), Some("bp"));
        assert_eq!(super::shortname("CronJob"), None, "batch/v1 CronJob's cj");
        assert_eq!(super::shortname("ServiceAccount"), None);
        assert_eq!(super::shortname("PersistentVolumeClaim"), None);
        assert_eq!(super::shortname("Blog"), None);
    }
}
