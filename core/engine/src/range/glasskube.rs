//! Glasskube's range syntax: Masterminds/semver v3.3.0's `NewConstraint`,
//! checked with `Constraints.Validate` as Glasskube's dependency graph does.
//!
//! Masterminds rewrites hyphen ranges, splits on `||`, and matches each AND
//! group against a regular expression. This reader walks the same grammar
//! byte by byte. The meaning of each comparator follows the check functions
//! in Masterminds' `constraints.go`; a version with a pre-release passes a
//! comparator only if the comparator's own version has one.

use semver::{Prerelease, Version as Point};

use super::RangeError;
use super::point;
use super::scan::{self, Cursor};
use super::set::{self, Piece, Takes};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// No operator or `=`: equal, or tilde when the version has wildcards.
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Tilde,
    Caret,
}

/// Longest first, so `>=` wins over `>`.
const OPERATORS: &[(&str, Op)] = &[
    (">=", Op::Ge),
    ("=>", Op::Ge),
    ("<=", Op::Le),
    ("=<", Op::Le),
    ("!=", Op::Ne),
    ("~>", Op::Tilde),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("=", Op::Eq),
    ("~", Op::Tilde),
    ("^", Op::Caret),
];

/// How much of a version is written; Masterminds' `dirty` flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `*`, `x` or `X` as the major (compared as 0.0.0).
    Any,
    /// `1`, `1.x`: the minor is a wildcard (`minorDirty`).
    Major,
    /// `1.2`, `1.2.x`: the patch is a wildcard (`patchDirty`).
    MajorMinor,
    /// `1.2.3`.
    Full,
}

/// A comparator's version: the version Masterminds compares against
/// (wildcards as 0) and how much of it was written.
struct Spec {
    version: Point,
    shape: Shape,
}

/// Go's `\s`, which Masterminds' expressions use around every token.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Reads Glasskube range syntax into canonical pieces.
pub(super) fn parse(text: &str) -> Result<Vec<Piece>, RangeError> {
    let mut cursor = Cursor::new(text);
    let mut alternatives = Vec::new();
    let mut first = true;
    loop {
        // Masterminds rewrites hyphen ranges before anything else, with a
        // pattern that takes `|` into a version and swallows the space in
        // front of a range (but keeps the one after it). So a hyphen range
        // works at the start, after a comma, after `||` and a space, or
        // after another hyphen range; elsewhere it means something else.
        let spaced = !cursor.take_while(is_space).is_empty();
        let (first_term, mut hyphen) = term(&mut cursor, first || spaced)?;
        // The comparators of this alternative, to be ANDed.
        let mut group = vec![first_term];
        first = false;
        loop {
            let spaced = !cursor.take_while(is_space).is_empty();
            let (next, next_hyphen) = match cursor.peek() {
                None => {
                    alternatives.extend(set::intersect_all(group));
                    return Ok(set::normalize(alternatives));
                }
                Some(b'|') if cursor.eat("||") => {
                    alternatives.extend(set::intersect_all(group));
                    break;
                }
                Some(b',') => {
                    cursor.eat(",");
                    cursor.take_while(is_space);
                    term(&mut cursor, true)?
                }
                Some(b'-') if spaced && cursor.peek_at(1).is_some_and(is_space) => {
                    return Err(cursor.unexpected(
                        "a hyphen range such as 1.2 - 1.4.5 must start the range or follow a comma, \"||\" and a space, or another hyphen range",
                    ));
                }
                Some(_) if spaced => term(&mut cursor, hyphen)?,
                Some(b'|') => return Err(cursor.unexpected("expected \"||\"")),
                Some(_) => {
                    return Err(cursor.unexpected(
                        "expected a space, \",\" or \"||\" before the next comparator",
                    ));
                }
            };
            group.push(next);
            hyphen = next_hyphen;
        }
    }
}

/// One comparator, or a hyphen range where `hyphen` allows one; says
/// which it was.
fn term(cursor: &mut Cursor<'_>, hyphen: bool) -> Result<(Vec<Piece>, bool), RangeError> {
    let start = cursor.pos();
    let op = OPERATORS
        .iter()
        .find(|(text, _)| cursor.eat(text))
        .map(|&(_, op)| op);
    let op_text = cursor.since(start);
    cursor.take_while(is_space);
    let low = spec(cursor, op_text)?;
    let Some(op) = op else {
        let before_dash = cursor.pos();
        let spaced = !cursor.take_while(is_space).is_empty();
        if hyphen
            && spaced
            && cursor.peek() == Some(b'-')
            && cursor.peek_at(1).is_some_and(is_space)
        {
            cursor.eat("-");
            cursor.take_while(is_space);
            let high = spec(cursor, "-")?;
            // Masterminds' hyphen pattern reads `2||3` as one version.
            if cursor.peek() == Some(b'|') {
                return Err(
                    cursor.unexpected("expected a space before \"||\" after a hyphen range")
                );
            }
            let low = comparator(cursor, start, Op::Ge, &low)?;
            let range = set::intersect(&low, &comparator(cursor, start, Op::Le, &high)?);
            return Ok((range, true));
        }
        cursor.reset(before_dash);
        return Ok((comparator(cursor, start, Op::Eq, &low)?, false));
    };
    Ok((comparator(cursor, start, op, &low)?, false))
}

