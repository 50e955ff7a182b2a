//! Pushing an [`Image`] to a registry: the flags every push takes, the
//! layer, config and manifest uploads, and what the command prints and
//! exits with. `pakket bundle push` and `pakket image push` differ only
//! in what they pack.
//!
//! Transport: HTTPS unless `--plain-http` (loopback registries only) or
//! `--insecure-plain-http` (any registry, an explicit opt-in). Pushes go
//! through `pakket_runtime::kernel::source`, so they share the provisioners' plain
//! HTTP policy, timeouts and error messages.

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use clap::Args;
use oci_client::manifest::OCI_IMAGE_MEDIA_TYPE;
use pakket_runtime::kernel::source::{
    Credentials, ImageRef, ImageSource, PlainHttp, SourceError, SourceOptions,
};

use crate::oci_image::Image;

/// Exit status: pushed, `REF@sha256:…` printed.
pub const PUSHED: u8 = 0;
/// Exit status: the registry failed (unreachable, refused, timed out).
pub const FAILED: u8 = 1;
/// Exit status: bad input (the message names the file or flag).
pub const BAD_INPUT: u8 = 2;

/// Where to push and how to reach the registry.
#[derive(Args)]
pub struct Target {
    /// Where to push: `REGISTRY/REPOSITORY:TAG` (a `docker://` or `oci://` prefix is allowed).
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Use plain HTTP, for a registry on loopback (localhost, 127.0.0.0/8, ::1) only.
    #[arg(long)]
    plain_http: bool,
    /// Use plain HTTP to any registry: the image and credentials cross the network unprotected.
    #[arg(long)]
    insecure_plain_http: bool,
    /// User name for HTTP basic auth; the password comes from PAKKET_REGISTRY_PASSWORD.
    #[arg(long, env = "PAKKET_REGISTRY_USERNAME")]
    username: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
}

/// Pushes what `build` makes to `target`, printing `REF@sha256:…`; returns the exit status.
///
/// The target is checked before `build` runs, so a bad ref or flag is
/// reported before minutes of packing.
pub fn run(target: &Target, build: impl FnOnce(&Progress) -> Result<Image, String>) -> u8 {
    let progress = Progress(std::io::stderr().is_terminal());
    let started = Instant::now();
    let (image_ref, options) = match target.resolve() {
        Ok(ready) => ready,
        Err(message) => return fail(BAD_INPUT, &message),
    };
    let image = match build(&progress) {
        Ok(image) => image,
        Err(message) => return fail(BAD_INPUT, &message),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(FAILED, &format!("cannot start the async runtime: {error}")),
    };
    match runtime.block_on(push(&image_ref, options, image, &progress)) {
        Ok(digest) => {
            progress.say(format_args!(
                "pushed {} in {:.1?}",
                image_ref,
                started.elapsed()
            ));
            println!("{}@{digest}", target.reference);
            PUSHED
        }
        Err(error @ SourceError::PlainHttpRefused { .. }) => fail(BAD_INPUT, &error.to_string()),
        Err(error) => fail(FAILED, &error.to_string()),
    }
}

fn fail(code: u8, message: &str) -> u8 {
    eprintln!("error: {message}");
    code
}

/// Progress lines on stderr, only when a person is watching it.
pub struct Progress(bool);

impl Progress {
    /// Writes one line, if stderr is a terminal.
    pub fn say(&self, message: std::fmt::Arguments<'_>) {
        if self.0 {
            let _ = writeln!(std::io::stderr(), "{message}");
        }
    }
}

impl Target {
    /// The image to push to and the transport the flags ask for.
    fn resolve(&self) -> Result<(ImageRef, SourceOptions), String> {
        let written = if self.reference.contains("://") {
            self.reference.clone()
        } else {
            format!("docker://{}", self.reference)
        };
        let image = ImageRef::parse(&written).map_err(|error| error.to_string())?;
        if image.digest().is_some() {
            return Err(format!(
                "cannot push to {}: it names a digest; push to a tag (REGISTRY/REPOSITORY:TAG) \
                 and the digest is printed",
                self.reference
            ));
        }
        let plain_http = if self.insecure_plain_http {
            PlainHttp::Everywhere
        } else if self.plain_http {
            if !image.is_loopback() {
                return Err(format!(
                    "refusing --plain-http to registry {}: it is not on loopback, so the image \
                     and any credentials would cross the network unprotected; use HTTPS, or \
                     pass --insecure-plain-http if you accept that",
                    image.registry()
                ));
            }
            PlainHttp::Loopback
        } else {
            PlainHttp::Never
        };
        let credentials = match &self.username {
            None => None,
            Some(username) => {
                let password = std::env::var("PAKKET_REGISTRY_PASSWORD").map_err(|_| {
                    format!(
                        "--username {username} needs a password: set PAKKET_REGISTRY_PASSWORD \
                         (it is never read from the command line)"
                    )
                })?;
                Some(Credentials {
                    username: username.clone(),
                    password,
                })
            }
        };
        let timeout = Duration::from_secs(self.timeout.max(1));
        let options = SourceOptions {
            plain_http,
            credentials,
            request_timeout: timeout,
            pull_timeout: timeout,
            ..SourceOptions::default()
        };
        Ok((image, options))
    }
}

/// Pushes the layer, the config and the manifest; returns the manifest digest.
async fn push(
    image_ref: &ImageRef,
    options: SourceOptions,
    image: Image,
    progress: &Progress,
) -> Result<String, SourceError> {
    let limit = options.pull_timeout;
    let source = ImageSource::new(options);
    let manifest = image.manifest();
    let work = async {
        let client = source.client_for(image_ref)?;
        let reference = image_ref.as_reference();
        let failed = |error| SourceError::from_registry(error, "push", image_ref);
        client
            .store_auth_if_needed(image_ref.registry(), &source.auth())
            .await;
        progress.say(format_args!(
            "pushing layer {} ({} bytes)",
            manifest.layer.digest, manifest.layer.size
        ));
        client
            .push_blob(reference, image.layer.gzip, &manifest.layer.digest)
            .await
            .map_err(failed)?;
        progress.say(format_args!("pushing config {}", manifest.config.digest));
        client
            .push_blob(reference, image.config, &manifest.config.digest)
            .await
            .map_err(failed)?;
        progress.say(format_args!("pushing manifest {}", manifest.digest));
        let content_type = OCI_IMAGE_MEDIA_TYPE.parse().expect("a valid header value");
        client
            .push_manifest_raw(reference, manifest.bytes, content_type)
            .await
            .map_err(failed)?;
        Ok(manifest.digest)
    };
    source.within(limit, "push", image_ref, work).await
}
