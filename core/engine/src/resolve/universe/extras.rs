//! What the universe knows of a bundle beyond the fields of
//! [`Candidate`](super::Candidate): the labels and constraints it requires,
//! deprecations, its properties for CEL rules, and the bundles catalogs left
//! out while loading. Kept apart from `Candidate`, and set through
//! [`Universe`]'s methods, so code that builds candidates field by field
//! keeps compiling.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{BundleIndex, Universe};
use crate::Version;
use crate::catalog::{
    Constraint, Gvk, Property, Subject, TYPE_GVK, TYPE_GVK_REQUIRED, TYPE_LABEL,
    TYPE_LABEL_REQUIRED, TYPE_PACKAGE, TYPE_PACKAGE_REQUIRED,
};
use crate::resolve::from_catalogs::gvk_key;

/// What a bundle needs or is beyond the fields of `Candidate`.
#[derive(Clone, Debug, Default)]
pub(super) struct Extras {
    required_labels: Vec<String>,
    constraints: Vec<Arc<Constraint>>,
    deprecation: Option<String>,
    properties: Option<Arc<[Property]>>,
}

/// A bundle a catalog left out while loading, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The bundle's name.
    pub bundle: String,
    /// Index into [`Universe::catalogs`].
    pub catalog: usize,
    /// Why it was left out.
    pub reason: String,
}

impl Universe {
    /// Records that `bundle` requires some bundle carrying `olm.label` `label`.
    pub fn require_label(&mut self, bundle: BundleIndex, label: impl Into<String>) {
        self.extras
            .entry(bundle)
            .or_default()
            .required_labels
            .push(label.into());
    }

    /// Records that `bundle` requires some bundle satisfying `constraint`.
    pub fn add_constraint(&mut self, bundle: BundleIndex, constraint: Arc<Constraint>) {
        self.extras
            .entry(bundle)
            .or_default()
            .constraints
            .push(constraint);
    }

    /// Marks `bundle` deprecated whatever channel it is used through; it is
    /// then chosen only when nothing else fits.
    pub fn deprecate(&mut self, bundle: BundleIndex, reason: impl Into<String>) {
        self.ranks.take();
        self.extras.entry(bundle).or_default().deprecation = Some(reason.into());
    }

    /// Marks channel `channel` of `package` in `catalog` deprecated: its
    /// bundles are then chosen through it only when nothing else fits.
    pub fn deprecate_channel(
        &mut self,
        package: &str,
        catalog: usize,
        channel: &str,
        reason: impl Into<String>,
    ) {
        self.ranks.take();
        self.channel_deprecations.insert(
            (package.to_owned(), catalog, channel.to_owned()),
            reason.into(),
        );
    }

    /// Gives `bundle`'s properties, for CEL rules (without them, rules see
    /// properties made from the candidate's package, APIs and labels).
    pub fn set_properties(&mut self, bundle: BundleIndex, properties: Arc<[Property]>) {
        self.extras.entry(bundle).or_default().properties = Some(properties);
    }

    /// Records that `catalog` left out bundle `bundle` of `package` while
    /// loading, so an explanation can say why nothing of it fits.
    pub fn record_left_out(
        &mut self,
        package: &str,
        bundle: impl Into<String>,
        catalog: usize,
        reason: impl Into<String>,
    ) {
        self.left_out
            .entry(package.to_owned())
            .or_default()
            .push(LeftOut {
                bundle: bundle.into(),
                catalog,
                reason: reason.into(),
            });
    }

    /// The labels `bundle` requires.
    pub fn required_labels(&self, bundle: BundleIndex) -> &[String] {
        self.extras
            .get(&bundle)
            .map(|extras| extras.required_labels.as_slice())
            .unwrap_or_default()
    }

    /// The constraints `bundle` must see satisfied.
    pub fn constraints(&self, bundle: BundleIndex) -> &[Arc<Constraint>] {
        self.extras
            .get(&bundle)
            .map(|extras| extras.constraints.as_slice())
            .unwrap_or_default()
    }

