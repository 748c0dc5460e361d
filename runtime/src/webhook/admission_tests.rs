use std::sync::Arc;

use http::{Request, Response};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Client,
    client::Body,
    core::{DynamicObject, admission::AdmissionReview},
};
use serde_json::{Value, json};
use tower_test::mock;

use super::admission::{
    Defaulter, Denied, FieldError, Review, Validator, Verdict, Warnings, mutate, validate,
};
use crate::{Context, metrics::Metrics};

/// A context whose client answers nothing: these webhooks never ask the cluster.
fn context() -> Context {
    let (service, _) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    Context::new(client, "test-manager", Arc::new(Metrics::default()), None)
}

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
            "userInfo": {"username": "admin", "groups": ["system:masters"]},
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

fn port(cm: &ConfigMap) -> Option<&String> {
    cm.data.as_ref().and_then(|data| data.get("port"))
}

impl Defaulter for ConfigMap {
    async fn set_defaults(&mut self, review: &Review<'_>) -> Result<(), Denied> {
        if port(self).is_some_and(|port| port == "refuse") {
            return Err(Denied::new("no defaults for this one"));
        }
        let data = self.data.get_or_insert_default();
        data.entry("port".into()).or_insert_with(|| "8080".into());
        // A defaulter may remove too.
        data.remove("obsolete");
        // What the review knows of the request.
        if let Some(user) = &review.user.username {
            data.entry("by".into()).or_insert_with(|| user.clone());
        }
        Ok(())
    }
}

impl Validator for ConfigMap {
    async fn validate_create(&self, _: &Review<'_>) -> Verdict {
        match port(self) {
            Some(port) if port.parse::<u16>().is_err() => Err(Denied::invalid([
                FieldError::invalid("data.port", port, "must be a port number"),
                FieldError::required("data.host", ""),
            ])),
            None => Ok(vec!["no port: 8080 is assumed".into()]),
            Some(_) => Ok(Warnings::new()),
        }
    }

    async fn validate_update(&self, old: &Self, _: &Review<'_>) -> Verdict {
        if port(old) != port(self) {
            return Err(Denied::new("port is immutable").with_warnings(vec!["see docs".into()]));
        }
        Ok(Warnings::new())
    }

    async fn validate_delete(&self, review: &Review<'_>) -> Verdict {
        match review
            .user
            .groups
            .iter()
            .flatten()
            .any(|g| g == "system:masters")
        {
            true => Err(Denied::new("never deleted, not even by admins")),
            false => Ok(Warnings::new()),
        }
    }
}

#[tokio::test]
async fn defaulting_answers_with_a_patch_that_adds_only_the_defaults() {
    let body = review("CREATE", config_map(json!({"a": "1"})), Value::Null);
    let response = answer(mutate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch: Value = serde_json::from_slice(&patch_of(&response)).expect("JSON patch");
    assert_eq!(
        patch,
        json!([
            {"op": "add", "path": "/data/by", "value": "admin"},
            {"op": "add", "path": "/data/port", "value": "8080"},
        ])
    );
}

/// What the defaulter removes is removed; what only the round trip through the Rust type drops
/// (a field the type does not know, from a newer client) is kept.
#[tokio::test]
async fn defaulting_removes_what_the_defaulter_removes_and_nothing_else() {
    let mut object = config_map(json!({"port": "1", "by": "someone", "obsolete": "x"}));
    object["fieldOfANewerVersion"] = json!({"kept": true});
    let body = review("CREATE", object, Value::Null);
    let response = answer(mutate::<ConfigMap>(&context(), &body).await);
    let patch: Value = serde_json::from_slice(&patch_of(&response)).expect("JSON patch");
    assert_eq!(patch, json!([{"op": "remove", "path": "/data/obsolete"}]));
}

/// An UPDATE of an object near etcd's limit, with its old version, is over axum's 2 MB: the
/// webhook takes controller-runtime's 7 MiB.
#[tokio::test]
async fn reviews_of_large_objects_are_taken() {
    use tower::ServiceExt;
    let large = "x".repeat(1_400_000);
    let body = review(
        "UPDATE",
        config_map(json!({"port": "1", "blob": large})),
        config_map(json!({"port": "1", "blob": large})),
    );
    assert!(body.len() > 2_500_000);
    let router =
        super::admission::validating::<ConfigMap>("/validate").with_state(Arc::new(context()));
    let request = http::Request::post("/validate")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body))
        .expect("a request");
    let response = router.oneshot(request).await.expect("answered");
    assert_eq!(response.status(), http::StatusCode::OK);
}

#[tokio::test]
async fn defaulting_an_object_that_needs_nothing_sends_no_patch() {
    let object = config_map(json!({"port": "1", "by": "someone"}));
    let body = review("CREATE", object, Value::Null);
    let response = answer(mutate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["allowed"], true);
    assert!(response.get("patch").is_none(), "{response}");
}

#[tokio::test]
async fn a_defaulter_can_refuse() {
    let body = review("CREATE", config_map(json!({"port": "refuse"})), Value::Null);
    let response = answer(mutate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["message"], "no defaults for this one");
}

#[tokio::test]
async fn fields_the_type_does_not_know_are_never_removed() {
    let mut object = config_map(json!({}));
    object["futureField"] = json!({"kept": true});
    let body = review("CREATE", object, Value::Null);
    let response = answer(mutate::<ConfigMap>(&context(), &body).await);
    let patch = patch_of(&response);
    assert!(!String::from_utf8_lossy(&patch).contains("remove"));
}

