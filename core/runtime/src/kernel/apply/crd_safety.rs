//! CRD upgrade safety: whether replacing a CustomResourceDefinition that
//! is on the cluster with the one a new Bundle holds could break what is
//! stored or what clients rely on. Pure: it compares two CRDs as JSON.
//!
//! Refused: a served or stored version removed, the scope changed, and per
//! version present in both: a property removed, a property newly required,
//! a type changed, an enum narrowed (a value removed), bounds narrowed
//! (`minimum`, `minLength`, `minItems`, `minProperties` raised; `maximum`,
//! `maxLength`, `maxItems`, `maxProperties` lowered or newly set), a
//! `default` added, changed or removed on an existing field. Only
//! differences count: a schema unchanged, or a problem the old CRD already
//! had, never blocks (the false positives operator-controller users met).
//! Adding an optional property (with or without a default), a version, an
//! enum value, relaxing a bound or changing a description passes.
//!
//! Beside the schema diff, [`breaking_objects`] reads the CRD's existing
//! custom resources and names the ones the new schema would refuse
//! ([`instances`], validated by the pure [`validate`]).

use serde_json::{Map, Value};

mod instances;
mod validate;

pub use instances::breaking as breaking_objects;

/// Every reason replacing `old` with `new` is unsafe, sorted; empty when
/// it is safe.
pub fn problems(old: &Value, new: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let text = |crd: &Value, pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (old_scope, new_scope) = (text(old, "/spec/scope"), text(new, "/spec/scope"));
    if old_scope != new_scope {
        found.push(format!("its scope changes from {old_scope} to {new_scope}"));
    }
    let old_versions = versions(old);
    let new_versions = versions(new);
    for (name, old_version) in &old_versions {
        let Some((_, new_version)) = new_versions.iter().find(|(other, _)| other == name) else {
            let role = if flag(old_version, "storage") {
                "stored"
            } else if flag(old_version, "served") {
                "served"
            } else {
                continue;
            };
            found.push(format!("version {name} ({role}) is removed"));
            continue;
        };
        if flag(old_version, "served") && !flag(new_version, "served") {
            found.push(format!("version {name} is no longer served"));
        }
        if let (Some(old_schema), Some(new_schema)) = (
            old_version.pointer("/schema/openAPIV3Schema"),
            new_version.pointer("/schema/openAPIV3Schema"),
        ) {
            compare(name, "", old_schema, new_schema, &mut found);
        }
    }
    found.sort();
    found.dedup();
    found
}

fn versions(crd: &Value) -> Vec<(String, Value)> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|version| {
            let name = version.get("name")?.as_str()?.to_owned();
            Some((name, version.clone()))
        })
        .collect()
}

