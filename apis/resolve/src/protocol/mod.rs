//! The resolver API's request and response types, shared by the server,
//! `pakket resolve --server` and tests. The OpenAPI document is derived
//! from these types by the server.

pub mod browse;
pub mod constraint;
pub mod plan;
pub mod resolve;

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Input the API refuses (HTTP 400): the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest {
    /// The field, as a path into the body (`requests[2]`, `installed[0].version`).
    pub field: String,
    /// What is wrong, and what to write instead.
    pub message: String,
}

impl BadRequest {
    /// A refusal of `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for BadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for BadRequest {}

/// The body of every refusal but `/v1/resolve`'s own (400, 401, 403, 404):
/// `{"error": {"message": "…"}}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorResponse {
    /// What went wrong.
    pub error: ErrorMessage,
}

/// A refusal's message.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorMessage {
    /// Names the field or the permission, and says what to do.
    pub message: String,
}

impl ErrorResponse {
    /// A refusal saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            error: ErrorMessage {
                message: message.into(),
            },
        }
    }
}
