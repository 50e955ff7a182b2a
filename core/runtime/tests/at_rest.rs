//! What an installed Instance costs the apiserver while nothing changes,
//! and what its uninstall reads, counted request by request on the
//! controller's own client, on the real control plane: with a short
//! resync, the resyncs of an Instance whose objects the drift watches
//! vouch for send none of them a request (no dry run, no patch, and no
//! health read of a kind whose health is its existence), while a
//! Deployment's health is still read; a hand edit is still put back
//! within seconds, and so is one made under the runtime's own field
//! manager's name; and the uninstall reads each of its objects once (to
//! check it is the Instance's before deleting it), lists none, and writes
//! the Instance once (its finalizer's removal, no `Deleting` status first).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use pakket_api::ownership::FIELD_MANAGER;
use pakket_runtime::Plain;
use pakket_runtime::kernel::controller;
use pakket_runtime::kernel::serve::Metrics;
use pakket_testkit::{Scope, eventually, install_crds};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

/// Every request a client sent, as `METHOD path?query`, in order.
#[derive(Clone, Default)]
struct Requests(Arc<Mutex<Vec<String>>>);

impl Requests {
    /// A client for `config` that records each request here.
    fn client(&self, config: kube::Config) -> kube::Client {
        let log = Arc::clone(&self.0);
        let record =
            tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
                let uri = request.uri();
                let line = match uri.query() {
                    Some(query) => format!("{} {}?{query}", request.method(), uri.path()),
                    None => format!("{} {}", request.method(), uri.path()),
                };
                log.lock().unwrap().push(line);
                request
            });
        kube::client::ClientBuilder::try_from(config)
            .unwrap()
            .with_layer(&record)
            .build()
    }

    /// How many requests were recorded so far.
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// The requests recorded since the first `from`, that `keep` keeps.
    fn since(&self, from: usize, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.0.lock().unwrap()[from..]
            .iter()
            .filter(|line| keep(line))
            .cloned()
            .collect()
    }
}

/// The ConfigMaps the test's Instance installs.
const OBJECTS: [&str; 3] = ["one", "two", "three"];

/// Whether `line` is a request about one of the Instance's ConfigMaps in
/// `namespace`, or a list of ConfigMaps (anywhere).
fn about_objects(line: &str, namespace: &str) -> bool {
    let path = line.split(['?', ' ']).nth(1).unwrap_or_default();
    let one_of_them = OBJECTS
        .iter()
        .any(|name| path == format!("/api/v1/namespaces/{namespace}/configmaps/{name}"));
    let a_list = line.starts_with("GET ")
        && (path == "/api/v1/configmaps" || path.ends_with("/configmaps"))
        && !line.contains("watch=true");
    one_of_them || a_list
}

/// Reconciles counted so far.
fn reconciles(metrics: &Metrics) -> f64 {
    pakket_testkit::probes::metric_total(&metrics.encode(), "pakket_reconciles_total")
}

/// A plain provisioner's controller whose every request is recorded, with
/// its resync shortened to `resync`; the fixture around it, with a class
/// that allows all.
async fn recorded(test: &str, resync: Duration) -> (Fixture, Requests) {
    let scope = Scope::new(test).await;
    install_crds(&scope.client).await.unwrap();
    let requests = Requests::default();
    let client = requests.client(scope.cluster.config_as("admin").await);
    let id = format!("test.pakket.dev/{}", scope.id);
    let store = scope.path("store");
    let options = controller::RunOptions {
        resync,
        ..controller::RunOptions::new(store.clone())
    };
    let metrics = options.metrics.clone();
    let provisioner = Plain::new(id.clone());
    tokio::spawn(async move { controller::run_with(client, provisioner, options).await });
    let fixture = Fixture {
        scope,
        id,
        store,
        metrics,
    };
    fixture.create_class("AllowAll").await;
    (fixture, requests)
}

/// Whether `line` is a request whose path ends in `path`.
fn to(line: &str, path: &str) -> bool {
    line.split(['?', ' '])
        .nth(1)
        .unwrap_or_default()
        .ends_with(path)
}

