//! How fast a bundle image is unpacked from a registry on loopback: a 5 MB
//! image (as stored, gzip) pulled and unpacked into an empty content store,
//! and the same digest when the store already holds it. Printed, never
//! asserted.
//!
//! ```text
//! cargo bench -p pakket-cli --bench unpack [-- ROUNDS]
//! ```
//! The image is built and pushed by the real `pakket bundle push` into a real
//! registry (Debian's docker-registry, `dev/registry`); the unpack is the
//! runtime's `content::unpack`, as a provisioner runs it.

#[path = "../../dev/registry/testing.rs"]
mod registry;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pakket_api::BundleSpec;
use pakket_runtime::kernel::content::{self, ImageSources, UnpackOptions};
use pakket_runtime::kernel::store::Store;
use registry::Registry;

/// Manifests whose data does not compress (xorshift noise, base64), so the
/// image is about as large stored as the target size.
fn write_bundle(dir: &std::path::Path, stored_bytes: usize) {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let files = 40;
    // base64 text gzips to about 3/4 of its size.
    let per_file = stored_bytes * 4 / 3 / files;
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for n in 0..files {
        let mut data = String::with_capacity(per_file);
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        while data.len() < per_file {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            data.push(ALPHABET[(state % 64) as usize] as char);
        }
        let manifest = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blob-{n}\n  namespace: bench\ndata:\n  blob: {data}\n"
        );
        std::fs::write(manifests.join(format!("blob-{n}.yaml")), manifest).unwrap();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|arg| arg != "--bench")
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(20);
    let registry = Registry::shared();
    let scratch = registry.dir.join("unpack-bench");
    let _ = std::fs::remove_dir_all(&scratch);
    write_bundle(&scratch.join("bundle"), 5 * 1000 * 1000);
    let image = registry.image("bench/five-megabytes:v1");
    let pushed = Command::new(env!("CARGO_BIN_EXE_pakket"))
        .args(["bundle", "push", "--plain-http"])
        .arg(scratch.join("bundle"))
        .arg(&image)
        .output()
        .expect("running pakket bundle push");
    assert!(
        pushed.status.success(),
        "push failed: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let layers = registry.dir.join("data");
    let stored: u64 = walk_size(&layers);

    // No cluster is needed for image refs; the client is never called.
    let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap()))
        .expect("a client");
    let spec = BundleSpec {
        class: "bench".into(),
        refs: vec![image.clone()],
        volume_mounts: Vec::new(),
    };
    let images = ImageSources::default();
    // The bench registry is on loopback.
    let options = UnpackOptions {
        allow_internal_addresses: true,
        ..UnpackOptions::default()
    };

    let mut fresh = Vec::with_capacity(rounds);
    let mut stored_again = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let store = Arc::new(Store::open(scratch.join(format!("store-{round}"))).unwrap());
        let started = Instant::now();
        let unpacked = content::unpack(&client, &spec, &store, &images, &options)
            .await
            .expect("unpack");
        fresh.push(started.elapsed());
        let started = Instant::now();
        content::unpack(&client, &spec, &store, &images, &options)
            .await
            .expect("unpack again");
        stored_again.push(started.elapsed());
        if round == 0 {
            println!(
                "image {image}: {} files unpacked, registry storage {:.1} MB",
                std::fs::read_dir(unpacked.dir.join("manifests"))
                    .unwrap()
                    .count(),
                stored as f64 / 1e6
            );
        }
    }
    fresh.sort();
    stored_again.sort();
    println!("{rounds} rounds, loopback registry:");
    println!(
        "  pull + unpack into an empty store: p50 {:.1?}, max {:.1?}",
        percentile(&fresh, 0.5),
        fresh[rounds - 1]
    );
    println!(
        "  digest already stored (one manifest HEAD): p50 {:.1?}, max {:.1?}",
        percentile(&stored_again, 0.5),
        stored_again[rounds - 1]
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

fn walk_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk_size(&entry.path()),
            _ => entry.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}
