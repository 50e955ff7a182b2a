//! `approval: Android` for the set's Instance: what the cluster-wide set
//! decides, and what it leaves to each package's own class.
//!
//! A new set is approved by itself when it moves no package to an older
//! version and every package it adds is **one person's request, judged as
//! hers by its own class**: the child Instance carries her sealed record
//! ([`crate::set::requested_by`]), so the child's class (an admin's
//! `ApprovalPolicy`, `UserPermission`, the runtime's `Android`, or a
//! person) decides on what she asked for with its content, config and
//! effects in view. Asking a person at the set as well would make every
//! namespace owner's first request wait for someone even where the
//! admin's policy says it installs by itself.
//!
//! A person approves the set when an added package is not one person's
//! (several people's Inputs need it, or one without a verified record),
//! or when its class judges nobody (`AllowAll`, or a class that is not
//! there): then the set is the only place anyone looks at it.

use std::collections::BTreeMap;

use kube::ResourceExt as _;
use kube::api::Api;
use pakket_api::{CreatorRecord, Instance, ProvisionerClass};
use pakket_engine::Version;
use pakket_runtime::approval::{Approval, ApprovalRequest};
use serde_json::Value;

const PACKAGE: &str = "resolve.pakket.dev/package";
const VERSION: &str = "resolve.pakket.dev/version";

/// What a child installs, as the set's decision names it: its package, or
/// `<package> in <namespace>` for a team's copy
/// ([`crate::set::copies`]), which is added (and judged) on its own.
fn what(annotations: &Value) -> Option<String> {
    let package = annotations[PACKAGE].as_str()?;
    Some(
        match annotations[crate::set::provisioner::COPY_IN_ANNOTATION].as_str() {
            Some(namespace) => format!("{package} in {namespace}"),
            None => package.to_owned(),
        },
    )
}

/// Decides for the set's Instance.
pub async fn android(request: &ApprovalRequest<'_>) -> Approval {
    let installed = installed_versions(request).await;
    let wanted = versions(request.objects);
    let mut judges = BTreeMap::new();
    for (package, child) in added_children(request.objects, &installed) {
        if let Some(words) = judged_by_its_class(request, child).await {
            judges.insert(package, words);
        }
    }
    match android_verdict(&wanted, &installed, &judges) {
        Ok(why) => Approval::Approved(format!("approved by policy Android: {why}")),
        Err(why) => Approval::Pending {
            message: format!(
                "waiting for approval (ProvisionerClass {} has approval: Android): the set {why}; review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`",
                request.class.name_any(),
                name = request.instance.name_any()
            ),
            retry: None,
        },
    }
}

/// The child objects of packages the installed set lacks, by package.
fn added_children<'a>(
    objects: &'a [Value],
    installed: &BTreeMap<String, String>,
) -> Vec<(String, &'a Value)> {
    objects
        .iter()
        .filter_map(|child| {
            let package = what(&child["metadata"]["annotations"])?;
            (!installed.contains_key(&package)).then_some((package, child))
        })
        .collect()
}

