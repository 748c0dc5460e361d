//! Kubebuilder markers kopgen does not read. A Kubebuilder user writes
//! `// +kubebuilder:validation:Minimum=1` above a field by habit; in Rust the schema comes
//! from attributes, so such a comment would do nothing. Each one is reported at its line with
//! the attribute to write instead, never ignored without a word. (The RBAC and webhook markers
//! are read: see `rbac` and `webhooks`.)

use std::path::Path;

use crate::markers;

/// The markers reported: Kubebuilder's own, and the Kubernetes API conventions' markers that
/// controller-gen reads on Go types.
const PREFIXES: &[&str] = &[
    "+kubebuilder:",
    "+optional",
    "+required",
    "+listType",
    "+listMapKey",
    "+mapType",
    "+structType",
    "+default",
    "+groupName",
    "+versionName",
];

/// The markers kopgen reads itself, which are not reported.
const READ: &[&str] = &[
    "+kubebuilder:rbac:",
    "+kubebuilder:webhook:",
    "+kubebuilder:webhookconfiguration:",
];

/// One marker that does nothing in Rust, with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub line: usize,
    pub column: usize,
    pub marker: String,
    pub instead: &'static str,
}

/// The markers of `text` that kopgen does not read.
pub fn find(text: &str) -> Vec<Unread> {
    markers::find(text, PREFIXES)
        .into_iter()
        .map(|m| {
            let marker = format!("{}{}", m.prefix, m.body);
            (m, marker)
        })
        .filter(|(_, marker)| !READ.iter().any(|r| marker.starts_with(r)))
        .map(|(m, marker)| Unread {
            line: m.line,
            column: m.column,
            instead: instead(&marker),
            marker,
        })
        .collect()
}

/// `file:line:col: ...` lines for every unread marker of `text`.
pub fn report(file: &Path, text: &str) -> Vec<String> {
    find(text)
        .into_iter()
        .map(|u| {
            format!(
                "warning[kubebuilder-marker]: {}:{}:{}: `// {}` does nothing in Rust: kopgen derives the schema from the types and their attributes\n  help: {}",
                file.display(),
                u.line,
                u.column,
                u.marker,
                u.instead
            )
        })
        .collect()
}

/// The Rust attribute that does what `marker` does in Go.
fn instead(marker: &str) -> &'static str {
    let name = marker
        .trim_start_matches('+')
        .trim_start_matches("kubebuilder:")
        .trim_start_matches("validation:");
    let key = name
        .split(['=', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match key.as_str() {
        "minimum" | "maximum" => {
            "write `#[schemars(range(min = 1, max = 10))]` on the field (kube-derive puts it in the CRD)"
        }
        "exclusiveminimum" | "exclusivemaximum" | "multipleof" | "minproperties"
        | "maxproperties" | "uniqueitems" | "format" | "type" | "nullable" => {
            "write `#[schemars(extend(\"<keyword>\" = <value>))]` on the field, e.g. `#[schemars(extend(\"format\" = \"date-time\"))]`"
        }
        "minlength" | "maxlength" | "minitems" | "maxitems" => {
            "write `#[schemars(length(min = 1, max = 63))]` on the field (strings and lists alike)"
        }
        "pattern" => "write `#[schemars(regex(pattern = r\"^[a-z]+$\"))]` on the field",
        "enum" => {
            "make the field's type a Rust enum deriving JsonSchema: its variants are the enum"
        }
        "xvalidation" => {
            "write `#[x_kube(validation = \"self.min <= self.max\")]` on the struct or field (kube-derive's CEL rules)"
        }
        "xpreserveunknownfields" | "xembeddedresource" | "xintorstring" => {
            "write `#[schemars(extend(\"x-kubernetes-preserve-unknown-fields\" = true))]` (or the matching `x-kubernetes-*` key) on the field"
        }
        "default" => {
            "write `#[serde(default = \"default_fn\")]` on the field (its value becomes the schema's default), or `#[schemars(extend(\"default\" = ..))]`"
        }
        "optional" => "make the field an `Option<T>` (kube-derive leaves it out of `required`)",
        "required" => "make the field a non-`Option` type without `#[serde(default)]`",
        "listtype" | "listmapkey" | "maptype" | "structtype" => {
            "write `#[schemars(extend(\"x-kubernetes-list-type\" = \"map\", \"x-kubernetes-list-map-keys\" = [\"name\"]))]` (or the matching `x-kubernetes-*` key) on the field"
        }
        "printcolumn" => {
            "write `#[kube(printcolumn = r#\"{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"}\"#)]` on the spec"
        }
        "subresource" => {
            "write `#[kube(status = \"KindStatus\")]` (status) or `#[kube(scale(..))]` (scale) on the spec"
        }
        "resource" => {
            "write `#[kube(namespaced, shortname = \"..\", category = \"..\", plural = \"..\", singular = \"..\")]` on the spec"
        }
        "storageversion" => "write `#[kube(storage)]` on the stored version's spec",
        "deprecatedversion" => "write `#[kube(deprecated = \"warning\")]` on the version's spec",
        "selectablefield" => "write `#[kube(selectable = \".spec.field\")]` on the spec",
        "object" | "skipversion" | "skip" => {
            "remove it: `#[derive(CustomResource)]` makes the root type, and a type without it is no kind"
        }
        "groupname" | "versionname" => {
            "write `#[kube(group = \"..\", version = \"..\")]` on the spec"
        }
        _ => {
            "kopgen reads only the RBAC and webhook markers; write the matching `#[kube(..)]`, `#[schemars(..)]` or `#[serde(..)]` attribute"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_habit_is_reported_with_its_attribute() {
        let text = "\
/// Size.
// +kubebuilder:validation:Minimum=1
// +kubebuilder:default=3
// +optional
// +kubebuilder:printcolumn:name=\"Size\",type=integer,JSONPath=`.spec.size`
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get
// +kubebuilder:webhook:path=/x,mutating=true
// +kubebuilder:validation:XValidation:rule=\"self > 0\"
pub size: i32,
";
        let found = find(text);
        let at: Vec<(usize, &str)> = found.iter().map(|u| (u.line, u.instead)).collect();
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(at[0].1.contains("range(min"), "{at:?}");
        assert!(at[1].1.contains("serde(default"), "{at:?}");
        assert!(at[2].1.contains("Option<T>"), "{at:?}");
        assert!(at[3].1.contains("printcolumn"), "{at:?}");
        assert_eq!(at[4].0, 8);
        assert!(at[4].1.contains("x_kube(validation"), "{at:?}");
    }

    #[test]
    fn markers_in_strings_are_not_reported() {
        assert!(find("const S: &str = \"\n// +kubebuilder:validation:Minimum=1\n\";\n").is_empty());
    }
}
