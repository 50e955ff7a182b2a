//! The `Operator` porcelain over an Input, its controller, and the
//! controller turning a namespace owner's `OperatorRequest` into one.

pub mod operator;
pub mod operator_controller;
pub mod request_controller;
pub mod request_install;
pub mod request_objects;
