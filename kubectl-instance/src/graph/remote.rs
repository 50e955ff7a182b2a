//! The graph from a cluster's resolver API (`GET /v1/packages/{name}`),
//! rebuilt into the same [`ChannelGraph`]s the files give, so `--server`
//! and `--catalog` print the same text and DOT.
//!
//! The API lists edges per channel with the bundle each comes from; a
//! `skipRange` edge there may come from any bundle of the package, while
//! the graph shows a range covering the channel's own entries (as the file
//! path does), so those are kept and put in the channel's order.

use pakket_resolve_api::protocol::browse::{ChannelDetail, PackageDetail, PackageInCatalog};
use pakket_resolve_client::ClientError;
use std::collections::HashMap;

use super::{ChannelGraph, Edge, EdgeKind, Entry};
use crate::error::Error;
use crate::resolver::Server;

/// Every channel graph of `package` in the cluster's catalogs (or only
/// `only`), the default channel first in each catalog.
pub async fn package_graphs(
    server: &Server<'_>,
    package: &str,
    only: Option<&str>,
) -> Result<Vec<ChannelGraph>, Error> {
    let failed = |error: ClientError| Error::Catalog(format!("--server {}: {error}", server.url));
    let client = server.client().map_err(failed)?;
    let Some(detail) = client.package(package).await.map_err(failed)? else {
        return Err(Error::Catalog(format!(
            "package {package} is in none of the catalogs {} serves; check its name (GET /v1/packages lists them)",
            server.url
        )));
    };
    graphs_of(&detail, only)
}

/// The printable graphs of one package as the API describes it.
pub fn graphs_of(detail: &PackageDetail, only: Option<&str>) -> Result<Vec<ChannelGraph>, Error> {
    let mut graphs = Vec::new();
    for catalog in &detail.catalogs {
        let default = catalog.default_channel.as_deref();
        let mut channels: Vec<&ChannelDetail> = catalog.channels.iter().collect();
        channels.sort_by_key(|channel| (Some(channel.name.as_str()) != default, &channel.name));
        for channel in channels {
            if only.is_some_and(|only| only != channel.name) {
                continue;
            }
            graphs.push(channel_graph(
                &detail.name,
                catalog,
                channel,
                Some(channel.name.as_str()) == default,
            ));
        }
    }
    if graphs.is_empty()
        && let Some(only) = only
    {
        let channels: Vec<&str> = detail
            .catalogs
            .iter()
            .flat_map(|catalog| catalog.channels.iter().map(|c| c.name.as_str()))
            .collect();
        return Err(Error::Catalog(format!(
            "package {} has no channel {only}; its channels: {}",
            detail.name,
            channels.join(", ")
        )));
    }
    Ok(graphs)
}

fn channel_graph(
    package: &str,
    catalog: &PackageInCatalog,
    channel: &ChannelDetail,
    default: bool,
) -> ChannelGraph {
    let versions: HashMap<&str, &str> = catalog
        .versions
        .iter()
        .map(|v| (v.bundle.as_str(), v.version.as_str()))
        .collect();
    let position: HashMap<&str, usize> = channel
        .entries
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i))
        .collect();
    let entries = channel
        .entries
        .iter()
        .map(|name| {
            let into = catalog
                .edges
                .iter()
                .filter(|edge| edge.channel == channel.name && edge.to == *name);
            let mut by_name = Vec::new();
            let mut by_range = Vec::new();
            for edge in into {
                let in_channel = position.contains_key(edge.from.as_str());
                match edge.via.as_str() {
                    "replaces" | "skips" => by_name.push(Edge {
                        from: edge.from.clone(),
                        kind: if edge.via == "replaces" {
                            EdgeKind::Replaces
                        } else {
                            EdgeKind::Skips
                        },
                        in_channel,
                    }),
                    _ if in_channel => by_range.push(Edge {
                        from: edge.from.clone(),
                        kind: EdgeKind::SkipRange,
                        in_channel,
                    }),
                    _ => {}
                }
            }
            by_range.sort_by_key(|edge| position[edge.from.as_str()]);
            by_name.extend(by_range);
            Entry {
                name: name.clone(),
                version: versions.get(name.as_str()).map(|v| (*v).to_owned()),
                head: channel.heads.contains(name),
                skip_range: channel.skip_ranges.get(name).cloned(),
                upgrades_from: by_name,
            }
        })
        .collect();
    ChannelGraph {
        catalog: catalog.catalog.clone(),
        package: package.to_owned(),
        channel: channel.name.clone(),
        default,
        entries,
        problems: channel.problems.clone(),
    }
}
