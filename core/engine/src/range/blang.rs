//! OLM's range syntax, read as blang/semver v4.0.0's `ParseRange` reads it.
//!
//! blang splits the text on spaces (except right after `>`, `<` or `=`),
//! groups the pieces between ` || ` (AND inside, OR between), expands any
//! comparator containing an `x` as a wildcard and parses the rest with its
//! strict `Parse`. This reader walks the same grammar byte by byte so errors
//! can point at the offending text.

use semver::Version as Point;

use super::RangeError;
use super::point;
use super::scan::{self, Cursor};
use super::set::{self, Piece, Takes};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// blang's `parseComparator`, including the empty operator.
fn operator(text: &str) -> Option<Op> {
    Some(match text {
        "" | "=" | "==" => Op::Eq,
        "!=" | "!" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        _ => return None,
    })
}

/// The term [`Range`](super::Range)'s `Display` writes for "releases only".
const RELEASES_ONLY: &str = "!prerelease";

/// Reads OLM range syntax into canonical pieces.
pub(super) fn parse(text: &str) -> Result<Vec<Piece>, RangeError> {
    let mut cursor = Cursor::new(text);
    let mut alternatives = Vec::new();
    // The comparators read so far in this alternative, to be ANDed.
    let mut group: Option<Vec<Vec<Piece>>> = None;
    let mut after_or = None;
    loop {
        cursor.take_while(|byte| byte == b' ');
        let start = cursor.pos();
        match cursor.peek() {
            None => {
                let Some(group) = group.take() else {
                    let message = match after_or {
                        Some(_) => "expected a version comparator after \"||\"",
                        None => "expected a version range such as >=1.0.0 <2.0.0",
                    };
                    return Err(cursor.error(start, "", message));
                };
                alternatives.extend(set::intersect_all(group));
                break;
            }
            Some(b'|') if cursor.eat("||") => {
                let Some(done) = group.take() else {
                    return Err(cursor.error(
                        start,
                        "||",
                        "expected a version comparator before \"||\"",
                    ));
                };
                alternatives.extend(set::intersect_all(done));
                if cursor.peek().is_some_and(|byte| byte != b' ') {
                    return Err(cursor.unexpected("expected a space after \"||\""));
                }
                after_or = Some(start);
            }
            Some(_) => {
                let term = comparator(&mut cursor)?;
                group.get_or_insert_with(Vec::new).push(term);
                match cursor.peek() {
                    None | Some(b' ') => {}
                    Some(b'|') => {
                        return Err(cursor.unexpected("expected a space before \"||\""));
                    }
                    Some(_) => {
                        return Err(cursor.unexpected(
                            "expected a space before the next comparator (OLM ranges separate comparators with spaces)",
                        ));
                    }
                }
            }
        }
    }
    Ok(set::normalize(alternatives))
}

/// One comparator (or the `!prerelease` term), as canonical pieces.
fn comparator(cursor: &mut Cursor<'_>) -> Result<Vec<Piece>, RangeError> {
    let start = cursor.pos();
    if cursor.rest().starts_with(RELEASES_ONLY)
        && matches!(cursor.peek_at(RELEASES_ONLY.len()), None | Some(b' '))
    {
        cursor.eat(RELEASES_ONLY);
        return Ok(vec![Piece::new(
            point::release(0, 0, 0),
            None,
            Takes::Releases,
        )]);
    }

    let op_text = cursor.take_while(|byte| matches!(byte, b'<' | b'>' | b'=' | b'!'));
    let Some(op) = operator(op_text) else {
        return Err(bad_operator(cursor, start, op_text));
    };
    // blang keeps `>= 1.0.0` in one piece, but splits after `!`.
    if cursor.peek() == Some(b' ') {
        if op_text == "!" {
            return Err(cursor.unexpected("expected a version right after \"!\""));
        }
        cursor.take_while(|byte| byte == b' ');
    }

    let version_start = cursor.pos();
    if cursor.eat("\"") {
        // Pakket's own spelling for a version blang would read as a
        // wildcard (`1.0.0-rc.x1`); blang itself rejects quotes.
        let version = cursor.take_while(|byte| byte != b'"');
        if !cursor.eat("\"") {
            return Err(cursor.unexpected("expected a closing quote after the version"));
        }
        let version = strict_version(cursor, version, version_start + 1)?;
        return Ok(set::normalize(literal(op, &version)));
    }
    let version =
        cursor.take_while(|byte| scan::is_identifier_byte(byte) || matches!(byte, b'.' | b'+'));
    if !version.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(not_a_version(cursor, version_start, op_text, version));
    }
    let pieces = if version.contains('x') {
        wildcard(cursor, op, op_text, version, version_start)?
    } else {
        None
    };
    let pieces = match pieces {
        Some(pieces) => pieces,
        None => literal(op, &strict_version(cursor, version, version_start)?),
    };
    Ok(set::normalize(pieces))
}

