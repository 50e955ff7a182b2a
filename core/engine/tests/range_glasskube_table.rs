//! Golden cases for [`Range::parse_glasskube`] (Glasskube syntax).
//!
//! Glasskube (github.com/glasskube/glasskube, `internal/dependency/graph/
//! graph.go`) parses a dependency's `version` with Masterminds/semver
//! v3.3.0's `NewConstraint` and checks it with `Constraints.Validate`
//! (`internal/semver/validate.go`). Sources of the cases:
//!
//! - github.com/glasskube/glasskube, `internal/semver/validate_test.go`.
//! - github.com/Masterminds/semver v3.3.0, `constraints_test.go`
//!   (TestParseConstraint, TestConstraintCheck, TestNewConstraint,
//!   TestConstraintsCheck, TestRewriteRange, TestConstraintsValidate,
//!   TestConstraintString, TestTextMarshalConstraints,
//!   TestTextUnmarshalConstraints, FuzzNewConstraint's seeds). Versions
//!   written short there (`1.4`, `0`) are written out in full here, since
//!   Pakket's versions are strict semver.
//! - `OBSERVED`: outcomes recorded by running Masterminds/semver v3.3.0's
//!   `NewConstraint` and `Validate` on edge cases.
//!
//! The expected outcomes are those libraries'; the tests are ours.

use pakket_engine::{Range, Version};

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn parse(range: &str) -> Range {
    Range::parse_glasskube(range).unwrap_or_else(|error| panic!("{range:?} should parse: {error}"))
}

fn assert_table(table: &[(&str, &str, bool)]) {
    for &(range, version, expected) in table {
        let parsed = parse(range);
        assert_eq!(
            parsed.contains(&v(version)),
            expected,
            "{range:?} contains {version}? (read as {parsed})"
        );
    }
}

fn assert_rejected(range: &str) {
    if let Ok(parsed) = Range::parse_glasskube(range) {
        panic!("{range:?} should be rejected, got {parsed}");
    }
}

/// The only range in Glasskube's package repository
/// (`packages/tracecat/*/package.yaml`, dependency on cloudnative-pg).
#[test]
fn tracecat_depends_on_cloudnative_pg_1_x_x() {
    let range = parse("1.x.x");
    assert_eq!(range.to_string(), ">=1.0.0 <2.0.0 !prerelease");
    assert!(range.contains(&v("1.25.1")));
    assert!(!range.contains(&v("2.0.0")));
    assert!(!range.contains(&v("1.26.0-rc1")));
}

/// glasskube/glasskube `internal/semver/validate_test.go`, every entry.
#[test]
fn glasskube_validate_table() {
    assert_table(&[
        (">=1.2.0 <1.3.0", "1.2.0", true),
        (">=1.2.0 <1.3.0", "1.2.0+0", true),
        (">=1.2.0 <1.3.0", "1.2.4", true),
        (">=1.2.0 <1.3.0", "1.2.9", true),
        (">=1.2.0 <1.3.0", "1.1.9", false),
        (">=1.2.0 <1.3.0", "1.2.0-rc.1", false),
        (">=1.2.0 <1.3.0", "1.3.0-alpha.1", false),
        (">=1.2.0 <1.3.0", "1.3.0", false),
        ("~1.2.0", "1.2.0", true),
        ("~1.2.0", "1.2.0+0", true),
        ("~1.2.0", "1.2.4", true),
        ("~1.2.0", "1.2.9", true),
        ("~1.2.0", "1.1.9", false),
        ("~1.2.0", "1.2.0-rc.1", false),
        ("~1.2.0", "1.3.0-alpha.1", false),
        ("~1.2.0", "1.3.0", false),
        ("~1.2", "1.2.0", true),
        ("~1.2", "1.2.0+0", true),
        ("~1.2", "1.2.4", true),
        ("~1.2", "1.2.9", true),
        ("~1.2", "1.1.9", false),
        ("~1.2", "1.2.0-rc.1", false),
        ("~1.2", "1.3.0-alpha.1", false),
        ("~1.2", "1.3.0", false),
        ("1.2.x", "1.2.0", true),
        ("1.2.x", "1.2.0+0", true),
        ("1.2.x", "1.2.4", true),
        ("1.2.x", "1.2.9", true),
        ("1.2.x", "1.1.9", false),
        ("1.2.x", "1.2.0-rc.1", false),
        ("1.2.x", "1.3.0-alpha.1", false),
        ("1.2.x", "1.3.0", false),
        ("^1", "1.0.0", true),
        ("^1", "1.3.5", true),
        ("^1", "1.7.9+1", true),
        ("^1", "1.0.0-rc.1", false),
        ("^1", "2.0.0-rc.1", false),
        ("^1", "2.0.0", false),
        ("1.x", "1.0.0", true),
        ("1.x", "1.3.5", true),
        ("1.x", "1.7.9+1", true),
        ("1.x", "1.0.0-rc.1", false),
        ("1.x", "2.0.0-rc.1", false),
        ("1.x", "2.0.0", false),
        (">= 1.0.0-alpha.1", "1.0.0-alpha.1", true),
        (">= 1.0.0-alpha.1", "1.0.0-beta.0", true),
        (">= 1.0.0-alpha.1", "1.0.0-rc.0", true),
        (">= 1.0.0-alpha.1", "1.0.0+0", true),
        (">= 1.0.0-alpha.1", "3.0.0", true),
        (">= 1.0.0-alpha.1", "1.0.0-alpha.0", false),
        (">= 1.0.0+3", "1.0.0+3", true),
        (">= 1.0.0+3", "1.0.0+2", true),
    ]);
}

