//! A one-program image as an OCI archive (image layout in a tar) that `ctr
//! images import` takes: one uncompressed layer holding the program, a
//! config without timestamps, a manifest, and an index naming the image.
//! The node's pause image is made so, rather than pulled: a node starts
//! with no registry and no network, and the same program always gives the
//! same image.

use sha2::{Digest as _, Sha256};

/// The archive of image `name` holding `program` (static: there is no
/// libc) at `/<file>`, its entrypoint, run as user `user`.
pub fn oci_archive(name: &str, file: &str, program: &[u8], user: u32) -> Vec<u8> {
    let layer = tar_of(&[(file, program, 0o755)]);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Entrypoint": [format!("/{file}")], "User": format!("{user}:{user}") },
        "rootfs": { "type": "layers", "diff_ids": [digest(&layer)] },
    }))
    .expect("JSON");
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", &layer)],
    }))
    .expect("JSON");
    let mut named = descriptor("application/vnd.oci.image.manifest.v1+json", &manifest);
    named["annotations"] = serde_json::json!({ "io.containerd.image.name": name });
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "manifests": [named],
    }))
    .expect("JSON");
    let blob = |data: &[u8]| format!("blobs/sha256/{}", hex::encode(Sha256::digest(data)));
    let (layer_path, config_path, manifest_path) = (blob(&layer), blob(&config), blob(&manifest));
    tar_of(&[
        (
            "oci-layout",
            br#"{"imageLayoutVersion":"1.0.0"}"#.as_slice(),
            0o644,
        ),
        ("index.json", &index, 0o644),
        (&layer_path, &layer, 0o644),
        (&config_path, &config, 0o644),
        (&manifest_path, &manifest, 0o644),
    ])
}

fn digest(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

fn descriptor(media_type: &str, data: &[u8]) -> serde_json::Value {
    serde_json::json!({ "mediaType": media_type, "digest": digest(data), "size": data.len() })
}

/// A tar of `(path, bytes, mode)` entries, owner 0, mtime 0.
fn tar_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data, mode) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        builder
            .append_data(&mut header, path, *data)
            .expect("writing a tar to memory");
    }
    builder.into_inner().expect("writing a tar to memory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn the_archive_is_an_image_layout_naming_the_image() {
        let archive = oci_archive("example.com/pause:1", "pause", b"\x7fELF not really", 65535);
        let mut files = std::collections::BTreeMap::new();
        let mut reader = tar::Archive::new(archive.as_slice());
        for entry in reader.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            files.insert(path, data);
        }
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let manifest_ref = &index["manifests"][0];
        assert_eq!(
            manifest_ref["annotations"]["io.containerd.image.name"],
            "example.com/pause:1"
        );
        let blob = |digest: &serde_json::Value| {
            let digest = digest.as_str().unwrap().strip_prefix("sha256:").unwrap();
            files[&format!("blobs/sha256/{digest}")].clone()
        };
        let manifest: serde_json::Value =
            serde_json::from_slice(&blob(&manifest_ref["digest"])).unwrap();
        let layer = blob(&manifest["layers"][0]["digest"]);
        let mut inner = tar::Archive::new(layer.as_slice());
        let entry = inner.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str(), Some("pause"));
        assert_eq!(entry.header().mode().unwrap(), 0o755);
        let config: serde_json::Value =
            serde_json::from_slice(&blob(&manifest["config"]["digest"])).unwrap();
        assert_eq!(config["config"]["Entrypoint"][0], "/pause");
        assert_eq!(config["config"]["User"], "65535:65535");
        assert_eq!(
            oci_archive("a:b", "x", b"x", 1),
            oci_archive("a:b", "x", b"x", 1),
            "reproducible"
        );
    }
}
