//! Fixture builders for tests without a cluster (cargo feature `testing`):
//! `ClusterPackage::test("cloudnative-pg").with_version("v1.24.1+1")`,
//! `PackageInfo::test("cloudnative-pg").read("v1.24.1+1", manifest, url)`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;

use crate::conditions::ReadinessType;
use crate::{
    ClusterPackage, ClusterPackageSpec, Package, PackageInfo, PackageInfoSpec, PackageInfoStatus,
    PackageInfoTemplate, PackageSpec, PackageStatus, ValueConfiguration,
};

/// A condition as a status carries it (the transition time fixed).
pub fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: kind.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(1),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        uid: Some(format!("uid-{name}")),
        generation: Some(1),
        ..ObjectMeta::default()
    }
}

fn template(name: &str) -> PackageInfoTemplate {
    PackageInfoTemplate {
        name: name.into(),
        version: None,
        repository_name: None,
    }
}

/// What ClusterPackage and Package fixtures share.
macro_rules! package_builders {
    ($kind:ty) => {
        impl $kind {
            /// Pinned to `version`.
            pub fn with_version(mut self, version: &str) -> Self {
                self.spec.package_info.version = Some(version.into());
                self
            }
            /// From PackageRepository `repository`.
            pub fn from_repository(mut self, repository: &str) -> Self {
                self.spec.package_info.repository_name = Some(repository.into());
                self
            }
            /// With the written value `name: value`.
            pub fn with_value(mut self, name: &str, value: &str) -> Self {
                self.spec.values.insert(
                    name.into(),
                    ValueConfiguration {
                        value: Some(value.into()),
                        value_from: None,
                    },
                );
                self
            }
            /// Suspended (`spec.suspend`).
            pub fn suspended(mut self) -> Self {
                self.spec.suspend = true;
                self
            }
            /// Carrying the finalizer `finalizer`.
            pub fn with_finalizer(mut self, finalizer: &str) -> Self {
                self.metadata
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(finalizer.into());
                self
            }
            /// Being deleted.
            pub fn deleting(mut self) -> Self {
                self.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
                self
            }
            /// With the label `key: value`.
            pub fn with_label(mut self, key: &str, value: &str) -> Self {
                self.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(key.into(), value.into());
                self
            }
            /// With the annotation `key: value`.
            pub fn with_annotation(mut self, key: &str, value: &str) -> Self {
                self.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(key.into(), value.into());
                self
            }
            /// With `status`.
            pub fn with_status(mut self, status: PackageStatus) -> Self {
                self.status = Some(status);
                self
            }
        }
    };
}

package_builders!(ClusterPackage);
package_builders!(Package);

impl ClusterPackage {
    /// ClusterPackage `name` of package `name`, from the default
    /// repository's latest version.
    pub fn test(name: &str) -> Self {
        Self {
            metadata: meta(name, None),
            spec: ClusterPackageSpec {
                package_info: template(name),
                values: Default::default(),
                suspend: false,
            },
            status: None,
        }
    }
}

impl Package {
    /// Package `name` of package `name` in namespace `team`, from the
    /// default repository's latest version.
    pub fn test(name: &str) -> Self {
        Self {
            metadata: meta(name, Some("team")),
            spec: PackageSpec {
                package_info: template(name),
                values: Default::default(),
                suspend: false,
            },
            status: None,
        }
    }

    /// In namespace `namespace`.
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }
}

impl PackageInfo {
    /// PackageInfo `name` of package `name`, not read yet.
    pub fn test(name: &str) -> Self {
        Self {
            metadata: meta(name, None),
            spec: PackageInfoSpec {
                name: name.into(),
                version: None,
                repository_name: None,
            },
            status: None,
        }
    }

    /// Read: `version`'s package file `manifest`, from `url`.
    pub fn read(mut self, version: &str, manifest: serde_json::Value, url: &str) -> Self {
        self.spec.version = Some(version.into());
        self.status = Some(PackageInfoStatus {
            manifest: Some(manifest),
            resolved_url: Some(url.into()),
            version: Some(version.into()),
            last_update_timestamp: Some(Timestamp::UNIX_EPOCH.to_string()),
            conditions: readiness(true, "SyncCompleted", "read"),
        });
        self
    }

    /// Could not be read: `message`.
    pub fn failed(mut self, message: &str) -> Self {
        self.status = Some(PackageInfoStatus {
            conditions: readiness(false, "SyncFailed", message),
            ..PackageInfoStatus::default()
        });
        self
    }
}

/// `Ready` and `Failed`, one true.
fn readiness(ready: bool, reason: &str, message: &str) -> Vec<Condition> {
    let (ready, failed) = if ready {
        ("True", "False")
    } else {
        ("False", "True")
    };
    vec![
        condition(ReadinessType::Ready.as_str(), ready, reason, message),
        condition(ReadinessType::Failed.as_str(), failed, reason, message),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_read_like_what_they_make() {
        let package = Package::test("db")
            .in_namespace("shop")
            .with_version("v1.0.0")
            .with_value("size", "2")
            .suspended();
        assert_eq!(package.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(package.spec.package_info.version.as_deref(), Some("v1.0.0"));
        assert!(package.spec.suspend);
        let info = PackageInfo::test("db").read("v1.0.0", serde_json::json!({}), "https://x/");
        let status = info.status.unwrap();
        assert_eq!(status.version.as_deref(), Some("v1.0.0"));
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
    }
}
