//! Who may call the resolver API: a bearer token the apiserver accepts
//! (TokenReview) whose user may `get` `catalogs.resolve.pakket.dev`
//! (SubjectAccessReview). A cluster's users already have tokens, and RBAC
//! already says who may read Catalogs; the API asks the same question.
//!
//! A "yes" is kept for a few seconds per token (by its sha256, never the
//! token itself), so a stream of resolutions costs two reviews, not two
//! per call; a "no" is never kept, so a new grant works at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use sha2::{Digest as _, Sha256};

use crate::catalogs::catalog::{GROUP, PLURAL};

/// Most remembered answers; past it they are all dropped.
const MAX_ENTRIES: usize = 4096;

/// Why a call is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// No token, or one the apiserver does not accept (HTTP 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The user may not read Catalogs (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// The apiserver could not be asked (HTTP 503).
    #[error("{0}")]
    Unavailable(String),
}

/// Checks callers against the cluster.
pub struct Authenticator {
    client: Client,
    ttl: Duration,
    allowed: Mutex<HashMap<[u8; 32], Instant>>,
}

impl Authenticator {
    /// Asks through `client` (which needs `create` on tokenreviews and
    /// subjectaccessreviews); a "yes" is kept for `ttl`.
    pub fn new(client: Client, ttl: Duration) -> Self {
        Self {
            client,
            ttl,
            allowed: Mutex::new(HashMap::new()),
        }
    }

    /// Checks the `Authorization` header's value.
    pub async fn check(&self, authorization: Option<&str>) -> Result<(), Refusal> {
        let token = bearer(authorization)?;
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if self
            .allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .is_some_and(|until| *until > now)
        {
            return Ok(());
        }
        let user = self.authenticate(token).await?;
        self.authorize(&user).await?;
        let mut allowed = self.allowed.lock().unwrap_or_else(|e| e.into_inner());
        if allowed.len() >= MAX_ENTRIES {
            allowed.clear();
        }
        allowed.insert(key, now + self.ttl);
        Ok(())
    }

    async fn authenticate(&self, token: &str) -> Result<UserInfo, Refusal> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                Refusal::Unavailable(format!(
                    "cannot check the token with the cluster (TokenReview): {}; try again",
                    pakket_runtime::kernel::apply::api_message(&error)
                ))
            })?;
        let status = answer.status.unwrap_or_default();
        match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Ok(user),
            _ => Err(Refusal::Unauthenticated(format!(
                "the cluster does not accept this bearer token{}; send a current token of a cluster user (e.g. kubectl create token NAME)",
                status
                    .error
                    .filter(|e| !e.is_empty())
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ))),
        }
    }

    async fn authorize(&self, user: &UserInfo) -> Result<(), Refusal> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some("get".into()),
                    group: Some(GROUP.into()),
                    resource: Some(PLURAL.into()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                Refusal::Unavailable(format!(
                    "cannot check permissions with the cluster (SubjectAccessReview): {}; try again",
                    pakket_runtime::kernel::apply::api_message(&error)
                ))
            })?;
        if answer.status.is_some_and(|status| status.allowed) {
            return Ok(());
        }
        let name = user.username.as_deref().unwrap_or("(unnamed)");
        Err(Refusal::Forbidden(format!(
            "user {name} may not get {PLURAL}.{GROUP}; the resolver API answers those who may read Catalogs: grant get on catalogs in group {GROUP} (a ClusterRole and ClusterRoleBinding)"
        )))
    }
}

/// The token of `Authorization: Bearer TOKEN`.
fn bearer(authorization: Option<&str>) -> Result<&str, Refusal> {
    let Some(value) = authorization else {
        return Err(Refusal::Unauthenticated(
            "no bearer token: send Authorization: Bearer TOKEN with a cluster user's token (e.g. kubectl create token NAME)".into(),
        ));
    };
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Ok(token.trim())
        }
        _ => Err(Refusal::Unauthenticated(
            "the Authorization header is not Bearer TOKEN; send a cluster user's token as Authorization: Bearer TOKEN".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token_is_read() {
        assert_eq!(bearer(Some("Bearer abc")).unwrap(), "abc");
        assert_eq!(bearer(Some("bearer  abc ")).unwrap(), "abc");
        for bad in [
            None,
            Some("Basic YWxpY2U6eA=="),
            Some("Bearer "),
            Some("abc"),
        ] {
            let refusal = bearer(bad).unwrap_err();
            assert!(matches!(refusal, Refusal::Unauthenticated(_)));
            assert!(refusal.to_string().contains("Bearer TOKEN"), "{refusal}");
        }
    }
}
