//! Whether a custom resource, as stored, validates against a CRD version's
//! `openAPIV3Schema`. Pure: it reads two JSON values.
//!
//! Written by hand rather than with a JSON Schema crate because Kubernetes
//! validates a structural schema with semantics of its own that a generic
//! validator gets wrong in both directions: `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`
//! and `x-kubernetes-embedded-resource` are not JSON Schema; unknown fields
//! are pruned, never refused; the root's (and an embedded resource's)
//! `apiVersion`, `kind` and `metadata` are not checked against the schema;
//! string lengths count characters; patterns are RE2 (the `regex` crate's
//! dialect, already in the tree) rather than ECMA-262. `jsonschema` would
//! also bring a dozen crates (and a schema rewrite for each extension) to
//! check the small subset structural schemas may use, which is this:
//!
//! | keyword | checked |
//! |---|---|
//! | `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`) | yes; `int-or-string` takes either |
//! | `properties`, `additionalProperties` (a schema), `items` | recursively |
//! | `required`, `enum` | yes |
//! | `minimum`/`maximum` (with `exclusiveMinimum`/`exclusiveMaximum`), `multipleOf` | yes |
//! | `minLength`/`maxLength`, `pattern` | yes (characters; a pattern that does not compile is skipped) |
//! | `minItems`/`maxItems`, `minProperties`/`maxProperties` | yes |
//! | `x-kubernetes-list-type: set` / `map` | duplicates refused |
//! | `allOf`, `anyOf`, `oneOf`, `not` | yes |
//! | `nullable` | a null never fails (Kubernetes prunes a null it does not allow) |
//! | `format`, `x-kubernetes-validations` (CEL) | not checked: a miss lets an object through, never refuses one |

use serde_json::{Map, Value};

/// One reason an object does not validate: where (`spec.size`) and what
/// (`a string of 5 characters is not of type integer`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// The field, `spec.items[2].name` style; empty for the object itself.
    pub path: String,
    /// What is wrong, in words.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

/// Every way `object` (a whole custom resource) fails `schema` (a version's
/// `openAPIV3Schema`); empty when it validates. Its `apiVersion`, `kind`
/// and `metadata` are left out, as Kubernetes leaves them out.
pub fn violations(schema: &Value, object: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
    check(schema, object, "", true, &mut found);
    found.sort();
    found.dedup();
    found
}

/// Where a value is checked: its path, and whether it is a whole object.
#[derive(Clone, Copy)]
struct At<'a> {
    path: &'a str,
    resource: bool,
}

