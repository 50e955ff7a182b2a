//! `kubectl instance why NAME --server URL`: for an Instance whose
//! dependencies are missing or conflict, asks the cluster's resolver API
//! what would satisfy them, and turns the answer into next steps.
//!
//! The request is the Instance's own package at its own version, with what
//! the other installed Instances provide (their `olm.package` properties)
//! as installed: the resolver then names each bundle to install, from
//! which catalog and channel, and which need it meets; or, when nothing
//! fits, the engine's explanation.

use crate::resolver::Server;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::{Bundle, BundleProperty, ConditionType, Instance};
use pakket_resolve_api::protocol::resolve::{
    InstalledItem, Outcome, RequestItem, ResolveRequest, Selection, SelectionReason,
};

/// A package at a version, as an `olm.package` property says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageVersion {
    /// The package.
    pub package: String,
    /// Its version.
    pub version: String,
}

/// The `olm.package` among `properties`, if any.
pub fn package_of(properties: &[BundleProperty]) -> Option<PackageVersion> {
    let property = properties.iter().find(|p| p.type_ == "olm.package")?;
    Some(PackageVersion {
        package: property.value.get("packageName")?.as_str()?.to_owned(),
        version: property.value.get("version")?.as_str()?.to_owned(),
    })
}

/// The packages installed by Instances other than `except` (Installed
/// True), from their Bundles' properties; `Err` with the reason when the
/// caller may not list them.
async fn installed_packages(
    client: &kube::Client,
    except: &str,
) -> Result<Vec<PackageVersion>, String> {
    let instances = Api::<Instance>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|error| match error {
            kube::Error::Api(status) => status.message,
            other => other.to_string(),
        })?;
    let bundles: Api<Bundle> = Api::all(client.clone());
    let mut installed = Vec::new();
    for instance in instances {
        let name = instance.name_any();
        let is_installed = instance
            .condition(ConditionType::Installed)
            .is_some_and(|c| c.status == "True");
        if name == except || !is_installed {
            continue;
        }
        let bundle = match instance.embedded_bundle() {
            Some(embedded) => Some(embedded),
            None => bundles
                .get_opt(&instance.spec.bundle.name)
                .await
                .ok()
                .flatten(),
        };
        let properties = bundle
            .and_then(|bundle| bundle.status)
            .map(|status| status.properties)
            .unwrap_or_default();
        installed.extend(package_of(&properties));
    }
    installed.sort_by(|a, b| (&a.package, &a.version).cmp(&(&b.package, &b.version)));
    installed.dedup();
    Ok(installed)
}

/// Next steps for `instance` (content `wanted`) from the resolver at
/// `server`. Never fails: what could not be asked is a step of its own.
pub async fn advise(
    client: &kube::Client,
    server: &Server<'_>,
    instance: &Instance,
    wanted: Option<PackageVersion>,
) -> Vec<String> {
    let Some(wanted) = wanted else {
        return vec![format!(
            "the resolver API at {} was not asked: the Bundle's status names no olm.package (it is not unpacked yet, or its provisioner records none)",
            server.url
        )];
    };
    let mut steps = Vec::new();
    let installed = match installed_packages(client, &instance.name_any()).await {
        Ok(installed) => installed,
        Err(reason) => {
            steps.push(format!(
                "could not list Instances ({reason}): the resolution below assumes nothing else is installed"
            ));
            Vec::new()
        }
    };
    let request = ResolveRequest {
        requests: vec![RequestItem::Text(format!(
            "{}={}",
            wanted.package, wanted.version
        ))],
        installed: installed
            .iter()
            .map(|p| InstalledItem::Version {
                package: p.package.clone(),
                version: p.version.clone(),
            })
            .collect(),
    };
    let answer = match server.client() {
        Ok(client) => client.resolve(&request).await,
        Err(error) => Err(error),
    };
    match answer {
        Ok(Outcome::Resolved(resolved)) => {
            steps.extend(install_steps(&wanted, &resolved.resolved, server.url));
        }
        Ok(Outcome::NoSolution(failed)) => {
            let mut step = format!(
                "the cluster's catalogs ({}) cannot satisfy {} {} either: {}",
                server.url, wanted.package, wanted.version, failed.error.message
            );
            if let Some(explanation) = failed.error.explanation {
                step.push_str(&format!(" ({})", explanation.summary));
            }
            steps.push(step);
        }
        Ok(Outcome::BadInput(message)) => steps.push(format!(
            "the resolver API at {} refused the question: {message}",
            server.url
        )),
        Err(error) => steps.push(format!(
            "could not ask the resolver API at {}: {error}",
            server.url
        )),
    }
    steps
}

