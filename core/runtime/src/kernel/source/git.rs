//! git repositories over HTTPS, pinned to a commit:
//! `git+https://HOST/ORG/REPO.git[?ref=REF][&path=DIR]`.
//!
//! - `ref`: a branch, a tag, a full ref name (`refs/heads/main`), or a full
//!   commit sha (40 hex digits, or 64 in a sha256 repository). Default:
//!   the repository's `HEAD`. A short name that is both a branch and a tag
//!   is an error asking for the full ref name; abbreviated shas are not
//!   accepted (they can become ambiguous).
//! - `path`: the directory inside the repository that is the bundle's
//!   content (relative, no `..`). Default: the whole tree.
//!
//! A ref is resolved to its commit first (`git ls-remote`); the content is
//! stored under a digest derived from the commit and the path, so content
//! already in the store costs one `ls-remote` and no fetch. Otherwise the
//! one commit is fetched (`--depth 1`) into an empty bare repository and
//! `git archive` streams its tree into [`crate::archive`], which applies
//! every check (symlinks, `..`, sizes, file count); no working tree is
//! ever written.
//!
//! The `git` CLI runs with a scrubbed environment and configuration (see
//! `command`): HTTPS only (`protocol.allow=never`, `protocol.https.allow=always`),
//! no credential prompts or helpers, no system or user config, hooks off,
//! objects checked while fetching, a deadline and a size limit enforced by
//! killing its process group, and `http.sslCAInfo` holding the system's
//! roots plus [`SourceOptions::extra_roots`]. A provisioner image needs the
//! `git` CLI on its `PATH` (tested with git 2.39).
//!
//! Plain `git://` is refused: it is unencrypted and unauthenticated, so
//! anyone on the path could change the content.
mod command;
mod error;
mod reference;

use std::path::Path;

pub use error::GitError;
pub use reference::GitRef;

use self::command::{Bounds, Finished, Stopped, Workspace};
use self::reference::is_full_sha;
use super::SourceOptions;
use super::error::one_line;
use crate::archive::{self, ArchiveError, Compression, Extracted, Limits};

/// How many characters of git's stderr go into a message.
const MAX_QUOTED: usize = 600;

/// Resolves and fetches git refs with the `git` CLI. Its methods block
/// (they run git and write files): call them from `spawn_blocking`.
#[derive(Clone, Debug)]
pub struct GitSource {
    options: SourceOptions,
}

impl GitSource {
    /// A source with these timeouts and roots.
    pub fn new(options: SourceOptions) -> Self {
        Self { options }
    }

    fn workspace(&self) -> Result<Workspace, GitError> {
        // Checked here so a bad PEM is named, not left to git's TLS error.
        self.options
            .extra_root_certificates()
            .map_err(|cause| GitError::Client { cause })?;
        Workspace::create(&self.options.extra_roots).map_err(|error| GitError::Workspace {
            cause: error.to_string(),
        })
    }

    /// The commit `repo`'s ref names now (the ref itself if it is a full sha).
    pub fn resolve(&self, repo: &GitRef) -> Result<String, GitError> {
        if let Some(commit) = repo.commit() {
            return Ok(commit.to_owned());
        }
        let workspace = self.workspace()?;
        let patterns: Vec<String> = match repo.reference() {
            None | Some("HEAD") => vec!["HEAD".into()],
            Some(full) if full.starts_with("refs/") => vec![full.into(), format!("{full}^{{}}")],
            Some(name) => vec![
                format!("refs/heads/{name}"),
                format!("refs/tags/{name}"),
                format!("refs/tags/{name}^{{}}"),
            ],
        };
        let mut command = workspace.git(self.options.read_timeout);
        repo.pin_arguments(&mut command);
        command
            .args(["ls-remote", "--"])
            .arg(repo.repository().as_str())
            .args(&patterns);
        let finished = self.run(repo, "ls-remote", command)?;
        let listed = String::from_utf8_lossy(&finished.stdout);
        let found = |name: &str| {
            listed.lines().find_map(|line| {
                let (sha, listed_name) = line.split_once('\t')?;
                (listed_name == name && is_full_sha(sha)).then(|| sha.to_owned())
            })
        };
        // An annotated tag's peeled line (`^{}`) names its commit.
        let peeled = |name: &str| found(&format!("{name}^{{}}")).or_else(|| found(name));
        let reference = repo.reference().unwrap_or("HEAD");
        let commit = match reference {
            "HEAD" => found("HEAD"),
            full if full.starts_with("refs/") => peeled(full),
            name => {
                let branch = found(&format!("refs/heads/{name}"));
                let tag = peeled(&format!("refs/tags/{name}"));
                if branch.is_some() && tag.is_some() {
                    return Err(GitError::Ambiguous {
                        repository: repo.repository().to_string(),
                        reference: name.to_owned(),
                    });
                }
                branch.or(tag)
            }
        };
        commit.ok_or_else(|| GitError::UnknownRef {
            repository: repo.repository().to_string(),
            reference: reference.to_owned(),
        })
    }