/// Resyncs of an Instance at rest, whose objects the drift watches vouch
/// for, send none of them a request (ConfigMaps are healthy by existing,
/// which the watches prove); a hand edit is still put back, writing only
/// the edited object, and so are edits made under the runtime's own field
/// manager (a merge patch, a server-side apply); the uninstall lists
/// nothing and reads each object at most once.
///
/// How it fails: a resync that re-applies sends each ConfigMap a read, a
/// dry-run PATCH and a PATCH, and one that reads health a GET each, which
/// the first assertion names; a drift watch that no longer repairs leaves
/// the edit, and the wait for the value to come back panics (as it does
/// for the edits under the runtime's name when its field manager alone
/// decides whose a write is); a repair that writes the whole set again
/// patches `one` and `three` too; an uninstall that lists the Instance's
/// objects by label, or reads one twice, shows in the last assertions.
#[tokio::test]
async fn resyncs_at_rest_write_nothing_the_watches_vouch_for_and_drift_is_still_repaired() {
    // At rest the Instance comes back every 2 to 6 s (by its name).
    let resync = Duration::from_secs(4);
    let (fixture, requests) = recorded("at-rest", resync).await;
    let namespace = fixture.scope.namespace.clone();
    let objects: Vec<(&str, &str)> = OBJECTS.iter().map(|name| (*name, "v1")).collect();
    fixture.content("content", &objects).await;
    let (instances, name) = fixture.install("bundle", "content").await;
    let ours = |line: &str| about_objects(line, &namespace);

    // Several resyncs with nothing changing: counted by reconciles, not
    // by a time (the first settles the status after the install).
    let before = reconciles(&fixture.metrics);
    eventually("a first resync", || async {
        reconciles(&fixture.metrics) >= before + 1.0
    })
    .await;
    let (from, looked) = (requests.len(), reconciles(&fixture.metrics));
    eventually("three more resyncs", || async {
        reconciles(&fixture.metrics) >= looked + 3.0
    })
    .await;
    let resyncs = reconciles(&fixture.metrics) - looked;
    let at_rest = requests.since(from, |_| true);
    let about = requests.since(from, ours);
    println!(
        "at rest: {resyncs} resyncs, {} requests in all ({:.1} per resync): {at_rest:?}",
        at_rest.len(),
        at_rest.len() as f64 / resyncs,
    );
    assert!(
        about.is_empty(),
        "resyncs at rest sent requests for objects the watches vouch for (a GET is a health read, a PATCH a write or dry run): {about:?}"
    );

    // A hand edit is put back (the drift watch's repair) within seconds,
    // and only the edited object is written.
    let from = requests.len();
    fixture
        .config_maps()
        .patch(
            "two",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "value": "edited" } })),
        )
        .await
        .unwrap();
    eventually("the edited object is put back", || async {
        fixture.value_of("two").await.as_deref() == Some("v1")
    })
    .await;
    let repair = requests.since(from, ours);
    println!("repair: {repair:?}");
    let patched = |name: &str| {
        let path = format!("/configmaps/{name}");
        repair
            .iter()
            .filter(|line| {
                line.starts_with("PATCH ") && line.split('?').next().unwrap().ends_with(&path)
            })
            .count()
    };
    assert!(
        patched("two") > 0,
        "the repair applied the edited object: {repair:?}"
    );
    assert_eq!(
        (patched("one"), patched("three")),
        (0, 0),
        "the repair wrote (or dry-ran) only what was edited: {repair:?}"
    );

    // Edits under the runtime's own field manager are drift too: the
    // watch tells them from the runtime's writes by the resourceVersions
    // those returned.
    let as_the_runtime = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    fixture
        .config_maps()
        .patch(
            "one",
            &as_the_runtime,
            &Patch::Merge(json!({ "data": { "value": "edited as pakket" } })),
        )
        .await
        .unwrap();
    eventually(
        "the object edited under Pakket's name is put back",
        || async { fixture.value_of("one").await.as_deref() == Some("v1") },
    )
    .await;
    // A server-side apply as the runtime, of the object with its labels
    // (without them it would leave the Instance, which is drift anyway).
    let labels = fixture
        .config_maps()
        .get("three")
        .await
        .unwrap()
        .metadata
        .labels;
    let applied = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "three", "labels": labels },
        "data": { "value": "applied as pakket" },
    });
    fixture
        .config_maps()
        .patch(
            "three",
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    eventually(
        "the object applied under Pakket's name is put back",
        || async { fixture.value_of("three").await.as_deref() == Some("v1") },
    )
    .await;

    // The uninstall, right after the repairs: the watches have seen what
    // it wrote, so nothing is listed; each object is judged by the watch's
    // copy of its records (or, if that is behind, read once).
    let uid = instances.get(&name).await.unwrap().metadata.uid.unwrap();
    let from = requests.len();
    instances.delete(&name, &Default::default()).await.unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    let uninstall = requests.since(from, ours);
    let reads = |name: &str| {
        let path = format!("/configmaps/{name}");
        uninstall
            .iter()
            .filter(|line| {
                line.starts_with("GET ") && line.split('?').next().unwrap().ends_with(&path)
            })
            .count()
    };
    println!(
        "uninstall: {} reads of its objects, {} deletes: {uninstall:?}",
        OBJECTS.iter().map(|name| reads(name)).sum::<usize>(),
        uninstall
            .iter()
            .filter(|line| line.starts_with("DELETE "))
            .count()
    );
    // A list by the Instance's UID label (the drift watches' own lists
    // select by the Instance label, whoever's).
    let lists: Vec<&String> = uninstall
        .iter()
        .filter(|line| line.starts_with("GET ") && line.contains(&uid))
        .collect();
    assert!(lists.is_empty(), "the uninstall listed: {lists:?}");
    // A quick uninstall (three objects, no CRD, no other finalizer) ends
    // in the reconcile that saw the deletion, so the Instance goes without
    // first being rewritten to say `Deleting`: its one write is the
    // finalizer's removal.
    let instance_writes: Vec<String> = requests.since(from, |line| {
        !line.starts_with("GET ") && line.contains(&format!("/instances/{name}"))
    });
    assert_eq!(
        instance_writes.len(),
        1,
        "the uninstall's writes of the Instance: {instance_writes:?}"
    );
    assert!(
        !instance_writes[0].contains("/status"),
        "the one write is the finalizer's: {instance_writes:?}"
    );
    for name in OBJECTS {
        assert!(
            reads(name) <= 1,
            "{name} read {} times: {uninstall:?}",
            reads(name)
        );
        assert_eq!(fixture.value_of(name).await, None, "{name} deleted");
    }
    fixture.scope.cleanup().await;
}

