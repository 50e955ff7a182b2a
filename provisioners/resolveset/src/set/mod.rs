//! The set the Inputs resolve to (`resolved.bundles.json`), teams' own
//! copies of an operator in it, whose
//! rights its children are judged by, what is held back while dependents
//! leave, and the resolveset provisioner that turns it into child
//! Instances.

pub mod content_label;
pub mod copies;
pub mod held_back;
pub mod placement;
pub mod provisioner;
pub mod requested_by;
pub mod resolved_set;
pub mod set_approval;
