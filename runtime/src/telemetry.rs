//! Logging setup: human-readable text for `make run`, JSON lines in the cluster.

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::{Error, Result, config::LogFormat};

/// Installs the global subscriber: `filter` in `EnvFilter` syntax (`info,kube=debug`).
pub fn init(format: LogFormat, filter: &str) -> Result<()> {
    let filter =
        EnvFilter::try_new(filter).map_err(|e| Error::Config(format!("--log-level: {e}")))?;
    let registry = tracing_subscriber::registry().with(filter);
    let installed = match format {
        LogFormat::Text => registry.with(fmt::layer()).try_init(),
        LogFormat::Json => registry.with(fmt::layer().json()).try_init(),
    };
    installed.map_err(|e| Error::Config(format!("logging: {e}")))
}
