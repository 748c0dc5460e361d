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
