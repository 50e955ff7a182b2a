//! `pakket bundle push DIR REF`: a bundle directory as a single-layer OCI image.
//!
//! The image is reproducible: the same directory gives the same digest, on
//! any machine, at any time. The layer is a gzip'd tar of DIR with entries
//! in byte order of their paths, mtimes 0, owner 0:0, modes 0644 (0755 for
//! directories and executables), no user or group names; the config holds no
//! timestamp. Only directories and regular files are packed: a symlink or a
//! device in a bundle is refused rather than followed.
//!
//! Transport: HTTPS unless `--plain-http` (loopback registries only) or
//! `--insecure-plain-http` (any registry, an explicit opt-in). Pushes go
//! through `pakket_runtime::source`, so they share the provisioners' plain
//! HTTP policy, timeouts and error messages.

use std::fs;
use std::io::{IsTerminal as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use flate2::write::GzEncoder;
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use pakket_runtime::source::{
    Credentials, ImageRef, ImageSource, PlainHttp, SourceError, SourceOptions,
};
use sha2::{Digest as _, Sha256};

/// Arguments of `pakket bundle`.
#[derive(Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    command: BundleCommand,
}

#[derive(Subcommand)]
enum BundleCommand {
    /// Pack a bundle directory into a single-layer OCI image and push it.
    ///
    /// Prints the pushed image pinned to its digest (`REF@sha256:…`).
    /// Exit status: 0 pushed, 1 the registry failed, 2 bad input.
    Push(PushArgs),
    /// Print the RBAC a user needs so that an Instance of a registry+v1
    /// bundle installs under `approval: UserPermission`.
    ///
    /// A ClusterRole for cluster-scoped objects and a Role per namespace,
    /// ready to bind. Exit status: 0 printed, 2 the bundle does not render.
    Rbac(crate::bundle_rbac::RbacArgs),
}

/// Arguments of `pakket bundle push`.
#[derive(Args)]
struct PushArgs {
    /// The bundle directory, e.g. one with `manifests/` and `metadata/`.
    dir: PathBuf,
    /// Where to push: `REGISTRY/REPOSITORY:TAG` (a `docker://` or `oci://` prefix is allowed).
    #[arg(value_name = "REF")]
    reference: String,
    /// Use plain HTTP, for a registry on loopback (localhost, 127.0.0.0/8, ::1) only.
    #[arg(long)]
    plain_http: bool,
    /// Use plain HTTP to any registry: the bundle and credentials cross the network unprotected.
    #[arg(long)]
    insecure_plain_http: bool,
    /// User name for HTTP basic auth; the password comes from PAKKET_REGISTRY_PASSWORD.
    #[arg(long, env = "PAKKET_REGISTRY_USERNAME")]
    username: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
}

const PUSHED: u8 = 0;
const FAILED: u8 = 1;
const BAD_INPUT: u8 = 2;

/// Runs `pakket bundle …`.
pub fn run(args: &BundleArgs) -> ExitCode {
    match &args.command {
        BundleCommand::Push(push) => ExitCode::from(run_push(push)),
        BundleCommand::Rbac(rbac) => ExitCode::from(crate::bundle_rbac::run(rbac)),
    }
}

