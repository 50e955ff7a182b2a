//! `force: true` (the seed's `force` InputClass): the Input gets the bundle
//! that best matches it on its own, and the resolver is not engaged for
//! it: nothing it needs is brought in, and no other Input can push it to
//! another version. What it needs and does not find, its child's own
//! provisioner reports (`DependenciesMissing`, naming it).
//!
//! The best match, in order: not deprecated; from the catalog of highest
//! priority; in the channel the Input names, else in its package's default
//! channel; the highest version; the name, so the choice is stable.

use pakket_engine::resolve::{BundleIndex, Request, Universe};

use crate::protocol::resolve::{Selection, SelectionReason};

/// The bundle a forced `request` gets, if any matches.
pub fn best_match(universe: &Universe, request: &Request) -> Option<BundleIndex> {
    let pool: Vec<BundleIndex> = match request {
        Request::Package { package, .. } => universe
            .package(package)
            .map(|info| info.bundles.clone())
            .unwrap_or_default(),
        Request::BundleName(name) => universe.bundles_named(name),
        Request::Gvk(gvk) => universe.providers(gvk).to_vec(),
        Request::Label(_) => (0..universe.bundles.len()).collect(),
    };
    let channel = match request {
        Request::Package { channel, .. } => channel.as_deref(),
        _ => None,
    };
    pool.into_iter()
        .filter(|&bundle| universe.satisfies(bundle, request))
        .min_by(|&a, &b| {
            let rank = |bundle: BundleIndex| {
                let candidate = &universe.bundles[bundle];
                let in_channel = match channel {
                    Some(_) => true,
                    None => universe.default_channel_of(bundle).is_some_and(|default| {
                        candidate.channels.iter().any(|c| c.channel == default)
                    }),
                };
                (
                    universe.is_deprecated(bundle),
                    universe.catalogs[candidate.catalog].priority.wrapping_neg(),
                    !in_channel,
                )
            };
            rank(a).cmp(&rank(b)).then_with(|| {
                let (x, y) = (&universe.bundles[a], &universe.bundles[b]);
                y.version.cmp(&x.version).then_with(|| x.name.cmp(&y.name))
            })
        })
}

/// The set's entry for the bundle a forced `request` got.
pub fn selection(universe: &Universe, bundle: BundleIndex, request: &Request) -> Selection {
    let candidate = &universe.bundles[bundle];
    let channel = match request {
        Request::Package {
            channel: Some(channel),
            ..
        } => Some(channel.clone()),
        _ => universe
            .default_channel_of(bundle)
            .filter(|default| candidate.channels.iter().any(|c| c.channel == *default))
            .map(str::to_owned)
            .or_else(|| candidate.channels.first().map(|c| c.channel.clone())),
    };
    Selection {
        package: candidate.package.clone(),
        version: candidate.version.to_string(),
        bundle: candidate.name.clone(),
        channel,
        catalog: universe.catalogs[candidate.catalog].name.clone(),
        reason: SelectionReason::Requested {
            request: request.to_string(),
            replaces: None,
        },
        deprecated: universe.deprecation(bundle).map(str::to_owned),
    }
}
