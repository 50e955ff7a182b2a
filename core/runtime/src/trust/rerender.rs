//! An approval covers the objects that were approved, not only the content
//! they came from. The runtime records, with every approval, the digest of
//! the objects the provisioner rendered ([`rendered_digest`]). When the
//! same content renders to other objects later (an upgraded provisioner, a
//! changed class parameter), [`compare`] says so, and the caller compares
//! the new objects with what runs on the cluster, as `Android` compares an
//! update: no new right, and the approval carries over with an Event; more
//! rights wait for a person, naming them.

use pakket_api::ApprovedContent;
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

/// How the objects to install stand against the recorded approval.
#[derive(Debug, PartialEq, Eq)]
pub enum Render {
    /// The approval is of other content (or there is none): the usual
    /// approval decides.
    OtherContent,
    /// The approval covers this content and its render was not recorded (a
    /// person's `kubectl instance approve`, or an approval from before the
    /// record existed): the render installed under it is recorded.
    Unrecorded,
    /// The approved content renders to the objects that were approved.
    Same,
    /// The approved content renders to other objects now.
    Changed,
}

/// Compares the recorded approval with `content` (this Bundle, digest and
/// render).
pub fn compare(approved: Option<&ApprovedContent>, content: &ApprovedContent) -> Render {
    let Some(approved) = approved else {
        return Render::OtherContent;
    };
    if approved.bundle != content.bundle || approved.digest != content.digest {
        return Render::OtherContent;
    }
    match (&approved.rendered, &content.rendered) {
        (None, _) => Render::Unrecorded,
        (Some(was), Some(now)) if was != now => Render::Changed,
        _ => Render::Same,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(bundle: &str, digest: &str, rendered: Option<&str>) -> ApprovedContent {
        ApprovedContent {
            bundle: bundle.into(),
            digest: digest.into(),
            approved_by: "alice".into(),
            rendered: rendered.map(str::to_owned),
        }
    }

    #[test]
    fn the_same_content_rendered_otherwise_is_a_change_and_other_content_is_not_one() {
        let now = content("b", "sha256:1", Some("sha256:r2"));
        assert_eq!(compare(None, &now), Render::OtherContent);
        assert_eq!(
            compare(Some(&content("b", "sha256:0", Some("sha256:r1"))), &now),
            Render::OtherContent
        );
        assert_eq!(
            compare(Some(&content("b", "sha256:1", None)), &now),
            Render::Unrecorded
        );
        assert_eq!(
            compare(Some(&content("b", "sha256:1", Some("sha256:r2"))), &now),
            Render::Same
        );
        assert_eq!(
            compare(Some(&content("b", "sha256:1", Some("sha256:r1"))), &now),
            Render::Changed
        );
    }

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
