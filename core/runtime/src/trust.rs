//! The trust kernel: decisions about whose rights count, made here so a
//! provisioner cannot get them wrong. A provisioner only turns content
//! into objects; the runtime decides what of that may be written and on
//! whose behalf.
//!
//! - [`children`]: Pakket's own kinds in content, refused unless the
//!   provisioner makes them, and then judged by the parent's requester.

pub mod children;
