//! Inputs: the kinds, their constraints as the engine's requests, every
//! Input resolved together, and what a failing or conflicting Input is
//! told (held, kept, ambiguous, owned by another).

pub mod ambiguity;
pub mod conflict;
pub mod dependency_inputs;
pub mod force;
pub use pakket_resolve_api::input;
pub mod input_controller;
pub mod input_filter;
pub mod input_request;
pub mod input_resolve;
pub mod kept_installed;
pub mod package_owner;
