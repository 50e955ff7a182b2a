//! git refs as Bundles write them: `git+https://HOST/REPO[?ref=REF][&path=DIR]`.

use std::fmt;

use reqwest::Url;
use sha2::{Digest as _, Sha256};

use super::GitError;
use crate::store::Digest;

/// The scheme of a git ref.
const SCHEME: &str = "git+https";
/// The query keys a git ref may carry.
const KEYS: &str = "`ref` and `path`";

/// A parsed `git+https://` ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitRef {
    url: Url,
    reference: Option<String>,
    path: Option<String>,
    /// The checked address git must connect to (no other, no redirects).
    pinned: Option<std::net::SocketAddr>,
}

impl GitRef {
    /// Parses `git+https://HOST/REPO[?ref=REF][&path=DIR]`.
    pub fn parse(input: &str) -> Result<Self, GitError> {
        let invalid = |problem: String| GitError::InvalidRef {
            input: input.to_owned(),
            problem,
        };
        let usage = "write git+https://HOST/ORG/REPO.git?ref=REF&path=DIR";
        if input.starts_with("git://") {
            return Err(GitError::PlainGitRefused {
                input: input.to_owned(),
            });
        }
        let Some(rest) = input.strip_prefix("git+") else {
            return Err(invalid(format!("it is not a git+https:// ref; {usage}")));
        };
        let mut url = Url::parse(rest).map_err(|error| invalid(format!("{error}; {usage}")))?;
        if url.scheme() != "https" {
            return Err(invalid(format!(
                "git+{}:// is not supported: Pakket fetches git over HTTPS only; {usage}",
                url.scheme()
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid(format!("it names no host; {usage}")));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "it carries credentials (user:password@); Bundles are readable by many, \
                 so Pakket fetches git refs anonymously: use a public repository or mirror"
                    .into(),
            ));
        }
        if url.fragment().is_some() {
            return Err(invalid(format!(
                "it has a #fragment; name the ref with ?ref=REF instead; {usage}"
            )));
        }
        let mut reference = None;
        let mut path = None;
        for (key, value) in url.query_pairs() {
            let slot = match key.as_ref() {
                "ref" => &mut reference,
                "path" => &mut path,
                other => {
                    return Err(invalid(format!(
                        "the query key {other:?} is unknown; a git ref takes {KEYS} only"
                    )));
                }
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(invalid(format!("{key} is given twice")));
            }
        }
        let reference = reference
            .map(|r| check_ref(&r).map(|()| r))
            .transpose()
            .map_err(invalid)?;
        let path = match path {
            Some(path) => check_path(&path).map_err(invalid)?,
            None => None,
        };
        url.set_query(None);
        Ok(Self {
            url,
            reference,
            path,
            pinned: None,
        })
    }

    /// The repository's URL, as git fetches it.
    pub fn repository(&self) -> &Url {
        &self.url
    }

    /// The host and port git connects to.
    pub fn host_and_port(&self) -> (String, u16) {
        (
            self.url.host_str().unwrap_or_default().to_owned(),
            self.url.port_or_known_default().unwrap_or(443),
        )
    }

    /// Makes git connect to `address` only, without redirects: the address
    /// [`crate::source::address::resolve_public`] checked.
    pub fn pin_to(&mut self, address: std::net::SocketAddr) {
        self.pinned = Some(address);
    }

    /// The `-c` settings that hold git to the pinned address, if any.
    pub(crate) fn pin_arguments(&self, command: &mut std::process::Command) {
        let Some(address) = self.pinned else {
            return;
        };
        let (host, port) = self.host_and_port();
        let ip = match address.ip() {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        command
            .arg("-c")
            .arg(format!("http.curloptResolve={host}:{port}:{ip}"))
            .arg("-c")
            .arg("http.followRedirects=false");
    }

    /// The ref to resolve, if not `HEAD`.
    pub fn reference(&self) -> Option<&str> {
        self.reference.as_deref()
    }

    /// The directory inside the repository, if not the whole tree.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The commit the ref names by itself: a full commit sha.
    pub fn commit(&self) -> Option<&str> {
        self.reference.as_deref().filter(|r| is_full_sha(r))
    }

    /// The content store key of `commit` (and the path): a digest of
    /// `git-<commit>[-<path>]`. The commit pins the whole tree, so the same
    /// commit from any mirror is the same content.
    pub fn digest_of(&self, commit: &str) -> Digest {
        let key = match &self.path {
            Some(path) => format!("git-{commit}-{path}"),
            None => format!("git-{commit}"),
        };
        Digest::from_sha256(Sha256::digest(key.as_bytes()).into())
    }
}

impl fmt::Display for GitRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SCHEME}://{}",
            self.url.as_str().trim_start_matches("https://")
        )?;
        let mut separator = '?';
        if let Some(reference) = &self.reference {
            write!(f, "{separator}ref={reference}")?;
            separator = '&';
        }
        if let Some(path) = &self.path {
            write!(f, "{separator}path={path}")?;
        }
        Ok(())
    }
}

