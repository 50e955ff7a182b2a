//! The Instance controller installing image bundles (`docker://` refs) on
//! the real control plane from a real registry (Debian's docker-registry on
//! loopback, dev/registry): install and pin the digest, reuse a stored
//! digest without pulling, and a registry that is down, then back.
//!
//! Each test runs its own controller for a provisioner id of its own, so
//! tests in parallel never act on each other's Instances.

mod images;
#[path = "../../../dev/registry/testing.rs"]
mod registry;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use images::sha256;
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::{
    BundleSpec, BundleTemplate, ConditionType, Instance, InstanceSpec, ProvisionerClass,
    ProvisionerClassSpec, UnpackPhase,
};
use pakket_runtime::Plain;
use pakket_runtime::kernel::controller;
use pakket_runtime::kernel::source::{ImageRef, ImageSource, SourceOptions};
use pakket_runtime::kernel::store::{Digest, Store};
use pakket_testkit::{Scope, condition_is, install_crds, reason_is, wait_for_instance as wait_for};
use registry::Registry;
use serde_json::json;

/// A gzip'd tar holding `manifests/NAME.yaml`, a ConfigMap per (name, value).
fn layer(namespace: &str, objects: &[(&str, &str)]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for (name, value) in objects {
        let manifest = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: {value}\n"
        );
        let mut header = tar::Header::new_gnu();
        header.set_size(manifest.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(
            &mut header,
            format!("manifests/{name}.yaml"),
            manifest.as_bytes(),
        )
        .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// Pushes a one-layer image anonymously; returns the manifest and layer digests.
async fn push(image: &str, layer: Vec<u8>) -> (String, String) {
    let layer_digest = sha256(&layer);
    let source = ImageSource::new(SourceOptions::default());
    (
        images::push_gzip_layer(&source, image, layer).await,
        layer_digest,
    )
}

/// Deletes a blob through the registry's API (`DELETE /v2/NAME/blobs/DIGEST`),
/// so a later pull of it fails; returns the status line.
fn delete_blob(address: &str, repository: &str, digest: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "DELETE /v2/{repository}/blobs/{digest} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

struct Fixture {
    scope: Scope,
    store: PathBuf,
}

impl Fixture {
    async fn new(test: &str) -> Self {
        let scope = Scope::new(test).await;
        install_crds(&scope.client).await.unwrap();
        let id = format!("test.pakket.dev/{}", scope.id);
        let mut parameters = serde_json::Map::new();
        parameters.insert("approval".into(), json!("AllowAll"));
        // The test registry is on loopback.
        parameters.insert("allowInternalAddresses".into(), json!(true));
        let class = ProvisionerClass {
            metadata: scope.meta("class"),
            spec: ProvisionerClassSpec {
                provisioner: id.clone(),
                parameters: Some(parameters),
            },
            status: None,
        };
        Api::<ProvisionerClass>::all(scope.client.clone())
            .create(&PostParams::default(), &class)
            .await
            .unwrap();
        let store = scope.path("store");
        let client = scope.client.clone();
        let provisioner = Plain::new(id);
        let root = store.clone();
        tokio::spawn(async move { controller::run(client, provisioner, root).await });
        Self { scope, store }
    }

    fn instance(&self, name: &str, bundle: &str, reference: &str) -> Instance {
        Instance {
            metadata: self.scope.meta(name),
            spec: InstanceSpec {
                class: self.scope.name("class"),
                selector: None,
                deletion_policy: Default::default(),
                config: None,
                bundle: BundleTemplate {
                    name: self.scope.name(bundle),
                    spec: Some(BundleSpec {
                        class: self.scope.name("class"),
                        refs: vec![reference.into()],
                        volume_mounts: vec![],
                    }),
                },
                progress_deadline: None,
                drift: None,
            },
            status: None,
        }
    }

    fn instances(&self) -> Api<Instance> {
        Api::all(self.scope.client.clone())
    }

    async fn bundle_status(&self, name: &str) -> pakket_api::BundleStatus {
        pakket_testkit::bundle_status(&self.scope.client, &self.scope.name(name))
            .await
            .expect("the Bundle's status is recorded")
    }

    async fn value_of(&self, name: &str) -> Option<String> {
        let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.scope.client.clone(), &self.scope.namespace);
        let found = config_maps.get_opt(name).await.unwrap()?;
        found.data.and_then(|data| data.get("value").cloned())
    }

    /// Creates an Instance and waits until it is installed; returns how long it took.
    async fn install(&self, name: &str, bundle: &str, reference: &str) -> (Instance, Duration) {
        let started = Instant::now();
        self.instances()
            .create(
                &PostParams::default(),
                &self.instance(name, bundle, reference),
            )
            .await
            .unwrap();
        let installed = wait_for(&self.instances(), &self.scope.name(name), "install", |i| {
            condition_is(i, ConditionType::Installed, "True")
        })
        .await;
        (installed, started.elapsed())
    }

    /// Deletes Instance `name` and waits until its ConfigMap `object` is
    /// gone with it.
    async fn remove(&self, name: &str, object: &str) {
        self.instances()
            .delete(&self.scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
        pakket_testkit::eventually("the Instance's objects are gone", || async {
            self.value_of(object).await.is_none()
        })
        .await;
    }

    async fn cleanup(self, names: &[&str]) {
        for name in names {
            let _ = self
                .instances()
                .delete(&self.scope.name(name), &DeleteParams::default())
                .await;
        }
        let _ = std::fs::remove_dir_all(&self.store);
        self.scope.cleanup().await;
    }
}

#[tokio::test]
async fn installs_an_image_bundle_and_reuses_a_stored_digest_without_pulling() {
    let registry = Registry::shared();
    let fixture = Fixture::new("image-install").await;
    let repository = format!("bundles/{}", fixture.scope.id);
    let reference = registry.image(&format!("{repository}:v1"));
    let content = layer(
        &fixture.scope.namespace,
        &[("first", "one"), ("second", "two")],
    );
    let (pushed, layer_digest) = push(&reference, content).await;

    // (a) Installed from the image; the Bundle pins the pushed digest.
    let (installed, first_time) = fixture.install("first", "bundle-a", &reference).await;
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(installed.status.as_ref().unwrap().objects.len(), 2);
    assert_eq!(fixture.value_of("first").await.as_deref(), Some("one"));
    assert_eq!(fixture.value_of("second").await.as_deref(), Some("two"));
    let status = fixture.bundle_status("bundle-a").await;
    assert_eq!(status.unpacked, UnpackPhase::Done);
    let source = status.source.unwrap();
    assert_eq!(source.digest.as_deref(), Some(pushed.as_str()));
    assert_eq!(source.reference, reference);
    let store = Store::open(&fixture.store).unwrap();
    let dir = store.get(&Digest::parse(&pushed).unwrap()).unwrap();
    let before = std::fs::metadata(&dir).unwrap();

    // The objects can have one owner: the first Instance goes (and its
    // objects with it) before a second installs the same content.
    fixture.remove("first", "first").await;

    // (b) Take the layer out of the registry: a pull would now fail, a
    // resolve still works. A second Bundle with the same digest installs
    // anyway, so it pulled nothing; the stored directory is the same one.
    let deleted = delete_blob(&registry.address, &repository, &layer_digest);
    assert!(deleted.contains("202"), "blob delete: {deleted}");
    let probe = ImageSource::new(SourceOptions::default());
    let error = probe
        .pull_layers(&ImageRef::parse(&reference).unwrap(), 1 << 20)
        .await
        .expect_err("the layer is gone from the registry, so a pull fails");
    println!("a pull after the blob delete: {error}");
    let (second, second_time) = fixture.install("second", "bundle-b", &reference).await;
    assert!(condition_is(&second, ConditionType::Unpacked, "True"));
    let status = fixture.bundle_status("bundle-b").await;
    assert_eq!(status.unpacked, UnpackPhase::Done);
    assert_eq!(
        status.source.unwrap().digest.as_deref(),
        Some(pushed.as_str())
    );
    let after = std::fs::metadata(&dir).unwrap();
    assert_eq!(
        (after.ino(), after.mtime(), after.mtime_nsec()),
        (before.ino(), before.mtime(), before.mtime_nsec()),
        "the stored content was not written again"
    );
    assert_eq!(store.digests().unwrap().len(), 1);
    println!(
        "image bundle: created to Installed {first_time:.1?} (pull + unpack); \
         same digest already stored: {second_time:.1?}"
    );
    fixture.cleanup(&["first", "second"]).await;
}

/// Content in the store can be damaged (a disk, a crash, a hand in the
/// pod). A render that fails on stored content fetches it once more before
/// the content is blamed: the Instance installs, and is never told to fix
/// content that is fine.
#[tokio::test]
async fn stored_content_found_damaged_is_fetched_again_before_the_content_is_blamed() {
    let registry = Registry::shared();
    let fixture = Fixture::new("image-damaged-store").await;
    let reference = registry.image(&format!("bundles/{}:v1", fixture.scope.id));
    let (pushed, _) = push(
        &reference,
        layer(&fixture.scope.namespace, &[("kept", "one")]),
    )
    .await;
    fixture.install("first", "bundle-a", &reference).await;
    fixture.remove("first", "kept").await;

    // The stored manifest is cut short; the entry itself stays in place.
    let store = Store::open(&fixture.store).unwrap();
    let dir = store.get(&Digest::parse(&pushed).unwrap()).unwrap();
    std::fs::write(dir.join("manifests/kept.yaml"), "apiVersion: v1\nkind: [").unwrap();

    let (second, _) = fixture.install("second", "bundle-b", &reference).await;
    assert!(condition_is(&second, ConditionType::Unpacked, "True"));
    assert_eq!(fixture.value_of("kept").await.as_deref(), Some("one"));
    assert!(
        store
            .get(&Digest::parse(&pushed).unwrap())
            .and_then(|dir| std::fs::read_to_string(dir.join("manifests/kept.yaml")).ok())
            .is_some_and(|text| text.contains("value: one")),
        "the content was fetched again into the store"
    );
    fixture.cleanup(&["first", "second"]).await;
}

/// Brings a stopped registry back on the same port with the same data:
/// start.sh always picks a new port, so this runs the same binary on its
/// config with the old address (the file name keeps `config.yml` in the
/// command line, so stop.sh and the watchdog stop it). Returns once it
/// accepts connections.
async fn back_on_the_same_port(own: &Registry) -> std::process::Child {
    let config = std::fs::read_to_string(own.dir.join("config.yml")).unwrap();
    let pinned = own.dir.join("config.yml.same-port");
    std::fs::write(
        &pinned,
        config.replace("addr: 127.0.0.1:0", &format!("addr: {}", own.address)),
    )
    .unwrap();
    let log = std::fs::File::create(own.dir.join("registry-again.log")).unwrap();
    let child = std::process::Command::new("/usr/bin/docker-registry")
        .arg("serve")
        .arg(&pinned)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    std::fs::write(own.dir.join("pid"), child.id().to_string()).unwrap();
    for _ in 0..100 {
        if TcpStream::connect(&own.address).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}

#[tokio::test]
async fn a_registry_down_during_an_upgrade_keeps_the_running_version_until_it_is_back() {
    let own = Registry::start("upgrade-down", None);
    let fixture = Fixture::new("image-upgrade-down").await;
    let v1 = own.image(&format!("bundles/{}:v1", fixture.scope.id));
    let v2 = own.image(&format!("bundles/{}:v2", fixture.scope.id));
    push(
        &v1,
        layer(&fixture.scope.namespace, &[("app", "v1"), ("old", "v1")]),
    )
    .await;
    push(
        &v2,
        layer(&fixture.scope.namespace, &[("app", "v2"), ("new", "v2")]),
    )
    .await;
    fixture.install("instance", "bundle-v1", &v1).await;
    let name = fixture.scope.name("instance");
    let instances = fixture.instances();

    // The upgrade asks for v2 while the registry is down.
    own.stop();
    let upgraded = fixture.instance("instance", "bundle-v2", &v2);
    instances
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"bundle": upgraded.spec.bundle}})),
        )
        .await
        .unwrap();
    let failed = wait_for(&instances, &name, "the upgrade's unpack fails", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
    assert!(message.contains(&v2), "names the image: {message}");
    // v1 runs on, untouched: nothing deleted, nothing half-applied.
    assert_eq!(
        failed.status.as_ref().unwrap().active_bundle.as_deref(),
        Some(fixture.scope.name("bundle-v1").as_str())
    );
    assert_eq!(fixture.value_of("app").await.as_deref(), Some("v1"));
    assert_eq!(fixture.value_of("old").await.as_deref(), Some("v1"));
    assert_eq!(fixture.value_of("new").await, None);

    // Back: the upgrade completes, v1's own object goes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let child = back_on_the_same_port(&own).await;
    let back = Instant::now();
    wait_for(
        &instances,
        &name,
        "the upgrade once the registry is back",
        |i| {
            i.status.as_ref().and_then(|s| s.active_bundle.as_deref())
                == Some(fixture.scope.name("bundle-v2").as_str())
                && condition_is(i, ConditionType::Installed, "True")
        },
    )
    .await;
    println!(
        "registry back during an upgrade: v2 installed {:.1?} later",
        back.elapsed()
    );
    assert_eq!(fixture.value_of("app").await.as_deref(), Some("v2"));
    assert_eq!(fixture.value_of("new").await.as_deref(), Some("v2"));
    assert_eq!(
        fixture.value_of("old").await,
        None,
        "v1's own object is gone"
    );
    fixture.cleanup(&["instance"]).await;
    own.stop();
    let _ = child;
}