/// As apimachinery's `NewInvalid`: 422, reason `Invalid`, the kind and name in the message and
/// in `details`, one cause per field with the API server's own wording.
#[tokio::test]
async fn a_refusal_naming_fields_is_a_422_with_a_cause_per_field() {
    let body = review("CREATE", config_map(json!({"port": "http"})), Value::Null);
    let response = answer(validate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["allowed"], false);
    let status = &response["status"];
    assert_eq!(status["code"], 422, "{response}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "ConfigMap \"web\" is invalid: [data.port: Invalid value: \"http\": must be a port \
         number, data.host: Required value]"
    );
    assert_eq!(
        status["details"],
        json!({
            "name": "web",
            "kind": "ConfigMap",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: \"http\": must be a port number",
                    "field": "data.port",
                },
                {"reason": "FieldValueRequired", "message": "Required value", "field": "data.host"},
            ],
        })
    );
}

#[test]
fn field_errors_read_as_the_api_servers() {
    let cases = [
        (
            FieldError::invalid("spec.size", 12, "must be at most 10"),
            "spec.size: Invalid value: 12: must be at most 10",
        ),
        (
            FieldError::required("spec.schedule", "a cron schedule"),
            "spec.schedule: Required value: a cron schedule",
        ),
        (
            FieldError::forbidden("spec.name", "may not change"),
            "spec.name: Forbidden: may not change",
        ),
        (
            FieldError::not_supported("spec.policy", "Sometimes", &["Allow", "Forbid"]),
            "spec.policy: Unsupported value: \"Sometimes\": \
             supported values: \"Allow\", \"Forbid\"",
        ),
    ];
    for (error, expected) in cases {
        assert_eq!(error.to_string(), expected);
    }
}

#[tokio::test]
async fn a_plain_refusal_is_a_403_with_its_message_and_warnings() {
    let old = config_map(json!({"port": "80"}));
    let body = review("UPDATE", config_map(json!({"port": "81"})), old.clone());
    let response = answer(validate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
    assert_eq!(response["status"]["message"], "port is immutable");
    assert_eq!(response["warnings"], json!(["see docs"]));
}

#[tokio::test]
async fn warnings_reach_the_user_of_an_admitted_object() {
    let body = review("CREATE", config_map(json!({})), Value::Null);
    let response = answer(validate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["allowed"], true);
    assert_eq!(response["warnings"], json!(["no port: 8080 is assumed"]));
}

#[tokio::test]
async fn an_update_is_judged_against_the_old_object_and_a_delete_by_who_asks() {
    let old = config_map(json!({"port": "80"}));
    let body = review("UPDATE", config_map(json!({"port": "80"})), old.clone());
    let response = answer(validate::<ConfigMap>(&context(), &body).await);
    assert_eq!(response["allowed"], true);
    let body = review("DELETE", Value::Null, old);
    let response = answer(validate::<ConfigMap>(&context(), &body).await);
    assert_eq!(
        response["status"]["message"],
        "never deleted, not even by admins"
    );
}

#[tokio::test]
async fn a_body_that_is_no_review_is_refused_not_a_panic() {
    let ctx = context();
    for body in [&b"{"[..], b"{}", b"[]", b"{\"request\":{}}"] {
        let response = answer(validate::<ConfigMap>(&ctx, body).await);
        assert_eq!(response["allowed"], false, "{response}");
        let response = answer(mutate::<ConfigMap>(&ctx, body).await);
        assert_eq!(response["allowed"], false, "{response}");
    }
    let body = review(
        "CREATE",
        json!({"kind": "ConfigMap", "data": 7}),
        Value::Null,
    );
    let response = answer(validate::<ConfigMap>(&ctx, &body).await);
    assert_eq!(response["allowed"], false, "{response}");
}

/// The patch's bytes: kube sends them as a JSON array of numbers, which the API server reads
/// as Go reads a `[]byte` array.
fn patch_of(response: &Value) -> Vec<u8> {
    serde_json::from_value(response["patch"].clone()).expect("a patch")
}

/// A defaulter whose code panics (a bug of the project's own).
impl Defaulter for k8s_openapi::api::core::v1::Secret {
    async fn set_defaults(&mut self, _: &Review<'_>) -> Result<(), Denied> {
        panic!("the project's defaulting panicked");
    }
}

/// A panic in a webhook answers the API server 500 with the panic's message, is counted in
/// controller-runtime's `controller_runtime_webhook_panics_total`, and the server goes on.
#[tokio::test]
async fn a_webhook_that_panics_answers_500_and_is_counted() {
    use tower::ServiceExt;
    let webhooks = super::Webhooks {
        routes: vec![|| super::admission::defaulting::<k8s_openapi::api::core::v1::Secret>("/m")],
        ..super::Webhooks::default()
    };
    let context = Arc::new(context());
    let router = webhooks.router(context.clone());
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    for _ in 0..2 {
        let request = http::Request::post("/m")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(review(
                "CREATE",
                secret.clone(),
                Value::Null,
            )))
            .expect("a request");
        let response = router.clone().oneshot(request).await.expect("answered");
        assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("a body");
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("the project's defaulting panicked"), "{body}");
    }
    let metrics = context.metrics.encode().expect("encodes");
    assert!(
        metrics.contains("controller_runtime_webhook_panics_total 2"),
        "{metrics}"
    );
}
