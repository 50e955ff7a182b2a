//! What a collection of the content store removes: pure, so the choice is
//! tested without a disk.
//!
//! Content a Bundle pins is never removed (a Bundle's pin never moves, and
//! content that changed at its source could not be fetched again). Other
//! content goes once it is older than a grace period: content just
//! unpacked is in the store a moment before the Bundle's status pins it,
//! and the grace covers that window. If the store is still over its cap,
//! unpinned content inside the grace goes too, oldest first; pinned content
//! over the cap is reported, not removed.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use super::Digest;

/// One content directory as a collection sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its digest.
    pub digest: Digest,
    /// Bytes its files take.
    pub bytes: u64,
    /// When it was put into the store.
    pub stored_at: SystemTime,
}

/// How a collection chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Unpinned content younger than this stays unless the store is over
    /// its cap.
    pub grace: Duration,
    /// The most bytes the store should hold.
    pub max_bytes: u64,
}

/// What to remove, and what the store holds after.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Content to remove, oldest first.
    pub remove: Vec<Digest>,
    /// Bytes left after removing it.
    pub bytes_after: u64,
    /// How far pinned content alone is over the cap, if it is.
    pub pinned_over_cap: Option<u64>,
}

/// Chooses what to remove from `entries`, keeping every digest in
/// `pinned`, as of `now`.
pub fn plan(entries: &[Entry], pinned: &HashSet<Digest>, now: SystemTime, policy: Policy) -> Plan {
    let mut unpinned: Vec<&Entry> = entries
        .iter()
        .filter(|entry| !pinned.contains(&entry.digest))
        .collect();
    unpinned.sort_by_key(|entry| entry.stored_at);
    let mut bytes: u64 = entries.iter().map(|entry| entry.bytes).sum();
    let mut remove = Vec::new();
    for entry in unpinned {
        let age = now.duration_since(entry.stored_at).unwrap_or_default();
        if age >= policy.grace || bytes > policy.max_bytes {
            bytes = bytes.saturating_sub(entry.bytes);
            remove.push(entry.digest.clone());
        }
    }
    let pinned_over_cap = (bytes > policy.max_bytes).then(|| bytes - policy.max_bytes);
    Plan {
        remove,
        bytes_after: bytes,
        pinned_over_cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest::parse(&format!("sha256:{}", format!("{n:02x}").repeat(32))).unwrap()
    }

    fn entry(n: u8, bytes: u64, seconds: u64) -> Entry {
        Entry {
            digest: digest(n),
            bytes,
            stored_at: SystemTime::UNIX_EPOCH + Duration::from_secs(seconds),
        }
    }

    const NOW: u64 = 10_000;

    fn at_now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    #[test]
    fn unpinned_content_past_the_grace_goes_and_pinned_content_stays() {
        let entries = [entry(1, 100, 0), entry(2, 100, 0), entry(3, 100, NOW - 5)];
        let pinned = HashSet::from([digest(1)]);
        let policy = Policy {
            grace: Duration::from_secs(60),
            max_bytes: 1_000,
        };
        let plan = plan(&entries, &pinned, at_now(), policy);
        assert_eq!(plan.remove, [digest(2)], "3 is within the grace");
        assert_eq!(plan.bytes_after, 200);
        assert_eq!(plan.pinned_over_cap, None);
    }

    #[test]
    fn over_the_cap_young_unpinned_content_goes_oldest_first() {
        let entries = [
            entry(1, 500, NOW - 1),
            entry(2, 300, NOW - 3),
            entry(3, 300, NOW - 2),
        ];
        let policy = Policy {
            grace: Duration::from_secs(3_600),
            max_bytes: 600,
        };
        let plan = plan(&entries, &HashSet::new(), at_now(), policy);
        assert_eq!(plan.remove, [digest(2), digest(3)]);
        assert_eq!(plan.bytes_after, 500);
    }

    #[test]
    fn pinned_content_over_the_cap_is_reported_not_removed() {
        let entries = [entry(1, 800, 0), entry(2, 100, 0)];
        let pinned = HashSet::from([digest(1)]);
        let policy = Policy {
            grace: Duration::from_secs(60),
            max_bytes: 500,
        };
        let plan = plan(&entries, &pinned, at_now(), policy);
        assert_eq!(plan.remove, [digest(2)]);
        assert_eq!(plan.pinned_over_cap, Some(300));
    }
}