/// Whether `text` is a full commit sha (sha1 or sha256), lowercase.
pub(super) fn is_full_sha(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A ref name git would accept, that cannot be read as an option.
fn check_ref(reference: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "ref {reference:?} {why}; give a branch, a tag, refs/... or a full commit sha"
        ))
    };
    if reference.is_empty() {
        return bad("is empty");
    }
    if reference.starts_with(['-', '/']) || reference.ends_with(['/', '.']) {
        return bad("starts with - or / or ends with / or .");
    }
    if reference.ends_with(".lock")
        || reference.contains("..")
        || reference.contains("@{")
        || reference.contains("//")
    {
        return bad("is not a valid git ref name");
    }
    if reference
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return bad("holds a character git refuses in ref names");
    }
    Ok(())
}

/// The path, normalized (no trailing slash), or `None` for the root.
fn check_path(path: &str) -> Result<Option<String>, String> {
    let bad = |why: &str| {
        Err(format!(
            "path {path:?} {why}; give a directory inside the repository, e.g. path=manifests"
        ))
    };
    if path.starts_with('/') {
        return bad("is absolute");
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return bad("holds a control character or a backslash");
    }
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    if parts.iter().any(|part| matches!(*part, "." | "..")) {
        return bad("has a . or .. component");
    }
    if parts.iter().any(|part| part.is_empty()) {
        return if path.trim_end_matches('/').is_empty() {
            Ok(None)
        } else {
            bad("has an empty component")
        };
    }
    Ok(Some(parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ref_and_path_and_prints_them_back() {
        let repo =
            GitRef::parse("git+https://example.com/org/repo.git?ref=v1.2.0&path=deploy/manifests/")
                .unwrap();
        assert_eq!(
            repo.repository().as_str(),
            "https://example.com/org/repo.git"
        );
        assert_eq!(repo.reference(), Some("v1.2.0"));
        assert_eq!(repo.path(), Some("deploy/manifests"));
        assert_eq!(repo.commit(), None);
        assert_eq!(
            repo.to_string(),
            "git+https://example.com/org/repo.git?ref=v1.2.0&path=deploy/manifests"
        );
        let head = GitRef::parse("git+https://example.com:8443/repo").unwrap();
        assert_eq!((head.reference(), head.path()), (None, None));
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let pinned = GitRef::parse(&format!("git+https://example.com/r.git?ref={sha}")).unwrap();
        assert_eq!(pinned.commit(), Some(sha));
    }

    #[test]
    fn the_store_key_depends_on_commit_and_path_only() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let a = GitRef::parse("git+https://a.example/r.git?path=m").unwrap();
        let b = GitRef::parse("git+https://mirror.example/r.git?ref=main&path=m/").unwrap();
        let whole = GitRef::parse("git+https://a.example/r.git").unwrap();
        assert_eq!(a.digest_of(sha), b.digest_of(sha));
        assert_ne!(a.digest_of(sha), whole.digest_of(sha));
        assert_eq!(
            whole.digest_of(sha),
            Digest::from_sha256(Sha256::digest(format!("git-{sha}").as_bytes()).into())
        );
    }

    #[test]
    fn refuses_refs_it_cannot_fetch_safely_and_says_what_to_write() {
        for (input, expected) in [
            ("git://example.com/r.git", "unencrypted git protocol"),
            ("git+ssh://example.com/r.git", "HTTPS only"),
            ("git+http://example.com/r.git", "HTTPS only"),
            ("git+https://u:p@example.com/r.git", "carries credentials"),
            ("git+https://example.com/r.git#v1", "?ref=REF"),
            ("git+https://example.com/r.git?branch=v1", "unknown"),
            ("git+https://example.com/r.git?ref=a&ref=b", "given twice"),
            (
                "git+https://example.com/r.git?ref=--upload-pack=x",
                "starts with -",
            ),
            (
                "git+https://example.com/r.git?ref=a..b",
                "not a valid git ref",
            ),
            ("git+https://example.com/r.git?ref=a%20b", "refuses"),
            ("git+https://example.com/r.git?path=../etc", ".. component"),
            (
                "git+https://example.com/r.git?path=a/../../b",
                ".. component",
            ),
            ("git+https://example.com/r.git?path=/etc", "absolute"),
            ("git+https://example.com/r.git?path=a//b", "empty component"),
        ] {
            let error = GitRef::parse(input).unwrap_err();
            let message = error.to_string();
            assert!(message.contains(expected), "{input}: {message}");
            assert!(error.is_terminal(), "{input}");
        }
    }
}