fn run_push(args: &PushArgs) -> u8 {
    let progress = Progress(std::io::stderr().is_terminal());
    let started = Instant::now();
    let (image, options) = match push_options(args) {
        Ok(ready) => ready,
        Err(message) => return fail(BAD_INPUT, &message),
    };
    let packed = match pack(&args.dir) {
        Ok(packed) => packed,
        Err(message) => return fail(BAD_INPUT, &message),
    };
    progress.say(format_args!(
        "packed {}: {} files, {} bytes ({} gzip'd)",
        args.dir.display(),
        packed.files,
        packed.tar_size,
        packed.layer.len()
    ));
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(FAILED, &format!("cannot start the async runtime: {error}")),
    };
    match runtime.block_on(push(&image, options, packed, &progress)) {
        Ok(digest) => {
            progress.say(format_args!(
                "pushed {} in {:.1?}",
                image,
                started.elapsed()
            ));
            println!("{}@{digest}", args.reference);
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
struct Progress(bool);

impl Progress {
    fn say(&self, message: std::fmt::Arguments<'_>) {
        if self.0 {
            let _ = writeln!(std::io::stderr(), "{message}");
        }
    }
}

/// The target image and the transport the flags ask for.
fn push_options(args: &PushArgs) -> Result<(ImageRef, SourceOptions), String> {
    let written = if args.reference.contains("://") {
        args.reference.clone()
    } else {
        format!("docker://{}", args.reference)
    };
    let image = ImageRef::parse(&written).map_err(|error| error.to_string())?;
    if image.digest().is_some() {
        return Err(format!(
            "cannot push to {}: it names a digest; push to a tag (REGISTRY/REPOSITORY:TAG) and \
             the digest is printed",
            args.reference
        ));
    }
    let plain_http = if args.insecure_plain_http {
        PlainHttp::Everywhere
    } else if args.plain_http {
        if !image.is_loopback() {
            return Err(format!(
                "refusing --plain-http to registry {}: it is not on loopback, so the bundle and \
                 any credentials would cross the network unprotected; use HTTPS, or pass \
                 --insecure-plain-http if you accept that",
                image.registry()
            ));
        }
        PlainHttp::Loopback
    } else {
        PlainHttp::Never
    };
    let credentials = match &args.username {
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
    let timeout = Duration::from_secs(args.timeout.max(1));
    let options = SourceOptions {
        plain_http,
        credentials,
        request_timeout: timeout,
        pull_timeout: timeout,
        ..SourceOptions::default()
    };
    Ok((image, options))
}

/// A packed bundle directory.
struct Packed {
    /// The gzip'd tar: the image's only layer.
    layer: Vec<u8>,
    /// `sha256:` of the uncompressed tar (the config's `diff_id`).
    diff_id: String,
    /// Regular files packed.
    files: usize,
    /// Size of the uncompressed tar.
    tar_size: usize,
}

/// Packs `dir` into a reproducible gzip'd tar (see the module docs).
fn pack(dir: &Path) -> Result<Packed, String> {
    let metadata = fs::metadata(dir).map_err(|error| {
        format!("cannot read bundle directory {}: {error}; give the directory that holds the bundle's manifests/ and metadata/", dir.display())
    })?;
    if !metadata.is_dir() {
        return Err(format!(
            "{} is not a directory; give the directory that holds the bundle's manifests/ and metadata/",
            dir.display()
        ));
    }
    let mut entries = Vec::new();
    collect(dir, Path::new(""), &mut entries)?;
    if !entries
        .iter()
        .any(|entry| matches!(entry, Entry::File { .. }))
    {
        return Err(format!(
            "bundle directory {} holds no files; a bundle has at least its manifests",
            dir.display()
        ));
    }

    let mut builder = tar::Builder::new(Vec::new());
    let mut files = 0;
    for entry in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let io_error = |path: &Path, error: std::io::Error| {
            format!("cannot pack {}: {error}", dir.join(path).display())
        };
        match entry {
            Entry::Dir { path } => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder
                    .append_data(&mut header, path, std::io::empty())
                    .map_err(|error| io_error(path, error))?;
            }
            Entry::File { path, executable } => {
                let data = fs::read(dir.join(path)).map_err(|error| io_error(path, error))?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if *executable { 0o755 } else { 0o644 });
                header.set_size(data.len() as u64);
                builder
                    .append_data(&mut header, path, data.as_slice())
                    .map_err(|error| io_error(path, error))?;
                files += 1;
            }
        }
    }
    let tar = builder
        .into_inner()
        .map_err(|error| format!("cannot pack {}: {error}", dir.display()))?;
    let diff_id = sha256(&tar);
    // flate2 writes mtime 0, no file name and a fixed OS byte: the same tar
    // always gives the same gzip bytes.
    let mut gzip = GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&tar)
        .map_err(|error| format!("cannot compress {}: {error}", dir.display()))?;
    let layer = gzip
        .finish()
        .map_err(|error| format!("cannot compress {}: {error}", dir.display()))?;
    Ok(Packed {
        layer,
        diff_id,
        files,
        tar_size: tar.len(),
    })
}

enum Entry {
    Dir { path: PathBuf },
    File { path: PathBuf, executable: bool },
}

