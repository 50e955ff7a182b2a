//! `https://` tarball refs: stored under the sha256 of the downloaded
//! bytes; a pinned ref whose digest is in the store is not downloaded.

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
    let downloaded = sources
        .https()
        .download(&tarball, options.max_download_size, &options.reach())
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
