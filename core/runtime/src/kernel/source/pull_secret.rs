//! Registry credentials from pull secrets: the ProvisionerClass parameter
//! `pullSecrets: [NAME, ...]` names Secrets of type
//! `kubernetes.io/dockerconfigjson` (as `kubectl create secret
//! docker-registry` makes them) in the provisioner's own namespace
//! ([`SourceOptions::secret_namespace`](super::SourceOptions::secret_namespace)).
//!
//! For an image, the Secrets are read in the order the class lists them,
//! and the first `auths` entry whose registry matches the image's is used.
//! Keys may be written `host`, `host:port`, `https://host/v1/` or with a
//! `*.` wildcard label (`*.example.com`); ports must match exactly, and
//! `docker.io`, `index.docker.io` and `registry-1.docker.io` are one
//! registry. An entry gives `auth` (base64 of `user:password`) or
//! `username` and `password`.
//!
//! The namespace is never the Bundle's or the class's choice: only the
//! provisioner's own, so a Bundle author can never make the provisioner
//! use credentials kept anywhere else.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use serde::Deserialize;

use super::Credentials;

/// The Secret type a pull secret must have.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// The key that holds the docker config in such a Secret.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";
/// The names Docker Hub answers to; a key naming one matches them all.
const DOCKER_HUB: &[&str] = &["docker.io", "index.docker.io", "registry-1.docker.io"];

/// Credentials found for a registry, and where they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundCredentials {
    /// The credentials (the password is never printed).
    pub credentials: Credentials,
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub secret: String,
    /// The `auths` key that matched.
    pub entry: String,
}

/// Why no credentials could be had from the pull secrets. Messages name the
/// Secret and the namespace, and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum PullSecretError {
    /// The provisioner does not know its namespace.
    #[error(
        "the ProvisionerClass names pullSecrets {names:?}, but this provisioner does not know \
         its namespace to read them from; run it with POD_NAMESPACE set (the downward API's \
         metadata.namespace)"
    )]
    NoNamespace {
        /// The Secrets the class names.
        names: Vec<String>,
    },
    /// The Secret does not exist.
    #[error(
        "pull secret {namespace}/{name} (the class's pullSecrets) does not exist; create it \
         (kubectl create secret docker-registry {name} -n {namespace} --docker-server=… \
         --docker-username=… --docker-password=…) or fix the class's pullSecrets"
    )]
    NotFound {
        /// The provisioner's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// The Secret could not be read.
    #[error(
        "cannot read pull secret {namespace}/{name}: {cause}; the provisioner's ServiceAccount \
         needs get on secrets in {namespace}"
    )]
    Read {
        /// The provisioner's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The API server's words.
        cause: String,
    },
    /// The Secret is not a docker config.
    #[error(
        "pull secret {namespace}/{name} has type {found:?}; pull secrets must have type \
         kubernetes.io/dockerconfigjson (kubectl create secret docker-registry makes one)"
    )]
    WrongType {
        /// The provisioner's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// Its type.
        found: String,
    },
    /// The Secret's docker config cannot be read.
    #[error(
        "pull secret {namespace}/{name} is malformed: {problem}; recreate it with kubectl create secret docker-registry"
    )]
    Malformed {
        /// The provisioner's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// None of the Secrets has an entry for the registry.
    #[error(
        "none of the pull secrets {names:?} in namespace {namespace} has credentials for \
         registry {registry} (their auths entries: {entries:?}); add an entry for {registry} \
         to one of them"
    )]
    NoEntry {
        /// The provisioner's namespace.
        namespace: String,
        /// The Secrets read.
        names: Vec<String>,
        /// The image's registry.
        registry: String,
        /// The `auths` keys they have.
        entries: Vec<String>,
    },
}

impl PullSecretError {
    /// Whether retrying cannot help. None is: Secrets and RBAC change
    /// without the Bundle changing.
    pub fn is_terminal(&self) -> bool {
        false
    }

    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NoNamespace { .. } => "pull_secret_no_namespace",
            Self::NotFound { .. } => "pull_secret_not_found",
            Self::Read { .. } => "pull_secret_read",
            Self::WrongType { .. } => "pull_secret_wrong_type",
            Self::Malformed { .. } => "pull_secret_malformed",
            Self::NoEntry { .. } => "pull_secret_no_entry",
        }
    }
}

