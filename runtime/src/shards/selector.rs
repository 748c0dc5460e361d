//! kube's list and watch requests carry no `shardSelector` (kube-rs has no field for it), and a
//! watch's label selector is fixed when it starts. So each sharded watch has a client of its
//! own, a `tower` service that asks for the buckets the watch covers *now* in every GET it
//! sends: the reconciled kind by its `shardSelector` ranges, children by leaving the other
//! buckets' label out. Such a client serves one watch, so every request it sees is that watch's
//! list or watch of one collection.
//!
//! When the watch covers fewer buckets (some given up to a replica that joined), the service
//! ends the watch response it is streaming, at the end of an event. kube's watcher then watches
//! again from the last version it saw, without a list, and asks for less: the API server stops
//! sending what this replica would only decode to drop. Without this, a replica that once held
//! every bucket (the first to start) would receive every object's events for good.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body::Frame;
use kube::{Client, client::Body};
use tokio::sync::watch;

use super::{BUCKETS, Held, SHARD_LABEL, hash};

/// How a watch asks the API server for the buckets it covers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Asks {
    /// By `shardSelector` ranges of this field's hash (needs the `ShardedListAndWatch` gate).
    Ranges(&'static str),
    /// By leaving out the objects labelled ([`SHARD_LABEL`]) with a bucket it does not cover.
    Label,
}

/// A client that asks, in every GET it sends through `client`, for the buckets `covered` says
/// (read at each request), and ends a watch response once they change.
pub(crate) fn client(client: &Client, asks: Asks, covered: watch::Receiver<Held>) -> Client {
    let default_namespace = client.default_namespace().to_owned();
    let service = Narrowed {
        client: client.clone(),
        asks,
        covered,
    };
    Client::new(service, default_namespace)
}

struct Narrowed {
    client: Client,
    asks: Asks,
    covered: watch::Receiver<Held>,
}

impl tower::Service<Request<Body>> for Narrowed {
    type Response = Response<Watched>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = kube::Result<Response<Watched>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<kube::Result<()>> {
        // The wrapped client waits for its own readiness in `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let covered = *self.covered.borrow_and_update();
        let mut watching = false;
        if request.method() == http::Method::GET {
            watching = is_watch(request.uri());
            if let Some(uri) = asking(request.uri(), self.asks, &covered) {
                *request.uri_mut() = uri;
            }
        }
        // Fires on the next change of the buckets covered (never once the watch is gone).
        let mut later = self.covered.clone();
        let narrowed = watching.then(|| -> Pin<Box<dyn Future<Output = ()> + Send>> {
            Box::pin(async move {
                if later.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            })
        });
        let client = self.client.clone();
        Box::pin(async move {
            let response = client.send(request).await?;
            Ok(response.map(|body| Watched {
                body,
                narrowed,
                ending: false,
                whole: true,
            }))
        })
    }
}

/// A response body that, if it is a watch's, ends once the buckets covered change, after the
/// last whole event (line) it passed on.
struct Watched {
    body: Body,
    /// Resolves when the buckets covered change (a watch's response only).
    narrowed: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Whether they changed.
    ending: bool,
    /// Whether what was passed on ends with a whole event.
    whole: bool,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = kube::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<kube::Result<Frame<Bytes>>>> {
        let this = &mut *self;
        if let Some(narrowed) = &mut this.narrowed
            && narrowed.as_mut().poll(cx).is_ready()
        {
            this.narrowed = None;
            this.ending = true;
        }
        if this.ending && this.whole {
            return Poll::Ready(None);
        }
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
            && !data.is_empty()
        {
            this.whole = data.ends_with(b"\n");
        }
        Poll::Ready(frame)
    }
}

/// Whether `uri` is a watch request.
fn is_watch(uri: &Uri) -> bool {
    let query = uri.query().unwrap_or_default();
    form_urlencoded::parse(query.as_bytes())
        .any(|(name, value)| name == "watch" && matches!(value.as_ref(), "true" | "1"))
}

