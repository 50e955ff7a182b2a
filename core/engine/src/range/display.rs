//! The canonical text of a range: OLM syntax that `Range::parse` reads
//! back as the same set, written the way a person would where there is a
//! choice (`>1.2.3` rather than `>=1.2.4-0`).

use semver::{Prerelease, Version as Point};

use super::point::{min_point, next_release, point, release, succ};
use super::set::{Piece, Takes};

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

/// Whether blang would take `version` for a wildcard: it does so for any
/// comparator with an `x` in it, except after `>=` and `<`.
fn has_x(version: &Point) -> bool {
    version.pre.as_str().contains('x')
}

/// `version` as text, quoted if it has `.x`, which blang rewrites even
/// after `>=` and `<` (`Range::parse` reads a quoted version literally).
fn literal(version: &Point) -> String {
    let text = version.to_string();
    if text.contains(".x") {
        format!("\"{text}\"")
    } else {
        text
    }
}

/// `>= lo`, or `> p` where `lo` is the successor of a `p` a person writes.
fn lower(lo: &Point) -> String {
    match written_pred(lo).filter(|pred| !has_x(pred) && !has_x(lo)) {
        Some(pred) => format!(">{pred}"),
        None => format!(">={}", literal(lo)),
    }
}

/// `< hi`, or `<= p` where `hi` is the successor of a `p` a person writes.
fn upper(hi: &Point) -> String {
    match written_pred(hi).filter(|pred| !has_x(pred) && !has_x(hi)) {
        Some(pred) => format!("<={pred}"),
        None => format!("<{}", literal(hi)),
    }
}

/// One piece: a bare version for a single one, else its bounds, with
/// `!prerelease` when it holds only releases.
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
    use crate::range::set::normalize;

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
        // blang would read these versions as wildcards.
        assert_eq!(
            text(vec![all("1.0.0-fix.1", Some("1.0.0-fix.1.0"))]),
            ">=1.0.0-fix.1 <1.0.0-fix.1.0"
        );
        assert_eq!(text(vec![all("1.0.0-rc.x", None)]), ">=\"1.0.0-rc.x\"");
        assert_eq!(text(vec![]), "<0.0.0-0");
    }
}
