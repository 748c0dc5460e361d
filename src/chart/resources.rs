//! Resources of `config/` as Helm templates: what kustomize's `namePrefix`, `namespace` and
//! name references do to them in `config/default`, written as template expressions, so that
//! the chart renders what `kubectl kustomize config/default` does.
//!
//! Every string of the resource is escaped first: a description or annotation that holds `{{`
//! is text, never a template action.

use std::collections::BTreeSet;

use serde_json::Value;

/// The prefix of every name, bound at the top of each generated template.
pub const NAME: &str = "{{ $name }}";
/// The namespace of every namespaced resource.
pub const NAMESPACE: &str = "{{ .Release.Namespace }}";

/// The kinds and names the chart renders (before the prefix): a reference to one of them is
/// prefixed as kustomize's nameReference would, a reference to anything else is left alone.
#[derive(Debug, Default)]
pub struct Names {
    pub names: BTreeSet<(String, String)>,
    /// The project's name, which scaffolded files write out in full in `resourceNames`.
    pub project: String,
}

impl Names {
    pub fn add(&mut self, doc: &Value) {
        if let (Some(kind), Some(name)) = (doc["kind"].as_str(), doc["metadata"]["name"].as_str()) {
            self.names.insert((kind.to_owned(), name.to_owned()));
        }
    }

    fn has(&self, kind: &str, name: &str) -> bool {
        self.names.contains(&(kind.to_owned(), name.to_owned()))
    }
}

/// Helm reads `{{` anywhere in a template as the start of an action; in a resource's own text
/// it is written as an action that prints `{{`.
pub fn escape(text: &str) -> String {
    text.replace("{{", "{{`{{`}}")
}

fn escape_all(value: &mut Value) {
    match value {
        Value::String(s) if s.contains("{{") => *s = escape(s),
        Value::Array(items) => items.iter_mut().for_each(escape_all),
        Value::Object(map) => {
            let escaped: serde_json::Map<String, Value> = std::mem::take(map)
                .into_iter()
                .map(|(k, mut v)| {
                    escape_all(&mut v);
                    (escape(&k), v)
                })
                .collect();
            *map = escaped;
        }
        _ => {}
    }
}

/// Kinds without a namespace: the built-in ones of the kinds table, and cert-manager's
/// ClusterIssuer; any other kind is namespaced (kustomize's rule for kinds it does not know).
fn cluster_scoped(kind: &str) -> bool {
    kind == "ClusterIssuer" || crate::k8s_kinds::is_cluster_scoped(kind)
}

fn prefixed(name: &str) -> Value {
    Value::String(format!("{NAME}-{name}"))
}

fn set_service(service: &mut Value, names: &Names) {
    if let Some(name) = service["name"].as_str()
        && names.has("Service", name)
    {
        service["name"] = prefixed(name);
        service["namespace"] = Value::String(NAMESPACE.into());
    }
}

/// `doc` as kustomize's config/default leaves it, in template expressions.
pub fn chartify(mut doc: Value, names: &Names) -> Value {
    escape_all(&mut doc);
    let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
    if kind != "CustomResourceDefinition"
        && let Some(name) = doc["metadata"]["name"].as_str()
    {
        doc["metadata"]["name"] = prefixed(name);
    }
    if !cluster_scoped(&kind)
        && let Some(metadata) = doc.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert("namespace".into(), Value::String(NAMESPACE.into()));
    }
    if let Some(labels) = doc
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
        && labels.contains_key("app.kubernetes.io/managed-by")
    {
        labels.insert(
            "app.kubernetes.io/managed-by".into(),
            Value::String("{{ .Release.Service }}".into()),
        );
    }
    // Role bindings: the role and the ServiceAccount.
    if let (Some(role_kind), Some(role)) = (
        doc["roleRef"]["kind"].as_str(),
        doc["roleRef"]["name"].as_str(),
    ) && names.has(role_kind, role)
    {
        doc["roleRef"]["name"] = prefixed(role);
    }
    if let Some(subjects) = doc.get_mut("subjects").and_then(Value::as_array_mut) {
        for subject in subjects {
            if subject["kind"] == "ServiceAccount"
                && let Some(name) = subject["name"].as_str()
                && names.has("ServiceAccount", name)
            {
                subject["name"] = prefixed(name);
                subject["namespace"] = Value::String(NAMESPACE.into());
            }
        }
    }
    // Webhooks and conversion webhooks call the webhook Service.
    if let Some(webhooks) = doc.get_mut("webhooks").and_then(Value::as_array_mut) {
        for webhook in webhooks {
            if let Some(service) = webhook.pointer_mut("/clientConfig/service") {
                set_service(service, names);
            }
        }
    }
    if let Some(service) = doc.pointer_mut("/spec/conversion/webhook/clientConfig/service") {
        set_service(service, names);
    }
    // Names the scaffold writes in full (the project's name first): in the chart, its prefix.
    if let Some(rules) = doc.get_mut("rules").and_then(Value::as_array_mut) {
        let project = format!("{}-", names.project);
        for rule in rules {
            if let Some(resource_names) =
                rule.get_mut("resourceNames").and_then(Value::as_array_mut)
            {
                for name in resource_names {
                    if let Some(rest) = name.as_str().and_then(|n| n.strip_prefix(&project)) {
                        *name = prefixed(rest);
                    }
                }
            }
        }
    }
    // cert-manager's Certificate: its issuer, and the webhook Service's DNS names (which
    // config/default's replacements write into the first two labels).
    if kind == "Certificate" {
        if let Some(issuer) = doc["spec"]["issuerRef"]["name"].as_str()
            && names.has(
                doc["spec"]["issuerRef"]["kind"]
                    .as_str()
                    .unwrap_or("Issuer"),
                issuer,
            )
        {
            doc["spec"]["issuerRef"]["name"] = prefixed(issuer);
        }
        if let Some(dns_names) = doc
            .pointer_mut("/spec/dnsNames")
            .and_then(Value::as_array_mut)
        {
            for dns_name in dns_names {
                let Some(text) = dns_name.as_str() else {
                    continue;
                };
                let labels: Vec<&str> = text.splitn(3, '.').collect();
                if let [_, _, rest] = labels.as_slice() {
                    *dns_name = Value::String(format!("{NAME}-webhook-service.{NAMESPACE}.{rest}"));
                }
            }
        }
    }
    doc
}

