//! Safe extraction of untrusted bundle archives (tar, optionally gzipped).
//!
//! Bundle content comes from whoever published the image or tarball, so the
//! archive is read entry by entry (never `tar::Archive::unpack`) and each
//! entry is checked before anything is written. Refused, with an error that
//! names the entry:
//!
//! - paths that are absolute, have a `..` component, contain NUL or are not
//!   UTF-8: they could write outside the bundle or mislead other tools;
//! - **symbolic links, whatever their target**: a link inside the bundle is
//!   harmless only while every reader (the manifest walker, a provisioner's
//!   own code) resolves it the same careful way, and bundles have no need
//!   for them; refusing them closes the whole class of link-escape and
//!   link-to-link tricks at once;
//! - hard links, unless they name a regular file earlier in the archive:
//!   those are written as a **copy** (no shared inode), so they can never
//!   reach outside the bundle or alias a later entry;
//! - devices, fifos, sparse files and unknown entry types (tar has no type
//!   for sockets, so they arrive as unknown types);
//! - the same path twice, or a path under one that is a file;
//! - a file over [`Limits::max_file_size`], more than [`Limits::max_files`]
//!   entries, and a decompressed stream over [`Limits::max_total_size`].
//!   Sizes are counted on the bytes actually read, not taken from headers,
//!   so a gzip bomb stops at the limit with bounded memory and disk. (The
//!   one thing held in memory is a GNU long name or PAX record, which the
//!   tar crate reads whole; the total limit bounds it too.)
//!
//! Nothing is kept from the archive's metadata: directories are written
//! `0o755` and files `0o644` (never setuid or executable), owned by the
//! caller, with the current time. [`extract`] fills a temporary sibling of
//! the destination and renames it into place only when every entry passed;
//! on error the temporary directory is removed and the destination is left
//! as it was.

mod error;
mod extraction;
mod path;
mod stream;

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::MultiGzDecoder;

pub use error::ArchiveError;
pub use path::PathProblem;

use crate::store::Digest;
use extraction::{Extraction, make_dir};
use stream::{Bounded, Flags, Hashing};

/// How much an archive may hold. The defaults fit registry+v1 and plain
/// manifest bundles with room to spare (the largest CRD in the test data,
/// Eclipse Che's, is 2 MiB of YAML).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes per file (the ProvisionerClass's `maxObjectSize`).
    pub max_file_size: u64,
    /// Bytes of the whole decompressed tar stream, headers and padding
    /// included; hard-link copies count again.
    pub max_total_size: u64,
    /// Entries of any kind (files, directories, metadata headers).
    pub max_files: u64,
}

impl Default for Limits {
    /// 4 MiB per file, 100 MiB in all, 10,000 entries.
    fn default() -> Self {
        Self {
            max_file_size: 4 << 20,
            max_total_size: 100 << 20,
            max_files: 10_000,
        }
    }
}

/// How the input is compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Gzip if the input starts with the gzip magic bytes, else plain tar.
    #[default]
    Detect,
    /// Gzip (one or more members); anything else is [`ArchiveError::Corrupt`].
    Gzip,
    /// A plain tar stream.
    Uncompressed,
}

/// What an extraction wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    /// Regular files written (hard-link copies included).
    pub files: u64,
    /// Directories created, explicit or implied by a file's path.
    pub directories: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// The sha256 of every byte read from the input as given (compressed,
    /// if it was): what an image layer digest or a tarball checksum pins.
    pub sha256: Digest,
}

/// Extracts a tar or gzipped tar (detected by its magic bytes) into `dest`,
/// which must not exist yet; all or nothing.
pub fn extract(reader: impl Read, dest: &Path, limits: &Limits) -> Result<Extracted, ArchiveError> {
    extract_atomically(reader, dest, limits, Compression::Detect)
}

/// Extracts a gzipped tar into `dest`, which must not exist yet; all or nothing.
pub fn extract_gzip(
    reader: impl Read,
    dest: &Path,
    limits: &Limits,
) -> Result<Extracted, ArchiveError> {
    extract_atomically(reader, dest, limits, Compression::Gzip)
}

/// Extracts into `dir`, an existing empty directory private to the caller,
/// with no atomicity: on error `dir` is left partly written and the caller
/// discards it (as [`crate::store::Store::insert_with`] does).
pub fn extract_into(
    reader: impl Read,
    dir: &Path,
    limits: &Limits,
    compression: Compression,
) -> Result<Extracted, ArchiveError> {
    let flags = Rc::new(Flags::default());
    let mut hashing = Hashing::new(reader, Rc::clone(&flags));
    let mut extraction = Extraction::new(dir, limits, Rc::clone(&flags));
    let (gzip, prefix) = hashing
        .sniff_gzip()
        .map_err(|error| extraction.stream_error(error))?;
    let joined = io::Cursor::new(prefix).chain(&mut hashing);
    let decoded: Box<dyn Read + '_> = match (compression, gzip) {
        (Compression::Gzip, _) | (Compression::Detect, true) => {
            Box::new(MultiGzDecoder::new(joined))
        }
        _ => Box::new(joined),
    };
    let bounded = Bounded::new(decoded, limits.max_total_size, flags);
    let mut archive = tar::Archive::new(bounded);
    extraction.run(&mut archive)?;
    // Read to the end: the gzip checksum is verified there, the digest
    // covers every byte, and trailing data counts against the limit.
    extraction.current = "(end of archive)".into();
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(|error| extraction.stream_error(error))?;
    drop(rest);
    Ok(Extracted {
        files: extraction.files,
        directories: extraction.directories,
        bytes: extraction.written,
        sha256: hashing.finish(),
    })
}

fn extract_atomically(
    reader: impl Read,
    dest: &Path,
    limits: &Limits,
    compression: Compression,
) -> Result<Extracted, ArchiveError> {
    let dest_error = |source| ArchiveError::Destination {
        path: dest.to_path_buf(),
        source,
    };
    if fs::symlink_metadata(dest).is_ok() {
        return Err(ArchiveError::DestinationExists {
            path: dest.to_path_buf(),
        });
    }
    let name = dest
        .file_name()
        .ok_or_else(|| dest_error(io::Error::other("the destination has no file name")))?;
    let parent = match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).map_err(dest_error)?;
    let temp = TempDir::create(parent, name).map_err(dest_error)?;
    let extracted = extract_into(reader, &temp.path, limits, compression)?;
    if fs::symlink_metadata(dest).is_ok() {
        // Someone else extracted here meanwhile; theirs stays.
        return Err(ArchiveError::DestinationExists {
            path: dest.to_path_buf(),
        });
    }
    fs::rename(&temp.path, dest).map_err(dest_error)?;
    temp.keep();
    Ok(extracted)
}

/// A temporary sibling of the destination, removed when dropped unless
/// it was renamed into place.
struct TempDir {
    path: PathBuf,
    kept: bool,
}

impl TempDir {
    fn create(parent: &Path, name: &std::ffi::OsStr) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let mut temp_name = std::ffi::OsString::from(".");
            temp_name.push(name);
            temp_name.push(format!(".extract-{}-{n}", std::process::id()));
            let path = parent.join(temp_name);
            match make_dir(&path) {
                Ok(()) => return Ok(Self { path, kept: false }),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Called once renamed: the path may belong to someone else by now.
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
