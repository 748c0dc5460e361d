//! The Kubernetes built-in kinds k8s-openapi provides, for controllers of core types
//! (`create api --resource=false`). The table is generated from k8s-openapi 0.29's sources
//! (feature `latest`), so the Rust path and scope we scaffold are the ones that compile.

/// One built-in kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKind {
    /// API group, `core` for the legacy group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// Full path of the k8s-openapi type.
    pub rust_path: &'static str,
}

static TABLE: &str = include_str!("data/k8s_kinds.tsv");

fn all() -> impl Iterator<Item = BuiltinKind> {
    TABLE
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut cols = line.split('\t');
            Some(BuiltinKind {
                group: cols.next()?,
                version: cols.next()?,
                kind: cols.next()?,
                plural: cols.next()?,
                namespaced: cols.next()? == "namespaced",
                rust_path: cols.next()?,
            })
        })
}

/// The short names of the built-in resources, as `kubectl api-resources` lists them for the
/// release k8s-openapi's `latest` feature targets. kubectl resolves a short name to the
/// built-in first (and warns), so a custom resource must not take one.
pub const SHORT_NAMES: &[&str] = &[
    "cm", "cj", "crd", "crds", "cs", "csr", "deploy", "ds", "ep", "ev", "hpa", "ing", "ip",
    "limits", "netpol", "no", "ns", "pc", "pdb", "po", "pv", "pvc", "quota", "rc", "rs", "sa",
    "sc", "sts", "svc", "vac",
];

/// Whether `name` (lowercase) is taken by a built-in resource: a short name, or the plural or
/// singular of a built-in kind.
pub fn is_builtin_name(name: &str) -> bool {
    SHORT_NAMES.contains(&name)
        || all().any(|k| k.plural == name || k.kind.eq_ignore_ascii_case(name))
}

/// Whether `kind` is a built-in kind without a namespace (in any group).
pub fn is_cluster_scoped(kind: &str) -> bool {
    all().any(|k| k.kind == kind && !k.namespaced)
}

/// Finds a built-in kind. `group` may be the full group (`networking.k8s.io`) or its first
/// label (`networking`), as Kubebuilder accepts for core types; `core` is the legacy group.
pub fn find(group: &str, version: &str, kind: &str) -> Option<BuiltinKind> {
    all().find(|k| {
        k.version == version
            && k.kind == kind
            && (k.group == group || k.group.split('.').next() == Some(group))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_core_and_grouped_kinds() {
        let deployment = find("apps", "v1", "Deployment").expect("Deployment");
        assert_eq!(
            deployment.rust_path,
            "k8s_openapi::api::apps::v1::Deployment"
        );
        assert!(deployment.namespaced);
        let cm = find("core", "v1", "ConfigMap").expect("ConfigMap");
        assert_eq!(cm.group, "core");
        let ingress = find("networking", "v1", "Ingress").expect("Ingress");
        assert_eq!(ingress.group, "networking.k8s.io");
        assert!(
            !find("core", "v1", "Namespace")
                .expect("Namespace")
                .namespaced
        );
        assert!(find("apps", "v1", "Blog").is_none());
    }
}
