//! Reading catalog files: one file, a directory, or text in memory.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::assemble;
use super::diagnostic::{CatalogError, Diagnostic, Origin};
use super::document::{self, Document, Format};
use super::model::Catalog;

impl Catalog {
    /// Loads the catalog at `path`: one file, or a directory walked
    /// recursively in path order, reading every `.json`, `.yaml` and `.yml`
    /// file and ignoring the rest.
    pub fn load(path: &Path, name: &str, priority: i32) -> Result<Catalog, CatalogError> {
        let mut builder = CatalogBuilder::new(name, priority);
        builder.add_path(path)?;
        Ok(builder.build())
    }

    /// Loads a catalog from one in-memory file; `origin` names it in errors
    /// and diagnostics.
    pub fn from_str(
        text: &str,
        origin: &str,
        format: Format,
        name: &str,
        priority: i32,
    ) -> Result<Catalog, CatalogError> {
        let mut builder = CatalogBuilder::new(name, priority);
        builder.add_str(text, origin, format)?;
        Ok(builder.build())
    }
}

/// Collects documents from any number of files, then assembles one catalog.
///
/// Documents may come in any order across files: a channel may precede its
/// package, as `opm` allows.
#[derive(Debug)]
pub struct CatalogBuilder {
    name: String,
    priority: i32,
    documents: Vec<(Origin, Document)>,
    diagnostics: Vec<Diagnostic>,
}

impl CatalogBuilder {
    /// An empty catalog called `name` with `priority`.
    pub fn new(name: impl Into<String>, priority: i32) -> Self {
        Self {
            name: name.into(),
            priority,
            documents: Vec::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Adds the documents of one in-memory file.
    pub fn add_str(
        &mut self,
        text: &str,
        origin: impl AsRef<Path>,
        format: Format,
    ) -> Result<&mut Self, CatalogError> {
        let file: Arc<Path> = Arc::from(origin.as_ref());
        document::decode(
            text,
            &file,
            format,
            &mut self.documents,
            &mut self.diagnostics,
        )?;
        Ok(self)
    }

    /// Adds a file, or every catalog file under a directory (path order).
    pub fn add_path(&mut self, path: &Path) -> Result<&mut Self, CatalogError> {
        let name = self.name.clone();
        let read_error = |path: &Path, source| CatalogError::Read {
            name: name.clone(),
            path: path.to_path_buf(),
            source,
        };
        let metadata = fs::metadata(path).map_err(|e| read_error(path, e))?;
        let files = if metadata.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files).map_err(|(at, e)| read_error(&at, e))?;
            files
        } else {
            let Some(format) = Format::from_path(path) else {
                let message = "not a .json, .yaml or .yml file";
                return Err(read_error(path, std::io::Error::other(message)));
            };
            vec![(path.to_path_buf(), format)]
        };
        for (file, format) in files {
            let bytes = fs::read(&file).map_err(|e| read_error(&file, e))?;
            let text = String::from_utf8(bytes).map_err(|error| {
                let offset = error.utf8_error().valid_up_to();
                let newlines = error.as_bytes()[..offset].iter().filter(|&&b| b == b'\n');
                CatalogError::NotUtf8 {
                    path: file.clone(),
                    line: u32::try_from(newlines.count() + 1).unwrap_or(u32::MAX),
                    offset,
                }
            })?;
            self.add_str(&text, &file, format)?;
        }
        Ok(self)
    }

    /// Assembles and checks the catalog. Never fails: what is wrong is in
    /// [`Catalog::diagnostics`].
    pub fn build(self) -> Catalog {
        assemble::assemble(self.name, self.priority, self.documents, self.diagnostics)
    }
}

/// Catalog files under `dir`, in path order. Symlinked directories are not
/// followed (no loops); symlinked files are read.
fn walk(dir: &Path, files: &mut Vec<(PathBuf, Format)>) -> Result<(), (PathBuf, std::io::Error)> {
    let entries = fs::read_dir(dir).map_err(|e| (dir.to_path_buf(), e))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| (dir.to_path_buf(), e))?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| (path.clone(), e))?;
        if kind.is_dir() {
            walk(&path, files)?;
        } else if let Some(format) = Format::from_path(&path)
            && (kind.is_file() || fs::metadata(&path).is_ok_and(|m| m.is_file()))
        {
            files.push((path, format));
        }
    }
    Ok(())
}
