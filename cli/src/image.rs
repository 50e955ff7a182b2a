//! `pakket image push REF --binary PATH…`: static programs as a minimal,
//! reproducible container image, built and pushed with no Docker daemon.
//!
//! The image holds exactly:
//!
//! | path                                 | mode | what                                  |
//! |--------------------------------------|------|---------------------------------------|
//! | `/usr/local/bin/<file name>`         | 0755 | each `--binary`                       |
//! | `/etc/ssl/certs/ca-certificates.crt` | 0644 | the CA bundle (unless `none`)         |
//! | `/tmp`                               | 1777 | scratch space for programs needing it |
//!
//! and the directories above them (0755). There is no libc, shell or
//! package database, so every binary must be statically linked (`elf`).
//! The config runs the first binary as a numeric non-root user (65532, as
//! distroless images do) with `PATH=/usr/local/bin` and `SSL_CERT_FILE`
//! naming the CA bundle (rustls-native-certs and Go read it), and any
//! `--label`s. Like `pakket bundle push`, the same inputs give the same
//! digest anywhere; a label is the way to get a new digest from the same
//! binaries (e.g. to test an upgrade).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::elf;
use crate::oci_image::{Image, LayerBuilder, Process};
use crate::registry_push::{self, Target};

/// Where binaries go, and the image's whole `PATH`.
const BIN_DIR: &str = "usr/local/bin";
/// Where the CA bundle goes: Debian's path, which Go and OpenSSL also try.
const CA_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";
/// The `--ca-certificates` value that leaves the bundle out.
const NO_CA_BUNDLE: &str = "none";
/// The default user: numeric (so Kubernetes' `runAsNonRoot` can check it
/// without an /etc/passwd) and distroless's `nonroot`.
const NON_ROOT: u32 = 65532;

/// Arguments of `pakket image`.
#[derive(Args)]
pub struct ImageArgs {
    #[command(subcommand)]
    command: ImageCommand,
}

#[derive(Subcommand)]
enum ImageCommand {
    /// Pack static binaries into a minimal single-layer OCI image and push it.
    ///
    /// The image holds each binary in /usr/local/bin, a CA bundle in
    /// /etc/ssl/certs/ca-certificates.crt and an empty /tmp (mode 1777);
    /// it runs the first binary as UID:UID. Prints the pushed image pinned
    /// to its digest (`REF@sha256:…`). Exit status: 0 pushed, 1 the
    /// registry failed, 2 bad input.
    Push(PushArgs),
}

/// Arguments of `pakket image push`.
#[derive(Args)]
struct PushArgs {
    #[command(flatten)]
    target: Target,
    /// A statically linked x86-64 program; repeat for more. The first is the entrypoint.
    #[arg(long = "binary", value_name = "PATH", required = true)]
    binaries: Vec<PathBuf>,
    /// The CA bundle to include, or `none` to leave it (and SSL_CERT_FILE) out.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    ca_certificates: PathBuf,
    /// The numeric user (and group) the entrypoint runs as.
    #[arg(long, value_name = "UID", default_value_t = NON_ROOT)]
    user: u32,
    /// A config label, e.g. a build's name so that a rebuild gets a new digest; repeat for more.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    labels: Vec<String>,
}

/// Runs `pakket image …`.
pub fn run(args: &ImageArgs) -> ExitCode {
    match &args.command {
        ImageCommand::Push(push) => ExitCode::from(registry_push::run(&push.target, |progress| {
            let contents = Contents::read(push)?;
            let image = contents.image()?;
            progress.say(format_args!(
                "packed {} binaries, {} bytes ({} gzip'd)",
                contents.binaries.len(),
                image.layer.tar_size,
                image.layer.gzip.len()
            ));
            Ok(image)
        })),
    }
}

/// What goes into the image, read and checked.
struct Contents {
    /// In the order given: the first is the entrypoint.
    binaries: Vec<Binary>,
    /// The CA bundle's bytes, if one is included.
    ca_bundle: Option<Vec<u8>>,
    /// The numeric user and group.
    user: u32,
    /// Config labels.
    labels: BTreeMap<String, String>,
}

/// One program.
struct Binary {
    /// Its file name, which it keeps in /usr/local/bin.
    name: String,
    /// Where it was read from, for messages.
    source: PathBuf,
    /// Its bytes.
    data: Vec<u8>,
}

