//! `pakket bundle push DIR REF`: a bundle directory as a single-layer OCI image.
//!
//! The image is reproducible: the same directory gives the same digest, on
//! any machine, at any time. The layer is a gzip'd tar of DIR with entries
//! in byte order of their paths, mtimes 0, owner 0:0, modes 0644 (0755 for
//! directories and executables), no user or group names; the config holds no
//! timestamp (`oci_image`). Only directories and regular files are packed: a
//! symlink or a device in a bundle is refused rather than followed. The push
//! itself, its flags and exit statuses are `registry_push`'s.

use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
// Only the tests wait (for a new mtime); they reach it through `use super::*`.
#[cfg(test)]
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::oci_image::{Image, Layer, LayerBuilder};
use crate::registry_push::{self, Target};

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
    #[command(flatten)]
    target: Target,
}

/// Runs `pakket bundle …`.
pub fn run(args: &BundleArgs) -> ExitCode {
    match &args.command {
        BundleCommand::Push(push) => ExitCode::from(registry_push::run(&push.target, |progress| {
            let packed = pack(&push.dir)?;
            progress.say(format_args!(
                "packed {}: {} files, {} bytes ({} gzip'd)",
                push.dir.display(),
                packed.files,
                packed.tar_size,
                packed.layer.len()
            ));
            Ok(packed.into_image())
        })),
        BundleCommand::Rbac(rbac) => ExitCode::from(crate::bundle_rbac::run(rbac)),
    }
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

impl Packed {
    /// The image to push: bundles are content, not programs, so it runs nothing.
    fn into_image(self) -> Image {
        let layer = Layer {
            gzip: self.layer,
            diff_id: self.diff_id,
            tar_size: self.tar_size,
        };
        Image::new(layer, None)
    }
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

    let mut layer = LayerBuilder::new();
    let mut files = 0;
    for entry in &entries {
        let io_error = |path: &Path, error: std::io::Error| {
            format!("cannot pack {}: {error}", dir.join(path).display())
        };
        match entry {
            Entry::Dir { path } => layer
                .directory(path, 0o755)
                .map_err(|error| io_error(path, error))?,
            Entry::File { path, executable } => {
                let data = fs::read(dir.join(path)).map_err(|error| io_error(path, error))?;
                let mode = if *executable { 0o755 } else { 0o644 };
                layer
                    .file(path, mode, &data)
                    .map_err(|error| io_error(path, error))?;
                files += 1;
            }
        }
    }
    let layer = layer
        .finish()
        .map_err(|error| format!("cannot pack {}: {error}", dir.display()))?;
    Ok(Packed {
        layer: layer.gzip,
        diff_id: layer.diff_id,
        files,
        tar_size: layer.tar_size,
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

    /// (path, mode, mtime, uid, gid) of every entry.
    fn listing(layer: &[u8]) -> Vec<(String, u32, u64, u64, u64)> {
        crate::oci_image::listing(layer)
            .into_iter()
            .map(|(path, mode, mtime, uid, gid, _)| (path, mode, mtime, uid, gid))
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
