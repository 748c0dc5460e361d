//! The webhook server: the API server asks it, over TLS, to default and to validate objects
//! before it stores them, and to convert them between versions. Each kind's module in
//! `webhooks/` says what to default, what to refuse and how versions map; this module turns
//! that into `AdmissionReview` and `ConversionReview` answers, which the manager serves on
//! `--webhook-port` over TLS (see `tls`).

use std::sync::Arc;

pub use axum::Router;
use axum::{Json, body::Bytes, routing::post};
use json_patch::PatchOperation;
use kube::core::{
    CustomResourceExt, DynamicObject, Resource, Status,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation},
    conversion::{ConversionRequest, ConversionResponse, ConversionReview},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// What a validation says: `Ok` with warnings for the user (often none), or `Err` to refuse.
pub type Verdict = std::result::Result<Warnings, Denied>;

/// Messages shown to whoever made the request (kubectl prints them), the object still admitted.
pub type Warnings = Vec<String>;

/// A refusal: the API server rejects the request with `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// Why, for whoever made the request.
    pub message: String,
    /// Warnings shown with the refusal.
    pub warnings: Warnings,
}

impl Denied {
    /// A refusal saying `message`, without warnings.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            warnings: Warnings::new(),
        }
    }
}

/// A kind's validation: one function per operation.
pub struct Validator<K> {
    /// Judges a new object.
    pub create: fn(&K) -> Verdict,
    /// Judges an update: the old object, then the new.
    pub update: fn(&K, &K) -> Verdict,
    /// Judges a deletion (only called where the marker lists `delete`).
    pub delete: fn(&K) -> Verdict,
}

impl<K> Clone for Validator<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Validator<K> {}

/// What the objects of a webhook must be.
pub trait Admitted:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
}

impl<K> Admitted for K where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
}

/// Serves the defaulting webhook of `K` at `path`.
pub fn defaulting<K: Admitted>(path: &str, default: fn(&mut K)) -> Router {
    Router::new().route(
        path,
        post(move |body: Bytes| async move { Json(mutate::<K>(&body, default)) }),
    )
}

/// Serves the validating webhook of `K` at `path`.
pub fn validating<K: Admitted>(path: &str, validator: Validator<K>) -> Router {
    Router::new().route(
        path,
        post(move |body: Bytes| async move { Json(validate::<K>(&body, validator)) }),
    )
}

/// Answers a defaulting review: a JSON patch from the object as sent to the object after
/// `default`. Fields the Rust type does not know are never removed (controller-runtime's
/// default), so a webhook built from older types cannot drop a newer client's fields.
pub fn mutate<K: Admitted>(body: &[u8], default: fn(&mut K)) -> AdmissionReview<DynamicObject> {
    let (request, response) = match read::<K>(body) {
        Ok(read) => read,
        Err(invalid) => return invalid.into_review(),
    };
    let Some((raw, object)) = request.object else {
        return response.into_review();
    };
    let mut defaulted = object;
    default(&mut defaulted);
    let defaulted = match serde_json::to_value(&defaulted) {
        Ok(value) => value,
        Err(error) => {
            return response
                .deny(format!("cannot serialize: {error}"))
                .into_review();
        }
    };
    let operations: Vec<PatchOperation> = json_patch::diff(&raw, &defaulted)
        .0
        .into_iter()
        .filter(|operation| match operation {
            PatchOperation::Remove(_) => false,
            PatchOperation::Add(add) => !add.value.is_null(),
            _ => true,
        })
        .collect();
    if operations.is_empty() {
        return response.into_review();
    }
    match response.clone().with_patch(json_patch::Patch(operations)) {
        Ok(patched) => patched.into_review(),
        Err(error) => response.deny(error.to_string()).into_review(),
    }
}

