//! `/healthz`, `/readyz` and `/metrics` as `serve` documents them, with a real
//! elector on a real Lease: not ready before the Lease is read, ready while
//! leading, `pakket_is_leader` following the role, reconcile metrics counted.

use std::sync::Arc;
use std::time::Duration;

use pakket_runtime::kernel::leader::{Elector, LeaseConfig, Role};
use pakket_runtime::kernel::serve::{self, Metrics};
use pakket_testkit::Scope;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A plain HTTP/1.1 GET (no TLS, no client crate): the status code and body.
async fn get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

#[tokio::test]
async fn probes_and_metrics_answer_as_documented() {
    let scope = Scope::new("serve").await;
    let config = LeaseConfig::new(&scope.namespace, "leader").with_identity("only");
    let elector = Elector::new(scope.client.clone(), config);
    let mut state = elector.state();
    let metrics = Arc::new(Metrics::new());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(serve::serve(listener, metrics.clone(), elector.state()));

    // Before the election runs: alive, not ready, not leading.
    assert_eq!(get(address, "/healthz").await, (200, "ok".to_string()));
    let (status, body) = get(address, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        get(address, "/metrics")
            .await
            .1
            .contains("pakket_is_leader 0")
    );

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let election = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        elector.run(shutdown, std::future::pending::<()>).await
    });
    let role = tokio::time::timeout(
        Duration::from_secs(30),
        state.wait_for(|role| role == Role::Leading),
    )
    .await
    .expect("leading within 30 s");
    assert_eq!(role, Role::Leading);
    assert_eq!(
        get(address, "/readyz").await,
        (200, "ok: leading".to_string())
    );

    metrics.reconciled("ok", Duration::from_millis(40));
    metrics.reconciled("ok", Duration::from_millis(2));
    metrics.reconciled("apply", Duration::from_secs(3));
    let (status, text) = get(address, "/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "pakket_is_leader 1",
        "pakket_reconciles_total{result=\"ok\"} 2",
        "pakket_reconciles_total{result=\"apply\"} 1",
        "pakket_reconcile_duration_seconds_count 3",
        "# EOF",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }

    // After a graceful stop: not ready, not leading, still alive.
    stop.send(()).unwrap();
    assert_eq!(election.await.unwrap().unwrap(), None);
    assert_eq!(get(address, "/readyz").await.0, 503);
    assert!(
        get(address, "/metrics")
            .await
            .1
            .contains("pakket_is_leader 0")
    );
    assert_eq!(get(address, "/healthz").await.0, 200);

    server.abort();
    scope.cleanup().await;
}