/// An Instance of a Deployment and a ConfigMap: the Deployment and a
/// ConfigMap, with a Deployment that kwok's node makes Available.
fn deployment_and_config_map(namespace: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "deployment.yaml",
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n\
                 spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n"
            ),
        ),
        (
            "config.yaml",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: {namespace}\ndata:\n  value: v1\n"
            ),
        ),
    ]
}

/// Resyncs at rest still read the health of a kind that has one: the
/// Deployment's status is read at each look (it is not written), while the
/// ConfigMap beside it, healthy by existing, is not.
///
/// How it fails: a health step that skips the Deployment too (the watch
/// proves it exists, not that it is Available) sends it no GET; one that
/// reads every object sends the ConfigMap a GET at each resync.
#[tokio::test]
async fn resyncs_at_rest_still_read_the_health_of_a_deployment() {
    let resync = Duration::from_secs(4);
    let (fixture, requests) = recorded("at-rest-deployment", resync).await;
    let namespace = fixture.scope.namespace.clone();
    fixture
        .files("content", &deployment_and_config_map(&namespace))
        .await;
    let (instances, name) = fixture.install("bundle", "content").await;
    pakket_testkit::wait_for_instance(&instances, &name, "healthy once the Pod runs", |i| {
        pakket_testkit::condition_is(i, pakket_api::ConditionType::Healthy, "True")
    })
    .await;
    // Settled first (the Deployment controller's first writes), then
    // counted over several resyncs.
    let before = reconciles(&fixture.metrics);
    eventually("a first resync", || async {
        reconciles(&fixture.metrics) >= before + 1.0
    })
    .await;
    let (from, looked) = (requests.len(), reconciles(&fixture.metrics));
    eventually("three more resyncs", || async {
        reconciles(&fixture.metrics) >= looked + 3.0
    })
    .await;
    let resyncs = reconciles(&fixture.metrics) - looked;
    let deployment = format!("/apis/apps/v1/namespaces/{namespace}/deployments/web");
    let config_map = format!("/api/v1/namespaces/{namespace}/configmaps/one");
    let of_deployment = requests.since(from, |line| to(line, &deployment));
    let of_config_map = requests.since(from, |line| to(line, &config_map));
    println!("{resyncs} resyncs: Deployment {of_deployment:?}; ConfigMap {of_config_map:?}");
    // Not written (the watches vouch for it), so its GETs are health reads.
    assert!(
        of_deployment.iter().all(|line| line.starts_with("GET ")) && !of_deployment.is_empty(),
        "the Deployment's health was read at the resyncs, and it was not written: {of_deployment:?}"
    );
    assert!(
        of_config_map.is_empty(),
        "the ConfigMap, healthy by existing, was sent requests: {of_config_map:?}"
    );
    fixture.scope.cleanup().await;
}
