//! A mocked API server for controller tests, after kube-rs's controller-rs: the test states the
//! conversation it expects (method, path, body) and answers each request, so a reconcile is
//! checked request by request without a cluster. The pattern checks below
//! (`converges_and_is_idempotent` and the others) run every kind's controller through the same
//! conversations.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{Client, Resource, ResourceExt, client::Body, runtime::controller::Action};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tower_test::mock::{self, Handle};

mod patterns;

pub use patterns::*;

use crate::{
    Context,
    children::{Caches, Children, Observed},
    metrics::Metrics,
    reconciler::{KindScope, MANAGED_BY, RESYNC, Reconcile, Shared, as_applied, reconcile},
};

/// The manager name of the mocked context: field manager and `managed-by` value in tests.
pub const MANAGER: &str = "test-manager";

/// One request the reconciler sent, with its body decoded as JSON (`Value::Null` if empty).
#[derive(Debug)]
pub struct Recorded {
    /// The HTTP method.
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    /// The query string (`fieldManager=...&force=true`), empty without one.
    pub query: String,
    /// The body as JSON.
    pub body: Value,
}

/// The mocked API server's side of a client: the test answers each request in turn.
pub struct ApiServer {
    handle: Handle<Request<Body>, Response<Body>>,
    seen: Vec<Recorded>,
    /// Events the client sent before the test expected them: they are published in the
    /// background, so they may come before or after the requests around them.
    early_events: Vec<Recorded>,
    /// A request that came while the test expected an event: answered at the next `expect`.
    waiting: Option<(Recorded, SendResponse)>,
}

type SendResponse = tower_test::mock::SendResponse<Response<Body>>;

/// The time of every mocked context (2026-01-01T00:00:00Z): what [`Context::now`] gives in
/// tests, so that a controller whose children follow the clock gives the same answer twice.
pub const NOW: k8s_openapi::jiff::Timestamp =
    k8s_openapi::jiff::Timestamp::constant(1_767_225_600, 0);

/// A context whose client talks to the returned mocked API server, watching namespace `testns`,
/// whose clock stands at [`NOW`].
pub fn mock_context() -> (Arc<Context>, ApiServer) {
    let (ctx, server) = mock_context_owned();
    (Arc::new(ctx), server)
}

/// [`mock_context`] with its clock at `now`: move the time in a test of a schedule.
pub fn mock_context_at(now: k8s_openapi::jiff::Timestamp) -> (Arc<Context>, ApiServer) {
    let (mut ctx, server) = mock_context_owned();
    ctx.clock = Some(now);
    (Arc::new(ctx), server)
}

/// [`mock_context`], not yet shared, for a test to change first.
pub(crate) fn mock_context_owned() -> (Context, ApiServer) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "testns");
    let mut ctx = Context::new(
        client,
        MANAGER,
        Arc::new(Metrics::default()),
        Some("testns".into()),
    );
    ctx.operator_namespace = "testns".into();
    ctx.clock = Some(NOW);
    (
        ctx,
        ApiServer {
            handle,
            seen: vec![],
            early_events: vec![],
            waiting: None,
        },
    )
}

fn is_event(method: &Method, path: &str) -> bool {
    method == Method::POST && path.starts_with("/apis/events.k8s.io/") && path.ends_with("/events")
}

fn respond(send: SendResponse, status: StatusCode, body: &Value) {
    let response = Response::builder()
        .status(status)
        .body(Body::from(
            serde_json::to_vec(body).expect("response serializes"),
        ))
        .expect("response builds");
    send.send_response(response);
}

