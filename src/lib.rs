//! kopgen: Kubebuilder for Rust.
//!
//! The library is what the `kopgen` binary drives, exposed so tests and other tools can
//! scaffold without spawning a process. Data flows one way: options are validated into a
//! model, the model is rendered into an in-memory [`changeset::ChangeSet`], and only a
//! complete change set is ever written to disk.

pub mod admission;
pub mod changeset;
pub mod chart;
pub mod cli;
pub mod compat;
pub mod insertion;
pub mod k8s_kinds;
pub mod kubebuilder_markers;
pub mod manifests;
pub mod markers;
pub mod names;
pub mod project;
pub mod rbac;
pub mod regular_file;
pub mod runtime_crate;
pub mod rustfmt;
pub mod samples;
pub mod scaffold;
pub mod templates;
pub mod upgrade;
pub mod webhooks;
pub mod yaml;

/// The version recorded in `PROJECT` files and printed by `kopgen version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
