//! Pakket's trust model, played as attacks by non-admin users on the real
//! control plane, with the real admission webhooks over TLS and the real
//! `pakket-plain` process; where a stage is `Stage::shipped`, that process
//! runs as its ServiceAccount with the RBAC `deploy/` ships
//! ([`shipped`]), never as the admin. One module per property, so a reader sees the
//! threat model; each attack asserts that it failed and that nothing was
//! written or deleted, then shows the legitimate path still works.
//!
//! | module | property |
//! |---|---|
//! | [`deletion`] | nothing a user can write decides what is deleted |
//! | [`adoption`] | no silent adoption; explicit adoption by whoever may write the object |
//! | [`user_permission`] | `UserPermission` asks what RBAC would ask, of whoever asked for this spec |
//! | [`approval`] | an approval covers exactly the content approved; the guard covers what the runtime reads |
//! | [`content`] | a ConfigMap is Bundle content only if someone who may write it labelled it so; one that arrives unlabelled is never read |
//! | [`children`] | Pakket's own kinds in content are refused unless the provisioner makes them; a child is judged by its parent's requester |
//! | [`claims`] | an unapproved Instance creates nothing another Instance installs |
//! | [`records`] | a requester record no webhook wrote is not trusted |
//! | [`deputy`] | the provisioner reads and fetches only what the requester could |
//! | [`pivot`] | a pivot touches only Bundles this Instance has had active |
//! | [`android`] | `Android` installs an update by itself only when it asks for no new right |
//! | [`policy`] | `approval: Policy`: an admin's rules decide; a requester cannot change them, pass as someone they allow, or slip past them |
//! | [`in_use`] | an Instance whose APIs are in use is not deleted; a pivot keeps a CRD while objects of it exist |

mod adoption;
mod android;
mod approval;
mod children;
mod claims;
mod content;
mod deletion;
mod deputy;
mod in_use;
mod pivot;
mod policy;
mod records;
mod shipped;
mod support;
mod user_permission;
