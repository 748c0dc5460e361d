//! Conversion between a kind's versions: each version converts to and from the hub (the
//! storage version); this module answers the API server's `ConversionReview`s at `/convert`.

use std::{fmt::Display, sync::Arc};

use axum::{Json, body::Bytes, routing::post};
use kube::core::{
    CustomResourceExt, Status,
    conversion::{ConversionRequest, ConversionResponse, ConversionReview},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::{Admitted, Routes};

/// How one kind converts between its versions: through the hub, its storage version, which
/// each other version (a spoke) converts to and from with `TryFrom` (or `From`, which implies
/// it). A conversion that fails answers the review with its error, and the API server fails
/// the request that needed it. The API server asks for any
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

    /// Adds the version `S`, converted through `TryFrom` (or `From`) both ways.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Admitted + CustomResourceExt + TryFrom<H, Error: Display>,
        H: TryFrom<S, Error: Display>,
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

fn spoke_to_hub<S, H>(object: Value) -> std::result::Result<H, String>
where
    S: Admitted,
    H: TryFrom<S, Error: Display>,
{
    let spoke = serde_json::from_value::<S>(object).map_err(|e| e.to_string())?;
    H::try_from(spoke).map_err(|e| e.to_string())
}

fn hub_to_spoke<S, H>(hub: H) -> std::result::Result<Value, String>
where
    S: Admitted + TryFrom<H, Error: Display>,
{
    let spoke = S::try_from(hub).map_err(|e| e.to_string())?;
    serde_json::to_value(spoke).map_err(|e| e.to_string())
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

/// The largest ConversionReview body taken: 64 MiB. controller-runtime sets none; the API
/// server's storage converts objects as it decodes them, each at most etcd's 1.5 MiB, and a
/// review of a list it converts whole is still far below this. Anything that reaches the port
/// can send a body, so with up to `MAX_CONNECTIONS` at once each must be bounded (and read
/// within `REQUEST_TIMEOUT`).
pub const CONVERSION_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Serves `/convert`, the path of every CRD's conversion webhook, for the kinds of `conversions`.
pub fn converting(conversions: Vec<Box<dyn Convert>>) -> Routes {
    let conversions = Arc::new(conversions);
    axum::Router::new().route(
        "/convert",
        post(move |body: Bytes| async move { Json(convert(&body, &conversions)) })
            .layer(axum::extract::DefaultBodyLimit::max(CONVERSION_BODY_LIMIT)),
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

/// Why [`same_fields`] could not carry a value from one version to the other: their fields
/// differ, and the conversion must say how to map them.
#[derive(Debug, thiserror::Error)]
#[error("{0}: the versions' fields differ here; write this field's conversion")]
pub struct FieldsDiffer(String);

/// The fields of `value` read as another type with the same field names: a spoke and its hub
/// while their fields are still alike, as the scaffolded conversions assume. Once they differ
/// (a field only one side has, a field whose type changed) it fails, naming the field, so the
/// conversion (and the API server's request that needed it) fails instead of losing data: a
/// client that read the other version and wrote it back would otherwise erase it.
pub fn same_fields<A: Serialize, B: Serialize + DeserializeOwned>(
    value: A,
) -> Result<B, FieldsDiffer> {
    let from = serde_json::to_value(value).map_err(|e| FieldsDiffer(e.to_string()))?;
    let to: B = serde_json::from_value(from.clone()).map_err(|e| FieldsDiffer(e.to_string()))?;
    let back = serde_json::to_value(&to).map_err(|e| FieldsDiffer(e.to_string()))?;
    match lost(&from, &back) {
        Some(path) => Err(FieldsDiffer(format!(
            "`{path}` has no place in the other version"
        ))),
        None => Ok(to),
    }
}

/// The first field of `from` (dotted, `[i]` for list items) that `to` does not hold with the
/// same value; empty values count as absent (types skip them when they serialize).
fn lost(from: &Value, to: &Value) -> Option<String> {
    let empty = |value: &Value| match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    };
    match (from, to) {
        (Value::Object(from), Value::Object(to)) => {
            from.iter().find_map(|(key, value)| match to.get(key) {
                Some(other) => lost(value, other).map(|path| join(key, &path)),
                None if empty(value) => None,
                None => Some(key.clone()),
            })
        }
        (Value::Array(from), Value::Array(to)) if from.len() == to.len() => (from.iter())
            .zip(to)
            .enumerate()
            .find_map(|(i, (a, b))| lost(a, b).map(|path| join(&format!("[{i}]"), &path))),
        (from, to) if from == to || empty(from) => None,
        _ => Some(String::new()),
    }
}

fn join(head: &str, rest: &str) -> String {
    match rest {
        "" => head.to_owned(),
        rest if rest.starts_with('[') => format!("{head}{rest}"),
        rest => format!("{head}.{rest}"),
    }
}