/// Masterminds TestParseConstraint: what parses, and the version and
/// operator each comparator gets.
#[test]
fn masterminds_parse_constraint() {
    let same = [
        (">= 1.2", ">=1.2.0"),
        ("1.0", "~1.0.0"),
        ("<= 1.2", "<=1.2.x"),
        ("=< 1.2", "<=1.2.x"),
        ("=> 1.2", ">=1.2.0"),
        ("v1.2", "~1.2.0"),
        ("=1.5", "~1.5.0"),
        ("> 1.3", ">=1.4.0"),
        ("< 1.4.1", "<1.4.1"),
        ("< 40.50.10", "<40.50.10"),
    ];
    for (a, b) in same {
        assert_eq!(parse(a), parse(b), "{a:?} should mean {b:?}");
    }
    assert_rejected("foo");
}

/// Masterminds TestConstraintCheck, every row but `""` (which
/// `NewConstraint`, and so Glasskube, rejects; see `masterminds_new_constraint`).
#[test]
fn masterminds_constraint_check() {
    assert_table(&[
        ("=2.0.0", "1.2.3", false),
        ("=2.0.0", "2.0.0", true),
        ("=2.0", "1.2.3", false),
        ("=2.0", "2.0.0", true),
        ("=2.0", "2.0.1", true),
        ("4.1", "4.1.0", true),
        ("!=4.1.0", "4.1.0", false),
        ("!=4.1.0", "4.1.1", true),
        ("!=4.1", "4.1.0", false),
        ("!=4.1", "4.1.1", false),
        ("!=4.1", "5.1.0-alpha.1", false),
        ("!=4.1", "5.1.0", true),
        ("<11", "0.1.0", true),
        ("<11", "11.1.0", false),
        ("<1.1", "0.1.0", true),
        ("<1.1", "1.1.0", false),
        ("<1.1", "1.1.1", false),
        ("<=11", "1.2.3", true),
        ("<=11", "12.2.3", false),
        ("<=11", "11.2.3", true),
        ("<=1.1", "1.2.3", false),
        ("<=1.1", "0.1.0", true),
        ("<=1.1", "1.1.0", true),
        ("<=1.1", "1.1.1", true),
        (">1.1", "4.1.0", true),
        (">1.1", "1.1.0", false),
        (">0", "0.0.0", false),
        (">0", "1.0.0", true),
        (">0", "0.0.1-alpha", false),
        (">0.0", "0.0.1-alpha", false),
        (">0-0", "0.0.1-alpha", false),
        (">0.0-0", "0.0.1-alpha", false),
        (">0", "0.0.0-alpha", false),
        (">0-0", "0.0.0-alpha", false),
        (">0.0.0-0", "0.0.0-alpha", true),
        (">1.2.3-alpha.1", "1.2.3-alpha.2", true),
        (">1.2.3-alpha.1", "1.3.3-alpha.2", true),
        (">11", "11.1.0", false),
        (">11.1", "11.1.0", false),
        (">11.1", "11.1.1", false),
        (">11.1", "11.2.1", true),
        (">=11", "11.1.2", true),
        (">=11.1", "11.1.2", true),
        (">=11.1", "11.0.2", false),
        (">=1.1", "4.1.0", true),
        (">=1.1", "1.1.0", true),
        (">=1.1", "0.0.9", false),
        (">=0", "0.0.1-alpha", false),
        (">=0.0", "0.0.1-alpha", false),
        (">=0-0", "0.0.1-alpha", true),
        (">=0.0-0", "0.0.1-alpha", true),
        (">=0", "0.0.0-alpha", false),
        (">=0-0", "0.0.0-alpha", true),
        (">=0.0.0-0", "0.0.0-alpha", true),
        (">=0.0.0-0", "1.2.3", true),
        (">=0.0.0-0", "3.4.5-beta.1", true),
        ("<0", "0.0.0-alpha", false),
        ("<0-z", "0.0.0-alpha", true),
        (">=0", "0.0.0", true),
        ("=0", "1.0.0", false),
        ("*", "1.0.0", true),
        ("*", "4.5.6", true),
        ("*", "1.2.3-alpha.1", false),
        ("*-0", "1.2.3-alpha.1", true),
        ("2.*", "1.0.0", false),
        ("2.*", "3.4.5", false),
        ("2.*", "2.1.1", true),
        ("2.1.*", "2.1.1", true),
        ("2.1.*", "2.2.1", false),
        ("2", "1.0.0", false),
        ("2", "3.4.5", false),
        ("2", "2.1.1", true),
        ("2.1", "2.1.1", true),
        ("2.1", "2.2.1", false),
        ("~1.2.3", "1.2.4", true),
        ("~1.2.3", "1.3.4", false),
        ("~1.2", "1.2.4", true),
        ("~1.2", "1.3.4", false),
        ("~1", "1.2.4", true),
        ("~1", "2.3.4", false),
        ("~0.2.3", "0.2.5", true),
        ("~0.2.3", "0.3.5", false),
        ("~1.2.3-beta.2", "1.2.3-beta.4", true),
        // Unlike npm, a pre-release comparator admits pre-releases of later
        // patch versions too.
        ("~1.2.3-beta.2", "1.2.4-beta.2", true),
        ("~1.2.3-beta.2", "1.3.4-beta.2", false),
        ("^1.2.3", "1.8.9", true),
        ("^1.2.3", "2.8.9", false),
        ("^1.2.3", "1.2.1", false),
        ("^1.1.0", "2.1.0", false),
        ("^1.2.0", "2.2.1", false),
        ("^1.2.0", "1.2.1-alpha.1", false),
        ("^1.2.0-alpha.0", "1.2.1-alpha.1", true),
        ("^1.2.0-alpha.0", "1.2.1-alpha.0", true),
        ("^1.2.0-alpha.2", "1.2.0-alpha.1", false),
        ("^1.2", "1.8.9", true),
        ("^1.2", "2.8.9", false),
        ("^1", "1.8.9", true),
        ("^1", "2.8.9", false),
        ("^0.2.3", "0.2.5", true),
        ("^0.2.3", "0.5.6", false),
        ("^0.2", "0.2.5", true),
        ("^0.2", "0.5.6", false),
        ("^0.0.3", "0.0.3", true),
        ("^0.0.3", "0.0.4", false),
        ("^0.0", "0.0.3", true),
        ("^0.0", "0.1.4", false),
        ("^0.0", "1.0.4", false),
        ("^0", "0.2.3", true),
        ("^0", "1.1.4", false),
        ("^0.2.3-beta.2", "0.2.3-beta.4", true),
        ("^0.2.3-beta.2", "0.2.4-beta.2", true),
        ("^0.2.3-beta.2", "0.3.4-beta.2", false),
        ("^0.2.3-beta.2", "0.2.3-beta.2", true),
    ]);
}