/// Checks `value` against the schema's `allOf`, `anyOf`, `oneOf` and
/// `not` (an int-or-string's `anyOf` is the flag's, already checked).
fn junctors(
    schema: &serde_json::Map<String, Value>,
    value: &Value,
    at: At<'_>,
    int_or_string: bool,
    found: &mut Vec<Violation>,
) {
    for junctor in ["allOf", "anyOf", "oneOf", "not"] {
        let Some(inner) = schema.get(junctor) else {
            continue;
        };
        // int-or-string is spelled `anyOf: [integer, string]` beside the flag.
        if junctor == "anyOf" && int_or_string {
            continue;
        }
        let fails = |sub: &Value| {
            let mut inside = Vec::new();
            check(sub, value, at.path, at.resource, &mut inside);
            inside
        };
        let subs: Vec<&Value> = inner
            .as_array()
            .map(|subs| subs.iter().collect())
            .unwrap_or_else(|| vec![inner]);
        match junctor {
            "allOf" => found.extend(subs.iter().flat_map(|sub| fails(sub))),
            "anyOf" if !subs.iter().any(|sub| fails(sub).is_empty()) => {
                // One alternative's reasons say more than a bare "none matched".
                let mut reasons: Vec<String> = subs
                    .iter()
                    .flat_map(|sub| fails(sub))
                    .map(|violation| {
                        if violation.path == at.path {
                            violation.problem
                        } else {
                            violation.to_string()
                        }
                    })
                    .collect();
                reasons.dedup();
                found.push(Violation {
                    path: at.path.to_owned(),
                    problem: format!(
                        "it matches none of the allowed forms ({})",
                        reasons.join(", or ")
                    ),
                });
            }
            "oneOf" => {
                let matching = subs.iter().filter(|sub| fails(sub).is_empty()).count();
                if matching != 1 {
                    found.push(Violation {
                        path: at.path.to_owned(),
                        problem: format!(
                            "it matches {matching} of the forms where exactly one is allowed"
                        ),
                    });
                }
            }
            "not" if fails(inner).is_empty() => found.push(Violation {
                path: at.path.to_owned(),
                problem: "it matches a form the schema forbids".into(),
            }),
            _ => {}
        }
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Checks `value` at `path` against `schema`; `resource` when the value is
/// a whole object (the root, or an embedded resource), whose `apiVersion`,
/// `kind` and `metadata` are not the schema's business.
fn check(schema: &Value, value: &Value, path: &str, resource: bool, found: &mut Vec<Violation>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    // A null is pruned where it is not allowed, so it never fails.
    if value.is_null() {
        return;
    }
    let mut fail = |problem: String| {
        found.push(Violation {
            path: path.to_owned(),
            problem,
        })
    };
    let node = Value::Object(schema.clone());
    let int_or_string = flag(&node, "x-kubernetes-int-or-string");
    if int_or_string {
        if !(is_integer(value) || value.is_string()) {
            fail(format!(
                "{} is neither an integer nor a string",
                shown(value)
            ));
            return;
        }
    } else if let Some(wanted) = schema.get("type").and_then(Value::as_str)
        && !is_type(value, wanted)
    {
        fail(format!("{} is not of type {wanted}", shown(value)));
        // Nothing else about a value of the wrong type says more.
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        // The allowed values are the schema's, from the bundle: shown.
        let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        fail(format!(
            "{} is not one of {}",
            shown(value),
            listed.join(", ")
        ));
    }
    match value {
        Value::Number(_) => number(schema, value, &mut fail),
        Value::String(text) => string(schema, text, &mut fail),
        _ => {}
    }
    let at = At { path, resource };
    junctors(schema, value, at, int_or_string, found);
    match value {
        Value::Object(fields) => object(&node, fields, path, resource, found),
        Value::Array(items) => array(&node, items, path, found),
        _ => {}
    }
}

fn object(
    schema: &Value,
    fields: &Map<String, Value>,
    path: &str,
    resource: bool,
    found: &mut Vec<Violation>,
) {
    // An embedded resource's (like the root's) apiVersion, kind and
    // metadata are checked by the apiserver as such, not by the schema.
    let resource = resource || flag(schema, "x-kubernetes-embedded-resource");
    let skipped = |name: &str| resource && matches!(name, "apiVersion" | "kind" | "metadata");
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !fields.contains_key(name) && !skipped(name) {
            found.push(Violation {
                path: child(path, name),
                problem: "the field is required and missing".into(),
            });
        }
    }
    counted(schema, fields.len(), "fields", path, found);
    let properties = schema.get("properties").and_then(Value::as_object);
    // A schema (not `true`/`false`): unknown fields are pruned, never refused.
    let additional = schema
        .get("additionalProperties")
        .filter(|additional| additional.is_object());
    for (name, value) in fields {
        if skipped(name) {
            continue;
        }
        let field_schema = properties
            .and_then(|properties| properties.get(name))
            .or(additional);
        if let Some(field_schema) = field_schema {
            check(field_schema, value, &child(path, name), false, found);
        }
    }
}

/// `minProperties`/`maxProperties` (for `what` = fields) or
/// `minItems`/`maxItems` (items) against `count`.
fn counted(schema: &Value, count: usize, what: &str, path: &str, found: &mut Vec<Violation>) {
    let suffix = if what == "items" {
        "Items"
    } else {
        "Properties"
    };
    let count = count as u64;
    for side in ["min", "max"] {
        let Some(limit) = schema
            .get(format!("{side}{suffix}"))
            .and_then(Value::as_u64)
        else {
            continue;
        };
        let (outside, allowed) = match side {
            "min" => (count < limit, "at least"),
            _ => (count > limit, "at most"),
        };
        if outside {
            found.push(Violation {
                path: path.to_owned(),
                problem: format!("it has {count} {what}, and {allowed} {limit} are allowed"),
            });
        }
    }
}

fn array(schema: &Value, items: &[Value], path: &str, found: &mut Vec<Violation>) {
    counted(schema, items.len(), "items", path, found);
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => duplicates(items, path, found, |item| Some(item.clone())),
        Some("map") => {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            duplicates(items, path, found, |item| {
                let key: Vec<Value> = keys
                    .iter()
                    .map(|key| item.get(key).cloned().unwrap_or(Value::Null))
                    .collect();
                Some(Value::Array(key))
            });
        }
        _ => {}
    }
    if let Some(item_schema) = schema.get("items") {
        for (index, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{index}]"), false, found);
        }
    }
}

