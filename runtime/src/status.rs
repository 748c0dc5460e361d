//! Helpers for status conditions, with the semantics of apimachinery's `meta.SetStatusCondition`:
//! `lastTransitionTime` only moves when the condition's status changes, so writing the same
//! condition twice is a no-op and reconciles stay idempotent; whether a child of a built-in
//! workload kind is available yet ([`Available`]), for `Desired::progressing`; and a condition
//! written from `cleanup` ([`apply`]).

use k8s_openapi::{
    api::{
        apps::v1::{DaemonSet, Deployment, StatefulSet},
        batch::v1::Job,
    },
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    Resource, ResourceExt,
    api::{Patch, PatchParams},
};

use crate::{Context, Result};

/// Builds a condition stamped with the current time.
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: Time(Timestamp::now()),
    }
}

/// Builds a condition whose status is `Unknown`: the controller cannot tell yet (an external
/// system did not answer).
pub fn unknown(
    type_: &str,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    Condition {
        status: "Unknown".to_owned(),
        ..condition(type_, false, reason, message, generation)
    }
}

/// Adds or replaces the condition of the same type, keeping its transition time when the
/// status is unchanged.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = new;
        }
        None => conditions.push(new),
    }
}

/// Whether the condition of `type_` is present with status "True".
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// Applies `condition` to `object`'s status with a field manager of its own
/// (`<manager>-conditions`), leaving every other condition and field to its owner: for
/// `cleanup` (a `Degraded` condition while a finalizer's work fails, as the Kubebuilder book's
/// Memcached sets), where no `Desired` is returned. The reconciler's own conditions (`Ready`,
/// `Reconciling`, `Stalled`) are its alone.
pub async fn apply<K>(ctx: &Context, object: &K, condition: Condition) -> Result<()>
where
    K: Resource<DynamicType = ()>,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": { "conditions": [condition] },
    });
    let path = K::url_path(&(), object.meta().namespace.as_deref());
    let manager = format!("{}-conditions", ctx.manager);
    ctx.leadership.check()?;
    let params = PatchParams::apply(&manager).force();
    let request = kube::core::Request::new(path)
        .patch_subresource("status", &object.name_any(), &params, &Patch::Apply(&patch))
        .map_err(kube::Error::BuildRequest)?;
    ctx.client.request::<serde_json::Value>(request).await?;
    Ok(())
}

/// Whether an object of a workload kind is available yet, read from its status as kstatus
/// reads it, for `Desired::progressing`:
///
/// ```
/// # use kopgen_runtime::{Desired, Observed, Reconcile, Result, status::Available};
/// # use kopgen_runtime::k8s_openapi::api::apps::v1::Deployment;
/// # fn example<R: Reconcile>(observed: &Observed<'_>, desired: Desired<R>) -> Result<Desired<R>> {
/// let mut desired = desired;
/// for deployment in observed.children::<Deployment>()? {
///     if let Some(why) = deployment.unavailable() {
///         desired = desired.progressing("DeploymentNotAvailable", why);
///     }
/// }
/// # Ok(desired)
/// # }
/// ```
pub trait Available {
    /// Why the object is not available yet (`"1 of 3 replicas available"`), or `None` once it
    /// is (a Job: once it completed).
    fn unavailable(&self) -> Option<String>;
}

/// Why a workload whose controller has not yet seen its latest generation is not available.
fn unobserved<K: ResourceExt>(object: &K, observed: Option<i64>) -> Option<String> {
    let generation = object.meta().generation?;
    (observed.unwrap_or(0) < generation).then(|| {
        format!(
            "{}: its controller has not seen generation {generation} yet",
            object.name_any()
        )
    })
}

/// The condition of `type_` in `status` whose status is `True`, as JSON (the condition types
/// of workload kinds differ between Kubernetes versions in which fields are optional).
fn true_condition(status: &impl serde::Serialize, type_: &str) -> Option<serde_json::Value> {
    let status = serde_json::to_value(status).ok()?;
    let conditions = status["conditions"].as_array()?;
    (conditions.iter())
        .find(|c| c["type"] == type_ && c["status"] == "True")
        .cloned()
}

/// Why `ready` of `wanted` replicas is not enough, if it is not.
fn short(ready: Option<i32>, wanted: i32, what: &str) -> Option<String> {
    let ready = ready.unwrap_or(0);
    (ready < wanted).then(|| format!("{ready} of {wanted} replicas {what}"))
}

/// The replicas a workload's `spec` asks for (1 when unset): `spec` is required from
/// Kubernetes 1.37 on and optional before, as k8s-openapi types it for the version the operator
/// picks.
macro_rules! replicas {
    ($spec:expr) => {{
        k8s_openapi::k8s_if_le_1_36! {
            let replicas = $spec.as_ref().and_then(|spec| spec.replicas);
        }
        k8s_openapi::k8s_if_ge_1_37! {
            let replicas = $spec.replicas;
        }
        replicas.unwrap_or(1)
    }};
}

