//! The content store: digests, atomic inserts (also racing ones), and
//! garbage collection.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use pakket_runtime::kernel::archive::{self, Compression, Limits};
use pakket_runtime::kernel::store::{Digest, Store, StoreError};

fn digest(n: u8) -> Digest {
    Digest::of(&[n])
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), StoreError> {
    fs::write(dir.join(name), text).unwrap();
    Ok(())
}

#[test]
fn digests_parse_strictly_and_explain_why() {
    let hex = "a".repeat(64);
    let parsed: Digest = format!("sha256:{hex}").parse().unwrap();
    assert_eq!(parsed.hex(), hex);
    assert_eq!(parsed.to_string(), format!("sha256:{hex}"));
    assert_eq!(
        Digest::of(b"").as_str(),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    for (input, problem) in [
        (hex.clone(), "no algorithm prefix"),
        (format!("sha512:{hex}"), "only the sha256"),
        (format!("sha256:{}", &hex[1..]), "exactly 64"),
        (format!("sha256:{}", hex.to_uppercase()), "lowercase hex"),
        (format!("sha256:../{}", &hex[3..]), "lowercase hex"),
    ] {
        let error = Digest::parse(&input).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(problem), "{input}: {message}");
        assert!(message.contains("64 lowercase hex digits"), "{message}");
    }
    let json = serde_json::to_string(&parsed).unwrap();
    assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), parsed);
    assert!(serde_json::from_str::<Digest>("\"sha256:nope\"").is_err());
}

#[test]
fn insert_fills_once_and_get_finds_it() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path().join("store")).unwrap();
    let d = digest(1);
    assert_eq!(store.get(&d), None);

    let path = store
        .insert_with(&d, |dir| write(dir, "a.yaml", "a: 1\n"))
        .unwrap();
    assert_eq!(path, temp.path().join("store/sha256").join(d.hex()));
    assert_eq!(store.get(&d), Some(path.clone()));
    assert_eq!(fs::read_to_string(path.join("a.yaml")).unwrap(), "a: 1\n");

    // The second insert does no work.
    let again = store
        .insert_with(&d, |_| -> Result<(), StoreError> { panic!("filled twice") })
        .unwrap();
    assert_eq!(again, path);
    assert_eq!(store.digests().unwrap(), [d]);
    assert_eq!(
        fs::read_dir(temp.path().join("store/tmp")).unwrap().count(),
        0
    );
}

#[test]
fn a_failed_or_panicking_fill_leaves_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).unwrap();
    let d = digest(2);
    let error = store
        .insert_with(&d, |dir| {
            fs::write(dir.join("half.yaml"), "half").unwrap();
            Err(anyhow::anyhow!("fetch failed"))
        })
        .unwrap_err();
    assert_eq!(error.to_string(), "fetch failed");
    assert_eq!(store.get(&d), None);

    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.insert_with(&d, |dir| -> Result<(), StoreError> {
            fs::write(dir.join("half.yaml"), "half").unwrap();
            panic!("bug in fill");
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(store.get(&d), None);
    assert_eq!(fs::read_dir(temp.path().join("tmp")).unwrap().count(), 0);
}

#[test]
fn racing_inserts_of_one_digest_keep_one_whole_copy() {
    const THREADS: usize = 8;
    const FILES: usize = 50;
    let temp = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(temp.path()).unwrap());
    let d = digest(3);
    let barrier = Arc::new(Barrier::new(THREADS));
    let fills = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|id| {
            let (store, d, barrier, fills) =
                (store.clone(), d.clone(), barrier.clone(), fills.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.insert_with(&d, |dir| {
                    fills.fetch_add(1, Ordering::Relaxed);
                    for f in 0..FILES {
                        write(dir, &format!("{f}.yaml"), &id.to_string())?;
                    }
                    Ok::<_, StoreError>(())
                })
            })
        })
        .collect();
    let paths: HashSet<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert_eq!(paths.len(), 1, "every insert returns the same path");
    let path = paths.into_iter().next().unwrap();
    // One writer's files, all of them: never a mix.
    let writers: HashSet<String> = fs::read_dir(&path)
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(writers.len(), 1, "{writers:?}");
    assert_eq!(fs::read_dir(&path).unwrap().count(), FILES);
    assert!(fills.load(Ordering::Relaxed) >= 1);
    assert_eq!(fs::read_dir(temp.path().join("tmp")).unwrap().count(), 0);
}

#[test]
fn retain_removes_unreferenced_content_and_stale_temp_dirs() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).unwrap();
    for n in 1..=3 {
        store
            .insert_with(&digest(n), |dir| write(dir, "x", "x"))
            .unwrap();
    }
    fs::create_dir_all(temp.path().join("tmp/crashed.1.0/sub")).unwrap();
    fs::create_dir(temp.path().join("sha256/not-a-digest")).unwrap();

    let keep: HashSet<_> = [digest(2)].into();
    let report = store.retain(&keep).unwrap();
    let mut removed = vec![digest(1), digest(3)];
    removed.sort();
    assert_eq!(report.removed, removed);
    assert_eq!(report.kept, 1);
    assert_eq!(report.stale_temp, 1);
    assert_eq!(report.unknown, [temp.path().join("sha256/not-a-digest")]);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(store.digests().unwrap(), [digest(2)]);
    assert!(store.get(&digest(1)).is_none() && store.get(&digest(2)).is_some());
    assert_eq!(fs::read_dir(temp.path().join("tmp")).unwrap().count(), 0);
}

#[test]
fn retain_spares_an_insert_in_flight() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).unwrap();
    let d = digest(4);
    let path = store
        .insert_with(&d, |dir| {
            write(dir, "a", "1")?;
            // A collection while this insert is filling its directory.
            let report = store.retain(&HashSet::new())?;
            assert_eq!(report.stale_temp, 0);
            write(dir, "b", "2")
        })
        .unwrap();
    assert_eq!(fs::read_dir(path).unwrap().count(), 2);
}

#[test]
fn archives_unpack_into_the_store() {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_path("manifests/a.yaml").unwrap();
    header.set_size(5);
    header.set_cksum();
    builder.append(&header, &b"a: 1\n"[..]).unwrap();
    let tar = builder.into_inner().unwrap();
    let d = Digest::of(&tar);

    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).unwrap();
    let path = store
        .insert_with(&d, |dir| {
            let extracted =
                archive::extract_into(&tar[..], dir, &Limits::default(), Compression::Detect)?;
            anyhow::ensure!(extracted.sha256 == d, "digest mismatch");
            Ok(())
        })
        .unwrap();
    assert!(path.join("manifests/a.yaml").is_file());

    // Refused content never reaches the store.
    let other = digest(9);
    let result = store.insert_with(&other, |dir| {
        archive::extract_into(
            &b"not a tar"[..],
            dir,
            &Limits::default(),
            Compression::Detect,
        )?;
        Ok::<_, anyhow::Error>(())
    });
    assert!(result.is_err());
    assert!(store.get(&other).is_none());
}
