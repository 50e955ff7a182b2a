//! Properties of [`Range`] over generated ranges (in both syntaxes, and
//! combined with `intersect` and `union`) and generated versions.

use pakket_engine::{Range, Version};
use proptest::prelude::*;
use proptest::sample::select;

/// Versions around the numbers the generated ranges use, with the
/// pre-releases that sit on interval edges (`-0`, `-alpha.0`) and at the
/// top of the number space.
fn arb_version() -> impl Strategy<Value = Version> {
    let number = prop_oneof![8 => 0u64..4, 1 => Just(u64::MAX)];
    let pre = select(vec![
        "", "", "", "-0", "-alpha", "-alpha.0", "-beta.1", "-rc.1", "-0.0", "-x", "-rc.x",
    ]);
    let build = select(vec!["", "", "+b", "+2"]);
    (number.clone(), number.clone(), number, pre, build).prop_map(
        |(major, minor, patch, pre, build)| {
            Version::parse(&format!("{major}.{minor}.{patch}{pre}{build}")).unwrap()
        },
    )
}

fn arb_versions() -> impl Strategy<Value = Vec<Version>> {
    prop::collection::vec(arb_version(), 48)
}

fn small() -> impl Strategy<Value = String> {
    prop_oneof![9 => (0u64..4).prop_map(|n| n.to_string()), 1 => Just(u64::MAX.to_string())]
}

/// A comparator in OLM (blang) syntax.
fn arb_blang_comparator() -> impl Strategy<Value = String> {
    let op = select(vec![
        "", "=", "==", "!=", "!", ">", ">=", "<", "<=", ">= ", "< ",
    ]);
    let pre = select(vec!["", "", "-0", "-alpha", "-alpha.0", "-beta.1", "-0.0"]);
    let full = (small(), small(), small(), pre, select(vec!["", "+b"]))
        .prop_map(|(a, b, c, pre, build)| format!("{a}.{b}.{c}{pre}{build}"));
    let wildcard =
        (0u64..4, 0u64..4, select(vec![0usize, 1, 2])).prop_map(|(a, b, shape)| match shape {
            0 => format!("{a}.x"),
            1 => format!("{a}.{b}.x"),
            _ => format!("{a}.x.x"),
        });
    let version = prop_oneof![4 => full, 1 => wildcard];
    prop_oneof![
        20 => (op, version).prop_map(|(op, version)| format!("{op}{version}")),
        1 => Just("!prerelease".to_owned()),
        1 => Just(">=\"1.0.0-rc.x\"".to_owned()),
    ]
}

/// A comparator in Glasskube (Masterminds) syntax.
fn arb_glasskube_comparator() -> impl Strategy<Value = String> {
    let op = select(vec![
        "", "=", "!=", ">", ">=", "<", "<=", "=>", "=<", "~", "~>", "^", ">= ", "^ ",
    ]);
    let part = prop_oneof![6 => small(), 1 => select(vec!["x", "X", "*"]).prop_map(str::to_owned)];
    let version = (
        select(vec!["", "", "", "v"]),
        prop::collection::vec(part, 1..=3),
        select(vec!["", "", "", "-0", "-alpha", "-beta.1", "-rc.x"]),
        select(vec!["", "+b"]),
    )
        .prop_map(|(v, mut parts, pre, build)| {
            // Masterminds ignores numbers after a wildcard; Pakket rejects them.
            if let Some(first) = parts
                .iter()
                .position(|part| ["x", "X", "*"].contains(&part.as_str()))
            {
                let wildcard = parts[first].clone();
                parts[first..].fill(wildcard);
            }
            format!("{v}{}{pre}{build}", parts.join("."))
        });
    (op, version.clone(), version, prop::bool::weighted(0.15)).prop_map(
        |(op, low, high, hyphen)| {
            if hyphen {
                format!("{low} - {high}")
            } else {
                format!("{op}{low}")
            }
        },
    )
}

fn join(groups: Vec<Vec<String>>, and: &'static str) -> String {
    let groups: Vec<String> = groups.into_iter().map(|group| group.join(and)).collect();
    groups.join(" || ")
}

fn arb_blang_range() -> impl Strategy<Value = Range> {
    prop::collection::vec(prop::collection::vec(arb_blang_comparator(), 1..4), 1..4)
        .prop_map(|groups| join(groups, " "))
        .prop_filter_map("parses as OLM syntax", |text| Range::parse(&text).ok())
}

fn arb_glasskube_range() -> impl Strategy<Value = Range> {
    let and = select(vec![" ", ", "]);
    (
        prop::collection::vec(
            prop::collection::vec(arb_glasskube_comparator(), 1..4),
            1..4,
        ),
        and,
    )
        .prop_map(|(groups, and)| join(groups, and))
        .prop_filter_map("parses as Glasskube syntax", |text| {
            Range::parse_glasskube(&text).ok()
        })
}