/// One step per bundle to install that is not the Instance's own and not
/// installed already.
fn install_steps(wanted: &PackageVersion, resolved: &[Selection], server: &str) -> Vec<String> {
    let needed: Vec<&Selection> = resolved
        .iter()
        .filter(|s| s.package != wanted.package)
        .filter(|s| !matches!(s.reason, SelectionReason::Installed))
        .collect();
    if needed.is_empty() {
        return vec![format!(
            "the cluster's catalogs ({server}) resolve {} {} with nothing else to install: what is missing may be installed but not yet Installed, or provided outside any catalog",
            wanted.package, wanted.version
        )];
    }
    needed
        .iter()
        .map(|s| {
            let why = match &s.reason {
                SelectionReason::Dependency { of, needs } => format!("{of} needs {needs}"),
                SelectionReason::Upgrade { from } => format!("it upgrades the installed {from}"),
                _ => "the resolution chose it".to_owned(),
            };
            format!(
                "install {} {} (bundle {}, catalog {}{}): {why}",
                s.package,
                s.version,
                s.bundle,
                s.catalog,
                s.channel
                    .as_deref()
                    .map(|c| format!(", channel {c}"))
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn selection(package: &str, reason: SelectionReason) -> Selection {
        Selection {
            package: package.into(),
            version: "1.2.0".into(),
            bundle: format!("{package}.v1.2.0"),
            channel: Some("stable".into()),
            catalog: "community".into(),
            reason,
            deprecated: None,
        }
    }

    #[test]
    fn the_package_property_is_read_and_others_ignored() {
        let properties = vec![
            BundleProperty {
                type_: "olm.gvk".into(),
                value: json!({"group": "a", "version": "v1", "kind": "A"}),
            },
            BundleProperty {
                type_: "olm.package".into(),
                value: json!({"packageName": "etcd", "version": "0.9.4"}),
            },
        ];
        assert_eq!(
            package_of(&properties),
            Some(PackageVersion {
                package: "etcd".into(),
                version: "0.9.4".into()
            })
        );
        assert_eq!(package_of(&properties[..1]), None);
    }

    #[test]
    fn each_dependency_to_install_is_a_step_naming_catalog_channel_and_need() {
        let wanted = PackageVersion {
            package: "app".into(),
            version: "1.0.0".into(),
        };
        let resolved = vec![
            selection(
                "app",
                SelectionReason::Requested {
                    request: "app=1.0.0".into(),
                    replaces: None,
                },
            ),
            selection(
                "cert-manager",
                SelectionReason::Dependency {
                    of: "app.v1.0.0".into(),
                    needs: "olm.gvk cert-manager.io/v1/Certificate".into(),
                },
            ),
            selection("already", SelectionReason::Installed),
        ];
        assert_eq!(
            install_steps(&wanted, &resolved, "https://r"),
            [
                "install cert-manager 1.2.0 (bundle cert-manager.v1.2.0, catalog community, channel stable): app.v1.0.0 needs olm.gvk cert-manager.io/v1/Certificate"
            ]
        );
        assert!(
            install_steps(&wanted, &resolved[..1], "https://r")[0]
                .contains("nothing else to install")
        );
    }
}
