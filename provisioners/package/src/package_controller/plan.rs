//! The one decision of a package's pass, once everything it needs is read:
//! what to do next. Pure (no kube, no async), so every arm is a row of the
//! table test below, checked without a cluster.
//!
//! What the plan does not decide is what the install finds on its way
//! (see `act::install`): whether its dependencies are there, whether its
//! chart and manifests can be located, whether its Instance's name is
//! free, and whether its components are ready; each stops the install
//! with its typed reason.

use pakket_packages_api::conditions::{PackageReason, ReadinessType};
use pakket_packages_api::{PackageInfoStatus, conditions::PackageReason::*};

use super::observe::{Observed, Read, Source};
use crate::secret_values;
use crate::values;

/// The one next action of a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// Deleted: its components, then its Instance, then its PackageInfos
    /// go, then the finalizer (kept while others depend on it).
    Finalize,
    /// The finalizer is added first; the pass after installs.
    AddFinalizer,
    /// Suspended: nothing is done or written.
    Suspend,
    /// Installed as a dependency and no longer needed: deleted.
    RemoveUnneeded,
    /// Its version's PackageInfo does not exist: created, then waited for.
    CreateInfo,
    /// It cannot go on as it is: `Failed` with this reason.
    Fail {
        /// On `Ready` and `Failed`.
        reason: PackageReason,
        /// Names the object or field and says what to do.
        message: String,
    },
    /// On its way: `Pending`.
    Wait {
        /// On `Ready` and `Failed`.
        reason: PackageReason,
        /// What it waits for.
        message: String,
    },
    /// Its dependencies, Instance and components are made or updated.
    Install,
}

/// The next action, decided in this order:
///
/// 1. A package being deleted is finalized ([`Plan::Finalize`]).
/// 2. One without the finalizer gets it ([`Plan::AddFinalizer`]).
/// 3. A suspended one is left alone ([`Plan::Suspend`]).
/// 4. One this provisioner installed as a dependency that no package
///    needs any more is removed ([`Plan::RemoveUnneeded`]).
/// 5. Its version's PackageInfo is created if it does not exist
///    ([`Plan::CreateInfo`]).
/// 6. A PackageInfo not read for the version fails the package when it
///    failed (`SyncFailed`), and is waited for otherwise (`Pending`).
/// 7. A package file that cannot be used fails it (`SyncFailed`).
/// 8. A cluster-scoped package asked for as a namespaced Package, or one
///    using what is not installed yet, fails it (`UnsupportedFormat`).
/// 9. Values that cannot be read, or do not fit the package's value
///    definitions, fail it (`ValueConfigurationInvalid`); a Secret's value
///    is masked in the message.
/// 10. Else it is installed ([`Plan::Install`]).
pub(super) fn plan(observed: &Observed) -> Plan {
    match observed {
        Observed::Deleting => Plan::Finalize,
        Observed::Unfinalized => Plan::AddFinalizer,
        Observed::Suspended => Plan::Suspend,
        Observed::Unneeded => Plan::RemoveUnneeded,
        Observed::Active(source) => plan_source(source),
    }
}

/// Steps 5 to 10.
fn plan_source(source: &Source) -> Plan {
    let Some(info) = &source.info else {
        return Plan::CreateInfo;
    };
    let Some(read) = &source.read else {
        return not_read(&source.info_name, info);
    };
    let content = match &read.content {
        Ok(content) => content,
        Err(problem) => {
            return fail(
                SyncFailed,
                format!("PackageInfo {}: {problem}", source.info_name),
            );
        }
    };
    // A namespace's owner may install into her namespace only: a package
    // written for the whole cluster (CRDs, cluster roles) is a
    // ClusterPackage, which only whoever may write those creates.
    if source.namespaced && !content.manifest.is_namespaced() {
        return fail(
            UnsupportedFormat,
            format!(
                "package {} is cluster-scoped (its scope is not Namespaced): it installs as a ClusterPackage, not as a Package in a namespace",
                source.package
            ),
        );
    }
    if let Some(missing) = content.manifest.unsupported() {
        return fail(
            UnsupportedFormat,
            format!(
                "package {} {} uses {missing}, which this version of pakket-package does not install yet",
                source.package, source.version
            ),
        );
    }
    values_plan(read, &content.manifest)
}

