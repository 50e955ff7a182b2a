//! `kubectl instance why clusterpackage/NAME` or `why package/NAMESPACE/NAME`:
//! why a Glasskube package is at its version and in its state, and what to
//! do next.
//!
//! Read from the package's status (its conditions, version, dependencies
//! and Instance), the Instance it became (whose `Approved` condition says
//! whether it waits for a person) and the other packages (which of them
//! depend on this one, from their current package files).

use std::io::Write;

use pakket_api::{ConditionType, Instance, Reason};
use pakket_packages_api::conditions::{PackageConditionType, PackageReason};
use pakket_packages_client::dependents::{self, Dependent};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format};
use crate::packages::{self, Shown};

/// The answer for one package.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageDiagnosis {
    /// `ClusterPackage NAME` or `Package NAMESPACE/NAME`.
    pub package: String,
    /// One sentence: where it stands.
    pub summary: String,
    /// Why it is at its version and in its state, one reason a line.
    pub reasons: Vec<String>,
    /// What to do next, if anything.
    pub next: Option<String>,
}

/// Prints the diagnosis of `clusterpackage/NAME` (`which` is `NAME`) or
/// `package/NAMESPACE/NAME`.
pub async fn run(
    client: &kube::Client,
    which: &str,
    namespaced: bool,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let shown = packages::find(client, which, namespaced).await?;
    let instance = packages::instance_of(client, &shown).await;
    // Who depends on it: a reader who may not list every package gets the
    // diagnosis without that part.
    let everyone = dependents::everyone(client).await.ok();
    let diagnosis = diagnose(&shown, instance.as_ref(), everyone.as_deref());
    match format {
        Some(format) => output::print(&diagnosis, format, out),
        None => output::explanation(
            out,
            &diagnosis.package,
            &diagnosis.summary,
            &diagnosis.reasons,
            diagnosis.next.as_deref(),
        ),
    }
}

