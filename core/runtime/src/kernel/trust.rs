//! The trust kernel: every decision about whose rights count, in one
//! folder, so a reviewer reads it to audit what a provisioner may do and a
//! provisioner cannot get one wrong. A provisioner only turns content into
//! objects; the runtime decides what of that may be written, on whose
//! behalf, and what may be deleted. The admission webhooks' rules
//! (`webhooks/src/rules/`) are the other half: they write the sealed
//! requester records this side verifies.
//!
//! | module | decides |
//! |---|---|
//! | [`approval`] | approval policies (`UserPermission`, `Android`), the SubjectAccessReviews behind them |
//! | [`policy`] | `approval: Policy`: an admin's ApprovalPolicy rules, over inputs the runtime verified |
//! | [`rights`] | what content asks beyond plain objects, compared by meaning (`Android`) |
//! | [`effects`] | everything a change does, typed (objects, RBAC per subject, workloads, admission, CRDs, APIServices, deletions): what rules and people judge |
//! | [`rbac`] | what RBAC objects grant, and the access questions they raise |
//! | [`ownership`] | which existing objects an Instance may write, adopt and delete |
//! | `behalf` | reads on the requester's behalf (mounted ConfigMaps) |
//! | [`children`] | Pakket's own kinds in content, and whose rights judge a child |
//! | [`in_use_readers`] | who may count a CRD's objects (the in-use checks), without reading anything else |
//! | [`decision_key`] | what an approval covers: the class, policy, requester, content, config and effects judged |
//! | [`rerender`] | the digest of a render, recorded with approvals and revisions |
//!
//! Requester records themselves (sealing and verifying) are in
//! `pakket_api::creator`, shared with the webhooks.

pub mod approval;
pub(crate) mod behalf;
pub mod children;
pub mod decision_key;
pub mod effects;
pub mod in_use_readers;
pub mod install_rbac;
pub mod ownership;
pub mod policy;
pub mod rbac;
pub mod rerender;
pub mod rights;
