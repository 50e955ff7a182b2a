//! Version ranges: which versions of a package a dependent accepts.
//!
//! Two syntaxes are read, each exactly as the tool that owns it reads it:
//!
//! - [`Range::parse`]: OLM's, which is blang/semver v4's `ParseRange`
//!   (`>=1.0.0 <2.0.0 || 3.x`). Bundles write it in `olm.package.required`
//!   and channel entries in `skipRange`.
//! - [`Range::parse_glasskube`]: Glasskube's, which is Masterminds/semver
//!   v3.3's `NewConstraint` (`^1.2`, `~1.2.3`, `1.x.x`, `>= 1.2, < 2`,
//!   `1.2 - 1.4.5`), checked the way Glasskube checks it (`Validate`), so a
//!   pre-release only matches a comparator that names a pre-release itself.
//!
//! Both become one set representation (see `set.rs`), so ranges from either
//! syntax intersect, compare and print alike. [`Range`]'s `Display` is a
//! canonical form that [`Range::parse`] reads back as the same set.

mod blang;
mod display;
mod glasskube;
mod point;
mod scan;
mod set;

use std::fmt;
use std::str::FromStr;

use crate::Version;
use set::Piece;

/// A set of versions, parsed from OLM (blang/semver) or Glasskube
/// (Masterminds/semver) range syntax.
///
/// Two ranges are equal when they hold the same versions, however they were
/// written; [`Range::as_written`] keeps the text for messages.
#[derive(Clone)]
pub struct Range {
    /// The canonical set: sorted, disjoint, maximal pieces (see `set.rs`).
    pieces: Vec<Piece>,
    /// The text as written, or the canonical text for a computed range.
    text: String,
}

/// A range that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version range {input:?} at position {position}: {message}")]
pub struct RangeError {
    /// The whole text.
    pub input: String,
    /// Byte offset of the offending text.
    pub position: usize,
    /// The offending text (empty at the end of the input).
    pub found: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl Range {
    /// Parses OLM's range syntax, as blang/semver v4's `ParseRange` reads it.
    ///
    /// Comparators `=`, `==`, `!=`, `!`, `>`, `>=`, `<`, `<=` or none (`=`),
    /// each followed by a full `MAJOR.MINOR.PATCH` version, optionally after
    /// spaces; spaces between comparators mean AND, ` || ` means OR.
    /// Wildcards expand as blang expands them: `1.x` is `>=1.0.0 <2.0.0`,
    /// `>1.2.x` is `>=1.3.0`, `<=1.x` is `<2.0.0`, and also blang's two
    /// surprises, kept so a bundle means here what it means in OLM: `1.x.x`
    /// is `>=1.0.0 <1.1.0`, and `!=1.2.x` matches nothing. Pre-releases
    /// compare by plain semver order.
    ///
    /// Everything blang rejects is rejected, and also some input blang
    /// accepts by accident (a stray one-character token, spaces inside an
    /// operator, an `x` in a pre-release that blang would rewrite). Two
    /// additions, both text blang rejects, let [`Range`]'s `Display` write
    /// any range: the `!prerelease` term keeps only releases (`>=1.0.0
    /// <2.0.0 !prerelease`, a Glasskube range), and a quoted version is read
    /// literally (`>="1.0.0-rc.x"`, where blang would see a wildcard).
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let pieces = blang::parse(text)?;
        Ok(Self {
            pieces,
            text: text.to_owned(),
        })
    }