/// Words saying whose request `child` is and which class judges it as
/// hers, when both hold: the set sealed one person on it, and its class
/// judges requesters (any approval but `AllowAll`).
async fn judged_by_its_class(request: &ApprovalRequest<'_>, child: &Value) -> Option<String> {
    let record = child["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION]
        .as_str()
        .and_then(|annotation| CreatorRecord::from_annotation(annotation).ok())?;
    let class_name = child["spec"]["class"].as_str()?;
    let class = Api::<ProvisionerClass>::all(request.client.clone())
        .get_opt(class_name)
        .await
        .ok()??;
    let parameters = class.spec.parameters.unwrap_or_default();
    let approval = parameters.get("approval").and_then(Value::as_str)?;
    judge_words(&record.username, class_name, approval, &parameters)
}

/// Who judges a child of `requester` under class `class` whose
/// `approval` is as given; `None` when that class judges nobody.
fn judge_words(
    requester: &str,
    class: &str,
    approval: &str,
    parameters: &serde_json::Map<String, Value>,
) -> Option<String> {
    if approval == "AllowAll" {
        return None;
    }
    let how = match (
        approval,
        parameters.get("approvalPolicy").and_then(Value::as_str),
    ) {
        ("Policy", Some(policy)) => format!("ApprovalPolicy {policy}"),
        (other, _) => format!("approval: {other}"),
    };
    Some(format!(
        "{requester}'s request, judged as theirs by class {class} ({how})"
    ))
}

/// The installed children's packages and versions, read from the child
/// Instances the set's status lists (their annotations are the set's own:
/// the runtime wrote them, and it refuses objects it does not own).
async fn installed_versions(request: &ApprovalRequest<'_>) -> BTreeMap<String, String> {
    let children: Vec<String> = request
        .instance
        .status
        .as_ref()
        .map(|status| {
            status
                .objects
                .iter()
                .filter(|o| o.kind == "Instance" && o.api_version == "core.pakket.dev/v1alpha1")
                .map(|o| o.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let api: Api<Instance> = Api::all(request.client.clone());
    let mut installed = BTreeMap::new();
    for name in children {
        let Ok(Some(child)) = api.get_opt(&name).await else {
            continue;
        };
        let annotations = serde_json::to_value(child.annotations()).unwrap_or_default();
        if let (Some(package), Some(version)) = (what(&annotations), annotations[VERSION].as_str())
        {
            installed.insert(package, version.to_owned());
        }
    }
    installed
}

/// `Android`: a set (package → version) that moves no package to an older
/// version, and whose every package the installed set lacks is in
/// `judges` (package → who judges it), is approved by policy (`Ok`,
/// saying so); otherwise a person decides (`Err`, naming what is new
/// without a judge and what goes back).
pub fn android_verdict(
    wanted: &BTreeMap<String, String>,
    installed: &BTreeMap<String, String>,
    judges: &BTreeMap<String, String>,
) -> Result<String, String> {
    let added: Vec<&String> = wanted
        .keys()
        .filter(|package| !installed.contains_key(*package))
        .collect();
    let (judged, unjudged): (Vec<&String>, Vec<&String>) = added
        .into_iter()
        .partition(|package| judges.contains_key(*package));
    let older: Vec<String> = wanted
        .iter()
        .filter_map(|(package, version)| {
            let before = installed.get(package)?;
            let (now, then) = (Version::parse(version).ok()?, Version::parse(before).ok()?);
            (now < then).then(|| format!("{package} {before} → {version}"))
        })
        .collect();
    if unjudged.is_empty() && older.is_empty() {
        let adds: Vec<String> = judged
            .iter()
            .map(|package| format!("{package} {} ({})", wanted[*package], judges[*package]))
            .collect();
        let adds = if adds.is_empty() {
            "installs no new package".to_owned()
        } else {
            format!("adds {}", adds.join(", "))
        };
        return Ok(format!(
            "the set {adds} and downgrades none ({} packages); each is approved under its own class",
            wanted.len()
        ));
    }
    let mut why = Vec::new();
    if !unjudged.is_empty() {
        let names: Vec<&str> = unjudged.iter().map(|p| p.as_str()).collect();
        why.push(format!(
            "adds {} new package(s): {} (none is one person's request that its own class judges)",
            names.len(),
            names.join(", ")
        ));
    }
    if !older.is_empty() {
        why.push(format!("downgrades {}", older.join(", ")));
    }
    Err(why.join(" and "))
}

/// The packages a set of child Instances installs, with their versions.
fn versions(objects: &[Value]) -> BTreeMap<String, String> {
    objects
        .iter()
        .filter_map(|o| {
            let annotations = &o["metadata"]["annotations"];
            Some((
                what(annotations)?,
                annotations[VERSION].as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(p, v)| ((*p).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_set_decides_downgrades_and_packages_no_one_persons_class_judges() {
        let installed = set(&[("etcd", "0.9.2"), ("prometheus", "1.0.0")]);
        let none = BTreeMap::new();
        let alice = set(&[("vault", "alice's request, judged by class c")]);
        // (the set wanted, who judges which package, the verdict's words)
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            &'a BTreeMap<String, String>,
            Result<&'a str, &'a str>,
        );
        let cases: [Case<'_>; 6] = [
            (&[("etcd", "0.9.4")], &none, Ok("installs no new package")),
            (&[], &none, Ok("installs no new package")),
            (
                &[("etcd", "0.9.4"), ("vault", "1.0.0")],
                &none,
                Err("adds 1 new package(s): vault (none is one person's request"),
            ),
            (
                &[("etcd", "0.9.4"), ("vault", "1.0.0")],
                &alice,
                Ok("adds vault 1.0.0 (alice's request, judged by class c)"),
            ),
            (
                &[("etcd", "0.9.0"), ("vault", "1.0.0")],
                &alice,
                Err("downgrades etcd 0.9.2 → 0.9.0"),
            ),
            (
                &[("etcd", "0.9.0"), ("x", "1.0.0")],
                &none,
                Err(
                    "adds 1 new package(s): x (none is one person's request that its own class judges) and downgrades etcd 0.9.2 → 0.9.0",
                ),
            ),
        ];
        for (wanted, judges, expected) in cases {
            let verdict = android_verdict(&set(wanted), &installed, judges);
            match (&verdict, expected) {
                (Ok(said), Ok(words)) | (Err(said), Err(words)) => {
                    assert!(said.contains(words), "{wanted:?}: {said}");
                }
                _ => panic!("{wanted:?}: {verdict:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn a_class_that_approves_anything_judges_nobody() {
        let none = serde_json::Map::new();
        assert_eq!(judge_words("alice", "c", "AllowAll", &none), None);
        let policy = json!({"approvalPolicy": "namespace-operators"});
        assert_eq!(
            judge_words(
                "alice",
                "registry-v1",
                "Policy",
                policy.as_object().unwrap()
            )
            .as_deref(),
            Some(
                "alice's request, judged as theirs by class registry-v1 (ApprovalPolicy namespace-operators)"
            )
        );
        assert_eq!(
            judge_words("alice", "registry-v1", "UserPermission", &none).as_deref(),
            Some(
                "alice's request, judged as theirs by class registry-v1 (approval: UserPermission)"
            )
        );
    }

    #[test]
    fn only_packages_the_running_set_lacks_are_added() {
        let child = |package: &str| json!({"metadata": {"annotations": {PACKAGE: package, VERSION: "1.0.0"}}});
        let copy = json!({"metadata": {"annotations": {
            PACKAGE: "etcd", VERSION: "1.0.0",
            crate::set::provisioner::COPY_IN_ANNOTATION: "team-b",
        }}});
        let objects = [child("etcd"), child("vault"), copy];
        let added = added_children(&objects, &set(&[("etcd", "0.9.2")]));
        let names: Vec<&str> = added.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            names,
            ["vault", "etcd in team-b"],
            "a team's copy of an installed package is added, and judged, on its own"
        );
    }
}
