//! Validation of the names users type on the command line.
//!
//! Every check returns a [`NameError`] whose message says what was wrong *and* what is
//! allowed, because the user has to fix the flag without reading our source.

use thiserror::Error;

/// A rejected name. Callers branch on the variant (tests do), users read the message.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum NameError {
    #[error(
        "invalid domain {0:?}: a domain must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', \
         each dot-separated part starting and ending with a letter or digit, at most 253 characters (e.g. example.com)"
    )]
    Domain(String),
    #[error(
        "invalid project name {0:?}: it must be a DNS-1123 label that is also a crate name: lowercase letters, \
         digits and '-', starting with a letter, ending with a letter or digit, at most 63 characters (e.g. blog-operator); \
         pass --project-name to choose one"
    )]
    ProjectName(String),
    #[error(
        "invalid project name {0:?}: {1} is reserved by Rust or Cargo; pass --project-name with another name"
    )]
    ReservedProjectName(String, &'static str),
    #[error(
        "invalid project name {0:?}: every kopgen project depends on the crate of that name, and a package cannot \
         depend on one of its own name; pass --project-name with another name"
    )]
    DependencyName(String),
    #[error(
        "invalid group {0:?}: a group must be a DNS-1123 label: lowercase letters, digits and '-', starting with a \
         letter, ending with a letter or digit, at most 63 characters (e.g. apps, batch, web-tools)"
    )]
    Group(String),
    #[error(
        "invalid version {0:?}: a version is 'v' followed by a major number, optionally 'alpha' or 'beta' and a \
         number, with no leading zeros (e.g. v1, v2beta1, v1alpha1)"
    )]
    Version(String),
    #[error(
        "invalid kind {0:?}: a kind is PascalCase: it starts with an uppercase ASCII letter and contains only ASCII \
         letters and digits (e.g. Blog, CronJob)"
    )]
    Kind(String),
    #[error(
        "invalid kind {0:?}: a kind may have at most 62 characters, so that its plural (one or two more) fits the 63 \
         characters Kubernetes allows; choose a shorter kind"
    )]
    KindTooLong(String),
    #[error(
        "invalid kind {0:?}: it is a Rust keyword or a name the generated code needs; choose another kind"
    )]
    ReservedKind(String),
    #[error(
        "invalid kind {0:?}: kinds ending in 'List' clash with the list type Kubernetes derives for kind {1:?}; choose another kind"
    )]
    ListSuffix(String, String),
    #[error(
        "invalid plural {0:?}: a plural must be a lowercase DNS-1123 label (letters, digits, '-'; e.g. blogs)"
    )]
    Plural(String),
    #[error(
        "the CRD name {0:?} would be longer than 195 characters (Kubernetes allows 253 for <plural>.<group>, but the file \
         config/crd/bases/<group>_<plural>.yaml must fit a file name with room for kopgen's staging suffix); choose a \
         shorter domain, group or plural"
    )]
    CrdName(String),
    #[error(
        "invalid owner {0:?}: the copyright holder goes into a comment line of every file, so it must be one line of \
         printable text without control characters or invisible bidirectional and zero-width formatting (which can \
         make a file read differently than it compiles), at most 200 characters (e.g. \"Example Corp\")"
    )]
    Owner(String),
}

/// Whether `s` is a DNS-1123 label (RFC 1123, as Kubernetes validates names).
pub fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// Whether `s` is a DNS-1123 subdomain as Kubernetes' `IsDNS1123Subdomain` reads it: at most 253
/// characters of dot-separated runs of lowercase letters, digits and '-', each starting and
/// ending with a letter or digit (a run may be longer than a label's 63 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|run| {
            let bytes = run.as_bytes();
            bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

/// A label or annotation key: an optional DNS-1123 subdomain prefix and `/`, then a name of
/// at most 63 alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns1123_subdomain) && !name.is_empty() && is_label_value(name)
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_' and '.', starting and ending
/// with an alphanumeric.
pub fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    value.is_empty()
        || (value.len() <= 63
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric))
}

/// The longest CRD name kopgen writes a file for: its file, `<group>_<plural>.yaml`, is then
/// [`crate::changeset::MAX_FILE_NAME`] bytes long.
pub const MAX_CRD_NAME: usize = crate::changeset::MAX_FILE_NAME - "_.yaml".len() + 1;

/// The name of the CRD of a kind, `<plural>.<group>`: a DNS-1123 subdomain short enough that
/// its file name fits too.
pub fn validate_crd_name(plural: &str, full_group: &str) -> Result<(), NameError> {
    let name = format!("{plural}.{full_group}");
    if name.len() <= MAX_CRD_NAME && is_dns1123_subdomain(&name) {
        Ok(())
    } else {
        Err(NameError::CrdName(name))
    }
}

/// The copyright holder written into each file's header comment: one printable line.
pub fn validate_owner(owner: &str) -> Result<(), NameError> {
    if owner.chars().count() <= 200
        && !owner
            .chars()
            .any(|c| c.is_control() || is_invisible_format(c))
    {
        Ok(())
    } else {
        Err(NameError::Owner(owner.to_owned()))
    }
}

