//! The Instance's `spec.config` for registry-v1: `installNamespace` and
//! `watchNamespaces`, checked against the bundle's install modes,
//! `certificateProvider`, `crds` ([`Crds`]), and `deploymentConfig`
//! ([`crate::deployment_config`]). Each problem names its field; nothing falls back
//! silently.
//!
//! `certificateProvider` may also come from the ProvisionerClass's
//! parameters, where an admin sets it for every Instance of the class; the
//! Instance's own setting wins.

use serde_json::{Map, Value};

use crate::bundle::Bundle;

/// The annotation with the namespace an operator suggests for itself.
pub const SUGGESTED_NAMESPACE: &str = "operatorframework.io/suggested-namespace";

/// Where the operator runs, what it watches, and who issues its webhook
/// certificates.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The namespace of its Deployments, ServiceAccounts and namespaced
    /// manifests.
    pub install_namespace: String,
    /// What it watches.
    pub watch: Watch,
    /// Who issues the webhooks' serving certificates.
    pub certificate_provider: CertificateProvider,
    /// What an admin adjusts in its Deployments.
    pub deployment_config: Option<crate::deployment_config::DeploymentConfig>,
    /// The labels and annotations of the install namespace, if Pakket
    /// creates it.
    pub namespace_template: crate::namespace_template::NamespaceTemplate,
    /// Which part of the bundle this Instance installs.
    pub crds: Crds,
}

/// `spec.config.crds`: whether this Instance installs the bundle's CRDs,
/// the rest of it, or both. Teams that each run their own copy of one
/// operator share its CRDs, which one Instance owns: the copies leave
/// them out (`Omit`), and when the Instance that owned them with its
/// operator goes while copies remain, it keeps them alone (`Only`), so
/// that no team's uninstall deletes the CRDs (and every custom resource)
/// another team's copy serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Crds {
    /// The CRDs and the operator; the default.
    #[default]
    Include,
    /// The operator without its CRDs (a copy that uses CRDs another
    /// Instance owns).
    Omit,
    /// The CRDs alone.
    Only,
}

impl Crds {
    /// The field it is read from.
    pub const FIELD: &str = "spec.config.crds";

    fn read(value: Option<&Value>) -> Result<Self, ConfigError> {
        match value.map(|value| value.as_str().ok_or(value)) {
            None | Some(Ok("Include")) => Ok(Self::Include),
            Some(Ok("Omit")) => Ok(Self::Omit),
            Some(Ok("Only")) => Ok(Self::Only),
            Some(Ok(other)) => Err(Self::wrong(&format!("{other:?}"))),
            Some(Err(other)) => Err(Self::wrong(&other.to_string())),
        }
    }

    fn wrong(given: &str) -> ConfigError {
        ConfigError {
            field: Self::FIELD.into(),
            problem: format!(
                "{given} is not one of Include (the CRDs and the operator, the default), Omit (the operator alone) or Only (the CRDs alone)"
            ),
        }
    }
}

/// `spec.config.certificateProvider`: who issues webhook serving
/// certificates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CertificateProvider {
    /// Pakket derives them itself ([`crate::certificates`]); the default.
    #[default]
    Pakket,
    /// cert-manager issues them from Issuers and Certificates Pakket
    /// renders ([`crate::cert_manager`]).
    CertManager,
}

impl CertificateProvider {
    /// The field it is read from.
    pub const FIELD: &str = "spec.config.certificateProvider";
    /// Where the class sets it for every Instance.
    pub const CLASS_PARAMETER: &str = "the ProvisionerClass parameter certificateProvider";
}

/// The namespaces an operator watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Watch {
    /// Every namespace (install mode AllNamespaces).
    All,
    /// These namespaces, sorted (OwnNamespace, SingleNamespace or
    /// MultiNamespace).
    Namespaces(Vec<String>),
}

impl Watch {
    /// `olm.targetNamespaces`: empty for all, else comma-separated.
    pub fn target_namespaces(&self) -> String {
        match self {
            Self::All => String::new(),
            Self::Namespaces(namespaces) => namespaces.join(","),
        }
    }
}

/// A field of `spec.config` that is wrong, and what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// `spec.config.watchNamespaces[1]`.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// The fields registry-v1 reads.
const KNOWN: [&str; 6] = [
    "installNamespace",
    "watchNamespaces",
    "certificateProvider",
    "crds",
    "deploymentConfig",
    "namespaceTemplate",
];

