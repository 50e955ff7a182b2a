//! Assembling decoded documents into a checked catalog: cross-document
//! rules (unknown packages, duplicates, membership) and graph checks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::diagnostic::{Diagnostic, DiagnosticCode, Origin, Severity, object};
use super::document::{
    BundleDoc, ChannelDoc, Document, PackageDoc, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE,
    describe,
};
use super::graph::UpdateGraph;
use super::model::{Bundle, Catalog, Channel, ChannelEntry, LeftOutBundle, Package};
use super::property::{self, Property};
use crate::{Range, Version};

mod deprecations;

/// Builds the catalog from every decoded document, whatever their order.
pub(crate) fn assemble(
    name: String,
    priority: i32,
    documents: Vec<(Origin, Document)>,
    diagnostics: Vec<Diagnostic>,
) -> Catalog {
    let mut assembly = Assembly {
        catalog: Catalog {
            name,
            priority,
            ..Catalog::default()
        },
        diagnostics,
    };
    // Packages first: channels, bundles and deprecations refer to them.
    let mut channels = Vec::new();
    let mut bundles = Vec::new();
    let mut deprecations = Vec::new();
    let mut charts = Vec::new();
    for (origin, document) in documents {
        match document {
            Document::Package(doc) => assembly.package(origin, doc),
            Document::Channel(doc) => channels.push((origin, doc)),
            Document::Bundle(doc) => bundles.push((origin, doc)),
            Document::Deprecations(doc) => deprecations.push((origin, doc)),
            Document::HelmChart(doc) => charts.push((origin, doc)),
            Document::Other(other) => assembly.catalog.others.push(other),
        }
    }
    // Charts become a package, a channel and bundles (`helm_chart`).
    let packages = assembly
        .catalog
        .packages
        .keys()
        .cloned()
        .collect::<HashSet<_>>();
    let expanded = super::helm_chart::expand(
        charts,
        &|name| packages.contains(name),
        &mut assembly.diagnostics,
    );
    for (origin, document) in expanded {
        match document {
            Document::Package(doc) => assembly.package(origin, doc),
            Document::Channel(doc) => channels.push((origin, doc)),
            Document::Bundle(doc) => bundles.push((origin, doc)),
            _ => {}
        }
    }
    for (origin, doc) in channels {
        assembly.channel(origin, doc);
    }
    let mut names = HashSet::new();
    for (origin, doc) in bundles {
        assembly.bundle(origin, doc, &mut names);
    }
    assembly.link_channels_and_bundles();
    assembly.deprecations(deprecations);
    assembly.check_graphs();
    let mut catalog = assembly.catalog;
    catalog.diagnostics = assembly.diagnostics;
    catalog.diagnostics.sort_by(|a, b| a.origin.cmp(&b.origin));
    catalog
}

struct Assembly {
    catalog: Catalog,
    diagnostics: Vec<Diagnostic>,
}

