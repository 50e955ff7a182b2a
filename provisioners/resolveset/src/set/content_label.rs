//! Sets written before sets were labelled as Bundle content.
//!
//! The runtime reads no ConfigMap without
//! [`pakket_api::BUNDLE_CONTENT_LABEL`], and the webhooks guard only
//! labelled ones. A resolveset from before the label wrote its sets without
//! it; after an upgrade the set its Instance mounts would be
//! `UnpackFailed`, and a pass that resolves to the same bytes finds the
//! ConfigMap already there (its name is their digest) and writes nothing.
//! So each pass labels the set it reads when that ConfigMap is, provably,
//! a set this resolveset wrote: immutable, carrying this resolveset's set
//! label, and holding exactly the bytes its name is the digest of. A
//! ConfigMap that is anything else is left as it is, and the runtime
//! keeps refusing it.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::BUNDLE_CONTENT_LABEL;
use serde_json::json;

use crate::set::resolved_set;

/// Whether `found` is a set of resolveset `instance` written without the
/// content label: the set label names `instance`, it is immutable, and its
/// one file's bytes are the ones its name is the digest of. Only then is
/// labelling it as content safe: its data is exactly what this resolveset
/// would write under that name today.
pub fn written_without_label(found: &ConfigMap, set_label: &str, instance: &str) -> bool {
    let labels = found.labels();
    if labels.get(BUNDLE_CONTENT_LABEL).map(String::as_str) == Some("true") {
        return false;
    }
    if labels.get(set_label).map(String::as_str) != Some(instance) {
        return false;
    }
    if found.immutable != Some(true) || found.binary_data.is_some() {
        return false;
    }
    let Some(data) = found.data.as_ref() else {
        return false;
    };
    let Some(bytes) = data.get(resolved_set::FILE) else {
        return false;
    };
    data.len() == 1 && resolved_set::config_map_name(bytes.as_bytes()) == found.name_any()
}

/// Labels `found` as Bundle content, on the condition that nobody wrote it
/// since it was read.
pub async fn label(config_maps: &Api<ConfigMap>, found: &ConfigMap) -> Result<(), kube::Error> {
    let patch = json!({
        "metadata": {
            "resourceVersion": found.resource_version(),
            "labels": { BUNDLE_CONTENT_LABEL: "true" },
        }
    });
    config_maps
        .patch(
            &found.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    tracing::info!(
        config_map = %found.name_any(),
        "labelled a set written before sets were labelled as Bundle content"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const SET_LABEL: &str = "resolve.pakket.dev/resolveset";

    /// One way a ConfigMap differs from an old set of this resolveset.
    type Change = fn(&mut ConfigMap);

    /// A set of `instance` as a resolveset before the label wrote it.
    fn old_set(instance: &str, bytes: &str) -> ConfigMap {
        let mut config_map = ConfigMap::default();
        config_map.metadata.name = Some(resolved_set::config_map_name(bytes.as_bytes()));
        config_map.metadata.labels = Some(BTreeMap::from([(
            SET_LABEL.to_owned(),
            instance.to_owned(),
        )]));
        config_map.data = Some(BTreeMap::from([(
            resolved_set::FILE.to_owned(),
            bytes.to_owned(),
        )]));
        config_map.immutable = Some(true);
        config_map
    }

    #[test]
    fn an_unlabelled_set_of_this_resolveset_with_its_own_bytes_is_labelled() {
        assert!(written_without_label(&old_set("rs", "[]"), SET_LABEL, "rs"));
    }

    #[test]
    fn anything_else_is_left_alone() {
        let changed = |change: Change| {
            let mut config_map = old_set("rs", "[]");
            change(&mut config_map);
            written_without_label(&config_map, SET_LABEL, "rs")
        };
        let cases: [(&str, Change); 8] = [
            ("already labelled", |c| {
                c.labels_mut()
                    .insert(BUNDLE_CONTENT_LABEL.into(), "true".into());
            }),
            ("another resolveset's", |c| {
                c.labels_mut().insert(SET_LABEL.into(), "other".into());
            }),
            ("no set label", |c| {
                c.labels_mut().remove(SET_LABEL);
            }),
            ("mutable", |c| c.immutable = None),
            ("bytes that are not its name's", |c| {
                c.data
                    .as_mut()
                    .unwrap()
                    .insert(resolved_set::FILE.into(), "[{}]".into());
            }),
            ("a file besides the set", |c| {
                c.data.as_mut().unwrap().insert("extra".into(), "x".into());
            }),
            ("binary data", |c| c.binary_data = Some(BTreeMap::new())),
            ("no data", |c| c.data = None),
        ];
        for (case, change) in cases {
            assert!(!changed(change), "{case}");
        }
    }
}
