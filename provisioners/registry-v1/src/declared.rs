//! Every property a bundle declares, as its Bundle records it: the items
//! of `metadata/properties.yaml` and of the CSV's `olm.properties`
//! annotation (where OLM reads properties such as
//! `olm.maxOpenShiftVersion`), whatever their type. A property has no
//! meaning to Pakket until something reads it; recording all of them lets
//! `kubectl instance describe`, policies and people see what the author
//! said, not only what the resolver uses.
//!
//! A status is no place for large values: a value over
//! [`MAX_VALUE_BYTES`] is recorded as how large it was, and at most
//! [`MAX_PROPERTIES`] are recorded, in the order declared.

use pakket_api::BundleProperty;
use serde_json::{Value, json};

use crate::bundle::Bundle;

/// The largest value recorded as written (compact JSON).
pub const MAX_VALUE_BYTES: usize = 1024;
/// The most declared properties recorded.
pub const MAX_PROPERTIES: usize = 64;
/// The CSV annotation holding a JSON list of properties.
pub const CSV_ANNOTATION: &str = "olm.properties";

/// The requirements a bundle declares are recorded as the dependency
/// checks read them, not as written (see [`crate::dependencies::provided`]).
const READ_AS_REQUIREMENTS: [&str; 2] = ["olm.package.required", "olm.gvk.required"];

/// Every property `bundle` declares, once each, values over the limit
/// replaced by their size.
pub fn declared(bundle: &Bundle) -> Vec<BundleProperty> {
    let from_csv: Vec<Value> = bundle
        .csv_document
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(CSV_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
        .unwrap_or_default();
    let mut recorded: Vec<BundleProperty> = Vec::new();
    for item in bundle.properties.iter().chain(&from_csv) {
        let Some(type_) = item.get("type").and_then(Value::as_str) else {
            continue;
        };
        if READ_AS_REQUIREMENTS.contains(&type_) {
            continue;
        }
        let value = item.get("value").cloned().unwrap_or(Value::Null);
        let size = serde_json::to_vec(&value).map_or(0, |bytes| bytes.len());
        let value = if size > MAX_VALUE_BYTES {
            json!({ "omitted": format!("{size} bytes, over the {MAX_VALUE_BYTES} a status records; the bundle has it") })
        } else {
            value
        };
        let property = BundleProperty {
            type_: type_.to_owned(),
            value,
        };
        if !recorded.contains(&property) {
            recorded.push(property);
        }
        if recorded.len() == MAX_PROPERTIES {
            break;
        }
    }
    recorded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(properties: Vec<Value>, annotation: Option<&str>) -> Bundle {
        let mut csv = json!({
            "metadata": { "name": "demo.v1.0.0" },
            "spec": { "version": "1.0.0", "install": { "strategy": "deployment" } },
        });
        if let Some(text) = annotation {
            csv["metadata"]["annotations"] = json!({ CSV_ANNOTATION: text });
        }
        Bundle {
            package: "demo".into(),
            csv: serde_json::from_value(csv.clone()).unwrap(),
            csv_document: csv,
            manifests: Vec::new(),
            dependencies: Vec::new(),
            properties,
        }
    }

    #[test]
    fn every_declared_property_is_recorded_once_whatever_its_type() {
        let declared = declared(&bundle(
            vec![
                json!({"type": "olm.maxOpenShiftVersion", "value": "4.18"}),
                json!({"type": "example.com/tier", "value": {"level": "gold"}}),
                json!({"type": "olm.package.required", "value": {"packageName": "db", "versionRange": ">=1"}}),
                json!({"type": "olm.label", "value": {"label": "fast"}}),
                json!({"no": "type"}),
            ],
            Some(
                r#"[{"type": "olm.maxOpenShiftVersion", "value": "4.18"}, {"type": "olm.deprecated", "value": {"message": "use v2"}}]"#,
            ),
        ));
        let types: Vec<&str> = declared.iter().map(|p| p.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "olm.maxOpenShiftVersion",
                "example.com/tier",
                "olm.label",
                "olm.deprecated"
            ]
        );
        assert_eq!(declared[1].value, json!({"level": "gold"}));
    }

    #[test]
    fn a_large_value_is_recorded_as_its_size_and_the_count_is_bounded() {
        let big = "x".repeat(MAX_VALUE_BYTES + 10);
        let mut many: Vec<Value> = (0..MAX_PROPERTIES + 5)
            .map(|i| json!({"type": "example.com/n", "value": i}))
            .collect();
        many.insert(0, json!({"type": "example.com/big", "value": big}));
        let declared = declared(&bundle(many, Some("not json")));
        assert_eq!(declared.len(), MAX_PROPERTIES);
        let omitted = declared[0].value["omitted"].as_str().unwrap();
        assert!(
            omitted.starts_with(&format!("{} bytes", MAX_VALUE_BYTES + 12)),
            "{omitted}"
        );
    }
}
