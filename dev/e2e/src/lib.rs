//! The end-to-end runs are this crate's tests (`tests/`), each
//! driving the scripts and the pinned kubectl as a cluster admin and as
//! users would.