/// `doc` as YAML, with the annotations in `extra` (template lines, each already indented by
/// four) added to its metadata: conditional annotations cannot be values of the tree.
pub fn to_yaml(mut doc: Value, extra: &[String]) -> Result<String, crate::yaml::Error> {
    if extra.is_empty() {
        return crate::yaml::to_string(&doc);
    }
    let annotations = doc["metadata"]
        .as_object_mut()
        .and_then(|m| m.remove("annotations"));
    let text = crate::yaml::to_string(&doc)?;
    let mut block = String::from("  annotations:\n");
    if let Some(Value::Object(map)) = annotations
        && !map.is_empty()
    {
        for line in crate::yaml::to_string(&map)?.lines() {
            block.push_str(&format!("    {line}\n"));
        }
    }
    for line in extra {
        block.push_str(line);
        block.push('\n');
    }
    // The writer puts `metadata:` at the start of a line, its keys below it.
    Ok(match text.find("\nmetadata:\n") {
        Some(at) => {
            let at = at + "\nmetadata:\n".len();
            format!("{}{block}{}", &text[..at], &text[at..])
        }
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names() -> Names {
        let mut names = Names {
            project: "demo".into(),
            ..Names::default()
        };
        for (kind, name) in [
            ("ServiceAccount", "controller-manager"),
            ("ClusterRole", "manager-role"),
            ("Service", "webhook-service"),
            ("Issuer", "selfsigned-issuer"),
        ] {
            names.names.insert((kind.into(), name.into()));
        }
        names
    }

    #[test]
    fn names_namespaces_and_references_follow_kustomize() {
        let binding = json!({
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "manager-rolebinding", "labels": {"app.kubernetes.io/managed-by": "kustomize"}},
            "roleRef": {"kind": "ClusterRole", "name": "manager-role"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "controller-manager", "namespace": "system"},
                {"kind": "ServiceAccount", "name": "elsewhere", "namespace": "other"},
            ],
        });
        let out = chartify(binding, &names());
        assert_eq!(out["metadata"]["name"], "{{ $name }}-manager-rolebinding");
        assert!(out["metadata"].get("namespace").is_none());
        assert_eq!(
            out["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "{{ .Release.Service }}"
        );
        assert_eq!(out["roleRef"]["name"], "{{ $name }}-manager-role");
        assert_eq!(out["subjects"][0]["name"], "{{ $name }}-controller-manager");
        assert_eq!(out["subjects"][0]["namespace"], NAMESPACE);
        assert_eq!(
            out["subjects"][1],
            json!({"kind": "ServiceAccount", "name": "elsewhere", "namespace": "other"})
        );
        let role = chartify(
            json!({"kind": "Role", "metadata": {"name": "r", "namespace": "system"},
            "rules": [{"resourceNames": ["demo-webhook-server-cert", "other"]}]}),
            &names(),
        );
        assert_eq!(role["metadata"]["namespace"], NAMESPACE);
        assert_eq!(
            role["rules"][0]["resourceNames"],
            json!(["{{ $name }}-webhook-server-cert", "other"])
        );
        let certificate = chartify(
            json!({"kind": "Certificate", "metadata": {"name": "serving-cert"},
            "spec": {"issuerRef": {"kind": "Issuer", "name": "selfsigned-issuer"},
                     "dnsNames": ["S.N.svc", "S.N.svc.cluster.local"]}}),
            &names(),
        );
        assert_eq!(
            certificate["spec"]["issuerRef"]["name"],
            "{{ $name }}-selfsigned-issuer"
        );
        assert_eq!(
            certificate["spec"]["dnsNames"][1],
            "{{ $name }}-webhook-service.{{ .Release.Namespace }}.svc.cluster.local"
        );
    }

    #[test]
    fn template_actions_in_a_resources_text_are_escaped() {
        let crd = json!({"kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
            "spec": {"description": "{{ .Release.Name }} and {{- fail \"x\" }}"}});
        let out = chartify(crd, &names());
        assert_eq!(out["metadata"]["name"], "a.b");
        assert_eq!(
            out["spec"]["description"],
            "{{`{{`}} .Release.Name }} and {{`{{`}}- fail \"x\" }}"
        );
    }

    #[test]
    fn conditional_annotations_join_the_existing_ones() {
        let doc = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "demo", "annotations": {"a": "b"}}, "spec": {}});
        let text = to_yaml(
            doc,
            &[
                "    {{- if .Values.x }}".into(),
                "    c: d".into(),
                "    {{- end }}".into(),
            ],
        )
        .expect("yaml");
        assert!(text.contains("metadata:\n  annotations:\n    a: b\n    {{- if .Values.x }}\n    c: d\n    {{- end }}\n  name: demo\n"), "{text}");
    }
}
