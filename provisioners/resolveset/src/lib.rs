//! `pakket-resolveset`: the cluster's catalogs and the resolver as a
//! service (issue 13); the Input controller and the resolveset
//! provisioner join it next.
//!
//! - [`catalog`]: the `Catalog` kind (`resolve.pakket.dev/v1alpha1`), [`crd`] its CRD.
//! - [`condition`]: the Catalog's condition types and reasons.
//! - [`input`]: the `Input` and `InputClass` kinds; [`input_request`] an
//!   Input's constraints as the engine's request.
//! - [`source`]: a Catalog's source through the runtime's fetchers and store.
//! - [`load`]: unpacked content to a loaded catalog; diagnostics summarized.
//! - [`serving`]: the served snapshot, swapped whole on every change.
//! - [`controller`]: fetch → load → swap → status, Events on changes.
//! - [`store_gc`]: old catalog content leaves the store.
//! - [`protocol`]: the API's request and response types, shared with
//!   `pakket resolve` (which prints exactly what the API answers).
//! - [`api`]: the HTTP routes, authentication, TLS.
//! - [`operator`]: the `Operator` porcelain over an Input; [`operator_controller`]
//!   writes the Input and reports updates and components.
//! - [`provisioner`]: the resolveset provisioner: the set's entries as
//!   child Instances, approval `Android`.
//! - [`process`]: the controller and the API wired together.

pub mod ambiguity;
pub mod api;
pub mod catalog;
pub mod condition;
pub mod controller;
pub mod crd;
pub mod dependency_inputs;
mod error;
pub mod force;
pub mod held_back;
pub mod input;
pub mod input_controller;
pub mod input_filter;
pub mod input_request;
pub mod input_resolve;
pub mod kept_installed;
pub mod load;
pub mod operator;
pub mod operator_controller;
pub mod package_owner;
pub mod process;
pub mod protocol;
pub mod provisioner;
pub mod requested_by;
pub mod resolved_set;
mod schema;
pub mod serving;
pub mod source;
pub mod store_gc;

pub use catalog::{Catalog, CatalogSpec, CatalogStatus};
pub use condition::{ConditionType, Reason};
pub use error::Error;
pub use input::{Input, InputClass, InputClassSpec, InputSpec, InputStatus};
pub use operator::{Operator, OperatorSpec, OperatorStatus};