impl Available for Deployment {
    fn unavailable(&self) -> Option<String> {
        let status = self.status.clone().unwrap_or_default();
        let wanted = replicas!(self.spec);
        let stuck = (status.conditions.iter().flatten())
            .find(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
        if let Some(stuck) = stuck {
            let message = stuck.message.clone();
            return Some(message.unwrap_or_else(|| "progress deadline exceeded".into()));
        }
        unobserved(self, status.observed_generation)
            .or_else(|| short(status.updated_replicas, wanted, "updated"))
            .or_else(|| short(status.available_replicas, wanted, "available"))
    }
}

impl Available for StatefulSet {
    fn unavailable(&self) -> Option<String> {
        let status = self.status.clone().unwrap_or_default();
        let wanted = replicas!(self.spec);
        unobserved(self, status.observed_generation)
            .or_else(|| short(status.updated_replicas, wanted, "updated"))
            .or_else(|| short(status.ready_replicas, wanted, "ready"))
    }
}

impl Available for DaemonSet {
    fn unavailable(&self) -> Option<String> {
        let status = self.status.clone().unwrap_or_default();
        let wanted = status.desired_number_scheduled;
        unobserved(self, status.observed_generation)
            .or_else(|| short(status.updated_number_scheduled, wanted, "updated"))
            .or_else(|| short(status.number_available, wanted, "available"))
    }
}

impl Available for Job {
    fn unavailable(&self) -> Option<String> {
        let status = self.status.clone().unwrap_or_default();
        if true_condition(&status, "Complete").is_some() {
            return None;
        }
        if let Some(failed) = true_condition(&status, "Failed") {
            let why = failed["message"].as_str().unwrap_or_default();
            return Some(format!("Job {} failed: {why}", self.name_any()));
        }
        let active = status.active.unwrap_or(0);
        Some(format!(
            "Job {} is running ({active} active)",
            self.name_any()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = vec![];
        let mut first = condition("Ready", true, "Reconciled", "ok", Some(1));
        first.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        set_condition(&mut conditions, first);

        set_condition(
            &mut conditions,
            condition("Ready", true, "Reconciled", "still ok", Some(2)),
        );
        assert_eq!(conditions.len(), 1);
        assert_eq!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );
        assert_eq!(conditions[0].observed_generation, Some(2));

        set_condition(
            &mut conditions,
            condition("Ready", false, "Failed", "broken", Some(3)),
        );
        assert_ne!(
            conditions[0].last_transition_time,
            Time(Timestamp::UNIX_EPOCH)
        );
        assert!(!is_true(&conditions, "Ready"));
    }

    #[test]
    fn an_unknown_condition_says_unknown() {
        let condition = unknown("Synced", "NoAnswer", "the DNS API did not answer", Some(2));
        assert_eq!(condition.status, "Unknown");
        assert_eq!(condition.observed_generation, Some(2));
    }

    fn deployment(replicas: i32, status: serde_json::Value) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "web", "generation": 2 },
            "spec": { "replicas": replicas, "selector": {}, "template": {} },
            "status": status,
        }))
        .expect("a Deployment")
    }

    #[test]
    fn a_deployment_is_available_once_its_latest_generation_is_rolled_out() {
        let unseen = deployment(3, serde_json::json!({ "observedGeneration": 1 }));
        assert!(
            unseen
                .unavailable()
                .is_some_and(|m| m.contains("generation 2"))
        );
        let rolling = serde_json::json!({
            "observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 1,
        });
        assert_eq!(
            deployment(3, rolling).unavailable().as_deref(),
            Some("1 of 3 replicas available")
        );
        let crashing = serde_json::json!({
            "observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 2,
            "conditions": [{
                "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"web-1\" has timed out progressing.",
            }],
        });
        assert!(
            deployment(3, crashing)
                .unavailable()
                .is_some_and(|m| m.contains("timed out"))
        );
        let done = serde_json::json!({
            "observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3,
        });
        assert_eq!(deployment(3, done).unavailable(), None);
    }

    #[test]
    fn a_job_is_available_once_complete() {
        let job = |conditions: serde_json::Value| -> Job {
            serde_json::from_value(serde_json::json!({
                "metadata": { "name": "run" },
                "status": { "active": 1, "conditions": conditions },
            }))
            .expect("a Job")
        };
        assert!(
            job(serde_json::json!([]))
                .unavailable()
                .is_some_and(|m| m.contains("running"))
        );
        let complete = serde_json::json!([{ "type": "Complete", "status": "True" }]);
        assert_eq!(job(complete).unavailable(), None);
        let failed = serde_json::json!([{
            "type": "Failed", "status": "True", "message": "BackoffLimitExceeded",
        }]);
        assert!(
            job(failed)
                .unavailable()
                .is_some_and(|m| m.contains("failed"))
        );
    }

    #[tokio::test]
    async fn a_condition_from_cleanup_is_applied_alone_by_a_manager_of_its_own() {
        use http::{Method, StatusCode};
        let (ctx, mut server) = crate::testing::mock_context();
        let mut object = k8s_openapi::api::core::v1::ConfigMap::default();
        object.metadata.name = Some("c".into());
        object.metadata.namespace = Some("testns".into());
        let scenario = async move {
            let request = server
                .expect(
                    Method::PATCH,
                    "/api/v1/namespaces/testns/configmaps/c/status",
                    StatusCode::OK,
                    serde_json::json!({}),
                )
                .await;
            assert!(
                request
                    .query
                    .contains("fieldManager=test-manager-conditions")
            );
            let conditions = &request.body["status"]["conditions"];
            assert_eq!(conditions[0]["type"], "Degraded");
            assert_eq!(conditions.as_array().map(Vec::len), Some(1));
            server
        };
        let degraded = condition("Degraded", true, "Finalizing", "removing the bucket", None);
        let (outcome, _) =
            crate::testing::converse(
                scenario,
                async move { apply(&ctx, &object, degraded).await },
            )
            .await;
        outcome.expect("applied");
    }
}
