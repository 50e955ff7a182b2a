//! The on-disk content store: unpacked bundle content, one directory per
//! digest, at `<root>/sha256/<hex>`.
//!
//! A content directory only ever appears whole: it is filled in a private
//! temporary directory (`<root>/tmp/`, on the same filesystem) and renamed
//! into place, and it is renamed out of place before it is deleted. So
//! [`Store::get`] never returns a half-written or half-deleted directory,
//! and two inserts of the same digest (threads or processes) cannot corrupt
//! each other: the second rename fails because the first one's directory is
//! there, and the loser discards its copy.
//!
//! The store does not check that content matches its digest: the digest
//! names what was fetched (an image layer, a tarball), not the unpacked tree.
//! Callers verify while unpacking ([`crate::archive::Extracted::sha256`]).
//! Files are not fsynced: the store is a cache that a restarted provisioner
//! may refill, not a durable record.

mod digest;
pub mod gc;

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub use digest::{Digest, DigestError};

/// The folder under the root that holds content, named for the algorithm.
const CONTENT_DIR: &str = "sha256";
/// The folder under the root that holds temporary directories.
const TEMP_DIR: &str = "tmp";

/// A content store rooted at one directory. Open one per root and share
/// it (`Arc<Store>`): every method takes `&self`, and [`Store::retain`]
/// knows only the inserts of its own instance.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    /// Temporary directories this store is filling now; [`Store::retain`]
    /// leaves them alone.
    in_flight: Mutex<HashSet<PathBuf>>,
}

/// Numbers temporary directories across every [`Store`] of the process,
/// so no two can pick the same name.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// What [`Store::retain`] did.
#[derive(Debug, Default)]
pub struct GcReport {
    /// Content removed because nothing referenced it, sorted.
    pub removed: Vec<Digest>,
    /// How many content directories were kept.
    pub kept: usize,
    /// Temporary directories left by inserts that did not finish (a crash).
    pub stale_temp: usize,
    /// Entries under `sha256/` whose names are not digests; left alone.
    pub unknown: Vec<PathBuf>,
    /// Entries that could not be removed; the next run tries again.
    pub failed: Vec<StoreError>,
}

/// A store operation that failed on the filesystem.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A directory of the store could not be created.
    #[error("cannot create store directory {}: {source}; check that the volume is writable and not full", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A directory of the store could not be listed.
    #[error("cannot list store directory {}: {source}; check the volume and its permissions", path.display())]
    List {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Filled content could not be renamed into place.
    #[error("cannot move {} into the store at {}: {source}; check that the volume is writable", from.display(), to.display())]
    Rename {
        /// The temporary directory.
        from: PathBuf,
        /// Where the content belongs.
        to: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A content or temporary directory could not be removed.
    #[error("cannot remove {} from the store: {source}; remove it by hand if it persists", path.display())]
    Remove {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl StoreError {
    /// The condition reason a failed unpack reports.
    pub fn reason(&self) -> &'static str {
        "UnpackFailed"
    }

    /// Store errors are disk trouble, worth retrying; never terminal.
    pub fn is_terminal(&self) -> bool {
        false
    }

    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Create { .. } => "store_create",
            Self::List { .. } => "store_list",
            Self::Rename { .. } => "store_rename",
            Self::Remove { .. } => "store_remove",
        }
    }
}

