//! `kubectl instance graph PACKAGE --catalog PATH...` (or `--server URL`, a
//! cluster's resolver API): a package's update graph in each channel of
//! each catalog that has it, as text (heads first, then down the graph) or
//! as Graphviz DOT (`--format dot`). Files and the API print the same.
//! With `--package-repository NAME` or `--repository-url URL`, a Glasskube
//! package's versions instead ([`packages`]).
//!
//! The graph follows OLM through pakket-engine's [`UpdateGraph`]: an entry
//! upgrades a bundle it `replaces`, `skips`, or whose version its
//! `skipRange` contains. Edges point the way an upgrade goes: from the
//! installed bundle to the one that can replace it.

use std::io::Write;

use clap::{Args, ValueEnum};
use pakket_engine::catalog::{Catalog, CatalogArgument, CatalogSet, UpdateGraph};
use serde::Serialize;

use crate::error::Error;
use crate::resolver::ResolverArgs;

mod dot;
mod packages;
mod remote;

/// Arguments of `graph`.
#[derive(Args)]
pub struct GraphArgs {
    /// The package whose update graph to print.
    package: String,
    /// A File-Based Catalog file or directory, optionally with a priority
    /// (`PATH@10`), as for `pakket resolve`. Repeat for several catalogs.
    #[arg(
        long = "catalog",
        value_name = "PATH[@PRIORITY]",
        required_unless_present_any = ["server", "package_repository", "repository_url"],
        conflicts_with_all = ["server", "package_repository", "repository_url"]
    )]
    catalogs: Vec<String>,
    /// A Glasskube package's versions in this PackageRepository of the
    /// cluster (read from this machine; not one with credentials).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["server", "repository_url"])]
    package_repository: Option<String>,
    /// A Glasskube package's versions in the package repository at this
    /// URL (no cluster needed).
    #[arg(long, value_name = "URL", conflicts_with = "server")]
    repository_url: Option<String>,
    /// A CA certificate (PEM) to trust for the package repository besides
    /// the system's.
    #[arg(long, value_name = "FILE")]
    repository_ca: Vec<std::path::PathBuf>,
    #[command(flatten)]
    resolver: ResolverArgs,
    /// Only this channel (default: every channel, the default one first).
    #[arg(long)]
    channel: Option<String>,
    /// `text` for people, `dot` for Graphviz (`| dot -Tsvg > graph.svg`).
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    format: GraphFormat,
}

/// How `graph` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// One block per channel, heads first.
    Text,
    /// Graphviz DOT, one cluster per channel.
    Dot,
}

/// Why an entry can upgrade a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum EdgeKind {
    /// `replaces: <bundle>`.
    Replaces,
    /// `skips: [<bundle>, ...]`.
    Skips,
    /// `skipRange` contains the bundle's version.
    SkipRange,
}

impl EdgeKind {
    /// The channel field that makes the edge.
    pub fn field(self) -> &'static str {
        match self {
            Self::Replaces => "replaces",
            Self::Skips => "skips",
            Self::SkipRange => "skipRange",
        }
    }
}

/// One upgrade edge into an entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The bundle upgraded from.
    pub from: String,
    /// The field that makes the edge.
    pub kind: EdgeKind,
    /// Whether `from` is an entry of this channel.
    pub in_channel: bool,
}

/// One channel entry with the edges into it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// Bundle name.
    pub name: String,
    /// Its version, when the catalog has the bundle.
    pub version: Option<String>,
    /// Whether nothing in the channel replaces or skips it by name.
    pub head: bool,
    /// The skipRange as written, if any.
    pub skip_range: Option<String>,
    /// Bundles this entry can upgrade, by field.
    pub upgrades_from: Vec<Edge>,
}

/// One channel's graph, ready to print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelGraph {
    /// The catalog it is from.
    pub catalog: String,
    /// The package.
    pub package: String,
    /// The channel.
    pub channel: String,
    /// Whether it is the package's default channel.
    pub default: bool,
    /// Entries in preference order: heads first, then down the graph.
    pub entries: Vec<Entry>,
    /// Structural problems (several heads, dangling replaces, cycles).
    pub problems: Vec<String>,
}