fn flag(version: &Value, name: &str) -> bool {
    version.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Compares one schema node (at `path`, `.spec.size` style) of `version`.
fn compare(version: &str, path: &str, old: &Value, new: &Value, found: &mut Vec<String>) {
    let at = |what: String| {
        let place = if path.is_empty() { "." } else { path };
        format!("version {version}, {place}: {what}")
    };
    let old_type = old.get("type").and_then(Value::as_str);
    let new_type = new.get("type").and_then(Value::as_str);
    if old_type.is_some() && old_type != new_type {
        found.push(at(format!(
            "type changes from {} to {}",
            old_type.unwrap_or("any"),
            new_type.unwrap_or("any")
        )));
    }
    found.extend(enum_narrowed(old, new).map(at));
    found.extend(default_changed(old, new).map(at));
    found.extend(bounds_narrowed(old, new).into_iter().map(at));
    fields(version, path, old, new, found);
    if let (Some(old_items), Some(new_items)) = (old.get("items"), new.get("items")) {
        compare(version, &format!("{path}[*]"), old_items, new_items, found);
    }
}

/// An enum that refuses a value the old schema allowed (no enum in the
/// new schema allows everything).
fn enum_narrowed(old: &Value, new: &Value) -> Option<String> {
    let old_enum = old.get("enum").and_then(Value::as_array);
    let new_enum = new.get("enum").and_then(Value::as_array)?;
    match old_enum {
        Some(old_enum) => {
            let removed: Vec<String> = old_enum
                .iter()
                .filter(|value| !new_enum.contains(value))
                .map(Value::to_string)
                .collect();
            (!removed.is_empty()).then(|| format!("enum values removed: {}", removed.join(", ")))
        }
        None => {
            let values: Vec<String> = new_enum.iter().map(Value::to_string).collect();
            Some(format!(
                "an enum is added ({}), so other values stored now are refused",
                values.join(", ")
            ))
        }
    }
}

/// Defaults apply when a stored object is read: adding, changing or
/// removing one on a field that exists changes what every stored object
/// says without anyone writing it. (A new field with a default is a new
/// field: it is not compared here.)
fn default_changed(old: &Value, new: &Value) -> Option<String> {
    match (old.get("default"), new.get("default")) {
        (None, Some(added)) => Some(format!(
            "a default ({added}) is added, which every stored object would show on its next read"
        )),
        (Some(removed), None) => Some(format!(
            "its default ({removed}) is removed, so stored objects that relied on it change"
        )),
        (Some(was), Some(now)) if was != now => Some(format!(
            "its default changes from {was} to {now}, which changes what stored objects say"
        )),
        _ => None,
    }
}

/// Lower bounds that rise and upper bounds that fall (or appear).
fn bounds_narrowed(old: &Value, new: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for bound in ["minimum", "minLength", "minItems", "minProperties"] {
        if let Some(new_bound) = new.get(bound).and_then(Value::as_f64) {
            let old_bound = old.get(bound).and_then(Value::as_f64);
            if old_bound.is_none_or(|old_bound| new_bound > old_bound) {
                found.push(format!("{bound} rises to {new_bound}"));
            }
        }
    }
    for bound in ["maximum", "maxLength", "maxItems", "maxProperties"] {
        if let Some(new_bound) = new.get(bound).and_then(Value::as_f64) {
            let old_bound = old.get(bound).and_then(Value::as_f64);
            if old_bound.is_none_or(|old_bound| new_bound < old_bound) {
                found.push(format!("{bound} falls to {new_bound}"));
            }
        }
    }
    found
}

/// Fields removed (unless unknown fields are kept) or newly required, and
/// each kept field compared in turn.
fn fields(version: &str, path: &str, old: &Value, new: &Value, found: &mut Vec<String>) {
    let empty = Map::new();
    let old_properties = old
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let new_properties = new
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    // A schema that keeps unknown fields loses nothing when it stops listing one.
    let keeps_unknown = new
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (name, old_property) in old_properties {
        let child = format!("{path}.{name}");
        match new_properties.get(name) {
            Some(new_property) => compare(version, &child, old_property, new_property, found),
            None if !keeps_unknown => {
                found.push(format!("version {version}, {child}: the field is removed"));
            }
            None => {}
        }
    }
    let required = |schema: &Value| -> Vec<String> {
        schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect()
    };
    let old_required = required(old);
    for name in required(new) {
        if !old_required.contains(&name) {
            found.push(format!(
                "version {version}, {path}.{name}: the field becomes required"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(scope: &str, versions: Value) -> Value {
        json!({ "spec": { "scope": scope, "versions": versions } })
    }

    fn version(name: &str, schema: Value) -> Value {
        json!({ "name": name, "served": true, "storage": true, "schema": { "openAPIV3Schema": schema } })
    }

    fn widget(spec: Value) -> Value {
        crd(
            "Namespaced",
            json!([version(
                "v1",
                json!({ "type": "object", "properties": { "spec": spec } })
            )]),
        )
    }

    #[test]
    fn an_unchanged_crd_and_an_added_optional_field_pass() {
        let old =
            widget(json!({ "type": "object", "properties": { "size": { "type": "integer" } } }));
        assert!(problems(&old, &old).is_empty());
        let more = widget(json!({ "type": "object", "properties": {
            "size": { "type": "integer" }, "color": { "type": "string" } } }));
        assert!(problems(&old, &more).is_empty());
    }

    #[test]
    fn removed_fields_new_required_fields_and_type_changes_are_named() {
        let old = widget(json!({ "type": "object", "properties": {
            "size": { "type": "integer" }, "color": { "type": "string" } } }));
        let new = widget(
            json!({ "type": "object", "required": ["shape"], "properties": {
            "size": { "type": "string" }, "shape": { "type": "string" } } }),
        );
        assert_eq!(
            problems(&old, &new),
            [
                "version v1, .spec.color: the field is removed",
                "version v1, .spec.shape: the field becomes required",
                "version v1, .spec.size: type changes from integer to string",
            ]
        );
    }

    #[test]
    fn narrowed_enums_and_bounds_are_named_and_widened_ones_pass() {
        let old = widget(json!({ "type": "object", "properties": {
            "tier": { "type": "string", "enum": ["a", "b"] },
            "size": { "type": "integer", "maximum": 10 } } }));
        let narrowed = widget(json!({ "type": "object", "properties": {
            "tier": { "type": "string", "enum": ["a"] },
            "size": { "type": "integer", "maximum": 5 } } }));
        assert_eq!(
            problems(&old, &narrowed),
            [
                "version v1, .spec.size: maximum falls to 5",
                "version v1, .spec.tier: enum values removed: \"b\"",
            ]
        );
        let widened = widget(json!({ "type": "object", "properties": {
            "tier": { "type": "string", "enum": ["a", "b", "c"] },
            "size": { "type": "integer", "maximum": 20 } } }));
        assert!(problems(&old, &widened).is_empty());
    }

    #[test]
    fn a_default_added_changed_or_removed_on_an_existing_field_is_named() {
        let old = widget(json!({ "type": "object", "properties": {
            "size": { "type": "integer", "default": 3 },
            "color": { "type": "string" },
            "shape": { "type": "string", "default": "round" } } }));
        let new = widget(json!({ "type": "object", "properties": {
            "size": { "type": "integer", "default": 5 },
            "color": { "type": "string", "default": "red" },
            "shape": { "type": "string" } } }));
        assert_eq!(
            problems(&old, &new),
            [
                "version v1, .spec.color: a default (\"red\") is added, which every stored object would show on its next read",
                "version v1, .spec.shape: its default (\"round\") is removed, so stored objects that relied on it change",
                "version v1, .spec.size: its default changes from 3 to 5, which changes what stored objects say",
            ]
        );
        // A new field with a default, a kept default and a description
        // changed all pass.
        let fine = widget(json!({ "type": "object", "properties": {
            "size": { "type": "integer", "default": 3, "description": "how big" },
            "color": { "type": "string" },
            "shape": { "type": "string", "default": "round" },
            "tier": { "type": "string", "default": "basic" } } }));
        assert!(problems(&old, &fine).is_empty());
    }

    #[test]
    fn removed_versions_and_a_changed_scope_are_named() {
        let schema = json!({ "type": "object" });
        let old = crd(
            "Namespaced",
            json!([version("v1", schema.clone()), { "name": "v1beta1", "served": true, "storage": false }]),
        );
        let new = crd("Cluster", json!([version("v1", schema)]));
        assert_eq!(
            problems(&old, &new),
            [
                "its scope changes from Namespaced to Cluster",
                "version v1beta1 (served) is removed",
            ]
        );
    }

    #[test]
    fn a_problem_the_old_crd_already_had_does_not_block() {
        // The old CRD already required `shape` and capped `size`; the new
        // one keeps both and adds an optional field: nothing new narrows.
        let old = widget(
            json!({ "type": "object", "required": ["shape"], "properties": {
            "shape": { "type": "string" }, "size": { "type": "integer", "maximum": 5 } } }),
        );
        let new = widget(
            json!({ "type": "object", "required": ["shape"], "properties": {
            "shape": { "type": "string" }, "size": { "type": "integer", "maximum": 5 },
            "color": { "type": "string" } } }),
        );
        assert!(problems(&old, &new).is_empty());
    }
}
