//! The children of a kind: which kinds they are ([`Children`], a tuple such as
//! `(Deployment, Service)`) and what an object has ([`Observed`]). Each child kind has its own
//! caches, filled by a label-selected watch; behind them the reconciler handles every kind with
//! one code path, on JSON, so that a second or third kind costs a watch and nothing else.

use std::{
    any::{Any, TypeId},
    sync::Arc,
};

use kube::{
    ResourceExt,
    runtime::reflector::{ObjectRef, Store},
};

pub(crate) use crate::caches::{Cache, Caches, ChildKind, is_controlled_by};
pub use crate::kinds::Child;
use crate::{Error, Result};

/// The kinds of a controller's children, as a tuple: `(ConfigMap,)`, `(Deployment, Service)`,
/// up to six kinds, or `()` for a controller that creates none; namespaced or cluster-scoped
/// kinds. Implemented for tuples of [`Child`] types only.
pub trait Children: Send + Sync + 'static {
    /// Each kind, type-erased; the reconciler's business.
    #[doc(hidden)]
    fn kinds() -> Vec<ChildKind>;
}

macro_rules! children {
    ($($kind:ident),+) => {
        impl<$($kind: Child),+> Children for ($($kind,)+) {
            fn kinds() -> Vec<ChildKind> {
                vec![$(ChildKind::of::<$kind>()),+]
            }
        }
    };
}
impl Children for () {
    fn kinds() -> Vec<ChildKind> {
        Vec::new()
    }
}
children!(A);
children!(A, B);
children!(A, B, C);
children!(A, B, C, D);
children!(A, B, C, D, E);
children!(A, B, C, D, E, F);

/// The caches of the other kinds a controller watches (`Setup::watch`), by kind.
#[derive(Clone, Default)]
pub(crate) struct Lookups(Vec<(TypeId, Arc<dyn Any + Send + Sync>)>);

impl Lookups {
    /// Keeps `store`, the cache of the kind `type_id` (a `Store` of that kind).
    pub(crate) fn insert(&mut self, type_id: TypeId, store: Arc<dyn Any + Send + Sync>) {
        self.0.push((type_id, store));
    }

    fn store<C: Child>(&self) -> Result<&Store<C>> {
        (self.0.iter())
            .find(|(type_id, _)| *type_id == TypeId::of::<C>())
            .and_then(|(_, store)| store.downcast_ref::<Store<C>>())
            .ok_or_else(|| {
                Error::Config(format!(
                    "{} is not watched by this controller: add a `Watch` of it to \
                     `Reconcile::setup`",
                    C::kind(&())
                ))
            })
    }
}

/// What a reconcile sees of the cluster, from the controller's caches (what its watches last
/// saw), without a request: the children an object has, and the objects of the other kinds
/// the controller watches.
pub struct Observed<'a> {
    caches: &'a Caches,
    lookups: &'a Lookups,
    uid: String,
}

impl<'a> Observed<'a> {
    pub(crate) fn new(caches: &'a Caches, lookups: &'a Lookups, uid: String) -> Self {
        Self {
            caches,
            lookups,
            uid,
        }
    }

    /// The children of kind `C` this object controls, sorted by namespace and name. `C` must be
    /// one of the controller's `Reconcile::Children`. Found through an index of the cache by
    /// owner: it costs what this object has, however many children the cache holds.
    pub fn children<C: Child>(&self) -> Result<Vec<C>> {
        let kind =
            (self.caches.by_type(TypeId::of::<C>())).ok_or_else(|| not_a_child(&C::kind(&())))?;
        kind.cache
            .controlled_by(&self.uid)?
            .into_iter()
            .map(|child| Ok(serde_json::from_value(child)?))
            .collect()
    }

    /// The object `reference` of a kind the controller watches (`Setup::watch`), if it exists
    /// (controller-runtime's cached `Get`). One that does not exist yet is no error: return
    /// [`crate::Desired::progressing`] and the watch brings the object back once it appears.
    pub fn get<C: Child>(&self, reference: &ObjectRef<C>) -> Result<Option<Arc<C>>> {
        Ok(self.lookups.store::<C>()?.get(reference))
    }

    /// Every cached object of a kind the controller watches (controller-runtime's cached
    /// `List`), sorted by namespace and name.
    pub fn list<C: Child>(&self) -> Result<Vec<Arc<C>>> {
        let mut objects = self.lookups.store::<C>()?.state();
        objects.sort_by_key(|object| (object.namespace(), object.name_any()));
        Ok(objects)
    }
}

pub(crate) fn not_a_child(kind: &str) -> Error {
    Error::InvalidSpec(format!(
        "{kind} is not among the controller's `Reconcile::Children`; add it to the tuple"
    ))
}
