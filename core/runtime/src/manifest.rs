//! Kubernetes objects from a directory of plain manifests.
//!
//! [`load_dir`] walks the content root in a fixed order (paths sorted by
//! component), reads every `*.yaml`, `*.yml` and `*.json` file, splits YAML
//! and JSON streams into documents (skipping empty ones) and checks each
//! document on its own. Refused, with the file and line in the error:
//!
//! - text that is not UTF-8, YAML or JSON that does not parse;
//! - documents that are not mappings, and `kind: List` documents (their
//!   items would have no line of their own; write them as documents);
//! - objects without a non-empty string `apiVersion`, `kind` or
//!   `metadata.name`: nothing can be applied without them;
//! - objects larger than the per-object limit, measured as compact JSON,
//!   the form the API server stores (YAML indentation does not count);
//! - symbolic links that leave the root or name a directory (content
//!   from [`crate::archive`] has none; a mounted ConfigMap links its files
//!   into a hidden folder, which is allowed).
//!
//! Names starting with `.` are skipped: hidden files and folders are not
//! manifests (editor backups, `.git`, a ConfigMap volume's `..data`).
//! Other files (`README.md`, scripts) are skipped too. [`check_duplicates`]
//! then refuses two documents that define the same object.

mod decode;
mod error;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use decode::Format;
pub use error::{Location, ManifestError};

/// The default per-object limit: 1.5 MiB, etcd's default request limit,
/// so an object over it could not be stored anyway.
pub const DEFAULT_MAX_OBJECT_SIZE: u64 = 3 << 19;

/// One object read from the content.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The file it came from, relative to the content root.
    pub file: PathBuf,
    /// Its position among the file's non-empty documents, from 0.
    pub document: usize,
    /// The 1-based line its document starts on.
    pub line: usize,
    /// The object itself.
    pub object: Value,
}

/// What identifies an object in a cluster, as written in a manifest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// `apiVersion`, e.g. `apps/v1` or `v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.namespace`; `None` when absent or empty (cluster-scoped,
    /// or to be placed in the install namespace).
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// The API group: the part of `apiVersion` before `/`, empty for core.
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Reads the key of `object`; `Err` names the first missing field.
    pub fn of(object: &Value) -> Result<Self, &'static str> {
        let text = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let api_version = text(object.get("apiVersion")).ok_or("apiVersion")?;
        let kind = text(object.get("kind")).ok_or("kind")?;
        let metadata = object.get("metadata");
        let name = text(metadata.and_then(|m| m.get("name"))).ok_or("metadata.name")?;
        let namespace = text(metadata.and_then(|m| m.get("namespace")));
        Ok(Self {
            api_version,
            kind,
            namespace,
            name,
        })
    }

    /// Whether `self` and `other` name the same object in a cluster: same
    /// group and kind, namespace and name. The version is left out on
    /// purpose: `apps/v1` and `apps/v1beta2` Deployments of one name are
    /// one object, and two manifests would fight over it.
    pub fn same_object(&self, other: &Self) -> bool {
        self.group() == other.group()
            && self.kind == other.kind
            && self.namespace == other.namespace
            && self.name == other.name
    }
}

impl fmt::Display for ObjectKey {
    /// `apps/v1 Deployment ns/name`, or `v1 Namespace name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.api_version, self.kind)?;
        if let Some(namespace) = &self.namespace {
            write!(f, "{namespace}/")?;
        }
        f.write_str(&self.name)
    }
}

impl Manifest {
    /// Where this object was written.
    pub fn location(&self) -> Location {
        Location {
            file: self.file.clone(),
            line: self.line,
        }
    }

    /// The object's key; an error only if `object` was changed since it
    /// was loaded and lost a required field.
    pub fn key(&self) -> Result<ObjectKey, ManifestError> {
        ObjectKey::of(&self.object).map_err(|field| ManifestError::MissingField {
            at: self.location(),
            field,
        })
    }
}

/// Reads every manifest under `root`, in a fixed order, refusing objects
/// over `max_object_size` bytes (see the module docs for what else).
pub fn load_dir(root: &Path, max_object_size: u64) -> Result<Vec<Manifest>, ManifestError> {
    let mut files = Vec::new();
    let canonical_root = fs::canonicalize(root).map_err(|source| ManifestError::Read {
        path: PathBuf::new(),
        source,
    })?;
    walk(&canonical_root, Path::new(""), &mut files)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut manifests = Vec::new();
    for (relative, format) in files {
        let bytes = fs::read(root.join(&relative)).map_err(|source| ManifestError::Read {
            path: relative.clone(),
            source,
        })?;
        manifests.extend(parse(&relative, &bytes, format, max_object_size)?);
    }
    Ok(manifests)
}