/// The diagnosis, from what was read. `everyone` is `None` when the other
/// packages could not be listed.
pub fn diagnose(
    shown: &Shown,
    instance: Option<&Instance>,
    everyone: Option<&[Dependent]>,
) -> PackageDiagnosis {
    let label = match &shown.namespace {
        Some(namespace) => format!("Package {namespace}/{}", shown.name),
        None => format!("ClusterPackage {}", shown.name),
    };
    let info = &shown.spec.package_info;
    let repository = info
        .repository_name
        .as_deref()
        .map_or("the default PackageRepository".to_owned(), |name| {
            format!("PackageRepository {name}")
        });
    let mut reasons = Vec::new();
    match (&info.version, &shown.status.version) {
        (Some(pinned), _) => reasons.push(format!(
            "it asks for package {} at {pinned} from {repository} (pinned by spec.packageInfo.version)",
            info.name
        )),
        (None, Some(version)) => reasons.push(format!(
            "it asks for package {} at the latestVersion {repository} publishes, now {version}; it looks again every --update-interval and moves when that changes",
            info.name
        )),
        (None, None) => reasons.push(format!(
            "it asks for package {} at the latestVersion {repository} publishes (not read yet)",
            info.name
        )),
    }
    if shown.installed_as_dependency {
        reasons.push(
            "it was installed as a dependency of other packages, pinned by seed 000's decision tree, and goes when none needs it"
                .into(),
        );
    }
    if !shown.status.dependencies.is_empty() {
        reasons.push(format!(
            "it depends on {}",
            shown.status.dependencies.join(", ")
        ));
    }
    if let Some(everyone) = everyone
        && shown.namespace.is_none()
    {
        let uid = everyone
            .iter()
            .find(|d| d.label == label)
            .map(|d| d.uid.clone())
            .unwrap_or_default();
        let dependents = dependents::dependents_of(everyone, &info.name, &uid);
        if !dependents.is_empty() {
            let named: Vec<String> = dependents
                .iter()
                .map(|d| match d.needs.get(&info.name).cloned().flatten() {
                    Some(range) => format!("{} (needs {range})", d.label),
                    None => d.label.clone(),
                })
                .collect();
            reasons.push(format!(
                "{} depend on it: deleting it is refused while they do",
                named.join(", ")
            ));
        }
    }
    if shown.spec.suspend {
        reasons.push("it is suspended (spec.suspend): nothing is reconciled".into());
    }
    let condition = |kind: PackageConditionType| {
        shown
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == kind.as_str())
    };
    let failed = condition(PackageConditionType::Failed).filter(|c| c.status == "True");
    let ready = condition(PackageConditionType::Ready);
    let approval = instance.and_then(|i| i.condition(ConditionType::Approved));
    let instance_name = shown.status.instance.clone();
    let (summary, next) = match (failed, ready) {
        (Some(failed), _) => {
            reasons.push(format!("{}: {}", failed.reason, failed.message));
            let next = match PackageReason::parse(&failed.reason) {
                Some(PackageReason::ValueConfigurationInvalid) => "fix spec.values as the message says".to_owned(),
                Some(PackageReason::UnsupportedFormat) => {
                    "install another version (spec.packageInfo.version), or the package as the other kind (a ClusterPackage or a Package), as the message says".to_owned()
                }
                Some(PackageReason::SyncFailed) => "check the PackageRepository (kubectl get packagerepositories) and the package's name and version".to_owned(),
                _ => match &instance_name {
                    Some(name) => format!("see `kubectl instance why {name}` for what the Instance says"),
                    None => "see the message".to_owned(),
                },
            };
            (format!("failed ({})", failed.reason), Some(next))
        }
        (None, Some(ready)) if ready.status == "True" => {
            let version = shown.status.version.as_deref().unwrap_or("?");
            (format!("installed at {version}"), None)
        }
        (None, ready) => {
            if let Some(ready) = ready {
                reasons.push(format!("{}: {}", ready.reason, ready.message));
            }
            match (approval, &instance_name) {
                (Some(approved), Some(name))
                    if approved.status != "True"
                        && approved.reason == Reason::ApprovalPending.as_str() =>
                {
                    reasons.push(format!("its Instance {name} waits: {}", approved.message));
                    (
                        "waiting for a person to approve".to_owned(),
                        Some(format!(
                            "someone who may approve Instances looks at `kubectl instance describe {name}` and runs `kubectl instance approve {name}`"
                        )),
                    )
                }
                (_, Some(name)) => (
                    "installing".to_owned(),
                    Some(format!("wait, or see `kubectl instance why {name}`")),
                ),
                (_, None) => ("not installed yet".to_owned(), None),
            }
        }
    };
    if let (Some(name), Some(instance)) = (&instance_name, instance) {
        reasons.push(format!(
            "it is Instance {name} on the runtime (Bundle {})",
            instance.spec.bundle.name
        ));
    }
    PackageDiagnosis {
        package: label,
        summary,
        reasons,
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use pakket_packages_api::{ClusterPackageSpec, PackageInfoTemplate, PackageStatus};

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::UNIX_EPOCH,
            ),
            observed_generation: None,
        }
    }

    fn cnpg(conditions: Vec<Condition>, dependency: bool) -> Shown {
        Shown {
            kind: "ClusterPackage",
            namespace: None,
            name: "cloudnative-pg".into(),
            spec: ClusterPackageSpec {
                package_info: PackageInfoTemplate {
                    name: "cloudnative-pg".into(),
                    version: Some("v1.24.1+1".into()),
                    repository_name: Some("glasskube".into()),
                },
                values: Default::default(),
                suspend: false,
            },
            status: PackageStatus {
                version: Some("v1.24.1+1".into()),
                instance: Some("clusterpackage-cloudnative-pg".into()),
                conditions,
                ..PackageStatus::default()
            },
            installed_as_dependency: dependency,
            created: None,
        }
    }

    fn dependent(label: &str, needs: Option<&str>) -> Dependent {
        Dependent {
            label: label.into(),
            uid: format!("uid-{label}"),
            needs: [("cloudnative-pg".to_owned(), needs.map(str::to_owned))].into(),
            version: Some("v1.0.0".into()),
            package: "tool".into(),
            name: "tool".into(),
            ready: true,
        }
    }

    #[test]
    fn an_installed_dependency_names_who_needs_it_and_why_it_stays() {
        let shown = cnpg(
            vec![condition(
                "Ready",
                "True",
                "InstallationSucceeded",
                "installed",
            )],
            true,
        );
        let everyone = [
            dependent("Package team/tool", Some("1.24.x")),
            dependent("ClusterPackage other", None),
        ];
        let diagnosis = diagnose(&shown, None, Some(&everyone));
        assert_eq!(diagnosis.package, "ClusterPackage cloudnative-pg");
        assert_eq!(diagnosis.summary, "installed at v1.24.1+1");
        assert_eq!(diagnosis.next, None);
        let text = diagnosis.reasons.join("\n");
        assert!(
            text.contains("pinned by spec.packageInfo.version"),
            "{text}"
        );
        assert!(text.contains("installed as a dependency"), "{text}");
        assert!(
            text.contains("Package team/tool (needs 1.24.x), ClusterPackage other depend on it"),
            "{text}"
        );
    }

    #[test]
    fn a_failure_says_what_to_fix() {
        let shown = cnpg(
            vec![
                condition("Ready", "False", "ValueConfigurationInvalid", "bad"),
                condition(
                    "Failed",
                    "True",
                    "ValueConfigurationInvalid",
                    "spec.values.databaseName: required",
                ),
            ],
            false,
        );
        let diagnosis = diagnose(&shown, None, None);
        assert_eq!(diagnosis.summary, "failed (ValueConfigurationInvalid)");
        assert_eq!(
            diagnosis.next.as_deref(),
            Some("fix spec.values as the message says")
        );
        assert!(
            diagnosis
                .reasons
                .iter()
                .any(|r| r == "ValueConfigurationInvalid: spec.values.databaseName: required")
        );
    }

    #[test]
    fn a_package_waiting_for_approval_says_who_approves_and_how() {
        let shown = cnpg(
            vec![condition(
                "Ready",
                "False",
                "Pending",
                "waiting for Instance clusterpackage-cloudnative-pg",
            )],
            false,
        );
        let instance: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": {"name": "clusterpackage-cloudnative-pg"},
            "spec": {"class": "package", "bundle": {"name": "b1"}},
            "status": {"conditions": [{
                "type": "Approved", "status": "False", "reason": "ApprovalPending",
                "message": "mallory may not create CustomResourceDefinitions",
                "lastTransitionTime": "2026-11-26T00:00:00Z",
            }]},
        }))
        .unwrap();
        let diagnosis = diagnose(&shown, Some(&instance), None);
        assert_eq!(diagnosis.summary, "waiting for a person to approve");
        assert!(
            diagnosis
                .next
                .as_deref()
                .unwrap()
                .contains("kubectl instance approve clusterpackage-cloudnative-pg")
        );
        assert!(
            diagnosis
                .reasons
                .iter()
                .any(|r| r.contains("mallory may not create CustomResourceDefinitions"))
        );
        assert!(diagnosis.reasons.iter().any(|r| r.contains("Bundle b1")));
    }
}
