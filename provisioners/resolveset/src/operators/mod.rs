//! The `Operator` porcelain over an Input, and its controller.

pub mod operator;
pub mod operator_controller;