/// A version as Masterminds' constraint pattern takes it: `v`, one to
/// three parts (numbers, or `x`/`X`/`*`), a pre-release, build metadata.
fn spec(cursor: &mut Cursor<'_>, after: &str) -> Result<Spec, RangeError> {
    let start = cursor.pos();
    cursor.eat("v");
    let mut parts: Vec<Option<u64>> = Vec::new();
    loop {
        let part_start = cursor.pos();
        let part = cursor.take_while(|byte| byte.is_ascii_digit());
        if part.is_empty() {
            if !cursor.eat("x") && !cursor.eat("X") && !cursor.eat("*") {
                let expected = match (parts.is_empty(), after) {
                    (false, _) => {
                        "expected a number or a wildcard (x, X, *) after \".\"".to_owned()
                    }
                    (true, "") => "expected a comparison operator or a version".to_owned(),
                    (true, "-") => "expected a version after the hyphen".to_owned(),
                    (true, op) => format!("expected a version after {op:?}"),
                };
                return Err(cursor.unexpected(&expected));
            }
            parts.push(None);
        } else {
            let number = part.parse().map_err(|_| {
                let message = format!("the version number {part:?} is larger than {}", u64::MAX);
                cursor.error(part_start, part, message)
            })?;
            if parts.last() == Some(&None) {
                let message = format!(
                    "{:?}: a number after a wildcard has no meaning, write only wildcards after the first one",
                    cursor.since(start)
                );
                return Err(cursor.error(part_start, part, message));
            }
            parts.push(Some(number));
        }
        if parts.len() == 3 || !cursor.eat(".") {
            break;
        }
    }

    let mut pre = Prerelease::EMPTY;
    if cursor.peek() == Some(b'-') && cursor.peek_at(1).is_some_and(scan::is_identifier_byte) {
        cursor.eat("-");
        let pre_start = cursor.pos();
        identifiers(cursor, "pre-release")?;
        let text = cursor.since(pre_start);
        scan::check_prerelease_numbers(text)
            .map_err(|reason| cursor.error(pre_start, text, reason))?;
        pre = Prerelease::new(text)
            .map_err(|error| cursor.error(pre_start, text, error.to_string()))?;
    }
    if cursor.eat("+") {
        identifiers(cursor, "build metadata")?;
    }

    let number = |index: usize| parts.get(index).copied().flatten().unwrap_or(0);
    let shape = match parts.as_slice() {
        [None, ..] => Shape::Any,
        [_] | [_, None, ..] => Shape::Major,
        [_, _] | [_, _, None] => Shape::MajorMinor,
        _ => Shape::Full,
    };
    let version = point::point(number(0), number(1), number(2), pre);
    Ok(Spec { version, shape })
}

/// Dot-separated identifiers of a pre-release or build metadata.
fn identifiers(cursor: &mut Cursor<'_>, what: &str) -> Result<(), RangeError> {
    loop {
        if cursor.take_while(scan::is_identifier_byte).is_empty() {
            return Err(cursor.unexpected(&format!("expected a {what} identifier")));
        }
        if !cursor.eat(".") {
            return Ok(());
        }
    }
}