impl ApiServer {
    /// The next request the client sends, with its body decoded.
    async fn next(&mut self, expected: &str) -> Option<(Recorded, SendResponse)> {
        let (request, send) = self.handle.next_request().await?;
        let (parts, body_in) = request.into_parts();
        let bytes = body_in.collect_bytes().await.expect("request body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| panic!("expecting {expected}: a request body is not JSON"))
        };
        let recorded = Recorded {
            method: parts.method.clone(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().unwrap_or_default().to_owned(),
            body,
        };
        Some((recorded, send))
    }

    /// The next request that is not an event (the one set aside first, if any); events that
    /// come before it are answered and kept for [`ApiServer::expect`] and `expect_event`.
    async fn next_request(&mut self, expected: &str) -> (Recorded, SendResponse) {
        loop {
            let next = match self.waiting.take() {
                Some(waiting) => Some(waiting),
                None => self.next(expected).await,
            };
            let Some((recorded, send)) = next else {
                panic!("expected {expected}, but the client sent no more requests")
            };
            if !is_event(&recorded.method, &recorded.path) {
                return (recorded, send);
            }
            respond(send, StatusCode::CREATED, &json!({}));
            self.early_events.push(recorded);
        }
    }

    /// Waits for the next request, asserts its method and path, and answers with `status`
    /// and `body`. Events are matched in whatever order they come.
    pub async fn expect(
        &mut self,
        method: Method,
        path: &str,
        status: StatusCode,
        body: Value,
    ) -> &Recorded {
        let expected = format!("{method} {path}");
        if is_event(&method, path) {
            if let Some(index) = self.early_events.iter().position(|e| e.path == path) {
                let event = self.early_events.remove(index);
                self.seen.push(event);
                return self.seen.last().expect("just pushed");
            }
            loop {
                let Some((recorded, send)) = self.next(&expected).await else {
                    panic!("expected {expected}, but the client sent no more requests")
                };
                if is_event(&recorded.method, &recorded.path) {
                    assert_eq!(recorded.path, path, "an event for another object");
                    respond(send, status, &body);
                    self.seen.push(recorded);
                    return self.seen.last().expect("just pushed");
                }
                assert!(
                    self.waiting.is_none(),
                    "expected {expected}, but the client sent {recorded:?} and more"
                );
                self.waiting = Some((recorded, send));
            }
        }
        let (recorded, send) = self.next_request(&expected).await;
        assert_eq!(
            (&recorded.method, recorded.path.as_str()),
            (&method, path),
            "unexpected request {recorded:?}"
        );
        respond(send, status, &body);
        self.seen.push(recorded);
        self.seen.last().expect("just pushed")
    }

    /// Answers every request with `answer` (events with 201) until one that `last` picks,
    /// which it returns: for code whose requests a test does not pin down, such as a
    /// `cleanup` that reads the cluster or publishes events of its own.
    pub async fn serve_until(
        &mut self,
        last: impl Fn(&Recorded) -> bool,
        answer: impl Fn(&Recorded) -> Value,
    ) -> &Recorded {
        loop {
            let (recorded, send) = self.next_request("a request").await;
            respond(send, StatusCode::OK, &answer(&recorded));
            self.seen.push(recorded);
            let recorded = self.seen.last().expect("just pushed");
            if last(recorded) {
                return self.seen.last().expect("just pushed");
            }
        }
    }

    /// Waits for an event with `reason` on the collection `path`, taking the other events
    /// sent so far with it; returns the event.
    pub async fn expect_event(&mut self, path: &str, reason: &str) -> &Recorded {
        loop {
            if let Some(index) = (self.early_events.iter())
                .position(|e| e.path == path && e.body["reason"] == reason)
            {
                let event = self.early_events.remove(index);
                self.seen.append(&mut self.early_events);
                self.seen.push(event);
                return self.seen.last().expect("just pushed");
            }
            let Some((recorded, send)) = self.next(reason).await else {
                panic!("expected a {reason} event, but the client sent no more requests")
            };
            if is_event(&recorded.method, &recorded.path) {
                respond(send, StatusCode::CREATED, &json!({}));
                self.early_events.push(recorded);
            } else {
                assert!(
                    self.waiting.is_none(),
                    "expected a {reason} event, but the client sent {recorded:?} and more"
                );
                self.waiting = Some((recorded, send));
            }
        }
    }

    /// Answers a request with a Kubernetes `Status` error, as the API server does.
    pub async fn expect_error(
        &mut self,
        method: Method,
        path: &str,
        status: StatusCode,
    ) -> &Recorded {
        let reason = status.canonical_reason().unwrap_or("Error");
        let body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": reason, "reason": reason.replace(' ', ""), "code": status.as_u16(),
        });
        self.expect(method, path, status, body).await
    }

    /// Asserts the client sent nothing more, and returns every request it sent.
    /// Call it after the code under test has returned and dropped its client.
    pub async fn done(mut self) -> Vec<Recorded> {
        if let Some((recorded, _)) = self.waiting.take() {
            panic!("unexpected extra request {recorded:?}");
        }
        if let Some(event) = self.early_events.first() {
            panic!("unexpected extra event {event:?}");
        }
        if let Some((request, _)) = self.handle.next_request().await {
            panic!(
                "unexpected extra request {} {}",
                request.method(),
                request.uri()
            );
        }
        self.seen
    }
}

