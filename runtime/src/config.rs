//! Command-line flags of the manager, named like controller-runtime's so that a Kubebuilder
//! user's Deployment args carry over.

use clap::{Args, ValueEnum};

use crate::Identity;

/// The manager's flags, named like controller-runtime's. A project's `main.rs` flattens them
/// into its own flags (`#[command(flatten)]`), beside flags of its own.
#[derive(Args, Debug, Clone)]
pub struct Config {
    /// Address the `/metrics` endpoint binds to; "0" disables it.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = "0.0.0.0:8443")]
    pub metrics_bind_address: String,

    /// Serve `/metrics` over HTTPS to clients whose token may `get` the `/metrics` URL
    /// (checked with a TokenReview and a SubjectAccessReview), as Kubebuilder's manager does;
    /// false serves plain HTTP to anyone who can reach the port.
    #[arg(long, env = "METRICS_SECURE", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_secure: bool,

    /// Directory of the metrics server's certificate and key; without it the manager generates
    /// a self-signed certificate at start.
    #[arg(long)]
    pub metrics_cert_path: Option<std::path::PathBuf>,

    /// File name of the metrics certificate in `--metrics-cert-path`.
    #[arg(long, default_value = "tls.crt")]
    pub metrics_cert_name: String,

    /// File name of the metrics key in `--metrics-cert-path`.
    #[arg(long, default_value = "tls.key")]
    pub metrics_cert_key: String,

    /// Address the `/healthz` and `/readyz` endpoints bind to.
    #[arg(
        long,
        env = "HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    pub health_probe_bind_address: String,

    /// Elect a leader through a coordination.k8s.io Lease, so that only one replica reconciles.
    #[arg(long, env = "LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,

    /// Name of the Lease used for leader election (default: `<project>.<domain>`).
    #[arg(long)]
    pub leader_election_id: Option<String>,

    /// Namespace of the leader-election Lease; defaults to the namespace the pod runs in.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub leader_election_namespace: String,

    /// Identity of this replica in the Lease; defaults to the pod name.
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,

    /// How many objects of one kind are reconciled at once (controller-runtime's
    /// `MaxConcurrentReconciles`); one object is never reconciled twice at the same time.
    #[arg(
        long,
        env = "MAX_CONCURRENT_RECONCILES",
        default_value_t = 1,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub max_concurrent_reconciles: u16,

    /// Serve the admission webhooks of `webhooks/` (false: run without them, e.g. with
    /// `make run` on a machine without the webhook certificate).
    #[arg(long, env = "ENABLE_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_webhooks: bool,

    /// Port of the webhook server (HTTPS, every interface).
    #[arg(long, default_value_t = 9443)]
    pub webhook_port: u16,

    /// Directory of the webhook server's certificate and key (cert-manager's Secret mounted).
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_path: std::path::PathBuf,

    /// File name of the webhook certificate in `--webhook-cert-path`.
    #[arg(long, default_value = "tls.crt")]
    pub webhook_cert_name: String,

    /// File name of the webhook key in `--webhook-cert-path`.
    #[arg(long, default_value = "tls.key")]
    pub webhook_cert_key: String,

    /// Keep the webhook certificate in this Secret (in the manager's namespace) instead of
    /// files: the manager makes its own CA and serving certificate, renews them, and keeps
    /// `caBundle` current on its webhook configurations and CRDs. For clusters without
    /// cert-manager; `--webhook-cert-path` is then unused.
    #[arg(long)]
    pub webhook_cert_secret: Option<String>,

    /// The webhook Service, whose DNS names the self-managed certificate is valid for
    /// (default: `<project>-webhook-service`).
    #[arg(long)]
    pub webhook_service_name: Option<String>,

    /// More names (DNS or IP) for the self-managed certificate, comma-separated (e.g. for a
    /// manager run outside the cluster).
    #[arg(long, value_delimiter = ',')]
    pub webhook_cert_hosts: Vec<String>,

