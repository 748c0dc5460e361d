//! The permissions the manager used (from the audit log) and those its RBAC granted.

use super::*;

/// (verb, group/resource[/subresource]) of every request the manager's ServiceAccount made.
pub(crate) fn used_permissions(plane: &ControlPlane) -> BTreeSet<(String, String)> {
    let log = std::fs::read_to_string(plane.audit_log()).unwrap_or_default();
    let mut used = BTreeSet::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let user = event["impersonatedUser"]["username"].as_str();
        if user != Some(SERVICE_ACCOUNT) {
            continue;
        }
        let object = &event["objectRef"];
        let mut resource = format!(
            "{}/{}",
            object["apiGroup"].as_str().unwrap_or(""),
            object["resource"].as_str().unwrap_or("")
        );
        if let Some(sub) = object["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        let verb = event["verb"].as_str().unwrap_or("").to_owned();
        // Server-side apply that creates the object is authorized as `create` too.
        if verb == "patch" && event["responseStatus"]["code"] == 201 {
            used.insert(("create".to_owned(), resource.clone()));
        }
        used.insert((verb, resource));
    }
    used
}

/// (verb, group/resource) of every rule the ServiceAccount holds through config/rbac.
pub(crate) fn granted_permissions(rbac_yaml: &str) -> BTreeSet<(String, String)> {
    let mut granted = BTreeSet::new();
    for doc in serde_yaml::Deserializer::from_str(rbac_yaml) {
        let Ok(doc) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) else {
            continue;
        };
        let kind = doc["kind"].as_str().unwrap_or_default();
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        // The roles bound to the manager (the project's, the leader election's and the metrics
        // authentication's), not the per-kind admin/editor/viewer roles meant for people.
        let bound = [
            "demo-manager-role",
            "demo-leader-election-role",
            "demo-metrics-auth-role",
        ];
        if !(kind == "ClusterRole" || kind == "Role") || !bound.contains(&name) {
            continue;
        }
        let rules = doc["rules"].as_sequence().cloned().unwrap_or_default();
        for rule in rules {
            let list = |key: &str| -> Vec<String> {
                rule[key]
                    .as_sequence()
                    .map(|s| {
                        s.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for group in list("apiGroups") {
                for resource in list("resources") {
                    for verb in list("verbs") {
                        granted.insert((verb, format!("{group}/{resource}")));
                    }
                }
            }
        }
    }
    granted
}

/// Checks, after `managers` ran, that the RBAC (`rbac`, config/rbac built) is what they used:
/// nothing was forbidden, nothing used without a grant, nothing granted needlessly (the
/// exceptions below say why), and the caches streamed their lists. Returns how many (verb,
/// resource) pairs were used.
pub(crate) fn used_as_granted(plane: &ControlPlane, rbac: &str, managers: &[&Manager]) -> usize {
    for manager in managers {
        let log = manager.log();
        assert!(
            !log.to_lowercase().contains("forbidden"),
            "{} was refused something its RBAC should grant:\n{log}",
            manager.name
        );
    }
    let rbac = rbac
        .replace("name: manager-role", "name: demo-manager-role")
        .replace(
            "name: leader-election-role",
            "name: demo-leader-election-role",
        )
        .replace("name: metrics-auth-role", "name: demo-metrics-auth-role");
    let granted = granted_permissions(&rbac);
    let used = used_permissions(plane);
    let unused: Vec<String> = granted
        .difference(&used)
        .map(|(verb, resource)| format!("{verb} {resource}"))
        .collect();
    let ungranted: Vec<String> = used
        .difference(&granted)
        .map(|(verb, resource)| format!("{verb} {resource}"))
        .collect();

    eprintln!("RBAC verbs granted but never used: {}", unused.join(", "));
    // Every request was allowed (no 403 above), so anything "used but not granted" would be an
    // error in this accounting, not in the RBAC.
    assert!(ungranted.is_empty(), "used without a grant: {ungranted:?}");
    // Minimal: every granted verb was used, except `update` of the finalizers subresource,
    // which no request uses but OwnerReferencesPermissionEnforcement checks for children
    // whose owner reference blocks owner deletion, `list` of what the caches watch: they
    // stream their lists here, and list on an API server that cannot
    // (`without_streaming_lists_the_manager_lists_instead`), and
    // `delete` of Leases, which only `--shards=auto` uses (tests/sharding.rs): a replica
    // deletes its own Lease when it stops.
    let needless: Vec<&String> = unused
        .iter()
        .filter(|grant| !(grant.starts_with("update ") && grant.ends_with("/finalizers")))
        .filter(|grant| *grant != "delete coordination.k8s.io/leases")
        .filter(|grant| {
            let watched = grant.replacen("list ", "watch ", 1);
            // A `list` is needless only when its `watch` is unused too.
            !grant.starts_with("list ") || unused.contains(&watched)
        })
        .collect();
    assert!(needless.is_empty(), "granted but never used: {needless:?}");
    let listed: Vec<&(String, String)> = used.iter().filter(|(verb, _)| verb == "list").collect();
    assert!(
        listed.is_empty(),
        "the caches list instead of streaming: {listed:?}"
    );
    used.len()
}