/// Answers a validating review with the verdict of the validator's function for the operation.
pub fn validate<K: Admitted>(
    body: &[u8],
    validator: Validator<K>,
) -> AdmissionReview<DynamicObject> {
    let (request, response) = match read::<K>(body) {
        Ok(read) => read,
        Err(invalid) => return invalid.into_review(),
    };
    let new = request.object.map(|(_, object)| object);
    let old = request.old_object.map(|(_, object)| object);
    let verdict = match (request.operation, new, old) {
        (Operation::Create, Some(new), _) => (validator.create)(&new),
        (Operation::Update, Some(new), Some(old)) => (validator.update)(&old, &new),
        (Operation::Delete, _, Some(old)) => (validator.delete)(&old),
        (Operation::Connect, _, _) => Ok(Warnings::new()),
        (operation, ..) => Err(Denied::new(format!(
            "{operation:?} request without the objects it needs"
        ))),
    };
    let response = match verdict {
        Ok(warnings) => with_warnings(response, warnings),
        Err(denied) => {
            let mut response = with_warnings(response, denied.warnings).deny(denied.message);
            // As controller-runtime's `admission.Denied`: 403 Forbidden.
            response.result.code = 403;
            response.result.reason = "Forbidden".into();
            response
        }
    };
    response.into_review()
}

fn with_warnings(mut response: AdmissionResponse, warnings: Warnings) -> AdmissionResponse {
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

/// A request's objects, each as sent (for the patch) and as `K`.
struct Request<K> {
    operation: Operation,
    object: Option<(Value, K)>,
    old_object: Option<(Value, K)>,
}

/// Reads a review. A body that is no review, or an object that is no `K`, gets an answer that
/// refuses the request and says why.
fn read<K: Admitted>(
    body: &[u8],
) -> std::result::Result<(Request<K>, AdmissionResponse), Box<AdmissionResponse>> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body).map_err(|error| {
        Box::new(AdmissionResponse::invalid(format!(
            "not an AdmissionReview: {error}"
        )))
    })?;
    let request: AdmissionRequest<DynamicObject> = review.try_into().map_err(|_| {
        Box::new(AdmissionResponse::invalid(
            "an AdmissionReview without a request",
        ))
    })?;
    let response = AdmissionResponse::from(&request);
    type Typed<K> = std::result::Result<Option<(Value, K)>, Box<AdmissionResponse>>;
    let typed = |object: Option<DynamicObject>| -> Typed<K> {
        let Some(object) = object else {
            return Ok(None);
        };
        let refuse = |message: String| Box::new(response.clone().deny(message));
        let raw = serde_json::to_value(&object).map_err(|error| refuse(error.to_string()))?;
        let typed = serde_json::from_value::<K>(raw.clone())
            .map_err(|error| refuse(format!("not a valid {}: {error}", K::kind(&()))))?;
        Ok(Some((raw, typed)))
    };
    let request = Request {
        operation: request.operation.clone(),
        object: typed(request.object)?,
        old_object: typed(request.old_object)?,
    };
    Ok((request, response))
}

/// How one kind converts between its versions: through the hub, its storage version, which
/// each other version (a spoke) converts to and from with `From`. The API server asks for any
/// version at any time (a read of an older version, a watch, storage migration), so a spoke
/// that cannot hold everything of the hub must keep it somewhere, e.g. in an annotation.
pub struct Conversion<H> {
    /// The hub's schema, to complete partial objects with (see [`complete`]).
    schema: Value,
    spokes: Vec<Spoke<H>>,
}

struct Spoke<H> {
    api_version: String,
    schema: Value,
    to_hub: fn(Value) -> std::result::Result<H, String>,
    from_hub: fn(H) -> std::result::Result<Value, String>,
}

impl<H: Admitted + CustomResourceExt> Conversion<H> {
    /// A kind whose storage version is `H`.
    pub fn hub() -> Self {
        Self {
            schema: schema_of::<H>(),
            spokes: Vec::new(),
        }
    }

    /// Adds the version `S`, converted through `From` both ways.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Admitted + CustomResourceExt + From<H>,
        H: From<S>,
    {
        self.spokes.push(Spoke {
            api_version: S::api_version(&()).into_owned(),
            schema: schema_of::<S>(),
            to_hub: spoke_to_hub::<S, H>,
            from_hub: hub_to_spoke::<S, H>,
        });
        self
    }

