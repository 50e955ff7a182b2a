//! Webhook latency under load: a loopback load generator sends AdmissionReviews
//! at a fixed rate (open loop, 1,000 per second) over one HTTP/2 connection
//! over TLS — the way the apiserver calls a webhook — and prints p50/p99 per
//! scenario. Permission checks go to a real apiserver (the test kit's control
//! plane) as SubjectAccessReviews.
//!
//! `cargo bench -p pakket-webhooks --bench admission`
//! (`PAKKET_BENCH_SECONDS` per scenario, default 5; `PAKKET_BENCH_RATE`, default 1000).
//!
//! Open loop: every request is sent on its own task when it is due, whether
//! or not earlier ones were answered (HTTP/2 multiplexes them), so a stalled
//! server shows up in the figures instead of slowing the generator down.
//! Latency runs from just before the request is written to the last byte of
//! the answer; "late" counts requests the generator itself sent more than
//! 1 ms after they were due (tokio's timer has 1 ms resolution).

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use pakket_api::{CreatorRecord, Instance};
use pakket_webhooks::local::LoopbackCa;
use pakket_webhooks::review::Requester;
use pakket_webhooks::{Running, Settings, tls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use support::{pakket_rule, user};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const CLASS: &str = "bench-admission-class";
const ROLE: &str = "bench-admission-use";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let seconds: u64 = env_or("PAKKET_BENCH_SECONDS", 5);
    let rate: u64 = env_or("PAKKET_BENCH_RATE", 1000);
    let client = pakket_testkit::cluster().admin().await;
    pakket_testkit::install_crds(&client).await.unwrap();
    grant_alice_use(&client).await;

    let dir = tempfile::tempdir().unwrap();
    let files = tls::CertFiles {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
    };
    let pki = LoopbackCa::new("bench-ca").unwrap();
    pki.issue(&files, "bench").unwrap();
    let cached = start(&client, &files, Duration::from_secs(10)).await;
    let uncached = start(&client, &files, Duration::ZERO).await;

    let alice = Requester::named("alice", &["pakket:test-users", "system:authenticated"]);
    // Sealed as the mutating webhook seals it, with the server's key.
    let bench_spec: pakket_api::InstanceSpec =
        serde_json::from_value(instance(None)["spec"].clone()).unwrap();
    let alice_record = alice.creator_record().sealed(
        &bench_key(),
        pakket_api::CREATED_BY_ANNOTATION,
        "bench",
        &bench_spec,
    );
    let scenarios: Vec<(&str, &Running, &str, Bytes)> = vec![
        (
            "status write, Approved unchanged (no SubjectAccessReview)",
            &cached,
            "/validate",
            status_write(&alice),
        ),
        (
            "Instance create: creator record (mutating)",
            &cached,
            "/mutate",
            instance_create(&alice, None),
        ),
        (
            "Instance create: use verb, answer cached",
            &cached,
            "/validate",
            instance_create(&alice, Some(&alice_record)),
        ),
        (
            "Instance create: use verb, cache off (1 SAR each)",
            &uncached,
            "/validate",
            instance_create(&alice, Some(&alice_record)),
        ),
    ];

    println!(
        "webhook latency at {rate} requests/s, {seconds} s per scenario, one HTTP/2 connection over TLS on loopback"
    );
    println!(
        "{:<58} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6}",
        "scenario", "requests", "p50 ms", "p90 ms", "p99 ms", "max ms", "denied", "late"
    );
    for (name, server, path, body) in scenarios {
        let sender = connect(server.addr, &pki.ca_pem()).await;
        // Warm up: the connection, the cache, the allocator.
        load(&sender, path, &body, rate, Duration::from_millis(500)).await;
        let (mut latencies, denied, late) =
            load(&sender, path, &body, rate, Duration::from_secs(seconds)).await;
        latencies.sort_unstable();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{name:<58} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>6}",
            latencies.len(),
            ms(at(0.50)),
            ms(at(0.90)),
            ms(at(0.99)),
            ms(*latencies.last().unwrap()),
            denied,
            late
        );
    }

    cached.stop().await;
    uncached.stop().await;
    let _ = Api::<ClusterRoleBinding>::all(client.clone())
        .delete(ROLE, &DeleteParams::default())
        .await;
    let _ = Api::<ClusterRole>::all(client.clone())
        .delete(ROLE, &DeleteParams::default())
        .await;
    let _ = Api::<pakket_api::ProvisionerClass>::all(client)
        .delete(CLASS, &DeleteParams::default())
        .await;
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The record key of the bench's server.
fn bench_key() -> pakket_api::RecordKey {
    pakket_api::RecordKey::from_bytes(&[9; 32]).unwrap()
}

async fn start(client: &kube::Client, files: &tls::CertFiles, ttl: Duration) -> Running {
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        cert: files.clone(),
        reload_interval: Duration::from_secs(5),
        access_cache_ttl: ttl,
        record_key: bench_key(),
        delegates: Vec::new(),
    };
    let server = pakket_webhooks::start(client.clone(), settings)
        .await
        .unwrap();
    server.index.wait_ready().await;
    server
}

