//! Defaulting and validating webhooks: a kind says what to default and what to refuse by
//! implementing [`Defaulter`] and [`Validator`]; this module turns that into
//! `AdmissionReview` answers.

use std::{future::Future, sync::Arc};

use axum::{
    Json,
    body::Bytes,
    extract::{DefaultBodyLimit, State},
    routing::post,
};
use json_patch::PatchOperation;
use k8s_openapi::api::authentication::v1::UserInfo;
use kube::core::{
    DynamicObject, Resource, Status,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation},
    response::{StatusCause, StatusDetails},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::Routes;
use crate::Context;

/// What a validation says: `Ok` with warnings for the user (often none), or `Err` to refuse.
pub type Verdict = std::result::Result<Warnings, Denied>;

/// Messages shown to whoever made the request (kubectl prints them), the object still admitted.
pub type Warnings = Vec<String>;

/// What the objects of a webhook must be.
pub trait Admitted:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
}

impl<K> Admitted for K where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
}

/// A request as a webhook sees it, beside the objects: the manager's context (its client, the
/// project's state) and who asks. Async, so that a rule may read the cluster (is the name
/// free? does the referenced Secret exist?) as controller-runtime's webhooks can.
pub struct Review<'a> {
    /// The manager's context: [`Context::client`], [`Context::state`].
    pub context: &'a Context,
    /// Who made the request, as the API server authenticated them.
    pub user: UserInfo,
    /// What is being done: create, update or delete.
    pub operation: Operation,
    /// Whether the request only asks what would happen (`kubectl --dry-run=server`): a webhook
    /// with side effects must not make them then.
    pub dry_run: bool,
}

impl<'a> Review<'a> {
    /// A review of `operation` by an unnamed user, for tests of a kind's webhooks.
    pub fn new(context: &'a Context, operation: Operation) -> Self {
        Self {
            context,
            user: UserInfo::default(),
            operation,
            dry_run: false,
        }
    }
}

/// Sets what a user left out, on create and on update (controller-runtime's `CustomDefaulter`).
/// It must be idempotent: the API server may call it again after other webhooks changed the
/// object. Fields the Rust type does not know are never removed from the object.
pub trait Defaulter: Admitted {
    /// Fills in the defaults, or refuses the object.
    fn set_defaults(
        &mut self,
        review: &Review<'_>,
    ) -> impl Future<Output = std::result::Result<(), Denied>> + Send;
}

/// Refuses objects that must not be stored (controller-runtime's `CustomValidator`). Rules
/// about the object alone can also be CEL rules in the types (`#[x_kube(validation)]`), which
/// need no webhook.
pub trait Validator: Admitted {
    /// Judges a new object.
    fn validate_create(&self, review: &Review<'_>) -> impl Future<Output = Verdict> + Send;

    /// Judges an update of `old` to `self`: e.g. a field that must never change.
    fn validate_update(
        &self,
        old: &Self,
        review: &Review<'_>,
    ) -> impl Future<Output = Verdict> + Send;

    /// Judges the deletion of `self`; called only where the webhook's marker lists `delete`.
    fn validate_delete(&self, review: &Review<'_>) -> impl Future<Output = Verdict> + Send {
        let _ = review;
        async { Ok(Warnings::new()) }
    }
}

/// A refusal, answered as the API server answers its own: [`Denied::new`] is a 403 `Forbidden`
/// with a message; [`Denied::invalid`] is a 422 `Invalid` naming each field at fault, which
/// kubectl prints field by field and clients read from `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    message: String,
    causes: Vec<FieldError>,
    warnings: Warnings,
}