/// Masterminds TestNewConstraint (what parses and what does not), plus
/// `""`, which `NewConstraint` rejects (its `parseConstraint` alone would
/// read it as `*`; Glasskube skips empty versions before parsing).
#[test]
fn masterminds_new_constraint() {
    for range in [
        ">= 1.1",
        ">40.50.60, < 50.70",
        "2.0",
        "v2.3.5-20161202202307-sha.e8fc5e5",
        ">= 1.2.3 < 2.0",
        ">= 1.2.3 < 2.0 || => 3.0 < 4",
        ">= 1.2.3, < 2.0",
        ">= 1.2.3, < 2.0 || => 3.0, < 4",
        "3 - 4 || => 3.0, < 4",
        "12.3.34 ~1.2.3",
        "1.0.0 - 2.0.0, <=2.0.0",
    ] {
        parse(range);
    }
    for range in [
        ">= bar",
        "BAR >= 1.2.3",
        "12.3.4.1234",
        "12.23.4.1234",
        "12.3.34.1234",
        "12.3.34~ 1.2.3",
        "",
    ] {
        assert_rejected(range);
    }
}

/// Masterminds TestConstraintsCheck, every row but three `!=4.1-alpha`
/// rows: that comparator leaves out `4.1.z-alpha` for every `z`, which no
/// finite list of intervals holds, so Pakket rejects it (see
/// `unrepresentable_input_is_rejected`).
#[test]
fn masterminds_constraints_check() {
    assert_table(&[
        ("*", "1.2.3", true),
        ("~0.0.0", "1.2.3", true),
        ("0.x.x", "1.2.3", false),
        ("0.0.x", "1.2.3", false),
        ("0.0.0", "1.2.3", false),
        ("^0.0.0", "1.2.3", false),
        ("= 2.0", "1.2.3", false),
        ("= 2.0", "2.0.0", true),
        ("4.1", "4.1.0", true),
        ("4.1.x", "4.1.3", true),
        ("1.x", "1.4.0", true),
        ("!=4.1", "4.1.0", false),
        ("!=4.1", "5.1.0", true),
        ("!=4.x", "5.1.0", true),
        ("!=4.x", "4.1.0", false),
        ("!=4.1.x", "4.2.0", true),
        ("!=4.2.x", "4.2.3", false),
        (">1.1", "4.1.0", true),
        (">1.1", "1.1.0", false),
        ("<1.1", "0.1.0", true),
        ("<1.1", "1.1.0", false),
        ("<1.1", "1.1.1", false),
        ("<1.x", "1.1.1", false),
        ("<1.x", "0.1.1", true),
        ("<1.x", "2.0.0", false),
        ("<1.1.x", "1.2.1", false),
        ("<1.1.x", "1.1.500", false),
        ("<1.1.x", "1.0.500", true),
        ("<1.2.x", "1.1.1", true),
        (">=1.1", "4.1.0", true),
        (">=1.1", "4.1.0-beta", false),
        (">=1.1", "1.1.0", true),
        (">=1.1", "0.0.9", false),
        ("<=1.1", "0.1.0", true),
        ("<=1.1", "0.1.0-alpha", false),
        ("<=1.1-a", "0.1.0-alpha", true),
        ("<=1.1", "1.1.0", true),
        ("<=1.x", "1.1.0", true),
        ("<=2.x", "3.0.0", false),
        ("<=1.1", "1.1.1", true),
        ("<=1.1.x", "1.2.500", false),
        ("<=4.5", "3.4.0", true),
        ("<=4.5", "3.7.0", true),
        ("<=4.5", "4.6.3", false),
        (">1.1, <2", "1.1.1", false),
        (">1.1, <2", "1.2.1", true),
        (">1.1, <3", "4.3.2", false),
        (">=1.1, <2, !=1.2.3", "1.2.3", false),
        (">1.1 <2", "1.1.1", false),
        (">1.1 <2", "1.2.1", true),
        (">1.1    <3", "4.3.2", false),
        (">=1.1    <2    !=1.2.3", "1.2.3", false),
        (">=1.1, <2, !=1.2.3 || > 3", "4.1.2", true),
        (">=1.1, <2, !=1.2.3 || > 3", "3.1.2", false),
        (">=1.1, <2, !=1.2.3 || >= 3", "3.0.0", true),
        (">=1.1, <2, !=1.2.3 || > 3", "3.0.0", false),
        (">=1.1, <2, !=1.2.3 || > 3", "1.2.3", false),
        (">=1.1 <2 !=1.2.3", "1.2.3", false),
        (">=1.1 <2 !=1.2.3 || > 3", "4.1.2", true),
        (">=1.1 <2 !=1.2.3 || > 3", "3.1.2", false),
        (">=1.1 <2 !=1.2.3 || >= 3", "3.0.0", true),
        (">=1.1 <2 !=1.2.3 || > 3", "3.0.0", false),
        (">=1.1 <2 !=1.2.3 || > 3", "1.2.3", false),
        ("> 1.1, <     2", "1.1.1", false),
        (">   1.1, <2", "1.2.1", true),
        (">1.1, <  3", "4.3.2", false),
        (">= 1.1, <     2, !=1.2.3", "1.2.3", false),
        ("> 1.1 < 2", "1.1.1", false),
        (">1.1 < 2", "1.2.1", true),
        ("> 1.1    <3", "4.3.2", false),
        (">=1.1    < 2    != 1.2.3", "1.2.3", false),
        (">= 1.1, <2, !=1.2.3 || > 3", "4.1.2", true),
        (">= 1.1, <2, != 1.2.3 || > 3", "3.1.2", false),
        (">= 1.1, <2, != 1.2.3 || >= 3", "3.0.0", true),
        (">= 1.1, <2, !=1.2.3 || > 3", "3.0.0", false),
        (">= 1.1, <2, !=1.2.3 || > 3", "1.2.3", false),
        (">= 1.1 <2 != 1.2.3", "1.2.3", false),
        (">= 1.1 <2 != 1.2.3 || > 3", "4.1.2", true),
        (">= 1.1 <2 != 1.2.3 || > 3", "3.1.2", false),
        (">= 1.1 <2 != 1.2.3 || >= 3", "3.0.0", true),
        (">= 1.1 < 2 !=1.2.3 || > 3", "3.0.0", false),
        (">=1.1 < 2 !=1.2.3 || > 3", "1.2.3", false),
        ("1.1 - 2", "1.1.1", true),
        ("1.5.0 - 4.5", "3.7.0", true),
        ("1.1-3", "4.3.2", false),
        ("^1.1", "1.1.1", true),
        ("^1.1", "4.3.2", false),
        ("^1.x", "1.1.1", true),
        ("^2.x", "1.1.1", false),
        ("^1.x", "2.1.1", false),
        ("^1.x", "1.1.1-beta1", false),
        ("^1.1.2-alpha", "1.2.1-beta1", true),
        ("^1.2.x-alpha", "1.1.1-beta1", false),
        ("^0.0.1", "0.0.1", true),
        ("^0.0.1", "0.3.1", false),
        ("~*", "2.1.1", true),
        ("~1", "2.1.1", false),
        ("~1", "1.3.5", true),
        ("~1", "1.4.0", true),
        ("~1.x", "2.1.1", false),
        ("~1.x", "1.3.5", true),
        ("~1.x", "1.4.0", true),
        ("~1.1", "1.1.1", true),
        ("~1.1", "1.1.1-alpha", false),
        ("~1.1-alpha", "1.1.1-beta", true),
        ("~1.1.1-beta", "1.1.1-alpha", false),
        ("~1.1.1-beta", "1.1.1", true),
        ("~1.2.3", "1.2.5", true),
        ("~1.2.3", "1.2.2", false),
        ("~1.2.3", "1.3.2", false),
        ("~1.1", "1.2.3", false),
        ("~1.3", "2.4.5", false),
        // Ranges work ANDed with other constraints.
        ("1.0.0 - 2.0.0 <=2.0.0", "1.5.0", true),
        ("1.0.0 - 2.0.0, <=2.0.0", "1.5.0", true),
    ]);
}

