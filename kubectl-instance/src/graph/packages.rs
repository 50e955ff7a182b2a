//! `kubectl instance graph PACKAGE --package-repository NAME` (a
//! PackageRepository of the cluster) or `--repository-url URL` (no
//! cluster): a Glasskube package's versions as its repository publishes
//! them, newest first, with the one `latestVersion` names, what each
//! version is made of (manifests, a Helm chart), what it depends on, and
//! which packages of the cluster run it.
//!
//! Glasskube has no update edges: any version upgrades to any newer one,
//! and an unpinned package follows `latestVersion`. So the graph is the
//! versions in order; the DOT form draws each version's edge to the next.
//!
//! The repository is read from this machine, as the provisioner reads it
//! (its files, bounded in size). A repository with credentials is not
//! read: only pakket-package may read its Secrets.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::Api;
use pakket_engine::Version;
use pakket_packages_api::{ClusterPackage, Package, PackageRepository};
use pakket_packages_client::repository::{Endpoint, RepositoryClient};
use reqwest::Url;
use serde::Serialize;

use super::GraphFormat;
use crate::error::Error;

/// How many package files are read at once.
const READS_AT_ONCE: usize = 8;

/// One published version.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedVersion {
    /// As the repository writes it (`v1.25.0+1`).
    pub version: String,
    /// Whether `latestVersion` names it.
    pub latest: bool,
    /// `manifests`, `helm chart NAME VERSION`, or both.
    pub content: String,
    /// Its dependencies, `name range`.
    pub needs: Vec<String>,
    /// The cluster's packages at this version.
    pub installed: Vec<String>,
    /// Why its package file could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The answer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryGraph {
    /// The package.
    pub package: String,
    /// Where it was read: `PackageRepository NAME (URL)` or the URL.
    pub repository: String,
    /// Newest first.
    pub versions: Vec<PublishedVersion>,
    /// What could not be shown, in words.
    pub notes: Vec<String>,
}

/// Where the repository is.
pub enum Source<'a> {
    /// A PackageRepository of the cluster.
    Cluster(&'a kube::Client, &'a str),
    /// A URL, read without the cluster.
    Url(&'a str),
}

