//! The resolve API group (`resolve.pakket.dev/v1alpha1`) and the resolver
//! API's wire format, for anyone who reads or writes them without running
//! `pakket-resolveset`: `kubectl instance`, `pakket resolve`, and
//! third-party tools.
//!
//! - [`catalog`]: the `Catalog` kind; [`condition`]: its condition types
//!   and reasons.
//! - [`input`]: the `Input` and `InputClass` kinds, and what an Input was
//!   resolved to.
//! - [`resolved_set`]: `resolved.bundles.json`, the set the cluster
//!   installs, as the resolveset provisioner reads it.
//! - [`protocol`]: the resolver API's requests and answers (`/v1/catalogs`,
//!   `/v1/packages`, `/v1/query`, `/v1/resolve`, `/v1/plan`); the client
//!   that calls it is `pakket-resolve-client` (this crate is types only).

pub mod catalog;
pub mod condition;
pub mod crd;
pub mod input;
pub mod input_condition;
pub mod protocol;
pub mod readiness;
pub mod resolved_set;

pub use catalog::{Catalog, CatalogSpec, CatalogStatus};
pub use condition::{ConditionType, Reason};
pub use input::{Input, InputClass, InputClassSpec, InputSpec, InputStatus};
pub use input_condition::{InputConditionType, InputReason};