    /// Why `bundle` is deprecated whatever its channel, if it is.
    pub fn deprecation(&self, bundle: BundleIndex) -> Option<&str> {
        self.extras.get(&bundle)?.deprecation.as_deref()
    }

    /// Why `channel` of `bundle`'s package (in its catalog) is deprecated, if it is.
    pub fn channel_deprecation(&self, bundle: BundleIndex, channel: &str) -> Option<&str> {
        let candidate = &self.bundles[bundle];
        // Lookups by borrowed parts would need a custom key; deprecated
        // channels are rare, so skip the allocation when there are none.
        if self.channel_deprecations.is_empty() {
            return None;
        }
        let key = (
            candidate.package.clone(),
            candidate.catalog,
            channel.to_owned(),
        );
        self.channel_deprecations.get(&key).map(String::as_str)
    }

    /// Whether `bundle` is chosen only when nothing else fits: deprecated
    /// itself, or listed only in deprecated channels.
    pub fn is_deprecated(&self, bundle: BundleIndex) -> bool {
        let ranks = self.ranks();
        ranks.deprecated[bundle]
            || (!ranks.positions[bundle].is_empty()
                && ranks.positions[bundle].iter().all(|position| position.0))
    }

    /// The bundles of `package` its catalogs left out while loading.
    pub fn left_out(&self, package: &str) -> &[LeftOut] {
        self.left_out
            .get(package)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// `bundle`'s properties as CEL rules see them: `{type, value}` objects.
    pub fn cel_properties(&self, bundle: BundleIndex) -> Vec<Value> {
        let entry = |kind: &str, value: Value| json!({"type": kind, "value": value});
        if let Some(properties) = self
            .extras
            .get(&bundle)
            .and_then(|extras| extras.properties.as_ref())
        {
            return properties
                .iter()
                .map(|property| entry(property.kind(), property.value_json()))
                .collect();
        }
        let candidate = &self.bundles[bundle];
        let gvk = |key: &str| {
            let mut parts = key.rsplitn(3, '/');
            let (kind, version, group) = (parts.next(), parts.next(), parts.next());
            json!({"group": group.unwrap_or_default(), "version": version.unwrap_or_default(), "kind": kind.unwrap_or_default()})
        };
        let mut properties = vec![entry(
            TYPE_PACKAGE,
            json!({"packageName": candidate.package, "version": candidate.version.as_written()}),
        )];
        properties.extend(
            candidate
                .provides
                .iter()
                .map(|key| entry(TYPE_GVK, gvk(key))),
        );
        properties.extend(
            candidate
                .labels
                .iter()
                .map(|label| entry(TYPE_LABEL, json!({ "label": label }))),
        );
        properties.extend(candidate.requires_packages.iter().map(|(package, range)| {
            entry(
                TYPE_PACKAGE_REQUIRED,
                json!({"packageName": package, "versionRange": range.as_written()}),
            )
        }));
        properties.extend(
            candidate
                .requires_gvks
                .iter()
                .map(|key| entry(TYPE_GVK_REQUIRED, gvk(key))),
        );
        properties.extend(
            self.required_labels(bundle)
                .iter()
                .map(|label| entry(TYPE_LABEL_REQUIRED, json!({ "label": label }))),
        );
        properties
    }

    /// `bundle` as constraint formulas see it.
    pub(crate) fn subject(&self, bundle: BundleIndex) -> impl Subject + '_ {
        BundleSubject {
            universe: self,
            bundle,
        }
    }
}

struct BundleSubject<'u> {
    universe: &'u Universe,
    bundle: BundleIndex,
}

impl Subject for BundleSubject<'_> {
    fn package(&self) -> &str {
        &self.universe.bundles[self.bundle].package
    }

    fn version(&self) -> &Version {
        &self.universe.bundles[self.bundle].version
    }

    fn provides(&self, gvk: &Gvk) -> bool {
        let key = gvk_key(gvk);
        self.universe.bundles[self.bundle].provides.contains(&key)
    }

    fn properties(&self) -> Vec<Value> {
        self.universe.cel_properties(self.bundle)
    }
}