/// Reads `package`'s versions from `source` (trusting `ca_files` besides
/// the system's roots) and prints them.
pub async fn run(
    source: Source<'_>,
    package: &str,
    ca_files: &[PathBuf],
    format: GraphFormat,
    out: &mut impl std::io::Write,
) -> Result<(), Error> {
    let graph = read(source, package, ca_files).await?;
    let text = match format {
        GraphFormat::Text => render_text(&graph),
        GraphFormat::Dot => render_dot(&graph),
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

async fn read(
    source: Source<'_>,
    package: &str,
    ca_files: &[PathBuf],
) -> Result<RepositoryGraph, Error> {
    let mut notes = Vec::new();
    let (base, label, client) = match source {
        Source::Url(url) => (url.to_owned(), url.to_owned(), None),
        Source::Cluster(client, name) => {
            let repository = Api::<PackageRepository>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|error| {
                    Error::Config(format!("reading PackageRepository {name}: {error}"))
                })?
                .ok_or_else(|| Error::NotFound {
                    kind: "packagerepository",
                    name: name.to_owned(),
                })?;
            if repository.spec.auth.is_some() {
                return Err(Error::Config(format!(
                    "PackageRepository {name} needs credentials, which only pakket-package may read; ask its admin, or pass --repository-url for a copy you may read"
                )));
            }
            let url = repository.spec.url.clone();
            (
                url.clone(),
                format!("PackageRepository {name} ({url})"),
                Some(client),
            )
        }
    };
    let base = Url::parse(&base).map_err(|error| {
        Error::Config(format!(
            "the repository URL {base:?} is not a URL ({error}); write https://HOST/PATH"
        ))
    })?;
    let base = pakket_packages_client::repository::as_folder(base);
    let extra_roots = ca_files
        .iter()
        .map(|path| {
            std::fs::read_to_string(path).map_err(|error| {
                Error::Config(format!("--repository-ca {}: {error}", path.display()))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let repositories = RepositoryClient::new(
        pakket_runtime::kernel::source::SourceOptions {
            extra_roots,
            ..Default::default()
        },
        // This machine's own request: internal addresses are the caller's
        // to reach.
        true,
    );
    let endpoint = Endpoint {
        name: label.clone(),
        base,
        authorization: None,
    };
    let published = repositories
        .versions(&endpoint, package)
        .await
        .map_err(|error| Error::Config(format!("package {package}: {error}")))?;
    let installed = match client {
        Some(client) => match installed_versions(client, package).await {
            Ok(installed) => installed,
            Err(error) => {
                notes.push(format!(
                    "which packages run each version is not shown: listing packages failed ({error})"
                ));
                BTreeMap::new()
            }
        },
        None => BTreeMap::new(),
    };
    let latest = published.latest_version.clone();
    let mut versions: Vec<PublishedVersion> =
        futures::stream::iter(published.versions.iter().map(|entry| {
            let (repositories, endpoint) = (&repositories, &endpoint);
            async move {
                let read = repositories
                    .package(endpoint, package, &entry.version)
                    .await;
                (entry.version.clone(), read)
            }
        }))
        .buffered(READS_AT_ONCE)
        .map(|(version, read)| {
            let mut shown = PublishedVersion {
                latest: latest.as_deref() == Some(version.as_str()),
                content: String::new(),
                needs: Vec::new(),
                installed: installed.get(&version).cloned().unwrap_or_default(),
                problem: None,
                version,
            };
            match read {
                Ok((manifest, _, _)) => {
                    let mut parts = Vec::new();
                    if let Some(chart) = &manifest.helm {
                        parts.push(format!(
                            "helm chart {} {}",
                            chart.chart_name, chart.chart_version
                        ));
                    }
                    if !manifest.manifests.is_empty() {
                        parts.push("manifests".to_owned());
                    }
                    shown.content = parts.join(" + ");
                    shown.needs = manifest
                        .dependencies
                        .iter()
                        .map(|d| match &d.version {
                            Some(range) => format!("{} {range}", d.name),
                            None => d.name.clone(),
                        })
                        .collect();
                }
                Err(error) => shown.problem = Some(error.to_string()),
            }
            shown
        })
        .collect()
        .await;
    // Newest first; versions that do not parse last, as written.
    versions.sort_by(
        |a, b| match (Version::parse(&a.version), Version::parse(&b.version)) {
            // Glasskube's `+N` is the package's revision: `v2.7.0+2`
            // follows `v2.7.0+1`, though semver gives build metadata no
            // precedence.
            (Ok(a), Ok(b)) => b.cmp_with_build(&a),
            (Ok(_), Err(_)) => std::cmp::Ordering::Less,
            (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
            (Err(_), Err(_)) => a.version.cmp(&b.version),
        },
    );
    if let Some(latest) = &latest
        && !versions.iter().any(|v| &v.version == latest)
    {
        notes.push(format!(
            "latestVersion is {latest}, which versions.yaml does not list"
        ));
    }
    Ok(RepositoryGraph {
        package: package.to_owned(),
        repository: label,
        versions,
        notes,
    })
}

/// Which ClusterPackages and Packages run each version of `package`.
async fn installed_versions(
    client: &kube::Client,
    package: &str,
) -> Result<BTreeMap<String, Vec<String>>, kube::Error> {
    let mut installed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for found in Api::<ClusterPackage>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
    {
        if found.spec.package_info.name == package
            && let Some(version) = found.status.as_ref().and_then(|s| s.version.clone())
        {
            installed
                .entry(version)
                .or_default()
                .push(format!("ClusterPackage {}", found.name_any()));
        }
    }
    for found in Api::<Package>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
    {
        if found.spec.package_info.name == package
            && let Some(version) = found.status.as_ref().and_then(|s| s.version.clone())
        {
            installed.entry(version).or_default().push(format!(
                "Package {}/{}",
                found.namespace().unwrap_or_default(),
                found.name_any()
            ));
        }
    }
    Ok(installed)
}

/// The versions as a table, newest first.
pub fn render_text(graph: &RepositoryGraph) -> String {
    let mut text = format!(
        "package {} in {}: {} versions, newest first; any version upgrades to a newer one, and an unpinned package follows latestVersion\n",
        graph.package,
        graph.repository,
        graph.versions.len()
    );
    let mut table = crate::table::Table::new(&["VERSION", "", "CONTENT", "NEEDS", "INSTALLED"]);
    for version in &graph.versions {
        table.row(vec![
            version.version.clone(),
            if version.latest { "latest" } else { "" }.to_owned(),
            match &version.problem {
                Some(problem) => format!("(unreadable: {problem})"),
                None => version.content.clone(),
            },
            version.needs.join(", "),
            version.installed.join(", "),
        ]);
    }
    text.push_str(&table.render());
    for note in &graph.notes {
        let _ = writeln!(text, "note: {note}");
    }
    text
}

/// Graphviz DOT: one node per version, an edge from each to the next
/// newer one; `latestVersion` bold, installed versions filled.
pub fn render_dot(graph: &RepositoryGraph) -> String {
    let escape = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
    let quote = |text: &str| format!("\"{}\"", escape(text));
    let mut dot = format!(
        "// Versions of package {} in {}: an edge goes from a version to the next newer one.\ndigraph {} {{\n  rankdir=BT;\n  node [shape=box, fontname=\"sans-serif\"];\n",
        graph.package,
        graph.repository,
        quote(&graph.package)
    );
    for version in &graph.versions {
        // Lines of the label, each escaped, joined by DOT's `\n`.
        let mut lines = vec![escape(&version.version)];
        if !version.content.is_empty() {
            lines.push(escape(&version.content));
        }
        lines.extend(version.installed.iter().map(|installed| escape(installed)));
        let label = lines.join("\\n");
        let mut style = Vec::new();
        if version.latest {
            style.push("penwidth=2");
        }
        if !version.installed.is_empty() {
            style.push("style=filled, fillcolor=\"#dde8ff\"");
        }
        let _ = writeln!(
            dot,
            "  {} [label=\"{label}\"{}];",
            quote(&version.version),
            if style.is_empty() {
                String::new()
            } else {
                format!(", {}", style.join(", "))
            }
        );
    }
    for pair in graph.versions.windows(2) {
        let _ = writeln!(
            dot,
            "  {} -> {};",
            quote(&pair[1].version),
            quote(&pair[0].version)
        );
    }
    dot.push_str("}\n");
    dot
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> RepositoryGraph {
        let version = |v: &str, latest: bool, content: &str, installed: &[&str]| PublishedVersion {
            version: v.into(),
            latest,
            content: content.into(),
            needs: Vec::new(),
            installed: installed.iter().map(|s| (*s).to_owned()).collect(),
            problem: None,
        };
        RepositoryGraph {
            package: "kubernetes-dashboard".into(),
            repository: "PackageRepository glasskube (https://example.com/packages/)".into(),
            versions: vec![
                version(
                    "v2.7.0+2",
                    true,
                    "helm chart kubernetes-dashboard 6.0.8 + manifests",
                    &["ClusterPackage dashboard"],
                ),
                version("v2.7.0+1", false, "manifests", &[]),
            ],
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_table_marks_latest_content_and_who_runs_it() {
        let text = render_text(&graph());
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("package kubernetes-dashboard in PackageRepository glasskube")
        );
        assert!(lines[1].starts_with("VERSION"), "{text}");
        assert!(
            lines[2].starts_with("v2.7.0+2")
                && lines[2].contains("latest")
                && lines[2].contains("helm chart kubernetes-dashboard 6.0.8 + manifests")
                && lines[2].ends_with("ClusterPackage dashboard"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("v2.7.0+1") && !lines[3].contains("latest"),
            "{text}"
        );
    }

    #[test]
    fn the_dot_chains_versions_upwards() {
        let dot = render_dot(&graph());
        assert!(dot.contains("\"v2.7.0+1\" -> \"v2.7.0+2\";"), "{dot}");
        assert!(dot.contains("penwidth=2"), "{dot}");
        assert!(dot.contains("fillcolor"), "{dot}");
        assert!(dot.trim_end().ends_with('}'));
    }
}
