//! Peak memory while six 100 MB image layers are pulled and unpacked at
//! once, through the runtime's own pull (streamed to temporary files) and
//! unpack (streamed from them), from the real local registry. Printed,
//! never asserted. Goal: under 100 MiB peak RSS.
//!
//! ```text
//! cargo bench -p pakket-runtime --bench big_layers [-- LAYER_MIB]
//! ```
//! The layers are made here, deterministically: a gzip'd tar of
//! incompressible files (a seeded generator), so the registry serves
//! about as many bytes as the layer holds.

#[path = "../tests/images/mod.rs"]
mod images;
#[path = "../../../dev/registry/testing.rs"]
mod registry;

use std::time::Instant;

use pakket_runtime::kernel::archive::Limits;
use pakket_runtime::kernel::source::{ImageRef, ImageSource, PlainHttp, SourceOptions};
use registry::Registry;

/// Pulls at once.
const CONCURRENT: usize = 6;

/// `VmHWM` (peak resident memory) or `VmRSS` of this process, in MiB.
fn memory_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|line| line.starts_with(field))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// A gzip'd tar of `mib` MiB of incompressible bytes, in 8 MiB files; each
/// `seed` gives other bytes (so each layer is its own blob).
fn layer(mib: usize, seed: u64) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut remaining = mib << 20;
    let mut index = 0;
    while remaining > 0 {
        let size = remaining.min(8 << 20);
        // xorshift64: fast, and gzip cannot shrink it.
        let bytes: Vec<u8> = (0..size / 8)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()
            })
            .collect();
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(
            &mut header,
            format!("data/part-{index}.bin"),
            bytes.as_slice(),
        )
        .expect("an in-memory tar");
        remaining -= size;
        index += 1;
    }
    tar.into_inner()
        .expect("an in-memory tar")
        .finish()
        .expect("an in-memory gzip")
}

#[tokio::main]
async fn main() {
    let mib: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(100);
    let registry = Registry::shared();
    let source = ImageSource::new(SourceOptions {
        plain_http: PlainHttp::Loopback,
        ..SourceOptions::default()
    });
    let run = std::process::id();
    let mut references = Vec::new();
    for n in 0..CONCURRENT {
        let reference = registry.image(&format!("bench/big-layers-{run}:{n}"));
        let bytes = layer(mib, n as u64 + 1);
        images::push_gzip_layer(&source, &reference, bytes).await;
        references.push(ImageRef::parse(&reference).expect("a valid ref"));
    }
    // What building and pushing the layers took is not the pull's.
    let before = memory_mib("VmRSS:");
    let peak_before = memory_mib("VmHWM:");
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();

    let destination = tempfile::tempdir().expect("a temporary directory");
    let limits = Limits {
        max_file_size: 16 << 20,
        max_total_size: ((mib as u64) << 20) * 2,
        max_files: 1_000,
    };
    let started = Instant::now();
    let pulls = references.iter().enumerate().map(|(n, reference)| {
        let source = &source;
        let dest = destination.path().join(format!("unpacked-{n}"));
        async move {
            let pulled = source
                .pull_layers(reference, (mib as u64 + 16) << 20)
                .await
                .expect("pulled");
            tokio::task::spawn_blocking(move || pulled.unpack(&dest, &limits))
                .await
                .expect("the unpack task")
                .expect("unpacked")
        }
    });
    let unpacked = futures::future::join_all(pulls).await;
    let took = started.elapsed();
    let bytes: u64 = unpacked.iter().map(|extracted| extracted.bytes).sum();
    println!(
        "{CONCURRENT} layers of {mib} MiB pulled and unpacked at once: {:.1} s, {:.0} MiB unpacked",
        took.as_secs_f64(),
        bytes as f64 / f64::from(1 << 20)
    );
    if reset {
        println!(
            "  RSS before the pulls {before:.0} MiB; peak RSS during them {:.0} MiB (goal: under 100 MiB)",
            memory_mib("VmHWM:")
        );
    } else {
        println!(
            "  RSS before the pulls {before:.0} MiB (peak so far {peak_before:.0} MiB, which includes building the layers); peak RSS after {:.0} MiB",
            memory_mib("VmHWM:")
        );
    }
}