/// What Masterminds' check function for `op` accepts, as pieces.
fn comparator(
    cursor: &Cursor<'_>,
    start: usize,
    op: Op,
    spec: &Spec,
) -> Result<Vec<Piece>, RangeError> {
    let c = &spec.version;
    let (major, minor) = (c.major, c.minor);
    // The check functions turn pre-releases away unless `c` has one.
    let takes = if c.pre.is_empty() {
        Takes::Releases
    } else {
        Takes::All
    };
    let piece = |lo: Point, hi: Option<Point>| Piece::new(lo, hi, takes);
    let from = |lo: Point| vec![piece(lo, None)];
    let below = |hi: Option<Point>| vec![piece(point::min_point(), hi)];
    let within = |hi: Option<Point>| vec![piece(c.clone(), hi)];
    let outside = |lo: Point, hi: Option<Point>| {
        let mut pieces = vec![piece(point::min_point(), Some(lo))];
        pieces.extend(hi.map(|hi| piece(hi, None)));
        pieces
    };
    let pieces = match (op, spec.shape) {
        (Op::Eq, Shape::Full) => within(point::succ(c)),
        // A wildcard turns `=` into `~`. Masterminds reads `~0.0.0` and `~*`
        // as any version, `~1` as 1.*, and every other tilde as major.minor.*.
        (Op::Eq | Op::Tilde, Shape::Any) => from(c.clone()),
        (Op::Tilde, Shape::Full) if (major, minor, c.patch) == (0, 0, 0) => from(c.clone()),
        (Op::Eq | Op::Tilde, Shape::Major) => within(point::major_end(major)),
        (Op::Eq | Op::Tilde, _) => within(point::minor_end(major, minor)),
        // `^` keeps the first non-zero part: 1.*, then 0.2.*, then 0.0.3
        // (so `^*`, written as 0.0.0, holds 0.0.0 alone).
        (Op::Caret, shape) if major > 0 || shape == Shape::Major => within(point::major_end(major)),
        (Op::Caret, shape) if minor > 0 || shape == Shape::MajorMinor => {
            within(point::minor_end(0, minor))
        }
        (Op::Caret, _) => within(point::succ(&point::release(0, 0, c.patch))),
        // `>1` is above every 1.*, `>1.2` above every 1.2.*.
        (Op::Gt, Shape::Major) => from_option(takes, point::major_end(major)),
        (Op::Gt, Shape::MajorMinor) => from_option(takes, point::minor_end(major, minor)),
        (Op::Gt, _) => from_option(takes, point::succ(c)),
        (Op::Ge, _) => from(c.clone()),
        (Op::Lt, _) => below(Some(c.clone())),
        // `<=1` takes every 1.*, `<=1.2` every 1.2.*; `<=*` compares the
        // minor with 0 and so holds only 0.0.*.
        (Op::Le, Shape::Full) => below(point::succ(c)),
        (Op::Le, Shape::Major) => below(point::major_end(major)),
        (Op::Le, _) => below(point::minor_end(major, minor)),
        (Op::Ne, Shape::Major) => outside(point::major_start(major), point::major_end(major)),
        (Op::Ne, Shape::MajorMinor) if c.pre.is_empty() => outside(
            point::triple_start(major, minor, 0),
            point::minor_end(major, minor),
        ),
        // Masterminds compares only the pre-release here, so `!=1.2.x-rc`
        // leaves out 1.2.0-rc, 1.2.1-rc, ... and keeps what lies between.
        (Op::Ne, Shape::MajorMinor) => {
            let text = cursor.since(start);
            let message = format!(
                "{text:?} leaves out one pre-release of every patch version, which no range can hold; write the versions to leave out instead"
            );
            return Err(cursor.error(start, text, message));
        }
        (Op::Ne, _) => outside(c.clone(), point::succ(c)),
    };
    Ok(set::normalize(pieces))
}

/// Everything from `lo` up; nothing when `lo` is past the last version.
fn from_option(takes: Takes, lo: Option<Point>) -> Vec<Piece> {
    lo.map(|lo| Piece::new(lo, None, takes))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::{Range, Version};

    fn holds(range: &str, version: &str) -> bool {
        Range::parse_glasskube(range)
            .unwrap()
            .contains(&Version::parse(version).unwrap())
    }

    #[test]
    fn a_prerelease_needs_a_comparator_that_names_one() {
        assert!(holds(">=1.0.0-rc.1", "1.5.0-beta"));
        // Every comparator of an AND group must allow it (Masterminds 3.3).
        assert!(!holds(">=1.0.0-rc.1 <2.0.0", "1.5.0-beta"));
        assert!(holds(">=1.0.0-rc.1 <2.0.0", "1.5.0"));
        assert!(holds("!=1.2.3", "1.2.4"));
        assert!(!holds("!=1.2.3", "1.2.4-rc.1"));
    }

    #[test]
    fn hyphen_ranges_go_where_masterminds_reads_them() {
        assert!(holds("1.2 - 1.4.5", "1.4.5"));
        assert!(holds(">=1.0.0, 1.2 - 1.4", "1.4.9"));
        assert!(holds("0.1 || 1.2 - 1.4", "1.3.0"));
        assert!(!holds("1.0 - 1.1 2.0 - 3.0", "1.1.0"));
        let error = Range::parse_glasskube(">=1.0.0 1.2 - 1.4").unwrap_err();
        assert_eq!((error.position, error.found.as_str()), (12, "-"));
        assert!(error.message.contains("hyphen range"), "{error}");
        assert!(Range::parse_glasskube("1 ||1 - 2").is_err());
        assert!(Range::parse_glasskube("1 - 2||3").is_err());
    }

    #[test]
    fn errors_point_at_the_offending_text() {
        let cases = [
            (
                "",
                0,
                "",
                "expected a comparison operator or a version at the end",
            ),
            ("1.0.0 ||", 8, "", "at the end"),
            (">= bar", 3, "b", "expected a version after \">=\""),
            ("1.2.3.4", 5, ".", "expected a space"),
            ("1.0.0-", 5, "-", "expected a space"),
            ("1.0.0-01", 6, "01", "leading zero"),
            ("1.x.3", 4, "3", "a number after a wildcard"),
            ("!=1.2-rc", 0, "!=1.2-rc", "pre-release of every patch"),
            (
                "99999999999999999999",
                0,
                "99999999999999999999",
                "larger than",
            ),
            ("1|2", 1, "|", "expected \"||\""),
            ("1,,2", 2, ",", "expected a comparison operator"),
        ];
        for (input, position, found, message) in cases {
            let error = Range::parse_glasskube(input).unwrap_err();
            assert_eq!(error.position, position, "{input:?}: {error}");
            assert_eq!(error.found, found, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
        }
    }
}
