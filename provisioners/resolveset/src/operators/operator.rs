//! The updates the served catalogs offer an Operator (its types are
//! `pakket-operators-api`'s).

use pakket_engine::Version;
pub use pakket_operators_api::*;

use crate::catalogs::serving::Served;

/// The bundles of the Operator's package in its Catalog newer than
/// `installed`, newest first: in its channel, and (`cross_channel`) only
/// in others; `allowed` says whether its `version` lets it in.
pub fn updates(served: &Served, spec: &OperatorSpec, installed: &Version) -> Vec<Update> {
    let Some(catalog) = served.catalog(&spec.catalog.name) else {
        return Vec::new();
    };
    let package = &spec.catalog.package;
    let channel = spec.catalog.channel.clone().or_else(|| {
        catalog
            .package(package)
            .and_then(|p| p.default_channel.clone())
    });
    let range = spec
        .version
        .as_deref()
        .and_then(|written| crate::inputs::input_request::version_range(written).ok());
    let mut newer: Vec<Update> = catalog
        .bundles_of(package)
        .filter(|bundle| bundle.version > *installed)
        .map(|bundle| Update {
            bundle: bundle.name.clone(),
            version: bundle.version.to_string(),
            channels: bundle.channels.clone(),
            cross_channel: channel
                .as_deref()
                .is_some_and(|channel| !bundle.is_in_channel(channel)),
            allowed: range
                .as_ref()
                .is_none_or(|range| range.contains(&bundle.version)),
        })
        .collect();
    newer.sort_by(|a, b| {
        Version::parse(&b.version)
            .ok()
            .cmp(&Version::parse(&a.version).ok())
            .then_with(|| a.bundle.cmp(&b.bundle))
    });
    newer
}
