//! Pushing test images straight through oci-client, layer by layer, for the
//! tests that need images `pakket bundle push` would not make (several
//! layers, odd media types, a layer deleted afterwards, credentials).
#![allow(dead_code)] // each test binary uses its own share of the helpers

use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use pakket_runtime::kernel::source::{ImageRef, ImageSource};
use sha2::Digest as _;

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Pushes an image of `layers` (bytes, media type) as `source`'s
/// credentials allow; returns the manifest digest.
pub async fn push(source: &ImageSource, image: &ImageRef, layers: &[(Vec<u8>, &str)]) -> String {
    let client = source.client_for(image).unwrap();
    let reference = image.as_reference();
    client
        .store_auth_if_needed(image.registry(), &source.auth())
        .await;
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let mut manifest = OciImageManifest {
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
        config: OciDescriptor {
            media_type: IMAGE_CONFIG_MEDIA_TYPE.into(),
            digest: sha256(config),
            size: config.len() as i64,
            ..OciDescriptor::default()
        },
        ..OciImageManifest::default()
    };
    for (data, media_type) in layers {
        let digest = sha256(data);
        client
            .push_blob(reference, data.clone(), &digest)
            .await
            .unwrap();
        manifest.layers.push(OciDescriptor {
            media_type: (*media_type).into(),
            digest,
            size: data.len() as i64,
            ..OciDescriptor::default()
        });
    }
    client
        .push_blob(reference, config.to_vec(), &manifest.config.digest)
        .await
        .unwrap();
    let body = serde_json::to_vec(&manifest).unwrap();
    let content_type = OCI_IMAGE_MEDIA_TYPE.parse().unwrap();
    client
        .push_manifest_raw(reference, body.clone(), content_type)
        .await
        .unwrap();
    sha256(&body)
}

/// Pushes a one-layer (gzip) image; returns the manifest digest.
pub async fn push_gzip_layer(source: &ImageSource, image: &str, layer: Vec<u8>) -> String {
    let image = ImageRef::parse(image).unwrap();
    push(source, &image, &[(layer, IMAGE_LAYER_GZIP_MEDIA_TYPE)]).await
}