/// Reads `config` for `bundle`, with the class's `class_parameters` for
/// what the class may set for all its Instances.
pub fn placement(
    config: Option<&Map<String, Value>>,
    class_parameters: Option<&Map<String, Value>>,
    bundle: &Bundle,
) -> Result<Placement, ConfigError> {
    let empty = Map::new();
    let config = config.unwrap_or(&empty);
    if let Some((field, problem)) =
        pakket_runtime::provisioner::unread_config_field(config, &KNOWN, "registry-v1")
    {
        return Err(ConfigError { field, problem });
    }
    let install_namespace = match config.get("installNamespace") {
        None => default_namespace(bundle),
        Some(Value::String(namespace)) => {
            check_namespace("spec.config.installNamespace", namespace)?;
            namespace.clone()
        }
        Some(other) => {
            return Err(ConfigError {
                field: "spec.config.installNamespace".into(),
                problem: format!("{other} is not a string; write a namespace name"),
            });
        }
    };
    let listed = match config.get("watchNamespaces") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut namespaces = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let field = format!("spec.config.watchNamespaces[{index}]");
                let Some(namespace) = item.as_str() else {
                    return Err(ConfigError {
                        field,
                        problem: format!("{item} is not a string; write a namespace name"),
                    });
                };
                check_namespace(&field, namespace)?;
                if namespaces.contains(&namespace.to_owned()) {
                    return Err(ConfigError {
                        field,
                        problem: format!("{namespace} is listed twice"),
                    });
                }
                namespaces.push(namespace.to_owned());
            }
            namespaces.sort();
            namespaces
        }
        Some(other) => {
            return Err(ConfigError {
                field: "spec.config.watchNamespaces".into(),
                problem: format!(
                    "{other} is not a list; write e.g. [team-a, team-b], or leave it out to watch every namespace"
                ),
            });
        }
    };
    let watch = watch(bundle, &install_namespace, listed)?;
    let certificate_provider = match config.get("certificateProvider") {
        Some(value) => certificate_provider(Some(value), CertificateProvider::FIELD)?,
        None => certificate_provider(
            class_parameters.and_then(|parameters| parameters.get("certificateProvider")),
            CertificateProvider::CLASS_PARAMETER,
        )?,
    };
    let deployment_config = config
        .get("deploymentConfig")
        .map(crate::deployment_config::read)
        .transpose()?;
    if let Some(deployment_config) = &deployment_config {
        deployment_config.check_mounts(&pod_volumes(bundle))?;
    }
    let template = |value: Option<&Value>, field: &str| {
        value
            .map(|value| crate::namespace_template::read(value, field))
            .transpose()
            .map(Option::unwrap_or_default)
    };
    let namespace_template = template(
        class_parameters.and_then(|parameters| parameters.get("namespaceTemplate")),
        crate::namespace_template::CLASS_PARAMETER,
    )?
    .under(template(
        config.get("namespaceTemplate"),
        crate::namespace_template::FIELD,
    )?);
    let crds = Crds::read(config.get("crds"))?;
    Ok(Placement {
        install_namespace,
        watch,
        certificate_provider,
        deployment_config,
        namespace_template,
        crds,
    })
}

/// The volumes the operator's pods have: every Deployment's own, and the
/// webhook certificates' Pakket mounts.
fn pod_volumes(bundle: &Bundle) -> Vec<String> {
    let own = bundle
        .csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .flat_map(|deployment| {
            deployment
                .spec
                .pointer("/template/spec/volumes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|volume| {
            volume
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let certificates = crate::webhooks::CERTIFICATE_MOUNTS
        .iter()
        .map(|(volume, ..)| (*volume).to_owned());
    own.chain(certificates).collect()
}

/// `certificateProvider`: `Pakket` (also when absent) or `CertManager`.
fn certificate_provider(
    value: Option<&Value>,
    field: &str,
) -> Result<CertificateProvider, ConfigError> {
    match value {
        None => Ok(CertificateProvider::Pakket),
        Some(Value::String(name)) if name == "Pakket" => Ok(CertificateProvider::Pakket),
        Some(Value::String(name)) if name == "CertManager" => Ok(CertificateProvider::CertManager),
        Some(other) => Err(ConfigError {
            field: field.into(),
            problem: format!(
                "{other} is not a certificate provider; write Pakket (the default) or CertManager"
            ),
        }),
    }
}

/// The CSV's suggested namespace, else the package's name.
fn default_namespace(bundle: &Bundle) -> String {
    bundle
        .csv
        .metadata
        .annotations
        .get(SUGGESTED_NAMESPACE)
        .and_then(Value::as_str)
        .filter(|namespace| is_dns_label(namespace))
        .map_or_else(|| bundle.package.clone(), str::to_owned)
}

/// Chooses the install mode for `listed` watched namespaces.
fn watch(
    bundle: &Bundle,
    install_namespace: &str,
    listed: Vec<String>,
) -> Result<Watch, ConfigError> {
    let spec = &bundle.csv.spec;
    let supported = spec.supported_modes().join(", ");
    let refuse = |problem: String| ConfigError {
        field: "spec.config.watchNamespaces".into(),
        problem,
    };
    match listed.as_slice() {
        [] if spec.supports("AllNamespaces") => Ok(Watch::All),
        // Watching only where it runs is the narrowest choice there is.
        [] if spec.supports("OwnNamespace") => {
            Ok(Watch::Namespaces(vec![install_namespace.to_owned()]))
        }
        [] => Err(refuse(format!(
            "is empty, which means every namespace, but {} supports only {supported}; list the namespaces it should watch",
            bundle.csv.metadata.name
        ))),
        [one] if one == install_namespace => {
            if spec.supports("OwnNamespace") {
                Ok(Watch::Namespaces(listed))
            } else {
                Err(refuse(format!(
                    "lists only the install namespace {one}, but {} does not support OwnNamespace (it supports {supported}); watch another namespace, or install it elsewhere",
                    bundle.csv.metadata.name
                )))
            }
        }
        [_] => {
            if spec.supports("SingleNamespace") {
                Ok(Watch::Namespaces(listed))
            } else {
                Err(refuse(format!(
                    "lists one namespace other than the install namespace, but {} does not support SingleNamespace (it supports {supported})",
                    bundle.csv.metadata.name
                )))
            }
        }
        _ => {
            if spec.supports("MultiNamespace") {
                Ok(Watch::Namespaces(listed))
            } else {
                Err(refuse(format!(
                    "lists {} namespaces, but {} does not support MultiNamespace (it supports {supported})",
                    listed.len(),
                    bundle.csv.metadata.name
                )))
            }
        }
    }
}

fn check_namespace(field: &str, namespace: &str) -> Result<(), ConfigError> {
    if is_dns_label(namespace) {
        Ok(())
    } else {
        Err(ConfigError {
            field: field.to_owned(),
            problem: format!(
                "{namespace:?} is not a namespace name (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)"
            ),
        })
    }
}

/// An RFC 1123 label, as namespace names are.
pub(crate) fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}