    fn spoke_of(&self, api_version: &str) -> std::result::Result<&Spoke<H>, String> {
        self.spokes
            .iter()
            .find(|spoke| spoke.api_version == api_version)
            .ok_or_else(|| format!("{} has no version {api_version}", H::kind(&())))
    }
}

fn spoke_to_hub<S: Admitted, H: From<S>>(object: Value) -> std::result::Result<H, String> {
    serde_json::from_value::<S>(object)
        .map(H::from)
        .map_err(|e| e.to_string())
}

fn hub_to_spoke<S: Admitted + From<H>, H>(hub: H) -> std::result::Result<Value, String> {
    serde_json::to_value(S::from(hub)).map_err(|e| e.to_string())
}

/// A kind's conversion, whatever its hub: what `/convert` dispatches to by group and kind.
pub trait Convert: Send + Sync {
    /// The API group and kind converted.
    fn group_kind(&self) -> (String, String);
    /// The kind's CRD, whose `caBundle` a self-managed certificate keeps current.
    fn crd_name(&self) -> String;
    /// `object` (of any served version) as `desired` (`group/version`), or why it cannot be.
    fn convert(&self, object: Value, desired: &str) -> std::result::Result<Value, String>;
}

impl<H: Admitted + CustomResourceExt> Convert for Conversion<H> {
    fn group_kind(&self) -> (String, String) {
        (H::group(&()).into_owned(), H::kind(&()).into_owned())
    }

    fn crd_name(&self) -> String {
        format!("{}.{}", H::plural(&()), H::group(&()))
    }

    fn convert(&self, object: Value, desired: &str) -> std::result::Result<Value, String> {
        let from = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        if from == desired {
            return Ok(object);
        }
        let metadata = object.get("metadata").cloned();
        let hub_version = H::api_version(&());
        let hub: H = if from == hub_version {
            serde_json::from_value(complete(object, &self.schema)).map_err(|e| e.to_string())?
        } else {
            let spoke = self.spoke_of(&from)?;
            (spoke.to_hub)(complete(object, &spoke.schema))?
        };
        let mut converted = if desired == hub_version {
            serde_json::to_value(hub).map_err(|e| e.to_string())?
        } else {
            (self.spoke_of(desired)?.from_hub)(hub)?
        };
        restore_metadata(&mut converted, metadata);
        Ok(converted)
    }
}

/// The schema of `K`'s version, as its CRD has it.
fn schema_of<K: CustomResourceExt>() -> Value {
    let crd = serde_json::to_value(K::crd()).unwrap_or_default();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// The API server converts partial objects too: server-side apply's field pruning sends only
/// the fields some manager owns, with `spec` null or no metadata (kubernetes#117260).
/// controller-runtime reads them with Go's zero values; here each missing (or wrongly null)
/// required field gets the zero value of its type in `schema`, so the typed conversion runs.
fn complete(mut object: Value, schema: &Value) -> Value {
    complete_in(&mut object, schema);
    if let Value::Object(fields) = &mut object
        && !fields.get("metadata").is_some_and(Value::is_object)
    {
        fields.insert("metadata".into(), Value::Object(Default::default()));
    }
    object
}

fn complete_in(value: &mut Value, schema: &Value) {
    match value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| complete_in(item, &schema["items"])),
        Value::Object(fields) => {
            let properties = schema["properties"].as_object();
            for (key, property) in properties.into_iter().flatten() {
                if fields.get(key).is_some_and(Value::is_null) && property["nullable"] != true {
                    fields.remove(key);
                }
            }
            let required = schema["required"].as_array().into_iter().flatten();
            for key in required.filter_map(Value::as_str) {
                if !fields.contains_key(key) {
                    fields.insert(key.to_owned(), zero(&schema["properties"][key]));
                }
            }
            for (key, property) in properties.into_iter().flatten() {
                if let Some(field) = fields.get_mut(key) {
                    complete_in(field, property);
                }
            }
        }
        _ => {}
    }
}

