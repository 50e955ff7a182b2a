//! The extraction loop: one entry at a time, judged from the archive alone.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::rc::Rc;

use tar::EntryType;

use super::path::{self, PathProblem};
use super::stream::Flags;
use super::{ArchiveError, Limits};

/// What a path in the archive has become so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// A regular file of this many bytes.
    File(u64),
    /// A directory named by its own entry.
    Dir,
    /// A directory created because a later path is under it.
    ImpliedDir,
}

/// The state of one extraction.
pub(super) struct Extraction<'a> {
    dir: &'a Path,
    limits: &'a Limits,
    flags: Rc<Flags>,
    /// Every path written, so duplicates and hard-link targets are judged
    /// from the archive alone, never from what is on disk.
    seen: HashMap<String, Seen>,
    /// The entry being read, for error messages.
    pub current: String,
    entries: u64,
    pub files: u64,
    pub directories: u64,
    pub written: u64,
    buffer: Vec<u8>,
}

impl<'a> Extraction<'a> {
    pub fn new(dir: &'a Path, limits: &'a Limits, flags: Rc<Flags>) -> Self {
        Self {
            dir,
            limits,
            flags,
            seen: HashMap::new(),
            current: "(start of archive)".into(),
            entries: 0,
            files: 0,
            directories: 0,
            written: 0,
            buffer: vec![0; 64 * 1024],
        }
    }

    pub fn run<R: Read>(&mut self, archive: &mut tar::Archive<R>) -> Result<(), ArchiveError> {
        let entries = archive
            .entries()
            .map_err(|error| self.stream_error(error))?;
        for entry in entries {
            let mut entry = entry.map_err(|error| self.stream_error(error))?;
            let raw = entry.path_bytes().into_owned();
            self.current = path::lossy(&raw);
            self.entries += 1;
            if self.entries > self.limits.max_files {
                return Err(ArchiveError::TooManyEntries {
                    path: self.current.clone(),
                    limit: self.limits.max_files,
                });
            }
            let kind = entry.header().entry_type();
            // Metadata for later entries that tar itself does not apply;
            // its bytes are skipped (and counted) by the next read.
            if kind == EntryType::XGlobalHeader {
                continue;
            }
            let checked = path::check(&raw).map_err(|problem| ArchiveError::UnsafePath {
                path: self.current.clone(),
                problem,
            })?;
            match kind {
                EntryType::Directory => self.directory(&checked.normalized)?,
                EntryType::Regular | EntryType::Continuous if checked.trailing_slash => {
                    // Pre-POSIX archives mark directories with a slash.
                    self.directory(&checked.normalized)?;
                }
                EntryType::Regular | EntryType::Continuous => {
                    self.file(&checked.normalized, &mut entry)?;
                }
                EntryType::Link => {
                    let target = entry.link_name_bytes().unwrap_or_default().into_owned();
                    self.hard_link(&checked.normalized, &target)?;
                }
                EntryType::Symlink => {
                    let target = entry.link_name_bytes().unwrap_or_default();
                    return Err(ArchiveError::Symlink {
                        path: self.current.clone(),
                        target: path::lossy(&target),
                    });
                }
                other => {
                    return Err(ArchiveError::Special {
                        path: self.current.clone(),
                        kind: describe(other),
                    });
                }
            }
        }
        Ok(())
    }

    fn directory(&mut self, path: &str) -> Result<(), ArchiveError> {
        if path.is_empty() {
            // `./`: the root itself, which exists.
            return Ok(());
        }
        self.make_parents(path)?;
        match self.seen.get(path) {
            None => {
                self.create_dir(path)?;
                self.seen.insert(path.to_owned(), Seen::Dir);
            }
            Some(Seen::ImpliedDir) => {
                self.seen.insert(path.to_owned(), Seen::Dir);
            }
            Some(Seen::Dir | Seen::File(_)) => return Err(self.duplicate()),
        }
        Ok(())
    }

