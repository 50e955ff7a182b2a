//! Credentials for `https://` content that a provisioner holds for a
//! server and a Bundle never carries: a package repository's token, sent
//! with the repository's manifests when the runtime downloads them.
//!
//! A Bundle's refs are read by many people, so a ref with credentials in it
//! is refused ([`super::https`]). Instead a provisioner that reads a
//! server with credentials (the package provisioner, for each
//! PackageRepository with `spec.auth`) registers them here for the
//! server's URL prefix, and the runtime's `https://` source sends them
//! with a download whose URL is under that prefix: the same scheme, host
//! and port, and a path under the prefix's. Nothing else is ever sent
//! them, and a redirect to another host drops them (reqwest's rule).
//!
//! The values are never printed: `Debug` shows how many prefixes there are.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use reqwest::Url;

/// `Authorization` header values by URL prefix, shared by every clone.
#[derive(Clone, Default)]
pub struct HttpsAuthorizations {
    by_prefix: Arc<RwLock<BTreeMap<String, (Url, String)>>>,
}

impl fmt::Debug for HttpsAuthorizations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.by_prefix.read().map(|map| map.len()).unwrap_or(0);
        write!(f, "HttpsAuthorizations({count} prefixes)")
    }
}

impl HttpsAuthorizations {
    /// Sends `authorization` with every download under `prefix` from now
    /// on (`None`: nothing any more). A prefix whose path does not end in
    /// `/` is taken as the folder it names.
    pub fn set(&self, prefix: &Url, authorization: Option<String>) {
        let mut prefix = prefix.clone();
        prefix.set_query(None);
        prefix.set_fragment(None);
        if !prefix.path().ends_with('/') {
            let path = format!("{}/", prefix.path());
            prefix.set_path(&path);
        }
        let mut map = self.by_prefix.write().unwrap_or_else(|e| e.into_inner());
        match authorization {
            Some(value) => {
                map.insert(prefix.to_string(), (prefix, value));
            }
            None => {
                map.remove(prefix.as_str());
            }
        }
    }

    /// The value for `url`: the longest registered prefix it is under.
    pub fn for_url(&self, url: &Url) -> Option<String> {
        let map = self.by_prefix.read().unwrap_or_else(|e| e.into_inner());
        map.values()
            .filter(|(prefix, _)| {
                url.scheme() == "https"
                    && prefix.origin() == url.origin()
                    && url.path().starts_with(prefix.path())
            })
            .max_by_key(|(prefix, _)| prefix.path().len())
            .map(|(_, value)| value.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn credentials_go_only_under_their_prefix() {
        let authorizations = HttpsAuthorizations::default();
        authorizations.set(
            &url("https://repo.example.com/packages"),
            Some("Bearer a".into()),
        );
        authorizations.set(
            &url("https://repo.example.com/packages/private/"),
            Some("Bearer b".into()),
        );
        let at = |text: &str| authorizations.for_url(&url(text));
        assert_eq!(
            at("https://repo.example.com/packages/x/v1/x.yaml").as_deref(),
            Some("Bearer a")
        );
        // The longest prefix wins.
        assert_eq!(
            at("https://repo.example.com/packages/private/y.yaml").as_deref(),
            Some("Bearer b")
        );
        // Not a sibling folder that starts with the same letters.
        assert_eq!(at("https://repo.example.com/packages-other/x.yaml"), None);
        // Not another port, host or scheme.
        assert_eq!(at("https://repo.example.com:8443/packages/x.yaml"), None);
        assert_eq!(at("https://evil.example.com/packages/x.yaml"), None);
        assert_eq!(at("http://repo.example.com/packages/x.yaml"), None);
        // Removed.
        authorizations.set(&url("https://repo.example.com/packages/"), None);
        assert_eq!(at("https://repo.example.com/packages/x/v1/x.yaml"), None);
        assert!(!format!("{authorizations:?}").contains("Bearer"));
    }
}