/// Masterminds TestRewriteRange: hyphen ranges mean `>= low, <= high`.
#[test]
fn masterminds_rewrite_range() {
    let rewrites = [
        ("2 - 3", ">= 2, <= 3"),
        ("2 - 3, 2 - 3", ">= 2, <= 3 ,>= 2, <= 3"),
        ("2 - 3, 4.0.0 - 5.1", ">= 2, <= 3 ,>= 4.0.0, <= 5.1"),
        ("2 - 3 4.0.0 - 5.1", ">= 2, <= 3 >= 4.0.0, <= 5.1"),
        ("1.0.0 - 2.0.0 <=2.0.0", ">= 1.0.0, <= 2.0.0 <=2.0.0"),
    ];
    for (hyphen, rewritten) in rewrites {
        assert_eq!(
            parse(hyphen),
            parse(rewritten),
            "{hyphen:?} should mean {rewritten:?}"
        );
    }
}

/// Masterminds TestConstraintsValidate, every row (the first table, and the
/// version/constraint pairs of the second, which all fail).
#[test]
fn masterminds_constraints_validate() {
    assert_table(&[
        ("*", "1.2.3", true),
        ("~0.0.0", "1.2.3", true),
        ("= 2.0", "1.2.3", false),
        ("= 2.0", "2.0.0", true),
        ("4.1", "4.1.0", true),
        ("4.1.x", "4.1.3", true),
        ("1.x", "1.4.0", true),
        ("!=4.1", "4.1.0", false),
        ("!=4.1", "5.1.0", true),
        ("!=4.x", "5.1.0", true),
        ("!=4.x", "4.1.0", false),
        ("!=4.1.x", "4.2.0", true),
        ("!=4.2.x", "4.2.3", false),
        (">1.1", "4.1.0", true),
        (">1.1", "1.1.0", false),
        ("<1.1", "0.1.0", true),
        ("<1.1", "1.1.0", false),
        ("<1.1", "1.1.1", false),
        ("<1.x", "1.1.1", false),
        ("<2.x", "1.1.1", true),
        ("<1.x", "2.1.1", false),
        ("<1.1.x", "1.2.1", false),
        ("<1.1.x", "1.1.500", false),
        ("<1.2.x", "1.1.1", true),
        (">=1.1", "4.1.0", true),
        (">=1.1", "1.1.0", true),
        (">=1.1", "0.0.9", false),
        ("<=1.1", "0.1.0", true),
        ("<=1.1", "1.1.0", true),
        ("<=1.x", "1.1.0", true),
        ("<=2.x", "3.1.0", false),
        ("<=1.1", "1.1.1", true),
        ("<=1.1.x", "1.2.500", false),
        (">1.1, <2", "1.1.1", false),
        (">1.1, <2", "1.2.1", true),
        (">1.1, <3", "4.3.2", false),
        (">=1.1, <2, !=1.2.3", "1.2.3", false),
        (">=1.1, <2, !=1.2.3 || > 3", "3.1.2", false),
        (">=1.1, <2, !=1.2.3 || > 3", "4.1.2", true),
        (">=1.1, <2, !=1.2.3 || >= 3", "3.0.0", true),
        (">=1.1, <2, !=1.2.3 || > 3", "3.0.0", false),
        (">=1.1, <2, !=1.2.3 || > 3", "1.2.3", false),
        ("1.1 - 2", "1.1.1", true),
        ("1.1-3", "4.3.2", false),
        ("^1.1", "1.1.1", true),
        ("^1.1", "1.1.1-alpha", false),
        ("^1.1.1-alpha", "1.1.1-beta", true),
        ("^1.1.1-beta", "1.1.1-alpha", false),
        ("^1.1", "4.3.2", false),
        ("^1.x", "1.1.1", true),
        ("^2.x", "1.1.1", false),
        ("^1.x", "2.1.1", false),
        ("^0.0.1", "0.1.3", false),
        ("^0.0.1", "0.0.1", true),
        ("~*", "2.1.1", true),
        ("~1", "2.1.1", false),
        ("~1", "1.3.5", true),
        ("~1", "1.3.5-beta", false),
        ("~1.x", "2.1.1", false),
        ("~1.x", "1.3.5", true),
        ("~1.x", "1.3.5-beta", false),
        ("~1.3.6-alpha", "1.3.5-beta", false),
        ("~1.3.5-alpha", "1.3.5-beta", true),
        ("~1.3.5-beta", "1.3.5-alpha", false),
        ("~1.x", "1.4.0", true),
        ("~1.1", "1.1.1", true),
        ("~1.2.3", "1.2.5", true),
        ("~1.2.3", "1.2.2", false),
        ("~1.2.3", "1.3.2", false),
        ("~1.1", "1.2.3", false),
        ("~1.3", "2.4.5", false),
        ("!= 1.2.5, ^2, <= 1.1.x", "1.2.3", false),
        ("2.x", "1.2.3", false),
        ("2", "1.2.3", false),
        ("!=4.1", "4.1.0", false),
        ("!=4.x", "4.1.0", false),
        ("!=4.2.x", "4.2.3", false),
        ("<1.x", "2.1.1", false),
        ("<1.1.x", "1.2.1", false),
        ("<=2.x", "3.1.0", false),
        ("<=1.1", "1.2.1", false),
        ("1.1 - 3", "4.3.2", false),
        ("^1.12.7", "1.6.6", false),
        ("^0.2", "0.3.0", false),
        ("^0.2", "0.1.1", false),
        ("^0.0.3", "0.1.1", false),
        ("^0.0.3", "0.0.4", false),
        ("^0.0.3", "0.0.2", false),
        ("~1", "2.1.2", false),
        ("> 1.2.3", "1.2.3-beta.1", false),
    ]);
}

