//! Who may read `/metrics`: the bearer token of each request is checked with a TokenReview
//! (401 when it is missing or not valid) and its user with a SubjectAccessReview for `get` on
//! the `/metrics` URL (403 when not allowed), as controller-runtime's metrics filter does.
//! Grant it with the `metrics-reader` ClusterRole (config/rbac/metrics_reader_role.yaml); the
//! manager's own right to ask is config/rbac/metrics_auth_role.yaml.
//!
//! Answers are cached as controller-runtime's filter caches them (a minute; ten seconds for a
//! token the API server rejected), by a hash of the token and path, so a scrape every few
//! seconds does not cost the API server two reviews each.

use axum::{
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec},
    authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kube::{Api, Client, api::PostParams};
use tracing::warn;

/// How long an answer is kept: controller-runtime's `CacheTTL` (a minute), and 10 s for a token
/// the API server did not accept (its failure TTL).
const ALLOWED_FOR: Duration = Duration::from_secs(60);
const REJECTED_FOR: Duration = Duration::from_secs(10);
/// How many answers are kept at most.
const CACHED: usize = 1024;

/// Answers by a hash of the token and path, with when each expires.
type Answers = HashMap<Vec<u8>, (Access, Instant)>;

/// Checks `/metrics` requests with the API server, remembering its answers for a while.
#[derive(Clone)]
pub struct Checker {
    client: Client,
    answers: Arc<Mutex<Answers>>,
}

impl Checker {
    /// A checker asking through `client`.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            answers: Arc::default(),
        }
    }

    /// Whether `token` may read `path`: the API server's answer, or one it gave recently.
    pub async fn check(&self, token: String, path: &str) -> kube::Result<Access> {
        let key = {
            let mut hashed = ring::digest::Context::new(&ring::digest::SHA256);
            hashed.update(path.as_bytes());
            hashed.update(&[0]);
            hashed.update(token.as_bytes());
            hashed.finish().as_ref().to_vec()
        };
        let now = Instant::now();
        if let Some((access, until)) = self.lock().get(&key)
            && *until > now
        {
            return Ok(access.clone());
        }
        let access = access(&self.client, token, path).await?;
        let ttl = match access {
            Access::Unauthenticated => REJECTED_FOR,
            Access::Allowed | Access::Forbidden => ALLOWED_FOR,
        };
        let mut answers = self.lock();
        if answers.len() >= CACHED && !make_room(&mut answers, &access, now) {
            return Ok(access);
        }
        answers.insert(key, (access.clone(), now + ttl));
        Ok(access)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Answers> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Makes room in a full cache for an answer of `access`: expired answers go first, then the
/// rejected ones (a flood of made-up tokens must not push out the scrapers that were let in),
/// then, for an accepted answer, the one that expires soonest. `false` when a rejected answer
/// finds only accepted ones: it is not kept.
fn make_room(answers: &mut Answers, access: &Access, now: Instant) -> bool {
    answers.retain(|_, (_, until)| *until > now);
    if answers.len() < CACHED {
        return true;
    }
    answers.retain(|_, (kept, _)| *kept != Access::Unauthenticated);
    if answers.len() < CACHED {
        return true;
    }
    if *access == Access::Unauthenticated {
        return false;
    }
    let soonest = (answers.iter())
        .min_by_key(|(_, (_, until))| *until)
        .map(|(key, _)| key.clone());
    if let Some(key) = soonest {
        answers.remove(&key);
    }
    true
}

/// What the API server says about a request's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The token's user may read the path.
    Allowed,
    /// A valid token whose user may not read the path.
    Forbidden,
    /// No token, or one the API server does not accept.
    Unauthenticated,
}

/// Middleware: passes the request on only when its token may read the path.
pub async fn authorize(State(checker): State<Checker>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let access = match token {
        None => Ok(Access::Unauthenticated),
        Some(token) => checker.check(token, request.uri().path()).await,
    };
    match access {
        Ok(Access::Allowed) => next.run(request).await,
        Ok(Access::Forbidden) => (StatusCode::FORBIDDEN, "Forbidden").into_response(),
        Ok(Access::Unauthenticated) => (StatusCode::UNAUTHORIZED, "Unauthorized").into_response(),
        Err(error) => {
            warn!(%error, "cannot check a /metrics request with the API server");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot check the token").into_response()
        }
    }
}

/// Asks the API server who holds `token` and whether they may `get` `path`.
pub async fn access(client: &Client, token: String, path: &str) -> kube::Result<Access> {
    // Optional before Kubernetes 1.36, as k8s-openapi types it for the version the operator picks.
    k8s_openapi::k8s_if_le_1_35! {
        let token = Some(token);
    }
    let review = TokenReview {
        spec: TokenReviewSpec {
            token,
            ..Default::default()
        },
        ..Default::default()
    };
    let reviewed = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    let status = reviewed.status.unwrap_or_default();
    let Some(user) = status.user.filter(|_| status.authenticated == Some(true)) else {
        return Ok(Access::Unauthenticated);
    };
    let question = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some("get".to_owned()),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &question)
        .await?;
    Ok(if answer.status.is_some_and(|s| s.allowed) {
        Access::Allowed
    } else {
        Access::Forbidden
    })
}

