//! The cluster's Catalogs: the kind and its conditions, fetching a
//! source into the store, loading, the served snapshot, the controller,
//! and old content leaving the store.

pub use pakket_resolve_api::catalog;
pub use pakket_resolve_api::condition;
pub mod controller;
pub(crate) mod error;
pub mod gauges;
pub mod load;
pub mod serving;
pub mod source;
pub mod store_gc;
