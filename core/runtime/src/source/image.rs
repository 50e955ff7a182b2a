//! A pulled image: its verified layers, and unpacking them safely.

use std::path::Path;

use oci_client::manifest::{
    IMAGE_DOCKER_LAYER_GZIP_MEDIA_TYPE, IMAGE_DOCKER_LAYER_TAR_MEDIA_TYPE,
    IMAGE_LAYER_GZIP_MEDIA_TYPE, IMAGE_LAYER_MEDIA_TYPE,
};

use super::{ImageRef, SourceError};
use crate::archive::{self, ArchiveError, Compression, Extracted, Limits};

/// How a layer of `media_type` is compressed, or `None` if Pakket does not
/// unpack layers of that type.
pub fn layer_compression(media_type: &str) -> Option<Compression> {
    match media_type {
        IMAGE_LAYER_MEDIA_TYPE | IMAGE_DOCKER_LAYER_TAR_MEDIA_TYPE => {
            Some(Compression::Uncompressed)
        }
        IMAGE_LAYER_GZIP_MEDIA_TYPE | IMAGE_DOCKER_LAYER_GZIP_MEDIA_TYPE => Some(Compression::Gzip),
        _ => None,
    }
}

/// One layer of a pulled image, verified against its digest.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The layer's digest (`sha256:…`), as the manifest lists it.
    pub digest: String,
    /// Its media type.
    pub media_type: String,
    /// How `data` is compressed (never [`Compression::Detect`]).
    pub compression: Compression,
    /// The layer's bytes, as stored in the registry (still compressed).
    pub data: Vec<u8>,
}

/// An image fetched by [`ImageSource::pull_layers`](super::ImageSource::pull_layers).
#[derive(Clone, Debug)]
pub struct PulledImage {
    /// The digest the ref resolved to: the manifest's, or the image index's
    /// when the ref names a multi-platform index.
    pub digest: String,
    /// The ref pinned to `digest`, for a Bundle's status.
    pub pinned: ImageRef,
    /// The layers, base first, in the order they are to be unpacked.
    pub layers: Vec<Layer>,
}

impl PulledImage {
    /// The total size of the layers' (compressed) bytes.
    pub fn size(&self) -> u64 {
        self.layers
            .iter()
            .map(|layer| layer.data.len() as u64)
            .sum()
    }

    /// Unpacks the layers, base first, into `dest` (which must not exist)
    /// with [`archive`]'s checks; all or nothing. `limits` bound all layers
    /// together.
    ///
    /// Layers are merged by adding: OCI whiteouts and overwrites are not
    /// applied, so two layers writing the same path is an error. Bundle
    /// images built with `COPY manifests/` and `COPY metadata/` add disjoint
    /// trees. Blocking file IO: call it from `spawn_blocking`.
    pub fn unpack(&self, dest: &Path, limits: &Limits) -> Result<Extracted, SourceError> {
        let Some(first) = self.layers.first() else {
            return Err(self.unpack_error(
                "",
                ArchiveError::Destination {
                    path: dest.to_path_buf(),
                    source: std::io::Error::other("the image has no layers"),
                },
            ));
        };
        if self.layers.len() == 1 {
            return archive::extract(first.data.as_slice(), dest, limits)
                .map_err(|error| self.unpack_error(&first.digest, error));
        }
        if dest.symlink_metadata().is_ok() {
            let error = ArchiveError::DestinationExists {
                path: dest.to_path_buf(),
            };
            return Err(self.unpack_error(&first.digest, error));
        }
        // A sibling, so the final rename stays on one file system.
        let mut name = dest.file_name().unwrap_or_default().to_owned();
        name.push(format!(".layers-{}", std::process::id()));
        let temp = dest.with_file_name(name);
        let result = self.unpack_layers(&temp, dest, limits);
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&temp);
        }
        result
    }

    fn unpack_layers(
        &self,
        temp: &Path,
        dest: &Path,
        limits: &Limits,
    ) -> Result<Extracted, SourceError> {
        let destination = |source| ArchiveError::Destination {
            path: dest.to_path_buf(),
            source,
        };
        let first = &self.layers[0].digest;
        std::fs::create_dir(temp).map_err(|error| self.unpack_error(first, destination(error)))?;
        let mut total: Option<Extracted> = None;
        for layer in &self.layers {
            // What earlier layers used counts against the same limits.
            let (bytes, entries) = total
                .as_ref()
                .map_or((0, 0), |done| (done.bytes, done.files + done.directories));
            let remaining = Limits {
                max_total_size: limits.max_total_size.saturating_sub(bytes),
                max_files: limits.max_files.saturating_sub(entries),
                ..*limits
            };
            let extracted =
                archive::extract_into(layer.data.as_slice(), temp, &remaining, layer.compression)
                    .map_err(|error| self.unpack_error(&layer.digest, overlap(error)))?;
            total = Some(match total {
                None => extracted,
                Some(done) => Extracted {
                    files: done.files + extracted.files,
                    directories: done.directories + extracted.directories,
                    bytes: done.bytes + extracted.bytes,
                    // The last layer's; every layer's digest is in `layers`,
                    // verified on download.
                    sha256: extracted.sha256,
                },
            });
        }
        if dest.symlink_metadata().is_ok() {
            let error = ArchiveError::DestinationExists {
                path: dest.to_path_buf(),
            };
            return Err(self.unpack_error(first, error));
        }
        std::fs::rename(temp, dest)
            .map_err(|error| self.unpack_error(first, destination(error)))?;
        Ok(total.expect("at least two layers were unpacked"))
    }

    fn unpack_error(&self, layer: &str, error: ArchiveError) -> SourceError {
        SourceError::Unpack {
            image: self.pinned.to_string(),
            layer: layer.to_owned(),
            error,
        }
    }
}

/// A later layer writing a path an earlier one wrote: the archive reports
/// the file system's "already exists"; say it is the same path twice.
fn overlap(error: ArchiveError) -> ArchiveError {
    match error {
        ArchiveError::Write { path, source }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            ArchiveError::Duplicate { path }
        }
        other => other,
    }
}
