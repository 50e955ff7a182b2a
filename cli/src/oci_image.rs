//! A reproducible single-layer OCI image, built in memory: the layer, the
//! config and the manifest that `pakket bundle push` and `pakket image push`
//! send (see `registry_push` for the sending).
//!
//! Reproducible means the same content gives the same digests on any
//! machine at any time, so nothing here reads a clock, a user name or the
//! file system: every tar header has mtime 0, owner 0:0, no user or group
//! names and the mode it is given; gzip (flate2) writes mtime 0, no file
//! name and a fixed OS byte; the config holds no timestamp or history.
//! Callers add entries in a fixed order (byte order of their paths,
//! directories before their contents).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use flate2::write::GzEncoder;
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use sha2::{Digest as _, Sha256};

/// Builds a layer entry by entry, each header fixed but for path, kind, mode and size.
pub struct LayerBuilder {
    tar: tar::Builder<Vec<u8>>,
}

impl LayerBuilder {
    /// An empty layer.
    pub fn new() -> Self {
        Self {
            tar: tar::Builder::new(Vec::new()),
        }
    }

    /// Adds a directory at `path` (relative, e.g. `usr/local/bin`).
    pub fn directory(&mut self, path: &Path, mode: u32) -> std::io::Result<()> {
        let mut header = fixed_header(tar::EntryType::Directory, mode, 0);
        self.tar.append_data(&mut header, path, std::io::empty())
    }

    /// Adds a regular file at `path` (relative) holding `data`.
    pub fn file(&mut self, path: &Path, mode: u32, data: &[u8]) -> std::io::Result<()> {
        let mut header = fixed_header(tar::EntryType::Regular, mode, data.len() as u64);
        self.tar.append_data(&mut header, path, data)
    }

    /// Ends the tar and gzips it.
    pub fn finish(self) -> std::io::Result<Layer> {
        let tar = self.tar.into_inner()?;
        let mut gzip = GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&tar)?;
        Ok(Layer {
            diff_id: sha256(&tar),
            tar_size: tar.len(),
            gzip: gzip.finish()?,
        })
    }
}

/// A header with everything but the entry's own kind, mode and size fixed.
fn fixed_header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

/// A finished layer.
pub struct Layer {
    /// The gzip'd tar, as pushed.
    pub gzip: Vec<u8>,
    /// `sha256:` of the uncompressed tar (the config's `diff_id`).
    pub diff_id: String,
    /// Size of the uncompressed tar.
    pub tar_size: usize,
}

/// How a container of the image runs its program (the config's `config` object).
pub struct Process {
    /// `UID:GID`.
    pub user: String,
    /// The program and its first arguments.
    pub entrypoint: Vec<String>,
    /// `NAME=VALUE` pairs.
    pub env: Vec<String>,
    /// The working directory.
    pub working_dir: String,
    /// Free-form `Labels`, left out of the config when empty.
    pub labels: BTreeMap<String, String>,
}

/// An image ready to push: its one layer and its config.
pub struct Image {
    /// The only layer.
    pub layer: Layer,
    /// The config JSON.
    pub config: Vec<u8>,
}

impl Image {
    /// An image of `layer` for linux/amd64; with a `process`, it runs one.
    ///
    /// Without one (a bundle: content, not a program) the config is only
    /// what the OCI image spec requires, so bundle digests stay as they were.
    pub fn new(layer: Layer, process: Option<&Process>) -> Self {
        let mut config = serde_json::json!({
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
        });
        if let Some(process) = process {
            config["config"] = serde_json::json!({
                "User": process.user,
                "Entrypoint": process.entrypoint,
                "Env": process.env,
                "WorkingDir": process.working_dir,
            });
            if !process.labels.is_empty() {
                config["config"]["Labels"] = serde_json::json!(process.labels);
            }
        }
        let config = serde_json::to_vec(&config).expect("a JSON value serializes");
        Self { layer, config }
    }

    /// The manifest naming the layer and the config, as bytes, and descriptors of both.
    pub fn manifest(&self) -> Manifest {
        let layer = OciDescriptor {
            media_type: IMAGE_LAYER_GZIP_MEDIA_TYPE.to_owned(),
            digest: sha256(&self.layer.gzip),
            size: self.layer.gzip.len() as i64,
            ..OciDescriptor::default()
        };
        let config = OciDescriptor {
            media_type: IMAGE_CONFIG_MEDIA_TYPE.to_owned(),
            digest: sha256(&self.config),
            size: self.config.len() as i64,
            ..OciDescriptor::default()
        };
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config: config.clone(),
            layers: vec![layer.clone()],
            ..OciImageManifest::default()
        };
        let bytes = serde_json::to_vec(&manifest).expect("a manifest serializes");
        Manifest {
            digest: sha256(&bytes),
            bytes,
            layer,
            config,
        }
    }
}

/// A serialized manifest and what it names.
pub struct Manifest {
    /// The manifest JSON, pushed byte for byte so its digest is `digest`.
    pub bytes: Vec<u8>,
    /// `sha256:` of `bytes`: the image's digest.
    pub digest: String,
    /// The layer's descriptor.
    pub layer: OciDescriptor,
    /// The config's descriptor.
    pub config: OciDescriptor,
}

/// `sha256:` and the hex digest of `data`.
pub fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// (path, mode, mtime, uid, gid, size) of every entry of a gzip'd layer:
/// what the tests of both image kinds check their layers by.
#[cfg(test)]
pub(crate) fn listing(gzip: &[u8]) -> Vec<(String, u32, u64, u64, u64, u64)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gzip));
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let header = entry.header();
            (
                entry.path().unwrap().display().to_string(),
                header.mode().unwrap(),
                header.mtime().unwrap(),
                header.uid().unwrap(),
                header.gid().unwrap(),
                header.size().unwrap(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer() -> Layer {
        let mut builder = LayerBuilder::new();
        builder.directory(Path::new("tmp"), 0o1777).unwrap();
        builder.file(Path::new("tmp/a"), 0o644, b"a\n").unwrap();
        builder.finish().unwrap()
    }

    #[test]
    fn a_bundle_config_is_only_what_the_spec_requires() {
        let layer = layer();
        let diff_id = layer.diff_id.clone();
        let config: serde_json::Value =
            serde_json::from_slice(&Image::new(layer, None).config).unwrap();
        assert_eq!(
            config,
            serde_json::json!({
                "architecture": "amd64",
                "os": "linux",
                "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            })
        );
    }

    #[test]
    fn the_manifest_names_the_layer_and_the_config_by_digest_and_size() {
        let image = Image::new(layer(), None);
        let manifest = image.manifest();
        let parsed: OciImageManifest = serde_json::from_slice(&manifest.bytes).unwrap();
        assert_eq!(parsed.config.digest, sha256(&image.config));
        assert_eq!(parsed.layers[0].digest, sha256(&image.layer.gzip));
        assert_eq!(parsed.layers[0].size, image.layer.gzip.len() as i64);
        assert_eq!(manifest.digest, sha256(&manifest.bytes));
        assert_eq!(manifest.digest, Image::new(layer(), None).manifest().digest);
    }
}