fn arb_simple_range() -> impl Strategy<Value = Range> {
    prop_oneof![arb_blang_range(), arb_glasskube_range()]
}

/// Ranges from either syntax, and their intersections and unions (which
/// mix pieces that take pre-releases with pieces that do not).
fn arb_range() -> impl Strategy<Value = Range> {
    prop_oneof![
        2 => arb_simple_range(),
        1 => (arb_simple_range(), arb_simple_range()).prop_map(|(a, b)| a.intersect(&b)),
        1 => (arb_simple_range(), arb_simple_range()).prop_map(|(a, b)| a.union(&b)),
    ]
}

/// 512 cases unless `PROPTEST_CASES` asks for another number.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() {
        default.cases
    } else {
        512
    };
    ProptestConfig { cases, ..default }
}

proptest! {
    #![proptest_config(config())]

    /// (a) The canonical text parses back to the same set.
    #[test]
    fn display_round_trips(range in arb_range(), versions in arb_versions()) {
        let text = range.to_string();
        let again = Range::parse(&text).unwrap_or_else(|error| panic!("{text:?}: {error}"));
        for version in &versions {
            prop_assert_eq!(again.contains(version), range.contains(version), "{} at {}", text, version);
        }
        prop_assert_eq!(&again, &range);
        prop_assert_eq!(again.to_string(), text);
    }

    /// (b) Intersection holds exactly the versions both ranges hold, and
    /// union those either holds.
    #[test]
    fn intersect_and_union_are_and_and_or(a in arb_range(), b in arb_range(), versions in arb_versions()) {
        let both = a.intersect(&b);
        let either = a.union(&b);
        for version in &versions {
            prop_assert_eq!(both.contains(version), a.contains(version) && b.contains(version));
            prop_assert_eq!(either.contains(version), a.contains(version) || b.contains(version));
        }
    }

    /// (c) An empty range holds no version.
    #[test]
    fn empty_holds_nothing(a in arb_range(), b in arb_range(), versions in arb_versions()) {
        for range in [&a, &b, &a.intersect(&b)] {
            if range.is_empty() {
                prop_assert!(versions.iter().all(|version| !range.contains(version)), "{}", range);
            }
        }
    }

    /// The canonical form is unique: the same set built in different orders
    /// gives equal ranges.
    #[test]
    fn canonical_form_is_unique(a in arb_range(), b in arb_range(), c in arb_range()) {
        prop_assert_eq!(a.intersect(&b), b.intersect(&a));
        prop_assert_eq!(a.union(&b), b.union(&a));
        prop_assert_eq!(a.intersect(&a), a.clone());
        prop_assert_eq!(a.union(&a), a.clone());
        prop_assert_eq!(a.intersect(&Range::any()), a.clone());
        prop_assert_eq!(a.union(&Range::none()), a.clone());
        prop_assert_eq!(a.intersect(&b.union(&c)), a.intersect(&b).union(&a.intersect(&c)));
        prop_assert_eq!(a.union(&b.intersect(&c)), a.union(&b).intersect(&a.union(&c)));
    }

    /// Serde writes the canonical text and reads it back.
    #[test]
    fn serde_round_trips(range in arb_range()) {
        let json = serde_json::to_string(&range).unwrap();
        let back: Range = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, range);
    }

    /// `max_satisfying` picks the greatest contained version.
    #[test]
    fn max_satisfying_is_the_greatest_contained(range in arb_range(), versions in arb_versions()) {
        let best = range.max_satisfying(&versions);
        let contained: Vec<&Version> = versions.iter().filter(|version| range.contains(version)).collect();
        prop_assert_eq!(best.is_none(), contained.is_empty());
        if let Some(best) = best {
            prop_assert!(range.contains(best));
            prop_assert!(contained.iter().all(|version| *version <= best));
        }
    }

    /// (d) Neither parser panics, on any text or on text made of range
    /// syntax; and whatever parses round-trips.
    #[test]
    fn parsers_never_panic(text in any::<String>()) {
        let _ = Range::parse(&text);
        let _ = Range::parse_glasskube(&text);
    }

    #[test]
    fn parsers_never_panic_on_range_like_text(text in "[0-9xX*.vp!<>=~^|, \t+-]{0,40}") {
        for range in [Range::parse(&text), Range::parse_glasskube(&text)].into_iter().flatten() {
            prop_assert_eq!(Range::parse(&range.to_string()).ok(), Some(range));
        }
    }
}
