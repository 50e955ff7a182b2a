//! The set algebra behind [`Range`](super::Range).
//!
//! A range is a list of pieces sorted by lower bound that never share a
//! version (their intervals may overlap: a run of releases can span the
//! pre-releases of a piece that holds only those). A piece is an interval
//! `[lo, hi)` of semver order that takes either every version in it or only
//! its releases: blang/semver compares pre-releases like any version, while
//! Masterminds/semver (Glasskube) leaves them out unless a comparator names
//! one, and no finite list of plain intervals can say "the releases between
//! 1.0.0 and 2.0.0".
//!
//! Bounds are normalized so that each set has exactly one list (and `==` is
//! set equality). Every version `v` has an immediate successor `succ(v)`
//! (see `point.rs`), so `> v` is `>= succ(v)` and `<= v` is `< succ(v)`, and every
//! bound is an inclusive `lo` and an exclusive `hi` (`None`: no upper
//! bound). The lowest version of all is `0.0.0-0`. The canonical list is the
//! maximal runs of the set that hold a pre-release (taking everything), then
//! the maximal runs of consecutive releases left over (taking releases, with
//! both bounds on releases).

use std::cmp::Ordering;

use semver::{Prerelease, Version as Point};

use super::point::{min_point, next_release, prev_release, release_from, strip_build, succ};

/// Which versions of its interval a piece holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Takes {
    /// Only releases (Masterminds comparators without a pre-release).
    Releases,
    /// Every version, pre-releases included.
    All,
}

/// The versions of `[lo, hi)` that `takes` allows. Points never carry build
/// metadata, so `semver::Version`'s own order is semver precedence here.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Piece {
    pub lo: Point,
    pub hi: Option<Point>,
    pub takes: Takes,
}

impl Piece {
    /// `[lo, hi)`.
    pub fn new(lo: Point, hi: Option<Point>, takes: Takes) -> Self {
        Self { lo, hi, takes }
    }

    /// Every version.
    pub fn any() -> Self {
        Self::new(min_point(), None, Takes::All)
    }

    /// Exactly `version`.
    pub fn exact(version: &Point) -> Self {
        let lo = strip_build(version);
        let hi = succ(&lo);
        Self::new(lo, hi, Takes::All)
    }

    /// Whether `version` (build metadata ignored) is in the piece.
    pub fn contains(&self, version: &Point) -> bool {
        let at = key(version);
        (self.takes == Takes::All || version.pre.is_empty())
            && key(&self.lo) <= at
            && self.hi.as_ref().is_none_or(|hi| at < key(hi))
    }
}

fn key(version: &Point) -> (u64, u64, u64, &Prerelease) {
    (version.major, version.minor, version.patch, &version.pre)
}

/// Orders upper bounds, `None` (unbounded) last.
fn cmp_hi(a: &Option<Point>, b: &Option<Point>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
    }
}

fn below(version: &Point, hi: &Option<Point>) -> bool {
    hi.as_ref().is_none_or(|hi| version < hi)
}

/// Sorts and merges overlapping or touching pieces (all of one kind).
fn merge(mut pieces: Vec<Piece>) -> Vec<Piece> {
    pieces.sort_by(|a, b| a.lo.cmp(&b.lo));
    let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match merged.last_mut() {
            Some(last) if last.hi.as_ref().is_none_or(|hi| piece.lo <= *hi) => {
                if cmp_hi(&piece.hi, &last.hi) == Ordering::Greater {
                    last.hi = piece.hi;
                }
            }
            _ => merged.push(piece),
        }
    }
    merged
}

/// Release-only pieces with both bounds on releases, empty ones dropped.
fn tighten(lo: &Point, hi: &Option<Point>) -> Option<Piece> {
    let lo = release_from(lo);
    let hi = hi.as_ref().map(release_from);
    below(&lo, &hi).then(|| Piece::new(lo, hi, Takes::Releases))
}