#[cfg(test)]
mod tests {
    use http::{Method, StatusCode};
    use serde_json::{Value, json};

    use super::*;
    use crate::testing::mock_context;

    const TOKENS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    const ACCESS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

    async fn access_with(authenticated: bool, allowed: Option<bool>) -> (Access, Vec<Value>) {
        let (ctx, mut api) = mock_context();
        let client = ctx.client.clone();
        drop(ctx);
        let server = tokio::spawn(async move {
            let review = json!({
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {},
                "status": {"authenticated": authenticated,
                           "user": {"username": "system:serviceaccount:monitoring:prometheus",
                                    "groups": ["system:serviceaccounts"]}},
            });
            let mut bodies = vec![
                api.expect(Method::POST, TOKENS, StatusCode::CREATED, review)
                    .await
                    .body
                    .clone(),
            ];
            if let Some(allowed) = allowed {
                let answer = json!({
                    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {}, "status": {"allowed": allowed},
                });
                bodies.push(
                    api.expect(Method::POST, ACCESS, StatusCode::CREATED, answer)
                        .await
                        .body
                        .clone(),
                );
            }
            api.done().await;
            bodies
        });
        let access = access(&client, "t0ken".into(), "/metrics")
            .await
            .expect("the API server answers");
        drop(client);
        (access, server.await.expect("mock"))
    }

    /// A second scrape with the same token asks the API server nothing.
    #[tokio::test]
    async fn answers_are_remembered_for_a_while() {
        let (ctx, mut api) = mock_context();
        let checker = Checker::new(ctx.client.clone());
        drop(ctx);
        let server = tokio::spawn(async move {
            let review = json!({
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {},
                "status": {"authenticated": true, "user": {"username": "prometheus"}},
            });
            api.expect(Method::POST, TOKENS, StatusCode::CREATED, review)
                .await;
            let answer = json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {}, "status": {"allowed": true},
            });
            api.expect(Method::POST, ACCESS, StatusCode::CREATED, answer)
                .await;
            api.done().await.len()
        });
        for _ in 0..3 {
            let access = checker
                .check("t0ken".into(), "/metrics")
                .await
                .expect("answered");
            assert_eq!(access, Access::Allowed);
        }
        drop(checker);
        assert_eq!(
            server.await.expect("mock"),
            2,
            "one review of each kind in all"
        );
    }

    #[tokio::test]
    async fn a_token_the_api_server_rejects_is_unauthenticated_and_asks_nothing_more() {
        let (access, bodies) = access_with(false, None).await;
        assert_eq!(access, Access::Unauthenticated);
        assert_eq!(bodies[0]["spec"]["token"], "t0ken");
    }

    #[tokio::test]
    async fn the_user_of_the_token_is_asked_about_get_on_the_path() {
        let (access, bodies) = access_with(true, Some(false)).await;
        assert_eq!(access, Access::Forbidden);
        let spec = &bodies[1]["spec"];
        assert_eq!(spec["user"], "system:serviceaccount:monitoring:prometheus");
        assert_eq!(spec["groups"], json!(["system:serviceaccounts"]));
        assert_eq!(
            spec["nonResourceAttributes"],
            json!({"path": "/metrics", "verb": "get"})
        );
        let (access, _) = access_with(true, Some(true)).await;
        assert_eq!(access, Access::Allowed);
    }

    #[test]
    fn made_up_tokens_never_push_out_the_scrapers_let_in() {
        let now = Instant::now();
        let mut answers = Answers::new();
        for i in 0..CACHED {
            let access = if i < 10 {
                Access::Allowed
            } else {
                Access::Unauthenticated
            };
            answers.insert(vec![i as u8, (i >> 8) as u8], (access, now + ALLOWED_FOR));
        }
        // A rejected token makes room among the rejected ones only.
        assert!(make_room(&mut answers, &Access::Unauthenticated, now));
        assert_eq!(answers.len(), 10, "the rejected answers went");
        let allowed = |answers: &Answers| {
            (answers.values())
                .filter(|(a, _)| *a == Access::Allowed)
                .count()
        };
        assert_eq!(allowed(&answers), 10);
        // Full of accepted answers: a rejected one is not kept, an accepted one replaces the
        // one expiring soonest.
        let mut full = Answers::new();
        for i in 0..CACHED {
            let until = now + ALLOWED_FOR + Duration::from_millis(i as u64);
            full.insert(vec![i as u8, (i >> 8) as u8], (Access::Allowed, until));
        }
        assert!(!make_room(&mut full, &Access::Unauthenticated, now));
        assert_eq!(full.len(), CACHED);
        assert!(make_room(&mut full, &Access::Allowed, now));
        assert_eq!(full.len(), CACHED - 1);
        assert!(
            !full.contains_key(&vec![0u8, 0u8]),
            "the soonest to expire went"
        );
    }
}
