//! stackable-versioned's `#[versioned(...)]`, which every Stackable operator writes instead of
//! `#[kube(...)]`: the attribute macro generates one module per version (`v1alpha1::Foo`), each
//! with the `#[kube(...)]` kube-derive reads, and changes fields per version. kopgen does not
//! expand macros; it reads what names the kind and its versions, so that the kind can be
//! compiled (`--derive=auto`) rather than refused with "#[kube] needs group".
//!
//! Two spellings are read: versions and `k8s(group = ..)` on the struct (stackable-versioned
//! 0.x), and versions on a module with `crd(group = ..)` on the struct inside it (later
//! releases, where the module is replaced by the version modules).

use syn::{Attribute, LitStr, meta::ParseNestedMeta};

/// What a `#[versioned(...)]` attribute says of a kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Versioned {
    /// `version(name = "v1alpha1")`, in the order written.
    pub versions: Vec<String>,
    /// The `k8s(...)` or `crd(...)` arguments, when the attribute has them.
    pub crd: Option<VersionedCrd>,
}

/// The keys of `k8s(...)`/`crd(...)` that name the CRD; the others are the macro's business.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionedCrd {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub plural: Option<String>,
    pub namespaced: bool,
}

/// The `#[versioned(...)]` among `attrs`, if there is one (`None` also when it does not parse:
/// the macro reports its own syntax errors when the crate compiles).
pub fn versioned(attrs: &[Attribute]) -> Option<Versioned> {
    let attr = attrs.iter().find(|a| a.path().is_ident("versioned"))?;
    let mut found = Versioned::default();
    attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("version") {
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("name") {
                    let name: LitStr = inner.value()?.parse()?;
                    found.versions.push(name.value());
                    Ok(())
                } else {
                    skip(&inner)
                }
            })
        } else if meta.path.is_ident("k8s") || meta.path.is_ident("crd") {
            let mut crd = VersionedCrd::default();
            meta.parse_nested_meta(|inner| {
                let string = |inner: &ParseNestedMeta| -> syn::Result<String> {
                    Ok(inner.value()?.parse::<LitStr>()?.value())
                };
                if inner.path.is_ident("group") {
                    crd.group = Some(string(&inner)?);
                } else if inner.path.is_ident("kind") {
                    crd.kind = Some(string(&inner)?);
                } else if inner.path.is_ident("plural") {
                    crd.plural = Some(string(&inner)?);
                } else if inner.path.is_ident("namespaced") && !inner.input.peek(syn::Token![=]) {
                    crd.namespaced = true;
                } else {
                    skip(&inner)?;
                }
                Ok(())
            })?;
            found.crd = Some(crd);
            Ok(())
        } else {
            skip(&meta)
        }
    })
    .ok()?;
    Some(found)
}

/// Consumes a key kopgen does not read, whatever its form: `key`, `key = value`, `key(...)`.
fn skip(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip(&inner))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(attr: &str) -> Option<Versioned> {
        let item: syn::ItemStruct =
            syn::parse_str(&format!("{attr}\nstruct FooSpec {{}}")).expect("item");
        versioned(&item.attrs)
    }

    #[test]
    fn both_spellings_are_read() {
        let old = parse(
            r#"#[versioned(version(name = "v1alpha1"), version(name = "v1", deprecated), k8s(group = "stackable.tech", plural = "foos", namespaced, crates(kube_core = ::kube::core), skip(merged_crd)))]"#,
        )
        .expect("parses");
        assert_eq!(old.versions, ["v1alpha1", "v1"]);
        let crd = old.crd.expect("k8s");
        assert_eq!(crd.group.as_deref(), Some("stackable.tech"));
        assert_eq!(crd.plural.as_deref(), Some("foos"));
        assert!(crd.namespaced);
        let new = parse(r#"#[versioned(crd(group = "zookeeper.stackable.tech", status = "Status", shortname = "zk"))]"#)
            .expect("parses");
        assert!(new.versions.is_empty());
        assert_eq!(
            new.crd.and_then(|c| c.group).as_deref(),
            Some("zookeeper.stackable.tech")
        );
        assert_eq!(parse("#[derive(Clone)]"), None);
    }
}