/// Step 6: the PackageInfo failed, or is not read yet.
fn not_read(info_name: &str, info: &PackageInfoStatus) -> Plan {
    let failed = info
        .conditions
        .iter()
        .find(|c| c.type_ == ReadinessType::Failed.as_str() && c.status == "True");
    match failed {
        Some(failed) => fail(
            SyncFailed,
            format!("PackageInfo {info_name}: {}", failed.message),
        ),
        None => Plan::Wait {
            reason: Pending,
            message: format!("waiting for PackageInfo {info_name} to be read"),
        },
    }
}

/// Steps 9 and 10.
fn values_plan(read: &Read, manifest: &pakket_packages_api::manifest::PackageManifest) -> Plan {
    let given = match &read.values {
        Ok(given) => given,
        Err(problem) => return fail(ValueConfigurationInvalid, problem.clone()),
    };
    let problems = values::validate(
        &manifest.value_definitions,
        &values::with_defaults(&manifest.value_definitions, &given.all()),
    );
    if problems.is_empty() {
        return Plan::Install;
    }
    let words = problems
        .iter()
        .map(|p| format!("spec.values.{p}"))
        .collect::<Vec<_>>()
        .join("; ");
    fail(
        ValueConfigurationInvalid,
        secret_values::masked(&words, &given.secret_texts()),
    )
}

fn fail(reason: PackageReason, message: String) -> Plan {
    Plan::Fail { reason, message }
}

#[cfg(test)]
mod tests {
    use super::super::observe::{Content, Observed, Read, Source, content_of};
    use super::super::values_from::ResolvedValues;
    use super::*;
    use crate::secret_values::SecretValueRef;
    use pakket_packages_api::PackageInfo;
    use pakket_packages_client::repository::Endpoint;
    use serde_json::{Value, json};

    const URL: &str = "https://packages.example/cnpg/v1/package.yaml";

    /// Package `cnpg` at `v1`, a ClusterPackage, its PackageInfo not made yet.
    fn source() -> Source {
        Source {
            package: "cnpg".into(),
            repository: Endpoint {
                name: "glasskube".into(),
                base: reqwest::Url::parse("https://packages.example/").unwrap(),
                authorization: None,
            },
            version: "v1".into(),
            pinned: true,
            info_name: "cnpg-v1".into(),
            namespaced: false,
            as_dependency: false,
            info: None,
            read: None,
        }
    }

    /// Its PackageInfo read with `manifest`, and `values`.
    fn read_with(manifest: Value, values: Result<ResolvedValues, String>) -> Source {
        let info = PackageInfo::test("cnpg").read("v1", manifest, URL);
        let status = info.status.unwrap();
        Source {
            read: Some(Read {
                content: content_of(&status),
                author: None,
                values,
            }),
            info: Some(status),
            ..source()
        }
    }

    fn read(manifest: Value) -> Source {
        read_with(manifest, Ok(ResolvedValues::default()))
    }

    fn active(source: Source) -> Observed {
        Observed::Active(Box::new(source))
    }

    fn fail(reason: PackageReason, message: &str) -> Plan {
        Plan::Fail {
            reason,
            message: message.into(),
        }
    }

    fn check(rows: Vec<(&str, Observed, Plan)>) {
        for (row, observed, expected) in rows {
            assert_eq!(plan(&observed), expected, "{row}");
        }
    }

    /// Steps 1 to 4: what the object and its dependents decide.
    #[test]
    fn object_rows() {
        check(vec![
            ("being deleted", Observed::Deleting, Plan::Finalize),
            (
                "no finalizer yet",
                Observed::Unfinalized,
                Plan::AddFinalizer,
            ),
            ("suspended", Observed::Suspended, Plan::Suspend),
            (
                "a dependency no package needs",
                Observed::Unneeded,
                Plan::RemoveUnneeded,
            ),
        ]);
    }

