//! Arithmetic on the points of semver order that bound a range's pieces.
//!
//! Points are `semver::Version`s without build metadata, so their own order
//! is semver precedence. Every version has an immediate successor
//! ([`succ`]): nothing lies between `1.2.3` and `1.2.4-0`, or between
//! `1.2.3-rc` and `1.2.3-rc.0`, because `0` is the lowest identifier.

use semver::{BuildMetadata, Prerelease, Version as Point};

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

/// `version` without build metadata, which no comparison looks at.
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
pub(super) fn release_from(version: &Point) -> Point {
    release(version.major, version.minor, version.patch)
}

/// The release right after the release `version`.
pub(super) fn next_release(version: &Point) -> Option<Point> {
    triple_end(version.major, version.minor, version.patch).map(|end| release_from(&end))
}

/// The release right before the release `version`.
pub(super) fn prev_release(version: &Point) -> Option<Point> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Point {
        Point::parse(text).unwrap()
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
}