/// Bidirectional overrides and isolates (the "Trojan Source" characters), marks, zero-width
/// characters and the byte-order mark: text that displays differently from what it is.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
    )
}

pub fn validate_domain(domain: &str) -> Result<(), NameError> {
    if is_dns1123_subdomain(domain) {
        Ok(())
    } else {
        Err(NameError::Domain(domain.to_owned()))
    }
}

/// Names Cargo refuses for a package, or that would shadow a crate every project links.
const RESERVED_CRATE_NAMES: &[&str] = &[
    "alloc",
    "core",
    "proc-macro",
    "proc_macro",
    "std",
    "test",
    "build",
    "deps",
    "examples",
    "incremental",
];

/// The scaffolded project's dependencies (templates/init/Cargo.toml.tera): a package cannot
/// depend on a crate of its own name.
const DEPENDENCIES: &[&str] = &[
    "anyhow",
    "clap",
    "kopgen-runtime",
    "kube",
    "k8s-openapi",
    "schemars",
    "serde",
    "serde-json",
    "tokio",
    "tracing",
];

pub fn validate_project_name(name: &str) -> Result<(), NameError> {
    if !is_dns1123_label(name) || !name.as_bytes()[0].is_ascii_lowercase() {
        return Err(NameError::ProjectName(name.to_owned()));
    }
    if is_rust_keyword(&name.replace('-', "_")) {
        return Err(NameError::ReservedProjectName(
            name.to_owned(),
            "it is a Rust keyword and",
        ));
    }
    if DEPENDENCIES.contains(&name) {
        return Err(NameError::DependencyName(name.to_owned()));
    }
    if RESERVED_CRATE_NAMES.contains(&name) {
        return Err(NameError::ReservedProjectName(
            name.to_owned(),
            "it is a crate name that",
        ));
    }
    Ok(())
}

pub fn validate_group(group: &str) -> Result<(), NameError> {
    if is_dns1123_label(group) && group.as_bytes()[0].is_ascii_lowercase() {
        Ok(())
    } else {
        Err(NameError::Group(group.to_owned()))
    }
}

/// Kubernetes API versions: `v1`, `v2beta3`, `v1alpha1` (no leading zeros, non-zero major).
pub fn validate_version(version: &str) -> Result<(), NameError> {
    let err = || NameError::Version(version.to_owned());
    let rest = version.strip_prefix('v').ok_or_else(err)?;
    let major_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = rest.split_at(major_len);
    if !is_positive_number(major) {
        return Err(err());
    }
    if rest.is_empty() {
        return Ok(());
    }
    let minor = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"))
        .ok_or_else(err)?;
    if is_positive_number(minor) {
        Ok(())
    } else {
        Err(err())
    }
}

fn is_positive_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0')
}

/// Kinds become Rust type names (`Blog`, `BlogSpec`, `BlogStatus`), so they must be PascalCase
/// identifiers that do not collide with what the generated code itself declares.
pub fn validate_kind(kind: &str) -> Result<(), NameError> {
    let mut chars = kind.chars();
    let starts_upper = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    if !starts_upper || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(NameError::Kind(kind.to_owned()));
    }
    if kind.len() > 62 {
        return Err(NameError::KindTooLong(kind.to_owned()));
    }
    if is_rust_keyword(kind) {
        return Err(NameError::ReservedKind(kind.to_owned()));
    }
    if let Some(base) = kind.strip_suffix("List")
        && !base.is_empty()
    {
        return Err(NameError::ListSuffix(kind.to_owned(), base.to_owned()));
    }
    Ok(())
}

/// A kind whose types kopgen scaffolds: a valid kind ([`validate_kind`]) whose name the
/// generated code does not already use.
pub fn validate_new_kind(kind: &str) -> Result<(), NameError> {
    validate_kind(kind)?;
    if RESERVED_KINDS.contains(&kind) || crate::templates::names_in_scope_of_kinds().contains(kind)
    {
        return Err(NameError::ReservedKind(kind.to_owned()));
    }
    Ok(())
}

/// Names every Rust module has in scope (the prelude) and the types kube-derive generates next
/// to a kind; the names the scaffolded modules import come from the templates
/// ([`crate::templates::names_in_scope_of_kinds`]).
const RESERVED_KINDS: &[&str] = &[
    "Self",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "Vec",
    "String",
    "Box",
    "Default",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "Iterator",
    "IntoIterator",
    "Extend",
    "ToString",
    "ToOwned",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "AsRef",
    "AsMut",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Debug",
    "Hash",
    "List",
    "ObjectMeta",
    "Resource",
    "CustomResourceExt",
];

pub fn validate_plural(plural: &str) -> Result<(), NameError> {
    if is_dns1123_label(plural) {
        Ok(())
    } else {
        Err(NameError::Plural(plural.to_owned()))
    }
}