/// `uri` asking for the buckets `covered` only, as `asks` says; `None` if it need not change.
fn asking(uri: &Uri, asks: Asks, covered: &Held) -> Option<Uri> {
    let query = uri.query().unwrap_or_default();
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    match asks {
        Asks::Ranges(field) => {
            pairs.push(("shardSelector".into(), hash::selector(field, covered)?))
        }
        Asks::Label => {
            let excluded = excluding(covered)?;
            match pairs.iter_mut().find(|(name, _)| name == "labelSelector") {
                Some((_, labels)) if !labels.is_empty() => *labels = format!("{labels},{excluded}"),
                Some((_, labels)) => *labels = excluded,
                None => pairs.push(("labelSelector".into(), excluded)),
            }
        }
    }
    let path = format!("{}?", uri.path());
    let position = path.len();
    let mut joined = form_urlencoded::Serializer::for_suffix(path, position);
    joined.extend_pairs(pairs);
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(joined.finish().parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// The label selector that leaves out the objects of the buckets not `covered`, if any.
fn excluding(covered: &Held) -> Option<String> {
    let others: Vec<String> = (0..BUCKETS)
        .filter(|&bucket| !covered[bucket])
        .map(|bucket| bucket.to_string())
        .collect();
    (!others.is_empty()).then(|| format!("{SHARD_LABEL} notin ({})", others.join(",")))
}

#[cfg(test)]
mod tests {
    use futures::{StreamExt, channel::mpsc};
    use http_body_util::StreamBody;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, WatchEvent, WatchParams};
    use tower_test::mock;

    use super::*;

    fn holding(buckets: std::ops::Range<usize>) -> Held {
        std::array::from_fn(|bucket| buckets.contains(&bucket))
    }

    #[test]
    fn a_request_asks_for_the_buckets_covered_by_ranges_or_by_label() {
        let uri: Uri = "/apis/apps.example.com/v1/blogs?watch=true&labelSelector=a%3Db"
            .parse()
            .expect("a URI");
        let ranges = asking(&uri, Asks::Ranges("object.metadata.uid"), &holding(0..30));
        assert_eq!(
            ranges.map(|uri| uri.to_string()).as_deref(),
            Some(
                "/apis/apps.example.com/v1/blogs?watch=true&labelSelector=a%3Db&shardSelector=\
                 shardRange%28object.metadata.uid%2C+%270x0000000000000000%27%2C+\
                 %270x8000000000000000%27%29"
            )
        );
        let label = asking(&uri, Asks::Label, &holding(0..58));
        assert_eq!(
            label.map(|uri| uri.to_string()).as_deref(),
            Some(
                "/apis/apps.example.com/v1/blogs?watch=true&labelSelector=\
                 a%3Db%2Ckopgen.io%2Fshard+notin+%2858%2C59%29"
            ),
            "the label selector asked for is kept"
        );
        let bare: Uri = "/api/v1/configmaps".parse().expect("a URI");
        let label = asking(&bare, Asks::Label, &holding(1..60));
        assert_eq!(
            label.map(|uri| uri.to_string()).as_deref(),
            Some("/api/v1/configmaps?labelSelector=kopgen.io%2Fshard+notin+%280%29")
        );
        assert!(
            asking(&bare, Asks::Label, &holding(0..60)).is_none(),
            "all covered"
        );
        assert!(is_watch(&uri) && !is_watch(&bare));
    }

    /// A watch response goes on until the buckets covered change, then ends after the event it
    /// is in the middle of; kube's watcher then watches again, and asks for less.
    #[tokio::test]
    async fn a_watch_ends_at_an_event_once_its_buckets_shrink_and_then_asks_for_less() {
        type Frames = mpsc::UnboundedSender<Result<Frame<Bytes>, std::convert::Infallible>>;
        let (service, mut handle) = mock::pair::<Request<Body>, Response<StreamBody<_>>>();
        let base = Client::new(service, "default");
        let (cover, covered) = watch::channel(holding(0..60));
        let api: Api<ConfigMap> = Api::all(client(&base, Asks::Label, covered));
        let (asked, mut frames) = mpsc::unbounded::<(String, Frames)>();
        let server = tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                let (sender, body) = mpsc::unbounded();
                send.send_response(Response::new(StreamBody::new(body)));
                let _ = asked.unbounded_send((request.uri().to_string(), sender));
            }
        });
        let event = |name: &str| {
            let metadata = serde_json::json!({ "name": name, "resourceVersion": "2" });
            let kind = ("v1", "ConfigMap");
            let object =
                serde_json::json!({ "apiVersion": kind.0, "kind": kind.1, "metadata": metadata });
            serde_json::json!({ "type": "ADDED", "object": object }).to_string()
        };
        let frame = |text: &str| Ok(Frame::data(Bytes::from(text.to_owned())));
        let name = |e: Option<kube::Result<WatchEvent<ConfigMap>>>| match e {
            Some(Ok(WatchEvent::Added(cm))) => cm.metadata.name,
            other => panic!("{other:?}"),
        };

        // kube's watcher reads the watch as it comes.
        let watch = api
            .watch(&WatchParams::default(), "1")
            .await
            .expect("watching");
        let (received, mut events) = mpsc::unbounded();
        let reader = tokio::spawn(async move {
            let mut watch = watch.boxed();
            while let Some(event) = watch.next().await {
                let _ = received.unbounded_send(event);
            }
        });
        let (uri, body) = frames.next().await.expect("asked");
        assert!(!uri.contains("labelSelector"), "every bucket: {uri}");
        body.unbounded_send(frame(&format!("{}\n", event("a"))))
            .expect("open");
        assert_eq!(name(events.next().await).as_deref(), Some("a"));

        // Half an event is on its way when a bucket is given up: it is passed on whole.
        let b = event("b");
        let (head, tail) = b.split_at(20);
        body.unbounded_send(frame(head)).expect("open");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cover.send_modify(|held| held[59] = false);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        body.unbounded_send(frame(&format!("{tail}\n")))
            .expect("open");
        assert_eq!(name(events.next().await).as_deref(), Some("b"));
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), reader);
        assert!(
            ended.await.is_ok(),
            "the watch ends, the server's side still open"
        );
        assert!(
            events.next().await.is_none(),
            "nothing after the event it was in"
        );

        let _events = api
            .watch(&WatchParams::default(), "2")
            .await
            .expect("watching");
        let (uri, _body) = frames.next().await.expect("asked again");
        assert!(
            uri.contains("labelSelector=kopgen.io%2Fshard+notin+%2859%29"),
            "{uri}"
        );
        server.abort();
    }
}
