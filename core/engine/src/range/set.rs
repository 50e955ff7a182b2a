//! The set algebra behind [`Range`](super::Range).
//!
//! A range is a sorted list of disjoint pieces. A piece is an interval
//! `[lo, hi)` of semver order that takes either every version in it or only
//! its releases: blang/semver compares pre-releases like any version, while
//! Masterminds/semver (Glasskube) leaves them out unless a comparator names
//! one, and no finite list of plain intervals can say "the releases between
//! 1.0.0 and 2.0.0".
//!
//! Bounds are normalized so that each set has exactly one list (and `==` is
//! set equality). Every version `v` has an immediate successor `succ(v)`:
//! `1.2.4-0` after `1.2.3`, `1.2.3-rc.0` after `1.2.3-rc` (`0` is the lowest
//! identifier). So `> v` is `>= succ(v)` and `<= v` is `< succ(v)`, and every
//! bound is an inclusive `lo` and an exclusive `hi` (`None`: no upper
//! bound). The lowest version of all is `0.0.0-0`. The canonical list is the
//! maximal runs of the set that hold a pre-release (taking everything), then
//! the maximal runs of consecutive releases left over (taking releases, with
//! both bounds on releases).

use std::cmp::Ordering;

use semver::{BuildMetadata, Prerelease, Version as Point};

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

/// `major.minor.patch[-pre]` without build metadata.
pub(super) fn point(major: u64, minor: u64, patch: u64, pre: Prerelease) -> Point {
    Point {
        major,
        minor,
        patch,
        pre,
        build: BuildMetadata::EMPTY,
    }
}

/// A release `major.minor.patch`.
pub(super) fn release(major: u64, minor: u64, patch: u64) -> Point {
    Point::new(major, minor, patch)
}

/// `major.minor.patch-0`, the lowest version of that triple.
pub(super) fn triple_start(major: u64, minor: u64, patch: u64) -> Point {
    point(major, minor, patch, lowest_prerelease())
}

fn lowest_prerelease() -> Prerelease {
    Prerelease::new("0").expect("\"0\" is a valid pre-release")
}

/// `0.0.0-0`, the lowest version there is.
pub(super) fn min_point() -> Point {
    triple_start(0, 0, 0)
}

pub(super) fn strip_build(version: &Point) -> Point {
    point(
        version.major,
        version.minor,
        version.patch,
        version.pre.clone(),
    )
}

/// The lowest version with this major (`M.0.0-0`).
pub(super) fn major_start(major: u64) -> Point {
    triple_start(major, 0, 0)
}

/// The lowest version above every `major.*` (`None` past the last one).
pub(super) fn major_end(major: u64) -> Option<Point> {
    major.checked_add(1).map(major_start)
}

/// The lowest version above every `major.minor.*`.
pub(super) fn minor_end(major: u64, minor: u64) -> Option<Point> {
    match minor.checked_add(1) {
        Some(next) => Some(triple_start(major, next, 0)),
        None => major_end(major),
    }
}

/// The lowest version above every `major.minor.patch[-*]`.
pub(super) fn triple_end(major: u64, minor: u64, patch: u64) -> Option<Point> {
    match patch.checked_add(1) {
        Some(next) => Some(triple_start(major, minor, next)),
        None => minor_end(major, minor),
    }
}

/// The version right after `version`: nothing lies between them.
pub(super) fn succ(version: &Point) -> Option<Point> {
    if version.pre.is_empty() {
        triple_end(version.major, version.minor, version.patch)
    } else {
        let pre = format!("{}.0", version.pre);
        let pre = Prerelease::new(&pre).expect("a pre-release followed by .0 is valid");
        Some(point(version.major, version.minor, version.patch, pre))
    }
}

/// The lowest release at or above `version` (its triple: a pre-release
/// sorts below its release, and no release lies between them).
fn release_from(version: &Point) -> Point {
    release(version.major, version.minor, version.patch)
}

/// The release right after the release `version`.
fn next_release(version: &Point) -> Option<Point> {
    triple_end(version.major, version.minor, version.patch).map(|end| release_from(&end))
}

