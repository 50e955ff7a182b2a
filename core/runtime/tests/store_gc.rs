//! The content store is collected while the controller runs, on the real
//! control plane: content no Bundle pins goes, pinned content stays, a
//! Bundle that is deleted (with its Instance) lets its content go, and a
//! store over its cap shrinks to what Bundles pin, which is reported.

use std::time::Duration;

use kube::api::{DeleteParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_runtime::kernel::controller::StoreGc;
use pakket_runtime::kernel::store::gc::Policy;
use pakket_testkit::{condition_is, eventually, pinned_digest, wait_for_instance as wait_for};

mod plain_fixture;

use plain_fixture::Fixture;

/// A content directory nothing pins, written as the store lays them out.
fn stray_content(fixture: &Fixture, fill: char) -> std::path::PathBuf {
    let dir = fixture
        .store
        .join("sha256")
        .join(fill.to_string().repeat(64));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("big.yaml"), "x".repeat(64 << 10)).unwrap();
    dir
}

/// Installs an Instance named `suffix` from ConfigMap content `content`
/// as Bundle `bundle`; returns its name.
async fn install(fixture: &Fixture, suffix: &str, bundle: &str, content: &str) -> String {
    fixture.content(content, &[(suffix, "v")]).await;
    let mut instance: Instance =
        fixture.instance(bundle, fixture.bundle_spec(content, "file://content"));
    instance.metadata = fixture.scope.meta(suffix);
    fixture
        .instances()
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = fixture.scope.name(suffix);
    wait_for(&fixture.instances(), &name, "install", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    name
}

/// The store directory of the content Bundle `bundle` pins.
async fn content_of(fixture: &Fixture, bundle: &str) -> std::path::PathBuf {
    let digest = pinned_digest(&fixture.scope.client, &fixture.scope.name(bundle)).await;
    fixture
        .store
        .join("sha256")
        .join(digest.trim_start_matches("sha256:"))
}

#[tokio::test]
async fn content_no_bundle_pins_is_collected_and_pinned_content_stays() {
    let gc = StoreGc {
        every: Duration::from_millis(300),
        policy: Policy {
            grace: Duration::ZERO,
            max_bytes: 1 << 30,
        },
    };
    let fixture = Fixture::with_options("store-gc", "AllowAll", |options| {
        options.store_gc = gc;
    })
    .await;
    let kept = install(&fixture, "kept", "bundle-kept", "content-kept").await;
    let gone = install(&fixture, "gone", "bundle-gone", "content-gone").await;
    let kept_dir = content_of(&fixture, "bundle-kept").await;
    let gone_dir = content_of(&fixture, "bundle-gone").await;
    assert!(kept_dir.is_dir() && gone_dir.is_dir());

    let stray = stray_content(&fixture, 'a');
    eventually("the stray content is collected", || async {
        !stray.exists()
    })
    .await;
    assert!(
        kept_dir.is_dir() && gone_dir.is_dir(),
        "pinned content stays"
    );

    // The Instance goes, and with it the record of its embedded Bundle:
    // nothing pins that content any more.
    fixture
        .instances()
        .delete(&gone, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted Bundle's content is collected", || async {
        !gone_dir.exists()
    })
    .await;
    assert!(kept_dir.is_dir(), "{kept}'s content stays");
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_store_over_its_cap_shrinks_to_what_bundles_pin_and_says_so() {
    // A long grace: only the cap removes the young stray content.
    let gc = StoreGc {
        every: Duration::from_millis(300),
        policy: Policy {
            grace: Duration::from_secs(3_600),
            max_bytes: 1,
        },
    };
    let fixture = Fixture::with_options("store-cap", "AllowAll", |options| {
        options.store_gc = gc;
    })
    .await;
    install(&fixture, "pinned", "bundle-pinned", "content-pinned").await;
    let pinned_dir = content_of(&fixture, "bundle-pinned").await;
    let stray = stray_content(&fixture, 'b');
    eventually("the store shrinks", || async { !stray.exists() }).await;
    assert!(pinned_dir.is_dir(), "pinned content is never removed");
    eventually("the metrics say pinned content is over the cap", || async {
        let text = fixture.metrics.encode();
        text.lines().any(|line| {
            line.starts_with("pakket_store_pinned_over_cap_bytes ") && !line.ends_with(" 0")
        })
    })
    .await;
    fixture.scope.cleanup().await;
}
