//! A package's values as text: written ones, a ConfigMap's key, or another
//! ClusterPackage's value (`packageRef`); a value read from elsewhere only
//! if the package's author may read it herself (asked of the apiserver as
//! a SubjectAccessReview): the package would otherwise copy into her
//! objects what she cannot see. A Secret's value is read the same way,
//! and kept apart with where it came from: it is handed to the provisioner
//! in the process ([`crate::secret_values::SecretValues`]), never written
//! into the Instance, which more people read than the Secret.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::Api;
use pakket_packages_api::{
    ClusterPackage, ObjectKeyValueSource, PackageValueSource, ValueConfiguration, ValueReference,
};

use crate::secret_values::SecretValueRef;

/// A package's values, resolved (its `Debug` names the Secrets' values,
/// never shows them).
#[derive(Clone, Default, PartialEq)]
pub(super) struct ResolvedValues {
    /// Written, or read from ConfigMaps and packages: these go into the
    /// Instance's config.
    pub values: BTreeMap<String, String>,
    /// Read from Secrets, with where from: these do not.
    pub secrets: BTreeMap<String, (SecretValueRef, String)>,
}

impl std::fmt::Debug for ResolvedValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedValues")
            .field("values", &self.values)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ResolvedValues {
    /// Every value, by name.
    pub fn all(&self) -> BTreeMap<String, String> {
        let mut all = self.values.clone();
        all.extend(self.secret_texts());
        all
    }

    /// The values read from Secrets, by name.
    pub fn secret_texts(&self) -> BTreeMap<String, String> {
        self.secrets
            .iter()
            .map(|(name, (_, value))| (name.clone(), value.clone()))
            .collect()
    }
}

/// Reads `given` on behalf of `author`; the error names the field and
/// says what to do.
pub(super) async fn resolve(
    client: &Client,
    given: &BTreeMap<String, ValueConfiguration>,
    author: Option<&pakket_api::CreatorRecord>,
    own_namespace: Option<&str>,
) -> Result<ResolvedValues, String> {
    let mut resolved = ResolvedValues::default();
    for (name, configuration) in given {
        let at = format!("spec.values.{name}");
        match (&configuration.value, &configuration.value_from) {
            (Some(value), None) => {
                resolved.values.insert(name.clone(), value.clone());
            }
            (None, Some(from)) => {
                let reader = Reader {
                    client,
                    author,
                    at: &at,
                    own_namespace,
                };
                match reader.read(from).await? {
                    Read::Text(value) => {
                        resolved.values.insert(name.clone(), value);
                    }
                    Read::Secret(source, value) => {
                        resolved.secrets.insert(name.clone(), (source, value));
                    }
                }
            }
            _ => return Err(format!("{at}: set exactly one of value or valueFrom")),
        }
    }
    Ok(resolved)
}

/// A value read from elsewhere.
enum Read {
    /// From a ConfigMap or another package: it goes into the Instance.
    Text(String),
    /// From a Secret, with where from: it does not.
    Secret(SecretValueRef, String),
}

/// Reads one `valueFrom` for a package.
struct Reader<'a> {
    client: &'a Client,
    author: Option<&'a pakket_api::CreatorRecord>,
    /// `spec.values.NAME`.
    at: &'a str,
    own_namespace: Option<&'a str>,
}

