//! Glasskube packages (`packages.pakket.dev`) in `kubectl instance list
//! packages` and `kubectl instance describe clusterpackage/NAME` or
//! `package/NAMESPACE/NAME`: what each asks for, what it installed, why it
//! waits or failed, its values, the dependencies it stands on, and the
//! Instance it became.

use std::fmt::Write as _;
use std::io::Write;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::Instance;
use pakket_packages_api::conditions::PackageConditionType;
use pakket_packages_api::{ClusterPackage, ClusterPackageSpec, Package, PackageStatus};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format, ListFormat};
use crate::table::Table;
use crate::{age, identity, lookup};

/// One package, either kind, as the plugin shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    /// `ClusterPackage` or `Package`.
    pub kind: &'static str,
    /// A Package's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// What it asks for.
    pub spec: ClusterPackageSpec,
    /// Where it stands.
    pub status: PackageStatus,
    /// Marked installed-as-dependency.
    pub installed_as_dependency: bool,
    /// When it was created.
    #[serde(skip)]
    pub created: Option<Timestamp>,
}

impl Shown {
    fn cluster(package: ClusterPackage) -> Self {
        Self {
            kind: "ClusterPackage",
            namespace: None,
            installed_as_dependency: pakket_packages_client::dependents::is_dependency(&package),
            created: package.creation_timestamp().map(|t| t.0),
            name: package.name_any(),
            status: package.status.unwrap_or_default(),
            spec: package.spec,
        }
    }

    fn namespaced(package: Package) -> Self {
        Self {
            kind: "Package",
            namespace: package.namespace(),
            installed_as_dependency: false,
            created: package.creation_timestamp().map(|t| t.0),
            name: package.name_any(),
            status: package.status.clone().unwrap_or_default(),
            spec: ClusterPackageSpec {
                package_info: package.spec.package_info,
                values: package.spec.values,
                suspend: package.spec.suspend,
            },
        }
    }

    /// `clusterpackage.packages.pakket.dev/NAME` or
    /// `package.packages.pakket.dev/NAME`, as `kubectl get -o name`.
    fn kubectl_name(&self) -> String {
        match self.namespace {
            Some(_) => output::kubectl_name::<Package>(&self.name),
            None => output::kubectl_name::<ClusterPackage>(&self.name),
        }
    }

    fn condition(&self, kind: PackageConditionType) -> Option<&Condition> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == kind.as_str())
    }

    /// `Ready`'s reason, or `Failed`'s when that is true.
    fn state(&self) -> String {
        match (
            self.condition(PackageConditionType::Failed),
            self.condition(PackageConditionType::Ready),
        ) {
            (Some(failed), _) if failed.status == "True" => failed.reason.clone(),
            (_, Some(ready)) => ready.reason.clone(),
            _ => "NotReconciled".into(),
        }
    }
}