/// Rust's strict and reserved keywords in edition 2024.
pub fn is_rust_keyword(s: &str) -> bool {
    matches!(
        s,
        "as" | "break"
            | "const"
            | "continue"
            | "crate"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "async"
            | "await"
            | "dyn"
            | "abstract"
            | "become"
            | "box"
            | "do"
            | "final"
            | "macro"
            | "override"
            | "priv"
            | "typeof"
            | "unsized"
            | "virtual"
            | "yield"
            | "try"
            | "gen"
    )
}

/// A Rust module name for a group or version: snake case, with a trailing `_` where the
/// name is a keyword (`type` → `type_`), so any valid group yields a valid path.
pub fn module_name(s: &str) -> String {
    let snake = heck::ToSnakeCase::to_snake_case(s);
    if is_rust_keyword(&snake) {
        format!("{snake}_")
    } else {
        snake
    }
}

/// kube-derive's plural rule for a kind: its `to_plural` applied to the lowercased kind, so
/// the CRD name we scaffold matches the one `crd()` generates.
pub fn kube_plural(kind: &str) -> String {
    plural_of(&kind.to_ascii_lowercase())
}

/// kube-derive 5's `to_plural`, applied as-is (kube-derive uses it on `singular` too).
pub fn plural_of(word: &str) -> String {
    if word.ends_with('s')
        || word.ends_with('x')
        || word.ends_with('z')
        || word.ends_with("ch")
        || word.ends_with("sh")
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y')
        && stem
            .chars()
            .last()
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'))
    {
        return format!("{stem}ies");
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {

    /// Kinds whose names the generated code already uses are refused: what the templates
    /// import, the prelude, and what kube-derive generates.
    #[test]
    fn a_project_cannot_take_the_name_of_a_crate_it_depends_on() {
        for name in ["kopgen-runtime", "kube", "tokio", "serde-json"] {
            let error = validate_project_name(name).expect_err(name).to_string();
            assert!(
                error.contains("depends on the crate of that name"),
                "{error}"
            );
        }
        assert!(validate_project_name("kopgen-runtime-demo").is_ok());
    }

    #[test]
    fn kinds_that_would_clash_with_generated_code_are_refused() {
        for kind in [
            "JsonSchema",
            "Serialize",
            "Deserialize",
            "CustomResource",
            "ConfigMap",
            "Reconcile",
            "Start",
            "ResourceExt",
            "ObjectMeta",
            "None",
            "Some",
            "Ok",
            "Err",
            "Default",
            "Context",
            "Condition",
            "Self",
            // What the webhook modules import beside the kind.
            "Review",
            "Routes",
            "Verdict",
            "Defaulter",
        ] {
            assert_eq!(
                validate_new_kind(kind),
                Err(NameError::ReservedKind(kind.to_owned())),
                "{kind}"
            );
        }
        for kind in [
            "Blog",
            "Widget",
            "Backup",
            "Database",
            "Deployment",
            "Service",
        ] {
            assert_eq!(validate_new_kind(kind), Ok(()), "{kind}");
        }
    }

    use super::*;

    #[test]
    fn versions() {
        for ok in ["v1", "v2", "v1alpha1", "v1beta2", "v10beta10"] {
            assert_eq!(validate_version(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "1", "v", "v0", "v01", "V1", "v1gamma1", "v1alpha", "v1alpha0", "v1beta01",
            "v1-beta1",
        ] {
            assert!(validate_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        assert!(validate_kind("Blog").is_ok());
        assert!(validate_kind("CronJob2").is_ok());
        assert_eq!(validate_kind("blog"), Err(NameError::Kind("blog".into())));
        assert_eq!(
            validate_kind("Self"),
            Err(NameError::ReservedKind("Self".into()))
        );
        assert!(matches!(
            validate_kind("BlogList"),
            Err(NameError::ListSuffix(..))
        ));
        assert!(validate_kind("Blog-Post").is_err());
        assert!(validate_kind("").is_err());
    }

    #[test]
    fn plurals_follow_kube_derive() {
        for (kind, plural) in [
            ("Blog", "blogs"),
            ("Ingress", "ingresses"),
            ("Box", "boxes"),
            ("Policy", "policies"),
            ("Gateway", "gateways"),
            ("Patch", "patches"),
            ("Mesh", "meshes"),
            ("Quiz", "quizes"),
            ("Y", "ys"),
        ] {
            assert_eq!(kube_plural(kind), plural);
        }
    }

    #[test]
    fn names() {
        assert!(validate_domain("example.com").is_ok());
        assert!(validate_domain("Example.com").is_err());
        assert!(validate_domain("example..com").is_err());
        assert!(validate_domain("-a.com").is_err());
        assert!(validate_project_name("blog-operator").is_ok());
        assert!(validate_project_name("1blog").is_err());
        assert!(validate_project_name("blog_operator").is_err());
        assert!(validate_project_name("test").is_err());
        assert!(validate_project_name("fn").is_err());
        assert!(validate_group("apps").is_ok());
        assert!(validate_group("apps.example").is_err());
        assert_eq!(module_name("type"), "type_");
        assert_eq!(module_name("web-tools"), "web_tools");
    }
}