impl Assembly {
    fn report(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    fn package(&mut self, origin: Origin, doc: PackageDoc) {
        let name = object(SCHEMA_PACKAGE, &doc.name);
        if doc.name.is_empty() {
            let message = "the package has an empty name";
            self.report(Diagnostic::new(
                DiagnosticCode::EmptyName,
                origin,
                name,
                message,
            ));
            return;
        }
        if let Some(first) = self.catalog.packages.get(&doc.name) {
            let message = format!("the package is already defined at {}", first.origin);
            self.report(Diagnostic::new(
                DiagnosticCode::DuplicatePackage,
                origin,
                name,
                message,
            ));
            return;
        }
        let package = Package {
            name: doc.name.clone(),
            default_channel: doc.default_channel.filter(|c| !c.is_empty()),
            channels: BTreeMap::new(),
            description: doc.description.filter(|d| !d.is_empty()),
            origin,
        };
        self.catalog.packages.insert(doc.name, package);
    }

    fn channel(&mut self, origin: Origin, doc: ChannelDoc) {
        let name = describe(SCHEMA_CHANNEL, Some(&doc.package), Some(&doc.name));
        let diagnostic =
            |code, message: String| Diagnostic::new(code, origin.clone(), &name, message);
        if let Some(field) = empty_field(&doc.name, &doc.package) {
            let message = format!("the channel has an empty {field}");
            self.report(diagnostic(DiagnosticCode::EmptyName, message).with_field(field));
            return;
        }
        let Some(package) = self.catalog.packages.get(&doc.package) else {
            let message = format!(
                "the channel names package {:?}, which has no olm.package document",
                doc.package
            );
            self.report(diagnostic(DiagnosticCode::UnknownPackage, message).with_field("package"));
            return;
        };
        if let Some(first) = package.channels.get(&doc.name) {
            let message = format!("the channel is already defined at {}", first.origin);
            self.report(diagnostic(DiagnosticCode::DuplicateChannel, message));
            return;
        }
        let raw = doc.entries.unwrap_or_default();
        // Which entries repeat an earlier name: a set, not a scan of the
        // entries so far, as channels can list thousands of bundles.
        let repeated: Vec<bool> = {
            let mut listed: HashSet<&str> = HashSet::with_capacity(raw.len());
            raw.iter()
                .map(|entry| !entry.name.is_empty() && !listed.insert(entry.name.as_str()))
                .collect()
        };
        let mut entries: Vec<ChannelEntry> = Vec::with_capacity(raw.len());
        let mut found = Vec::new();
        for (i, entry) in raw.into_iter().enumerate() {
            if entry.name.is_empty() {
                let message = "the entry has an empty name and is left out".into();
                found.push(
                    diagnostic(DiagnosticCode::EmptyName, message)
                        .with_field(format!("entries[{i}].name")),
                );
                continue;
            }
            if repeated[i] {
                let message = format!(
                    "bundle {:?} is listed more than once; the first entry is used",
                    entry.name
                );
                found.push(
                    diagnostic(DiagnosticCode::DuplicateEntry, message)
                        .with_field(format!("entries[{i}].name")),
                );
                continue;
            }
            let skip_range = match entry.skip_range.filter(|r| !r.is_empty()) {
                None => None,
                Some(text) => match Range::parse(&text) {
                    Ok(range) => Some(range),
                    Err(error) => {
                        let message = format!(
                            "entry {:?}: {error}; the entry is kept without it",
                            entry.name
                        );
                        found.push(
                            diagnostic(DiagnosticCode::InvalidSkipRange, message)
                                .with_field(format!("entries[{i}].skipRange")),
                        );
                        None
                    }
                },
            };
            entries.push(ChannelEntry {
                name: entry.name,
                replaces: entry.replaces.filter(|r| !r.is_empty()),
                skips: entry
                    .skips
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect(),
                skip_range,
            });
        }
        if entries.is_empty() {
            found.push(diagnostic(
                DiagnosticCode::EmptyChannel,
                "the channel has no entries".into(),
            ));
        }
        self.diagnostics.extend(found);
        let channel = Channel {
            package: doc.package.clone(),
            name: doc.name.clone(),
            entries,
            origin,
        };
        if let Some(package) = self.catalog.packages.get_mut(&doc.package) {
            package.channels.insert(doc.name, channel);
        }
    }

    fn bundle(&mut self, origin: Origin, doc: BundleDoc, names: &mut HashSet<String>) {
        let (name, package) = (doc.name.clone(), doc.package.clone());
        let before = self.diagnostics.len();
        match self.build_bundle(origin.clone(), doc, names) {
            Some(bundle) => self.catalog.bundles.push(bundle),
            // Without a name and package, nothing could ask for it anyway.
            None if !name.is_empty() && !package.is_empty() => {
                let reasons: Vec<String> = self.diagnostics[before..]
                    .iter()
                    .filter(|d| d.severity() == Severity::Error)
                    .map(|d| {
                        let message = left_out_reason(&d.message);
                        match &d.field {
                            Some(field) => format!("{field}: {message}"),
                            None => message.to_owned(),
                        }
                    })
                    .collect();
                self.catalog.left_out.push(LeftOutBundle {
                    name,
                    package,
                    reason: reasons.join("; "),
                    origin,
                });
            }
            None => {}
        }
    }

    /// The bundle of `doc`, or `None` (with diagnostics) when it is left out.
    fn build_bundle(
        &mut self,
        origin: Origin,
        doc: BundleDoc,
        names: &mut HashSet<String>,
    ) -> Option<Bundle> {
        let name = object(SCHEMA_BUNDLE, &doc.name);
        let diagnostic =
            |code, message: String| Diagnostic::new(code, origin.clone(), &name, message);
        if let Some(field) = empty_field(&doc.name, &doc.package) {
            let message = format!("the bundle has an empty {field}");
            self.report(diagnostic(DiagnosticCode::EmptyName, message).with_field(field));
            return None;
        }
        let mut properties = Vec::new();
        let mut failed = false;
        for (i, raw) in doc.properties.unwrap_or_default().into_iter().enumerate() {
            match property::decode(raw) {
                Ok(property) => properties.push(property),
                Err(error) => {
                    let field = format!("properties[{i}].{}", error.field);
                    let left_out = error.code.severity() == Severity::Error;
                    let suffix = if left_out {
                        "the bundle is left out"
                    } else {
                        "the property is kept raw"
                    };
                    let message = format!("{}; {suffix}", error.message);
                    self.report(diagnostic(error.code, message).with_field(field));
                    failed |= left_out;
                    properties.extend(error.fallback.map(|property| *property));
                }
            }
        }
        if failed {
            return None;
        }
        let packages: Vec<(&String, &Version)> = properties
            .iter()
            .filter_map(|p| match p {
                Property::Package { package, version } => Some((package, version)),
                _ => None,
            })
            .collect();
        let (package, version) = match packages.as_slice() {
            [] => {
                let message =
                    "the bundle has no olm.package property, so it has no version; it is left out";
                self.report(
                    diagnostic(DiagnosticCode::MissingPackageProperty, message.into())
                        .with_field("properties"),
                );
                return None;
            }
            [one] => *one,
            [_, _, ..] => {
                let message = format!(
                    "the bundle has {} olm.package properties; it is left out",
                    packages.len()
                );
                self.report(
                    diagnostic(DiagnosticCode::MultiplePackageProperties, message)
                        .with_field("properties"),
                );
                return None;
            }
        };
        if *package != doc.package {
            let message = format!(
                "the bundle's package is {:?} but its olm.package property says {package:?}; it is left out",
                doc.package
            );
            self.report(diagnostic(DiagnosticCode::PackageMismatch, message).with_field("package"));
            return None;
        }
        if !self.catalog.packages.contains_key(&doc.package) {
            let message = format!(
                "the bundle names package {:?}, which has no olm.package document; it is left out",
                doc.package
            );
            self.report(diagnostic(DiagnosticCode::UnknownPackage, message).with_field("package"));
            return None;
        }
        if names.contains(&doc.name) {
            let message = format!(
                "another bundle (version {version}) already has this name; this one is left out"
            );
            self.report(diagnostic(DiagnosticCode::DuplicateBundle, message).with_field("name"));
            return None;
        }
        let version = version.clone();
        names.insert(doc.name.clone());
        let mut bundle = Bundle {
            name: doc.name,
            package: doc.package,
            version,
            image: doc.image.unwrap_or_default(),
            channels: Vec::new(),
            provided_gvks: Vec::new(),
            required_packages: Vec::new(),
            required_gvks: Vec::new(),
            labels: Vec::new(),
            required_labels: Vec::new(),
            constraints: Vec::new(),
            deprecated: false,
            csv_metadata: None,
            properties: Vec::new(),
            origin,
        };
        for property in &properties {
            match property {
                Property::Gvk(gvk) => bundle.provided_gvks.push(gvk.clone()),
                Property::GvkRequired(gvk) => bundle.required_gvks.push(gvk.clone()),
                Property::PackageRequired(requirement) => {
                    bundle.required_packages.push(requirement.clone());
                }
                Property::Label(label) => bundle.labels.push(label.clone()),
                Property::LabelRequired(label) => bundle.required_labels.push(label.clone()),
                Property::Constraint { constraint, .. } => {
                    bundle.constraints.push(Arc::clone(constraint));
                }
                Property::Deprecated => bundle.deprecated = true,
                Property::CsvMetadata(metadata) if bundle.csv_metadata.is_none() => {
                    bundle.csv_metadata = Some(Arc::clone(metadata));
                }
                _ => {}
            }
        }
        bundle.properties = properties;
        Some(bundle)
    }

    /// Fills [`Bundle::channels`] and reports entries without bundles and
    /// bundles in no channel.
    fn link_channels_and_bundles(&mut self) {
        let catalog = &mut self.catalog;
        let index: HashMap<&str, usize> = catalog
            .bundles
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.as_str(), i))
            .collect();
        let mut memberships: Vec<Vec<String>> = vec![Vec::new(); catalog.bundles.len()];
        for package in catalog.packages.values() {
            for channel in package.channels.values() {
                for (i, entry) in channel.entries.iter().enumerate() {
                    match index.get(entry.name.as_str()) {
                        Some(&b) if catalog.bundles[b].package == package.name => {
                            memberships[b].push(channel.name.clone());
                        }
                        found => {
                            let why = match found {
                                Some(&b) => format!(
                                    "is a bundle of package {:?}",
                                    catalog.bundles[b].package
                                ),
                                None => "has no olm.bundle document".to_owned(),
                            };
                            let message = format!("entry {:?} {why}", entry.name);
                            let name = format!("{}/{}", package.name, channel.name);
                            self.diagnostics.push(
                                Diagnostic::new(
                                    DiagnosticCode::EntryWithoutBundle,
                                    channel.origin.clone(),
                                    object(SCHEMA_CHANNEL, &name),
                                    message,
                                )
                                .with_field(format!("entries[{i}].name")),
                            );
                        }
                    }
                }
            }
            if let Some(default) = &package.default_channel
                && !package.channels.contains_key(default)
            {
                let message = format!("defaultChannel {default:?} is not a channel of the package");
                self.diagnostics.push(
                    Diagnostic::new(
                        DiagnosticCode::UnknownDefaultChannel,
                        package.origin.clone(),
                        object(SCHEMA_PACKAGE, &package.name),
                        message,
                    )
                    .with_field("defaultChannel"),
                );
            }
        }
        for (bundle, mut channels) in catalog.bundles.iter_mut().zip(memberships) {
            channels.sort();
            if channels.is_empty() {
                let message = format!(
                    "no channel of package {:?} lists the bundle",
                    bundle.package
                );
                self.diagnostics.push(Diagnostic::new(
                    DiagnosticCode::BundleNotInChannel,
                    bundle.origin.clone(),
                    object(SCHEMA_BUNDLE, &bundle.name),
                    message,
                ));
            }
            bundle.channels = channels;
        }
    }

    fn check_graphs(&mut self) {
        let bundles: HashMap<&str, &Bundle> = self
            .catalog
            .bundles
            .iter()
            .map(|b| (b.name.as_str(), b))
            .collect();
        for package in self.catalog.packages.values() {
            for channel in package.channels.values() {
                let version_of = |name: &str| {
                    let bundle = bundles.get(name).filter(|b| b.package == package.name)?;
                    Some(&bundle.version)
                };
                let graph = UpdateGraph::new(channel, version_of);
                self.diagnostics.extend(graph.check());
            }
        }
    }
}

/// A left-out bundle's diagnostic message without its "it is left out"
/// ending: the explanation that quotes it says so in its own words.
fn left_out_reason(message: &str) -> &str {
    [
        "; the bundle is left out",
        "; it is left out",
        "; this one is left out",
    ]
    .iter()
    .find_map(|suffix| message.strip_suffix(suffix))
    .unwrap_or(message)
}

/// The first of `name` and `package` that is empty, as its field name.
fn empty_field(name: &str, package: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("name")
    } else if package.is_empty() {
        Some("package")
    } else {
        None
    }
}
