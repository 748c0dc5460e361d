//! What the API server checks in an admission webhook configuration (admissionregistration/v1
//! validation), checked on what kopgen writes, so that a marker (its `patch=` included) that
//! the server would refuse is an error at its line, never a manifest that fails at install.

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, RuleWithOperations, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::names::{is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name};

/// The fields mutating and validating webhooks share, as the server validates them.
pub struct WebhookView<'a> {
    pub name: &'a str,
    pub client_config: &'a WebhookClientConfig,
    pub failure_policy: Option<&'a str>,
    pub match_policy: Option<&'a str>,
    pub side_effects: &'a str,
    pub timeout_seconds: Option<i32>,
    pub admission_review_versions: &'a [String],
    pub rules: Option<&'a [RuleWithOperations]>,
    pub namespace_selector: Option<&'a LabelSelector>,
    pub object_selector: Option<&'a LabelSelector>,
    pub match_conditions: Option<&'a [MatchCondition]>,
    /// Mutating webhooks only.
    pub reinvocation_policy: Option<&'a str>,
}

/// Every problem the server would report for `webhook`, as one message per problem.
pub fn problems(webhook: &WebhookView) -> Vec<String> {
    let mut out = Vec::new();
    if !is_dns1123_subdomain(webhook.name) || webhook.name.split('.').count() < 3 {
        out.push(format!(
            "name `{}` must be a DNS-1123 subdomain of at least three segments, e.g. mblog.apps.example.com",
            webhook.name
        ));
    }
    one_of(
        &mut out,
        "failurePolicy",
        webhook.failure_policy,
        &["Fail", "Ignore"],
    );
    one_of(
        &mut out,
        "matchPolicy",
        webhook.match_policy,
        &["Exact", "Equivalent"],
    );
    one_of(
        &mut out,
        "sideEffects",
        Some(webhook.side_effects),
        &["None", "NoneOnDryRun"],
    );
    one_of(
        &mut out,
        "reinvocationPolicy",
        webhook.reinvocation_policy,
        &["Never", "IfNeeded"],
    );
    if let Some(seconds) = webhook.timeout_seconds.filter(|s| !(1..=30).contains(s)) {
        out.push(format!("timeoutSeconds {seconds} must be between 1 and 30"));
    }
    review_versions(&mut out, webhook.admission_review_versions);
    client_config(&mut out, webhook.client_config);
    for rule in webhook.rules.into_iter().flatten() {
        rule_problems(&mut out, rule);
    }
    for (what, selector) in [
        ("namespaceSelector", webhook.namespace_selector),
        ("objectSelector", webhook.object_selector),
    ] {
        if let Some(selector) = selector {
            label_selector(&mut out, what, selector);
        }
    }
    let conditions = webhook.match_conditions.unwrap_or_default();
    if conditions.len() > 64 {
        out.push(format!("{} matchConditions: at most 64", conditions.len()));
    }
    let mut seen = std::collections::BTreeSet::new();
    for condition in conditions {
        if !is_qualified_name(&condition.name) {
            out.push(format!(
                "matchConditions name `{}` is not a qualified name",
                condition.name
            ));
        }
        if !seen.insert(condition.name.as_str()) {
            out.push(format!("matchConditions name `{}` twice", condition.name));
        }
        if condition.expression.trim().is_empty() {
            out.push(format!(
                "matchConditions `{}` has no expression",
                condition.name
            ));
        }
    }
    out
}

fn one_of(out: &mut Vec<String>, key: &str, value: Option<&str>, allowed: &[&str]) {
    if let Some(value) = value.filter(|v| !allowed.contains(v)) {
        out.push(format!(
            "{key} `{value}` must be one of {}",
            allowed.join(", ")
        ));
    }
}

fn review_versions(out: &mut Vec<String>, versions: &[String]) {
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        out.push("admissionReviewVersions must include v1 (or v1beta1)".into());
    }
    for (i, version) in versions.iter().enumerate() {
        if !is_dns1123_label(version) || versions[..i].contains(version) {
            out.push(format!(
                "admissionReviewVersions `{version}` is not a version or is given twice"
            ));
        }
    }
}

fn client_config(out: &mut Vec<String>, config: &WebhookClientConfig) {
    match (&config.url, &config.service) {
        (Some(url), None) => {
            if let Some(problem) = url_problem(url) {
                out.push(format!("url `{url}`: {problem}"));
            }
        }
        (None, Some(service)) => {
            if !is_dns1123_label(&service.name) {
                out.push(format!(
                    "service name `{}` is not a DNS-1123 label",
                    service.name
                ));
            }
            if !is_dns1123_label(&service.namespace) {
                out.push(format!(
                    "service namespace `{}` is not a DNS-1123 label",
                    service.namespace
                ));
            }
            if let Some(port) = service.port.filter(|p| !(1..=65535).contains(p)) {
                out.push(format!("service port {port} must be between 1 and 65535"));
            }
            if let Some(problem) = service.path.as_deref().and_then(path_problem) {
                out.push(problem);
            }
        }
        _ => out.push("clientConfig needs exactly one of url and service".into()),
    }
}