fn bad_operator(cursor: &Cursor<'_>, start: usize, op_text: &str) -> RangeError {
    // Every single operator character is an operator on its own, so some
    // longer prefix is the first that is not.
    let valid = (1..op_text.len())
        .take_while(|&end| operator(&op_text[..end]).is_some())
        .last()
        .unwrap_or(0);
    let message = format!(
        "unexpected {:?} after {:?}, expected a version",
        &op_text[valid..=valid],
        &op_text[..valid],
    );
    cursor.error(start, op_text, message)
}

fn not_a_version(cursor: &Cursor<'_>, start: usize, op_text: &str, version: &str) -> RangeError {
    if version.starts_with('v') && version[1..].starts_with(|c: char| c.is_ascii_digit()) {
        let message = format!(
            "{version:?} starts with \"v\", which OLM (blang/semver) does not allow; write {:?}",
            &version[1..]
        );
        return cursor.error(start, version, message);
    }
    if !version.is_empty() {
        let message =
            format!("{version:?} is not a version, expected MAJOR.MINOR.PATCH such as 1.2.3");
        return cursor.error(start, version, message);
    }
    let expected = match (op_text, cursor.peek()) {
        (_, Some(b'~' | b'^')) => {
            "expected a version; OLM ranges have no ~ or ^ (write >=1.2.0 <1.3.0 instead)"
                .to_owned()
        }
        ("", Some(b'*')) => {
            "expected a version; OLM ranges have no * (write >=0.0.0-0 for any version)".to_owned()
        }
        ("", _) => "expected a comparison operator (=, !=, >, >=, <, <=) or a version".to_owned(),
        (op, _) => format!("expected a version after {op:?}"),
    };
    cursor.unexpected(&expected)
}

/// A full version as blang's `Parse` takes it: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`.
fn strict_version(cursor: &Cursor<'_>, text: &str, start: usize) -> Result<Point, RangeError> {
    let parsed = Point::parse(text).map_err(|error| {
        let message =
            format!("invalid version {text:?}: {error} (expected MAJOR.MINOR.PATCH such as 1.2.3)");
        cursor.error(start, text, message)
    })?;
    scan::check_prerelease_numbers(parsed.pre.as_str()).map_err(|reason| {
        cursor.error(start, text, format!("invalid version {text:?}: {reason}"))
    })?;
    Ok(point::strip_build(&parsed))
}

/// What `op version` holds, for a plain version.
fn literal(op: Op, version: &Point) -> Vec<Piece> {
    let all = |lo: Point, hi: Option<Point>| Piece::new(lo, hi, Takes::All);
    let after = point::succ(version);
    match op {
        Op::Eq => vec![all(version.clone(), after)],
        Op::Ne => {
            let mut pieces = vec![all(point::min_point(), Some(version.clone()))];
            pieces.extend(after.map(|after| all(after, None)));
            pieces
        }
        Op::Gt => after.map(|after| all(after, None)).into_iter().collect(),
        Op::Ge => vec![all(version.clone(), None)],
        Op::Lt => vec![all(point::min_point(), Some(version.clone()))],
        Op::Le => vec![all(point::min_point(), after)],
    }
}