    /// Steps 5 to 7: the PackageInfo and its package file.
    #[test]
    fn package_info_rows() {
        let failed = PackageInfo::test("cnpg").failed("404 Not Found").status;
        let unread = PackageInfo::test("cnpg").status.unwrap_or_default();
        let other_version = PackageInfo::test("cnpg")
            .read("v0", json!({"name": "cnpg"}), URL)
            .status;
        check(vec![
            ("no PackageInfo yet", active(source()), Plan::CreateInfo),
            (
                "the PackageInfo failed",
                active(Source {
                    info: failed,
                    ..source()
                }),
                fail(SyncFailed, "PackageInfo cnpg-v1: 404 Not Found"),
            ),
            (
                "the PackageInfo is not read yet",
                active(Source {
                    info: Some(unread),
                    ..source()
                }),
                Plan::Wait {
                    reason: Pending,
                    message: "waiting for PackageInfo cnpg-v1 to be read".into(),
                },
            ),
            (
                "the PackageInfo says another version (not read for this one)",
                active(Source {
                    info: other_version,
                    ..source()
                }),
                Plan::Wait {
                    reason: Pending,
                    message: "waiting for PackageInfo cnpg-v1 to be read".into(),
                },
            ),
            (
                "its package file is not one",
                active(read(json!({"manifests": "nope"}))),
                fail(
                    SyncFailed,
                    &format!(
                        "PackageInfo cnpg-v1: {}",
                        content_of(
                            &PackageInfo::test("x")
                                .read("v1", json!({"manifests": "nope"}), URL)
                                .status
                                .unwrap()
                        )
                        .unwrap_err()
                    ),
                ),
            ),
        ]);
    }

    /// Step 8: what this provisioner does not install as asked.
    #[test]
    fn unsupported_rows() {
        let cluster_scoped = json!({"name": "cnpg"});
        let kustomize = json!({"name": "cnpg", "scope": "Namespaced", "kustomize": {}});
        let missing = serde_json::from_value::<pakket_packages_api::manifest::PackageManifest>(
            kustomize.clone(),
        )
        .unwrap()
        .unsupported()
        .expect("kustomize is not installed yet");
        check(vec![
            (
                "a cluster-scoped package as a namespaced Package",
                active(Source {
                    namespaced: true,
                    ..read(cluster_scoped.clone())
                }),
                fail(
                    UnsupportedFormat,
                    "package cnpg is cluster-scoped (its scope is not Namespaced): it installs as a ClusterPackage, not as a Package in a namespace",
                ),
            ),
            (
                "a cluster-scoped package as a ClusterPackage",
                active(read(cluster_scoped)),
                Plan::Install,
            ),
            (
                "a feature not installed yet",
                active(Source {
                    namespaced: true,
                    ..read(kustomize)
                }),
                fail(
                    UnsupportedFormat,
                    &format!(
                        "package cnpg v1 uses {missing}, which this version of pakket-package does not install yet"
                    ),
                ),
            ),
        ]);
    }

    /// Steps 9 and 10: the values.
    #[test]
    fn values_rows() {
        let manifest = json!({
            "name": "cnpg",
            "valueDefinitions": {
                "size": {"type": "number", "defaultValue": "1"},
                "token": {"type": "text", "constraints": {"pattern": "^[a-z]+$"}},
            },
        });
        let given = |size: &str, token: &str| ResolvedValues {
            values: [("size".to_owned(), size.to_owned())].into(),
            secrets: [(
                "token".to_owned(),
                (SecretValueRef::default(), token.to_owned()),
            )]
            .into(),
        };
        let Plan::Fail { reason, message } = plan(&active(read_with(
            manifest.clone(),
            Ok(given("1", "S3CRET")),
        ))) else {
            panic!("a value that breaks its pattern fails");
        };
        assert_eq!(reason, ValueConfigurationInvalid);
        assert!(message.starts_with("spec.values.token"), "{message}");
        assert!(
            !message.contains("S3CRET"),
            "a Secret's value is masked: {message}"
        );
        check(vec![
            (
                "values that cannot be read",
                active(read_with(
                    manifest.clone(),
                    Err("spec.values.token.valueFrom: nope".into()),
                )),
                fail(
                    ValueConfigurationInvalid,
                    "spec.values.token.valueFrom: nope",
                ),
            ),
            (
                "values that fit: installed",
                active(read_with(manifest.clone(), Ok(given("3", "secret")))),
                Plan::Install,
            ),
            (
                "defaults fill what is not given",
                active(read_with(
                    manifest,
                    Ok(ResolvedValues {
                        values: Default::default(),
                        ..given("", "secret")
                    }),
                )),
                Plan::Install,
            ),
        ]);
    }

    /// `Content` is what the install takes on.
    #[test]
    fn an_install_has_its_content() {
        let Observed::Active(source) = active(read(json!({"name": "cnpg"}))) else {
            unreachable!()
        };
        let Some(Read {
            content: Ok(Content { url, .. }),
            ..
        }) = source.read
        else {
            panic!("read");
        };
        assert_eq!(url.as_str(), URL);
    }
}
