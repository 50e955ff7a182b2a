//! Golden cases for [`Range::parse`] (OLM syntax) from blang/semver v4.0.0,
//! the library OLM reads `versionRange` and `skipRange` with.
//!
//! - Ported tables: github.com/blang/semver, file `v4/range_test.go`
//!   (TestParseRange, TestParseComparator, TestSplitAndTrim,
//!   TestSplitComparatorVersion, TestBuildVersionRange, TestSplitORParts,
//!   TestExpandWildcardVersion, TestVersionRangeToRange, TestRangeAND,
//!   TestRangeOR, TestMustParseRange*, the benchmark ranges), and the
//!   examples in `ParseRange`'s doc comment in `v4/range.go`.
//! - `OBSERVED`: outcomes recorded by running blang/semver v4.0.0's
//!   `ParseRange` on edge cases (its quirks included), so this file pins
//!   what OLM itself does.
//!
//! The expected outcomes are blang's; the tests are ours.

use pakket_engine::{Range, Version};

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn parse(range: &str) -> Range {
    Range::parse(range).unwrap_or_else(|error| panic!("{range:?} should parse: {error}"))
}

fn assert_cases(range: &str, cases: &[(&str, bool)]) {
    let parsed = parse(range);
    for &(version, expected) in cases {
        assert_eq!(
            parsed.contains(&v(version)),
            expected,
            "{range:?} contains {version}? (read as {parsed})"
        );
    }
}

fn assert_same(a: &str, b: &str) {
    assert_eq!(parse(a), parse(b), "{a:?} should mean {b:?}");
}

fn assert_rejected(range: &str) {
    if let Ok(parsed) = Range::parse(range) {
        panic!("{range:?} should be rejected, got {parsed}");
    }
}

/// TestParseRange, every row.
#[test]
fn parse_range_table() {
    let table: &[(&str, &[(&str, bool)])] = &[
        // Simple expressions
        (
            ">1.2.3",
            &[("1.2.2", false), ("1.2.3", false), ("1.2.4", true)],
        ),
        (
            ">=1.2.3",
            &[("1.2.3", true), ("1.2.4", true), ("1.2.2", false)],
        ),
        (
            "<1.2.3",
            &[("1.2.2", true), ("1.2.3", false), ("1.2.4", false)],
        ),
        (
            "<=1.2.3",
            &[("1.2.2", true), ("1.2.3", true), ("1.2.4", false)],
        ),
        (
            "1.2.3",
            &[("1.2.2", false), ("1.2.3", true), ("1.2.4", false)],
        ),
        (
            "=1.2.3",
            &[("1.2.2", false), ("1.2.3", true), ("1.2.4", false)],
        ),
        (
            "==1.2.3",
            &[("1.2.2", false), ("1.2.3", true), ("1.2.4", false)],
        ),
        (
            "!=1.2.3",
            &[("1.2.2", true), ("1.2.3", false), ("1.2.4", true)],
        ),
        (
            "!1.2.3",
            &[("1.2.2", true), ("1.2.3", false), ("1.2.4", true)],
        ),
        // AND expressions
        (
            ">1.2.2 <1.2.4",
            &[("1.2.2", false), ("1.2.3", true), ("1.2.4", false)],
        ),
        (
            "<1.2.2 <1.2.4",
            &[
                ("1.2.1", true),
                ("1.2.2", false),
                ("1.2.3", false),
                ("1.2.4", false),
            ],
        ),
        (
            ">1.2.2 <1.2.5 !=1.2.4",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", false),
                ("1.2.5", false),
            ],
        ),
        (
            ">1.2.2 <1.2.5 !1.2.4",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", false),
                ("1.2.5", false),
            ],
        ),
        // OR expressions
        (
            ">1.2.2 || <1.2.4",
            &[("1.2.2", true), ("1.2.3", true), ("1.2.4", true)],
        ),
        (
            "<1.2.2 || >1.2.4",
            &[("1.2.2", false), ("1.2.3", false), ("1.2.4", false)],
        ),
        // Wildcard expressions
        (
            ">1.x",
            &[
                ("0.1.9", false),
                ("1.2.6", false),
                ("1.9.0", false),
                ("2.0.0", true),
            ],
        ),
        (
            ">1.2.x",
            &[("1.1.9", false), ("1.2.6", false), ("1.3.0", true)],
        ),
        // Combined expressions
        (
            ">1.2.2 <1.2.4 || >=2.0.0",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", false),
                ("2.0.0", true),
                ("2.0.1", true),
            ],
        ),
        (
            "1.x || >=2.0.x <2.2.x",
            &[
                ("0.9.2", false),
                ("1.2.2", true),
                ("2.0.0", true),
                ("2.1.8", true),
                ("2.2.0", false),
            ],
        ),
        (
            ">1.2.2 <1.2.4 || >=2.0.0 <3.0.0",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", false),
                ("2.0.0", true),
                ("2.0.1", true),
                ("2.9.9", true),
                ("3.0.0", false),
            ],
        ),
    ];
    for (range, cases) in table {
        assert_cases(range, cases);
    }
}

