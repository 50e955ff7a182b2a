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
    /// `*`, `x` or `X` as the major: any version.
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
        let spaced = !cursor.take_while(is_space).is_empty();
        // Masterminds finds hyphen ranges with a pattern that runs into a
        // preceding `||`, so one right after `||` means something else there.
        let mut group = term(&mut cursor, first || spaced)?;
        first = false;
        loop {
            let spaced = !cursor.take_while(is_space).is_empty();
            match cursor.peek() {
                None => {
                    alternatives.extend(group);
                    return Ok(set::normalize(alternatives));
                }
                Some(b'|') if cursor.eat("||") => {
                    alternatives.extend(group);
                    break;
                }
                Some(b',') => {
                    cursor.eat(",");
                    cursor.take_while(is_space);
                    group = set::intersect(&group, &term(&mut cursor, true)?);
                }
                Some(b'-') if spaced && cursor.peek_at(1).is_some_and(is_space) => {
                    return Err(cursor.unexpected(
                        "a hyphen range such as 1.2 - 1.4.5 must start the range, or follow a comma, or follow \"||\" and a space",
                    ));
                }
                Some(_) if spaced => {
                    group = set::intersect(&group, &term(&mut cursor, false)?);
                }
                Some(b'|') => return Err(cursor.unexpected("expected \"||\"")),
                Some(_) => {
                    return Err(cursor.unexpected(
                        "expected a space, \",\" or \"||\" before the next comparator",
                    ));
                }
            }
        }
    }
}

/// One comparator, or a hyphen range where `hyphen` allows one.
fn term(cursor: &mut Cursor<'_>, hyphen: bool) -> Result<Vec<Piece>, RangeError> {
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
            return Ok(set::intersect(
                &low,
                &comparator(cursor, start, Op::Le, &high)?,
            ));
        }
        cursor.reset(before_dash);
        return comparator(cursor, start, Op::Eq, &low);
    };
    comparator(cursor, start, op, &low)
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
    let version = set::point(number(0), number(1), number(2), pre);
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
    let below = |hi: Option<Point>| vec![piece(set::min_point(), hi)];
    let within = |hi: Option<Point>| vec![piece(c.clone(), hi)];
    let outside = |lo: Point, hi: Option<Point>| {
        let mut pieces = vec![piece(set::min_point(), Some(lo))];
        pieces.extend(hi.map(|hi| piece(hi, None)));
        pieces
    };
    let pieces = match (op, spec.shape) {
        (Op::Eq, Shape::Full) => within(set::succ(c)),
        (Op::Eq | Op::Tilde, Shape::Any) => from(c.clone()),
        (Op::Tilde, Shape::Full) if (major, minor, c.patch) == (0, 0, 0) => from(c.clone()),
        (Op::Eq | Op::Tilde, Shape::Major) => within(set::major_end(major)),
        (Op::Eq | Op::Tilde, _) => within(set::minor_end(major, minor)),
        (Op::Caret, shape) if major > 0 || shape == Shape::Major => within(set::major_end(major)),
        (Op::Caret, shape) if minor > 0 || shape == Shape::MajorMinor => {
            within(set::minor_end(0, minor))
        }
        (Op::Caret, _) => within(set::succ(&set::release(0, 0, c.patch))),
        (Op::Gt, Shape::Major) => from_option(takes, set::major_end(major)),
        (Op::Gt, Shape::MajorMinor) => from_option(takes, set::minor_end(major, minor)),
        (Op::Gt, _) => from_option(takes, set::succ(c)),
        (Op::Ge, _) => from(c.clone()),
        (Op::Lt, _) => below(Some(c.clone())),
        (Op::Le, Shape::Full) => below(set::succ(c)),
        (Op::Le, Shape::Major) => below(set::major_end(major)),
        (Op::Le, _) => below(set::minor_end(major, minor)),
        (Op::Ne, Shape::Major) => outside(set::major_start(major), set::major_end(major)),
        (Op::Ne, Shape::MajorMinor) if c.pre.is_empty() => outside(
            set::triple_start(major, minor, 0),
            set::minor_end(major, minor),
        ),
        (Op::Ne, Shape::MajorMinor) => {
            let text = cursor.since(start);
            let message = format!(
                "{text:?} leaves out one pre-release of every patch version, which no range can hold; write the versions to leave out instead"
            );
            return Err(cursor.error(start, text, message));
        }
        (Op::Ne, _) => outside(c.clone(), set::succ(c)),
    };
    Ok(set::normalize(pieces))
}

fn from_option(takes: Takes, lo: Option<Point>) -> Vec<Piece> {
    lo.map(|lo| Piece::new(lo, None, takes))
        .into_iter()
        .collect()
}
