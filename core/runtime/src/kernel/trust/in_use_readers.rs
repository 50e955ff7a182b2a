//! Who may count the custom resources of the CRDs Pakket installs, without
//! reading anything else.
//!
//! Whether an Instance is in use (the webhooks, before a delete) and whether
//! a pivot may drop a CRD (the runtime) both list the custom resources of
//! its CRDs. Their groups are whatever content installs, and RBAC has no
//! rule for "the kinds Pakket installed": `list` on every resource would
//! reach every Secret too. Instead, each CRD the runtime applies gets a
//! ClusterRole of its own, `pakket-in-use:<crd>`, granting `list` on that
//! one resource, labelled to aggregate into `pakket-in-use-reader`
//! (`deploy/webhooks/rbac.yaml`), which `deploy/` binds to the webhooks and
//! the provisioners. The role is owned by its CRD (an owner reference with
//! the CRD's UID), so the garbage collector removes it with the CRD.
//!
//! A ClusterRole of that name that is not owned by that CRD is never
//! written over: it is reported, and the in-use checks for that CRD fail
//! closed (a delete or pivot is refused as "cannot check") until an admin
//! removes it. Anyone else who labels a ClusterRole to aggregate widens
//! what the webhooks may read, but making a role grant rules needs those
//! rights already (RBAC's escalation check): only someone who holds them.

use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt as _};
use serde_json::json;

/// The label that aggregates a ClusterRole into [`READER_ROLE`].
pub const AGGREGATE_LABEL: &str = "core.pakket.dev/aggregate-to-in-use-reader";
/// The aggregated ClusterRole `deploy/` binds to whoever checks use.
pub const READER_ROLE: &str = "pakket-in-use-reader";

/// The name of CRD `crd`'s reader role.
pub fn role_name(crd: &str) -> String {
    format!("pakket-in-use:{crd}")
}

/// The reader role of `crd`: `list` on its resource, aggregated, owned by
/// it. `None` for a CRD without a UID (never read from the cluster).
pub fn role_for(crd: &CustomResourceDefinition) -> Option<ClusterRole> {
    let uid = crd.metadata.uid.as_deref()?;
    let name = crd.name_any();
    serde_json::from_value(json!({
        "metadata": {
            "name": role_name(&name),
            "labels": {
                AGGREGATE_LABEL: "true",
                "app.kubernetes.io/managed-by": "pakket",
            },
            "ownerReferences": [{
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "name": name,
                "uid": uid,
            }],
        },
        "rules": [{
            "apiGroups": [crd.spec.group],
            "resources": [crd.spec.names.plural],
            "verbs": ["list"],
        }],
    }))
    .ok()
}

/// Whether `role` is the reader role `crd` owns.
fn owned_by(role: &ClusterRole, crd: &CustomResourceDefinition) -> bool {
    role.owner_references().iter().any(|owner| {
        owner.kind == "CustomResourceDefinition" && Some(&owner.uid) == crd.metadata.uid.as_ref()
    })
}

/// Makes sure each CRD named in `crds` has its reader role. What could not
/// be done, in words (one line per CRD); empty when all is in place.
pub async fn ensure(client: &Client, crds: &[&str]) -> Vec<String> {
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let mut problems = Vec::new();
    for name in crds {
        let crd = match definitions.get_opt(name).await {
            Ok(Some(crd)) => crd,
            Ok(None) => continue,
            Err(error) => {
                problems.push(format!("CustomResourceDefinition {name}: {error}"));
                continue;
            }
        };
        let Some(role) = role_for(&crd) else { continue };
        let role_name = role.name_any();
        let existing = match roles.create(&PostParams::default(), &role).await {
            Ok(_) => continue,
            Err(kube::Error::Api(status)) if status.code == 409 => roles.get_opt(&role_name).await,
            Err(error) => {
                problems.push(format!(
                    "ClusterRole {role_name} (lets the in-use checks count {name}'s objects): {}; \
                     grant this provisioner `create` on clusterroles with `escalate`, as deploy/ does",
                    crate::apply::api_message(&error)
                ));
                continue;
            }
        };
        match existing {
            Ok(Some(found)) if owned_by(&found, &crd) => {}
            Ok(Some(_)) => problems.push(format!(
                "ClusterRole {role_name} exists and is not CustomResourceDefinition {name}'s; \
                 until it is deleted, whether {name}'s objects exist cannot be checked and \
                 deleting or pivoting its Instance is refused"
            )),
            Ok(None) => {}
            Err(error) => problems.push(format!("ClusterRole {role_name}: {error}")),
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(uid: Option<&str>) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": { "name": "widgets.example.com", "uid": uid },
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": { "kind": "Widget", "plural": "widgets" },
                "versions": [],
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_reader_role_lists_its_crds_resource_only_and_goes_with_it() {
        let role = role_for(&crd(Some("u-1"))).unwrap();
        assert_eq!(role.name_any(), "pakket-in-use:widgets.example.com");
        assert_eq!(
            role.labels().get(AGGREGATE_LABEL).map(String::as_str),
            Some("true")
        );
        let rules = role.rules.clone().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].api_groups.as_deref(),
            Some(&["example.com".to_owned()][..])
        );
        assert_eq!(
            rules[0].resources.as_deref(),
            Some(&["widgets".to_owned()][..])
        );
        assert_eq!(rules[0].verbs, ["list"]);
        assert!(owned_by(&role, &crd(Some("u-1"))));
        assert!(
            !owned_by(&role, &crd(Some("u-2"))),
            "a CRD made again is another owner"
        );
        assert!(role_for(&crd(None)).is_none());
    }
}