/// Names the first item whose `key` an earlier item has too.
fn duplicates(
    items: &[Value],
    path: &str,
    found: &mut Vec<Violation>,
    key: impl Fn(&Value) -> Option<Value>,
) {
    let mut seen = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let Some(key) = key(item) else { continue };
        if seen.contains(&key) {
            found.push(Violation {
                path: format!("{path}[{index}]"),
                problem: "it duplicates an earlier item of a list whose items must be unique"
                    .into(),
            });
            return;
        }
        seen.push(key);
    }
}

fn number(schema: &Map<String, Value>, value: &Value, fail: &mut impl FnMut(String)) {
    let Some(number) = value.as_f64() else { return };
    let bound = |name: &str| schema.get(name).and_then(Value::as_f64);
    let exclusive = |name: &str| schema.get(name).and_then(Value::as_bool).unwrap_or(false);
    if let Some(minimum) = bound("minimum") {
        if exclusive("exclusiveMinimum") && number <= minimum {
            fail(format!("the number is not more than {minimum}"));
        } else if number < minimum {
            fail(format!("the number is less than the minimum {minimum}"));
        }
    }
    if let Some(maximum) = bound("maximum") {
        if exclusive("exclusiveMaximum") && number >= maximum {
            fail(format!("the number is not less than {maximum}"));
        } else if number > maximum {
            fail(format!("the number is more than the maximum {maximum}"));
        }
    }
    if let Some(factor) = bound("multipleOf").filter(|factor| *factor > 0.0) {
        let quotient = number / factor;
        if (quotient - quotient.round()).abs() > 1e-9 {
            fail(format!("the number is not a multiple of {factor}"));
        }
    }
}