/// A comparator containing `x`, which blang always treats as a wildcard.
///
/// Returns `None` for a plain version that blang happens to read
/// literally: one whose `x` is in a pre-release or build and that follows
/// `>=` or `<`, the two operators blang's expansion leaves alone.
fn wildcard(
    cursor: &Cursor<'_>,
    op: Op,
    op_text: &str,
    text: &str,
    start: usize,
) -> Result<Option<Vec<Piece>>, RangeError> {
    let number = |part: &str| -> Option<u64> {
        let leading_zero = part.len() > 1 && part.starts_with('0');
        let digits = !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
        (digits && !leading_zero)
            .then(|| part.parse().ok())
            .flatten()
    };
    let parts: Vec<&str> = text.split('.').collect();
    // (flat version, which number the upper bound increments)
    let shape = match parts.as_slice() {
        [major, "x"] => number(major).map(|major| ((major, 0), Bump::Major)),
        // blang turns `1.x.x` into `1.0.x`: it counts three parts, so a
        // patch wildcard, then flattens the version to 1.0.0.
        [major, "x", "x"] => number(major).map(|major| ((major, 0), Bump::Minor)),
        [major, minor, "x"] => number(major)
            .zip(number(minor))
            .map(|(major, minor)| ((major, minor), Bump::Minor)),
        _ => None,
    };
    let Some(((major, minor), bump)) = shape else {
        if matches!(op_text, ">=" | "<") && !text.contains(".x") {
            return Ok(None);
        }
        let message = format!(
            "{text:?} contains \"x\", which OLM (blang/semver) reads as a wildcard: write MAJOR.x, MAJOR.MINOR.x or MAJOR.x.x, or keep an \"x\" in a pre-release only after >= or <"
        );
        return Err(cursor.error(start, text, message));
    };

    let flat = point::release(major, minor, 0);
    // The bound above the wildcard: blang increments with Go's
    // `strconv.Atoi`, which fails past i64, so the range fails there too.
    let next = match bump {
        Bump::Major => major.checked_add(1).map(|next| (next, next, 0)),
        Bump::Minor => minor.checked_add(1).map(|next| (next, major, next)),
    }
    .filter(|&(bumped, _, _)| bumped <= i64::MAX as u64)
    .map(|(_, major, minor)| point::release(major, minor, 0));
    let next = || {
        next.clone().ok_or_else(|| {
            let message = format!("{text:?} is too large for OLM (blang/semver) to expand");
            cursor.error(start, text, message)
        })
    };

    let all = |lo: Point, hi: Option<Point>| Piece::new(lo, hi, Takes::All);
    Ok(Some(match op {
        Op::Gt => vec![all(next()?, None)],
        Op::Ge => vec![all(flat, None)],
        Op::Lt => vec![all(point::min_point(), Some(flat))],
        Op::Le => vec![all(point::min_point(), Some(next()?))],
        Op::Eq => vec![all(flat, Some(next()?))],
        // blang ANDs `<1.2.0` with `>=1.3.0` here, which nothing satisfies.
        Op::Ne => {
            next()?;
            Vec::new()
        }
    }))
}