    /// Parses Glasskube's range syntax, as Masterminds/semver v3.3's
    /// `NewConstraint` reads it and `Constraints.Validate` checks it.
    ///
    /// Comparators `=`, `!=`, `>`, `<`, `>=`, `=>`, `<=`, `=<`, `~`, `~>`,
    /// `^` or none; partial versions (`1.2`), an optional `v`, and `x`, `X`
    /// or `*` wildcards; AND by spaces or commas, OR by `||`, hyphen ranges
    /// `1.2 - 1.4.5` (both ends inclusive). A version matches a comparator
    /// only if it is a release or the comparator names a pre-release itself
    /// (`>=1.0.0-rc.1`), so `^1.2` holds no pre-release at all.
    ///
    /// Rejected beyond what Masterminds rejects: parts after a wildcard that
    /// are not wildcards (`1.x.3`), `!=` on a wildcard with a pre-release,
    /// and hyphen ranges placed where Masterminds would misread them.
    pub fn parse_glasskube(text: &str) -> Result<Self, RangeError> {
        let pieces = glasskube::parse(text)?;
        Ok(Self {
            pieces,
            text: text.to_owned(),
        })
    }

    /// Every version, pre-releases included.
    pub fn any() -> Self {
        Self::computed(vec![Piece::any()])
    }

    /// No version at all.
    pub fn none() -> Self {
        Self::computed(Vec::new())
    }

    /// Exactly `version` (build metadata ignored, as in all comparisons).
    pub fn exact(version: Version) -> Self {
        Self::computed(set::normalize(vec![Piece::exact(version.semver())]))
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, version: &Version) -> bool {
        self.pieces
            .iter()
            .any(|piece| piece.contains(version.semver()))
    }

    /// The versions in both ranges: what several dependents all accept.
    pub fn intersect(&self, other: &Range) -> Range {
        Self::computed(set::intersect(&self.pieces, &other.pieces))
    }

    /// The versions in either range.
    pub fn union(&self, other: &Range) -> Range {
        let both = self.pieces.iter().chain(&other.pieces).cloned().collect();
        Self::computed(set::normalize(both))
    }

    /// Whether no version at all is in the range (`>2.0.0 <1.0.0`, or
    /// ranges that do not overlap once intersected).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The highest of `versions` in the range; among versions equal but for
    /// build metadata, the highest revision (`+2` over `+1`), as Glasskube
    /// numbers package revisions.
    pub fn max_satisfying<'a>(
        &self,
        versions: impl IntoIterator<Item = &'a Version>,
    ) -> Option<&'a Version> {
        versions
            .into_iter()
            .filter(|version| self.contains(version))
            .max_by(|a, b| a.cmp_with_build(b))
    }

    /// The range as it was written, for messages; a computed range (from
    /// [`Range::intersect`], [`Range::any`], ...) gives its canonical text.
    pub fn as_written(&self) -> &str {
        &self.text
    }

    /// Intervals `[lo, hi)` (semver precedence, `hi` `None` when unbounded)
    /// that together cover every version in the range, sorted by `lo`; they
    /// may overlap, and may hold versions the range does not (pre-releases
    /// of a release-only piece). For finding candidates in sorted versions,
    /// then checking each with [`Range::contains`].
    pub(crate) fn intervals(
        &self,
    ) -> impl Iterator<Item = (&semver::Version, Option<&semver::Version>)> + '_ {
        self.pieces
            .iter()
            .map(|piece| (&piece.lo, piece.hi.as_ref()))
    }

    fn computed(pieces: Vec<Piece>) -> Self {
        let text = display::display(&pieces);
        Self { pieces, text }
    }
}

impl PartialEq for Range {
    /// Set equality: the pieces are canonical, so equal sets have equal
    /// pieces whatever text they came from.
    fn eq(&self, other: &Self) -> bool {
        self.pieces == other.pieces
    }
}

impl Eq for Range {}

impl std::hash::Hash for Range {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.pieces.hash(state);
    }
}

impl fmt::Display for Range {
    /// The canonical form: OLM syntax (plus `!prerelease` where only
    /// releases are meant), which [`Range::parse`] reads back as the same
    /// set. `>=0.0.0-0` is every version and `<0.0.0-0` none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display::display(&self.pieces))
    }
}