/// Builds the printable form of one channel's update graph.
pub fn channel_graph(catalog: &Catalog, graph: &UpdateGraph<'_>, default: bool) -> ChannelGraph {
    let channel = graph.channel();
    let heads: Vec<&str> = graph.heads().iter().map(|e| e.name.as_str()).collect();
    let ordered = graph.ordered();
    let entries = ordered
        .iter()
        .map(|entry| {
            let mut edges = Vec::new();
            if let Some(replaced) = &entry.replaces {
                edges.push(Edge {
                    from: replaced.clone(),
                    kind: EdgeKind::Replaces,
                    in_channel: graph.contains(replaced),
                });
            }
            for skipped in &entry.skips {
                edges.push(Edge {
                    from: skipped.clone(),
                    kind: EdgeKind::Skips,
                    in_channel: graph.contains(skipped),
                });
            }
            if let Some(range) = &entry.skip_range {
                // A range names versions, not bundles: the edges are to the
                // channel's entries whose version it contains.
                for other in &ordered {
                    if other.name != entry.name
                        && graph
                            .version_of(&other.name)
                            .is_some_and(|version| range.contains(version))
                    {
                        edges.push(Edge {
                            from: other.name.clone(),
                            kind: EdgeKind::SkipRange,
                            in_channel: true,
                        });
                    }
                }
            }
            Entry {
                name: entry.name.clone(),
                version: graph.version_of(&entry.name).map(ToString::to_string),
                head: heads.contains(&entry.name.as_str()),
                skip_range: entry.skip_range.as_ref().map(ToString::to_string),
                upgrades_from: edges,
            }
        })
        .collect();
    ChannelGraph {
        catalog: catalog.name.clone(),
        package: channel.package.clone(),
        channel: channel.name.clone(),
        default,
        entries,
        problems: graph.check().iter().map(|d| d.message.clone()).collect(),
    }
}

/// Every channel graph of `package` across the catalogs of `set` (or only
/// `only`), highest priority first, the default channel first in each.
/// Graphs come from the set, which finds versions through its name index
/// (a catalog's own graph scans every bundle, once per channel).
pub fn package_graphs(
    set: &CatalogSet,
    package: &str,
    only: Option<&str>,
) -> Result<Vec<ChannelGraph>, Error> {
    let catalogs = set.catalogs();
    let mut graphs = Vec::new();
    let mut offered = Vec::new();
    for (index, catalog) in catalogs.iter().enumerate() {
        let Some(found) = catalog.package(package) else {
            continue;
        };
        offered.push(catalog.name.as_str());
        let default = found.default_channel.as_deref();
        let mut names: Vec<&str> = found.channels.keys().map(String::as_str).collect();
        names.sort_by_key(|name| (Some(*name) != default, *name));
        for name in names {
            if only.is_some_and(|only| only != name) {
                continue;
            }
            let index = u32::try_from(index).expect("fewer than 2^32 catalogs");
            if let Some(graph) = set.graph(index, package, name) {
                graphs.push(channel_graph(catalog, &graph, Some(name) == default));
            }
        }
    }
    if offered.is_empty() {
        let names: Vec<&str> = catalogs.iter().map(|c| c.name.as_str()).collect();
        return Err(Error::Catalog(format!(
            "package {package} is in none of the catalogs ({}); check its name (olm.package documents)",
            names.join(", ")
        )));
    }
    if graphs.is_empty()
        && let Some(only) = only
    {
        let channels: Vec<String> = catalogs
            .iter()
            .filter_map(|catalog| catalog.package(package))
            .flat_map(|found| found.channels.keys().cloned())
            .collect();
        return Err(Error::Catalog(format!(
            "package {package} has no channel {only}; its channels: {}",
            channels.join(", ")
        )));
    }
    Ok(graphs)
}

/// The graphs as text: per channel a header, then each entry (heads
/// first) with the edges into it.
pub fn render_text(graphs: &[ChannelGraph]) -> String {
    let mut text = String::new();
    for (i, graph) in graphs.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let heads: Vec<&str> = graph
            .entries
            .iter()
            .filter(|e| e.head)
            .map(|e| e.name.as_str())
            .collect();
        text.push_str(&format!(
            "package {} channel {}{} (catalog {}): {} {}, {} {}\n",
            graph.package,
            graph.channel,
            if graph.default { " (default)" } else { "" },
            graph.catalog,
            graph.entries.len(),
            if graph.entries.len() == 1 {
                "entry"
            } else {
                "entries"
            },
            if heads.len() == 1 { "head" } else { "heads" },
            if heads.is_empty() {
                "none".to_owned()
            } else {
                heads.join(", ")
            },
        ));
        for problem in &graph.problems {
            text.push_str(&format!("  warning: {problem}\n"));
        }
        for entry in &graph.entries {
            text.push_str(&format!(
                "  {}{}{}\n",
                entry.name,
                entry
                    .version
                    .as_ref()
                    .map(|v| format!("  {v}"))
                    .unwrap_or_else(|| "  (bundle not in catalog)".to_owned()),
                if entry.head { "  (head)" } else { "" }
            ));
            for kind in [EdgeKind::Replaces, EdgeKind::Skips] {
                for edge in entry.upgrades_from.iter().filter(|edge| edge.kind == kind) {
                    text.push_str(&format!(
                        "    {} {}{}\n",
                        kind.field(),
                        edge.from,
                        if edge.in_channel {
                            ""
                        } else {
                            " (not in this channel)"
                        }
                    ));
                }
            }
            if let Some(range) = &entry.skip_range {
                let covered: Vec<&str> = entry
                    .upgrades_from
                    .iter()
                    .filter(|edge| edge.kind == EdgeKind::SkipRange)
                    .map(|edge| edge.from.as_str())
                    .collect();
                text.push_str(&format!(
                    "    skipRange {range}: {}\n",
                    if covered.is_empty() {
                        "no entry of this channel".to_owned()
                    } else {
                        covered.join(", ")
                    }
                ));
            }
        }
    }
    text
}

