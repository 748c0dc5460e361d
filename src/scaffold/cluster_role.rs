//! The self-managed certificate mode's ClusterRole, which names the CRDs whose conversion the
//! manager serves: a file kopgen writes whole, so it is replaced only while it holds what kopgen
//! wrote.

use super::edit::EditError;
use crate::{
    changeset::ChangeSet,
    templates::{self, Release},
};

/// The self-managed certificate's ClusterRole.
pub(super) const CLUSTER_ROLE: &str = "config/selfmanaged/cluster_role.yaml";
pub(super) const CLUSTER_ROLE_TEMPLATE: &str = "webhook/config/selfmanaged/cluster_role.yaml.tera";

/// Writes the [`CLUSTER_ROLE`] for the CRDs converted `now`. The file is kopgen's whole, so
/// it is replaced only while it holds what kopgen wrote (for the CRDs converted `before`, or
/// already `now`); a hand edit is refused without `force`, never lost.
pub(super) fn put(
    changes: &mut ChangeSet,
    release: Release,
    context: &tera::Context,
    before: &[String],
    now: &[String],
    force: bool,
) -> Result<(), EditError> {
    let render = |crds: &[String]| {
        let mut context = context.clone();
        context.insert("conversion_crds", crds);
        templates::render_of(release, CLUSTER_ROLE_TEMPLATE, &context)
    };
    let wanted = render(now)?;
    if let Some(text) = changes.read(CLUSTER_ROLE)?
        && !force
        && text != wanted
        && text != render(before)?
    {
        return Err(EditError::HandEdited(CLUSTER_ROLE.into()));
    }
    changes.put(CLUSTER_ROLE, wanted);
    Ok(())
}