/// The releases of `releases` that no piece of `all` covers.
fn subtract(releases: &[Piece], all: &[Piece]) -> Vec<Piece> {
    let mut left = Vec::new();
    for piece in releases {
        let mut lo = piece.lo.clone();
        let mut done = false;
        for cover in all {
            if !below(&cover.lo, &piece.hi) || !below(&lo, &cover.hi) {
                continue;
            }
            if lo < cover.lo {
                left.extend(tighten(&lo, &Some(cover.lo.clone())));
            }
            match &cover.hi {
                Some(hi) => lo = hi.clone(),
                None => {
                    done = true;
                    break;
                }
            }
        }
        if !done {
            left.extend(tighten(&lo, &piece.hi));
        }
    }
    left
}

fn holds_release(releases: &[Piece], version: &Point) -> bool {
    releases.iter().any(|piece| piece.contains(version))
}

/// The canonical list for the union of `pieces` (see the module docs).
pub(super) fn normalize(pieces: Vec<Piece>) -> Vec<Piece> {
    let (all, releases): (Vec<_>, Vec<_>) = pieces
        .into_iter()
        .partition(|piece| piece.takes == Takes::All);
    let all = all
        .into_iter()
        .filter(|piece| below(&piece.lo, &piece.hi))
        .collect();
    let mut releases: Vec<Piece> = releases
        .iter()
        .filter_map(|piece| tighten(&piece.lo, &piece.hi))
        .collect();

    // A run holding a single release and no pre-release (`1.2.3` in blang
    // syntax) is a run of releases.
    let mut all = merge(all);
    all.retain(|piece| {
        let single = piece.lo.pre.is_empty() && piece.hi == succ(&piece.lo);
        if single {
            releases.push(Piece::new(
                piece.lo.clone(),
                next_release(&piece.lo),
                Takes::Releases,
            ));
        }
        !single
    });
    let mut releases = subtract(&merge(releases), &all);

    // A release right next to a run with pre-releases belongs to that run:
    // `>=1.0.0 <1.2.3 || >=1.2.3 <2.0.0 !prerelease` is `>=1.0.0 <=1.2.3`
    // (nothing lies between 1.2.3 and the run below it) and the releases
    // from 1.2.4 on.
    loop {
        let mut grew = false;
        for piece in &mut all {
            if let Some(hi) = piece.hi.clone()
                && hi.pre.is_empty()
                && holds_release(&releases, &hi)
            {
                piece.hi = succ(&hi);
                grew = true;
            }
            if piece.lo.pre.as_str() == "0"
                && let Some(before) = prev_release(&release_from(&piece.lo))
                && holds_release(&releases, &before)
            {
                piece.lo = before;
                grew = true;
            }
        }
        if !grew {
            break;
        }
        all = merge(all);
        releases = subtract(&releases, &all);
    }

    let mut canonical = all;
    canonical.extend(releases);
    canonical.sort_by(|a, b| a.lo.cmp(&b.lo));
    canonical
}

/// The canonical list for the versions in both `a` and `b` (both canonical).
///
/// Pieces of one list never share a version, but their intervals may
/// overlap (releases `[1.0.0, 2.0.0)` around the pre-release `1.5.0-rc.1`
/// alone), so upper bounds are not sorted and a plain merge walk would miss
/// pairs. The walk below skips a prefix of `b` only once every piece in it
/// ends at or below the current lower bound.
pub(super) fn intersect(a: &[Piece], b: &[Piece]) -> Vec<Piece> {
    let mut both = Vec::new();
    let mut skip = 0;
    // The highest upper bound in `b[..=skip]` (`None`: unbounded).
    let mut reach = b.first().and_then(|q| q.hi.clone());
    for p in a {
        while skip + 1 < b.len() && reach.as_ref().is_some_and(|hi| *hi <= p.lo) {
            skip += 1;
            if cmp_hi(&b[skip].hi, &reach) == Ordering::Greater {
                reach = b[skip].hi.clone();
            }
        }
        for q in &b[skip..] {
            // `b` is sorted by `lo`: nothing further starts below `p.hi`.
            if !below(&q.lo, &p.hi) {
                break;
            }
            let lo = (&p.lo).max(&q.lo).clone();
            let hi = if cmp_hi(&p.hi, &q.hi) == Ordering::Less {
                &p.hi
            } else {
                &q.hi
            };
            if below(&lo, hi) {
                both.push(Piece::new(lo, hi.clone(), p.takes.min(q.takes)));
            }
        }
    }
    normalize(both)
}

