//! A PackageRepository's credentials: read from Secrets in the
//! provisioner's own namespace, and only from a Secret an admin offered to
//! that repository by label, so that writing a PackageRepository never
//! reads (or sends to a server) any other Secret. The offer is bound to
//! the URL the credentials are meant for, too (an annotation on the
//! Secret, [`CREDENTIALS_URL_ANNOTATION`]): whoever may edit the
//! repository may re-point `spec.url`, and without the binding its
//! credentials would follow to her server. A repository whose URL is
//! outside what the offer names gets no credentials at all (no request
//! is made with or without them) until the Secret's owner offers them
//! for the new URL, and an offer that names no URL is no offer.
//!
//! | Offer (annotation)           | `spec.url`                       | Credentials |
//! |------------------------------|----------------------------------|-------------|
//! | `https://repo.example/team/` | `https://repo.example/team/`     | sent        |
//! | `https://repo.example/team`  | `https://REPO.example:443/team/a`| sent        |
//! | `https://repo.example/team/` | `https://repo.example/teamevil/` | dropped     |
//! | `https://repo.example/`      | `https://repo.example:8443/`     | dropped     |
//! | `https://repo.example/`      | `https://repo.example@evil.example/` | dropped |
//! | (none)                       | any                              | dropped     |

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use pakket_packages_api::{PackageRepository, SecretKey};
use pakket_packages_client::repository::{Endpoint, RepositoryError, as_folder};
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
    let unusable = |problem: String| {
        RepositoryError::Credentials(format!("PackageRepository {name}: {problem}"))
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
                let user =
                    secret_value(client, namespace, &name, &base, &basic.username_secret_ref)
                        .await
                        .map_err(|problem| {
                            unusable(format!("spec.auth.basic.usernameSecretRef: {problem}"))
                        })?;
                let password =
                    secret_value(client, namespace, &name, &base, &basic.password_secret_ref)
                        .await
                        .map_err(|problem| {
                            unusable(format!("spec.auth.basic.passwordSecretRef: {problem}"))
                        })?;
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                Some(format!("Basic {encoded}"))
            }
            (None, Some(bearer)) => {
                let token = secret_value(client, namespace, &name, &base, &bearer.token_secret_ref)
                    .await
                    .map_err(|problem| {
                        unusable(format!("spec.auth.bearer.tokenSecretRef: {problem}"))
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

/// The annotation, next to [`CREDENTIALS_FOR_LABEL`], naming the URL the
/// offered credentials may go to: `https://HOST[:PORT]/PATH/`, covering
/// that server and every path under that folder ([`offer_covers`]). The
/// label says which repository may use the Secret; this says where it may
/// send it, so that whoever may edit the repository but not the Secret
/// cannot re-point it at her own server and receive the credentials. An
/// offer without it is refused (fail closed), as is one whose URL does not
/// cover the repository's `spec.url`.
pub const CREDENTIALS_URL_ANNOTATION: &str = "packages.pakket.dev/credentials-url";

/// Whether `offered` (the URL a Secret's owner wrote in
/// [`CREDENTIALS_URL_ANNOTATION`]) covers the repository URL `url`: the
/// same scheme, host and port (the default one written or not), no user
/// name or password in `url`, and `url`'s path, taken as a folder, under
/// the offered path, taken as a folder, segment by segment (`/team` covers
/// `/team/` and `/team/a/`, never `/teamevil/`). Both are parsed as the
/// HTTP client parses them, so a host's case, a default port, `..` and
/// `%2e%2e` count for what they reach. An offer that is not such a URL is
/// an error saying why (it covers nothing).
pub fn offer_covers(offered: &str, url: &Url) -> Result<bool, String> {
    let offered = offered.trim();
    let offer =
        Url::parse(offered).map_err(|error| format!("{offered:?} is not a URL ({error})"))?;
    if offer.scheme() != "https" {
        return Err(format!("{offered:?} is not https://"));
    }
    if offer.host().is_none() {
        return Err(format!("{offered:?} names no host"));
    }
    if !offer.username().is_empty() || offer.password().is_some() {
        return Err(format!(
            "{offered:?} holds a user name or password; write https://HOST[:PORT]/PATH/"
        ));
    }
    if offer.query().is_some() || offer.fragment().is_some() {
        return Err(format!(
            "{offered:?} has a query or fragment; write https://HOST[:PORT]/PATH/"
        ));
    }
    let covers = url.username().is_empty()
        && url.password().is_none()
        && url.scheme() == offer.scheme()
        && url.host() == offer.host()
        && url.port_or_known_default() == offer.port_or_known_default()
        && folder(url.path()).starts_with(&folder(offer.path()));
    Ok(covers)
}

/// `path` ending in `/`, so that a prefix of it ends on a segment boundary.
fn folder(path: &str) -> String {
    if path.ends_with('/') {
        path.to_owned()
    } else {
        format!("{path}/")
    }
}

async fn secret_value(
    client: &kube::Client,
    namespace: &str,
    repository: &str,
    url: &Url,
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
            "Secret {namespace}/{} is not offered to this repository, so nothing of it was read or sent; an admin who means it offers it for the repository's URL: `kubectl label secret -n {namespace} {} {CREDENTIALS_FOR_LABEL}={repository} && kubectl annotate secret -n {namespace} {} {CREDENTIALS_URL_ANNOTATION}={url}`",
            key.name, key.name, key.name
        ));
    }
    let offered_for = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(CREDENTIALS_URL_ANNOTATION));
    let secret_name = &key.name;
    let rebind = format!(
        "`kubectl annotate secret -n {namespace} {secret_name} --overwrite {CREDENTIALS_URL_ANNOTATION}={url}`"
    );
    match offered_for.map(|offered| (offered, offer_covers(offered, url))) {
        None => {
            return Err(format!(
                "Secret {namespace}/{secret_name} is offered to this repository for no URL, so its credentials were dropped and nothing of it was sent to {url}; an offer names where the credentials may go: the Secret's owner, if {url} is meant, writes {rebind}"
            ));
        }
        Some((offered, Err(problem))) => {
            return Err(format!(
                "Secret {namespace}/{secret_name} has {CREDENTIALS_URL_ANNOTATION} {problem}, so its credentials were dropped and nothing of it was sent to {url}; the Secret's owner, if {url} is meant, writes {rebind} (it was {offered:?})"
            ));
        }
        Some((offered, Ok(false))) => {
            let offered = offered.trim();
            return Err(format!(
                "Secret {namespace}/{secret_name} is offered to this repository for {offered} only, and spec.url is now {url}, outside it: its credentials were dropped and nothing of it was sent to {url}. Set spec.url back under {offered}, or, if {url} is meant, the Secret's owner offers the credentials there: {rebind}"
            ));
        }
        Some((_, Ok(true))) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(offered: &str, url: &str) -> bool {
        offer_covers(offered, &Url::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn an_offer_covers_its_server_and_the_folders_under_its_path() {
        assert!(covers(
            "https://repo.example/team/",
            "https://repo.example/team/"
        ));
        assert!(covers(
            "https://repo.example/team/",
            "https://repo.example/team/sub/"
        ));
        // Trailing slashes either way: both are folders.
        assert!(covers(
            "https://repo.example/team",
            "https://repo.example/team/"
        ));
        assert!(covers(
            "https://repo.example/team/",
            "https://repo.example/team"
        ));
        assert!(covers(
            " https://repo.example/team \n",
            "https://repo.example/team"
        ));
        assert!(covers(
            "https://repo.example",
            "https://repo.example/anything/"
        ));
        // A host's case and a default port written out are the same server.
        assert!(covers(
            "https://Repo.EXAMPLE/team/",
            "https://repo.example:443/team/"
        ));
        assert!(covers("https://repo.example:443/", "https://REPO.example/"));
        // A query on the repository's URL sends nothing elsewhere.
        assert!(covers(
            "https://repo.example/team/",
            "https://repo.example/team/?x=1"
        ));
    }

    #[test]
    fn a_path_prefix_ends_on_a_segment_boundary() {
        assert!(!covers("https://a/team", "https://a/teamevil/"));
        assert!(!covers("https://a/team/", "https://a/teamevil"));
        assert!(!covers("https://a/team/", "https://a/"));
        assert!(!covers("https://a/team/", "https://a/other/team/"));
        // Dot segments count for where they reach, escaped or not.
        assert!(!covers("https://a/team/", "https://a/team/../evil/"));
        assert!(!covers("https://a/team/", "https://a/team/%2e%2e/evil/"));
        assert!(!covers("https://a/team/", "https://a/team/%2E%2e/evil/"));
    }

    #[test]
    fn another_scheme_host_or_port_is_not_covered() {
        assert!(!covers("https://repo.example/", "http://repo.example/"));
        assert!(!covers("https://repo.example/", "https://evil.example/"));
        assert!(!covers(
            "https://repo.example/",
            "https://repo.example.evil.example/"
        ));
        assert!(!covers(
            "https://repo.example/",
            "https://sub.repo.example/"
        ));
        assert!(!covers(
            "https://repo.example/",
            "https://repo.example:8443/"
        ));
        assert!(!covers(
            "https://repo.example:8443/",
            "https://repo.example/"
        ));
        assert!(!covers(
            "https://127.0.0.1:8443/",
            "https://127.0.0.2:8443/"
        ));
        // A trailing dot is another name as far as the offer goes.
        assert!(!covers("https://repo.example/", "https://repo.example./"));
    }

    #[test]
    fn user_info_tricks_are_not_covered() {
        // The host here is evil.example; the rest is a user name.
        assert!(!covers(
            "https://repo.example/",
            "https://repo.example@evil.example/"
        ));
        assert!(!covers("https://a/", "https://a@evil/"));
        // And user info on the right host is not the offer either: the
        // client would send it as credentials of its own.
        assert!(!covers(
            "https://repo.example/",
            "https://someone@repo.example/"
        ));
        assert!(!covers(
            "https://repo.example/",
            "https://someone:pw@repo.example/"
        ));
    }

    #[test]
    fn an_offer_that_is_no_https_url_prefix_covers_nothing_and_says_why() {
        let url = Url::parse("https://repo.example/").unwrap();
        for (offered, why) in [
            ("", "is not a URL"),
            ("repo.example", "is not a URL"),
            ("http://repo.example/", "is not https://"),
            ("https://user@repo.example/", "user name or password"),
            ("https://repo.example/?a=b", "query or fragment"),
            ("https://repo.example/#x", "query or fragment"),
        ] {
            let error = offer_covers(offered, &url).unwrap_err();
            assert!(error.contains(why), "{offered:?}: {error}");
        }
    }
}
