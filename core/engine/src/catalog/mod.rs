//! File-Based Catalogs (FBC): loading them, several at once, and each
//! channel's update graph.
//!
//! # What is read
//!
//! A catalog is one file or a directory walked recursively in path order;
//! every `.json`, `.yaml` and `.yml` file is read, other files are ignored.
//! A JSON file is a stream of documents (whitespace between them optional),
//! a YAML file a multi-document stream. Each document is an object with a
//! `schema`:
//!
//! ```yaml
//! schema: olm.package
//! name: etcd
//! defaultChannel: alpha
//! ---
//! schema: olm.channel
//! package: etcd
//! name: alpha
//! entries:
//! - name: etcd.v0.9.2
//! - name: etcd.v0.9.4
//!   replaces: etcd.v0.9.2        # also: skips: [..], skipRange: ">=0.9.0 <0.9.4"
//! ---
//! schema: olm.bundle
//! name: etcd.v0.9.4
//! package: etcd
//! image: quay.io/coreos/etcd-operator@sha256:...
//! properties:
//! - {type: olm.package, value: {packageName: etcd, version: 0.9.4}}
//! - {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
//! - {type: olm.package.required, value: {packageName: other, versionRange: ">=1.0.0"}}
//! ---
//! schema: olm.deprecations
//! package: etcd
//! entries:
//! - reference: {schema: olm.bundle, name: etcd.v0.9.2}
//!   message: etcd.v0.9.2 is deprecated; upgrade to etcd.v0.9.4
//! ```
//!
//! ```
//! use pakket_engine::catalog::{Catalog, Format};
//!
//! let text = r#"{"schema":"olm.package","name":"etcd","defaultChannel":"alpha"}
//! {"schema":"olm.channel","package":"etcd","name":"alpha","entries":[{"name":"etcd.v0.9.4"}]}
//! {"schema":"olm.bundle","name":"etcd.v0.9.4","package":"etcd","image":"quay.io/etcd:v0.9.4",
//!  "properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}}]}"#;
//! let catalog = Catalog::from_str(text, "inline.json", Format::Json, "community", 0)?;
//! assert_eq!(catalog.bundles[0].channels, ["alpha"]);
//! assert!(catalog.diagnostics.is_empty());
//! # Ok::<(), pakket_engine::catalog::CatalogError>(())
//! ```
//!
//! A catalog may also hold `helm.chart` documents, one version of a Helm
//! chart each, read into a package, a channel and bundles so charts resolve
//! like bundles (see `helm_chart` for the shape).
//!
//! Documents of other schemas are allowed by FBC; they are listed in
//! [`Catalog::others`] (schema, package, name, origin) without their body.
//! Package icons, `relatedImages` and channel/package `properties` are not
//! kept. Of bundle properties, every one is kept ([`Property`]); unknown types
//! with their raw JSON value, `olm.bundle.object` only by size (manifests come
//! from the image when a bundle is unpacked), `olm.csv.metadata` as the few
//! descriptive fields Pakket shows ([`CsvMetadata`]). What a bundle needs is
//! read into [`Bundle`]: `olm.package.required`, `olm.gvk.required`,
//! `olm.label.required` and `olm.constraint` ([`Constraint`], checked and its
//! CEL compiled at load); [`Catalog::bundle_deprecation`] combines
//! `olm.deprecations` with OLM v0's `olm.deprecated` property.
//!
//! # Errors and diagnostics
//!
//! A [`CatalogError`] stops the load. It is kept for problems after which
//! nothing in a file can be trusted: an unreadable path, a file that is not
//! UTF-8, JSON or YAML that does not parse (named by file, line and column).
//!
//! Everything else is a [`Diagnostic`] (file, document line, object, field,
//! message, advice) and the rest of the catalog loads. One catalog author's
//! mistake must not hide every other package from a cluster, and real
//! catalogs are messy (the community catalog has dangling replaces and
//! channels with several heads). The offending object is left out
//! ([`Severity::Error`]) when keeping it could make resolution wrong: a bundle
//! without an `olm.package` property or with a non-semver version, a bundle
//! whose `olm.package.required` range does not parse or whose `olm.constraint`
//! cannot be evaluated (installing it without its dependency would be
//! unsafe), a channel naming an unknown package, a second bundle with a name
//! already taken. Left-out bundles are also listed in [`Catalog::left_out`],
//! so a resolution that finds nothing of a package can say why. Where leaving out only a field is
//! the conservative choice, only the field goes: a `skipRange` that does not
//! parse removes upgrade edges, never adds one. Suspicious but usable shapes
//! are kept and reported as [`Severity::Warning`]: dangling `replaces`,
//! several heads, replaces cycles, entries without bundles, bundles in no
//! channel, an unknown `defaultChannel`. The codes are in [`DiagnosticCode`].
//!
//! # Update graphs
//!
//! [`UpdateGraph`] follows OLM: an entry upgrades an installed bundle it
//! replaces, skips, or whose version its `skipRange` contains; a head is an
//! entry nothing replaces or skips by name (`skipRange` does not count, as in
//! operator-registry).

mod argument;
mod assemble;
mod constraint;
mod diagnostic;
mod document;
mod graph;
mod helm_chart;
mod load;
mod model;
mod property;
mod set;

pub use argument::CatalogArgument;
pub use constraint::{
    CelRule, Constraint, ConstraintError, Formula, MAX_CONSTRAINT_SIZE, Subject, parse_tolerant,
};
pub use diagnostic::{CatalogError, Diagnostic, DiagnosticCode, Origin, Severity};
pub use document::{Format, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE};
pub use graph::UpdateGraph;
pub use helm_chart::{
    HELM_CHANNEL, SCHEMA_HELM_CHART, TYPE_HELM_CHART, bundle_name as helm_bundle_name,
};
pub use load::CatalogBuilder;
pub(crate) use model::DeprecationIndex;
pub use model::{
    Bundle, Catalog, Channel, ChannelEntry, CsvMetadata, Deprecation, DeprecationEntry,
    DeprecationReference, Gvk, InstallMode, LeftOutBundle, OtherDocument, Package,
    PackageRequirement,
};
pub use property::{
    Property, TYPE_BUNDLE_OBJECT, TYPE_CONSTRAINT, TYPE_CSV_METADATA, TYPE_DEPRECATED, TYPE_GVK,
    TYPE_GVK_REQUIRED, TYPE_LABEL, TYPE_LABEL_REQUIRED, TYPE_PACKAGE, TYPE_PACKAGE_REQUIRED,
};
pub use set::{BundleRef, CatalogSet};

#[cfg(test)]
mod load_tests;