/// Lists every ClusterPackage and Package matching `selector`.
pub async fn list(
    client: &kube::Client,
    selector: Option<&str>,
    format: Option<ListFormat>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let params = match selector {
        Some(selector) => ListParams::default().labels(selector),
        None => ListParams::default(),
    };
    let refused = |source| async move {
        identity::refused(client, source, "list packages", lookup::READ_ADVICE).await
    };
    let cluster = match Api::<ClusterPackage>::all(client.clone())
        .list(&params)
        .await
    {
        Ok(list) => list.items,
        Err(source) => return Err(refused(source).await),
    };
    let namespaced = match Api::<Package>::all(client.clone()).list(&params).await {
        Ok(list) => list.items,
        Err(source) => return Err(refused(source).await),
    };
    let shown: Vec<Shown> = cluster
        .into_iter()
        .map(Shown::cluster)
        .chain(namespaced.into_iter().map(Shown::namespaced))
        .collect();
    match (format, format.and_then(ListFormat::document)) {
        (Some(_), None) => output::names(shown.iter().map(Shown::kubectl_name), out),
        (Some(_), Some(format)) => output::print(&shown, format, out),
        (None, _) => {
            out.write_all(table(&shown, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// The table `list packages` prints.
pub fn table(packages: &[Shown], now: Timestamp) -> String {
    let mut table = Table::new(&[
        "KIND",
        "NAMESPACE",
        "NAME",
        "PACKAGE",
        "VERSION",
        "INSTALLED",
        "STATE",
        "DEPENDENCIES",
        "AGE",
    ]);
    for package in packages {
        let info = &package.spec.package_info;
        table.row(vec![
            if package.installed_as_dependency {
                format!("{} (dependency)", package.kind)
            } else {
                package.kind.to_owned()
            },
            package.namespace.clone().unwrap_or_default(),
            package.name.clone(),
            info.name.clone(),
            info.version.clone().unwrap_or_else(|| "latest".into()),
            package.status.version.clone().unwrap_or_default(),
            package.state(),
            package.status.dependencies.join(","),
            package
                .created
                .map(|created| age::since(created, now))
                .unwrap_or_default(),
        ]);
    }
    table.render()
}

/// Describes `clusterpackage/NAME` or `package/NAMESPACE/NAME` (`which`
/// is what follows the slash, `namespaced` says which kind).
pub async fn describe(
    client: &kube::Client,
    which: &str,
    namespaced: bool,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let shown = find(client, which, namespaced).await?;
    let instance = instance_of(client, &shown).await;
    match format {
        Some(format) => output::print(&shown, format, out),
        None => {
            out.write_all(render(&shown, instance.as_ref(), Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// The Instance `shown` became, if it exists and may be read.
pub async fn instance_of(client: &kube::Client, shown: &Shown) -> Option<Instance> {
    let name = shown.status.instance.as_ref()?;
    Api::<Instance>::all(client.clone())
        .get_opt(name)
        .await
        .ok()
        .flatten()
}

/// `clusterpackage/NAME` (`which` is `NAME`) or `package/NAMESPACE/NAME`
/// (`which` is `NAMESPACE/NAME`, `namespaced`).
pub async fn find(client: &kube::Client, which: &str, namespaced: bool) -> Result<Shown, Error> {
    let found = if namespaced {
        let Some((namespace, name)) = which.split_once('/') else {
            return Err(Error::NotFound {
                kind: "package (write package/NAMESPACE/NAME)",
                name: which.to_owned(),
            });
        };
        Api::<Package>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .map(|found| found.map(Shown::namespaced))
    } else {
        Api::<ClusterPackage>::all(client.clone())
            .get_opt(which)
            .await
            .map(|found| found.map(Shown::cluster))
    };
    match found {
        Ok(Some(shown)) => Ok(shown),
        Ok(None) => Err(Error::NotFound {
            kind: if namespaced {
                "package"
            } else {
                "clusterpackage"
            },
            name: which.to_owned(),
        }),
        Err(source) => {
            Err(identity::refused(client, source, "get packages", lookup::READ_ADVICE).await)
        }
    }
}

/// The description as `kubectl describe`-style text.
pub fn render(shown: &Shown, instance: Option<&Instance>, now: Timestamp) -> String {
    let mut text = String::new();
    let field = |text: &mut String, label: &str, value: &str| {
        let _ = writeln!(text, "{:<15}{value}", format!("{label}:"));
    };
    let info = &shown.spec.package_info;
    field(&mut text, "Kind", shown.kind);
    if let Some(namespace) = &shown.namespace {
        field(&mut text, "Namespace", namespace);
    }
    field(&mut text, "Name", &shown.name);
    field(&mut text, "Package", &info.name);
    field(
        &mut text,
        "Version",
        info.version
            .as_deref()
            .unwrap_or("latest (follows the repository)"),
    );
    field(
        &mut text,
        "Repository",
        info.repository_name.as_deref().unwrap_or("(the default)"),
    );
    field(
        &mut text,
        "Installed",
        shown.status.version.as_deref().unwrap_or("(nothing yet)"),
    );
    if shown.installed_as_dependency {
        field(
            &mut text,
            "Installed as",
            "a dependency (removed when no package needs it)",
        );
    }
    if shown.spec.suspend {
        field(&mut text, "Suspended", "yes: nothing is reconciled");
    }
    if let Some(created) = shown.created {
        field(&mut text, "Age", &age::since(created, now));
    }
    if !shown.spec.values.is_empty() {
        let _ = writeln!(text, "Values:");
        for (name, value) in &shown.spec.values {
            let written = match (&value.value, &value.value_from) {
                (Some(value), _) => value.clone(),
                (None, Some(from)) => {
                    format!("(from {})", serde_json::to_string(from).unwrap_or_default())
                }
                (None, None) => String::new(),
            };
            let _ = writeln!(text, "  {name}: {written}");
        }
    }
    if !shown.status.dependencies.is_empty() {
        field(
            &mut text,
            "Depends on",
            &shown.status.dependencies.join(", "),
        );
    }
    let _ = writeln!(text, "Conditions:");
    if shown.status.conditions.is_empty() {
        let _ = writeln!(text, "  (none yet)");
    } else {
        let ordered: Vec<_> = shown.status.conditions.iter().collect();
        text.push_str(&crate::describe::table_of(&ordered, now));
    }
    match (&shown.status.instance, instance) {
        (Some(name), Some(instance)) => {
            let bundle = &instance.spec.bundle.name;
            field(&mut text, "Instance", &format!("{name} (Bundle {bundle})"));
            let _ = writeln!(
                text,
                "  see `kubectl instance describe {name}` for its objects and events"
            );
        }
        (Some(name), None) => field(&mut text, "Instance", &format!("{name} (not found)")),
        (None, _) => field(&mut text, "Instance", "(none yet)"),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_packages_api::{PackageInfoTemplate, ValueConfiguration};

    fn shown(kind: &'static str, state: (&str, &str), dependency: bool) -> Shown {
        let condition = |type_: &str, status: &str| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: state.1.into(),
            message: "why".into(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::UNIX_EPOCH,
            ),
        };
        Shown {
            kind,
            namespace: (kind == "Package").then(|| "shop".to_owned()),
            name: "db".into(),
            spec: ClusterPackageSpec {
                package_info: PackageInfoTemplate {
                    name: "postgresql".into(),
                    version: None,
                    repository_name: None,
                },
                values: [(
                    "databaseName".to_owned(),
                    ValueConfiguration {
                        value: Some("shop".into()),
                        value_from: None,
                    },
                )]
                .into(),
                suspend: false,
            },
            status: PackageStatus {
                version: Some("v16.4.0+2".into()),
                conditions: vec![
                    condition("Ready", if state.0 == "Ready" { "True" } else { "False" }),
                    condition("Failed", if state.0 == "Failed" { "True" } else { "False" }),
                ],
                instance: Some("package-shop-db".into()),
                dependencies: vec!["cloudnative-pg".into()],
                ..PackageStatus::default()
            },
            installed_as_dependency: dependency,
            created: Some(Timestamp::UNIX_EPOCH),
        }
    }

    #[test]
    fn the_list_says_what_each_package_asked_for_got_and_stands_on() {
        let text = table(
            &[
                shown("Package", ("Ready", "InstallationSucceeded"), false),
                shown("ClusterPackage", ("Failed", "SyncFailed"), true),
            ],
            Timestamp::UNIX_EPOCH,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("KIND"), "{text}");
        assert!(
            lines[1].starts_with("Package ")
                && !lines[1].contains("(dependency)")
                && lines[1].contains("shop")
                && lines[1].contains("latest")
                && lines[1].contains("InstallationSucceeded")
                && lines[1].contains("cloudnative-pg"),
            "{text}"
        );
        assert!(
            lines[2].contains("ClusterPackage (dependency)") && lines[2].contains("SyncFailed"),
            "{text}"
        );
    }

    #[test]
    fn the_description_names_values_dependencies_and_the_instance() {
        let text = render(
            &shown("Package", ("Ready", "InstallationSucceeded"), false),
            None,
            Timestamp::UNIX_EPOCH,
        );
        for expected in [
            "Namespace:     shop",
            "Version:       latest (follows the repository)",
            "Installed:     v16.4.0+2",
            "  databaseName: shop",
            "Depends on:    cloudnative-pg",
            "Instance:      package-shop-db (not found)",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        // Conditions in the table Instance `describe` uses.
        let table = crate::describe::conditions_rows(&text, 3);
        assert_eq!(
            table[0],
            ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
            "{text}"
        );
        assert_eq!(
            table[1][..3],
            ["Ready", "True", "InstallationSucceeded"],
            "{text}"
        );
        assert_eq!(table[1][4..], ["why"], "{text}");
        assert_eq!(
            table[2][..3],
            ["Failed", "False", "InstallationSucceeded"],
            "{text}"
        );
    }
}
