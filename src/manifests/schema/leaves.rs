//! Library types (std, serde_json, jiff, k8s-openapi): their real schemas, generated once per
//! type, unless the crate picks a Kubernetes version in which a k8s-openapi type's schema is
//! not the one kopgen holds.

use proc_macro2::Span;

use super::*;
use crate::manifests::library::{k8s_types, k8s_versions};

impl Builder<'_> {
    /// The schema of the library type at `canonical`, or `None` when kopgen does not know it.
    pub(super) fn library_type(
        &mut self,
        file: &Path,
        span: Span,
        canonical: &str,
    ) -> Option<Result<Built, SourceError>> {
        let f = known::leaf(canonical)?;
        if let Some(version) = self.differs_in_k8s_version(canonical) {
            return Some(Err(SourceError::at(
                file,
                span,
                format!(
                    "`{canonical}` has another schema under k8s-openapi's feature `{version}`, \
                     which the crate enables, than under `latest` ({}), whose schemas kopgen has",
                    k8s_versions::LATEST
                ),
            )
            .help(
                "`--derive=auto` compiles the crate for this kind; or enable k8s-openapi's `latest` feature",
            )
            .unsupported()));
        }
        // Library schemas are the same wherever they are used: from the second use on
        // (`Condition` in every status), a copy of one generated before.
        if let Some(schema) = self.leaves.get(canonical) {
            return Some(Ok(plain(schema.clone())));
        }
        let schema = self.library.schema(f, &mut self.generator);
        self.leaves.computed(canonical.to_owned(), &schema);
        Some(Ok(plain(schema)))
    }

    /// The crate's Kubernetes version, if `path` is a k8s-openapi type whose schema differs
    /// there from `latest`'s.
    fn differs_in_k8s_version(&self, path: &str) -> Option<&str> {
        let version = self.k8s_version.as_deref()?;
        // k8s-openapi's own types (not the `jiff` it re-exports).
        k8s_types::lookup(path)?;
        let bit = k8s_versions::VERSIONS.iter().position(|v| *v == version);
        let same = bit.is_some_and(|bit| k8s_versions::same_as_latest(path) & (1 << bit) != 0);
        (!same).then_some(version)
    }
}
