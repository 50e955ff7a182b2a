//! `git+https://` refs: the ref resolved to a commit, stored under a digest
//! of the commit and path; a stored commit fetches nothing.

use std::sync::Arc;

use super::{ContentError, ImageSources, UnpackOptions, Unpacked, blocking};
use crate::source::address;
use crate::source::git::{GitError, GitRef};
use crate::store::Store;

/// A git ref: resolve to a commit, fetch and unpack only a commit the
/// store lacks. The result names the commit.
pub(super) async fn unpack_git(
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let git_error = move |reference: String| {
        move |source: GitError| ContentError::Git {
            index,
            reference,
            source: Box::new(source),
        }
    };
    let mut repo = GitRef::parse(&reference).map_err(git_error(reference.clone()))?;
    // Public addresses only, unless the class allows more: resolved and
    // checked here, and git is held to the address checked.
    if !options.allow_internal_addresses {
        let (host, port) = repo.host_and_port();
        match address::resolve_public(&host, port).await {
            Ok(addresses) => repo.pin_to(addresses[0]),
            Err(why) => {
                return Err(git_error(reference.clone())(GitError::Internal {
                    repository: repo.repository().to_string(),
                    why: why.to_string(),
                    advice: address::advice(&options.class),
                }));
            }
        }
    }

    // git runs as a child process: blocking work.
    let (git, to_resolve) = (sources.git().clone(), repo.clone());
    let resolve_error = git_error(reference.clone());
    let commit = blocking(index, &reference, move || {
        git.resolve(&to_resolve).map_err(resolve_error)
    })
    .await?;
    let digest = repo.digest_of(&commit);
    if let Some(dir) = store.get(&digest) {
        tracing::debug!(%reference, %commit, "commit already stored; nothing to fetch");
        return Ok(Unpacked {
            reference,
            digest,
            dir,
            commit: Some(commit),
        });
    }

    let (git, limits, max_download) = (
        sources.git().clone(),
        options.limits,
        options.max_download_size,
    );
    let (task_store, task_digest, task_commit) =
        (Arc::clone(store), digest.clone(), commit.clone());
    let fetch_error = git_error(reference.clone());
    let dir = blocking(index, &reference, move || {
        task_store.insert_with(&task_digest, |dir| -> Result<(), ContentError> {
            git.fetch_into(&repo, &task_commit, dir, &limits, max_download)
                .map(|_| ())
                .map_err(fetch_error)
        })
    })
    .await?;
    Ok(Unpacked {
        reference,
        digest,
        dir,
        commit: Some(commit),
    })
}
