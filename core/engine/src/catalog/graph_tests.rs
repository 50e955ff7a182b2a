use std::collections::HashMap;

use super::*;
use crate::Range;

/// Entries are named `p.v<version>`, so the fixture knows every version.
fn entry(version: &str) -> ChannelEntry {
    ChannelEntry::new(format!("p.v{version}"))
}

trait Edges {
    fn replaces(self, version: &str) -> Self;
    fn skips(self, versions: &[&str]) -> Self;
    fn skip_range(self, range: &str) -> Self;
}

impl Edges for ChannelEntry {
    fn replaces(mut self, version: &str) -> Self {
        self.replaces = Some(format!("p.v{version}"));
        self
    }

    fn skips(mut self, versions: &[&str]) -> Self {
        self.skips = versions.iter().map(|v| format!("p.v{v}")).collect();
        self
    }

    fn skip_range(mut self, range: &str) -> Self {
        self.skip_range = Some(Range::parse(range).unwrap());
        self
    }
}

struct Fixture {
    channel: Channel,
    versions: HashMap<String, Version>,
}

impl Fixture {
    fn new(entries: Vec<ChannelEntry>) -> Self {
        let versions = entries
            .iter()
            .filter_map(|e| {
                let version = Version::parse(e.name.strip_prefix("p.v")?).ok()?;
                Some((e.name.clone(), version))
            })
            .collect();
        let channel = Channel {
            package: "p".into(),
            name: "stable".into(),
            entries,
            ..Channel::default()
        };
        Self { channel, versions }
    }

    fn graph(&self) -> UpdateGraph<'_> {
        UpdateGraph::new(&self.channel, |name| self.versions.get(name))
    }
}

