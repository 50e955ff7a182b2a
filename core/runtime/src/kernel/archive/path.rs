//! Entry paths: what an archive may name, and the one spelling we write.

use std::fmt;

/// Why an entry path (or a hard link's target) is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathProblem {
    /// It starts with `/`: it would be written outside the bundle.
    Absolute,
    /// It has a `..` component: it could climb out of the bundle.
    ParentDir,
    /// It contains a NUL byte, which no filesystem path can hold; tools
    /// that truncate at the NUL would see a different name than we do.
    Nul,
    /// It is not UTF-8, so it cannot be named in status or logs faithfully.
    NotUtf8,
    /// It names nothing (only `/` and `.` components).
    Empty,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Absolute => "is absolute",
            Self::ParentDir => "has a `..` component",
            Self::Nul => "contains a NUL byte",
            Self::NotUtf8 => "is not valid UTF-8",
            Self::Empty => "is empty",
        })
    }
}

/// A checked entry path: relative, UTF-8, no NUL, no `..`, with `.` and
/// empty components removed (`./a//b/` is `a/b`). Empty for the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EntryPath {
    /// The normalized path, components joined by `/`.
    pub normalized: String,
    /// Whether the raw path ended with `/` (a directory in old archives).
    pub trailing_slash: bool,
}

/// Checks and normalizes a raw entry path.
pub(crate) fn check(raw: &[u8]) -> Result<EntryPath, PathProblem> {
    if raw.contains(&0) {
        return Err(PathProblem::Nul);
    }
    let text = std::str::from_utf8(raw).map_err(|_| PathProblem::NotUtf8)?;
    if text.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentDir),
            name => parts.push(name),
        }
    }
    Ok(EntryPath {
        normalized: parts.join("/"),
        trailing_slash: text.ends_with('/'),
    })
}

/// The parents of a normalized path, outermost first (`a/b/c` gives `a`, `a/b`).
pub(crate) fn parents(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// A path for messages, even when it is not UTF-8.
pub(crate) fn lossy(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_dots_and_slashes() {
        let path = check(b"./a//./b/").unwrap();
        assert_eq!(path.normalized, "a/b");
        assert!(path.trailing_slash);
        assert_eq!(check(b"./").unwrap().normalized, "");
    }

    #[test]
    fn refuses_what_could_escape_or_mislead() {
        assert_eq!(check(b"/etc/passwd"), Err(PathProblem::Absolute));
        assert_eq!(check(b"a/../../b"), Err(PathProblem::ParentDir));
        assert_eq!(check(b".."), Err(PathProblem::ParentDir));
        assert_eq!(check(b"a\0b"), Err(PathProblem::Nul));
        assert_eq!(check(b"a\xffb"), Err(PathProblem::NotUtf8));
    }

    #[test]
    fn lists_parents_outermost_first() {
        assert_eq!(parents("a/b/c").collect::<Vec<_>>(), ["a", "a/b"]);
        assert_eq!(parents("a").count(), 0);
    }
}