impl fmt::Debug for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let canonical = display::display(&self.pieces);
        if canonical == self.text {
            write!(f, "Range({canonical:?})")
        } else {
            write!(f, "Range({canonical:?}, written {:?})", self.text)
        }
    }
}

impl FromStr for Range {
    type Err = RangeError;

    /// Same as [`Range::parse`] (OLM syntax).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl serde::Serialize for Range {
    /// The canonical text, so a round trip through serde keeps the set.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Range {
    /// Reads OLM syntax with [`Range::parse`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn olm(text: &str) -> Range {
        Range::parse(text).unwrap()
    }

    #[test]
    fn equal_sets_are_equal_however_written() {
        assert_eq!(olm(">1.2.3"), olm(">=1.2.4-0"));
        assert_eq!(olm("1.x"), olm(">=1.0.0 <2.0.0"));
        assert_eq!(
            Range::parse_glasskube("^1.2").unwrap(),
            olm(">=1.2.0 <2.0.0 !prerelease")
        );
        assert_eq!(olm("1.2.3"), Range::parse_glasskube("=1.2.3").unwrap());
        assert_ne!(olm("1.x"), Range::parse_glasskube("1.x").unwrap());
    }

    #[test]
    fn intersect_decides_whether_dependents_overlap() {
        let first = olm(">=1.0.0 <2.0.0");
        let second = Range::parse_glasskube("^1.5").unwrap();
        let both = first.intersect(&second);
        assert!(both.contains(&v("1.7.0")));
        assert!(!both.contains(&v("1.7.0-rc.1")));
        assert!(!both.contains(&v("1.4.0")));
        assert!(first.intersect(&olm(">=2.0.0")).is_empty());
        assert!(olm(">2.0.0 <1.0.0").is_empty());
    }

    #[test]
    fn any_none_and_exact() {
        assert!(Range::any().contains(&v("0.0.0-0")));
        assert!(Range::none().is_empty());
        assert_eq!(Range::any().to_string(), ">=0.0.0-0");
        assert_eq!(Range::none().to_string(), "<0.0.0-0");
        let exact = Range::exact(v("v1.2.3+7"));
        assert!(exact.contains(&v("1.2.3+1")));
        assert!(!exact.contains(&v("1.2.4")));
        assert_eq!(exact.to_string(), "1.2.3");
    }

    #[test]
    fn max_satisfying_prefers_the_highest_revision() {
        let versions = [v("v0.10.1+1"), v("v0.10.1+2"), v("v0.12.3+1"), v("1.0.0")];
        let range = Range::parse_glasskube("<0.12.0").unwrap();
        assert_eq!(
            range.max_satisfying(&versions).unwrap().as_written(),
            "v0.10.1+2"
        );
        assert!(olm(">5.0.0").max_satisfying(&versions).is_none());
    }

    #[test]
    fn serde_round_trips_the_canonical_text() {
        let range = Range::parse_glasskube("1.x.x").unwrap();
        let json = serde_json::to_string(&range).unwrap();
        assert_eq!(json, r#"">=1.0.0 <2.0.0 !prerelease""#);
        let back: Range = serde_json::from_str(&json).unwrap();
        assert_eq!(back, range);
        assert!(serde_json::from_str::<Range>(r#""^1.2""#).is_err());
    }

    #[test]
    fn keeps_the_text_as_written_for_messages() {
        assert_eq!(olm(" 1.x ").as_written(), " 1.x ");
        assert_eq!(olm(" 1.x ").to_string(), ">=1.0.0 <2.0.0");
        assert_eq!(
            format!("{:?}", olm("1.x")),
            r#"Range(">=1.0.0 <2.0.0", written "1.x")"#
        );
    }

    #[test]
    fn errors_name_position_text_and_expectation() {
        let error = Range::parse(">1.0.0 <<2.0.0").unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"invalid version range ">1.0.0 <<2.0.0" at position 7: unexpected "<" after "<", expected a version"#
        );
        assert_eq!(error.found, "<<");
    }
}