/// Reads the manifests in one file's bytes; `file` names the file in
/// objects and errors.
pub fn parse(
    file: &Path,
    bytes: &[u8],
    format: Format,
    max_object_size: u64,
) -> Result<Vec<Manifest>, ManifestError> {
    let documents = decode::decode(file, bytes, format)?;
    let mut manifests = Vec::with_capacity(documents.len());
    for (document, (line, object)) in documents.into_iter().enumerate() {
        let manifest = Manifest {
            file: file.to_path_buf(),
            document,
            line,
            object,
        };
        check(&manifest, max_object_size)?;
        manifests.push(manifest);
    }
    Ok(manifests)
}

/// The objects of a directory of plain manifests: [`load_dir`], then
/// [`check_duplicates`]; what the plain provisioner (and most authors) need.
pub fn load_objects(root: &Path, max_object_size: u64) -> Result<Vec<Value>, ManifestError> {
    let manifests = load_dir(root, max_object_size)?;
    check_duplicates(&manifests)?;
    Ok(manifests
        .into_iter()
        .map(|manifest| manifest.object)
        .collect())
}

/// One file of the content that is not a manifest (a bundle's metadata, a
/// package's settings): read only inside `root` (no `..`, no absolute
/// path, no link leading out), no larger than `max_size` bytes, decoded as
/// JSON (`*.json`) or YAML (anything else) with the same limits and
/// `file:line:column` errors as manifests, and holding one document.
/// `None` when the file is absent; an empty file reads as `null`. What a
/// provisioner author uses instead of reading and parsing by hand.
pub fn read_document(
    root: &Path,
    relative: &Path,
    max_size: u64,
) -> Result<Option<Value>, ManifestError> {
    use std::path::Component;
    let outside = || ManifestError::OutsideContent {
        path: relative.to_path_buf(),
    };
    if relative
        .components()
        .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside());
    }
    let path = root.join(relative);
    let target = match fs::canonicalize(&path) {
        Ok(target) => target,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ManifestError::Read {
                path: relative.to_path_buf(),
                source,
            });
        }
    };
    let canonical_root = fs::canonicalize(root).map_err(|source| ManifestError::Read {
        path: PathBuf::new(),
        source,
    })?;
    if !target.starts_with(&canonical_root) {
        return Err(outside());
    }
    let read_error = |source| ManifestError::Read {
        path: relative.to_path_buf(),
        source,
    };
    let size = fs::metadata(&target).map_err(read_error)?.len();
    if size > max_size {
        return Err(ManifestError::FileTooLarge {
            path: relative.to_path_buf(),
            size,
            limit: max_size,
        });
    }
    let bytes = fs::read(&target).map_err(read_error)?;
    let format = match Format::of(relative) {
        Some(Format::Json) => Format::Json,
        _ => Format::Yaml,
    };
    let mut documents = decode::decode(relative, &bytes, format)?;
    match documents.len() {
        0 => Ok(Some(Value::Null)),
        1 => Ok(documents.pop().map(|(_, document)| document)),
        count => Err(ManifestError::NotOneDocument {
            at: Location {
                file: relative.to_path_buf(),
                line: documents[1].0,
            },
            count,
        }),
    }
}

/// Refuses two manifests that define the same object (see
/// [`ObjectKey::same_object`]); the error names both places.
pub fn check_duplicates(manifests: &[Manifest]) -> Result<(), ManifestError> {
    let mut seen = std::collections::HashMap::new();
    for manifest in manifests {
        let key = manifest.key()?;
        let identity = (
            key.group().to_owned(),
            key.kind.clone(),
            key.namespace.clone(),
            key.name.clone(),
        );
        if let Some(first) = seen.insert(identity, manifest.location()) {
            return Err(ManifestError::Duplicate {
                object: key.to_string(),
                first,
                second: manifest.location(),
            });
        }
    }
    Ok(())
}

