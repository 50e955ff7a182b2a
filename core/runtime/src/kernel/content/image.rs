//! `docker://` and `oci://` refs: resolved to a manifest digest, pulled and
//! unpacked only if the store lacks that digest, with the class's pull
//! secrets when it names any.

use std::sync::Arc;

use kube::Client;

use super::{ContentError, ImageSources, UnpackOptions, Unpacked};
use crate::source::pull_secret::{self, FoundCredentials};
use crate::source::{ImageRef, SourceError};
use crate::store::{Digest, Store};

/// The class's pull secret for `image`'s registry, when the class names
/// pull secrets.
async fn pull_secret_for(
    client: &Client,
    sources: &ImageSources,
    options: &UnpackOptions,
    image: &ImageRef,
) -> Result<Option<FoundCredentials>, pull_secret::PullSecretError> {
    if options.pull_secrets.is_empty() {
        return Ok(None);
    }
    let found = pull_secret::find(
        client,
        sources.secret_namespace(),
        &options.pull_secrets,
        image.registry(),
    )
    .await?;
    tracing::debug!(%image, secret = %found.secret, entry = %found.entry, "pulling with a pull secret");
    Ok(Some(found))
}

/// The digest a registry resolved `image` to, if it is one the store can
/// keep content under.
fn digest_of(resolved: &str, image: &ImageRef) -> Result<Digest, SourceError> {
    Digest::parse(resolved).map_err(|error| {
        // The header is the registry's text: logged, not repeated.
        tracing::debug!(%image, answered = %resolved, %error, "not a sha256 digest");
        SourceError::Registry {
            registry: image.registry().to_owned(),
            action: "resolve",
            image: image.to_string(),
            registry_says: "it answered with a digest that is not sha256:<64 hex digits>, \
                 which Pakket cannot store content under"
                .into(),
        }
    })
}

/// An image ref: resolve, and pull and unpack only a digest the store lacks.
pub(super) async fn unpack_image(
    client: &Client,
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let image_error = |source: SourceError| ContentError::Image {
        index,
        reference: reference.clone(),
        source: Box::new(source),
    };
    let image = ImageRef::parse(&reference).map_err(image_error)?;
    let found = pull_secret_for(client, sources, options, &image)
        .await
        .map_err(|source| ContentError::PullSecret {
            index,
            reference: reference.clone(),
            source: Box::new(source),
        })?;
    // A registry's refusal says which credentials were refused, or how to
    // give some.
    let pull_error = |source: SourceError| match source {
        SourceError::Unauthorized { .. } => ContentError::Unauthorized {
            index,
            reference: reference.clone(),
            advice: unauthorized_advice(found.as_ref(), &image, sources.secret_namespace()),
            source: Box::new(source),
        },
        other => image_error(other),
    };
    let source = sources.for_image(&image, options);
    let credentials = match &found {
        Some(found) => Some(&found.credentials),
        None => source.options().credentials.as_ref(),
    };
    let resolved = source
        .resolve_as(&image, credentials)
        .await
        .map_err(pull_error)?;
    let digest = digest_of(&resolved, &image).map_err(image_error)?;
    if let Some(dir) = store.get(&digest) {
        tracing::debug!(%reference, digest = digest.as_str(), "already in the store; nothing to pull");
        return Ok(Unpacked {
            reference,
            digest,
            dir,
            commit: None,
        });
    }
    // Pull what the digest names, so the content is the digest's even if
    // the tag moves meanwhile.
    let pinned = image.pinned(digest.as_str());
    let pulled = source
        .pull_layers_as(&pinned, options.max_image_size, credentials)
        .await
        .map_err(pull_error)?;
    let limits = options.limits;
    let task_store = Arc::clone(store);
    let task_digest = digest.clone();
    // Unpacking is blocking file IO.
    let dir = tokio::task::spawn_blocking(move || {
        task_store.insert_with(&task_digest, |dir| -> Result<(), ContentError> {
            // `unpack` wants a destination that does not exist yet; the
            // store renames whatever is at `dir` into place.
            std::fs::remove_dir(dir).map_err(|source| ContentError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            pulled
                .unpack(dir, &limits)
                .map(|_| ())
                .map_err(|source| ContentError::Image {
                    index,
                    reference: pulled.pinned.to_string(),
                    source: Box::new(source),
                })
        })
    })
    .await
    .map_err(|error| ContentError::Task {
        index,
        reference: reference.clone(),
        cause: error.to_string(),
    })??;
    Ok(Unpacked {
        reference,
        digest,
        dir,
        commit: None,
    })
}

/// Where pull secrets live, in words.
fn provisioner_namespace(namespace: Option<&str>) -> String {
    match namespace {
        Some(namespace) => format!("namespace {namespace} (the provisioner's)"),
        None => "the provisioner's namespace".into(),
    }
}

/// What to do when the registry refused: fix the Secret that was used, or
/// add one.
fn unauthorized_advice(
    found: Option<&FoundCredentials>,
    image: &ImageRef,
    namespace: Option<&str>,
) -> String {
    match found {
        Some(found) => format!(
            "the registry refused the credentials of pull secret {}/{} (its auths entry {:?}); \
             update that Secret with credentials that may pull {}",
            found.namespace,
            found.secret,
            found.entry,
            image.repository()
        ),
        None => format!(
            "the ProvisionerClass names no pullSecrets: create a Secret of type \
             kubernetes.io/dockerconfigjson with credentials for {registry} in {where_} \
             (kubectl create secret docker-registry NAME --docker-server={registry} …) and \
             list NAME in the class's parameters.pullSecrets",
            registry = image.registry(),
            where_ = provisioner_namespace(namespace),
        ),
    }
}
