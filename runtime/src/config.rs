//! Command-line flags of the manager, named like controller-runtime's so that a Kubebuilder
//! user's Deployment args carry over.

use std::time::Duration;

use clap::{Args, ValueEnum};

pub use crate::leader::{LeaderElection, Timing};
use crate::{Error, Identity, Result};

/// The manager's flags, named like controller-runtime's. A project's `main.rs` flattens them
/// into its own flags (`#[command(flatten)]`), beside flags of its own.
#[derive(Args, Debug, Clone)]
pub struct Config {
    /// Address the `/metrics` endpoint binds to; "0" disables it. `:8443` is every interface,
    /// IPv6 and IPv4 (IPv4 alone where the host has no IPv6).
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8443")]
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

    /// Address the `/healthz` and `/readyz` endpoints bind to (`:8081`: every interface).
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
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

    /// `auto`: every replica reconciles a share of the objects (shards of the hash of their
    /// namespace, or UID for cluster-scoped kinds), each holding a Lease of its own named
    /// after the leader-election Lease, with its durations; replaces the one leader of
    /// `--leader-elect`. `off` (the default): one manager does all the work.
    #[arg(long, env = "SHARDS", value_enum, default_value_t = Sharding::Off)]
    pub shards: Sharding,

    /// How long followers wait, after they last saw the Lease renewed, before taking it
    /// (client-go's `LeaseDuration`).
    #[arg(long = "leader-elect-lease-duration", default_value = "15s", value_parser = duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps reconciling without a successful renewal; shorter than the
    /// lease duration, so that it has stopped before a follower may take over.
    #[arg(long = "leader-elect-renew-deadline", default_value = "10s", value_parser = duration)]
    pub leader_elect_renew_deadline: Duration,

    /// How often every replica tries to take or renew the Lease.
    #[arg(long = "leader-elect-retry-period", default_value = "2s", value_parser = duration)]
    pub leader_elect_retry_period: Duration,

    /// How long a controller's caches may take to fill when it starts; past it the manager
    /// exits with the watches' last error (a CRD not installed, a watch RBAC forbids).
    #[arg(long, default_value = "2m", value_parser = duration)]
    pub cache_sync_timeout: Duration,

    /// How often every object is reconciled although nothing changed (controller-runtime's
    /// `SyncPeriod`; each time up to 10% later): a safety net for missed events. A controller's
    /// `Setup::resync` sets its own.
    #[arg(long, default_value = "1h", value_parser = duration)]
    pub sync_period: Duration,

    /// How long one reconcile may take before it fails as a timeout (and is retried with
    /// backoff): a request to an API server that vanished must not hold a controller.
    #[arg(long, default_value = "5m", value_parser = duration)]
    pub reconcile_timeout: Duration,

    /// How long in-flight reconciles may take to finish on shutdown. Keep it, with the Lease's
    /// release, under the pod's `terminationGracePeriodSeconds` (10 s in `config/manager`).
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub graceful_shutdown_timeout: Duration,

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

/// Whether replicas share the work by shards (`--shards`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sharding {
    /// One manager does all the work (with `--leader-elect`, the leader).
    Off,
    /// The live replicas share the hash space, as many shards as replicas.
    Auto,
}

/// How the manager writes its log.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, for `make run`.
    Text,
    /// One JSON object per line, for log collectors in the cluster.
    Json,
}

/// A duration as Go and Kubernetes flags write them: `15s`, `2m`, `1m30s`, `500ms`.
fn duration(text: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (write e.g. 15s, 2m or 500ms)"))
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

    /// Where and as whom this replica takes the Lease; an error if the durations cannot keep
    /// two leaders apart (client-go's rule: lease duration > renew deadline > retry period).
    pub fn leader_election(&self, operator: &Identity) -> Result<LeaderElection> {
        let timing = Timing {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        };
        if !(timing.lease_duration > timing.renew_deadline
            && timing.renew_deadline > timing.retry_period
            && !timing.retry_period.is_zero())
        {
            return Err(Error::Config(format!(
                "--leader-elect-lease-duration ({:?}) must be longer than \
                 --leader-elect-renew-deadline ({:?}), and that longer than a non-zero \
                 --leader-elect-retry-period ({:?})",
                timing.lease_duration, timing.renew_deadline, timing.retry_period
            )));
        }
        Ok(LeaderElection {
            lease_name: (self.leader_election_id.clone()).unwrap_or_else(|| operator.lease_name()),
            namespace: self.leader_election_namespace.clone(),
            identity: self.leader_election_identity.clone(),
            timing,
        })
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
        let lease = config
            .leader_election(&operator)
            .expect("default durations");
        assert_eq!(lease.lease_name, "blog.example.com");
        assert_eq!(lease.timing.lease_duration, Duration::from_secs(15));
        let config = parse(["manager", "--leader-election-id=other"]).expect("flags parse");
        let lease = config
            .leader_election(&operator)
            .expect("default durations");
        assert_eq!(lease.lease_name, "other");
    }

    #[test]
    fn durations_are_go_style_and_must_keep_leaders_apart() {
        let config = parse([
            "manager",
            "--leader-elect-lease-duration=1m30s",
            "--reconcile-timeout=500ms",
            "--cache-sync-timeout=2m",
        ])
        .expect("flags parse");
        assert_eq!(config.leader_elect_lease_duration, Duration::from_secs(90));
        assert_eq!(config.reconcile_timeout, Duration::from_millis(500));
        assert_eq!(config.cache_sync_timeout, Duration::from_secs(120));
        assert!(parse(["manager", "--reconcile-timeout=soon"]).is_err());
        let config = parse(["manager", "--leader-elect-renew-deadline=20s"]).expect("parses");
        let refused = config.leader_election(&Identity::new("blog", "example.com"));
        assert!(
            refused.is_err_and(|e| e.to_string().contains("--leader-elect-renew-deadline")),
            "a renew deadline past the lease duration is refused"
        );
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
