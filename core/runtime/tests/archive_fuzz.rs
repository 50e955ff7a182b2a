//! Property tests: extraction of arbitrary bytes never panics, and when it
//! fails it leaves nothing behind. (A fuzz target would go further; these
//! run with `cargo test`.)

use std::fs;
use std::io::Write;

use pakket_runtime::kernel::archive::{self, Limits};
use proptest::prelude::*;

/// A small valid archive to mutate, so inputs get past the first header.
fn seed() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in [("a/b.yaml", &b"kind: A\n"[..]), ("c.json", b"{}")] {
        let mut header = tar::Header::new_gnu();
        header.set_path(name).unwrap();
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn small() -> Limits {
    Limits {
        max_file_size: 4096,
        max_total_size: 64 * 1024,
        max_files: 16,
    }
}

/// Extracts and checks the all-or-nothing promise.
fn check(bytes: &[u8]) {
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("out");
    match archive::extract(bytes, &dest, &small()) {
        Ok(extracted) => assert!(dest.is_dir() && extracted.bytes <= small().max_total_size),
        Err(error) => {
            assert!(!error.to_string().is_empty());
            assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 0, "{error}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        check(&bytes);
    }

    #[test]
    fn random_gzip_payloads_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        check(&gzip(&bytes));
        let mut prefixed = vec![0x1f, 0x8b];
        prefixed.extend(&bytes);
        check(&prefixed);
    }

    #[test]
    fn mutated_archives_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
        compress in any::<bool>(),
    ) {
        let mut bytes = seed();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        bytes.truncate(cut.index(bytes.len() + 1).max(1));
        if compress {
            bytes = gzip(&bytes);
        }
        check(&bytes);
    }
}
