//! Extraction of crafted archives: every refusal, a valid round trip, and
//! that a failed extraction leaves nothing behind. Archives are built here
//! with `tar::Builder`; unsafe names are written straight into the header
//! bytes (or as GNU long-name and PAX records), since the builder refuses
//! them.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use flate2::Compression as Level;
use flate2::write::GzEncoder;
use pakket_runtime::kernel::archive::{
    self, ArchiveError, Compression, Extracted, Limits, PathProblem,
};
use pakket_runtime::kernel::store::Digest;
use tar::{EntryType, Header};

/// Builds a tar in memory, entry by entry, with no checks on names.
#[derive(Default)]
struct Tar {
    builder: Option<tar::Builder<Vec<u8>>>,
}

impl Tar {
    fn new() -> Self {
        Self {
            builder: Some(tar::Builder::new(Vec::new())),
        }
    }

    fn builder(&mut self) -> &mut tar::Builder<Vec<u8>> {
        self.builder.as_mut().unwrap()
    }

    /// An entry whose name (and link name) bytes are written as given.
    fn raw(mut self, name: &[u8], kind: EntryType, data: &[u8], link: &[u8]) -> Self {
        let mut header = Header::new_gnu();
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name);
        gnu.linkname[..link.len()].copy_from_slice(link);
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        // setuid and executable bits the extractor must not keep.
        header.set_mode(0o4777);
        header.set_mtime(1);
        header.set_cksum();
        self.builder().append(&header, data).unwrap();
        self
    }

    fn file(self, name: &str, data: &[u8]) -> Self {
        self.raw(name.as_bytes(), EntryType::Regular, data, b"")
    }

    fn dir(self, name: &str) -> Self {
        self.raw(name.as_bytes(), EntryType::Directory, b"", b"")
    }

    fn link(self, name: &str, kind: EntryType, target: &str) -> Self {
        self.raw(name.as_bytes(), kind, b"", target.as_bytes())
    }

    /// A GNU long-name record naming the next entry (it may hold any byte).
    fn long_name(self, name: &[u8]) -> Self {
        let mut data = name.to_vec();
        data.push(0);
        self.raw(b"././@LongLink", EntryType::GNULongName, &data, b"")
    }

    /// A PAX record setting the next entry's `path`.
    fn pax_path(self, path: &[u8]) -> Self {
        let body_len = " path=".len() + path.len() + 1;
        let mut len = body_len + 1;
        while len.to_string().len() + body_len != len {
            len += 1;
        }
        let mut data = format!("{len} path=").into_bytes();
        data.extend_from_slice(path);
        data.push(b'\n');
        self.raw(b"PaxHeader", EntryType::XHeader, &data, b"")
    }

    fn bytes(mut self) -> Vec<u8> {
        self.builder.take().unwrap().into_inner().unwrap()
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Level::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Extracts `bytes` into a fresh `out` under a temp dir, with `limits`.
fn run(bytes: &[u8], limits: &Limits) -> (tempfile::TempDir, Result<Extracted, ArchiveError>) {
    let temp = tempfile::tempdir().unwrap();
    let result = archive::extract(bytes, &temp.path().join("out"), limits);
    (temp, result)
}

/// Asserts that extraction failed and left the parent as it was: no `out`,
/// no temporary sibling.
fn refused(bytes: &[u8], limits: &Limits) -> ArchiveError {
    let (temp, result) = run(bytes, limits);
    let error = result.expect_err("the archive should be refused");
    let left: Vec<_> = fs::read_dir(temp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?} after {error}");
    error
}

#[test]
fn valid_bundle_round_trips_with_safe_modes() {
    let tar = Tar::new()
        .dir("./")
        .dir("manifests/")
        .file("manifests/deployment.yaml", b"kind: Deployment\n")
        .file("./metadata//annotations.yaml", b"annotations: {}\n")
        .link(
            "manifests/copy.yaml",
            EntryType::Link,
            "manifests/deployment.yaml",
        )
        .raw(
            b"pax_global_header",
            EntryType::XGlobalHeader,
            b"18 comment=abcdef\n",
            b"",
        )
        .bytes();
    let (temp, result) = run(&tar, &Limits::default());
    let extracted = result.unwrap();
    let out = temp.path().join("out");
    assert_eq!(extracted.files, 3);
    assert_eq!(extracted.directories, 2);
    assert_eq!(extracted.bytes, 17 + 16 + 17);
    assert_eq!(extracted.sha256, Digest::of(&tar));
    assert_eq!(
        fs::read(out.join("manifests/copy.yaml")).unwrap(),
        b"kind: Deployment\n"
    );
    assert_eq!(
        fs::read(out.join("metadata/annotations.yaml")).unwrap(),
        b"annotations: {}\n"
    );
    let mode = |p: &str| fs::metadata(out.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("manifests"), 0o755);
    assert_eq!(mode("metadata"), 0o755);
    assert_eq!(mode("manifests/deployment.yaml"), 0o644);
    assert_eq!(mode("manifests/copy.yaml"), 0o644);
    // A copy, not a shared inode.
    let inode = |p: &str| std::os::unix::fs::MetadataExt::ino(&fs::metadata(out.join(p)).unwrap());
    assert_ne!(
        inode("manifests/copy.yaml"),
        inode("manifests/deployment.yaml")
    );
}

#[test]
fn gzip_is_detected_and_the_digest_covers_the_compressed_bytes() {
    let gz = gzip(&Tar::new().file("a.yaml", b"a: 1\n").bytes());
    let (temp, result) = run(&gz, &Limits::default());
    assert_eq!(result.unwrap().sha256, Digest::of(&gz));
    assert!(temp.path().join("out/a.yaml").is_file());

    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("out");
    archive::extract_gzip(&gz[..], &dest, &Limits::default()).unwrap();
    let plain = Tar::new().file("a.yaml", b"a: 1\n").bytes();
    let error = archive::extract_gzip(&plain[..], &temp.path().join("b"), &Limits::default());
    assert!(
        matches!(error, Err(ArchiveError::Corrupt { .. })),
        "{error:?}"
    );
}

#[test]
fn extract_into_fills_an_existing_directory() {
    let temp = tempfile::tempdir().unwrap();
    let tar = Tar::new().file("x/y.json", b"{}").bytes();
    let extracted = archive::extract_into(
        &tar[..],
        temp.path(),
        &Limits::default(),
        Compression::Uncompressed,
    )
    .unwrap();
    assert_eq!(extracted.files, 1);
    assert_eq!(fs::read(temp.path().join("x/y.json")).unwrap(), b"{}");
}

#[test]
fn unsafe_paths_are_refused_with_the_entry_named() {
    let cases: [(&[u8], PathProblem); 5] = [
        (b"../escape.yaml", PathProblem::ParentDir),
        (b"a/../../escape.yaml", PathProblem::ParentDir),
        (b"/etc/cron.d/evil", PathProblem::Absolute),
        (b"bad\xff.yaml", PathProblem::NotUtf8),
        (b".", PathProblem::Empty),
    ];
    for (name, expected) in cases {
        let tar = Tar::new().raw(name, EntryType::Regular, b"x", b"").bytes();
        match refused(&tar, &Limits::default()) {
            ArchiveError::UnsafePath { path, problem } => {
                assert_eq!(problem, expected, "{path}");
                assert_eq!(path, String::from_utf8_lossy(name));
            }
            other => panic!("{name:?}: {other}"),
        }
    }
}

#[test]
fn names_from_long_name_and_pax_records_are_checked_too() {
    let cases = [
        Tar::new().long_name(b"a\0b.yaml").file("short", b"x"),
        Tar::new().long_name(b"../../escape").file("short", b"x"),
        Tar::new().pax_path(b"/abs/path").file("short", b"x"),
        Tar::new().pax_path(b"nul\0inside").file("short", b"x"),
    ];
    let expected = [
        PathProblem::Nul,
        PathProblem::ParentDir,
        PathProblem::Absolute,
        PathProblem::Nul,
    ];
    for (tar, expected) in cases.into_iter().zip(expected) {
        let error = refused(&tar.bytes(), &Limits::default());
        assert!(
            matches!(error, ArchiveError::UnsafePath { problem, .. } if problem == expected),
            "{error}"
        );
    }
}

#[test]
fn symlinks_are_refused_whatever_their_target() {
    for target in ["/etc/passwd", "../outside", "inside.yaml", "."] {
        let tar = Tar::new()
            .file("inside.yaml", b"x")
            .link("link", EntryType::Symlink, target)
            .bytes();
        match refused(&tar, &Limits::default()) {
            ArchiveError::Symlink { path, target: t } => {
                assert_eq!((path.as_str(), t.as_str()), ("link", target));
            }
            other => panic!("{target}: {other}"),
        }
    }
}

#[test]
fn hard_links_must_name_an_earlier_regular_file() {
    let cases = [
        // Escapes, absolute, to a later entry, to a directory, to a link.
        Tar::new()
            .file("a", b"x")
            .link("l", EntryType::Link, "../a"),
        Tar::new()
            .file("a", b"x")
            .link("l", EntryType::Link, "/etc/passwd"),
        Tar::new().link("l", EntryType::Link, "a").file("a", b"x"),
        Tar::new().dir("d").link("l", EntryType::Link, "d"),
        Tar::new()
            .link("s", EntryType::Symlink, "/etc/passwd")
            .link("l", EntryType::Link, "s"),
    ];
    for (i, tar) in cases.into_iter().enumerate() {
        let error = refused(&tar.bytes(), &Limits::default());
        let expected = if i == 4 { "s" } else { "l" };
        assert_eq!(error.path(), expected, "case {i}: {error}");
        assert!(
            matches!(
                error,
                ArchiveError::HardLink { .. } | ArchiveError::Symlink { .. }
            ),
            "case {i}: {error}"
        );
    }
    // A chain of hard links to a real file is fine: each is a copy.
    let tar = Tar::new()
        .file("a", b"x")
        .link("b", EntryType::Link, "a")
        .link("c", EntryType::Link, "./b")
        .bytes();
    assert_eq!(run(&tar, &Limits::default()).1.unwrap().files, 3);
}

#[test]
fn devices_fifos_and_unknown_types_are_refused() {
    for (kind, word) in [
        (EntryType::Char, "character device"),
        (EntryType::Block, "block device"),
        (EntryType::Fifo, "fifo"),
        (EntryType::new(b'Z'), "unsupported type"),
    ] {
        let tar = Tar::new().raw(b"dev/thing", kind, b"", b"").bytes();
        let error = refused(&tar, &Limits::default());
        assert!(
            matches!(&error, ArchiveError::Special { path, kind } if path == "dev/thing" && kind.contains(word)),
            "{error}"
        );
    }
}

#[test]
fn duplicate_paths_and_files_used_as_directories_are_refused() {
    let cases = [
        Tar::new().file("a.yaml", b"1").file("./a.yaml", b"2"),
        Tar::new().dir("d").dir("d/"),
        Tar::new().file("d/x", b"1").file("d", b"2"),
        Tar::new().file("a", b"1").link("a", EntryType::Link, "a"),
    ];
    for tar in cases {
        let error = refused(&tar.bytes(), &Limits::default());
        assert!(matches!(error, ArchiveError::Duplicate { .. }), "{error}");
    }
    let tar = Tar::new().file("f", b"1").file("f/x", b"2").bytes();
    let error = refused(&tar, &Limits::default());
    assert!(
        matches!(&error, ArchiveError::NotADirectory { path, parent } if path == "f/x" && parent == "f"),
        "{error}"
    );
}

#[test]
fn limits_are_enforced() {
    let small = Limits {
        max_file_size: 10,
        max_total_size: 4000,
        max_files: 3,
    };
    let error = refused(&Tar::new().file("big", &[b'x'; 11]).bytes(), &small);
    assert!(
        matches!(error, ArchiveError::FileTooLarge { size: 11, limit: 10, ref path } if path == "big"),
        "{error}"
    );
    // Exactly at the limit is fine.
    assert!(
        run(&Tar::new().file("ok", &[b'x'; 10]).bytes(), &small)
            .1
            .is_ok()
    );

    let many = Tar::new()
        .file("1", b"")
        .file("2", b"")
        .file("3", b"")
        .file("4", b"");
    let error = refused(&many.bytes(), &small);
    assert!(
        matches!(error, ArchiveError::TooManyEntries { limit: 3, ref path } if path == "4"),
        "{error}"
    );

    // Three 512-byte headers and three 10-byte files (padded to 512) are
    // 3 KiB; the builder's two end-of-archive blocks take it past 4000.
    let total = Tar::new()
        .file("1", &[1; 10])
        .file("2", &[2; 10])
        .file("3", &[3; 10])
        .bytes();
    let error = refused(&total, &small);
    assert!(
        matches!(error, ArchiveError::TooLarge { limit: 4000, .. }),
        "{error}"
    );

    // Hard-link copies count against the total too.
    let copies = Limits {
        max_file_size: 1000,
        max_total_size: 1 << 20,
        max_files: 10_000,
    };
    let mut tar = Tar::new().file("a", &[0; 1000]);
    for i in 0..1100 {
        tar = tar.link(&format!("l{i}"), EntryType::Link, "a");
    }
    let error = refused(&tar.bytes(), &copies);
    assert!(matches!(error, ArchiveError::TooLarge { .. }), "{error}");
}

#[test]
fn truncated_and_corrupt_streams_are_refused() {
    let tar = Tar::new().file("a.yaml", &[b'x'; 2000]).bytes();
    let error = refused(&tar[..512 + 1000], &Limits::default());
    assert!(
        matches!(error, ArchiveError::Corrupt { ref path, .. } if path == "a.yaml"),
        "{error}"
    );

    let mut bad_checksum = Tar::new().file("a.yaml", b"x").bytes();
    bad_checksum[0] = b'b';
    let error = refused(&bad_checksum, &Limits::default());
    assert!(matches!(error, ArchiveError::Corrupt { .. }), "{error}");

    let mut gz = gzip(&Tar::new().file("a.yaml", b"x").bytes());
    let crc = gz.len() - 8;
    gz[crc] ^= 0xff;
    let error = refused(&gz, &Limits::default());
    assert!(matches!(error, ArchiveError::Corrupt { .. }), "{error}");
}

#[test]
fn a_failing_reader_is_a_retryable_read_error() {
    struct Failing(Vec<u8>);
    impl std::io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "reset",
                ));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0.drain(..n);
            Ok(n)
        }
    }
    let tar = Tar::new().file("a.yaml", &[b'x'; 2000]).bytes();
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("out");
    let error =
        archive::extract(Failing(tar[..700].to_vec()), &dest, &Limits::default()).unwrap_err();
    assert!(matches!(error, ArchiveError::Read { .. }), "{error}");
    assert!(!error.is_terminal());
    assert!(!dest.exists());
}

