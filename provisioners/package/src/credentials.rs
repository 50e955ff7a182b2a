//! A PackageRepository's credentials: read from Secrets in the
//! provisioner's own namespace, and only from a Secret an admin offered to
//! that repository by label, so that writing a PackageRepository never
//! reads (or sends to a server) any other Secret.

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use pakket_packages_api::repository::{Endpoint, RepositoryError, as_folder};
use pakket_packages_api::{PackageRepository, SecretKey};
use reqwest::Url;

/// The repository `name` as an [`Endpoint`], its credentials read from
/// Secrets in `namespace` (the provisioner's own).
pub async fn endpoint(
    client: &kube::Client,
    repository: &PackageRepository,
    namespace: &str,
) -> Result<Endpoint, RepositoryError> {
    let name = repository.metadata.name.clone().unwrap_or_default();
    let bad = |problem: String| {
        RepositoryError::Repository(format!("PackageRepository {name}: {problem}"))
    };
    let base = Url::parse(&repository.spec.url).map_err(|error| {
        bad(format!(
            "spec.url is not a URL ({error}); write https://HOST/PATH"
        ))
    })?;
    if base.scheme() != "https" {
        return Err(bad("spec.url must be https://".into()));
    }
    let base = as_folder(base);
    let authorization = match &repository.spec.auth {
        None => None,
        Some(auth) => match (&auth.basic, &auth.bearer) {
            (Some(basic), None) => {
                let user = secret_value(client, namespace, &name, &basic.username_secret_ref)
                    .await
                    .map_err(|problem| {
                        bad(format!("spec.auth.basic.usernameSecretRef: {problem}"))
                    })?;
                let password = secret_value(client, namespace, &name, &basic.password_secret_ref)
                    .await
                    .map_err(|problem| {
                        bad(format!("spec.auth.basic.passwordSecretRef: {problem}"))
                    })?;
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                Some(format!("Basic {encoded}"))
            }
            (None, Some(bearer)) => {
                let token = secret_value(client, namespace, &name, &bearer.token_secret_ref)
                    .await
                    .map_err(|problem| {
                        bad(format!("spec.auth.bearer.tokenSecretRef: {problem}"))
                    })?;
                Some(format!("Bearer {token}"))
            }
            _ => return Err(bad("spec.auth: set exactly one of basic or bearer".into())),
        },
    };
    Ok(Endpoint {
        name,
        base,
        authorization,
    })
}

/// The label an admin puts on a Secret to offer it as credentials to the
/// PackageRepository it names. A repository's spec names a Secret, but
/// whoever may write a PackageRepository may not be able to read Secrets:
/// without this mark the provisioner would read, and send to the
/// repository's server, any Secret of its namespace (the record key
/// included). Writing the label proves rights over the Secret.
pub const CREDENTIALS_FOR_LABEL: &str = "packages.pakket.dev/credentials-for";

async fn secret_value(
    client: &kube::Client,
    namespace: &str,
    repository: &str,
    key: &SecretKey,
) -> Result<String, String> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(&key.name)
        .await
        .map_err(|error| format!("Secret {namespace}/{}: {error}", key.name))?
        .ok_or_else(|| {
            format!(
                "Secret {namespace}/{} not found; the provisioner reads repository credentials from its own namespace only",
                key.name
            )
        })?;
    let offered = secret
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(CREDENTIALS_FOR_LABEL))
        .is_some_and(|named| named == repository);
    if !offered {
        return Err(format!(
            "Secret {namespace}/{} is not offered to this repository, so nothing of it was read or sent; an admin who means it labels it: `kubectl label secret -n {namespace} {} {CREDENTIALS_FOR_LABEL}={repository}`",
            key.name, key.name
        ));
    }
    let bytes = secret
        .data
        .and_then(|data| data.get(&key.key).cloned())
        .ok_or_else(|| format!("Secret {namespace}/{} has no key {}", key.name, key.key))?;
    String::from_utf8(bytes.0)
        .map(|value| value.trim_end_matches(['\r', '\n']).to_owned())
        .map_err(|_| {
            format!(
                "Secret {namespace}/{} key {} is not text",
                key.name, key.key
            )
        })
}