/// The versions in every one of `sets` (each canonical); none means every
/// version. Pairs up the sets so a long AND stays near-linear.
pub(super) fn intersect_all(mut sets: Vec<Vec<Piece>>) -> Vec<Piece> {
    while sets.len() > 1 {
        sets = sets
            .chunks(2)
            .map(|pair| match pair {
                [a, b] => intersect(a, b),
                [a] => a.clone(),
                _ => unreachable!("chunks of two"),
            })
            .collect();
    }
    sets.pop().unwrap_or_else(|| vec![Piece::any()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::point::release;

    fn p(text: &str) -> Point {
        Point::parse(text).unwrap()
    }

    fn all(lo: &str, hi: Option<&str>) -> Piece {
        Piece::new(p(lo), hi.map(p), Takes::All)
    }

    fn rel(lo: &str, hi: Option<&str>) -> Piece {
        Piece::new(p(lo), hi.map(p), Takes::Releases)
    }

    #[test]
    fn releases_in_an_interval_get_release_bounds() {
        let pieces = normalize(vec![rel("1.0.0-alpha", Some("2.0.0-0"))]);
        assert_eq!(pieces, vec![rel("1.0.0", Some("2.0.0"))]);
        assert!(normalize(vec![rel("1.0.0-alpha", Some("1.0.0"))]).is_empty());
    }

    #[test]
    fn a_lone_release_is_a_run_of_releases() {
        let pieces = normalize(vec![
            all("1.2.3", Some("1.2.4-0")),
            rel("1.0.0", Some("1.2.3")),
        ]);
        assert_eq!(pieces, vec![rel("1.0.0", Some("1.2.4"))]);
    }

    #[test]
    fn releases_next_to_a_run_join_it() {
        let pieces = normalize(vec![
            all("1.0.0", Some("1.2.3")),
            rel("1.2.3", Some("2.0.0")),
            all("1.2.4-0", Some("1.2.4-beta")),
        ]);
        // 1.2.4-beta.0 is not in the set, so 1.2.4 is not next to the run.
        assert_eq!(
            pieces,
            vec![
                all("1.0.0", Some("1.2.4-beta")),
                rel("1.2.4", Some("2.0.0"))
            ]
        );
        let left = normalize(vec![rel("0.9.0", Some("1.2.4")), all("1.2.4-0", None)]);
        assert_eq!(left, vec![rel("0.9.0", Some("1.2.3")), all("1.2.3", None)]);
    }

    #[test]
    fn covered_releases_are_dropped() {
        let pieces = normalize(vec![
            rel("1.0.0", Some("3.0.0")),
            all("1.5.0-0", Some("2.0.0")),
        ]);
        // 1.4.MAX comes right before 1.5.0-0, and 2.0.0 right after
        // 2.0.0-*, so both join the run with pre-releases.
        let last_of_1_4 = release(1, 4, u64::MAX);
        assert_eq!(
            pieces,
            vec![
                Piece::new(p("1.0.0"), Some(last_of_1_4.clone()), Takes::Releases),
                Piece::new(last_of_1_4, Some(p("2.0.1-0")), Takes::All),
                rel("2.0.1", Some("3.0.0")),
            ]
        );
    }

    #[test]
    fn intersection_tries_pieces_whose_intervals_overlap() {
        // releases [0.0.1, 1.0.0) span 1.0.0-alpha without holding it.
        let a = normalize(vec![
            rel("0.0.1", Some("1.0.0")),
            all("1.0.0-alpha", Some("1.0.0-alpha.0")),
        ]);
        let b = normalize(vec![
            rel("0.0.0", Some("0.0.1")),
            all("1.0.0-alpha", Some("1.0.0-alpha.0")),
        ]);
        assert_eq!(
            intersect(&a, &b),
            vec![all("1.0.0-alpha", Some("1.0.0-alpha.0"))]
        );
    }

    #[test]
    fn intersection_keeps_the_stricter_kind() {
        let a = normalize(vec![all("1.0.0", Some("3.0.0"))]);
        let b = normalize(vec![rel("2.0.0", None)]);
        assert_eq!(intersect(&a, &b), vec![rel("2.0.0", Some("3.0.0"))]);
    }
}