#[test]
fn failure_leaves_an_existing_destination_untouched() {
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("out");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("keep.yaml"), b"keep").unwrap();
    let tar = Tar::new().file("a.yaml", b"x").bytes();
    let error = archive::extract(&tar[..], &dest, &Limits::default()).unwrap_err();
    assert!(
        matches!(error, ArchiveError::DestinationExists { .. }),
        "{error}"
    );
    assert_eq!(fs::read(dest.join("keep.yaml")).unwrap(), b"keep");
    assert_eq!(fs::read_dir(&dest).unwrap().count(), 1);
    assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 1);

    // Refused late (after files were written): nothing appears.
    let late = Tar::new()
        .file("a.yaml", b"a")
        .file("b.yaml", b"b")
        .raw(b"../late", EntryType::Regular, b"x", b"")
        .bytes();
    let fresh = temp.path().join("fresh");
    archive::extract(&late[..], &fresh, &Limits::default()).unwrap_err();
    assert!(!fresh.exists());
    assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 1);
}

#[test]
fn errors_say_what_to_do_and_which_are_terminal() {
    let tar = Tar::new()
        .raw(b"../x", EntryType::Regular, b"", b"")
        .bytes();
    let error = refused(&tar, &Limits::default());
    let message = error.to_string();
    assert!(
        message.contains("\"../x\"") && message.contains("rebuild"),
        "{message}"
    );
    assert!(error.is_terminal());
    assert_eq!(error.reason(), "UnpackFailed");
    assert_eq!(error.metric_label(), "unsafe_path");
}

#[test]
fn the_destination_may_be_nested_in_new_directories() {
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("a/b/out");
    let tar = Tar::new().file("x", b"1").bytes();
    archive::extract(&tar[..], &dest, &Limits::default()).unwrap();
    assert!(Path::new(&dest.join("x")).is_file());
}