fn names(entries: &[&ChannelEntry]) -> Vec<String> {
    entries.iter().map(|e| e.name.clone()).collect()
}

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<DiagnosticCode> {
    diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn a_linear_replaces_chain_has_one_head_and_upgrades_one_step() {
    let fixture = Fixture::new(vec![
        entry("1.0.0"),
        entry("1.1.0").replaces("1.0.0"),
        entry("1.2.0").replaces("1.1.0"),
    ]);
    let graph = fixture.graph();
    assert_eq!(names(&graph.heads()), ["p.v1.2.0"]);
    assert_eq!(
        names(&graph.ordered()),
        ["p.v1.2.0", "p.v1.1.0", "p.v1.0.0"]
    );
    assert_eq!(
        names(&graph.upgrades_from("p.v1.0.0", &v("1.0.0"))),
        ["p.v1.1.0"]
    );
    assert_eq!(
        names(&graph.upgrades_from("p.v1.1.0", &v("1.1.0"))),
        ["p.v1.2.0"]
    );
    assert!(graph.upgrades_from("p.v1.2.0", &v("1.2.0")).is_empty());
    assert_eq!(graph.distance_from_head("p.v1.0.0"), Some(2));
    assert!(graph.contains("p.v1.1.0") && !graph.contains("p.v9.0.0"));
    assert_eq!(graph.version_of("p.v1.1.0"), Some(&v("1.1.0")));
    assert!(graph.check().is_empty(), "{:?}", graph.check());
}

#[test]
fn skips_add_direct_edges_and_make_the_skipped_entries_non_heads() {
    // The clusterpulse fast-v1 shape: only the newest entry skips the others.
    let fixture = Fixture::new(vec![
        entry("1.0.0"),
        entry("1.0.1"),
        entry("1.0.2").skips(&["1.0.0", "1.0.1"]),
    ]);
    let graph = fixture.graph();
    assert_eq!(names(&graph.heads()), ["p.v1.0.2"]);
    assert_eq!(
        names(&graph.upgrades_from("p.v1.0.0", &v("1.0.0"))),
        ["p.v1.0.2"]
    );
    // Both skipped entries are one hop from the head; newer first.
    assert_eq!(
        names(&graph.ordered()),
        ["p.v1.0.2", "p.v1.0.1", "p.v1.0.0"]
    );
    assert!(graph.check().is_empty());
}

#[test]
fn skip_range_upgrades_by_version_but_does_not_hide_heads() {
    let fixture = Fixture::new(vec![
        entry("1.16.0"),
        entry("1.16.5").skip_range(">=1.16.0 <1.16.5"),
    ]);
    let graph = fixture.graph();
    // operator-registry ignores skipRange when it looks for heads.
    assert_eq!(names(&graph.heads()), ["p.v1.16.5", "p.v1.16.0"]);
    assert_eq!(codes(&graph.check()), [DiagnosticCode::MultipleHeads]);
    // An installed bundle need not be in the channel: its version decides.
    assert_eq!(
        names(&graph.upgrades_from("p.v1.16.3", &v("1.16.3"))),
        ["p.v1.16.5"]
    );
    assert_eq!(
        names(&graph.upgrades_from("p.v1.16.0", &v("1.16.0"))),
        ["p.v1.16.5"]
    );
    assert!(graph.upgrades_from("p.v1.15.0", &v("1.15.0")).is_empty());
    // A range containing the entry's own version never makes it its own upgrade.
    let fixture = Fixture::new(vec![entry("2.0.0").skip_range("<3.0.0")]);
    assert!(
        fixture
            .graph()
            .upgrades_from("p.v2.0.0", &v("2.0.0"))
            .is_empty()
    );
}

#[test]
fn upgrades_come_heads_first_then_by_distance_and_version() {
    let fixture = Fixture::new(vec![
        entry("1.0.0"),
        entry("1.1.0").replaces("1.0.0"),
        entry("1.2.0").replaces("1.1.0").skips(&["1.0.0"]),
    ]);
    let graph = fixture.graph();
    assert_eq!(
        names(&graph.upgrades_from("p.v1.0.0", &v("1.0.0"))),
        ["p.v1.2.0", "p.v1.1.0"]
    );
}

#[test]
fn a_replaces_cycle_names_every_member_once() {
    let fixture = Fixture::new(vec![
        entry("1.0.0").replaces("1.2.0"),
        entry("1.1.0").replaces("1.0.0"),
        entry("1.2.0").replaces("1.1.0"),
        entry("2.0.0").replaces("1.2.0"),
    ]);
    let graph = fixture.graph();
    let diagnostics = graph.check();
    assert_eq!(codes(&diagnostics), [DiagnosticCode::ReplacesCycle]);
    let message = &diagnostics[0].message;
    for member in ["p.v1.0.0", "p.v1.1.0", "p.v1.2.0"] {
        assert!(message.contains(member), "{message}");
    }
    assert!(!message.contains("p.v2.0.0"), "{message}");
    assert_eq!(names(&graph.heads()), ["p.v2.0.0"]);
}

#[test]
fn a_channel_that_is_all_cycle_has_no_head_and_still_orders_every_entry() {
    let fixture = Fixture::new(vec![
        entry("1.0.0").replaces("1.1.0"),
        entry("1.1.0").replaces("1.0.0"),
    ]);
    let graph = fixture.graph();
    assert!(graph.heads().is_empty());
    assert_eq!(
        codes(&graph.check()),
        [DiagnosticCode::NoHead, DiagnosticCode::ReplacesCycle]
    );
    assert_eq!(names(&graph.ordered()), ["p.v1.1.0", "p.v1.0.0"]);
    assert_eq!(graph.distance_from_head("p.v1.0.0"), None);
}

#[test]
fn a_dangling_replaces_names_the_entry_and_the_missing_bundle() {
    let fixture = Fixture::new(vec![entry("0.8.2").replaces("0.7.0")]);
    let graph = fixture.graph();
    let diagnostics = graph.check();
    assert_eq!(codes(&diagnostics), [DiagnosticCode::DanglingReplaces]);
    assert!(diagnostics[0].message.contains("\"p.v0.8.2\""));
    assert!(diagnostics[0].message.contains("\"p.v0.7.0\""));
    assert_eq!(diagnostics[0].field.as_deref(), Some("entries[0].replaces"));
    assert_eq!(names(&graph.heads()), ["p.v0.8.2"]);
    // The edge still works for a bundle installed from elsewhere.
    assert_eq!(
        names(&graph.upgrades_from("p.v0.7.0", &v("0.7.0"))),
        ["p.v0.8.2"]
    );
}

#[test]
fn two_heads_are_each_named() {
    let fixture = Fixture::new(vec![
        entry("1.0.0"),
        entry("1.1.0").replaces("1.0.0"),
        entry("2.0.0"),
    ]);
    let graph = fixture.graph();
    assert_eq!(names(&graph.heads()), ["p.v2.0.0", "p.v1.1.0"]);
    let diagnostics = graph.check();
    assert_eq!(codes(&diagnostics), [DiagnosticCode::MultipleHeads]);
    assert!(
        diagnostics[0]
            .message
            .contains("\"p.v2.0.0\", \"p.v1.1.0\"")
    );
}

#[test]
fn odd_shapes_never_panic() {
    let shapes = vec![
        vec![],
        vec![entry("1.0.0").replaces("1.0.0")],
        vec![entry("1.0.0").skips(&["1.0.0"])],
        vec![entry("1.0.0"), entry("1.0.0").replaces("1.0.0")],
        vec![ChannelEntry::new(""), ChannelEntry::new("").replaces("")],
        vec![
            ChannelEntry::new("no-version").replaces("1.0.0"),
            entry("1.0.0"),
        ],
    ];
    for entries in shapes {
        let fixture = Fixture::new(entries);
        let graph = fixture.graph();
        let _ = (graph.heads(), graph.ordered(), graph.check());
        let _ = graph.upgrades_from("p.v1.0.0", &v("1.0.0"));
    }
    // A self-replacing entry is a one-member cycle and no head.
    let fixture = Fixture::new(vec![entry("1.0.0").replaces("1.0.0")]);
    assert_eq!(
        codes(&fixture.graph().check()),
        [DiagnosticCode::NoHead, DiagnosticCode::ReplacesCycle]
    );
}

#[test]
fn duplicate_entries_use_the_first() {
    let fixture = Fixture::new(vec![entry("1.0.0"), entry("1.0.0").replaces("0.9.0")]);
    let graph = fixture.graph();
    assert_eq!(graph.ordered().len(), 1);
    assert_eq!(graph.entry("p.v1.0.0").unwrap().replaces, None);
    assert!(graph.check().is_empty());
}

#[test]
fn entries_without_a_known_version_order_after_versioned_ones() {
    let mut fixture = Fixture::new(vec![entry("1.0.0"), entry("2.0.0")]);
    fixture.versions.remove("p.v2.0.0");
    let graph = fixture.graph();
    assert_eq!(names(&graph.heads()), ["p.v1.0.0", "p.v2.0.0"]);
}

mod every_upgrade {
    use proptest::prelude::*;

    use super::*;

    /// Versions that tie (build metadata), pre-releases and releases.
    const VERSIONS: [&str; 8] = [
        "0.9.0",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.0+2",
        "1.1.0",
        "1.2.0-alpha",
        "1.2.0",
        "2.0.0",
    ];
    const RANGES: [&str; 6] = [
        ">=1.0.0 <1.2.0",
        "<2.0.0",
        ">=1.0.0-rc.1 <1.0.0 || >1.1.0",
        "1.x",
        "!1.0.0",
        ">=3.0.0",
    ];

    /// (version, replaces, skips, skipRange), each an index into the lists above.
    type Seed = (usize, Option<usize>, Vec<usize>, Option<usize>);

    fn seed() -> impl Strategy<Value = Seed> {
        (
            0..VERSIONS.len(),
            proptest::option::of(0..VERSIONS.len() + 1),
            proptest::collection::vec(0..VERSIONS.len() + 1, 0..3),
            proptest::option::of(0..RANGES.len()),
        )
    }

    /// Index `VERSIONS.len()` names a bundle the channel does not list.
    fn name(index: usize) -> String {
        VERSIONS.get(index).map_or_else(
            || "p.vmissing".to_owned(),
            |version| format!("p.v{version}"),
        )
    }

    proptest! {
        /// Computing every entry's upgrades at once gives what asking entry
        /// by entry gives, duplicates, ties and unknown names included.
        #[test]
        fn matches_upgrades_from_entry_by_entry(seeds in proptest::collection::vec(seed(), 0..12)) {
            let entries = seeds
                .iter()
                .map(|(version, replaces, skips, range)| ChannelEntry {
                    name: name(*version),
                    replaces: replaces.map(name),
                    skips: skips.iter().copied().map(name).collect(),
                    skip_range: range.map(|range| Range::parse(RANGES[range]).unwrap()),
                })
                .collect();
            let fixture = Fixture::new(entries);
            let graph = fixture.graph();
            let all = graph.every_upgrade(|name| fixture.versions.get(name));
            let expected: Vec<(String, Vec<String>)> = graph
                .ordered()
                .into_iter()
                .filter_map(|entry| {
                    let version = fixture.versions.get(&entry.name)?;
                    Some((entry.name.clone(), names(&graph.upgrades_from(&entry.name, version))))
                })
                .collect();
            let mut found: Vec<(String, Vec<String>)> = all
                .iter()
                .map(|(entry, targets)| (entry.name.clone(), names(targets)))
                .collect();
            // Compare as sets of sources: the two list them in different orders.
            let order: HashMap<&str, usize> = expected
                .iter()
                .enumerate()
                .map(|(i, (name, _))| (name.as_str(), i))
                .collect();
            found.sort_by_key(|(name, _)| order.get(name.as_str()).copied());
            prop_assert_eq!(found, expected);
        }
    }
}