    /// Fetches `commit` (at most `max_download` bytes of objects) and
    /// unpacks its tree, or the ref's path in it, into `dir`, an existing
    /// empty directory, with [`crate::archive`]'s checks and `limits`.
    pub fn fetch_into(
        &self,
        repo: &GitRef,
        commit: &str,
        dir: &Path,
        limits: &Limits,
        max_download: u64,
    ) -> Result<Extracted, GitError> {
        let workspace = self.workspace()?;
        let repository = workspace.repository();
        let mut init = workspace.git(self.options.read_timeout);
        init.args(["init", "--bare", "--quiet", "--template="])
            .arg(&repository);
        self.run(repo, "init", init)?;

        let mut fetch = workspace.git(self.options.read_timeout);
        repo.pin_arguments(&mut fetch);
        fetch
            .arg("--git-dir")
            .arg(&repository)
            .args([
                "fetch",
                "--quiet",
                "--depth=1",
                "--no-tags",
                "--no-recurse-submodules",
                "--",
            ])
            .arg(repo.repository().as_str())
            .arg(commit);
        let bounds = Bounds {
            deadline: self.options.pull_timeout,
            watch: Some((repository.join("objects"), max_download)),
        };
        match command::run(fetch, &bounds) {
            Err(Stopped::TooLarge(limit)) => {
                return Err(GitError::TooLarge {
                    repository: repo.repository().to_string(),
                    commit: commit.to_owned(),
                    limit,
                });
            }
            result => self.check(repo, "fetch", result)?,
        };
        // The watch polls; a fast fetch can finish between two looks.
        if command::size_of(&repository.join("objects")) > max_download {
            return Err(GitError::TooLarge {
                repository: repo.repository().to_string(),
                commit: commit.to_owned(),
                limit: max_download,
            });
        }

        let tree = match repo.path() {
            Some(path) => format!("{commit}:{path}"),
            None => commit.to_owned(),
        };
        let mut archive_command = workspace.git(self.options.read_timeout);
        archive_command
            .arg("--git-dir")
            .arg(&repository)
            .args(["archive", "--format=tar"])
            .arg(&tree);
        let bounds = Bounds {
            deadline: self.options.pull_timeout,
            watch: None,
        };
        let unpacked = command::run_with(archive_command, &bounds, |stdout| {
            archive::extract_into(stdout, dir, limits, Compression::Uncompressed)
        });
        let (finished, extracted) =
            unpacked.map_err(|stopped| self.stopped(repo, "archive", stopped))?;
        if !finished.status.success() {
            let git_says = finished.stderr_text();
            if let Some(path) = repo.path()
                && (git_says.contains("not a valid object name")
                    || git_says.contains("not a tree object"))
            {
                return Err(GitError::NoSuchPath {
                    repository: repo.repository().to_string(),
                    commit: commit.to_owned(),
                    path: path.to_owned(),
                    git_says,
                });
            }
            // The extractor stopping early closes the pipe and fails git:
            // its error is the one that says why.
            if let Err(error) = extracted {
                return Err(self.unpack_error(repo, commit, error));
            }
            return Err(self.git_error(repo, "archive", git_says));
        }
        extracted.map_err(|error| self.unpack_error(repo, commit, error))
    }

    fn unpack_error(&self, repo: &GitRef, commit: &str, error: ArchiveError) -> GitError {
        GitError::Unpack {
            repository: repo.repository().to_string(),
            commit: commit.to_owned(),
            error,
        }
    }

    /// Runs a small git command under the request timeout; it must succeed.
    fn run(
        &self,
        repo: &GitRef,
        action: &'static str,
        command: std::process::Command,
    ) -> Result<Finished, GitError> {
        let bounds = Bounds {
            deadline: self.options.request_timeout,
            watch: None,
        };
        self.check(repo, action, command::run(command, &bounds))
    }

    fn check(
        &self,
        repo: &GitRef,
        action: &'static str,
        result: Result<Finished, Stopped>,
    ) -> Result<Finished, GitError> {
        let finished = result.map_err(|stopped| self.stopped(repo, action, stopped))?;
        if finished.status.success() {
            Ok(finished)
        } else {
            Err(self.git_error(repo, action, finished.stderr_text()))
        }
    }

    fn stopped(&self, repo: &GitRef, action: &'static str, stopped: Stopped) -> GitError {
        match stopped {
            Stopped::Spawn(error) => GitError::Spawn {
                cause: error.to_string(),
            },
            Stopped::Timeout(after) => GitError::Timeout {
                repository: repo.repository().to_string(),
                action,
                after,
            },
            Stopped::TooLarge(limit) => GitError::TooLarge {
                repository: repo.repository().to_string(),
                commit: String::new(),
                limit,
            },
            Stopped::Wait(error) => GitError::Git {
                repository: repo.repository().to_string(),
                action,
                git_says: format!("waiting for git failed: {error}"),
                advice: String::new(),
            },
        }
    }

    fn git_error(&self, repo: &GitRef, action: &'static str, git_says: String) -> GitError {
        let lower = git_says.to_lowercase();
        let advice = if lower.contains("could not read username")
            || lower.contains("authentication")
        {
            "; the repository wants credentials, and Pakket fetches git refs anonymously: \
             use a public repository or mirror"
        } else if lower.contains("not found")
            || lower.contains("does not appear to be a git repository")
        {
            "; check the repository URL"
        } else if lower.contains("certificate") || lower.contains("ssl") || lower.contains("tls") {
            "; check the server's certificate (a private CA's certificate goes into the \
             provisioner's extra roots)"
        } else if lower.contains("failed to connect") || lower.contains("could not resolve host") {
            "; is the server up and the host name right?"
        } else if action == "fetch"
            && (lower.contains("not our ref") || lower.contains("unadvertised"))
        {
            "; the server does not serve commits by id; name a branch or tag it advertises"
        } else {
            ""
        };
        // `remote:` lines are the server's own words (its sideband), which
        // the requester must not read through us; git's own lines stay.
        tracing::debug!(repository = %repo.repository(), action, %git_says, "git failed");
        let own: Vec<&str> = git_says
            .lines()
            .filter(|line| !line.trim_start().starts_with("remote:"))
            .collect();
        GitError::Git {
            repository: repo.repository().to_string(),
            action,
            git_says: one_line(&own.join("\n"), MAX_QUOTED),
            advice: advice.into(),
        }
    }
}
