//! Kubernetes events (`events.k8s.io/v1`) about reconciled objects, sent in the background as
//! controller-runtime's recorder does: a reconcile never waits for one, and a failure to publish
//! one is logged, never fails it.
//!
//! An event that repeats for the same object becomes a series on the first Event (a count and
//! the time last seen), as with kube's `Recorder` and client-go's correlator. What is remembered
//! per event is its name and count, swept after a few minutes; kube's `Recorder` keeps each whole
//! Event and scans them all on every publish, which at 10,000 objects was a third of the
//! manager's memory (`cargo bench --bench operators` in kopgen).

use std::sync::{Arc, Mutex};

use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    runtime::events::EventType,
};
use serde_json::json;
use tracing::warn;

use crate::{leadership::Leadership, recent::Recent};

/// How many events may be on their way at once: past it an event is dropped, with a warning,
/// rather than queued without bound while the API server is slow (events are best-effort, as
/// client-go's broadcaster drops them when its queue is full).
const IN_FLIGHT: usize = 64;

/// How long an event's request may take.
const EVENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest note the API server accepts (`events.k8s.io/v1` validation): 1 kB.
pub const NOTE_LIMIT: usize = 1024;

/// `note` cut to [`NOTE_LIMIT`] bytes at a character boundary, ending with `…` when cut: the
/// most useful warnings (a long 422, a webhook's denial) are the longest, and an event whose note
/// is too long is refused whole.
fn bounded(mut note: String) -> String {
    const MORE: &str = "…";
    if note.len() <= NOTE_LIMIT {
        return note;
    }
    let mut end = NOTE_LIMIT - MORE.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note.truncate(end);
    note.push_str(MORE);
    note
}

/// Publishes events as this manager (`reportingController`) and this replica
/// (`reportingInstance`, the pod name).
#[derive(Clone)]
pub struct Events {
    client: Client,
    /// The manager's name, reported as the events' `reportingController`.
    manager: String,
    instance: String,
    /// Per object, type and reason: the Event published last and how often.
    published: Arc<Mutex<Recent<Published>>>,
    /// Events leave only a replica that leads.
    leadership: Leadership,
    /// Bounds the events on their way (see [`IN_FLIGHT`]).
    in_flight: Arc<tokio::sync::Semaphore>,
}

#[derive(Clone)]
struct Published {
    name: String,
    count: i32,
}

impl Events {
    /// A publisher reporting as `manager` (`reportingController`) and as this pod
    /// (`reportingInstance`: `POD_NAME`, or the manager's name outside a pod), while
    /// `leadership` says this replica leads.
    pub fn new(client: Client, manager: &str, leadership: Leadership) -> Self {
        Self {
            client,
            manager: manager.to_owned(),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| manager.to_owned()),
            published: Arc::default(),
            leadership,
            in_flight: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
        }
    }

    /// The same publisher, publishing while `leadership` says this replica leads.
    pub(crate) fn fenced(mut self, leadership: Leadership) -> Self {
        self.leadership = leadership;
        self
    }

    /// Publishes in the background an event about `object`: `reason` in UpperCamelCase, `note`
    /// for people. Events of a cluster-scoped object go to namespace `default`.
    pub fn publish<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        if !self.leadership.is_leading() {
            return;
        }
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            warn!(reason, "too many events on their way; this one is dropped");
            return;
        };
        let note = bounded(note);
        let regarding = object.object_ref(&());
        let type_ = match type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        // The note too: two children created are two events, the same failure repeated is one.
        let key = format!(
            "{}/{type_}/{reason}/{note}",
            regarding.uid.as_deref().unwrap_or_default()
        );
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let previous = self
            .published
            .lock()
            .ok()
            .and_then(|published| published.get(&key).cloned());
        let event = self.event(regarding, type_, reason, note);
        let (client, published) = (self.client.clone(), self.published.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let api: Api<Event> = Api::namespaced(client, &namespace);
            let now = MicroTime(Timestamp::now());
            let result = match previous {
                Some(Published { name, count }) => {
                    let series =
                        json!({ "series": { "count": count + 1, "lastObservedTime": now } });
                    let params = PatchParams::default();
                    let patch = Patch::Merge(series);
                    let written = api.patch(&name, &params, &patch);
                    let written = match tokio::time::timeout(EVENT_TIMEOUT, written).await {
                        Ok(written) => written,
                        Err(_) => Err(timed_out()),
                    };
                    written.map(|_| Published {
                        name,
                        count: count + 1,
                    })
                }
                None => match tokio::time::timeout(
                    EVENT_TIMEOUT,
                    api.create(&PostParams::default(), &event),
                )
                .await
                {
                    Ok(created) => created,
                    Err(_) => Err(timed_out()),
                }
                .map(|_| Published {
                    name: event.metadata.name.unwrap_or_default(),
                    count: 1,
                }),
            };
            match result {
                Ok(now_published) => {
                    if let Ok(mut published) = published.lock() {
                        published.insert(key, now_published);
                    }
                }
                Err(error) => warn!(%error, "failed to publish event"),
            }
        });
    }

    fn event(&self, regarding: ObjectReference, type_: &str, reason: &str, note: String) -> Event {
        let now = Timestamp::now();
        let object = regarding
            .name
            .clone()
            .unwrap_or_else(|| self.manager.clone());
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            action: Some("Reconcile".into()),
            reason: Some(reason.to_owned()),
            note: Some(note),
            type_: Some(type_.to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding),
            reporting_controller: Some(self.manager.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        }
    }
}

