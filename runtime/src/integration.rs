//! What a project's integration tests run, for each kind with a controller: a real control
//! plane ([`crate::envtest`]) with the project's CRDs installed and its controllers running;
//! the kind's sample is created, must become `Ready` at its generation, is deleted and must be
//! released by its controller.

use std::{path::Path, sync::Arc, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    discovery::{Scope, pinned_kind},
    runtime::wait::{await_condition, conditions},
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    Manager,
    envtest::{self, ControlPlane},
};

/// How long a sample may take to become Ready, and to go away once deleted.
pub const CONVERGE: Duration = Duration::from_secs(60);

/// A control plane with the project's CRDs installed and its controllers running.
pub struct Env {
    /// A client of the control plane, as its administrator.
    pub client: Client,
    shutdown: CancellationToken,
    controllers: tokio::task::JoinHandle<crate::Result<()>>,
    // Dropped last: stops the API server after the controllers.
    plane: ControlPlane,
}

impl Env {
    /// Starts a control plane, installs the CRDs of `crds` (a directory such as
    /// `config/crd/bases`) and runs `manager`'s controllers on it, watching every namespace.
    /// `None` (after a notice naming `test`) where no control-plane binaries are available.
    pub async fn start(test: &str, manager: Manager, crds: &Path) -> Option<Env> {
        Self::start_with(test, manager, crds, envtest::Options::default()).await
    }

    /// [`Env::start`] on a control plane with `options` (garbage collection, say, which needs
    /// `kube-controller-manager` in `KUBEBUILDER_ASSETS`).
    pub async fn start_with(
        test: &str,
        manager: Manager,
        crds: &Path,
        options: envtest::Options,
    ) -> Option<Env> {
        let plane = match ControlPlane::start(options) {
            Ok(plane) => plane,
            Err(why) if envtest::assets().is_err() => {
                envtest::skip_notice(test, &why);
                return None;
            }
            Err(why) => panic!("the control plane did not start: {why}"),
        };
        let kubeconfig = kube::config::Kubeconfig::read_from(plane.kubeconfig())
            .expect("the control plane's kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("a client configuration");
        let client = Client::try_from(config).expect("a client");
        install_crds(&client, crds).await;
        let shutdown = CancellationToken::new();
        let ctx = Arc::new(manager.context_watching(client.clone(), None));
        let stop = shutdown.clone();
        let controllers = tokio::spawn(async move { manager.run_controllers(ctx, stop).await });
        Some(Env {
            client,
            shutdown,
            controllers,
            plane,
        })
    }

    /// The control plane's logs, for a failure's message.
    pub fn logs(&self) -> String {
        self.plane.logs()
    }

    /// Stops the controllers (waiting for their in-flight reconciles), then the control plane;
    /// panics if a controller failed meanwhile (its caches did not fill).
    pub async fn stop(self) {
        self.shutdown.cancel();
        let stopped = tokio::time::timeout(CONVERGE, self.controllers).await;
        drop(self.plane);
        if let Ok(Ok(Err(error))) = stopped {
            panic!("a controller failed: {error}");
        }
    }
}

/// Asks `check` every 200 ms until it gives a value, and returns it; panics saying `what` did
/// not happen if it has not within [`CONVERGE`]. For a test's own scenarios on [`Env`]:
/// `check` reads the cluster and returns `None` until what it waits for is there.
pub async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    check: impl Fn() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + CONVERGE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {CONVERGE:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Applies every CRD of `dir` and waits until each is established.
async fn install_crds(client: &Client, dir: &Path) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run `make manifests`)", dir.display()));
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("a CRD file");
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
        let name = crd.name_any();
        crds.patch(
            &name,
            &PatchParams::apply("integration-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("CRD {name} refused: {e}"));
        let established = await_condition(crds.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(CONVERGE, established)
            .await
            .unwrap_or_else(|_| panic!("CRD {name} not established"))
            .expect("watching the CRD");
    }
}

/// Whether the object says Ready for the generation it is at.
fn is_ready(object: &DynamicObject) -> bool {
    let status = &object.data["status"];
    let ready = status["conditions"].as_array().is_some_and(|conditions| {
        conditions
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    ready && status["observedGeneration"] == Value::from(object.metadata.generation)
}

/// The test `test` of one kind: on a control plane with the CRDs of `crds` and `manager`'s
/// controllers, `sample` (YAML of one object) becomes Ready at its generation, and once deleted
/// is released by its controller. Skips (with a notice) without control-plane binaries.
pub async fn converges_and_cleans_up(test: &str, manager: Manager, crds: &str, sample: &str) {
    let Some(env) = Env::start(test, manager, Path::new(crds)).await else {
        return;
    };
    let object: DynamicObject = serde_saphyr::from_str(sample).expect("the sample is an object");
    let types = object
        .types
        .clone()
        .expect("the sample has apiVersion and kind");
    let gvk = GroupVersionKind::try_from(&types).expect("a group, version and kind");
    let (resource, capabilities) = pinned_kind(&env.client, &gvk)
        .await
        .expect("the kind is served once its CRD is installed");
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(env.client.clone(), "default", &resource),
        Scope::Cluster => Api::all_with(env.client.clone(), &resource),
    };
    let name = object.name_any();

    let created = api
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("the sample of {} was refused: {e}", gvk.kind));
    let ready = await_condition(api.clone(), &name, |object: Option<&DynamicObject>| {
        object.is_some_and(is_ready)
    });
    if tokio::time::timeout(CONVERGE, ready).await.is_err() {
        let now = api.get_opt(&name).await.ok().flatten();
        panic!(
            "{} {name} was not Ready within {CONVERGE:?}: {now:#?}\n{}",
            gvk.kind,
            env.logs()
        );
    }

    api.delete(&name, &DeleteParams::default())
        .await
        .expect("the sample can be deleted");
    let uid = created.uid().unwrap_or_default();
    let gone = await_condition(api.clone(), &name, conditions::is_deleted(&uid));
    assert!(
        tokio::time::timeout(CONVERGE, gone).await.is_ok(),
        "{} {name} was not released by its controller within {CONVERGE:?}",
        gvk.kind
    );
    env.stop().await;
}
