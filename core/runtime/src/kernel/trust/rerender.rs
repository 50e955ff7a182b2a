//! The digest of the objects a provisioner rendered, recorded with every
//! approval and revision, so that what runs can be told from what was
//! approved. Whether an approval still covers a render is the decision
//! key's question ([`super::decision_key`]): a render that differs in
//! anything but the material Pakket issues is a new request.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// `sha256:<hex>` of `objects` as rendered (their JSON, in order).
pub fn rendered_digest(objects: &[Value]) -> String {
    let mut hasher = Sha256::new();
    for object in objects {
        hasher.update(serde_json::to_vec(object).unwrap_or_default());
        hasher.update(b"\n");
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_render_digest_follows_every_object_and_their_order() {
        let a = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a"}});
        let b = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "b"}});
        let both = rendered_digest(&[a.clone(), b.clone()]);
        assert_eq!(both, rendered_digest(&[a.clone(), b.clone()]));
        assert_ne!(both, rendered_digest(&[b.clone(), a.clone()]));
        assert_ne!(both, rendered_digest(&[a]));
        assert!(both.starts_with("sha256:"));
    }
}
