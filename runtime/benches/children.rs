//! `Observed::children` against the size of the cache: one owner's ten children looked up
//! among 1,000 and 100,000 cached children of other owners. Found through the owner index, a
//! lookup costs what the owner has; beside it, `scan` is the lookup it replaced (every cached
//! child's JSON text searched for the owner's UID, the matches decoded), on the same children.
//!
//! `cargo bench -p kopgen-runtime --features testing --bench children`

use criterion::{Criterion, criterion_group, criterion_main};
use kopgen_runtime::{
    Context, Desired, Observed, Reconcile, Result,
    k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap},
    kube::api::ObjectMeta,
    testing::Observing,
};
use serde_json::{Value, json};

struct Owners;

impl Reconcile for Owners {
    type Kind = Deployment;
    type Children = (ConfigMap,);
    const NAME: &'static str = "bench";

    async fn desired(
        &self,
        _: &Deployment,
        _: &Context,
        _: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        Ok(Desired::new())
    }
}

/// `count` ConfigMaps, ten per owner `owner-<n>`, each with some data.
fn children(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": format!("child-{i}"), "namespace": "ns", "uid": format!("c-{i}"),
                    "labels": { "app.kubernetes.io/managed-by": "bench" },
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "Deployment", "name": "o",
                        "uid": format!("owner-{}", i / 10), "controller": true,
                    }],
                },
                "data": { "page": "x".repeat(200) },
            })
        })
        .collect()
}

fn lookups(c: &mut Criterion) {
    let mut group = c.benchmark_group("observed_children");
    for count in [1_000, 100_000] {
        let observing = Observing::new(&Owners, children(count), &[]);
        let owner = Deployment {
            metadata: ObjectMeta {
                uid: Some("owner-42".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        group.bench_function(format!("index/{count}_cached"), |b| {
            b.iter(|| {
                let found = observing.observed(&owner).children::<ConfigMap>();
                assert_eq!(found.map(|f| f.len()).ok(), Some(10));
            })
        });
        let texts: Vec<String> = children(count).iter().map(Value::to_string).collect();
        group.bench_function(format!("scan/{count}_cached"), |b| {
            b.iter(|| {
                let mut found = Vec::new();
                for text in &texts {
                    if text.contains("\"owner-42\"") {
                        let child: ConfigMap = serde_json::from_str(text).expect("a ConfigMap");
                        found.push(child);
                    }
                }
                assert_eq!(found.len(), 10);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
