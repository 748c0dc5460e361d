//! Who the operator is. Every name that must be unique per operator in a cluster (its field
//! manager, its Lease, its webhook Service and configurations) derives from the project's name
//! and domain, so that two operators on one cluster never share one, and the names in `config/`
//! (which kopgen renders from the same two strings) match the running manager's.

/// The project's name and domain, as `kopgen init` recorded them in `PROJECT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    name: String,
    domain: String,
}

impl Identity {
    /// The identity of the project `name` (a DNS-1123 label) in `domain`.
    pub fn new(name: impl Into<String>, domain: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            domain: domain.into(),
        }
    }

    /// The project's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `<name>-manager`: the field manager of every write, the value of the
    /// `app.kubernetes.io/managed-by` label on children, and the reporter of events.
    pub fn manager(&self) -> String {
        format!("{}-manager", self.name)
    }

    /// `<name>.<domain>`: the default name of the leader-election Lease.
    pub fn lease_name(&self) -> String {
        format!("{}.{}", self.name, self.domain)
    }

    /// `<name>-webhook-service`: the Service in front of the webhook server (`config/webhook/`).
    pub fn webhook_service(&self) -> String {
        format!("{}-webhook-service", self.name)
    }

    /// The MutatingWebhookConfiguration of `config/webhook/`, after kustomize's name prefix.
    pub fn mutating_configuration(&self) -> String {
        format!("{}-mutating-webhook-configuration", self.name)
    }

    /// The ValidatingWebhookConfiguration of `config/webhook/`, after kustomize's name prefix.
    pub fn validating_configuration(&self) -> String {
        format!("{}-validating-webhook-configuration", self.name)
    }

    /// The prefix of the manager's one metric without a controller-runtime name (errors by
    /// kind): the name with `_` for `-`.
    pub fn metrics_prefix(&self) -> String {
        self.name.replace('-', "_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kubebuilders_layout() {
        let identity = Identity::new("blog-operator", "example.com");
        assert_eq!(identity.manager(), "blog-operator-manager");
        assert_eq!(identity.lease_name(), "blog-operator.example.com");
        assert_eq!(identity.webhook_service(), "blog-operator-webhook-service");
        assert_eq!(
            identity.validating_configuration(),
            "blog-operator-validating-webhook-configuration"
        );
        assert_eq!(identity.metrics_prefix(), "blog_operator");
    }
}