/// Go's zero value of a field of `schema` (an enum's first value, as Rust has no empty one).
fn zero(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    if schema["x-kubernetes-int-or-string"] == true {
        return Value::from(0);
    }
    match schema["type"].as_str() {
        Some("string") => Value::from(""),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::from(false),
        Some("array") => Value::Array(Vec::new()),
        _ => {
            let mut object = Value::Object(Default::default());
            complete_in(&mut object, schema);
            object
        }
    }
}

/// The API server accepts a converted object only with the metadata it sent (labels and
/// annotations aside, where a conversion may keep what the other version cannot hold); a
/// partial object comes back without metadata if it came without.
fn restore_metadata(converted: &mut Value, original: Option<Value>) {
    let Value::Object(fields) = converted else {
        return;
    };
    match original {
        Some(Value::Object(mut metadata)) => {
            for key in ["labels", "annotations"] {
                match fields
                    .get("metadata")
                    .and_then(|converted| converted.get(key))
                {
                    Some(value) if !value.is_null() => {
                        metadata.insert(key.to_owned(), value.clone());
                    }
                    _ => {
                        metadata.remove(key);
                    }
                }
            }
            fields.insert("metadata".into(), Value::Object(metadata));
        }
        Some(other) => {
            fields.insert("metadata".into(), other);
        }
        None => {
            fields.remove("metadata");
        }
    }
}

/// Serves `/convert`, the path of every CRD's conversion webhook, for the kinds of `conversions`.
pub fn converting(conversions: Vec<Box<dyn Convert>>) -> Router {
    let conversions = Arc::new(conversions);
    Router::new().route(
        "/convert",
        post(move |body: Bytes| async move { Json(convert(&body, &conversions)) }),
    )
}