impl Store {
    /// Opens (creating if needed) the store rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        for dir in [root.join(CONTENT_DIR), root.join(TEMP_DIR)] {
            fs::create_dir_all(&dir).map_err(|source| StoreError::Create { path: dir, source })?;
        }
        Ok(Self {
            root,
            in_flight: Mutex::new(HashSet::new()),
        })
    }

    /// The directory the store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `digest`'s content lives (or would live).
    pub fn path_of(&self, digest: &Digest) -> PathBuf {
        self.root.join(CONTENT_DIR).join(digest.hex())
    }

    /// The content directory of `digest`, if it is in the store.
    pub fn get(&self, digest: &Digest) -> Option<PathBuf> {
        let path = self.path_of(digest);
        // symlink_metadata: a symlink planted in the store is not content.
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        is_dir.then_some(path)
    }

    /// Every digest in the store, sorted.
    pub fn digests(&self) -> Result<Vec<Digest>, StoreError> {
        let dir = self.root.join(CONTENT_DIR);
        let mut digests: Vec<Digest> = list(&dir)?
            .into_iter()
            .filter_map(|name| parse_entry(&name))
            .collect();
        digests.sort();
        Ok(digests)
    }

    /// Returns `digest`'s content directory, filling it first if absent.
    ///
    /// `fill` writes the content into the empty directory it is given. On
    /// success the directory is renamed into place; on error (or panic) it
    /// is removed and the store is unchanged. When the digest is already
    /// present `fill` is not called; when another insert of the same digest
    /// wins the race, its content is kept and this one's is discarded.
    pub fn insert_with<E, F>(&self, digest: &Digest, fill: F) -> Result<PathBuf, E>
    where
        F: FnOnce(&Path) -> Result<(), E>,
        E: From<StoreError>,
    {
        if let Some(path) = self.get(digest) {
            return Ok(path);
        }
        let temp = self.temp_dir(digest.hex())?;
        fill(&temp.path)?;
        let path = self.path_of(digest);
        match fs::rename(&temp.path, &path) {
            Ok(()) => {
                temp.keep();
                Ok(path)
            }
            // Someone else renamed theirs first (ENOTEMPTY/EEXIST): theirs
            // is the same content; `temp` removes ours.
            Err(_) if self.get(digest).is_some() => Ok(path),
            Err(source) => Err(StoreError::Rename {
                from: temp.path.clone(),
                to: path,
                source,
            }
            .into()),
        }
    }

    /// Every content directory with its size and when it was stored (its
    /// modification time: the last file written while it was filled, just
    /// before it was renamed into place), sorted by digest.
    pub fn entries(&self) -> Result<Vec<gc::Entry>, StoreError> {
        let mut entries = Vec::new();
        for digest in self.digests()? {
            let path = self.path_of(&digest);
            // Gone meanwhile (another collection): not an entry any more.
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            entries.push(gc::Entry {
                bytes: tree_bytes(&path),
                stored_at: meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH),
                digest,
            });
        }
        Ok(entries)
    }

    /// Collects the store: removes what [`gc::plan`] chooses under
    /// `policy`, keeping every digest in `pinned`, and temporary
    /// directories no insert of this store is filling.
    pub fn collect(
        &self,
        pinned: &HashSet<Digest>,
        policy: gc::Policy,
    ) -> Result<(gc::Plan, GcReport), StoreError> {
        let plan = gc::plan(
            &self.entries()?,
            pinned,
            std::time::SystemTime::now(),
            policy,
        );
        let mut report = GcReport::default();
        for digest in &plan.remove {
            match self.remove_content(digest) {
                Ok(()) => report.removed.push(digest.clone()),
                Err(error) => report.failed.push(error),
            }
        }
        report.removed.sort();
        report.stale_temp = self.sweep_temp(&mut report.failed)?;
        Ok((plan, report))
    }

    /// Removes `digest`'s content now, pinned or not: content found
    /// damaged is fetched again rather than used.
    pub fn evict(&self, digest: &Digest) -> Result<(), StoreError> {
        self.remove_content(digest)
    }

    /// Removes `digest`'s content, renaming it out of place first so
    /// [`Store::get`] never sees it half deleted.
    fn remove_content(&self, digest: &Digest) -> Result<(), StoreError> {
        let doomed = self.temp_path(&format!("gc-{}", digest.hex()));
        let from = self.path_of(digest);
        let result = match fs::rename(&from, &doomed) {
            Ok(()) => remove(&doomed),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Rename {
                from,
                to: doomed.clone(),
                source,
            }),
        };
        self.release(&doomed);
        result
    }

    /// Removes temporary directories no insert of this store is filling
    /// (left over from a crash); returns how many.
    fn sweep_temp(&self, failed: &mut Vec<StoreError>) -> Result<usize, StoreError> {
        let temp = self.root.join(TEMP_DIR);
        let mut swept = 0;
        for name in list(&temp)? {
            let path = temp.join(&name);
            // Paths are registered before they are created, so one that is
            // on disk and not registered now is left over from a crash.
            if self.is_in_flight(&path) {
                continue;
            }
            match remove(&path) {
                Ok(()) => swept += 1,
                Err(error) => failed.push(error),
            }
        }
        Ok(swept)
    }

    /// Removes every content directory whose digest is not in `referenced`,
    /// and temporary directories that no insert of this store is filling.
    ///
    /// Content in use must be in `referenced`: a directory handed out by
    /// [`Store::get`] is gone once it is collected. Only one process should
    /// collect a given root; inserts from other processes may run at the
    /// same time only if they never leave a temporary directory older than
    /// the collection (in practice: one provisioner per store volume).
    pub fn retain(&self, referenced: &HashSet<Digest>) -> Result<GcReport, StoreError> {
        let mut report = GcReport::default();
        let content = self.root.join(CONTENT_DIR);
        for name in list(&content)? {
            let Some(digest) = parse_entry(&name) else {
                report.unknown.push(content.join(&name));
                continue;
            };
            if referenced.contains(&digest) {
                report.kept += 1;
                continue;
            }
            match self.remove_content(&digest) {
                Ok(()) => report.removed.push(digest),
                Err(error) => report.failed.push(error),
            }
        }
        report.removed.sort();
        report.stale_temp = self.sweep_temp(&mut report.failed)?;
        Ok(report)
    }

    /// Creates a fresh, empty temporary directory and marks it in flight.
    fn temp_dir(&self, label: &str) -> Result<TempDir<'_>, StoreError> {
        let mut builder = fs::DirBuilder::new();
        builder.mode(0o755);
        loop {
            let path = self.temp_path(label);
            match builder.create(&path) {
                Ok(()) => {
                    let temp = TempDir {
                        store: self,
                        path,
                        kept: false,
                    };
                    // The mode above is filtered by the umask; content
                    // directories are world-readable whatever the umask.
                    let mode = fs::Permissions::from_mode(0o755);
                    fs::set_permissions(&temp.path, mode).map_err(|source| StoreError::Create {
                        path: temp.path.clone(),
                        source,
                    })?;
                    return Ok(temp);
                }
                // Another `Store` on the same root took the name; not ours.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => self.release(&path),
                Err(source) => {
                    self.release(&path);
                    return Err(StoreError::Create { path, source });
                }
            }
        }
    }

    /// A temporary path not used by this store yet, registered in flight
    /// until [`Store::release`].
    fn temp_path(&self, label: &str) -> PathBuf {
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let name = format!("{label}.{}.{n}", std::process::id());
        let path = self.root.join(TEMP_DIR).join(name);
        self.in_flight().insert(path.clone());
        path
    }

    fn is_in_flight(&self, path: &Path) -> bool {
        self.in_flight().contains(path)
    }

    fn release(&self, path: &Path) {
        self.in_flight().remove(path);
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        // The set stays consistent even if a holder panicked: every
        // critical section is a single insert, remove or lookup.
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A temporary directory that is removed and released when dropped, so
/// errors and panics in `fill` leave nothing behind.
struct TempDir<'a> {
    store: &'a Store,
    path: PathBuf,
    kept: bool,
}

impl TempDir<'_> {
    /// Called once renamed into place: nothing left to remove.
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for TempDir<'_> {
    fn drop(&mut self) {
        if !self.kept {
            // A failure here leaves a stale directory for `retain`.
            let _ = remove(&self.path);
        }
        self.store.release(&self.path);
    }
}

/// The names in `dir`, as strings (non-UTF-8 names are never ours).
fn list(dir: &Path) -> Result<Vec<String>, StoreError> {
    let read = |source| StoreError::List {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

fn parse_entry(name: &str) -> Option<Digest> {
    Digest::parse(&format!("sha256:{name}")).ok()
}

/// Bytes the files under `path` take (what is unreadable counts as 0).
fn tree_bytes(path: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => tree_bytes(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |meta| meta.len()),
            _ => 0,
        })
        .sum()
}

/// Removes a directory tree or a file; absent is fine.
fn remove(path: &Path) -> Result<(), StoreError> {
    let result = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(error) => Err(error),
    };
    match result {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(StoreError::Remove {
            path: path.to_path_buf(),
            source: error,
        }),
        _ => Ok(()),
    }
}
