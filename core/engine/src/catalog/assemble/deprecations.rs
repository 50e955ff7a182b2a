//! Checking `olm.deprecations` documents against the packages, channels and
//! bundles assembled before them.

use std::collections::{HashMap, HashSet};

use super::Assembly;
use crate::catalog::diagnostic::{Diagnostic, DiagnosticCode, Origin};
use crate::catalog::document::{
    DeprecationsDoc, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE, describe,
};
use crate::catalog::model::{Deprecation, DeprecationEntry, DeprecationReference};

impl Assembly {
    /// Checks every `olm.deprecations` document against the packages,
    /// channels and bundles already assembled.
    pub(super) fn deprecations(&mut self, docs: Vec<(Origin, DeprecationsDoc)>) {
        if docs.is_empty() {
            return;
        }
        let catalog = &self.catalog;
        // What a bundle reference may name, (package, bundle): a bundle of the
        // package or an entry of one of its channels. Indexed once, for the
        // packages that have deprecations, so each reference is one lookup
        // and not a scan of every bundle.
        let wanted: HashSet<&str> = docs.iter().map(|(_, doc)| doc.package.as_str()).collect();
        let mut known: HashSet<(&str, &str)> = catalog
            .bundles
            .iter()
            .filter(|b| wanted.contains(b.package.as_str()))
            .map(|b| (b.package.as_str(), b.name.as_str()))
            .collect();
        for package in wanted.iter().filter_map(|name| catalog.packages.get(*name)) {
            for channel in package.channels.values() {
                known.extend(
                    channel
                        .entries
                        .iter()
                        .map(|entry| (package.name.as_str(), entry.name.as_str())),
                );
            }
        }
        let mut first: HashMap<String, Origin> = catalog
            .deprecations
            .iter()
            .map(|d| (d.package.clone(), d.origin.clone()))
            .collect();
        let mut accepted = Vec::new();
        let mut found = Vec::new();
        for (origin, doc) in docs {
            let name = describe(SCHEMA_DEPRECATIONS, Some(&doc.package), None);
            let diagnostic =
                |code, message: String| Diagnostic::new(code, origin.clone(), &name, message);
            let Some(package) = catalog.packages.get(&doc.package) else {
                let message = format!(
                    "the deprecations name package {:?}, which has no olm.package document",
                    doc.package
                );
                found.push(
                    diagnostic(DiagnosticCode::UnknownPackage, message).with_field("package"),
                );
                continue;
            };
            if let Some(at) = first.get(&doc.package) {
                let message = format!("the package's deprecations are already defined at {at}");
                found.push(diagnostic(DiagnosticCode::DuplicateDeprecations, message));
                continue;
            }
            first.insert(doc.package.clone(), origin.clone());
            let mut entries: Vec<DeprecationEntry> = Vec::new();
            let mut references: HashSet<DeprecationReference> = HashSet::new();
            for (i, entry) in doc.entries.unwrap_or_default().into_iter().enumerate() {
                let target = entry.reference.name.filter(|n| !n.is_empty());
                let reference = match (entry.reference.schema.as_str(), target) {
                    (SCHEMA_PACKAGE, None) => Ok(DeprecationReference::Package),
                    (SCHEMA_PACKAGE, Some(_)) => {
                        Err("an olm.package reference must not have a name".to_owned())
                    }
                    (SCHEMA_CHANNEL, Some(channel)) if package.channels.contains_key(&channel) => {
                        Ok(DeprecationReference::Channel(channel))
                    }
                    (SCHEMA_BUNDLE, Some(bundle))
                        if known.contains(&(doc.package.as_str(), bundle.as_str())) =>
                    {
                        Ok(DeprecationReference::Bundle(bundle))
                    }
                    (schema @ (SCHEMA_CHANNEL | SCHEMA_BUNDLE), Some(target)) => Err(format!(
                        "{schema} {target:?} is not in package {:?}",
                        doc.package
                    )),
                    (schema @ (SCHEMA_CHANNEL | SCHEMA_BUNDLE), None) => {
                        Err(format!("an {schema} reference needs a name"))
                    }
                    (schema, _) => Err(format!(
                        "reference schema {schema:?} is not olm.package, olm.channel or olm.bundle"
                    )),
                };
                let reference = reference.and_then(|reference| {
                    if entry.message.is_empty() {
                        Err("the entry has an empty message".to_owned())
                    } else if references.contains(&reference) {
                        Err(
                            "the reference is deprecated more than once; the first entry is used"
                                .to_owned(),
                        )
                    } else {
                        Ok(reference)
                    }
                });
                match reference {
                    Ok(reference) => {
                        references.insert(reference.clone());
                        entries.push(DeprecationEntry {
                            reference,
                            message: entry.message,
                        });
                    }
                    Err(message) => {
                        found.push(
                            diagnostic(DiagnosticCode::InvalidDeprecation, message)
                                .with_field(format!("entries[{i}]")),
                        );
                    }
                }
            }
            accepted.push(Deprecation {
                package: doc.package,
                entries,
                origin,
            });
        }
        self.catalog.deprecations.extend(accepted);
        self.diagnostics.extend(found);
    }
}
