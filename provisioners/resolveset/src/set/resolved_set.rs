//! The set's entries, computed from a resolution on the server (the file's
//! types and reading are `pakket-resolve-api`'s).

use std::collections::BTreeMap;

use serde_json::json;

use pakket_resolve_api::input::ResolvedInstance;
use pakket_resolve_api::protocol::resolve::Selection;
pub use pakket_resolve_api::resolved_set::*;

use crate::catalogs::serving::Served;

/// The set's entries from the resolution, the served catalogs (images and
/// APIs), what each Input got (who needs what) and the set it replaces.
pub fn entries(
    set: &[Selection],
    served: &Served,
    answers: &BTreeMap<String, Vec<ResolvedInstance>>,
    previous: &[Entry],
) -> Vec<Entry> {
    let mut needed_by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (input, instances) in answers {
        for instance in instances {
            for relation in &instance.satisfies {
                let who = match relation.kind.as_str() {
                    "Input" => format!("Input {input}"),
                    _ => format!("{} {}", relation.kind, relation.name),
                };
                needed_by
                    .entry(instance.bundle.as_str())
                    .or_default()
                    .push(who);
            }
        }
    }
    let mut entries: Vec<Entry> = set
        .iter()
        .map(|selection| {
            let bundle = served
                .set
                .catalog_index(&selection.catalog)
                .and_then(|index| served.set.find_bundle_in(index, &selection.bundle))
                .map(|r| served.set.bundle(r));
            let mut properties = vec![json!({
                "type": "olm.package",
                "value": { "packageName": selection.package, "version": selection.version },
            })];
            if let Some(bundle) = bundle {
                properties.extend(bundle.provided_gvks.iter().map(|gvk| {
                    json!({
                        "type": "olm.gvk",
                        "value": { "group": gvk.group, "version": gvk.version, "kind": gvk.kind },
                    })
                }));
            }
            if let Some(before) = previous.iter().find(|entry| {
                entry.package_name == selection.package && entry.name != selection.bundle
            }) {
                properties.push(json!({ "type": "pivotFrom", "value": before.name }));
            }
            let mut who = needed_by
                .get(selection.bundle.as_str())
                .cloned()
                .unwrap_or_default();
            who.sort();
            who.dedup();
            if !who.is_empty() {
                properties.push(json!({ "type": NEEDED_BY, "value": who }));
            }
            // A chart's bundle says so (`helm.chart` documents, read by the
            // engine); the class's matchSchema picks its class.
            let is_chart = bundle.is_some_and(|b| {
                b.properties
                    .iter()
                    .any(|p| p.kind() == pakket_engine::catalog::TYPE_HELM_CHART)
            });
            let schema = if is_chart {
                pakket_engine::catalog::SCHEMA_HELM_CHART
            } else {
                pakket_engine::catalog::SCHEMA_BUNDLE
            };
            Entry {
                schema: schema.into(),
                name: selection.bundle.clone(),
                package_name: selection.package.clone(),
                version: selection.version.clone(),
                image: bundle.map(|b| b.image.clone()).unwrap_or_default(),
                catalog: selection.catalog.clone(),
                channel: selection.channel.clone(),
                properties,
                config: None,
            }
        })
        .collect();
    entries.sort_by(|a, b| a.package_name.cmp(&b.package_name));
    entries
}