/// TestParseRange's "Simple Expression errors". blang rejects all but
/// `!1.2.3` (listed there, but its test never checks the error, and
/// blang reads it as `!=1.2.3`; see `parse_range_table`).
#[test]
fn parse_range_errors() {
    for range in [">>1.2.3", "1.0", "string", "", "fo.ob.ar.x"] {
        assert_rejected(range);
    }
}

/// TestParseComparator and TestBuildVersionRange: every operator on 1.2.3,
/// checked against 1.2.2, 1.2.3 and 1.2.4 as blang's testEQ, testGT, ...
/// do; the invalid operators and the invalid version are rejected.
#[test]
fn comparators() {
    let below_at_above: &[(&str, [bool; 3])] = &[
        (">", [false, false, true]),
        (">=", [false, true, true]),
        ("<", [true, false, false]),
        ("<=", [true, true, false]),
        ("", [false, true, false]),
        ("=", [false, true, false]),
        ("==", [false, true, false]),
        ("!=", [true, false, true]),
        ("!", [true, false, true]),
    ];
    for (op, [below, at, above]) in below_at_above {
        let range = format!("{op}1.2.3");
        assert_cases(
            &range,
            &[("1.2.2", *below), ("1.2.3", *at), ("1.2.4", *above)],
        );
    }
    for op in ["-", "<==", "<<", ">>"] {
        assert_rejected(&format!("{op}1.2.3"));
    }
    assert_rejected("=invalid");
}

/// TestSplitComparatorVersion: the same operators parse, and a comparator
/// with no version does not.
#[test]
fn split_comparator_version() {
    for range in [
        ">1.2.3", ">=1.2.3", "<1.2.3", "<=1.2.3", "1.2.3", "=1.2.3", "==1.2.3", "!=1.2.3", "!1.2.3",
    ] {
        parse(range);
    }
    assert_rejected("error");
}

/// TestSplitAndTrim: extra spaces, including between operator and version,
/// change nothing.
#[test]
fn split_and_trim() {
    assert_same("1.2.3 1.2.3", "1.2.3");
    assert_same("     1.2.3     1.2.3     ", "1.2.3");
    assert_same("  >=   1.2.3   <=  1.2.3   ", ">=1.2.3 <=1.2.3");
    assert_same("1.2.3 || >=1.2.3 <1.2.3", "1.2.3");
    assert_same(
        "      1.2.3      ||     >=1.2.3     <1.2.3    ",
        "1.2.3 || >=1.2.3 <1.2.3",
    );
}

/// TestSplitORParts: `||` between groups, never first or last.
#[test]
fn split_or_parts() {
    let any = parse(">1.2.3 || <1.2.3 || =1.2.3");
    for version in ["0.0.0", "1.2.2", "1.2.3", "1.2.4", "9.0.0"] {
        assert!(any.contains(&v(version)), "{version}");
    }
    assert_same(">1.2.3 <1.2.3 || =1.2.3", "1.2.3");
    assert_rejected(">1.2.3 ||");
    assert_rejected("|| >1.2.3");
}

/// TestExpandWildcardVersion (and TestGetWildcardType,
/// TestCreateVersionFromWildcard through it), every row.
#[test]
fn expand_wildcard_version() {
    assert_rejected("foox");
    let expansions = [
        (">=1.2.x", ">=1.2.0"),
        ("<=1.2.x", "<1.3.0"),
        (">1.2.x", ">=1.3.0"),
        ("<1.2.x", "<1.2.0"),
        ("!=1.2.x", "<1.2.0 >=1.3.0"),
        (">=1.x", ">=1.0.0"),
        ("<=1.x", "<2.0.0"),
        (">1.x", ">=2.0.0"),
        ("<1.x", "<1.0.0"),
        ("!=1.x", "<1.0.0 >=2.0.0"),
        ("1.2.x", ">=1.2.0 <1.3.0"),
        ("1.x", ">=1.0.0 <2.0.0"),
    ];
    for (wildcard, expanded) in expansions {
        assert_same(wildcard, expanded);
    }
    // blang ANDs the two halves of a `!=` wildcard, so nothing matches it.
    assert!(parse("!=1.2.x").is_empty());
}

/// TestVersionRangeToRange, TestRangeAND, TestRangeOR, TestMustParseRange
/// and TestMustParseRange_panic.
#[test]
fn combinators() {
    assert_cases("<1.2.3", &[("1.2.2", true), ("1.2.3", false)]);
    assert_cases(
        ">1.2.1 <1.2.3",
        &[("1.2.1", false), ("1.2.3", false), ("1.2.2", true)],
    );
    assert_cases(
        "<1.2.1 || >1.2.3",
        &[("1.2.0", true), ("1.2.2", false), ("1.2.4", true)],
    );
    assert_cases(">1.2.2 <1.2.4 || >=2.0.0 <3.0.0", &[("1.2.3", true)]);
    assert_rejected("invalid version");
}

