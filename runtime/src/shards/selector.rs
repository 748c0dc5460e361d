//! kube's list and watch requests carry no `shardSelector` (kube-rs has no field for it): a
//! client of its own for each sharded watch adds it to every request it sends. Such a client
//! serves one watch, so every request it sees is that watch's list or watch of one collection.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use http::{Request, Response, Uri};
use kube::{Client, client::Body};

/// A client that sends `selector` as the `shardSelector` of every GET, through `client`.
pub fn client(client: &Client, selector: &str) -> Client {
    let default_namespace = client.default_namespace().to_owned();
    let service = WithSelector {
        client: client.clone(),
        parameter: form_urlencoded::Serializer::new(String::new())
            .append_pair("shardSelector", selector)
            .finish(),
    };
    Client::new(service, default_namespace)
}

#[derive(Clone)]
struct WithSelector {
    client: Client,
    /// `shardSelector=…`, encoded.
    parameter: String,
}

impl tower::Service<Request<Body>> for WithSelector {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = kube::Result<Response<Body>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<kube::Result<()>> {
        // The wrapped client waits for its own readiness in `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        if request.method() == http::Method::GET
            && let Some(uri) = with_parameter(request.uri(), &self.parameter)
        {
            *request.uri_mut() = uri;
        }
        let client = self.client.clone();
        Box::pin(async move { client.send(request).await })
    }
}

/// `uri` with `parameter` appended to its query.
fn with_parameter(uri: &Uri, parameter: &str) -> Option<Uri> {
    let path = uri.path();
    let joined = match uri.query() {
        Some(query) if !query.is_empty() => format!("{path}?{query}&{parameter}"),
        _ => format!("{path}?{parameter}"),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(joined.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_is_appended_to_the_query_encoded() {
        let parameter = form_urlencoded::Serializer::new(String::new())
            .append_pair(
                "shardSelector",
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            )
            .finish();
        let uri: Uri = "/apis/apps.example.com/v1/blogs?watch=true&labelSelector=a%3Db"
            .parse()
            .expect("a URI");
        let with = with_parameter(&uri, &parameter).expect("a URI");
        assert_eq!(
            with.to_string(),
            "/apis/apps.example.com/v1/blogs?watch=true&labelSelector=a%3Db&shardSelector=\
             shardRange%28object.metadata.uid%2C+%270x0000000000000000%27%2C+\
             %270x8000000000000000%27%29"
        );
        let bare: Uri = "/api/v1/configmaps".parse().expect("a URI");
        assert_eq!(
            with_parameter(&bare, "shardSelector=x").map(|u| u.to_string()),
            Some("/api/v1/configmaps?shardSelector=x".to_owned())
        );
    }

    #[tokio::test]
    async fn every_get_the_client_sends_carries_the_selector() {
        use tower_test::mock;
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let base = Client::new(service, "default");
        let sharded = client(&base, "shardRange(object.metadata.namespace, '0x0', '0x1')");
        let server = tokio::spawn(async move {
            let (request, send) = handle.next_request().await.expect("a request");
            send.send_response(
                Response::builder()
                    .body(Body::from(
                        br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}"#
                            .to_vec(),
                    ))
                    .expect("a response"),
            );
            request.uri().to_string()
        });
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::all(sharded);
        api.list(&kube::api::ListParams::default().limit(1))
            .await
            .expect("listed");
        let uri = server.await.expect("served");
        assert!(
            uri.starts_with("/api/v1/configmaps?&limit=1&shardSelector=shardRange")
                || uri.starts_with("/api/v1/configmaps?limit=1&shardSelector=shardRange"),
            "{uri}"
        );
    }
}