/// alice may `use` the bench class, so the reviews are allowed (and cacheable).
async fn grant_alice_use(client: &kube::Client) {
    let apply = PatchParams::apply("pakket-bench").force();
    let role = ClusterRole {
        metadata: kube::api::ObjectMeta {
            name: Some(ROLE.into()),
            ..Default::default()
        },
        rules: Some(vec![pakket_rule(
            &["provisionerclasses"],
            &["use"],
            &[CLASS],
        )]),
        ..ClusterRole::default()
    };
    let binding = ClusterRoleBinding {
        metadata: role.metadata.clone(),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: ROLE.into(),
        },
        subjects: Some(vec![user("alice")]),
    };
    Api::<ClusterRole>::all(client.clone())
        .patch(ROLE, &apply, &Patch::Apply(&role))
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(ROLE, &apply, &Patch::Apply(&binding))
        .await
        .unwrap();
    let class: pakket_api::ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ProvisionerClass",
        "metadata": {"name": CLASS},
        "spec": {"provisioner": support::NO_PROVISIONER},
    }))
    .unwrap();
    Api::<pakket_api::ProvisionerClass>::all(client.clone())
        .patch(CLASS, &apply, &Patch::Apply(&class))
        .await
        .unwrap();
    // Let RBAC's informer catch up, so no denial skews the figures.
    tokio::time::sleep(Duration::from_secs(1)).await;
}

fn instance(record: Option<&CreatorRecord>) -> Value {
    let mut object = json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "bench", "uid": "8f0e"},
        "spec": {"class": CLASS, "bundle": {"name": "bench-v1"}},
    });
    if let Some(record) = record {
        object["metadata"]["annotations"] =
            json!({ pakket_api::CREATED_BY_ANNOTATION: record.to_annotation() });
    }
    object
}

fn review(
    requester: &Requester,
    operation: &str,
    subresource: Option<&str>,
    object: Value,
    old: Option<Value>,
) -> Bytes {
    let mut request = json!({
        "uid": "4b1f0c55-0000-4000-8000-000000000000",
        "kind": {"group": "core.pakket.dev", "version": "v1alpha1", "kind": "Instance"},
        "resource": {"group": "core.pakket.dev", "version": "v1alpha1", "resource": "instances"},
        "name": "bench",
        "operation": operation,
        "userInfo": {"username": requester.username, "groups": requester.groups},
        "object": object,
        "oldObject": old,
        "dryRun": false,
    });
    if let Some(subresource) = subresource {
        request["subResource"] = subresource.into();
    }
    Bytes::from(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
            .to_string(),
    )
}

fn instance_create(requester: &Requester, record: Option<&CreatorRecord>) -> Bytes {
    review(requester, "CREATE", None, instance(record), None)
}

/// The runtime's progress report: Unpacked moves on, Approved stays.
fn status_write(requester: &Requester) -> Bytes {
    let condition = |kind: &str, status: &str, reason: &str| json!({"type": kind, "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    let mut old: Instance = serde_json::from_value(instance(None)).unwrap();
    let mut new = old.clone();
    old.status = serde_json::from_value(json!({"conditions": [
        condition("Approved", "True", "ApprovedByPolicy"),
        condition("Unpacked", "False", "Unpacking"),
    ]}))
    .unwrap();
    new.status = serde_json::from_value(json!({"conditions": [
        condition("Approved", "True", "ApprovedByPolicy"),
        condition("Unpacked", "True", "UnpackSucceeded"),
    ]}))
    .unwrap();
    review(
        requester,
        "UPDATE",
        Some("status"),
        serde_json::to_value(new).unwrap(),
        Some(serde_json::to_value(old).unwrap()),
    )
}

async fn connect(addr: SocketAddr, ca_pem: &str) -> SendRequest<Body> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender
}

/// Sends `body` to `path` `rate` times a second for `duration`; returns each
/// request's latency, how many were denied and how many were sent late.
async fn load(
    sender: &SendRequest<Body>,
    path: &str,
    body: &Bytes,
    rate: u64,
    duration: Duration,
) -> (Vec<Duration>, usize, usize) {
    let count = (rate as f64 * duration.as_secs_f64()) as usize;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = Vec::with_capacity(count);
    for _ in 0..count {
        let due: Instant = ticks.tick().await.into_std();
        let late = due.elapsed() > Duration::from_millis(1);
        let mut sender = sender.clone();
        let request = hyper::Request::post(format!("https://127.0.0.1{path}"))
            .header("content-type", "application/json")
            .body(Body::from(body.clone()))
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let response = sender
                .send_request(request)
                .await
                .expect("the webhook answers");
            let bytes = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
                .await
                .unwrap();
            let took = sent.elapsed();
            let allowed =
                serde_json::from_slice::<Value>(&bytes).unwrap()["response"]["allowed"] == true;
            (took, allowed, late)
        }));
    }
    let mut latencies = Vec::with_capacity(count);
    let (mut denied, mut late_count) = (0, 0);
    for task in tasks {
        let (took, allowed, late) = task.await.unwrap();
        latencies.push(took);
        denied += usize::from(!allowed);
        late_count += usize::from(late);
    }
    (latencies, denied, late_count)
}
