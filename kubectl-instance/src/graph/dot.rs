//! Graphviz DOT for update graphs: one cluster per channel, one node per
//! entry (heads bold, bundles outside the channel dashed), one edge per
//! pair of bundles labelled with every field that makes it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{ChannelGraph, EdgeKind};

/// The DOT document for `graphs`, titled after `package`.
pub fn render(package: &str, graphs: &[ChannelGraph]) -> String {
    let mut dot = String::new();
    let _ = writeln!(
        dot,
        "// Update graphs of package {package}: an edge goes from an installed bundle to one that can upgrade it."
    );
    let _ = writeln!(dot, "digraph {} {{", quote(package));
    dot.push_str("  rankdir=BT;\n  node [shape=box, fontname=\"sans-serif\"];\n");
    dot.push_str("  edge [fontname=\"sans-serif\", fontsize=10];\n");
    for (i, graph) in graphs.iter().enumerate() {
        // Node ids carry the cluster index: a bundle is in several channels.
        let id = |name: &str| quote(&format!("c{i}/{name}"));
        let _ = writeln!(dot, "  subgraph {} {{", quote(&format!("cluster_{i}")));
        let _ = writeln!(
            dot,
            "    label={};",
            quote(&format!(
                "{} / {}{}",
                graph.catalog,
                graph.channel,
                if graph.default { " (default)" } else { "" }
            ))
        );
        for entry in &graph.entries {
            let label = match &entry.version {
                Some(version) => format!("{}\\n{version}", escape(&entry.name)),
                None => format!("{}\\n(bundle not in catalog)", escape(&entry.name)),
            };
            let style = if entry.head { ", penwidth=2" } else { "" };
            let _ = writeln!(dot, "    {} [label=\"{label}\"{style}];", id(&entry.name));
        }
        // Bundles edges come from that the channel does not list.
        let mut outside: Vec<&str> = graph
            .entries
            .iter()
            .flat_map(|entry| &entry.upgrades_from)
            .filter(|edge| !edge.in_channel)
            .map(|edge| edge.from.as_str())
            .collect();
        outside.sort_unstable();
        outside.dedup();
        for name in outside {
            let _ = writeln!(
                dot,
                "    {} [label=\"{}\\n(not in channel)\", style=dashed, color=gray50];",
                id(name),
                escape(name)
            );
        }
        for entry in &graph.entries {
            let mut kinds: BTreeMap<&str, Vec<EdgeKind>> = BTreeMap::new();
            for edge in &entry.upgrades_from {
                kinds.entry(edge.from.as_str()).or_default().push(edge.kind);
            }
            for (from, mut kinds) in kinds {
                kinds.sort_unstable();
                kinds.dedup();
                let label: Vec<&str> = kinds.iter().map(|kind| kind.field()).collect();
                let style = match kinds[0] {
                    EdgeKind::Replaces => "solid",
                    EdgeKind::Skips => "dashed",
                    EdgeKind::SkipRange => "dotted",
                };
                let _ = writeln!(
                    dot,
                    "    {} -> {} [label={}, style={style}];",
                    id(from),
                    id(&entry.name),
                    quote(&label.join(", "))
                );
            }
        }
        dot.push_str("  }\n");
    }
    dot.push_str("}\n");
    dot
}

/// A DOT quoted string.
fn quote(text: &str) -> String {
    format!("\"{}\"", escape(text))
}

/// Escapes what ends or changes a DOT quoted string.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::super::{Edge, Entry};
    use super::*;

    #[test]
    fn edges_merge_per_pair_and_outside_bundles_are_declared() {
        let graph = ChannelGraph {
            catalog: "cat".into(),
            package: "web".into(),
            channel: "stable".into(),
            default: true,
            entries: vec![
                Entry {
                    name: "web.v2".into(),
                    version: Some("2.0.0".into()),
                    head: true,
                    skip_range: Some("<2.0.0".into()),
                    upgrades_from: vec![
                        Edge {
                            from: "web.v1".into(),
                            kind: EdgeKind::Replaces,
                            in_channel: true,
                        },
                        Edge {
                            from: "web.v0".into(),
                            kind: EdgeKind::Skips,
                            in_channel: false,
                        },
                        Edge {
                            from: "web.v1".into(),
                            kind: EdgeKind::SkipRange,
                            in_channel: true,
                        },
                    ],
                },
                Entry {
                    name: "we\"b.v1".into(),
                    version: None,
                    head: false,
                    skip_range: None,
                    upgrades_from: Vec::new(),
                },
            ],
            problems: Vec::new(),
        };
        let dot = render("web", &[graph]);
        assert!(
            dot.contains("    \"c0/web.v2\" [label=\"web.v2\\n2.0.0\", penwidth=2];\n"),
            "{dot}"
        );
        assert!(
            dot.contains("    \"c0/web.v0\" [label=\"web.v0\\n(not in channel)\", style=dashed"),
            "{dot}"
        );
        assert!(
            dot.contains(
                "    \"c0/web.v1\" -> \"c0/web.v2\" [label=\"replaces, skipRange\", style=solid];\n"
            ),
            "{dot}"
        );
        assert!(
            dot.contains("    \"c0/web.v0\" -> \"c0/web.v2\" [label=\"skips\", style=dashed];\n"),
            "{dot}"
        );
        assert!(
            dot.contains(r#""c0/we\"b.v1" [label="we\"b.v1\n(bundle not in catalog)"]"#),
            "{dot}"
        );
        assert!(dot.ends_with("  }\n}\n"));
    }
}