impl Contents {
    /// Reads every file the flags name, refusing what could not run in the image.
    fn read(args: &PushArgs) -> Result<Self, String> {
        let binaries = args
            .binaries
            .iter()
            .map(|path| Binary::read(path))
            .collect::<Result<Vec<_>, _>>()?;
        let ca_bundle = if args.ca_certificates == Path::new(NO_CA_BUNDLE) {
            None
        } else {
            Some(read_ca_bundle(&args.ca_certificates)?)
        };
        Ok(Self {
            binaries,
            ca_bundle,
            user: args.user,
            labels: parse_labels(&args.labels)?,
        })
    }

    /// The image: one layer in byte order of its paths, and a config that runs the first binary.
    fn image(&self) -> Result<Image, String> {
        let mut by_name = BTreeMap::new();
        for binary in &self.binaries {
            if let Some(earlier) = by_name.insert(binary.name.as_str(), binary) {
                return Err(format!(
                    "two binaries are named {}: {} and {}; each goes to /{BIN_DIR}/<its file name>, \
                     so rename or copy one under another name",
                    binary.name,
                    earlier.source.display(),
                    binary.source.display()
                ));
            }
        }
        let entrypoint = &self
            .binaries
            .first()
            .ok_or("give at least one --binary")?
            .name;

        // Directories before their contents, siblings in byte order: "etc" < "tmp" < "usr".
        let mut layer = LayerBuilder::new();
        let mut build = || -> std::io::Result<()> {
            if let Some(ca_bundle) = &self.ca_bundle {
                for dir in ["etc", "etc/ssl", "etc/ssl/certs"] {
                    layer.directory(Path::new(dir), 0o755)?;
                }
                layer.file(Path::new(CA_BUNDLE), 0o644, ca_bundle)?;
            }
            layer.directory(Path::new("tmp"), 0o1777)?;
            for dir in ["usr", "usr/local", BIN_DIR] {
                layer.directory(Path::new(dir), 0o755)?;
            }
            for (name, binary) in &by_name {
                layer.file(&Path::new(BIN_DIR).join(name), 0o755, &binary.data)?;
            }
            Ok(())
        };
        build().map_err(|error| format!("cannot pack the image: {error}"))?;
        let layer = layer
            .finish()
            .map_err(|error| format!("cannot pack the image: {error}"))?;

        let mut env = vec![format!("PATH=/{BIN_DIR}")];
        if self.ca_bundle.is_some() {
            env.push(format!("SSL_CERT_FILE=/{CA_BUNDLE}"));
        }
        let process = Process {
            user: format!("{0}:{0}", self.user),
            entrypoint: vec![format!("/{BIN_DIR}/{entrypoint}")],
            env,
            working_dir: "/".to_owned(),
            labels: self.labels.clone(),
        };
        Ok(Image::new(layer, Some(&process)))
    }
}

impl Binary {
    /// Reads `path`, refusing anything but a static x86-64 executable.
    fn read(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let metadata = fs::metadata(path).map_err(|error| {
            format!("cannot read binary {shown}: {error}; give the path of a built program")
        })?;
        if !metadata.is_file() {
            return Err(format!(
                "binary {shown} is not a regular file; give the path of a built program"
            ));
        }
        if metadata.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "binary {shown} is not executable (mode {:o}); give the built program, or chmod +x it",
                metadata.permissions().mode() & 0o7777
            ));
        }
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| format!("binary {shown} has no UTF-8 file name; rename it"))?
            .to_owned();
        let data =
            fs::read(path).map_err(|error| format!("cannot read binary {shown}: {error}"))?;
        elf::check_static_x86_64(&data).map_err(|problem| {
            let advice = match problem {
                elf::NotStatic::Dynamic { .. } => {
                    "the image has no libc, so build it static, e.g. \
                     --target x86_64-unknown-linux-musl (Go: CGO_ENABLED=0)"
                }
                _ => {
                    "give a statically linked x86-64 Linux program, e.g. one built with \
                      --target x86_64-unknown-linux-musl"
                }
            };
            format!("binary {shown} {problem}; {advice}")
        })?;
        Ok(Self {
            name,
            source: path.to_owned(),
            data,
        })
    }
}