/// The error of an event request that took longer than [`EVENT_TIMEOUT`].
fn timed_out() -> kube::Error {
    let status = kube::core::Status::failure("the event was not written in time", "Timeout");
    kube::Error::Api(status.with_code(504).boxed())
}

#[cfg(test)]
mod tests {
    #[test]
    fn notes_are_cut_to_what_the_api_server_accepts() {
        let short = "short".to_owned();
        assert_eq!(super::bounded(short.clone()), short);
        let long = "é".repeat(800);
        let cut = super::bounded(long);
        assert!(cut.len() <= super::NOTE_LIMIT, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.len() > super::NOTE_LIMIT - 8, "cut no more than needed");
    }

    use http::{Method, StatusCode};
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::testing::{events_path, mock_context};

    #[tokio::test]
    async fn a_repeated_event_is_counted_on_the_first_one() {
        let (ctx, mut server) = mock_context();
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("testns".into()),
                uid: Some("u-1".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let path = events_path(&object);
        ctx.events
            .publish(&object, EventType::Normal, "Updated", "once".into());
        let created = server
            .expect(Method::POST, &path, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(created.body["reason"], "Updated");
        assert_eq!(created.body["regarding"]["uid"], "u-1");
        let name = created.body["metadata"]["name"]
            .as_str()
            .expect("a name")
            .to_owned();
        // Remembered once the API server answered.
        while ctx.events.published.lock().expect("lock").is_empty() {
            tokio::task::yield_now().await;
        }
        ctx.events
            .publish(&object, EventType::Normal, "Updated", "once".into());
        let patched = server
            .expect(
                Method::PATCH,
                &format!("{path}/{name}"),
                StatusCode::OK,
                json!({}),
            )
            .await;
        assert_eq!(patched.body["series"]["count"], 2);
        // Another note is another event: each child created is told of.
        ctx.events
            .publish(&object, EventType::Normal, "Updated", "other".into());
        let another = server
            .expect(Method::POST, &path, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(another.body["note"], "other");
        // Another reason is another event.
        ctx.events
            .publish(&object, EventType::Warning, "Failed", "no".into());
        let other = server
            .expect(Method::POST, &path, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(other.body["type"], "Warning");
    }

    /// While the API server does not answer, at most [`IN_FLIGHT`] events wait; the others are
    /// dropped. A replica that does not lead sends none.
    #[tokio::test]
    async fn events_on_their_way_are_bounded_and_only_a_leader_sends_them() {
        let (service, mut handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        let client = Client::new(service, "testns");
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("testns".into()),
                uid: Some("u-1".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let follower = Events::new(client.clone(), "m", Leadership::elected());
        follower.publish(&object, EventType::Normal, "Created", "no".into());
        let events = Events::new(client, "m", Leadership::default());
        for i in 0..IN_FLIGHT + 10 {
            events.publish(&object, EventType::Normal, "Created", format!("child {i}"));
        }
        let mut unanswered = Vec::new();
        let wait = std::time::Duration::from_millis(300);
        while let Ok(Some(request)) = tokio::time::timeout(wait, handle.next_request()).await {
            unanswered.push(request);
        }
        assert_eq!(unanswered.len(), IN_FLIGHT);
    }
}
