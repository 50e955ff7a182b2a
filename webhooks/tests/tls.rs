//! The TLS layer on loopback: probes and metrics over HTTPS, and a rotated
//! certificate served to new connections without a restart while an open
//! connection keeps working; a half-written pair is not picked up.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use pakket_webhooks::local::LoopbackCa;
use pakket_webhooks::{Settings, tls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use support::eventually;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// An HTTP/2 connection over TLS trusting `ca_pem`, and the leaf
/// certificate the server presented.
async fn connect(addr: SocketAddr, ca_pem: &str) -> (SendRequest<Body>, Vec<u8>) {
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
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let leaf = stream.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    (sender, leaf)
}

async fn get(sender: &mut SendRequest<Body>, path: &str) -> (u16, String) {
    let request = hyper::Request::get(format!("https://127.0.0.1{path}"))
        .body(Body::empty())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn post(sender: &mut SendRequest<Body>, path: &str, body: String) -> (u16, String) {
    let request = hyper::Request::post(format!("https://127.0.0.1{path}"))
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// `pakket_webhook_certificate_reloads_total{result="error"}`, 0 when absent.
fn reload_errors(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix(r#"pakket_webhook_certificate_reloads_total{result="error"} "#)
        })
        .map_or(0, |count| count.trim().parse().unwrap())
}

fn leaf_in(files: &tls::CertFiles) -> Vec<u8> {
    let pem = std::fs::read(&files.cert).unwrap();
    CertificateDer::from_pem_slice(&pem).unwrap().to_vec()
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart() {
    let client = pakket_testkit::cluster().admin().await;
    pakket_testkit::install_crds(&client).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = tls::CertFiles {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
    };
    let pki = LoopbackCa::new("tls-rotation-ca").unwrap();
    pki.issue(&files, "first").unwrap();
    let first = leaf_in(&files);
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        cert: files.clone(),
        reload_interval: Duration::from_millis(100),
        access_cache_ttl: Duration::from_secs(10),
        record_key: pakket_api::RecordKey::generate().0,
        delegates: Vec::new(),
    };
    let server = pakket_webhooks::start(client, settings).await.unwrap();
    server.index.wait_ready().await;

    let (mut open, served) = connect(server.addr, &pki.ca_pem()).await;
    assert_eq!(served, first);
    assert_eq!(get(&mut open, "/healthz").await, (200, "ok".to_owned()));
    assert_eq!(get(&mut open, "/readyz").await.0, 200);
    // A review of something no rule covers is allowed, its uid echoed; a
    // body that is no review gets a 400.
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "7d2c", "name": "x", "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Secret"},
            "resource": {"group": "", "version": "v1", "resource": "secrets"},
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}},
        },
    });
    let (status, body) = post(&mut open, "/validate", review.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["response"]["uid"], "7d2c", "{body}");
    assert_eq!(answer["response"]["allowed"], true, "{body}");
    assert_eq!(post(&mut open, "/validate", "{}".into()).await.0, 400);
    let (_, metrics) = get(&mut open, "/metrics").await;
    assert!(
        metrics.contains(r#"pakket_webhook_admissions_total{webhook="validate",resource="other",result="allowed"} 1"#),
        "{metrics}"
    );

    // cert-manager renews: same CA, new key and certificate.
    pki.issue(&files, "second").unwrap();
    let second = leaf_in(&files);
    assert_ne!(first, second);
    eventually("the renewed certificate being served", || async {
        let (_, served) = connect(server.addr, &pki.ca_pem()).await;
        if served == second {
            Ok(())
        } else {
            Err("still the first certificate".to_owned())
        }
    })
    .await;
    // The connection opened before the renewal still works.
    assert_eq!(get(&mut open, "/healthz").await, (200, "ok".to_owned()));

    // A key that does not fit (half of a renewal) is not taken.
    let other = tempfile::tempdir().unwrap();
    let stray = tls::CertFiles {
        cert: other.path().join("tls.crt"),
        key: other.path().join("tls.key"),
    };
    pki.issue(&stray, "stray").unwrap();
    let errors_before = reload_errors(&get(&mut open, "/metrics").await.1);
    std::fs::copy(&stray.key, &files.key).unwrap();
    eventually("the bad pair being refused", || {
        let mut sender = open.clone();
        async move {
            let (_, metrics) = get(&mut sender, "/metrics").await;
            if reload_errors(&metrics) > errors_before {
                Ok(())
            } else {
                Err(metrics)
            }
        }
    })
    .await;
    let (_, served) = connect(server.addr, &pki.ca_pem()).await;
    assert_eq!(
        served, second,
        "a mismatched key must not replace the served pair"
    );
    let (_, metrics) = get(&mut open, "/metrics").await;
    assert!(
        metrics.contains(r#"pakket_webhook_certificate_reloads_total{result="ok"} 1"#),
        "{metrics}"
    );

    server.stop().await;
}