impl Reader<'_> {
    async fn read(&self, from: &ValueReference) -> Result<Read, String> {
        match (&from.package_ref, &from.config_map_ref, &from.secret_ref) {
            (Some(reference), None, None) => self.package_value(reference).await.map(Read::Text),
            (None, Some(reference), None) => self.config_map_key(reference).await.map(Read::Text),
            (None, None, Some(reference)) => self
                .secret_key(reference)
                .await
                .map(|(source, value)| Read::Secret(source, value)),
            _ => Err(format!(
                "{}.valueFrom: set exactly one of configMapRef, secretRef or packageRef",
                self.at
            )),
        }
    }

    /// Another ClusterPackage's written value.
    async fn package_value(&self, reference: &PackageValueSource) -> Result<String, String> {
        let at = self.at;
        self.may_read(
            "packages.pakket.dev",
            "clusterpackages",
            None,
            &reference.name,
        )
        .await?;
        let other = Api::<ClusterPackage>::all(self.client.clone())
            .get_opt(&reference.name)
            .await
            .map_err(|error| format!("{at}.valueFrom.packageRef: {error}"))?
            .ok_or_else(|| {
                format!(
                    "{at}.valueFrom.packageRef: ClusterPackage {} does not exist",
                    reference.name
                )
            })?;
        other
            .spec
            .values
            .get(&reference.value)
            .and_then(|v| v.value.clone())
            .ok_or_else(|| {
                format!(
                    "{at}.valueFrom.packageRef: ClusterPackage {} has no written value {}",
                    reference.name, reference.value
                )
            })
    }

    /// A ConfigMap's key.
    async fn config_map_key(&self, reference: &ObjectKeyValueSource) -> Result<String, String> {
        let at = self.at;
        let namespace = reference
            .namespace
            .as_deref()
            .or(self.own_namespace)
            .ok_or_else(|| {
                format!("{at}.valueFrom.configMapRef.namespace: required for a ClusterPackage")
            })?;
        self.may_read("", "configmaps", Some(namespace), &reference.name)
            .await?;
        let config_map = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
            self.client.clone(),
            namespace,
        )
        .get_opt(&reference.name)
        .await
        .map_err(|error| format!("{at}.valueFrom.configMapRef: {error}"))?
        .ok_or_else(|| {
            format!(
                "{at}.valueFrom.configMapRef: ConfigMap {namespace}/{} does not exist",
                reference.name
            )
        })?;
        config_map
            .data
            .and_then(|data| data.get(&reference.key).cloned())
            .ok_or_else(|| {
                format!(
                    "{at}.valueFrom.configMapRef: ConfigMap {namespace}/{} has no key {}",
                    reference.name, reference.key
                )
            })
    }

    /// A Secret's key, if the author may `get` the Secret herself.
    async fn secret_key(
        &self,
        reference: &ObjectKeyValueSource,
    ) -> Result<(SecretValueRef, String), String> {
        let at = self.at;
        let namespace = reference
            .namespace
            .as_deref()
            .or(self.own_namespace)
            .ok_or_else(|| {
                format!("{at}.valueFrom.secretRef.namespace: required for a ClusterPackage")
            })?;
        self.may_read("", "secrets", Some(namespace), &reference.name)
            .await?;
        let secret =
            Api::<k8s_openapi::api::core::v1::Secret>::namespaced(self.client.clone(), namespace)
                .get_opt(&reference.name)
                .await
                .map_err(|error| format!("{at}.valueFrom.secretRef: {error}"))?
                .ok_or_else(|| {
                    format!(
                        "{at}.valueFrom.secretRef: Secret {namespace}/{} does not exist",
                        reference.name
                    )
                })?;
        let value = secret_text(&secret, at, namespace, reference)?;
        Ok((
            SecretValueRef {
                namespace: namespace.to_owned(),
                name: reference.name.clone(),
                key: reference.key.clone(),
                resource_version: secret.metadata.resource_version.unwrap_or_default(),
            },
            value,
        ))
    }

    /// Whether the package's author may `get` the object a value is read
    /// from; the error names the field and says what to do.
    async fn may_read(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), String> {
        let at = self.at;
        let author = self.author.ok_or_else(|| {
            format!(
                "{at}.valueFrom: the package has no verified author (the webhooks record who writes packages), so nothing is read on anyone's behalf; write the value"
            )
        })?;
        let access = pakket_runtime::kernel::trust::rbac::Access::Resource {
            group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: String::new(),
            verb: "get".into(),
            namespace: namespace.map(str::to_owned),
            name: Some(name.to_owned()),
        };
        let reviews: Api<k8s_openapi::api::authorization::v1::SubjectAccessReview> =
            Api::all(self.client.clone());
        if pakket_runtime::approval::review(&reviews, author, &access).await? {
            Ok(())
        } else {
            Err(format!(
                "{at}.valueFrom: {} may not {access}, so the package does not read it for them",
                author.username
            ))
        }
    }
}

/// The text of the Secret's key.
fn secret_text(
    secret: &k8s_openapi::api::core::v1::Secret,
    at: &str,
    namespace: &str,
    reference: &ObjectKeyValueSource,
) -> Result<String, String> {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get(&reference.key))
        .ok_or_else(|| {
            format!(
                "{at}.valueFrom.secretRef: Secret {namespace}/{} has no key {}",
                reference.name, reference.key
            )
        })?;
    String::from_utf8(bytes.0.clone()).map_err(|_| {
        format!(
            "{at}.valueFrom.secretRef: key {} of Secret {namespace}/{} is not UTF-8 text; values are text",
            reference.key, reference.name
        )
    })
}