    /// How often the self-managed certificate and the `caBundle`s are checked, in seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub webhook_cert_check_seconds: u64,

    /// Watch only this namespace. Empty means all namespaces.
    #[arg(long = "namespace", env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter, in `tracing_subscriber::EnvFilter` syntax (e.g. `info,kube=debug`).
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log_level: String,
}

/// How the manager writes its log.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, for `make run`.
    Text,
    /// One JSON object per line, for log collectors in the cluster.
    Json,
}

/// Where and under which identity to take the leader-election Lease.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Name of the Lease.
    pub lease_name: String,
    /// Namespace of the Lease.
    pub namespace: String,
    /// This replica's name in the Lease (`holderIdentity`); a random one when `None`.
    pub identity: Option<String>,
}

impl Config {
    /// The namespace to watch, or `None` for all namespaces.
    pub fn watch_namespace(&self) -> Option<String> {
        self.namespace.clone().filter(|ns| !ns.is_empty())
    }

    /// The webhook server's certificate and key files.
    pub fn webhook_certificate(&self) -> crate::tls::Certificate {
        crate::tls::Certificate {
            cert: self.webhook_cert_path.join(&self.webhook_cert_name),
            key: self.webhook_cert_path.join(&self.webhook_cert_key),
        }
    }

    /// The metrics server's certificate and key files, if given.
    pub fn metrics_certificate(&self) -> Option<crate::tls::Certificate> {
        let dir = self.metrics_cert_path.as_ref()?;
        Some(crate::tls::Certificate {
            cert: dir.join(&self.metrics_cert_name),
            key: dir.join(&self.metrics_cert_key),
        })
    }

    /// Where and as whom this replica takes the Lease.
    pub fn leader_election(&self, operator: &Identity) -> LeaderElection {
        LeaderElection {
            lease_name: (self.leader_election_id.clone()).unwrap_or_else(|| operator.lease_name()),
            namespace: self.leader_election_namespace.clone(),
            identity: self.leader_election_identity.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// A binary's flags, as a project's `main.rs` declares them.
    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        config: Config,
    }

    fn parse<const N: usize>(args: [&str; N]) -> clap::error::Result<Config> {
        Flags::try_parse_from(args).map(|flags| flags.config)
    }

    #[test]
    fn names_default_to_the_operators_identity() {
        let config = parse(["manager"]).expect("flags parse");
        let operator = Identity::new("blog", "example.com");
        let lease = config.leader_election(&operator);
        assert_eq!(lease.lease_name, "blog.example.com");
        let config = parse(["manager", "--leader-election-id=other"]).expect("flags parse");
        assert_eq!(config.leader_election(&operator).lease_name, "other");
    }

    #[test]
    fn flags_parse_like_controller_runtime() {
        let config = parse([
            "manager",
            "--leader-elect",
            "--metrics-bind-address=0",
            "--namespace=team-a",
            "--log-format=json",
        ])
        .expect("flags parse");
        assert!(config.leader_elect);
        assert_eq!(config.metrics_bind_address, "0");
        assert_eq!(config.watch_namespace().as_deref(), Some("team-a"));
        assert_eq!(config.log_format, LogFormat::Json);
    }

    #[test]
    fn webhook_flags_are_kubebuilders() {
        let config = parse([
            "manager",
            "--webhook-cert-path=/certs",
            "--webhook-port=10250",
            "--enable-webhooks=false",
        ])
        .expect("flags parse");
        assert_eq!(config.webhook_port, 10250);
        assert!(!config.enable_webhooks);
        let certificate = config.webhook_certificate();
        assert_eq!(certificate.cert, std::path::Path::new("/certs/tls.crt"));
        assert_eq!(certificate.key, std::path::Path::new("/certs/tls.key"));
    }

    #[test]
    fn empty_namespace_means_all_namespaces() {
        let config = parse(["manager", "--namespace="]).expect("flags parse");
        assert_eq!(config.watch_namespace(), None);
    }
}
