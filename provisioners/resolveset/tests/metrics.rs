//! pakket-resolveset's own gauges on `/metrics`, from a real process: a
//! Catalog this replica serves and whether its newest content loaded
//! (`pakket_catalog_serving`, `pakket_catalog_unpacked`), and when the
//! resolver API's certificate expires. docs/metrics.md describes them.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pakket_resolveset::{ConditionType, Reason};
use pakket_testkit::Scope;
use serde_json::json;

#[tokio::test]
async fn the_gauges_say_what_this_replica_serves_and_when_its_certificate_ends() {
    let scope = Scope::new("rs-metrics").await;
    let tls = support::TestTls::new(&support::scratch(&scope, "tls"));
    let running = support::start(
        &scope,
        tls.transport("127.0.0.1:0".parse().unwrap()),
        Vec::new(),
    )
    .await;
    let package = json!({"schema": "olm.package", "name": "web", "defaultChannel": "stable"});
    support::serve_files(
        &scope,
        "served",
        BTreeMap::from([("catalog.json".to_owned(), package.to_string())]),
    )
    .await;
    let name = scope.name("served");
    support::wait_for(&scope.client, &name, "served", |catalog| {
        support::condition(
            catalog,
            ConditionType::Serving,
            "True",
            Reason::ServingLatest,
        )
    })
    .await;

    // The gauges read the controller's cache, which sees the status the
    // moment after it is written.
    let expected = [
        format!(r#"pakket_catalog_serving{{catalog="{name}"}} 1"#),
        format!(r#"pakket_catalog_unpacked{{catalog="{name}",reason="UnpackSucceeded"}} 1"#),
    ];
    let started = Instant::now();
    let mut text = running.metrics.encode();
    while !expected.iter().all(|line| text.contains(line))
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
        text = running.metrics.encode();
    }
    for line in &expected {
        assert!(text.contains(line), "no {line} in\n{text}");
    }
    let not_after: i64 = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("pakket_serving_certificate_expiration_timestamp_seconds ")
        })
        .unwrap_or_else(|| panic!("no certificate expiry in\n{text}"))
        .parse()
        .unwrap();
    assert!(
        not_after > jiff::Timestamp::now().as_second(),
        "the test certificate is valid now: {not_after}"
    );
    support::cleanup(scope).await;
}