/// Everything under `root/relative`, directories before their contents,
/// siblings in byte order of their names.
fn collect(root: &Path, relative: &Path, entries: &mut Vec<Entry>) -> Result<(), String> {
    let here = root.join(relative);
    let mut children = fs::read_dir(&here)
        .map_err(|error| format!("cannot read {}: {error}", here.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("cannot read {}: {error}", here.display()))?;
    children.sort_by(|a, b| a.file_name().as_bytes().cmp(b.file_name().as_bytes()));
    for child in children {
        let path = relative.join(child.file_name());
        let full = root.join(&path);
        // symlink_metadata: a link is reported as a link, never followed.
        let metadata = fs::symlink_metadata(&full)
            .map_err(|error| format!("cannot read {}: {error}", full.display()))?;
        let kind = metadata.file_type();
        if kind.is_dir() {
            entries.push(Entry::Dir { path: path.clone() });
            collect(root, &path, entries)?;
        } else if kind.is_file() {
            let executable = metadata.permissions().mode() & 0o111 != 0;
            entries.push(Entry::File { path, executable });
        } else {
            return Err(format!(
                "{} is not a regular file or directory (a symlink or special file); \
                 bundles hold plain files only, so copy its target in instead",
                full.display()
            ));
        }
    }
    Ok(())
}

fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// Pushes the layer, the config and the manifest; returns the manifest digest.
async fn push(
    image: &ImageRef,
    options: SourceOptions,
    packed: Packed,
    progress: &Progress,
) -> Result<String, SourceError> {
    let limit = options.pull_timeout;
    let source = ImageSource::new(options);
    let work = async {
        let client = source.client_for(image)?;
        let reference = image.as_reference();
        let failed = |error| SourceError::from_registry(error, "push", image);
        client
            .store_auth_if_needed(image.registry(), &source.auth())
            .await;

        // A minimal, timestamp-free image config (OCI image spec: os,
        // architecture and rootfs are required). Bundles are content, not
        // programs, so the platform is the conventional one.
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [packed.diff_id]},
        }))
        .expect("a JSON value serializes");

        let layer = OciDescriptor {
            media_type: IMAGE_LAYER_GZIP_MEDIA_TYPE.to_owned(),
            digest: sha256(&packed.layer),
            size: packed.layer.len() as i64,
            ..OciDescriptor::default()
        };
        let config_descriptor = OciDescriptor {
            media_type: IMAGE_CONFIG_MEDIA_TYPE.to_owned(),
            digest: sha256(&config),
            size: config.len() as i64,
            ..OciDescriptor::default()
        };
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config: config_descriptor.clone(),
            layers: vec![layer.clone()],
            ..OciImageManifest::default()
        };
        let manifest = serde_json::to_vec(&manifest).expect("a manifest serializes");
        let digest = sha256(&manifest);

        progress.say(format_args!(
            "pushing layer {} ({} bytes)",
            layer.digest, layer.size
        ));
        client
            .push_blob(reference, packed.layer, &layer.digest)
            .await
            .map_err(failed)?;
        progress.say(format_args!("pushing config {}", config_descriptor.digest));
        client
            .push_blob(reference, config, &config_descriptor.digest)
            .await
            .map_err(failed)?;
        progress.say(format_args!("pushing manifest {digest}"));
        let content_type = OCI_IMAGE_MEDIA_TYPE.parse().expect("a valid header value");
        client
            .push_manifest_raw(reference, manifest, content_type)
            .await
            .map_err(failed)?;
        Ok(digest)
    };
    source.within(limit, "push", image, work).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pakket-pack-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("manifests")).unwrap();
        fs::create_dir_all(dir.join("metadata")).unwrap();
        fs::write(dir.join("manifests/b.yaml"), "kind: B\n").unwrap();
        fs::write(dir.join("manifests/a.yaml"), "kind: A\n").unwrap();
        fs::write(dir.join("metadata/annotations.yaml"), "annotations: {}\n").unwrap();
        dir
    }

    fn listing(layer: &[u8]) -> Vec<(String, u32, u64, u64, u64)> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().display().to_string(),
                    header.mode().unwrap(),
                    header.mtime().unwrap(),
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn packs_in_byte_order_with_fixed_metadata() {
        let dir = bundle_dir("order");
        fs::set_permissions(
            dir.join("manifests/a.yaml"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let packed = pack(&dir).unwrap();
        assert_eq!(packed.files, 3);
        let paths: Vec<_> = listing(&packed.layer);
        assert_eq!(
            paths,
            [
                ("manifests".into(), 0o755, 0, 0, 0),
                ("manifests/a.yaml".into(), 0o644, 0, 0, 0),
                ("manifests/b.yaml".into(), 0o644, 0, 0, 0),
                ("metadata".into(), 0o755, 0, 0, 0),
                ("metadata/annotations.yaml".into(), 0o644, 0, 0, 0),
            ]
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_same_content_packs_to_the_same_bytes_whatever_the_mtimes() {
        let dir = bundle_dir("repeat");
        let first = pack(&dir).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        fs::write(dir.join("manifests/a.yaml"), "kind: A\n").unwrap();
        let second = pack(&dir).unwrap();
        assert_eq!(first.layer, second.layer);
        assert_eq!(first.diff_id, second.diff_id);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn executables_keep_their_bit_and_symlinks_are_refused() {
        let dir = bundle_dir("links");
        fs::write(dir.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(dir.join("run.sh"), fs::Permissions::from_mode(0o700)).unwrap();
        let packed = pack(&dir).unwrap();
        assert!(listing(&packed.layer).contains(&("run.sh".into(), 0o755, 0, 0, 0)));

        std::os::unix::fs::symlink("/etc/passwd", dir.join("manifests/passwd")).unwrap();
        let error = pack(&dir).err().unwrap();
        assert!(
            error.contains("manifests/passwd is not a regular file"),
            "{error}"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_and_empty_directories_are_named() {
        let error = pack(Path::new("/nonexistent/bundle")).err().unwrap();
        assert!(
            error.contains("cannot read bundle directory /nonexistent/bundle"),
            "{error}"
        );
        let dir = std::env::temp_dir().join(format!("pakket-pack-{}-empty", std::process::id()));
        fs::create_dir_all(dir.join("manifests")).unwrap();
        let error = pack(&dir).err().unwrap();
        assert!(error.contains("holds no files"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }
}
