//! The resolver API's answers, computed on the server; the request and
//! response types are `pakket-resolve-api`'s, shared with
//! `pakket resolve --server`, `kubectl instance` and tests. The OpenAPI
//! document is derived from those types (see [`crate::api::ApiDoc`]).

pub mod browse;
pub mod plan;

pub use pakket_resolve_api::protocol::{
    BadRequest, ErrorMessage, ErrorResponse, constraint, resolve,
};
