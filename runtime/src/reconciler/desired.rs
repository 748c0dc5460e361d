//! What an object asks for ([`Desired`]): what `desired()` returns, as data, so that it stays
//! free of writes and a test can read it; the reconciler carries it out.

use std::{any::TypeId, time::Duration};

use kube::{ResourceExt, core::object::HasStatus};
use serde::Serialize;
use serde_json::Value;

use super::Reconcile;
use crate::{
    Error, Result,
    caches::Cached,
    children::{Caches, Child, Children, not_a_child},
};

/// What an object asks for: its children, status fields of its own, whether it is ready yet,
/// children to delete, and when to look again.
///
/// ```
/// # use kopgen_runtime::{Result, Desired};
/// # use kopgen_runtime::k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
/// # use kopgen_runtime::Reconcile;
/// # fn example<R: Reconcile>(deployment: Deployment, service: Service) -> Result<Desired<R>> {
/// Ok(Desired::new()
///     .child(deployment)?
///     .child(service)?
///     .requeue_after(std::time::Duration::from_secs(60)))
/// # }
/// ```
pub struct Desired<R: Reconcile> {
    pub(crate) children: Vec<Value>,
    /// The JSON of the kind's status type.
    pub(crate) status: Option<Value>,
    pub(crate) requeue_after: Option<Duration>,
    pub(crate) prune: Vec<TypeId>,
    pub(crate) deletions: Vec<Deletion>,
    pub(crate) progress: Option<Progress>,
    reconciler: std::marker::PhantomData<fn() -> R>,
}

/// A child `desired()` asked to delete: that very object (by UID), never a new one of its name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Deletion {
    pub(crate) type_id: TypeId,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// Why an object is not ready yet although nothing failed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Progress {
    pub(crate) reason: String,
    pub(crate) message: String,
}

impl<R: Reconcile> Default for Desired<R> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            status: None,
            requeue_after: None,
            prune: Vec::new(),
            deletions: Vec::new(),
            progress: None,
            reconciler: std::marker::PhantomData,
        }
    }
}

impl<R: Reconcile> Desired<R> {
    /// Nothing yet: no child, no status of the project's own, the periodic resync.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `child`, with a name (and a namespace, for a namespaced kind); the reconciler
    /// adds the owner reference and the `managed-by` label. Its kind must be one of
    /// [`Reconcile::Children`].
    pub fn child<C: Child>(mut self, child: C) -> Result<Self> {
        check_kind::<R, C>()?;
        let mut value = serde_json::to_value(&child)?;
        // k8s-openapi types write these; a custom resource's derive does too. Set them anyway,
        // so that every child can be told by kind.
        value["apiVersion"] = C::api_version(&()).into();
        value["kind"] = C::kind(&()).into();
        self.children.push(value);
        Ok(self)
    }

    /// Asks for each of `children`.
    pub fn children<C: Child>(self, children: impl IntoIterator<Item = C>) -> Result<Self> {
        children.into_iter().try_fold(self, Desired::child)
    }

    /// Status fields of the project's own (a replica count, references, conditions other than
    /// `Ready`, `Reconciling` and `Stalled`): applied with a field manager of their own, so that
    /// the reconciler's conditions and `observedGeneration` never remove them. Written only
    /// when they change; a field no longer set is removed. Only for a controller that owns the
    /// kind's status ([`Reconcile::OWNS_STATUS`]).
    pub fn status(mut self, status: <R::Kind as HasStatus>::Status) -> Result<Self>
    where
        R::Kind: HasStatus<Status: Serialize>,
    {
        self.status = Some(serde_json::to_value(status)?);
        Ok(self)
    }

    /// The object is not ready yet, and that is no failure: a child Deployment still rolling
    /// out, a Job still running. `Ready` is `False` with `reason` (CamelCase) and `message`,
    /// and `Reconciling` is `True`, as kstatus (Flux, Argo CD, `kubectl wait`) reads them;
    /// there is no Warning event and no backoff. The children are still applied; a change of
    /// a child (its status included) brings the object back, so there is no need to requeue.
    pub fn progressing(mut self, reason: &str, message: impl Into<String>) -> Self {
        self.progress = Some(Progress {
            reason: reason.to_owned(),
            message: message.into(),
        });
        self
    }

    /// Reconciles again after `delay` although nothing changed (a schedule's next run), or
    /// sooner when something does; the periodic resync otherwise.
    pub fn requeue_after(mut self, delay: Duration) -> Self {
        self.requeue_after = Some(delay);
        self
    }

    /// Deletes children of kind `C` that this object controls and no longer asks for. The RBAC
    /// marker of `C` needs the `delete` verb.
    pub fn prune<C: Child>(mut self) -> Self {
        self.prune.push(TypeId::of::<C>());
        self
    }

    /// Deletes `child`, one of this object's children as [`crate::Observed::children`] gave it
    /// (a CronJob's oldest finished Job beyond its history limit, an active Job a `Replace`
    /// policy ends): that very object, by its UID, with its dependents in the background. The
    /// reconciler deletes it after the children are applied; one already gone is fine, and
    /// one this object does not control is refused. The RBAC marker of `C` needs `delete`.
    pub fn delete<C: Child>(mut self, child: &C) -> Result<Self> {
        check_kind::<R, C>()?;
        let uid = child
            .uid()
            .ok_or(Error::MissingObjectKey("metadata.uid of a child to delete"))?;
        self.deletions.push(Deletion {
            type_id: TypeId::of::<C>(),
            namespace: child.namespace().unwrap_or_default(),
            name: child.name_any(),
            uid,
        });
        Ok(self)
    }

    /// The caches of the kinds to prune.
    pub(crate) fn pruned<'c>(&self, caches: &'c Caches) -> Vec<&'c Cached> {
        (caches.kinds.iter())
            .filter(|kind| self.prune.contains(&kind.type_id))
            .collect()
    }
}

fn check_kind<R: Reconcile, C: Child>() -> Result<()> {
    let kinds = R::Children::kinds();
    match kinds.iter().any(|kind| kind.type_id == TypeId::of::<C>()) {
        true => Ok(()),
        false => Err(not_a_child(&C::kind(&()))),
    }
}