fn string(schema: &Map<String, Value>, text: &str, fail: &mut impl FnMut(String)) {
    let length = text.chars().count() as u64;
    let value = shown(&Value::String(text.to_owned()));
    if let Some(minimum) = schema.get("minLength").and_then(Value::as_u64)
        && length < minimum
    {
        fail(format!("{value} is shorter than {minimum} characters"));
    }
    if let Some(maximum) = schema.get("maxLength").and_then(Value::as_u64)
        && length > maximum
    {
        fail(format!("{value} is longer than {maximum} characters"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && let Ok(pattern_regex) = regex::Regex::new(pattern)
        && !pattern_regex.is_match(text)
    {
        fail(format!("{value} does not match the pattern {pattern}"));
    }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(number) => {
            number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        _ => false,
    }
}

fn is_type(value: &Value, wanted: &str) -> bool {
    match wanted {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        // A type Kubernetes does not know is not this check's to refuse.
        _ => true,
    }
}

/// A field's name appended to `path`: `.name`, or `[name]` for a name
/// that would not read as one (`labels[app.kubernetes.io/name]`).
fn child(path: &str, name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => name.to_owned(),
        (false, true) => format!("{path}.{name}"),
        (_, false) => format!("{path}[{name}]"),
    }
}

/// A value as a message describes it: what it is, never what it holds.
/// The objects checked are other people's custom resources, and the
/// message lands in an Instance's status and Events, which its requester
/// reads: quoting a value there would hand out data RBAC may not give
/// them (a token in a spec field, say).
fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "a list".into(),
        Value::String(text) => match text.chars().count() {
            1 => "a string of 1 character".into(),
            count => format!("a string of {count} characters"),
        },
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The messages for `object` under `schema`, as they read.
    fn said(schema: Value, object: Value) -> Vec<String> {
        violations(&schema, &object)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn with_spec(properties: Value) -> Value {
        json!({ "type": "object", "properties": {
            "spec": { "type": "object", "properties": properties } } })
    }

    #[test]
    fn a_valid_object_and_its_metadata_pass() {
        let schema = with_spec(json!({ "size": { "type": "integer" } }));
        let object = json!({ "apiVersion": "x/v1", "kind": "W",
            "metadata": { "name": "a", "labels": { "k": "v" } }, "spec": { "size": 3 } });
        assert!(said(schema, object).is_empty());
    }

    #[test]
    fn types_are_named_with_the_value() {
        let schema = with_spec(json!({
            "size": { "type": "integer" }, "ratio": { "type": "number" },
            "on": { "type": "boolean" }, "tags": { "type": "array" }, "name": { "type": "string" } }));
        let object = json!({ "spec": {
            "size": "three", "ratio": 1.5, "on": "yes", "tags": { "a": 1 }, "name": ["x"] } });
        assert_eq!(
            said(schema, object),
            [
                "spec.name: a list is not of type string",
                "spec.on: a string of 3 characters is not of type boolean",
                "spec.size: a string of 5 characters is not of type integer",
                "spec.tags: an object is not of type array",
            ]
        );
    }

    #[test]
    fn required_fields_and_enums_are_checked() {
        let schema = json!({ "type": "object", "properties": { "spec": {
            "type": "object", "required": ["tier", "shape"],
            "properties": { "tier": { "type": "string", "enum": ["bronze", "silver"] } } } } });
        assert_eq!(
            said(schema.clone(), json!({ "spec": { "tier": "gold" } })),
            [
                "spec.shape: the field is required and missing",
                "spec.tier: a string of 4 characters is not one of \"bronze\", \"silver\"",
            ]
        );
        assert!(
            said(
                schema,
                json!({ "spec": { "tier": "silver", "shape": "round" } })
            )
            .is_empty()
        );
    }

    #[test]
    fn bounds_on_numbers_strings_lists_and_maps_are_checked() {
        let schema = with_spec(json!({
            "size": { "type": "integer", "minimum": 1, "maximum": 5 },
            "step": { "type": "number", "minimum": 0, "exclusiveMinimum": true, "multipleOf": 0.5 },
            "name": { "type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$" },
            "tags": { "type": "array", "maxItems": 1, "items": { "type": "string" } },
            "labels": { "type": "object", "maxProperties": 1,
                "additionalProperties": { "type": "string", "maxLength": 3 } } }));
        let object = json!({ "spec": {
            "size": 9, "step": 0, "name": "Abcde", "tags": ["a", "b"],
            "labels": { "app.kubernetes.io/name": "long", "b": "ok" } } });
        assert_eq!(
            said(schema.clone(), object),
            [
                "spec.labels: it has 2 fields, and at most 1 are allowed",
                "spec.labels[app.kubernetes.io/name]: a string of 4 characters is longer than 3 characters",
                "spec.name: a string of 5 characters does not match the pattern ^[a-z]+$",
                "spec.name: a string of 5 characters is longer than 4 characters",
                "spec.size: the number is more than the maximum 5",
                "spec.step: the number is not more than 0",
                "spec.tags: it has 2 items, and at most 1 are allowed",
            ]
        );
        let fine = json!({ "spec": { "size": 5, "step": 1.5, "name": "ab", "tags": ["é"],
            "labels": { "a": "xyz" } } });
        assert!(said(schema, fine).is_empty());
    }

    #[test]
    fn nested_objects_and_list_items_are_checked_with_their_path() {
        let schema = with_spec(json!({ "members": { "type": "array",
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": { "type": "object", "required": ["name"], "properties": {
                "name": { "type": "string" },
                "port": { "type": "object", "properties": { "number": { "type": "integer" } } } } } } }));
        let object = json!({ "spec": { "members": [
            { "name": "a", "port": { "number": 80 } },
            { "port": { "number": "http" } },
            { "name": "a" } ] } });
        assert_eq!(
            said(schema, object),
            [
                "spec.members[1].name: the field is required and missing",
                "spec.members[1].port.number: a string of 4 characters is not of type integer",
                "spec.members[2]: it duplicates an earlier item of a list whose items must be unique",
            ]
        );
    }

    #[test]
    fn unknown_fields_and_preserved_ones_never_fail() {
        let schema = json!({ "type": "object", "properties": {
            "spec": { "type": "object", "properties": { "size": { "type": "integer" } } },
            "config": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
            "raw": { "x-kubernetes-preserve-unknown-fields": true } } });
        let object = json!({ "spec": { "size": 1, "pruned": "x" },
            "config": { "anything": [1, "two"] }, "raw": "a string" });
        assert!(said(schema, object).is_empty());
    }

    #[test]
    fn int_or_string_takes_either_and_nothing_else() {
        let schema = with_spec(json!({ "port": { "x-kubernetes-int-or-string": true,
            "anyOf": [{ "type": "integer" }, { "type": "string" }] } }));
        assert!(said(schema.clone(), json!({ "spec": { "port": 80 } })).is_empty());
        assert!(said(schema.clone(), json!({ "spec": { "port": "http" } })).is_empty());
        assert_eq!(
            said(schema, json!({ "spec": { "port": true } })),
            ["spec.port: a boolean is neither an integer nor a string"]
        );
    }

    #[test]
    fn a_null_never_fails() {
        let schema = with_spec(json!({
            "note": { "type": "string", "nullable": true },
            "size": { "type": "integer", "minimum": 1 } }));
        assert!(said(schema, json!({ "spec": { "note": null, "size": null } })).is_empty());
    }

    #[test]
    fn an_embedded_resource_keeps_its_own_api_version_kind_and_metadata() {
        let schema = with_spec(json!({ "template": { "type": "object",
            "x-kubernetes-embedded-resource": true, "required": ["kind"],
            "properties": { "spec": { "type": "object", "properties": {
                "replicas": { "type": "integer" } } } } } }));
        let object = json!({ "spec": { "template": { "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "x" }, "spec": { "replicas": "two" } } } });
        assert_eq!(
            said(schema, object),
            ["spec.template.spec.replicas: a string of 3 characters is not of type integer"]
        );
    }

    #[test]
    fn status_is_checked_like_spec() {
        let schema = json!({ "type": "object", "properties": {
            "status": { "type": "object", "properties": { "phase": {
                "type": "string", "enum": ["Ready", "Failed"] } } } } });
        assert_eq!(
            said(schema, json!({ "status": { "phase": "Pending" } })),
            ["status.phase: a string of 7 characters is not one of \"Ready\", \"Failed\""]
        );
    }

    #[test]
    fn junctors_are_checked() {
        let schema = with_spec(json!({ "size": { "type": "integer",
            "anyOf": [{ "minimum": 10 }, { "maximum": 2 }], "not": { "enum": [0] } } }));
        assert!(said(schema.clone(), json!({ "spec": { "size": 12 } })).is_empty());
        assert_eq!(
            said(schema.clone(), json!({ "spec": { "size": 5 } })),
            [
                "spec.size: it matches none of the allowed forms (the number is less than the minimum 10, or the number is more than the maximum 2)"
            ]
        );
        assert_eq!(
            said(schema, json!({ "spec": { "size": 0 } })),
            ["spec.size: it matches a form the schema forbids"]
        );
    }
}