/// Loads the catalogs (or asks the server) and prints the graph.
pub async fn run(
    args: &GraphArgs,
    cluster: &crate::connect::ClusterArgs,
    out: &mut impl Write,
) -> Result<(), Error> {
    if let Some(url) = &args.repository_url {
        return packages::run(
            packages::Source::Url(url),
            &args.package,
            &args.repository_ca,
            args.format,
            out,
        )
        .await;
    }
    if let Some(name) = &args.package_repository {
        let client = cluster.client().await?;
        return packages::run(
            packages::Source::Cluster(&client, name),
            &args.package,
            &args.repository_ca,
            args.format,
            out,
        )
        .await;
    }
    let graphs = match args.resolver.server() {
        Some(server) => {
            remote::package_graphs(&server, &args.package, args.channel.as_deref()).await?
        }
        None => graphs_from_files(args)?,
    };
    let text = match args.format {
        GraphFormat::Text => render_text(&graphs),
        GraphFormat::Dot => dot::render(&args.package, &graphs),
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

fn graphs_from_files(args: &GraphArgs) -> Result<Vec<ChannelGraph>, Error> {
    let mut catalogs = Vec::new();
    for spec in &args.catalogs {
        let argument = CatalogArgument::parse(spec).map_err(Error::Catalog)?;
        let catalog = Catalog::load(&argument.path, &argument.name, argument.priority)
            // The engine's error names the file, line and column.
            .map_err(|error| Error::Catalog(error.to_string()))?;
        catalogs.push(catalog);
    }
    let set = CatalogSet::new(catalogs);
    package_graphs(&set, &args.package, args.channel.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_engine::catalog::Format;

    const CATALOG: &str = r#"
{"schema":"olm.package","name":"web","defaultChannel":"stable"}
{"schema":"olm.channel","package":"web","name":"stable","entries":[
  {"name":"web.v1"},
  {"name":"web.v2","replaces":"web.v1","skips":["web.v0"]},
  {"name":"web.v3","replaces":"web.v2","skipRange":">=1.0.0 <3.0.0"}]}
{"schema":"olm.channel","package":"web","name":"alpha","entries":[{"name":"web.v3"}]}
{"schema":"olm.bundle","name":"web.v1","package":"web","image":"r/web:1","properties":[{"type":"olm.package","value":{"packageName":"web","version":"1.0.0"}}]}
{"schema":"olm.bundle","name":"web.v2","package":"web","image":"r/web:2","properties":[{"type":"olm.package","value":{"packageName":"web","version":"2.0.0"}}]}
{"schema":"olm.bundle","name":"web.v3","package":"web","image":"r/web:3","properties":[{"type":"olm.package","value":{"packageName":"web","version":"3.0.0"}}]}
"#;

    fn catalogs() -> CatalogSet {
        CatalogSet::new(vec![
            Catalog::from_str(CATALOG, "inline.json", Format::Json, "inline", 0).unwrap(),
        ])
    }

    #[test]
    fn text_lists_heads_first_with_every_edge_kind() {
        let graphs = package_graphs(&catalogs(), "web", None).unwrap();
        assert_eq!(
            graphs[0].channel, "stable",
            "the default channel comes first"
        );
        assert_eq!(graphs[1].channel, "alpha");
        let text = render_text(&graphs[..1]);
        assert_eq!(
            text,
            "package web channel stable (default) (catalog inline): 3 entries, head web.v3\n\
             \x20 web.v3  3.0.0  (head)\n\
             \x20   replaces web.v2\n\
             \x20   skipRange >=1.0.0 <3.0.0: web.v2, web.v1\n\
             \x20 web.v2  2.0.0\n\
             \x20   replaces web.v1\n\
             \x20   skips web.v0 (not in this channel)\n\
             \x20 web.v1  1.0.0\n"
        );
    }

    #[test]
    fn unknown_packages_and_channels_say_what_exists() {
        let missing = package_graphs(&catalogs(), "nope", None).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("package nope is in none of the catalogs (inline)")
        );
        let channel = package_graphs(&catalogs(), "web", Some("beta")).unwrap_err();
        assert!(
            channel.to_string().contains("its channels: alpha, stable"),
            "{channel}"
        );
    }
}
