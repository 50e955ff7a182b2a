//! Asking the apiserver whether the requester holds a permission
//! (SubjectAccessReview), with a short cache of "yes" answers.
//!
//! The cache: a "yes" is kept for [`Authorizer::new`]'s `ttl` (10 s in the
//! binary), keyed by the whole identity (user, uid, groups, extra) and the
//! whole permission (verb, resource, name), so two users or two classes
//! never share an answer. "No" is never cached: a user who was just granted
//! `use` succeeds on the next try, and a denied request is rare and costs
//! one review. The price of caching "yes" is that a revoked permission keeps
//! working for at most `ttl` — the same trade the apiserver makes for its
//! own webhook authorizer (which keeps "yes" for 5 minutes by default).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::Error;
use crate::metrics::Metrics;
use crate::review::Requester;
use crate::rules::Permission;

/// Most cached answers; past it, expired ones are dropped, then all.
const MAX_ENTRIES: usize = 16_384;

/// Answers "may this requester do this?" with SubjectAccessReviews.
#[derive(Clone)]
pub struct Authorizer {
    client: Client,
    cache: Arc<AnswerCache>,
    metrics: Arc<Metrics>,
}

impl Authorizer {
    /// An authorizer asking through `client`; `ttl` zero turns caching off.
    pub fn new(client: Client, ttl: Duration, metrics: Arc<Metrics>) -> Self {
        Self {
            client,
            cache: Arc::new(AnswerCache::new(ttl)),
            metrics,
        }
    }

    /// Whether `requester` holds `permission`.
    pub async fn allows(
        &self,
        requester: &Requester,
        permission: &Permission,
    ) -> Result<bool, Error> {
        let key = (requester.clone(), permission.clone());
        if self.cache.holds(&key, Instant::now()) {
            self.metrics.access_reviewed("cached");
            return Ok(true);
        }
        let review = subject_access_review(requester, permission);
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                self.metrics.access_reviewed("error");
                Error::SubjectAccessReview(error)
            })?;
        let allowed = answer.status.is_some_and(|status| status.allowed);
        self.metrics
            .access_reviewed(if allowed { "allowed" } else { "denied" });
        if allowed {
            self.cache.remember(key, Instant::now());
        }
        Ok(allowed)
    }
}

/// The review asking whether `requester` may `permission`.
pub fn subject_access_review(
    requester: &Requester,
    permission: &Permission,
) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(requester.username.clone()),
            uid: requester.uid.clone(),
            groups: Some(requester.groups.clone()),
            extra: (!requester.extra.is_empty()).then(|| requester.extra.clone()),
            resource_attributes: Some(ResourceAttributes {
                group: Some(permission.group.to_owned()),
                resource: Some(permission.resource.to_owned()),
                verb: Some(permission.verb.to_owned()),
                namespace: permission.namespace.clone(),
                name: Some(permission.name.clone()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

type Key = (Requester, Permission);

/// "Yes" answers until they expire.
struct AnswerCache {
    ttl: Duration,
    entries: Mutex<HashMap<Key, Instant>>,
}

impl AnswerCache {
    fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn holds(&self, key: &Key, now: Instant) -> bool {
        if self.ttl.is_zero() {
            return false;
        }
        let entries = self.entries.lock().expect("cache lock poisoned");
        entries.get(key).is_some_and(|expires| *expires > now)
    }

    fn remember(&self, key: Key, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().expect("cache lock poisoned");
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, expires| *expires > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, now + self.ttl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(user: &str, class: &str) -> Key {
        (
            Requester::named(user, &["g"]),
            crate::rules::use_verb::permission(class),
        )
    }

    #[test]
    fn a_yes_is_kept_per_user_and_permission_until_it_expires() {
        let cache = AnswerCache::new(Duration::from_secs(10));
        let now = Instant::now();
        cache.remember(key("alice", "a"), now);
        assert!(cache.holds(&key("alice", "a"), now + Duration::from_secs(9)));
        assert!(!cache.holds(&key("alice", "a"), now + Duration::from_secs(10)));
        assert!(!cache.holds(&key("alice", "b"), now));
        assert!(!cache.holds(&key("bob", "a"), now));
        let mut other_groups = key("alice", "a");
        other_groups.0.groups.push("system:masters".into());
        assert!(!cache.holds(&other_groups, now));
    }

    #[test]
    fn a_zero_ttl_caches_nothing_and_the_cache_stays_bounded() {
        let off = AnswerCache::new(Duration::ZERO);
        off.remember(key("alice", "a"), Instant::now());
        assert!(!off.holds(&key("alice", "a"), Instant::now()));

        let cache = AnswerCache::new(Duration::from_secs(10));
        let now = Instant::now();
        for i in 0..=MAX_ENTRIES {
            cache.remember(key("alice", &i.to_string()), now);
        }
        assert!(cache.entries.lock().unwrap().len() <= MAX_ENTRIES);
        assert!(cache.holds(&key("alice", &MAX_ENTRIES.to_string()), now));
    }

    #[test]
    fn the_review_carries_the_whole_identity_and_the_permission() {
        let mut requester = Requester::named("alice", &["pakket:test-users"]);
        requester.uid = Some("u-1".into());
        requester.extra.insert("scopes".into(), vec!["x".into()]);
        let review =
            subject_access_review(&requester, &crate::rules::approval::permission("hello"));
        let spec = review.spec;
        assert_eq!(spec.user.as_deref(), Some("alice"));
        assert_eq!(spec.uid.as_deref(), Some("u-1"));
        assert_eq!(spec.groups.unwrap(), ["pakket:test-users"]);
        assert_eq!(spec.extra.unwrap()["scopes"], ["x"]);
        let attributes = spec.resource_attributes.unwrap();
        assert_eq!(attributes.group.as_deref(), Some("core.pakket.dev"));
        assert_eq!(attributes.resource.as_deref(), Some("instances"));
        assert_eq!(attributes.verb.as_deref(), Some("approve"));
        assert_eq!(attributes.name.as_deref(), Some("hello"));
    }
}