#[derive(Clone, Copy)]
enum Bump {
    Major,
    Minor,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Range, Version};

    fn holds(range: &str, version: &str) -> bool {
        Range::parse(range)
            .unwrap()
            .contains(&Version::parse(version).unwrap())
    }

    fn error(range: &str) -> RangeError {
        Range::parse(range).unwrap_err()
    }

    #[test]
    fn wildcards_expand_as_blang_expands_them() {
        let same = |a: &str, b: &str| {
            assert_eq!(
                Range::parse(a).unwrap(),
                Range::parse(b).unwrap(),
                "{a} vs {b}"
            )
        };
        same("1.x", ">=1.0.0 <2.0.0");
        same("==1.2.x", ">=1.2.0 <1.3.0");
        same(">1.2.x", ">=1.3.0");
        same("<=1.x", "<2.0.0");
        same("<1.2.x", "<1.2.0");
        same(">=1.x", ">=1.0.0");
        same("1.x.x", ">=1.0.0 <1.1.0");
        // Only the incremented number has to fit Go's int.
        same("<=18446744073709551615.1.x", "<18446744073709551615.2.0");
        assert!(Range::parse("!=1.2.x").unwrap().is_empty());
        assert!(Range::parse("!1.x").unwrap().is_empty());
    }

    #[test]
    fn an_x_in_a_prerelease_is_literal_only_where_blang_leaves_it() {
        assert!(holds(">=1.0.0-fox", "1.0.0-fox"));
        assert!(!holds("<1.0.0-fox", "1.0.0-fox"));
        assert!(error("=1.0.0-fox").message.contains("wildcard"));
        assert!(error(">=1.0.0-a.x").message.contains("wildcard"));
        assert!(error("1.x.3").message.contains("wildcard"));
    }

    #[test]
    fn spaces_may_follow_an_operator_but_not_a_bang() {
        assert!(holds(">=  1.0.0  <   2.0.0", "1.5.0"));
        assert!(holds("!=1.0.0", "1.0.1"));
        let bang = error("! 1.0.0");
        assert_eq!((bang.position, bang.found.as_str()), (1, " "));
    }

    #[test]
    fn rejects_what_blang_rejects_and_says_where() {
        let cases = [
            ("", 0, "", "expected a version range"),
            ("   ", 3, "", "expected a version range"),
            ("|| 1.0.0", 0, "||", "before \"||\""),
            ("1.0.0 ||", 8, "", "after \"||\""),
            ("1.0.0 || || 2.0.0", 9, "||", "before \"||\""),
            ("1.0.0||2.0.0", 5, "|", "space before \"||\""),
            (">=1.0.0,<2.0.0", 7, ",", "separate comparators with spaces"),
            (
                ">=1.0.0\t<2.0.0",
                7,
                "\t",
                "separate comparators with spaces",
            ),
            ("1.0", 0, "1.0", "invalid version \"1.0\""),
            ("v1.0.0", 0, "v1.0.0", "write \"1.0.0\""),
            ("~1.2.3", 0, "~", "no ~ or ^"),
            ("*", 0, "*", "no *"),
            (">>1.2.3", 0, ">>", "unexpected \">\" after \">\""),
            ("=>1.2.3", 0, "=>", "unexpected \">\" after \"=\""),
            ("string", 0, "string", "not a version"),
            ("fo.ob.ar.x", 0, "fo.ob.ar.x", "not a version"),
            (">=", 2, "", "expected a version after \">=\" at the end"),
            ("1.0.0-01", 0, "1.0.0-01", "leading zero"),
            (
                "1.0.0-18446744073709551616",
                0,
                "1.0.0-18446744073709551616",
                "larger than",
            ),
            (
                "<=9223372036854775807.x",
                2,
                "9223372036854775807.x",
                "too large",
            ),
            ("1.0.0 é", 6, "é", "expected a comparison operator"),
        ];
        for (input, position, found, message) in cases {
            let error = error(input);
            assert_eq!(error.position, position, "{input:?}: {error}");
            assert_eq!(error.found, found, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
        }
    }

    #[test]
    fn reads_quoted_versions_literally() {
        assert!(holds(">=\"1.0.0-rc.x\"", "1.0.0-rc.x"));
        assert!(!holds(">=\"1.0.0-rc.x\"", "1.0.0-rc.0"));
        assert!(holds("\"1.0.0-rc.x\"", "1.0.0-rc.x"));
        assert_eq!(error("\"1.0.0").position, 6);
        assert_eq!(error("\"1.x\"").found, "1.x");
    }

    #[test]
    fn reads_back_its_own_releases_only_term() {
        assert!(holds(">=1.0.0 <2.0.0 !prerelease", "1.5.0"));
        assert!(!holds(">=1.0.0 <2.0.0 !prerelease", "1.5.0-rc.1"));
        assert!(error("!prereleases").message.contains("not a version"));
    }
}