/// Masterminds TestConstraintString and TestText(Un)MarshalConstraints:
/// each input means what Masterminds prints for it.
#[test]
fn masterminds_string_forms() {
    let printed = [
        ("*", "*"),
        (">= 1.2.3", ">=1.2.3"),
        (
            "2.x,   >=1.2.3 || >4.5.6, < 5.7",
            "2.x >=1.2.3 || >4.5.6 <5.7",
        ),
        (
            "2.x,   >=1.2.3 || >4.5.6, < 5.7 || >40.50.60, < 50.70",
            "2.x >=1.2.3 || >4.5.6 <5.7 || >40.50.60 <50.70",
        ),
        ("1.2", "1.2"),
        ("1, <=1.2.3", "1 <=1.2.3"),
        (">1, <=1.2.3", ">1 <=1.2.3"),
        ("> 1 , <=1.2.3", ">1 <=1.2.3"),
        ("> 1 <=1.2.3", ">1 <=1.2.3"),
    ];
    for (input, output) in printed {
        assert_eq!(
            parse(input),
            parse(output),
            "{input:?} should mean {output:?}"
        );
    }
}

/// FuzzNewConstraint's seed inputs: accepted or rejected as Masterminds
/// v3.3.0 does.
#[test]
fn masterminds_fuzz_seeds() {
    for range in [
        "v1.2.3",
        "1",
        "1.2.3-beta.1",
        "1.2.3+foo",
        "2.3.4-alpha.1+bar",
        "*",
        "!=1.2.3",
        "^4.5",
        "1.0.0 - 2",
        ">= 1",
        "~9.8.7",
        "<= 12.13.14",
        "987654321.123456789.654123789",
        "1.x",
        "2.3.x",
        "9.2-beta.0",
    ] {
        parse(range);
    }
    for range in [" ", "......", "lorem ipsum", "1.2.3.4.5.6"] {
        assert_rejected(range);
    }
}