/// Runs the API server's side of a conversation (`scenario`) against the code under test, then
/// checks that the client sent nothing else. `under_test` must own the only handle on the
/// context, so that the client is gone once it returns.
pub async fn converse<T>(
    scenario: impl Future<Output = ApiServer> + Send + 'static,
    under_test: impl Future<Output = T>,
) -> (T, Vec<Recorded>) {
    let limit = std::time::Duration::from_secs(10);
    let server: JoinHandle<ApiServer> = tokio::spawn(scenario);
    let output = tokio::time::timeout(limit, under_test)
        .await
        .expect("code under test finished in time");
    let server = tokio::time::timeout(limit, server)
        .await
        .expect("the API server saw every request it expected")
        .expect("scenario ran to completion");
    let requests = tokio::time::timeout(limit, server.done())
        .await
        .expect("client dropped after the code under test returned");
    (output, requests)
}

/// A controller state for `reconciler` whose client talks to the returned mocked API server
/// and whose caches of children hold `children` (objects of any of its child kinds).
pub fn mock_shared<R: Reconcile>(
    reconciler: R,
    children: Vec<impl Serialize>,
) -> (Arc<Shared<R>>, ApiServer) {
    mock_shared_with_names(reconciler, children, Vec::<Value>::new())
}

/// [`mock_shared`], with objects of the kinds the controller watches in their caches
/// (`watched`, any of those kinds, as JSON).
pub fn mock_shared_watching<R: Reconcile>(
    reconciler: R,
    children: Vec<impl Serialize>,
    watched: Vec<impl Serialize>,
) -> (Arc<Shared<R>>, ApiServer) {
    let (ctx, server) = mock_context();
    let reconciler = Arc::new(reconciler);
    let children = as_json(children);
    let shared = Shared::filled_watching(reconciler, ctx, children, Vec::new(), as_json(watched));
    (Arc::new(shared), server)
}

/// [`mock_shared`], with `others` taking names beside the children (objects of a child kind
/// without this manager's label, as the names caches watch them).
pub fn mock_shared_with_names<R: Reconcile>(
    reconciler: R,
    children: Vec<impl Serialize>,
    others: Vec<impl Serialize>,
) -> (Arc<Shared<R>>, ApiServer) {
    let (ctx, server) = mock_context();
    let shared = Shared::filled(reconciler, ctx, as_json(children), as_json(others));
    (Arc::new(shared), server)
}

fn as_json(objects: Vec<impl Serialize>) -> Vec<Value> {
    let json = |object| serde_json::to_value(object).expect("serializes");
    objects.into_iter().map(json).collect()
}

/// An object of `K` read from a sample manifest, as the API server would return it: in
/// namespace `testns` (if namespaced), with a uid, a generation and a resource version.
pub fn object_from_sample<K>(yaml: &str) -> K
where
    K: Resource<DynamicType = (), Scope: KindScope> + DeserializeOwned,
{
    let mut object: K = serde_saphyr::from_str(yaml).expect("the sample is an object of this kind");
    let meta = object.meta_mut();
    if <K::Scope as KindScope>::NAMESPACED {
        meta.namespace = Some("testns".into());
    }
    meta.uid = Some("7a1e4c2d-0000-4000-8000-000000000001".into());
    meta.generation = Some(1);
    meta.resource_version = Some("1".into());
    object
}

/// Where the API server serves `object`.
pub fn path_of<R: Resource<DynamicType = ()>>(object: &R) -> String {
    format!(
        "{}/{}",
        R::url_path(&(), object.meta().namespace.as_deref()),
        object.name_any()
    )
}

/// Where objects like `object` are created: its kind's path in its namespace.
pub fn collection_of<R: Resource<DynamicType = ()>>(object: &R) -> String {
    R::url_path(&(), object.meta().namespace.as_deref())
}

/// Where events about `object` are created (cluster-scoped objects' events go to `default`).
pub fn events_path<R: Resource>(object: &R) -> String {
    let namespace = object.meta().namespace.as_deref().unwrap_or("default");
    format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events")
}

/// Where the API server creates children like `child` (JSON of one of `R`'s child kinds).
pub fn child_collection<R: Reconcile>(child: &Value) -> String {
    let kind = (R::Children::kinds().into_iter())
        .find(|kind| crate::caches::is_of(child, &kind.resource))
        .expect("a child of one of the controller's kinds");
    let resource = &kind.resource;
    let base = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    match kind.namespaced {
        true => {
            let namespace = (child["metadata"]["namespace"].as_str()).expect("a namespace");
            format!("{base}/namespaces/{namespace}/{}", resource.plural)
        }
        false => format!("{base}/{}", resource.plural),
    }
}