/// `KEY=VALUE` flags as a map, refusing a key given twice (which value was meant?).
fn parse_labels(flags: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    for flag in flags {
        let Some((key, value)) = flag.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(format!(
                "--label {flag} is not KEY=VALUE; give e.g. --label dev.pakket.build=nightly"
            ));
        };
        if labels.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(format!("--label {key} is given twice; give each key once"));
        }
    }
    Ok(labels)
}

/// Reads the CA bundle, checking it holds PEM certificates (not, say, a key or a directory).
fn read_ca_bundle(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let advice = "install Debian's ca-certificates, give another bundle with --ca-certificates \
                  FILE, or leave it out with --ca-certificates none";
    let data = fs::read(path)
        .map_err(|error| format!("cannot read CA bundle {shown}: {error}; {advice}"))?;
    let pem_certificate = b"-----BEGIN CERTIFICATE-----";
    if !data
        .windows(pem_certificate.len())
        .any(|window| window == pem_certificate)
    {
        return Err(format!(
            "CA bundle {shown} holds no PEM certificate; {advice}"
        ));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::fake;

    fn binary(name: &str, data: Vec<u8>) -> Binary {
        Binary {
            name: name.to_owned(),
            source: PathBuf::from(format!("/build/{name}")),
            data,
        }
    }

    fn contents(names: &[&str], ca_bundle: Option<&str>) -> Contents {
        Contents {
            binaries: names
                .iter()
                .map(|name| binary(name, fake::static_executable()))
                .collect(),
            ca_bundle: ca_bundle.map(|pem| pem.as_bytes().to_vec()),
            user: NON_ROOT,
            labels: BTreeMap::new(),
        }
    }

    /// (path, mode, mtime, uid, gid, size) of every entry.
    fn listing(image: &Image) -> Vec<(String, u32, u64, u64, u64, u64)> {
        crate::oci_image::listing(&image.layer.gzip)
    }

    fn config(image: &Image) -> serde_json::Value {
        serde_json::from_slice(&image.config).unwrap()
    }

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn the_layer_holds_the_binaries_the_ca_bundle_and_tmp_and_nothing_else() {
        let image = contents(&["pakket-webhooks", "helm"], Some(PEM))
            .image()
            .unwrap();
        let elf = fake::static_executable().len() as u64;
        let dir = |path: &str, mode| (path.to_owned(), mode, 0, 0, 0, 0);
        assert_eq!(
            listing(&image),
            [
                dir("etc", 0o755),
                dir("etc/ssl", 0o755),
                dir("etc/ssl/certs", 0o755),
                (
                    "etc/ssl/certs/ca-certificates.crt".into(),
                    0o644,
                    0,
                    0,
                    0,
                    PEM.len() as u64
                ),
                dir("tmp", 0o1777),
                dir("usr", 0o755),
                dir("usr/local", 0o755),
                dir("usr/local/bin", 0o755),
                ("usr/local/bin/helm".into(), 0o755, 0, 0, 0, elf),
                ("usr/local/bin/pakket-webhooks".into(), 0o755, 0, 0, 0, elf),
            ]
        );
    }

    #[test]
    fn the_config_runs_the_first_binary_as_the_non_root_user() {
        let image = contents(&["pakket-package", "helm"], Some(PEM))
            .image()
            .unwrap();
        let config = config(&image);
        assert_eq!(
            config["config"],
            serde_json::json!({
                "User": "65532:65532",
                "Entrypoint": ["/usr/local/bin/pakket-package"],
                "Env": ["PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
                "WorkingDir": "/",
            })
        );
        assert_eq!(config["architecture"], "amd64");
        assert_eq!(config["os"], "linux");
        assert_eq!(
            config["rootfs"]["diff_ids"],
            serde_json::json!([image.layer.diff_id])
        );
        assert!(!String::from_utf8_lossy(&image.config).contains("created"));
    }

    #[test]
    fn labels_go_into_the_config_and_change_the_digest() {
        let plain = contents(&["pakket-plain"], None).image().unwrap();
        let mut labelled = contents(&["pakket-plain"], None);
        labelled.labels = parse_labels(&["dev.pakket.image-label=e2e-upgrade".to_owned()]).unwrap();
        let labelled = labelled.image().unwrap();
        assert_eq!(
            config(&labelled)["config"]["Labels"],
            serde_json::json!({"dev.pakket.image-label": "e2e-upgrade"})
        );
        assert_eq!(labelled.layer.gzip, plain.layer.gzip);
        assert_ne!(labelled.manifest().digest, plain.manifest().digest);

        let error = parse_labels(&["novalue".to_owned()]).err().unwrap();
        assert!(
            error.contains("--label novalue is not KEY=VALUE"),
            "{error}"
        );
        let error = parse_labels(&["a=1".to_owned(), "a=2".to_owned()])
            .err()
            .unwrap();
        assert!(error.contains("--label a is given twice"), "{error}");
    }

    #[test]
    fn without_a_ca_bundle_neither_the_file_nor_ssl_cert_file_is_there() {
        let mut contents = contents(&["pakket-plain"], None);
        contents.user = 1000;
        let image = contents.image().unwrap();
        assert!(
            listing(&image)
                .iter()
                .all(|entry| !entry.0.starts_with("etc"))
        );
        assert_eq!(
            config(&image)["config"]["Env"],
            serde_json::json!(["PATH=/usr/local/bin"])
        );
        assert_eq!(config(&image)["config"]["User"], "1000:1000");
    }

    #[test]
    fn building_twice_gives_identical_bytes() {
        let first = contents(&["a", "b"], Some(PEM)).image().unwrap();
        let second = contents(&["a", "b"], Some(PEM)).image().unwrap();
        assert_eq!(first.layer.gzip, second.layer.gzip);
        assert_eq!(first.config, second.config);
        assert_eq!(first.manifest().digest, second.manifest().digest);
        // The entrypoint is part of the image: another order, another digest.
        let swapped = contents(&["b", "a"], Some(PEM)).image().unwrap();
        assert_eq!(swapped.layer.gzip, first.layer.gzip);
        assert_ne!(swapped.manifest().digest, first.manifest().digest);
    }

    #[test]
    fn two_binaries_with_one_name_are_refused_naming_both() {
        let mut contents = contents(&["pakket"], None);
        contents.binaries.push(Binary {
            source: PathBuf::from("/elsewhere/pakket"),
            ..binary("pakket", fake::static_executable())
        });
        let error = contents.image().err().unwrap();
        assert!(
            error.contains("two binaries are named pakket: /build/pakket and /elsewhere/pakket"),
            "{error}"
        );
    }

    #[test]
    fn a_dynamically_linked_binary_is_refused_with_what_to_do() {
        let error = Binary::read(Path::new("/bin/true")).err().unwrap();
        assert!(
            error.starts_with("binary /bin/true is dynamically linked (it needs the loader /lib"),
            "{error}"
        );
        assert!(
            error.contains("build it static, e.g. --target x86_64-unknown-linux-musl"),
            "{error}"
        );
    }

    #[test]
    fn a_static_binary_passes_and_other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("program");
        fs::write(&program, fake::static_executable()).unwrap();
        fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
        let read = Binary::read(&program).unwrap();
        assert_eq!(read.name, "program");

        fs::set_permissions(&program, fs::Permissions::from_mode(0o644)).unwrap();
        let error = Binary::read(&program).err().unwrap();
        assert!(error.contains("is not executable (mode 644)"), "{error}");

        let error = Binary::read(dir.path()).err().unwrap();
        assert!(error.contains("is not a regular file"), "{error}");

        let script = dir.path().join("run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        let error = Binary::read(&script).err().unwrap();
        assert!(error.contains("run.sh is not an ELF executable"), "{error}");
    }

    #[test]
    fn a_ca_bundle_must_hold_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        fs::write(&key, "-----BEGIN PRIVATE KEY-----\n").unwrap();
        let error = read_ca_bundle(&key).err().unwrap();
        assert!(error.contains("holds no PEM certificate"), "{error}");
        assert!(error.contains("--ca-certificates none"), "{error}");
        let error = read_ca_bundle(Path::new("/nonexistent.crt")).err().unwrap();
        assert!(
            error.starts_with("cannot read CA bundle /nonexistent.crt"),
            "{error}"
        );
    }
}
