//! The operator's error type. Reconcilers return it; `error_policy` turns it into a requeue.

/// Everything that can go wrong in a reconcile or in the manager. [`Error::retry`] says when
/// a failed reconcile is tried again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request to the API server failed.
    #[error("Kubernetes API error: {}", api_message(.0))]
    Kube(#[from] kube::Error),

    /// An object could not be turned into JSON or back.
    #[error("serialization error: {0}")]
    Serialization(#[from] serde_json::Error),

    /// An object lacks a field the machinery needs (a name, a namespace, a uid).
    #[error("object is missing {0}")]
    MissingObjectKey(&'static str),

    /// The spec asks for something that cannot be done; retrying will not help until the
    /// object changes. Return it from your code for input you reject.
    #[error("invalid spec: {0}")]
    InvalidSpec(String),

    /// The API server refused to write a child (400 or 422: a policy webhook, a child CRD that
    /// lags the operator, an immutable field): its cause is outside the owner, so it is retried
    /// with backoff rather than when the owner changes.
    #[error("{kind} {name} was refused: {source}")]
    ChildRefused {
        /// The child's kind.
        kind: String,
        /// `namespace/name` (or `name`) of the child.
        name: String,
        /// What the API server said.
        source: Box<Error>,
    },

    /// An object of a child's name exists and this owner does not control it: it is never
    /// taken over. Delete or rename it, or rename the owner.
    #[error("{kind} {name} exists and is not controlled by this object; it is left alone")]
    NotOwned {
        /// The child's kind.
        kind: String,
        /// `namespace/name` of the object.
        name: String,
    },

    /// The object changed between the read a write was based on and the write (another
    /// manager's finalizer came, say): retried on fresh data.
    #[error("conflict: {0}")]
    Conflict(String),

    /// A cache stopped before its first list (the manager is stopping).
    #[error("the cache of {0} objects stopped before it was filled")]
    CacheClosed(String),

    /// Something took longer than it may.
    #[error("timed out: {0}")]
    Timeout(String),

    /// This replica lost the leader-election Lease.
    #[error("lost leadership of the lease; stopping so that another replica takes over")]
    LeadershipLost,

    /// A server of the manager failed.
    #[error("server error: {0}")]
    Server(#[from] std::io::Error),

    /// A server could not listen on its address (in use, or not an address).
    #[error("cannot listen on the {what} address {address}: {source}")]
    Bind {
        /// Which server: `metrics`, `health probe`, `webhook`.
        what: &'static str,
        /// The address as given.
        address: String,
        /// Why it failed.
        source: std::io::Error,
    },

    /// A server's certificate or key cannot be read, made or used.
    #[error("certificate: {0}")]
    Certificate(String),

    /// The manager's flags or setup cannot work (a log filter that does not parse, a flag
    /// that needs a feature the project did not turn on).
    #[error("configuration: {0}")]
    Config(String),

    /// A task of the manager panicked or was cancelled.
    #[error("task failed: {0}")]
    Task(String),

    /// The controller's cleanup of an object being deleted failed: the finalizer stays until
    /// it succeeds.
    #[error("cleanup failed: {0}")]
    Cleanup(Box<Error>),

    /// The project's code panicked during a reconcile (see [`recover`]).
    #[error("panicked: {0}")]
    Panicked(String),

    /// An error of the project's own code (a call to a cloud API in `cleanup`, say): retried
    /// with backoff, like other transient errors.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// What people read of a failed request (in a `Ready` message, a Warning event): the API
/// server's own message with its code and reason, as `kubectl` prints it, not kube's `Debug`
/// dump of the whole `Status`.
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let reason = status.reason.as_str();
            match reason {
                "" => format!("{} (code {})", status.message, status.code),
                reason => format!("{} ({reason}, code {})", status.message, status.code),
            }
        }
        other => other.to_string(),
    }
}

/// A result whose error is the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// When a failed reconcile is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Transient (the API server unavailable, a conflict, a timeout): exponential backoff.
    Backoff,
    /// Needs something outside the object to change (RBAC, another object): a fixed wait.
    After(std::time::Duration),
    /// Invalid input: only a change of the object can fix it.
    OnChange,
}

/// How long to wait before looking again at what only the cluster's administrator or another
/// object's owner can fix.
const SLOW_RETRY: std::time::Duration = std::time::Duration::from_secs(300);

impl Error {
    /// The class of this error, which decides when it is retried.
    pub fn retry(&self) -> Retry {
        match self {
            Error::Kube(kube::Error::Api(status)) => match status.code {
                401 | 403 => Retry::After(SLOW_RETRY),
                400 | 422 => Retry::OnChange,
                _ => Retry::Backoff,
            },
            Error::InvalidSpec(_)
            | Error::Serialization(_)
            | Error::MissingObjectKey(_)
            | Error::Config(_) => Retry::OnChange,
            Error::NotOwned { .. } => Retry::After(SLOW_RETRY),
            Error::Cleanup(error) => error.retry(),
            Error::ChildRefused { .. } => Retry::Backoff,
            _ => Retry::Backoff,
        }
    }

    /// The `reason` of the `Ready=False` condition and of the warning event for this error:
    /// CamelCase, as Kubernetes reasons are.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(status)) if status.code == 403 => "Forbidden",
            Error::Kube(kube::Error::Api(status)) if status.code == 422 => "Invalid",
            Error::Kube(_) => "ApiError",
            Error::InvalidSpec(_) => "InvalidSpec",
            Error::NotOwned { .. } => "ChildNotOwned",
            Error::ChildRefused { .. } => "ChildRefused",
            Error::Panicked(_) => "ReconcilePanic",
            Error::Cleanup(_) => "CleanupFailed",
            Error::Conflict(_) => "Conflict",
            Error::Timeout(_) => "Timeout",
            _ => "ReconcileError",
        }
    }

    /// A short, bounded label for metrics: never the message, which may contain names.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Serialization(_) => "serialization",
            Error::MissingObjectKey(_) => "missing_object_key",
            Error::InvalidSpec(_) => "invalid_spec",
            Error::NotOwned { .. } => "not_owned",
            Error::ChildRefused { .. } => "child_refused",
            Error::CacheClosed(_) => "cache_closed",
            Error::Timeout(_) => "timeout",
            Error::LeadershipLost => "leadership_lost",
            Error::Server(_) => "server",
            Error::Bind { .. } => "bind",
            Error::Certificate(_) => "certificate",
            Error::Config(_) => "config",
            Error::Task(_) => "task",
            Error::Panicked(_) => "panic",
            Error::Cleanup(_) => "cleanup",
            Error::Conflict(_) => "conflict",
            Error::Other(_) => "other",
        }
    }
}

/// Runs the project's code, turning a panic into [`Error::Panicked`]. kube-runtime re-raises a
/// reconcile's panic, which would end the process: it restarts, reconciles the same object and
/// panics again, and every other controller and the webhooks go down with it. As
/// controller-runtime does, the panic becomes an error of that object, retried with backoff and
/// counted (`reconcile_errors{error="panic"}`); the panic message is still printed.
pub async fn recover<T>(code: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(code).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let message = (panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(Error::Panicked(message))
        }
    }
}