impl Denied {
    /// A refusal saying `message` (403 `Forbidden`, as controller-runtime's `admission.Denied`).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            causes: Vec::new(),
            warnings: Warnings::new(),
        }
    }

    /// A refusal naming the fields at fault (422 `Invalid`, as apimachinery's `NewInvalid`
    /// with a `field.ErrorList`).
    pub fn invalid(errors: impl IntoIterator<Item = FieldError>) -> Self {
        let causes: Vec<FieldError> = errors.into_iter().collect();
        let message = match causes.as_slice() {
            [one] => one.to_string(),
            many => {
                let all: Vec<String> = many.iter().map(FieldError::to_string).collect();
                format!("[{}]", all.join(", "))
            }
        };
        Self {
            message,
            causes,
            warnings: Warnings::new(),
        }
    }

    /// Adds warnings shown with the refusal.
    pub fn with_warnings(mut self, warnings: Warnings) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The API server's answer for an object of `K` named `name`.
    fn status<K: Resource<DynamicType = ()>>(&self, name: &str) -> Status {
        if self.causes.is_empty() {
            return Status::failure(&self.message, "Forbidden").with_code(403);
        }
        let (kind, group) = (K::kind(&()), K::group(&()));
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = format!("{qualified} {name:?} is invalid: {}", self.message);
        Status::failure(&message, "Invalid")
            .with_code(422)
            .with_details(StatusDetails {
                name: name.to_owned(),
                group: group.into_owned(),
                kind: kind.into_owned(),
                causes: (self.causes.iter())
                    .map(|cause| StatusCause {
                        reason: cause.reason.to_owned(),
                        message: cause.body.clone(),
                        field: cause.field.clone(),
                    })
                    .collect(),
                uid: String::new(),
                retry_after_seconds: 0,
            })
    }
}

/// One field at fault, with apimachinery's reasons and wording (`field.Invalid`,
/// `field.Required`, ...), so users read the same errors from a webhook as from the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    field: String,
    reason: &'static str,
    body: String,
}

impl FieldError {
    /// `field` holds `value`, which is not allowed because of `detail`.
    pub fn invalid(field: &str, value: impl Serialize, detail: &str) -> Self {
        let value = serde_json::to_string(&value).unwrap_or_default();
        Self::new(field, "FieldValueInvalid", "Invalid value", &value, detail)
    }

    /// `field` must be set.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(field, "FieldValueRequired", "Required value", "", detail)
    }

    /// `field` must not be set (or not to this, or not now).
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(field, "FieldValueForbidden", "Forbidden", "", detail)
    }

    /// `field` holds `value`, which is none of `supported`.
    pub fn not_supported(field: &str, value: impl Serialize, supported: &[&str]) -> Self {
        let value = serde_json::to_string(&value).unwrap_or_default();
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::new(
            field,
            "FieldValueNotSupported",
            "Unsupported value",
            &value,
            &detail,
        )
    }

    fn new(field: &str, reason: &'static str, what: &str, value: &str, detail: &str) -> Self {
        let mut body = what.to_owned();
        for part in [value, detail] {
            if !part.is_empty() {
                body.push_str(": ");
                body.push_str(part);
            }
        }
        Self {
            field: field.to_owned(),
            reason,
            body,
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body)
    }
}

/// The largest admission review body taken: controller-runtime's 7 MiB, room for an UPDATE
/// of an object near etcd's 1.5 MiB limit with its old version (axum's default is 2 MB).
pub const ADMISSION_BODY_LIMIT: usize = 7 * 1024 * 1024;

/// Serves the defaulting webhook of `K` at `path`.
pub fn defaulting<K: Defaulter>(path: &str) -> Routes {
    axum::Router::new().route(
        path,
        post(
            |State(context): State<Arc<Context>>, body: Bytes| async move {
                Json(mutate::<K>(&context, &body).await)
            },
        )
        .layer(DefaultBodyLimit::max(ADMISSION_BODY_LIMIT)),
    )
}

/// Serves the validating webhook of `K` at `path`.
pub fn validating<K: Validator>(path: &str) -> Routes {
    axum::Router::new().route(
        path,
        post(
            |State(context): State<Arc<Context>>, body: Bytes| async move {
                Json(validate::<K>(&context, &body).await)
            },
        )
        .layer(DefaultBodyLimit::max(ADMISSION_BODY_LIMIT)),
    )
}