/// The release right before the release `version`.
fn prev_release(version: &Point) -> Option<Point> {
    let (major, minor, patch) = (version.major, version.minor, version.patch);
    if patch > 0 {
        Some(release(major, minor, patch - 1))
    } else if minor > 0 {
        Some(release(major, minor - 1, u64::MAX))
    } else if major > 0 {
        Some(release(major - 1, u64::MAX, u64::MAX))
    } else {
        None
    }
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
    // `>=1.0.0 <=1.2.3 || 1.2.4 ...` has one run up to 1.2.4 included.
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
pub(super) fn intersect(a: &[Piece], b: &[Piece]) -> Vec<Piece> {
    let (mut i, mut j) = (0, 0);
    let mut both = Vec::new();
    while let (Some(p), Some(q)) = (a.get(i), b.get(j)) {
        let lo = p.lo.clone().max(q.lo.clone());
        let hi = if cmp_hi(&p.hi, &q.hi) == Ordering::Less {
            p.hi.clone()
        } else {
            q.hi.clone()
        };
        if below(&lo, &hi) {
            both.push(Piece::new(lo, hi, p.takes.min(q.takes)));
        }
        if cmp_hi(&p.hi, &q.hi) == Ordering::Less {
            i += 1;
        } else {
            j += 1;
        }
    }
    normalize(both)
}

/// The bound `b` written as `> p` / `<= p` when `b` is `succ(p)` for a `p`
/// a person would write (`1.2.3` for `1.2.4-0`, `1.0.0-rc` for `1.0.0-rc.0`).
fn written_pred(bound: &Point) -> Option<Point> {
    let pre = bound.pre.as_str();
    if pre == "0" && bound.patch > 0 {
        return Some(release(bound.major, bound.minor, bound.patch - 1));
    }
    let shorter = pre.strip_suffix(".0")?;
    let shorter = Prerelease::new(shorter).ok()?;
    Some(point(bound.major, bound.minor, bound.patch, shorter))
}

/// blang reads any comparator with an `x` as a wildcard, except `>=` and
/// `<` with no `.x` in the version; such versions only get those two
/// operators, and quotes (which `parse` reads literally) if they have `.x`.
fn has_x(version: &Point) -> bool {
    version.pre.as_str().contains('x')
}

fn literal(version: &Point) -> String {
    let text = version.to_string();
    if text.contains(".x") {
        format!("\"{text}\"")
    } else {
        text
    }
}

fn lower(lo: &Point) -> String {
    match written_pred(lo).filter(|pred| !has_x(pred) && !has_x(lo)) {
        Some(pred) => format!(">{pred}"),
        None => format!(">={}", literal(lo)),
    }
}

fn upper(hi: &Point) -> String {
    match written_pred(hi).filter(|pred| !has_x(pred) && !has_x(hi)) {
        Some(pred) => format!("<={pred}"),
        None => format!("<{}", literal(hi)),
    }
}

fn display_piece(piece: &Piece) -> String {
    let Piece { lo, hi, takes } = piece;
    let mut terms = Vec::new();
    match takes {
        Takes::All => {
            if *hi == succ(lo) && !has_x(lo) {
                return lo.to_string();
            }
            if *lo != min_point() || hi.is_none() {
                terms.push(lower(lo));
            }
            terms.extend(hi.as_ref().map(upper));
        }
        Takes::Releases => {
            if *hi == next_release(lo) {
                return lo.to_string();
            }
            if *lo != release(0, 0, 0) || hi.is_none() {
                terms.push(format!(">={lo}"));
            }
            if let Some(hi) = hi {
                terms.push(if hi.patch > 0 {
                    format!("<={}.{}.{}", hi.major, hi.minor, hi.patch - 1)
                } else {
                    format!("<{hi}")
                });
            }
            terms.push("!prerelease".to_owned());
        }
    }
    terms.join(" ")
}

/// The canonical text: pieces in order, joined by ` || `.
pub(super) fn display(pieces: &[Piece]) -> String {
    if pieces.is_empty() {
        return format!("<{}", min_point());
    }
    let texts: Vec<String> = pieces.iter().map(display_piece).collect();
    texts.join(" || ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn successors_leave_no_gap() {
        assert_eq!(succ(&p("1.2.3")), Some(p("1.2.4-0")));
        assert_eq!(succ(&p("1.2.3-rc.1")), Some(p("1.2.3-rc.1.0")));
        let last = release(u64::MAX, u64::MAX, u64::MAX);
        assert_eq!(succ(&last), None);
        let last_patch = release(1, 2, u64::MAX);
        assert_eq!(succ(&last_patch), Some(p("1.3.0-0")));
        assert_eq!(
            prev_release(&p("1.0.0")),
            Some(release(0, u64::MAX, u64::MAX))
        );
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
    fn intersection_keeps_the_stricter_kind() {
        let a = normalize(vec![all("1.0.0", Some("3.0.0"))]);
        let b = normalize(vec![rel("2.0.0", None)]);
        assert_eq!(intersect(&a, &b), vec![rel("2.0.0", Some("3.0.0"))]);
    }

    #[test]
    fn display_is_what_a_person_writes() {
        let text = |pieces: Vec<Piece>| display(&normalize(pieces));
        assert_eq!(text(vec![all("1.2.4-0", Some("2.0.0"))]), ">1.2.3 <2.0.0");
        assert_eq!(text(vec![all("1.0.0", Some("1.2.4-0"))]), ">=1.0.0 <=1.2.3");
        assert_eq!(
            text(vec![all("1.0.0-rc.1", Some("1.0.0-rc.1.0"))]),
            "1.0.0-rc.1"
        );
        assert_eq!(
            text(vec![rel("1.0.0", Some("2.0.0"))]),
            ">=1.0.0 <2.0.0 !prerelease"
        );
        assert_eq!(
            text(vec![rel("0.0.0", Some("1.2.4"))]),
            "<=1.2.3 !prerelease"
        );
        assert_eq!(text(vec![rel("0.0.0", None)]), ">=0.0.0 !prerelease");
        assert_eq!(text(vec![all("0.0.0-0", Some("1.0.0"))]), "<1.0.0");
        assert_eq!(text(vec![]), "<0.0.0-0");
    }
}
