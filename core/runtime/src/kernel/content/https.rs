//! `https://` refs: stored under the sha256 of the downloaded bytes; a
//! pinned ref whose digest is in the store is not downloaded. A tarball is
//! unpacked; a URL whose last segment is a `.yaml`, `.yml` or `.json` file
//! (`kubectl apply -f https://…/install.yaml`, a catalog's `catalog.json`)
//! is stored as that one file.

use std::sync::Arc;

use super::{ContentError, ImageSources, UnpackOptions, Unpacked, blocking};
use crate::archive::{self, Compression};
use crate::source::https::{HttpsError, TarballRef};
use crate::store::Store;

/// A tarball ref: download (unless pinned and stored), verify, unpack.
pub(super) async fn unpack_tarball(
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    unpack_tarball_authorized(store, sources, options, index, reference, None).await
}

/// [`unpack_tarball`], sending `authorization` (a chart repository's
/// credentials from the class's pull secrets) instead of any registered
/// for the URL.
pub(super) async fn unpack_tarball_authorized(
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
    authorization: Option<String>,
) -> Result<Unpacked, ContentError> {
    let https_error = |source: HttpsError| ContentError::Https {
        index,
        reference: reference.clone(),
        source: Box::new(source),
    };
    let tarball = TarballRef::parse(&reference).map_err(https_error)?;
    if let Some(pin) = tarball.pin()
        && let Some(dir) = store.get(pin)
    {
        tracing::debug!(%reference, digest = pin.as_str(), "pinned and stored; nothing to download");
        return Ok(Unpacked {
            reference,
            digest: pin.clone(),
            dir,
            commit: None,
        });
    }
    let authorization = authorization.or_else(|| sources.https().authorizations_for(tarball.url()));
    let (max, reach) = (options.max_download_size, options.reach());
    let downloaded = (sources.https())
        .download_authorized(&tarball, max, &reach, authorization.as_deref())
        .await
        .map_err(https_error)?;
    let digest = downloaded.digest.clone();
    if let Some(dir) = store.get(&digest) {
        tracing::debug!(%reference, digest = digest.as_str(), "same bytes already stored; nothing to unpack");
        return Ok(Unpacked {
            reference,
            digest,
            dir,
            commit: None,
        });
    }
    let limits = options.limits;
    let task_store = Arc::clone(store);
    let task_digest = digest.clone();
    let (url, task_reference) = (tarball.url().to_string(), reference.clone());
    let dir = blocking(index, &reference, move || {
        task_store.insert_with(&task_digest, |dir| -> Result<(), ContentError> {
            let unpack_error = |error| ContentError::Https {
                index,
                reference: task_reference.clone(),
                source: Box::new(HttpsError::Unpack {
                    url: url.clone(),
                    error,
                }),
            };
            let reader = downloaded.reader().map_err(|source| {
                unpack_error(archive::ArchiveError::Read {
                    path: "(the downloaded tarball)".into(),
                    source,
                })
            })?;
            if let Some(name) = single_file_name(&url) {
                return store_single_file(reader, dir, &name, limits.max_file_size).map_err(
                    |source| ContentError::Https {
                        index,
                        reference: task_reference.clone(),
                        source: Box::new(source.for_url(&url)),
                    },
                );
            }
            archive::extract_into(reader, dir, &limits, Compression::Detect)
                .map(|_| ())
                .map_err(unpack_error)
        })
    })
    .await?;
    Ok(Unpacked {
        reference,
        digest,
        dir,
        commit: None,
    })
}

/// The file name of a URL whose last path segment is a manifest or catalog
/// file, not an archive; `None` for anything else (a tarball).
fn single_file_name(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let name = url.path_segments()?.next_back()?;
    let name = percent_decoded(name)?;
    let lower = name.to_ascii_lowercase();
    let manifest = [".yaml", ".yml", ".json"]
        .iter()
        .any(|extension| lower.ends_with(extension) && lower.len() > extension.len());
    // One plain name: no separators, nothing hidden.
    let plain = !name.contains(['/', '\\', '\0']) && !name.starts_with('.');
    (manifest && plain).then_some(name)
}

fn percent_decoded(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Why one downloaded file could not be stored.
enum SingleFileError {
    TooLarge { size: u64, limit: u64 },
    Io(std::io::Error),
}

impl SingleFileError {
    fn for_url(self, url: &str) -> HttpsError {
        match self {
            Self::TooLarge { size, limit } => HttpsError::FileTooLarge {
                url: url.to_owned(),
                size,
                limit,
            },
            Self::Io(source) => HttpsError::Unpack {
                url: url.to_owned(),
                error: archive::ArchiveError::Read {
                    path: "(the downloaded file)".into(),
                    source,
                },
            },
        }
    }
}

/// Copies the downloaded bytes into `dir/name`, refusing more than `limit`.
fn store_single_file(
    reader: &std::fs::File,
    dir: &std::path::Path,
    name: &str,
    limit: u64,
) -> Result<(), SingleFileError> {
    let size = reader.metadata().map_err(SingleFileError::Io)?.len();
    if size > limit {
        return Err(SingleFileError::TooLarge { size, limit });
    }
    let mut target = std::fs::File::create(dir.join(name)).map_err(SingleFileError::Io)?;
    let mut reader = reader;
    std::io::copy(&mut reader, &mut target).map_err(SingleFileError::Io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_and_catalog_urls_are_single_files_and_the_rest_tarballs() {
        let name = |url: &str| single_file_name(url);
        assert_eq!(
            name("https://example.com/v1.2/install.yaml#sha256=00").as_deref(),
            Some("install.yaml")
        );
        assert_eq!(
            name("https://example.com/catalog.JSON?x=1").as_deref(),
            Some("catalog.JSON")
        );
        assert_eq!(
            name("https://example.com/my%20app.yml").as_deref(),
            Some("my app.yml")
        );
        assert_eq!(name("https://example.com/bundle.tar.gz"), None);
        assert_eq!(name("https://example.com/bundle.tgz"), None);
        assert_eq!(name("https://example.com/.yaml"), None, "hidden, no name");
        assert_eq!(
            name("https://example.com/a%2F..%2Fb.yaml"),
            None,
            "a separator"
        );
        assert_eq!(name("https://example.com/"), None);
    }
}