/// Answers a defaulting review: a JSON patch from the object as sent to the object after
/// [`Defaulter::set_defaults`]. What only the round trip through the Rust type changes (fields
/// the type does not know, which it drops; empty values it writes) is left out of the patch, as
/// controller-runtime does, so a webhook built from older types cannot drop a newer client's
/// fields; what the defaulter itself removes (a key, a list item) is removed.
pub async fn mutate<K: Defaulter>(
    context: &Context,
    body: &[u8],
) -> AdmissionReview<DynamicObject> {
    let (request, response) = match read::<K>(body) {
        Ok(read) => read,
        Err(invalid) => return invalid.into_review(),
    };
    let review = request.review(context);
    let Some((raw, mut object)) = request.object else {
        return response.into_review();
    };
    let round_trip = serde_json::to_value(&object);
    if let Err(denied) = object.set_defaults(&review).await {
        return refuse::<K>(response, denied, &request.name).into_review();
    }
    let (round_trip, defaulted) = match (round_trip, serde_json::to_value(&object)) {
        (Ok(round_trip), Ok(defaulted)) => (round_trip, defaulted),
        (Err(error), _) | (_, Err(error)) => {
            return response
                .deny(format!("cannot serialize: {error}"))
                .into_review();
        }
    };
    let artefacts = json_patch::diff(&raw, &round_trip).0;
    let operations: Vec<PatchOperation> = json_patch::diff(&raw, &defaulted)
        .0
        .into_iter()
        .filter(|operation| !artefacts.contains(operation))
        .collect();
    if operations.is_empty() {
        return response.into_review();
    }
    match response.clone().with_patch(json_patch::Patch(operations)) {
        Ok(patched) => patched.into_review(),
        Err(error) => response.deny(error.to_string()).into_review(),
    }
}

/// Answers a validating review with the [`Validator`]'s verdict for the operation.
pub async fn validate<K: Validator>(
    context: &Context,
    body: &[u8],
) -> AdmissionReview<DynamicObject> {
    let (request, response) = match read::<K>(body) {
        Ok(read) => read,
        Err(invalid) => return invalid.into_review(),
    };
    let review = request.review(context);
    let new = request.object.map(|(_, object)| object);
    let old = request.old_object.map(|(_, object)| object);
    let verdict = match (&review.operation, new, old) {
        (Operation::Create, Some(new), _) => new.validate_create(&review).await,
        (Operation::Update, Some(new), Some(old)) => new.validate_update(&old, &review).await,
        (Operation::Delete, _, Some(old)) => old.validate_delete(&review).await,
        (Operation::Connect, _, _) => Ok(Warnings::new()),
        (operation, ..) => Err(Denied::new(format!(
            "{operation:?} request without the objects it needs"
        ))),
    };
    match verdict {
        Ok(warnings) => with_warnings(response, warnings).into_review(),
        Err(denied) => refuse::<K>(response, denied, &request.name).into_review(),
    }
}

fn refuse<K: Admitted>(
    response: AdmissionResponse,
    denied: Denied,
    name: &str,
) -> AdmissionResponse {
    let result = denied.status::<K>(name);
    let mut response = with_warnings(response, denied.warnings);
    response.allowed = false;
    response.result = result;
    response
}

fn with_warnings(mut response: AdmissionResponse, warnings: Warnings) -> AdmissionResponse {
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

/// A request's objects, each as sent (for the patch) and as `K`.
struct Request<K> {
    name: String,
    operation: Operation,
    user: UserInfo,
    dry_run: bool,
    object: Option<(Value, K)>,
    old_object: Option<(Value, K)>,
}

impl<K> Request<K> {
    fn review<'a>(&self, context: &'a Context) -> Review<'a> {
        Review {
            context,
            user: self.user.clone(),
            operation: self.operation.clone(),
            dry_run: self.dry_run,
        }
    }
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
    let name = match (&request.object, &request.old_object) {
        (Some(object), _) | (None, Some(object)) => object.metadata.name.clone(),
        (None, None) => None,
    };
    let request = Request {
        name: name.unwrap_or_else(|| request.name.clone()),
        operation: request.operation.clone(),
        user: request.user_info.clone(),
        dry_run: request.dry_run,
        object: typed(request.object)?,
        old_object: typed(request.old_object)?,
    };
    Ok((request, response))
}