    fn file<R: Read>(
        &mut self,
        path: &str,
        entry: &mut tar::Entry<'_, R>,
    ) -> Result<(), ArchiveError> {
        self.claim_file(path)?;
        // The declared size (PAX `size` wins over the header, as tar reads
        // it) rejects early; the copy below counts what is really there.
        let declared = entry.size();
        if declared > self.limits.max_file_size {
            return Err(self.file_too_large(declared));
        }
        let mut out = self.create_file(path)?;
        // The tar reader already stops at the declared size; the extra
        // bound keeps the limit true even if that ever changes.
        let mut limited = entry.take(self.limits.max_file_size.saturating_add(1));
        let mut copied = 0u64;
        loop {
            let n = match limited.read(&mut self.buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(self.stream_error(error)),
            };
            copied += n as u64;
            if copied > self.limits.max_file_size {
                return Err(self.file_too_large(copied));
            }
            out.write_all(&self.buffer[..n])
                .map_err(|error| self.write_error(error))?;
        }
        if copied < declared {
            return Err(self.stream_error(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the entry is truncated: {copied} of {declared} bytes"),
            )));
        }
        self.count_written(copied)?;
        self.files += 1;
        self.seen.insert(path.to_owned(), Seen::File(copied));
        Ok(())
    }

    fn hard_link(&mut self, path: &str, raw_target: &[u8]) -> Result<(), ArchiveError> {
        let shown = path::lossy(raw_target);
        let refuse = |problem: String| ArchiveError::HardLink {
            path: self.current.clone(),
            target: shown.clone(),
            problem,
        };
        let target = path::check(raw_target).map_err(|problem| refuse(problem.to_string()))?;
        let Some(&Seen::File(size)) = self.seen.get(&target.normalized) else {
            return Err(refuse(
                "is not a regular file earlier in the archive".into(),
            ));
        };
        self.claim_file(path)?;
        self.count_written(size)?;
        let mut out = self.create_file(path)?;
        let mut input = fs::File::open(self.dir.join(&target.normalized))
            .map_err(|error| self.write_error(error))?;
        io::copy(&mut input, &mut out).map_err(|error| self.write_error(error))?;
        self.files += 1;
        self.seen.insert(path.to_owned(), Seen::File(size));
        Ok(())
    }

    /// Checks that a file may be written at `path` and creates its parents.
    fn claim_file(&mut self, path: &str) -> Result<(), ArchiveError> {
        if path.is_empty() {
            return Err(ArchiveError::UnsafePath {
                path: self.current.clone(),
                problem: PathProblem::Empty,
            });
        }
        self.make_parents(path)?;
        if self.seen.contains_key(path) {
            return Err(self.duplicate());
        }
        Ok(())
    }

    fn make_parents(&mut self, path: &str) -> Result<(), ArchiveError> {
        for parent in path::parents(path) {
            match self.seen.get(parent) {
                Some(Seen::Dir | Seen::ImpliedDir) => {}
                Some(Seen::File(_)) => {
                    return Err(ArchiveError::NotADirectory {
                        path: self.current.clone(),
                        parent: parent.to_owned(),
                    });
                }
                None => {
                    self.create_dir(parent)?;
                    self.seen.insert(parent.to_owned(), Seen::ImpliedDir);
                }
            }
        }
        Ok(())
    }

    fn create_dir(&mut self, path: &str) -> Result<(), ArchiveError> {
        make_dir(&self.dir.join(path)).map_err(|error| self.write_error(error))?;
        self.directories += 1;
        Ok(())
    }

    fn create_file(&self, path: &str) -> Result<fs::File, ArchiveError> {
        let full = self.dir.join(path);
        // create_new: never follow or replace anything already there.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&full)
            .map_err(|error| self.write_error(error))?;
        // The mode above is filtered by the umask; set it exactly.
        file.set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|error| self.write_error(error))?;
        Ok(file)
    }

    fn count_written(&mut self, bytes: u64) -> Result<(), ArchiveError> {
        self.written += bytes;
        if self.written > self.limits.max_total_size {
            return Err(self.too_large());
        }
        Ok(())
    }

    /// Classifies an error that came up through the decoders.
    pub fn stream_error(&self, source: io::Error) -> ArchiveError {
        let path = self.current.clone();
        if self.flags.exceeded.get() {
            self.too_large()
        } else if self.flags.source_failed.get() {
            ArchiveError::Read { path, source }
        } else {
            ArchiveError::Corrupt { path, source }
        }
    }

    fn too_large(&self) -> ArchiveError {
        ArchiveError::TooLarge {
            path: self.current.clone(),
            limit: self.limits.max_total_size,
        }
    }

    fn file_too_large(&self, size: u64) -> ArchiveError {
        ArchiveError::FileTooLarge {
            path: self.current.clone(),
            size,
            limit: self.limits.max_file_size,
        }
    }

    fn duplicate(&self) -> ArchiveError {
        ArchiveError::Duplicate {
            path: self.current.clone(),
        }
    }

    fn write_error(&self, source: io::Error) -> ArchiveError {
        ArchiveError::Write {
            path: self.current.clone(),
            source,
        }
    }
}

/// Creates one directory with mode `0o755` exactly.
pub(super) fn make_dir(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o755).create(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
}

/// Names an entry type that is refused.
fn describe(kind: EntryType) -> String {
    match kind {
        EntryType::Char => "character device".into(),
        EntryType::Block => "block device".into(),
        EntryType::Fifo => "fifo".into(),
        EntryType::GNUSparse => "sparse file".into(),
        other => format!(
            "entry of unsupported type {:?}",
            char::from(other.as_byte())
        ),
    }
}
