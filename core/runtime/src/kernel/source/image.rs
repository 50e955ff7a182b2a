//! A pulled image: its verified layers, and unpacking them safely.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::Arc;

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
        // A Helm chart pushed to a registry (`oci://…` chart refs): its one
        // layer is the chart's archive.
        HELM_CHART_LAYER_MEDIA_TYPE => Some(Compression::Gzip),
        IMAGE_LAYER_MEDIA_TYPE | IMAGE_DOCKER_LAYER_TAR_MEDIA_TYPE => {
            Some(Compression::Uncompressed)
        }
        IMAGE_LAYER_GZIP_MEDIA_TYPE | IMAGE_DOCKER_LAYER_GZIP_MEDIA_TYPE => Some(Compression::Gzip),
        _ => None,
    }
}

/// The layer of a Helm chart in an OCI registry.
pub const HELM_CHART_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// One layer of a pulled image, verified against its digest, spooled to
/// an unnamed temporary file (never held in memory).
#[derive(Clone, Debug)]
pub struct Layer {
    /// The layer's digest (`sha256:…`), as the manifest lists it.
    pub digest: String,
    /// Its media type.
    pub media_type: String,
    /// How the bytes are compressed (never [`Compression::Detect`]).
    pub compression: Compression,
    /// How many bytes it has, as stored in the registry.
    pub size: u64,
    /// The layer's bytes, as stored in the registry (still compressed).
    pub file: Arc<File>,
}

impl Layer {
    /// A reader of the layer's bytes from the start. Layers are read one
    /// at a time, so the shared file offset is not contended.
    pub fn reader(&self) -> std::io::Result<&File> {
        let mut file = &*self.file;
        file.seek(SeekFrom::Start(0))?;
        Ok(file)
    }

    /// The whole layer in memory: for tests and small tools, never for
    /// unpacking.
    pub fn bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.reader()?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
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
        self.layers.iter().map(|layer| layer.size).sum()
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
            let reader = first
                .reader()
                .map_err(|error| self.unpack_error(&first.digest, spool_error(dest, error)))?;
            return archive::extract(reader, dest, limits)
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
            let reader = layer
                .reader()
                .map_err(|error| self.unpack_error(&layer.digest, spool_error(dest, error)))?;
            let extracted = archive::extract_into(reader, temp, &remaining, layer.compression)
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

/// A spooled layer that could not be read back.
fn spool_error(dest: &Path, error: std::io::Error) -> ArchiveError {
    ArchiveError::Destination {
        path: dest.to_path_buf(),
        source: std::io::Error::new(
            error.kind(),
            format!("reading the downloaded layer back from its temporary file: {error}"),
        ),
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
