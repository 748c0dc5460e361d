//! The API server's rules for the names and paths `#[kube(...)]` puts in a CRD, checked where
//! they enter: a CRD the server would refuse is an error at the attribute, and a file name
//! built from them (`<group>_<plural>.yaml`) can never leave the output directory.

use crate::names::{is_dns1123_label, is_dns1123_subdomain};

use super::attrs::KubeAttrs;

/// Printer column types the API server accepts.
const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];

/// Printer column formats the API server accepts.
const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
];

/// A name the API server refuses: what it is, and the rule it breaks (with how to fix it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub message: String,
    pub help: &'static str,
}

/// Whether `s` is a DNS-1035 label: a DNS-1123 label that starts with a letter.
fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// Every rule `attrs` (with its plural and singular already defaulted) breaks.
pub fn check(attrs: &KubeAttrs, plural: &str, singular: &str) -> Vec<Broken> {
    let mut broken = Vec::new();
    let mut push = |message: String, help: &'static str| broken.push(Broken { message, help });
    let group = attrs.group.as_deref().unwrap_or_default();
    if !is_dns1123_subdomain(group) || !group.contains('.') {
        push(
            format!("group {group:?} is not a DNS-1123 subdomain with at least one dot"),
            "a group is lowercase letters, digits, '-' and '.', like apps.example.com (at most 253 characters)",
        );
    }
    let version = attrs.version.as_deref().unwrap_or_default();
    if !is_dns1035_label(version) {
        push(
            format!("version {version:?} is not a DNS-1035 label"),
            "a version is lowercase letters, digits and '-', starting with a letter, like v1 or v1alpha1 (at most 63 characters)",
        );
    }
    let kind = attrs.kind.as_deref().unwrap_or_default();
    if !is_dns1035_label(&kind.to_ascii_lowercase())
        || kind.contains('-')
        || !kind.starts_with(|c: char| c.is_ascii_uppercase())
    {
        push(
            format!("kind {kind:?} is not a PascalCase name of at most 63 letters and digits"),
            "a kind starts with an uppercase letter and has only ASCII letters and digits, like Blog",
        );
    }
    for (what, name) in [("plural", plural), ("singular", singular)] {
        if !is_dns1035_label(name) {
            push(
                format!("{what} {name:?} is not a DNS-1035 label"),
                "plural, singular, short names and categories are lowercase letters, digits and '-', starting with a letter (at most 63 characters)",
            );
        }
    }
    for (what, names) in [
        ("short name", &attrs.shortnames),
        ("category", &attrs.categories),
    ] {
        for name in names.iter().filter(|n| !is_dns1035_label(n)) {
            push(
                format!("{what} {name:?} is not a DNS-1035 label"),
                "plural, singular, short names and categories are lowercase letters, digits and '-', starting with a letter (at most 63 characters)",
            );
        }
    }
    let crd_name = format!("{plural}.{group}");
    // The file kopgen writes, `<group>_<plural>.yaml`, must fit a file name too.
    if crd_name.len() > crate::names::MAX_CRD_NAME {
        push(
            format!(
                "the CRD name {crd_name:?} is longer than {} characters",
                crate::names::MAX_CRD_NAME
            ),
            "shorten the group or the plural: a CRD is named <plural>.<group>, and its file <group>_<plural>.yaml must fit a file name with room for kopgen's staging suffix",
        );
    }
    for column in &attrs.printcolumns {
        if column.name.trim().is_empty() {
            push(
                "a printcolumn has no name".to_owned(),
                "give each printer column a name, like \"name\": \"Replicas\"",
            );
        }
        if !COLUMN_TYPES.contains(&column.type_.as_str()) {
            push(
                format!("printcolumn {:?} has type {:?}", column.name, column.type_),
                "a printer column's type_ is one of integer, number, string, boolean, date",
            );
        }
        if let Some(format) = column
            .format
            .as_deref()
            .filter(|f| !COLUMN_FORMATS.contains(f))
        {
            push(
                format!("printcolumn {:?} has format {format:?}", column.name),
                "a printer column's format is one of int32, int64, float, double, byte, date, date-time, password",
            );
        }
        if !column.json_path.starts_with('.') {
            push(
                format!(
                    "printcolumn {:?} has json_path {:?}",
                    column.name, column.json_path
                ),
                "a printer column's json_path starts with '.', like .status.replicas",
            );
        }
    }
    for path in attrs.selectable.iter().filter(|p| !p.starts_with('.')) {
        push(
            format!("selectable field {path:?} is not a JSON path"),
            "a selectable field is a path starting with '.', like .spec.color",
        );
    }
    if let Some(scale) = &attrs.scale {
        let paths = [
            (
                "spec_replicas_path",
                Some(&scale.spec_replicas_path),
                ".spec.",
            ),
            (
                "status_replicas_path",
                Some(&scale.status_replicas_path),
                ".status.",
            ),
            (
                "label_selector_path",
                scale.label_selector_path.as_ref(),
                "",
            ),
        ];
        for (key, path, prefix) in paths {
            let Some(path) = path else { continue };
            let ok = if prefix.is_empty() {
                path.starts_with(".spec.") || path.starts_with(".status.")
            } else {
                path.starts_with(prefix)
            };
            if !ok {
                push(
                    format!("scale {key} {path:?} is not a path the API server accepts"),
                    "spec_replicas_path starts with .spec., status_replicas_path with .status., label_selector_path with either",
                );
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(group: &str, version: &str, kind: &str) -> KubeAttrs {
        KubeAttrs {
            group: Some(group.into()),
            version: Some(version.into()),
            kind: Some(kind.into()),
            ..Default::default()
        }
    }

    #[test]
    fn names_that_would_leave_the_output_directory_are_refused() {
        for group in [
            "../../src/evil",
            "/etc",
            "a/b.example.com",
            "example",
            "Example.com",
        ] {
            assert!(
                !check(&attrs(group, "v1", "Foo"), "foos", "foo").is_empty(),
                "{group}"
            );
        }
        assert!(check(&attrs("apps.example.com", "v1", "Foo"), "foos", "foo").is_empty());
        assert!(!check(&attrs("a.example.com", "v1", "Foo"), "../foos", "foo").is_empty());
    }

    #[test]
    fn lengths_follow_the_api_server() {
        let long_kind = format!("K{}", "a".repeat(63));
        assert!(!check(&attrs("a.example.com", "v1", &long_kind), "ks", "k").is_empty());
        let long_group = format!("{}.example.com", "a".repeat(250));
        assert!(!check(&attrs(&long_group, "v1", "Foo"), "foos", "foo").is_empty());
        assert!(!check(&attrs("a.example.com", "V1", "Foo"), "foos", "foo").is_empty());
    }
}
