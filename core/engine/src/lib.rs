//! Pakket's dependency engine, shared by every provisioner and by
//! `pakket resolve`. It is pure: no Kubernetes client, no async runtime, no
//! I/O beyond reading catalog files, so it runs in unit tests and in a CLI
//! with no cluster.
//!
//! - [`version`]: semver 2.0 versions (build metadata ignored for order).
//! - [`range`]: version ranges in OLM's (blang/semver) syntax and Glasskube's.
//! - [`catalog`]: File-Based Catalogs (JSON streams, multi-document YAML),
//!   several at once with priorities, and each channel's update graph.
//! - [`resolve`]: OLM-grade resolution with explanations (resolvo underneath).
//! - [`glasskube`]: Glasskube's per-dependency decision tree.
//! - [`cel_limits`]: the limits every CEL expression Pakket reads is held to
//!   (policies, progression probes, catalog constraints).

pub mod catalog;
pub mod cel_limits;
pub mod glasskube;
pub mod range;
pub mod resolve;
pub mod version;

pub use range::{Range, RangeError};
pub use version::{Version, VersionError};