/// The ranges of blang's benchmarks and of `ParseRange`'s doc comment.
#[test]
fn documented_examples() {
    assert_cases(">1.0.0", &[("2.0.0", true)]);
    assert_cases(">=1.0.0 <2.0.0", &[("1.2.3", true)]);
    assert_cases(
        ">=1.0.0 <2.0.0 || >=3.0.1 <4.0.0 !=3.0.3 || >=5.0.0",
        &[
            ("5.0.1", true),
            ("3.0.3", false),
            ("3.0.2", true),
            ("2.5.0", false),
        ],
    );
    assert_cases(
        ">1.0.0 <2.0.0",
        &[
            ("1.1.1", true),
            ("1.8.7", true),
            ("1.0.0", false),
            ("2.0.0", false),
        ],
    );
    assert_cases(
        ">1.0.0 <3.0.0 !2.0.3-beta.2",
        &[
            ("2.0.3-beta.2", false),
            ("2.0.3-beta.1", true),
            ("2.5.0", true),
        ],
    );
    assert_cases(
        "<2.0.0 || >=3.0.0",
        &[
            ("1.9.0", true),
            ("3.1.0", true),
            ("2.0.0", false),
            ("2.9.9", false),
        ],
    );
    assert_cases(
        ">1.0.0 <2.0.0 || >3.0.0 !4.2.1",
        &[
            ("1.2.3", true),
            ("1.9.9", true),
            ("3.1.1", true),
            ("4.2.1", false),
            ("2.1.1", false),
        ],
    );
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

/// What blang/semver v4.0.0's `ParseRange` does with each range: which of
/// `VERSIONS` it holds (`1`), or `None` when it rejects the range.
const OBSERVED: &[(&str, Option<&str>)] = &[
    // blang reads `1.x.x` as a patch wildcard on 1.0: `>=1.0.0 <1.1.0`.
    ("1.x.x", Some("0000001100000000000000")),
    (">1.x.x", Some("0000000011111111111111")),
    ("<=1.x.x", Some("1111111100000000000000")),
    ("!=1.x", Some("0000000000000000000000")),
    ("!1.2.x", Some("0000000000000000000000")),
    // An `x` in a pre-release stays literal after >= and <.
    (">=1.0.0-fox", Some("0000001111111111111111")),
    ("<1.2.0-x", Some("1111111111000000000000")),
    ("1.0.0 || 2.0.0", Some("0000001000000000001000")),
    ("  >=  1.0.0   <  2.0.0  ", Some("0000001111111111110000")),
    (">1.0.0 <2.0.0 || >=3.0.0", Some("0000000111111111110011")),
    ("=1.2.3 || !=1.2.3", Some("1111111111111111111111")),
    (">=1.0.0-0 <2.0.0-0", Some("0000111111111111000000")),
    ("<=1.2.3 >=1.2.3", Some("0000000000010000000000")),
    (">2.0.0 <1.0.0", Some("0000000000000000000000")),
    (
        "!=1.2.3 !=1.2.4 >=1.2.0 <1.3.0",
        Some("0000000000101000000000"),
    ),
    (">= 1.2.x", Some("0000000000111111111111")),
    ("<= 1.2.x", Some("1111111111111100000000")),
    ("1.2.x || 2.x", Some("0000000000111100001100")),
    (">1.2.3-rc.1", Some("0000000000011111111111")),
    ("==1.0.0+build", Some("0000001000000000000000")),
    (">=1.2.0-rc.1 <1.2.4", Some("0000000001111000000000")),
    ("0.x", Some("1111110000000000000000")),
    (">0.x", Some("0000001111111111111111")),
    ("<1.0.0", Some("1111110000000000000000")),
    ("<=0.9.9 || >=10.0.0", Some("1111000000000000000001")),
    ("1.0.0||2.0.0", None),
    (">=1.0.0,<2.0.0", None),
    ("v1.0.0", None),
    ("~1.2.3", None),
    ("^1.2.3", None),
    ("*", None),
    ("x", None),
    ("1.X", None),
    ("1.2", None),
    (">= 1.0.0 ||", None),
    ("|| 1.0.0", None),
    ("=1.0.0-fox", None),
    (">1.0.0-fox", None),
    ("1.0.0 || || 2.0.0", None), // blang panics on this one when matching
    (">=1.0.0\t<2.0.0", None),
];

#[test]
fn observed_blang_outcomes() {
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

/// Input blang accepts by accident, with a meaning nobody writes on
/// purpose: a lone one-character token is dropped (`! 1.0.0` is
/// `1.0.0`), an unknown operator before a wildcard becomes `=` (`^1.x` is
/// `=1.0.0`), spaces inside an operator are removed, and `.x` inside a
/// pre-release is rewritten to `.0`. Pakket rejects them instead.
#[test]
fn accidental_blang_input_is_rejected() {
    for range in [
        "! 1.0.0",
        "1.0.0 >",
        "^1.x",
        "~1.2.x",
        "> =1.0.0",
        ">=1.0.0-a.x",
        "1 >=1.0.0",
    ] {
        assert_rejected(range);
    }
}