/// Reads the Secrets `names` in `namespace` and returns the credentials of
/// the first entry for `registry` (`host[:port]`).
pub async fn find(
    client: &Client,
    namespace: Option<&str>,
    names: &[String],
    registry: &str,
) -> Result<FoundCredentials, PullSecretError> {
    let Some(namespace) = namespace else {
        return Err(PullSecretError::NoNamespace {
            names: names.to_vec(),
        });
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut entries = Vec::new();
    for name in names {
        let secret = api
            .get_opt(name)
            .await
            .map_err(|error| PullSecretError::Read {
                namespace: namespace.to_owned(),
                name: name.clone(),
                cause: crate::apply::api_message(&error),
            })?
            .ok_or_else(|| PullSecretError::NotFound {
                namespace: namespace.to_owned(),
                name: name.clone(),
            })?;
        let found = secret.type_.clone().unwrap_or_default();
        if found != DOCKER_CONFIG_JSON_TYPE {
            return Err(PullSecretError::WrongType {
                namespace: namespace.to_owned(),
                name: name.clone(),
                found,
            });
        }
        let malformed = |problem: String| PullSecretError::Malformed {
            namespace: namespace.to_owned(),
            name: name.clone(),
            problem,
        };
        let config = secret
            .data
            .as_ref()
            .and_then(|data| data.get(DOCKER_CONFIG_JSON_KEY))
            .ok_or_else(|| malformed(format!("it has no {DOCKER_CONFIG_JSON_KEY} key")))?;
        let auths = parse_config(&config.0).map_err(malformed)?;
        if let Some((entry, auth)) = auths
            .iter()
            .find(|(key, _)| registry_matches(key, registry))
        {
            let credentials = auth
                .credentials()
                .map_err(|problem| malformed(format!("its auths entry {entry:?} {problem}")))?;
            return Ok(FoundCredentials {
                credentials,
                namespace: namespace.to_owned(),
                secret: name.clone(),
                entry: entry.clone(),
            });
        }
        entries.extend(auths.into_keys());
    }
    Err(PullSecretError::NoEntry {
        namespace: namespace.to_owned(),
        names: names.to_vec(),
        registry: registry.to_owned(),
        entries,
    })
}

/// A docker config's `auths` map.
#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

/// One `auths` entry.
#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl AuthEntry {
    /// `username`/`password`, else `auth` decoded.
    fn credentials(&self) -> Result<Credentials, String> {
        if let (Some(username), Some(password)) = (&self.username, &self.password)
            && !username.is_empty()
        {
            return Ok(Credentials {
                username: username.clone(),
                password: password.clone(),
            });
        }
        let Some(auth) = self.auth.as_deref().filter(|auth| !auth.is_empty()) else {
            return Err("has neither auth nor username and password".into());
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| "has an auth that is not base64".to_owned())?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| "has an auth that is not UTF-8".to_owned())?;
        match decoded.split_once(':') {
            Some((username, password)) if !username.is_empty() => Ok(Credentials {
                username: username.to_owned(),
                password: password.to_owned(),
            }),
            _ => Err("has an auth that is not base64 of user:password".into()),
        }
    }
}

/// The `auths` map of a docker config JSON.
fn parse_config(bytes: &[u8]) -> Result<BTreeMap<String, AuthEntry>, String> {
    let config: DockerConfig = serde_json::from_slice(bytes)
        .map_err(|error| format!("its {DOCKER_CONFIG_JSON_KEY} is not a docker config: {error}"))?;
    Ok(config.auths)
}

/// The `host[:port]` an `auths` key names, lowercase: scheme and path dropped.
fn key_host(key: &str) -> String {
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    without_scheme
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Whether the `auths` key `key` is for `registry` (`host[:port]`).
pub fn registry_matches(key: &str, registry: &str) -> bool {
    let key = key_host(key);
    let registry = registry.to_ascii_lowercase();
    if key == registry {
        return true;
    }
    if DOCKER_HUB.contains(&key.as_str()) && DOCKER_HUB.contains(&registry.as_str()) {
        return true;
    }
    let (key_name, key_port) = split_port(&key);
    let (name, port) = split_port(&registry);
    if key_port != port {
        return false;
    }
    // `*.example.com`: a wildcard stands for one label, as kubelet reads it.
    let key_labels: Vec<&str> = key_name.split('.').collect();
    let labels: Vec<&str> = name.split('.').collect();
    key_labels.len() == labels.len()
        && key_labels
            .iter()
            .zip(&labels)
            .all(|(pattern, label)| *pattern == "*" || pattern == label)
}

/// `host` and `port` of `host[:port]` (IPv6 hosts in brackets).
fn split_port(address: &str) -> (&str, Option<&str>) {
    if let Some(rest) = address.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, port)) => (host, port.strip_prefix(':')),
            None => (address, None),
        };
    }
    match address.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (address, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_in_every_form_docker_writes_them() {
        for (key, registry, matches) in [
            ("127.0.0.1:5000", "127.0.0.1:5000", true),
            ("http://127.0.0.1:5000/v1/", "127.0.0.1:5000", true),
            ("https://Quay.io", "quay.io", true),
            ("https://index.docker.io/v1/", "index.docker.io", true),
            ("docker.io", "index.docker.io", true),
            ("quay.io", "quay.io:443", false),
            ("127.0.0.1:5000", "127.0.0.1:5001", false),
            ("*.example.com", "registry.example.com", true),
            ("*.example.com", "a.registry.example.com", false),
            ("*.example.com:5000", "registry.example.com:5000", true),
            ("example.com", "evil-example.com", false),
            ("[::1]:5000", "[::1]:5000", true),
        ] {
            assert_eq!(
                registry_matches(key, registry),
                matches,
                "{key} vs {registry}"
            );
        }
    }

    #[test]
    fn entries_give_auth_or_username_and_password() {
        let config = br#"{"auths":{
            "a.example":{"auth":"YWxpY2U6czNjcmV0Ol9feA=="},
            "b.example":{"username":"bob","password":"pw"},
            "c.example":{"auth":"bm9jb2xvbg=="},
            "d.example":{}
        }}"#;
        let auths = parse_config(config).unwrap();
        assert_eq!(
            auths["a.example"].credentials().unwrap(),
            Credentials {
                username: "alice".into(),
                password: "s3cret:__x".into()
            }
        );
        assert_eq!(auths["b.example"].credentials().unwrap().username, "bob");
        assert!(
            auths["c.example"]
                .credentials()
                .unwrap_err()
                .contains("user:password")
        );
        assert!(
            auths["d.example"]
                .credentials()
                .unwrap_err()
                .contains("neither")
        );
        let Err(problem) = parse_config(br#"{"auths": "registry.example"}"#) else {
            panic!("auths must be a map");
        };
        assert!(problem.contains("not a docker config"), "{problem}");
    }
}