#[tokio::test]
async fn a_registry_that_is_down_fails_the_unpack_and_the_instance_installs_once_it_is_back() {
    let own = Registry::start("down", None);
    let fixture = Fixture::new("image-down").await;
    let reference = own.image(&format!("bundles/{}:v1", fixture.scope.id));
    let (pushed, _) = push(
        &reference,
        layer(&fixture.scope.namespace, &[("later", "up")]),
    )
    .await;
    own.stop();

    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    let started = Instant::now();
    instances
        .create(
            &PostParams::default(),
            &fixture.instance("instance", "bundle", &reference),
        )
        .await
        .unwrap();
    let failed = wait_for(&instances, &name, "unpack failure", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let failed_after = started.elapsed();
    let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("spec.refs[0]")
            && message.contains(&reference)
            && message.contains(&format!("is the registry running at {}", own.address)),
        "{message}"
    );
    assert!(
        failed_after < Duration::from_secs(15),
        "took {failed_after:?}"
    );
    let bundle = fixture.bundle_status("bundle").await;
    assert_eq!(bundle.unpacked, UnpackPhase::Failed);
    println!("registry down: UnpackFailed after {failed_after:.1?}: {message}");

    // Let a few retries fail, then bring the registry back.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let child = back_on_the_same_port(&own).await;
    let back = Instant::now();
    let installed = wait_for(
        &instances,
        &name,
        "install after the registry is back",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    println!(
        "registry back on {}: Installed {:.1?} later",
        own.address,
        back.elapsed()
    );
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(fixture.value_of("later").await.as_deref(), Some("up"));
    let bundle = fixture.bundle_status("bundle").await;
    assert_eq!(bundle.unpacked, UnpackPhase::Done);
    assert_eq!(
        bundle.source.unwrap().digest.as_deref(),
        Some(pushed.as_str())
    );
    fixture.cleanup(&["instance"]).await;
    // stop.sh ends the registry by the pid written above.
    own.stop();
    let _ = child;
}

#[tokio::test]
async fn an_unknown_tag_fails_the_unpack_naming_the_image_and_the_registrys_code() {
    let registry = Registry::shared();
    let fixture = Fixture::new("image-unknown").await;
    let reference = registry.image(&format!("bundles/{}:missing", fixture.scope.id));
    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    let started = Instant::now();
    instances
        .create(
            &PostParams::default(),
            &fixture.instance("instance", "bundle", &reference),
        )
        .await
        .unwrap();
    let failed = wait_for(&instances, &name, "unpack failure", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let failed_after = started.elapsed();
    let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("spec.refs[0]")
            && message.contains(&reference)
            && message.contains(&format!("registry {} has no image", registry.address))
            && message.contains("MANIFEST_UNKNOWN"),
        "{message}"
    );
    assert!(!condition_is(&failed, ConditionType::Installed, "True"));
    let bundle = fixture.bundle_status("bundle").await;
    assert_eq!(bundle.unpacked, UnpackPhase::Failed);
    println!("unknown tag: UnpackFailed after {failed_after:.1?}: {message}");
    fixture.cleanup(&["instance"]).await;
}

/// Objects in the oversized bundle, and how many go in each file (the
/// default limit per file is 1 MiB).
const OVERSIZED: usize = 25_000;
const PER_FILE: usize = 1_000;

#[tokio::test]
async fn a_bundle_of_25000_objects_ends_in_a_clear_condition_and_applies_nothing() {
    let registry = Registry::shared();
    let fixture = Fixture::new("image-oversized").await;
    let namespace = fixture.scope.namespace.clone();
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    for file in 0..OVERSIZED / PER_FILE {
        let text = (file * PER_FILE..(file + 1) * PER_FILE)
            .map(|i| {
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many-{i:05}\n  namespace: {namespace}\n"
                )
            })
            .collect::<Vec<_>>()
            .join("---\n");
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(
            &mut header,
            format!("manifests/part-{file:02}.yaml"),
            text.as_bytes(),
        )
        .unwrap();
    }
    let content = tar.into_inner().unwrap().finish().unwrap();
    let reference = registry.image(&format!("bundles/{}:many", fixture.scope.id));
    push(&reference, content).await;

    fixture
        .instances()
        .create(
            &PostParams::default(),
            &fixture.instance("many", "bundle-many", &reference),
        )
        .await
        .unwrap();
    let name = fixture.scope.name("many");
    let refused = wait_for(&fixture.instances(), &name, "the refusal", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("holds 25000 objects")
            && message.contains(&format!("ProvisionerClass {}", fixture.scope.name("class")))
            && message.contains("maxObjects")
            && message.contains("nothing is applied"),
        "{message}"
    );
    let bundle = fixture.bundle_status("bundle-many").await;
    assert_eq!(bundle.unpacked, UnpackPhase::Failed);
    assert!(bundle.objects.is_empty());
    assert!(!condition_is(&refused, ConditionType::Installed, "True"));
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(fixture.scope.client.clone(), &namespace);
    let applied = config_maps
        .list_metadata(
            &kube::api::ListParams::default().labels(&format!("core.pakket.dev/instance={name}")),
        )
        .await
        .unwrap();
    assert!(applied.items.is_empty(), "nothing was applied");
    fixture.cleanup(&["many"]).await;
}
