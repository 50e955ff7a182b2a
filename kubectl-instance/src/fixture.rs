//! Test fixtures built from JSON, so new optional API fields need no edits.

use pakket_api::Instance;
use serde_json::json;

/// An Instance `name` of class `plain` wanting Bundle `bundle`, no status.
pub fn instance(name: &str, bundle: &str) -> Instance {
    serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": { "name": name },
        "spec": { "class": "plain", "bundle": { "name": bundle } },
    }))
    .expect("a valid Instance")
}