/// Answers a `ConversionReview`: every object in the desired version, or a failure naming the
/// first object that could not be converted (the API server then fails the request).
pub fn convert(body: &[u8], conversions: &[Box<dyn Convert>]) -> ConversionReview {
    let failure = |message: String| Status::failure(&message, "BadRequest");
    let request = match serde_json::from_slice::<ConversionReview>(body)
        .map_err(|e| e.to_string())
        .and_then(|review| ConversionRequest::from_review(review).map_err(|e| e.to_string()))
    {
        Ok(request) => request,
        Err(error) => {
            let message = format!("not a ConversionReview: {error}");
            return ConversionResponse::invalid(failure(message)).into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let mut converted = Vec::with_capacity(objects.len());
    for object in objects {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let (api_version, kind) = (text(&object["apiVersion"]), text(&object["kind"]));
        let name = text(&object["metadata"]["name"]);
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let Some(conversion) = conversions
            .iter()
            .find(|c| c.group_kind() == (group.to_owned(), kind.clone()))
        else {
            let message = format!("no conversion for {kind} of {api_version}");
            return response.failure(failure(message)).into_review();
        };
        match conversion.convert(object, &desired) {
            Ok(object) => converted.push(object),
            Err(error) => {
                let message = format!("converting {kind} {name} to {desired}: {error}");
                return response.failure(failure(message)).into_review();
            }
        }
    }
    response.success(converted).into_review()
}

/// The fields of `value` read as another type with the same field names: a spoke and its hub
/// while their fields are still alike, as the scaffolded conversions assume. A field only one
/// side has is dropped; a change of a field's type gives the other side's default, which the
/// conversion tests catch on the samples.
pub fn same_fields<A: Serialize, B: DeserializeOwned + Default>(value: A) -> B {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default()
}

/// The webhooks a project registered with [`crate::Manager::webhooks`].
#[derive(Default)]
pub(crate) struct Webhooks {
    pub(crate) routes: Vec<fn() -> Router>,
    pub(crate) conversions: Vec<fn() -> Box<dyn Convert>>,
}

impl Webhooks {
    /// One router for every webhook.
    pub(crate) fn router(&self) -> Router {
        let router =
            (self.routes.iter()).fold(Router::new(), |router, routes| router.merge(routes()));
        if self.conversions.is_empty() {
            return router;
        }
        let conversions = self
            .conversions
            .iter()
            .map(|conversion| conversion())
            .collect();
        router.merge(converting(conversions))
    }

    /// The webhook server's listener and TLS, unless there is nothing to serve or
    /// `--enable-webhooks=false`. Webhooks are served by every replica, leader or not: the API
    /// server calls any of them.
    pub(crate) async fn bind(
        &self,
        config: &crate::Config,
        identity: &crate::Identity,
        client: &kube::Client,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> crate::Result<Option<(std::net::TcpListener, crate::tls::Tls)>> {
        if !config.enable_webhooks || (self.routes.is_empty() && self.conversions.is_empty()) {
            return Ok(None);
        }
        let listener = crate::tls::bind_port("webhook", config.webhook_port)?;
        #[cfg(feature = "self-managed-certs")]
        if let Some(certificates) = self.self_managed(config, identity, client) {
            let keys = certificates.ensure().await?;
            let tls =
                crate::tls::from_pem(keys.cert.clone().into(), keys.key.clone().into()).await?;
            tokio::spawn(certificates.run(tls.clone(), keys, shutdown.clone()));
            return Ok(Some((listener, tls)));
        }
        if config.webhook_cert_secret.is_some() {
            return Err(crate::Error::Config(
                "--webhook-cert-secret needs kopgen-runtime's `self-managed-certs` feature \
                 (`kopgen edit --webhook-certificates self-managed`)"
                    .into(),
            ));
        }
        let _ = (identity, client, shutdown);
        let tls = crate::tls::load(config.webhook_certificate()).await?;
        Ok(Some((listener, tls)))
    }

    /// The self-managed webhook certificate, if `--webhook-cert-secret` asks for one.
    #[cfg(feature = "self-managed-certs")]
    fn self_managed(
        &self,
        config: &crate::Config,
        identity: &crate::Identity,
        client: &kube::Client,
    ) -> Option<crate::certificates::SelfManaged> {
        let secret = config.webhook_cert_secret.clone()?;
        let namespace = config.leader_election_namespace.clone();
        let service =
            (config.webhook_service_name.clone()).unwrap_or_else(|| identity.webhook_service());
        let mut hosts = vec![
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ];
        hosts.extend(config.webhook_cert_hosts.iter().cloned());
        Some(crate::certificates::SelfManaged {
            client: client.clone(),
            manager: identity.manager(),
            namespace,
            secret,
            hosts,
            mutating_configuration: identity.mutating_configuration(),
            validating_configuration: identity.validating_configuration(),
            crds: (self.conversions.iter())
                .map(|conversion| conversion().crd_name())
                .collect(),
            check_every: std::time::Duration::from_secs(config.webhook_cert_check_seconds),
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    fn review(operation: &str, object: Value, old: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                "name": "web",
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old,
                "dryRun": false,
            }
        }))
        .expect("a review")
    }

    fn config_map(data: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "default", "labels": {"team": "a"}},
            "data": data,
        })
    }

    fn answer(review: AdmissionReview<DynamicObject>) -> Value {
        serde_json::to_value(review).expect("serializes")["response"].clone()
    }

    fn default_port(cm: &mut ConfigMap) {
        cm.data
            .get_or_insert_default()
            .entry("port".into())
            .or_insert_with(|| "8080".into());
    }

    const VALIDATOR: Validator<ConfigMap> = Validator {
        create: |cm| match cm.data.as_ref().and_then(|d| d.get("port")) {
            Some(port) if port.parse::<u16>().is_err() => {
                Err(Denied::new(format!("port {port:?} is not a port number")))
            }
            None => Ok(vec!["no port: 8080 is assumed".into()]),
            Some(_) => Ok(Warnings::new()),
        },
        update: |old, new| {
            if old.data.as_ref().and_then(|d| d.get("port"))
                != new.data.as_ref().and_then(|d| d.get("port"))
            {
                Err(Denied::new("port is immutable"))
            } else {
                Ok(Warnings::new())
            }
        },
        delete: |_| Err(Denied::new("never deleted")),
    };

    #[test]
    fn defaulting_answers_with_a_patch_that_adds_only_the_defaults() {
        let body = review("CREATE", config_map(json!({"a": "1"})), Value::Null);
        let response = answer(mutate::<ConfigMap>(&body, default_port));
        assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response["allowed"], true);
        assert_eq!(response["patchType"], "JSONPatch");
        let patch: Value = serde_json::from_slice(&patch_of(&response)).expect("JSON patch");
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/data/port", "value": "8080"}])
        );
    }

    #[test]
    fn defaulting_an_object_that_needs_nothing_sends_no_patch() {
        let body = review("CREATE", config_map(json!({"port": "1"})), Value::Null);
        let response = answer(mutate::<ConfigMap>(&body, default_port));
        assert_eq!(response["allowed"], true);
        assert!(response.get("patch").is_none(), "{response}");
    }

    #[test]
    fn fields_the_type_does_not_know_are_never_removed() {
        let mut object = config_map(json!({}));
        object["futureField"] = json!({"kept": true});
        let body = review("CREATE", object, Value::Null);
        let response = answer(mutate::<ConfigMap>(&body, default_port));
        let patch = patch_of(&response);
        assert!(!String::from_utf8_lossy(&patch).contains("remove"));
    }

    #[test]
    fn a_denial_carries_the_message_and_403() {
        let body = review("CREATE", config_map(json!({"port": "http"})), Value::Null);
        let response = answer(validate::<ConfigMap>(&body, VALIDATOR));
        assert_eq!(response["allowed"], false);
        assert_eq!(response["status"]["code"], 403);
        assert_eq!(
            response["status"]["message"],
            "port \"http\" is not a port number"
        );
    }

    #[test]
    fn warnings_reach_the_user_of_an_admitted_object() {
        let body = review("CREATE", config_map(json!({})), Value::Null);
        let response = answer(validate::<ConfigMap>(&body, VALIDATOR));
        assert_eq!(response["allowed"], true);
        assert_eq!(response["warnings"], json!(["no port: 8080 is assumed"]));
    }

    #[test]
    fn an_update_is_judged_against_the_old_object_and_a_delete_by_it() {
        let old = config_map(json!({"port": "80"}));
        let body = review("UPDATE", config_map(json!({"port": "81"})), old.clone());
        let response = answer(validate::<ConfigMap>(&body, VALIDATOR));
        assert_eq!(response["status"]["message"], "port is immutable");
        let body = review("UPDATE", config_map(json!({"port": "80"})), old.clone());
        assert_eq!(
            answer(validate::<ConfigMap>(&body, VALIDATOR))["allowed"],
            true
        );
        let body = review("DELETE", Value::Null, old);
        let response = answer(validate::<ConfigMap>(&body, VALIDATOR));
        assert_eq!(response["status"]["message"], "never deleted");
    }

    #[test]
    fn a_body_that_is_no_review_is_refused_not_a_panic() {
        for body in [&b"{"[..], b"{}", b"[]", b"{\"request\":{}}"] {
            let response = answer(validate::<ConfigMap>(body, VALIDATOR));
            assert_eq!(response["allowed"], false, "{response}");
            let response = answer(mutate::<ConfigMap>(body, default_port));
            assert_eq!(response["allowed"], false, "{response}");
        }
        let body = review(
            "CREATE",
            json!({"kind": "ConfigMap", "data": 7}),
            Value::Null,
        );
        let response = answer(validate::<ConfigMap>(&body, VALIDATOR));
        assert_eq!(response["allowed"], false, "{response}");
    }

    /// Two versions of a test kind: `size` is a number in v2 (the hub) and text in v1.
    mod versions {
        use kube::CustomResource;
        use schemars::JsonSchema;
        use serde::{Deserialize, Serialize};

        pub mod v1 {
            use super::*;

            #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
            #[kube(
                group = "test.example.com",
                version = "v1",
                kind = "Widget",
                namespaced
            )]
            pub struct WidgetSpec {
                pub size: String,
            }
        }

        pub mod v2 {
            use super::*;

            #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
            #[kube(
                group = "test.example.com",
                version = "v2",
                kind = "Widget",
                namespaced
            )]
            pub struct WidgetSpec {
                pub size: i64,
            }
        }

        impl From<v1::Widget> for v2::Widget {
            fn from(spoke: v1::Widget) -> Self {
                let size = spoke.spec.size.parse().unwrap_or_default();
                Self {
                    metadata: spoke.metadata,
                    spec: v2::WidgetSpec { size },
                }
            }
        }

        impl From<v2::Widget> for v1::Widget {
            fn from(hub: v2::Widget) -> Self {
                Self {
                    metadata: hub.metadata,
                    spec: v1::WidgetSpec {
                        size: hub.spec.size.to_string(),
                    },
                }
            }
        }
    }

    fn conversion_review(desired: &str, objects: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "6f2c5d8e", "desiredAPIVersion": desired, "objects": objects},
        }))
        .expect("a review")
    }

    fn widget(version: &str, size: Value) -> Value {
        json!({
            "apiVersion": format!("test.example.com/{version}"),
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "labels": {"a": "b"}},
            "spec": {"size": size},
        })
    }

    fn conversions() -> Vec<Box<dyn Convert>> {
        vec![Box::new(
            Conversion::<versions::v2::Widget>::hub().spoke::<versions::v1::Widget>(),
        )]
    }

    #[test]
    fn conversion_goes_through_the_hub_both_ways_and_keeps_metadata() {
        let body = conversion_review(
            "test.example.com/v2",
            json!([widget("v1", json!("3")), widget("v2", json!(4))]),
        );
        let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
        let response = &review["response"];
        assert_eq!(response["uid"], "6f2c5d8e");
        assert_eq!(response["result"]["status"], "Success", "{response}");
        assert_eq!(response["convertedObjects"][0], widget("v2", json!(3)));
        assert_eq!(response["convertedObjects"][1], widget("v2", json!(4)));

        let body = conversion_review("test.example.com/v1", json!([widget("v2", json!(5))]));
        let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
        assert_eq!(
            review["response"]["convertedObjects"][0],
            widget("v1", json!("5"))
        );
    }

    /// Server-side apply's field pruning sends partial objects: `spec` null, no metadata.
    #[test]
    fn partial_objects_convert_with_zero_values_and_the_metadata_they_came_with() {
        let partial = json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "spec": null});
        let nameless = json!({
            "apiVersion": "test.example.com/v2",
            "kind": "Widget",
            "metadata": {"annotations": {"kept": "yes"}},
        });
        let body = conversion_review("test.example.com/v2", json!([partial]));
        let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
        let converted = &review["response"]["convertedObjects"][0];
        assert_eq!(
            *converted,
            json!({"apiVersion": "test.example.com/v2", "kind": "Widget", "spec": {"size": 0}}),
            "{review}"
        );
        let body = conversion_review("test.example.com/v1", json!([nameless]));
        let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
        let converted = &review["response"]["convertedObjects"][0];
        assert_eq!(converted["spec"], json!({"size": "0"}), "{review}");
        assert_eq!(
            converted["metadata"],
            json!({"annotations": {"kept": "yes"}})
        );
    }

    #[test]
    fn a_conversion_that_cannot_be_done_fails_the_review_naming_the_object() {
        let cases = [
            (
                widget("v3", json!(1)),
                "Widget has no version test.example.com/v3",
            ),
            (
                widget("v1", json!([])),
                "converting Widget w to test.example.com/v2",
            ),
            (
                json!({"apiVersion": "other.example.com/v1", "kind": "Gadget"}),
                "no conversion for Gadget",
            ),
        ];
        for (object, expected) in cases {
            let body = conversion_review("test.example.com/v2", json!([object]));
            let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
            let result = &review["response"]["result"];
            assert_eq!(result["status"], "Failure", "{review}");
            let message = result["message"].as_str().unwrap_or_default();
            assert!(message.contains(expected), "{message}");
        }
        let review = serde_json::to_value(convert(b"{", &conversions())).expect("serializes");
        assert_eq!(review["response"]["result"]["status"], "Failure");
    }

    /// The patch's bytes: kube sends them as a JSON array of numbers, which the API server
    /// reads as Go reads a `[]byte` array.
    fn patch_of(response: &Value) -> Vec<u8> {
        serde_json::from_value(response["patch"].clone()).expect("a patch")
    }
}