/// The versions the `OBSERVED` bit strings refer to, in order.
const VERSIONS: [&str; 22] = [
    "0.0.0",
    "0.0.1",
    "0.1.0",
    "0.9.9",
    "1.0.0-0",
    "1.0.0-alpha",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "1.2.0-rc.1",
    "1.2.0",
    "1.2.3",
    "1.2.4-0",
    "1.2.4",
    "1.3.0",
    "1.9.9",
    "2.0.0-0",
    "2.0.0-rc.1",
    "2.0.0",
    "2.1.0",
    "3.0.0",
    "10.0.0",
];

/// What Masterminds/semver v3.3.0 (`NewConstraint`, then `Validate`) does
/// with each range: which of `VERSIONS` it holds, or `None` if rejected.
const OBSERVED: &[(&str, Option<&str>)] = &[
    ("1.x.x", Some("0000001110110111000000")),
    ("^1.2", Some("0000000000110111000000")),
    ("~1.2.3", Some("0000000000010100000000")),
    ("^0.0", Some("1100000000000000000000")),
    ("^0", Some("1111000000000000000000")),
    // Masterminds' comment says `^*` is any version; its code holds 0.0.0 only.
    ("^*", Some("1000000000000000000000")),
    ("~*", Some("1111001110110111001111")),
    ("~0", Some("1111000000000000000000")),
    ("~0.0.0", Some("1111001110110111001111")),
    ("*", Some("1111001110110111001111")),
    ("x", Some("1111001110110111001111")),
    ("X.X.X", Some("1111001110110111001111")),
    ("<=*", Some("1100000000000000000000")),
    (">*", Some("0111001110110111001111")),
    ("!=*", Some("0111001110110111001111")),
    (">=*-0", Some("1111111111111111111111")),
    ("*-0", Some("1111111111111111111111")),
    ("1.2 - 1.9", Some("0000000000110111000000")),
    // The `<= 2.0.0` half turns the pre-releases away.
    ("1.0.0-alpha - 2.0.0", Some("0000001110110111001000")),
    ("1 - 2 || 10", Some("0000001110110111001101")),
    (">=1.0.0-0 <2.0.0-0", Some("0000111111111111000000")),
    (">= 1.2, < 2", Some("0000000000110111000000")),
    (">1.2", Some("0000000000000011001111")),
    ("<=1.2", Some("1111001110110100000000")),
    (">1", Some("0000000000000000001111")),
    ("<=1", Some("1111001110110111000000")),
    ("<1.x", Some("1111000000000000000000")),
    (">=1.x", Some("0000001110110111001111")),
    ("!=1.2.x", Some("1111001110000011001111")),
    ("!=1.x", Some("1111000000000000001111")),
    ("!=1.2.3", Some("1111001110100111001111")),
    ("!=1.2.0-rc.1", Some("1111111110111111111111")),
    ("1.2.0-rc.1", Some("0000000001000000000000")),
    ("~1.2.0-rc.1", Some("0000000001111100000000")),
    ("^1.2.0-rc.1", Some("0000000001111111000000")),
    (">=1.2.0-rc.1 <1.3.0", Some("0000000000110100000000")),
    ("=> 1.2, =< 2.0", Some("0000000000110111001000")),
    ("~> 1.2", Some("0000000000110100000000")),
    ("v1.2.3", Some("0000000000010000000000")),
    ("01.2.3", Some("0000000000010000000000")),
    ("1.2.3+build", Some("0000000000010000000000")),
    ("2 - 3 4.0.0 - 5.1", Some("0000000000000000000000")),
    ("1.0.0 - 2.0.0 <=2.0.0", Some("0000001110110111001000")),
    // Masterminds' rewrite swallows the space before the hyphen range.
    (">=1.0.0 1.2 - 1.4", None),
    ("", None),
    ("1.0.0 ||", None),
    ("|| 1.0.0", None),
    ("1.2.3.4", None),
    ("1.0.0-", None),
    (">= bar", None),
    ("1.0.0 - 2.0.0 - 3.0.0", None),
    (">=1.0.0||1 - 2", None),
];

#[test]
fn observed_masterminds_outcomes() {
    for &(range, expected) in OBSERVED {
        let Some(bits) = expected else {
            assert_rejected(range);
            continue;
        };
        let parsed = parse(range);
        let held: String = VERSIONS
            .iter()
            .map(|version| {
                if parsed.contains(&v(version)) {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(held, bits, "{range:?} (read as {parsed})");
    }
}

/// Input Masterminds accepts but Pakket rejects, because no list of
/// intervals holds its meaning or because Masterminds ignores part of it:
/// `!=` on a partial version with a pre-release leaves out one pre-release
/// in every patch version; a number after a wildcard is ignored (`1.x.3`
/// is `1.x`); a hyphen range glued to `||` reads `2||3` as one version.
#[test]
fn unrepresentable_input_is_rejected() {
    for range in ["!=4.1-alpha", "!=1.2.x-beta", "1.x.3", "*.1", "1 - 2||3"] {
        assert_rejected(range);
    }
}