/// Where the API server serves `child` (JSON of one of `R`'s child kinds).
pub fn child_path<R: Reconcile>(child: &Value) -> String {
    let name = child["metadata"]["name"].as_str().expect("a name");
    format!("{}/{name}", child_collection::<R>(child))
}

/// What `object` asks of `reconciler`, with no child observed yet, at [`NOW`] (the mocked
/// client answers nothing).
pub async fn desired<R: Reconcile>(reconciler: &R, object: &R::Kind) -> crate::Desired<R> {
    desired_with(reconciler, object, &[], &[]).await
}

/// What `object` asks of `reconciler` at [`NOW`] once `children` exist (JSON of any of its
/// child kinds) and the caches of the kinds it watches hold `watched` (JSON of any of those):
/// for controllers whose children depend on what exists (a CronJob's Jobs, a referenced
/// ConfigMap).
pub async fn desired_with<R: Reconcile>(
    reconciler: &R,
    object: &R::Kind,
    children: &[Value],
    watched: &[Value],
) -> crate::Desired<R> {
    let (ctx, _server) = mock_context();
    let observing = Observing::new(reconciler, children.to_vec(), watched);
    let observed = observing.observed(object);
    (reconciler.desired(object, &ctx, &observed).await).expect("desired children")
}

/// The caches a reconcile of `R` reads, filled by hand: for tests and benchmarks of code that
/// reads [`Observed`].
pub struct Observing {
    caches: Caches,
    lookups: crate::children::Lookups,
}

impl Observing {
    /// Caches of `reconciler`'s children holding `children` (JSON of any of its child kinds),
    /// and of the kinds it watches holding `watched`.
    pub fn new<R: Reconcile>(reconciler: &R, children: Vec<Value>, watched: &[Value]) -> Self {
        Self {
            caches: Caches::filled(R::Children::kinds(), children, Vec::new()),
            lookups: reconciler.setup().filled(watched),
        }
    }

    /// What a reconcile of `object` observes.
    pub fn observed<K: Resource>(&self, object: &K) -> Observed<'_> {
        Observed::new(
            &self.caches,
            &self.lookups,
            object.uid().unwrap_or_default(),
        )
    }
}

/// The children as the machinery applies them (JSON, of any of `R`'s child kinds): with the
/// owner reference, the label and the hash of what is applied.
pub async fn applied_children<R: Reconcile>(reconciler: &R, object: &R::Kind) -> Vec<Value> {
    let owner = object
        .controller_owner_ref(&())
        .expect("the object has a uid");
    desired(reconciler, object)
        .await
        .children
        .into_iter()
        .map(|child| as_applied(child, &owner, MANAGER, false).expect("a child applies"))
        .collect()
}

/// [`applied_children`] of kind `C`, decoded.
pub async fn applied_children_of<R: Reconcile, C: crate::children::Child>(
    reconciler: &R,
    object: &R::Kind,
) -> Vec<C> {
    let resource = kube::api::ApiResource::erase::<C>(&());
    applied_children(reconciler, object)
        .await
        .into_iter()
        .filter(|child| child["kind"] == resource.kind.as_str())
        .map(|child| serde_json::from_value(child).expect("a child of its kind"))
        .collect()
}

fn mock_shared_arc<R: Reconcile>(
    reconciler: Arc<R>,
    children: Vec<Value>,
) -> (Arc<Shared<R>>, ApiServer) {
    let (ctx, server) = mock_context();
    let shared = Shared::filled_shared(reconciler, ctx, children, Vec::new());
    (Arc::new(shared), server)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;

    use super::*;

    #[tokio::test]
    async fn the_mock_answers_and_records_each_request() {
        let (ctx, mut server) = mock_context();
        let scenario = async move {
            server
                .expect(
                    Method::GET,
                    "/api/v1/namespaces/testns/configmaps/missing",
                    StatusCode::OK,
                    json!({
                        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "missing"}
                    }),
                )
                .await;
            server
                .expect_error(
                    Method::GET,
                    "/api/v1/namespaces/testns/configmaps/gone",
                    StatusCode::NOT_FOUND,
                )
                .await;
            server
        };
        let under_test = async move {
            let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), "testns");
            let found = api
                .get_opt("missing")
                .await
                .expect("first request succeeds");
            let gone = api.get_opt("gone").await.expect("404 maps to None");
            (found.is_some(), gone.is_none())
        };
        let (outcome, requests) = converse(scenario, under_test).await;
        assert_eq!(outcome, (true, true));
        assert_eq!(requests.len(), 2);
    }
}
