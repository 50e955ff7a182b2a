//! Catalogs named on a command line: `PATH` or `PATH@PRIORITY`, the form
//! `pakket resolve --catalog` and `kubectl instance graph --catalog` share.

use std::path::{Path, PathBuf};

/// A catalog as a command line names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogArgument {
    /// The file or folder.
    pub path: PathBuf,
    /// Its priority (higher wins), 0 unless given.
    pub priority: i32,
    /// Its name: the file's, or its folder's when the file is called
    /// `catalog` or `index` (which says little).
    pub name: String,
}

impl CatalogArgument {
    /// Parses `PATH` or `PATH@PRIORITY`; an `@` followed by something that
    /// is not a number is part of the path. The error says what to write.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (path, priority) = match spec.rsplit_once('@') {
            Some((path, priority)) if priority.parse::<i32>().is_ok() => {
                (PathBuf::from(path), priority.parse().unwrap_or_default())
            }
            _ => (PathBuf::from(spec), 0),
        };
        if !path.exists() {
            return Err(format!(
                "--catalog {spec}: no such file or directory (write PATH or PATH@PRIORITY, e.g. catalog.json@10)"
            ));
        }
        let name = name_of(&path);
        Ok(Self {
            path,
            priority,
            name,
        })
    }
}

fn name_of(path: &Path) -> String {
    let generic = path
        .file_stem()
        .is_some_and(|stem| stem == "catalog" || stem == "index");
    let name = if path.is_dir() {
        path.file_name()
    } else if generic {
        path.parent().and_then(Path::file_name)
    } else {
        path.file_stem()
    };
    name.map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "catalog".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priority_follows_the_last_at_and_names_come_from_files_or_folders() {
        let dir = std::env::temp_dir().join(format!("pakket-catalog-arg-{}", std::process::id()));
        let folder = dir.join("community@v4");
        std::fs::create_dir_all(&folder).unwrap();
        let generic = folder.join("catalog.json");
        let specific = dir.join("extra.yaml");
        std::fs::write(&generic, "").unwrap();
        std::fs::write(&specific, "").unwrap();

        let parsed = CatalogArgument::parse(&format!("{}@10", generic.display())).unwrap();
        assert_eq!(
            (parsed.priority, parsed.name.as_str()),
            (10, "community@v4")
        );
        let parsed = CatalogArgument::parse(&specific.display().to_string()).unwrap();
        assert_eq!((parsed.priority, parsed.name.as_str()), (0, "extra"));
        // `@v4` is no priority: it is part of the folder's name.
        let parsed = CatalogArgument::parse(&folder.display().to_string()).unwrap();
        assert_eq!((parsed.priority, parsed.name.as_str()), (0, "community@v4"));

        let missing = CatalogArgument::parse("no/such/catalog.json@3").unwrap_err();
        assert!(missing.contains("PATH@PRIORITY"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