/// The server's rules for a webhook URL (Go's `url.Parse`, then its checks): an `https`
/// scheme, a host, no user info, query or fragment.
fn url_problem(url: &str) -> Option<&'static str> {
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("not a URL");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some("not a URL");
    };
    if !scheme.eq_ignore_ascii_case("https") {
        return Some("the scheme must be https");
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Some("user information is not permitted");
    }
    // The host, without a port (`[..]` around an IPv6 address).
    let host = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, port)) if port.is_empty() || port.starts_with(':') => address,
            _ => return Some("not a URL"),
        },
        None => authority.split(':').next().unwrap_or_default(),
    };
    let port = authority.rsplit_once(']').map_or(authority, |(_, p)| p);
    let port = port.split_once(':').map(|(_, p)| p);
    if host.is_empty() {
        Some("no host")
    } else if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_' | '%'))
        || port.is_some_and(|p| !p.chars().all(|c| c.is_ascii_digit()))
    {
        Some("not a URL")
    } else if tail.contains('?') {
        Some("a query is not permitted")
    } else if tail.contains('#') {
        Some("a fragment is not permitted")
    } else {
        None
    }
}

/// A service path: `/`, or `/`-separated DNS-1123 subdomains.
fn path_problem(path: &str) -> Option<String> {
    if path.is_empty() || path == "/" {
        return None;
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Some(format!("path `{path}` must start with '/'"));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    rest.split('/')
        .any(|segment| !is_dns1123_subdomain(segment))
        .then(|| {
            format!(
                "path `{path}`: each segment must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
            )
        })
}

fn rule_problems(out: &mut Vec<String>, rule: &RuleWithOperations) {
    let lists = [
        ("operations", rule.operations.as_deref()),
        ("apiGroups", rule.api_groups.as_deref()),
        ("apiVersions", rule.api_versions.as_deref()),
        ("resources", rule.resources.as_deref()),
    ];
    for (key, items) in lists {
        let items = items.unwrap_or_default();
        if items.is_empty() {
            out.push(format!("rules: {key} must not be empty"));
        }
        if items.len() > 1 && items.iter().any(|i| i == "*") {
            out.push(format!("rules: {key} `*` must be the only entry"));
        }
        if key != "apiGroups" && items.iter().any(String::is_empty) {
            out.push(format!("rules: {key} has an empty entry"));
        }
    }
    for operation in rule.operations.iter().flatten() {
        one_of(
            out,
            "rules: operation",
            Some(operation),
            &["CREATE", "UPDATE", "DELETE", "CONNECT", "*"],
        );
    }
    for resource in rule.resources.iter().flatten() {
        if resource.split('/').count() > 2 || resource.starts_with('/') || resource.ends_with('/') {
            out.push(format!(
                "rules: resource `{resource}` must be `resource` or `resource/subresource`"
            ));
        }
    }
    one_of(
        out,
        "rules: scope",
        rule.scope.as_deref(),
        &["Cluster", "Namespaced", "*"],
    );
}

fn label_selector(out: &mut Vec<String>, what: &str, selector: &LabelSelector) {
    for (key, value) in selector.match_labels.iter().flatten() {
        if !is_qualified_name(key) || !is_label_value(value) {
            out.push(format!(
                "{what}: label `{key}: {value}` is not a valid label (a qualified name and a value of at most 63 characters)"
            ));
        }
    }
    for expression in selector.match_expressions.iter().flatten() {
        if !is_qualified_name(&expression.key) {
            out.push(format!(
                "{what}: key `{}` is not a qualified name",
                expression.key
            ));
        }
        let values = expression.values.as_deref().unwrap_or_default();
        let fits = match expression.operator.as_str() {
            "In" | "NotIn" => !values.is_empty(),
            "Exists" | "DoesNotExist" => values.is_empty(),
            other => {
                out.push(format!(
                    "{what}: operator `{other}` must be one of In, NotIn, Exists, DoesNotExist"
                ));
                true
            }
        };
        if !fits {
            out.push(format!(
                "{what}: operator `{}` on `{}`: In and NotIn need values, Exists and DoesNotExist take none",
                expression.operator, expression.key
            ));
        }
        for value in values.iter().filter(|v| !is_label_value(v)) {
            out.push(format!("{what}: `{value}` is not a valid label value"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_as_the_server_reads_them() {
        assert_eq!(url_problem("https://hooks.example.com:8443/mutate"), None);
        assert_eq!(url_problem("HTTPS://10.0.0.1/validate"), None);
        assert_eq!(url_problem("https://[fd00::1]:443/convert"), None);
        for (url, problem) in [
            ("https:///mutate", "no host"),
            ("https://hooks example.com/", "not a URL"),
            ("https://hooks.example.com:port/", "not a URL"),
            ("https://[fd00::1/", "not a URL"),
            ("http://hooks.example.com/", "the scheme must be https"),
            (
                "https://user:pw@hooks.example.com/",
                "user information is not permitted",
            ),
            ("https://hooks.example.com/?a=b", "a query is not permitted"),
            (
                "https://hooks.example.com/#x",
                "a fragment is not permitted",
            ),
            ("hooks.example.com", "not a URL"),
        ] {
            assert_eq!(url_problem(url), Some(problem), "{url}");
        }
    }

    #[test]
    fn paths_and_labels() {
        assert_eq!(path_problem("/mutate-apps-example-com-v1-blog"), None);
        let long =
            "/validate-platform-engineering-example-com-v1beta1-applicationnetworkpolicybinding";
        assert_eq!(
            path_problem(long),
            None,
            "a segment may be longer than a label"
        );
        assert!(path_problem("/Mutate").is_some());
        assert!(path_problem("/a//b").is_some());
        assert!(path_problem("a").is_some());
        assert!(is_qualified_name("app.kubernetes.io/name"));
        assert!(!is_qualified_name("-bad"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(is_label_value(""));
        assert!(!is_label_value(&"x".repeat(64)));
    }
}
