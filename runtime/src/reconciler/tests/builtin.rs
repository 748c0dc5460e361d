//! Built-in kinds through the same trait: a controller for Deployments (which the project does
//! not own) creates children owned by each Deployment and never writes its status; one with no
//! children only observes.

use super::*;
use crate::testing::{
    converges_and_is_idempotent, converse, deletion_is_released, drift_is_repaired, events_path,
    mock_shared,
};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};

/// A ConfigMap for each Deployment that asks for one (an annotation), as a Kubebuilder
/// controller for a core type might.
#[derive(Default)]
struct DeploymentReconciler;

impl Reconcile for DeploymentReconciler {
    type Kind = Deployment;
    type Children = (ConfigMap,);
    const NAME: &'static str = "apps-deployment";
    const OWNS_STATUS: bool = false;

    async fn desired(
        &self,
        deployment: &Deployment,
        _: &Context,
        _: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        let Some(note) = deployment.annotations().get("example.com/note") else {
            return Err(Error::InvalidSpec("no example.com/note annotation".into()));
        };
        Desired::new().child(ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("{}-note", deployment.name_any())),
                namespace: deployment.namespace(),
                ..ObjectMeta::default()
            },
            data: Some([("note".to_owned(), note.clone())].into()),
            ..ConfigMap::default()
        })
    }
}

/// Reacts to Deployments and writes nothing.
#[derive(Default)]
struct Observer;

impl Reconcile for Observer {
    type Kind = Deployment;
    type Children = ();
    const NAME: &'static str = "apps-deployment-observer";
    const OWNS_STATUS: bool = false;

    async fn desired(
        &self,
        _: &Deployment,
        _: &Context,
        _: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        Ok(Desired::new().requeue_after(Duration::from_secs(30)))
    }
}

fn deployment(note: Option<&str>) -> Deployment {
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("testns".into()),
            uid: Some("7a1e4c2d-0000-4000-8000-000000000003".into()),
            generation: Some(1),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    if let Some(note) = note {
        deployment
            .annotations_mut()
            .insert("example.com/note".into(), note.into());
    }
    deployment
}

#[tokio::test]
async fn a_built_in_kind_gets_owned_children_and_its_status_is_left_alone() {
    // The scaffolded pattern checks: no status write is expected where the controller does
    // not own the status.
    converges_and_is_idempotent(DeploymentReconciler, deployment(Some("hello"))).await;
    drift_is_repaired(DeploymentReconciler, deployment(Some("hello"))).await;
    deletion_is_released(DeploymentReconciler, deployment(Some("hello"))).await;
}

#[tokio::test]
async fn a_failure_on_a_built_in_kind_is_an_event_not_a_status() {
    let object = deployment(None);
    let (shared, mut server) = mock_shared(DeploymentReconciler, Vec::<ConfigMap>::new());
    let events = events_path(&object);
    let scenario = async move {
        let event = server.expect_event(&events, "InvalidSpec").await;
        assert_eq!(event.body["type"], "Warning");
        assert_eq!(event.body["regarding"]["kind"], "Deployment");
        server
    };
    let (result, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(result.is_err());
    assert_eq!(requests.len(), 1, "no status write: {requests:?}");
}

#[tokio::test]
async fn a_controller_without_children_only_observes() {
    let (shared, server) = mock_shared(Observer, Vec::<ConfigMap>::new());
    let (action, requests) = converse(
        async move { server },
        reconcile(Arc::new(deployment(None)), shared),
    )
    .await;
    assert_eq!(
        action.expect("observed"),
        Action::requeue(Duration::from_secs(30))
    );
    assert!(requests.is_empty(), "{requests:?}");
}

#[test]
fn children_map_to_an_owner_of_the_core_group_too() {
    let mut owner = ConfigMap::default();
    owner.meta_mut().name = Some("settings".into());
    owner.meta_mut().uid = Some("cm-uid".into());
    let mut child = ConfigMap::default();
    child.meta_mut().namespace = Some("testns".into());
    child
        .owner_references_mut()
        .push(owner.controller_owner_ref(&()).expect("uid"));
    let mapped = crate::caches::owner_of::<ConfigMap, _>(&child).expect("mapped");
    assert_eq!(mapped.name, "settings");
    assert!(crate::caches::owner_of::<Deployment, _>(&child).is_none());
}