fn check(manifest: &Manifest, max_object_size: u64) -> Result<(), ManifestError> {
    let at = Manifest::location;
    let object = &manifest.object;
    let Some(map) = object.as_object() else {
        return Err(ManifestError::NotAnObject {
            at: at(manifest),
            found: match object {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                Value::Null | Value::Object(_) => "null",
            },
        });
    };
    if let Some(kind) = map.get("kind").and_then(Value::as_str)
        && kind.ends_with("List")
        && map.get("items").is_some_and(Value::is_array)
    {
        return Err(ManifestError::List {
            at: at(manifest),
            kind: kind.to_owned(),
        });
    }
    manifest.key()?;
    let namespace = object.get("metadata").and_then(|m| m.get("namespace"));
    if namespace.is_some_and(|n| !n.is_string() && !n.is_null()) {
        return Err(ManifestError::InvalidNamespace { at: at(manifest) });
    }
    let size = json_size(object);
    if size > max_object_size {
        return Err(ManifestError::TooLarge {
            at: at(manifest),
            size,
            limit: max_object_size,
        });
    }
    Ok(())
}

/// The length of `value` as compact JSON, without building the string.
fn json_size(value: &Value) -> u64 {
    struct Count(u64);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Collects manifest files under `root/relative`, with their formats.
fn walk(
    root: &Path,
    relative: &Path,
    files: &mut Vec<(PathBuf, Format)>,
) -> Result<(), ManifestError> {
    let read_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ManifestError::Read { path, source }
    };
    let dir = root.join(relative);
    for entry in fs::read_dir(&dir).map_err(read_error(relative))? {
        let entry = entry.map_err(read_error(relative))?;
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = relative.join(&name);
        let kind = entry.file_type().map_err(read_error(&path))?;
        if kind.is_dir() {
            walk(root, &path, files)?;
            continue;
        }
        if kind.is_symlink() {
            // Follow a link only to a file inside the root: walking linked
            // directories could loop or leave the content.
            let target = fs::canonicalize(root.join(&path)).map_err(read_error(&path))?;
            let problem = if !target.starts_with(root) {
                "the symbolic link points outside the content"
            } else if target.is_dir() {
                "the symbolic link names a directory, and linked directories are not followed"
            } else {
                ""
            };
            if !problem.is_empty() {
                return Err(ManifestError::Link { path, problem });
            }
        } else if !kind.is_file() {
            continue;
        }
        let Some(format) = Format::of(&path) else {
            continue;
        };
        files.push((path, format));
    }
    Ok(())
}

#[cfg(test)]
mod read_document_tests {
    use super::*;

    fn content(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_file_reads_as_its_one_document_and_an_absent_one_as_none() {
        let dir = content(&[("metadata/annotations.yaml", "annotations:\n  a: b\n")]);
        let read = |file: &str| read_document(dir.path(), Path::new(file), 1024);
        assert_eq!(
            read("metadata/annotations.yaml").unwrap().unwrap()["annotations"]["a"],
            "b"
        );
        assert_eq!(read("metadata/absent.yaml").unwrap(), None);
    }

    #[test]
    fn bad_files_are_refused_with_the_file_and_where() {
        let dir = content(&[
            ("broken.yaml", "a: [1,\n"),
            ("two.yaml", "a: 1\n---\nb: 2\n"),
            ("big.yaml", &"x".repeat(2048)),
        ]);
        let read = |file: &str| {
            read_document(dir.path(), Path::new(file), 1024)
                .unwrap_err()
                .to_string()
        };
        assert!(
            read("broken.yaml").starts_with("broken.yaml:"),
            "{}",
            read("broken.yaml")
        );
        assert!(
            read("two.yaml").contains("holds 2 documents"),
            "{}",
            read("two.yaml")
        );
        assert!(read("big.yaml").contains("over the limit of 1024 bytes"));
    }

    #[test]
    fn nothing_outside_the_content_is_read() {
        let outside = content(&[("secret.yaml", "key: value\n")]);
        let dir = content(&[]);
        std::os::unix::fs::symlink(
            outside.path().join("secret.yaml"),
            dir.path().join("link.yaml"),
        )
        .unwrap();
        for path in ["../secret.yaml", "/etc/hostname", "link.yaml"] {
            let error = read_document(dir.path(), Path::new(path), 1024).unwrap_err();
            assert!(
                error.to_string().contains("leaves the content"),
                "{path}: {error}"
            );
        }
    }
}
