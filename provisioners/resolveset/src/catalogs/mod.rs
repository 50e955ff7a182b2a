//! The cluster's Catalogs: the kind and its conditions, fetching a
//! source into the store, loading, the served snapshot, the controller,
//! and old content leaving the store.

pub mod catalog;
pub mod condition;
pub mod controller;
pub(crate) mod error;
pub mod load;
pub mod serving;
pub mod source;
pub mod store_gc;
