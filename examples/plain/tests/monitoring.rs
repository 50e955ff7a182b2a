//! `deploy/monitoring/` tested for real:
//!
//! - Debian's Prometheus scrapes a running `pakket-plain` and the
//!   webhooks on loopback, with the PrometheusRule's groups loaded, and
//!   the series the alerts read appear (an Instance waiting for approval
//!   among them) while every rule evaluates without error;
//! - `promtool test rules` proves each alert fires and resolves on
//!   recorded series (`deploy/monitoring/tests/`);
//! - every metric the alerts and the dashboard read is in docs/metrics.md.
//!
//! The rules have one source, the PrometheusRule: its `spec` is written to
//! a plain rules file for Prometheus and promtool. `prometheus` and
//! `promtool` come from Debian's `prometheus` package (dev/prerequisites.sh).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::{Instance, ProvisionerClass};
use pakket_testkit::probes::{self, get};
use pakket_testkit::{Scope, cluster, install_crds};
use pakket_webhooks::local::LoopbackCa;
use pakket_webhooks::{Settings, tls};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// A fresh folder for one test's files, under the system's temporary one.
fn fresh_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pakket-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The PrometheusRule's `spec` (its rule groups), written as the plain
/// rules file Prometheus and promtool read, to `dir/rules.yaml`.
fn write_rules(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo("deploy/monitoring/prometheusrule.yaml")).unwrap();
    let rule: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(rule["kind"], "PrometheusRule");
    let path = dir.join("rules.yaml");
    // JSON is YAML.
    std::fs::write(&path, rule["spec"].to_string()).unwrap();
    path
}

/// Runs a tool of the `prometheus` package; panics with its output unless it succeeds.
fn run(tool: &str, args: &[&str], dir: &Path) -> String {
    let output = std::process::Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| {
            panic!("{tool}: {error}; install Debian's prometheus package (dev/prerequisites.sh)")
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{tool} {args:?}:\n{text}");
    text
}

#[test]
fn every_alert_fires_and_resolves_under_promtool() {
    let dir = fresh_dir("promtool");
    write_rules(&dir);
    let checked = run("promtool", &["check", "rules", "rules.yaml"], &dir);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tests = repo("deploy/monitoring/tests");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        std::fs::copy(&path, dir.join(&name)).unwrap();
        files.push(name);
    }
    assert!(!files.is_empty(), "no tests in {}", tests.display());
    let tested = run(
        "promtool",
        &[
            &["test", "rules"][..],
            &files.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
        &dir,
    );
    assert!(!tested.contains("FAILED"), "{tested}");

    // Each alert of the rule is asserted to fire somewhere in the tests.
    let rules: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rules.yaml")).unwrap()).unwrap();
    let tests_text: String = files
        .iter()
        .map(|name| std::fs::read_to_string(dir.join(name)).unwrap())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    for group in rules["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let alert = rule["alert"].as_str().unwrap();
            assert!(
                tests_text.contains(&format!("alertname: {alert}\n")),
                "{alert} has no promtool test in {}",
                tests.display()
            );
        }
    }
}

/// The `pakket_…` metric names `text` reads, without the suffixes
/// Prometheus adds to a histogram's series.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("pakket_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        names.insert(base.to_owned());
        rest = &tail[end..];
    }
    names
}

#[test]
fn every_metric_the_alerts_and_the_dashboard_read_is_documented() {
    let documented = std::fs::read_to_string(repo("docs/metrics.md")).unwrap();
    let dashboard =
        std::fs::read_to_string(repo("deploy/monitoring/dashboards/pakket.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let mut exprs = String::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push_str(target["expr"].as_str().unwrap());
            exprs.push('\n');
        }
    }
    let rules = std::fs::read_to_string(repo("deploy/monitoring/prometheusrule.yaml")).unwrap();
    let read = metric_names(&format!("{exprs}{rules}"));
    assert!(read.len() > 10, "{read:?}");
    let missing: Vec<&String> = read
        .iter()
        .filter(|name| !documented.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "not in docs/metrics.md: {missing:?}");
}

/// Percent-encodes a PromQL query for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// How many series `query` returns now.
async fn series(prometheus: &str, query: &str) -> usize {
    let Some(body) = get(
        prometheus,
        &format!("/api/v1/query?query={}", encode(query)),
    )
    .await
    else {
        return 0;
    };
    let answer: Value = serde_json::from_str(&body).unwrap_or_default();
    answer["data"]["result"].as_array().map_or(0, Vec::len)
}

/// `pakket-plain` with its probes on a free loopback port, and that address.
async fn provisioner(scope: &Scope, id: &str) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pakket-plain"));
    command
        .args(["--id", id, "--lease-namespace", &scope.namespace])
        .args(["--probe-address", "127.0.0.1:0", "--store"])
        .arg(scope.path("monitoring-store"))
        .env("KUBECONFIG", cluster().kubeconfig())
        .env("RUST_LOG", "warn");
    probes::spawn(command).await
}

/// A free port on 127.0.0.1 (closed again; Prometheus binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `pakket-plain` at `probes` and the webhooks at
/// `webhooks` (HTTPS, trusting `ca`), every second, with the rules loaded.
fn prometheus(dir: &Path, probes: &str, webhooks: SocketAddr, ca: &Path) -> (Child, String) {
    let rules = write_rules(dir);
    let config = json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules],
        "scrape_configs": [
            {"job_name": "pakket-plain", "static_configs": [{"targets": [probes]}]},
            {
                "job_name": "pakket-webhooks",
                "scheme": "https",
                "tls_config": {"ca_file": ca},
                "static_configs": [{"targets": [webhooks.to_string()]}],
            },
        ],
    });
    let config_file = dir.join("prometheus.yml");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let address = format!("127.0.0.1:{}", free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config_file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={address}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("prometheus: install Debian's prometheus package (dev/prerequisites.sh)");
    (child, address)
}

async fn waiting_instance(scope: &Scope, id: &str) -> String {
    // `approval` other than AllowAll: every Instance waits for a person.
    let class: ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ProvisionerClass",
        "metadata": scope.meta("class"),
        "spec": {"provisioner": id, "parameters": {"approval": "Manual"}},
    }))
    .unwrap();
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: waits\n  namespace: {}\n",
        scope.namespace
    );
    let content = serde_json::from_value(json!({
        "metadata": {"name": "content", "labels": {pakket_api::BUNDLE_CONTENT_LABEL: "true"}},
        "data": {"object.yaml": manifest},
        "immutable": true,
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        scope.client.clone(),
        &scope.namespace,
    )
    .create(&PostParams::default(), &content)
    .await
    .unwrap();
    let instance: Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": scope.meta("waits"),
        "spec": {
            "class": scope.name("class"),
            "bundle": {
                "name": scope.name("waits-bundle"),
                "spec": {
                    "class": scope.name("class"),
                    "refs": ["file://content"],
                    "volumeMounts": [{
                        "mountPath": "/content",
                        "configMap": {"name": "content", "namespace": scope.namespace},
                    }],
                },
            },
        },
    }))
    .unwrap();
    Api::<Instance>::all(scope.client.clone())
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    scope.name("waits")
}

#[tokio::test]
async fn prometheus_scrapes_a_provisioner_and_the_webhooks() {
    let scope = Scope::new("monitoring").await;
    install_crds(&scope.client).await.unwrap();
    let id = format!("test.pakket.dev/{}", scope.id);
    let instance = waiting_instance(&scope, &id).await;
    let (_provisioner, probes) = provisioner(&scope, &id).await;

    let dir = scope.path("monitoring");
    std::fs::create_dir_all(&dir).unwrap();
    let files = tls::CertFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    let pki = LoopbackCa::new("monitoring-ca").unwrap();
    pki.issue(&files, "webhooks").unwrap();
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let webhooks = pakket_webhooks::start(
        scope.client.clone(),
        Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            cert: files,
            reload_interval: Duration::from_secs(5),
            access_cache_ttl: Duration::from_secs(10),
            record_key: pakket_api::RecordKey::generate().0,
            delegates: Vec::new(),
        },
    )
    .await
    .unwrap();

    let (mut prometheus, address) = prometheus(&dir, &probes, webhooks.addr, &ca);
    let class = scope.name("class");
    let expected = [
        r#"up{job="pakket-plain"} == 1"#.to_owned(),
        r#"up{job="pakket-webhooks"} == 1"#.to_owned(),
        r#"pakket_is_leader{job="pakket-plain"} == 1"#.to_owned(),
        r#"pakket_reconciles_total{job="pakket-plain",result="ok"}"#.to_owned(),
        r#"pakket_reconcile_duration_seconds_bucket{job="pakket-plain"}"#.to_owned(),
        r#"pakket_apiserver_requests_total{job="pakket-plain",verb="watch"}"#.to_owned(),
        r#"pakket_store_bytes{job="pakket-plain"}"#.to_owned(),
        format!(r#"pakket_instances{{job="pakket-plain",class="{class}"}} == 1"#),
        format!(
            r#"time() - pakket_instance_approval_pending_since_timestamp_seconds{{job="pakket-plain",name="{instance}",class="{class}"}} < 600"#
        ),
        r#"pakket_serving_certificate_expiration_timestamp_seconds{job="pakket-webhooks"} > time()"#
            .to_owned(),
    ];
    let started = Instant::now();
    let mut absent: Vec<&String> = expected.iter().collect();
    while !absent.is_empty() && started.elapsed() < Duration::from_secs(120) {
        let mut still = Vec::new();
        for query in absent {
            if series(&address, query).await == 0 {
                still.push(query);
            }
        }
        absent = still;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        absent.is_empty(),
        "no series for {absent:?} after 2 minutes"
    );
    println!(
        "every expected series scraped {:.1?} after start",
        started.elapsed()
    );

    // The alerting rules ran over these series without an error.
    let rules: Value =
        serde_json::from_str(&get(&address, "/api/v1/rules").await.expect("rules")).unwrap();
    let mut evaluated = 0;
    for group in rules["data"]["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            assert_eq!(rule["health"], "ok", "{rule}");
            evaluated += 1;
        }
    }
    assert!(evaluated >= 10, "{rules}");

    prometheus.kill().await.unwrap();
    webhooks.stop().await;
    let instances = Api::<Instance>::all(scope.client.clone());
    instances
        .delete(&instance, &DeleteParams::default())
        .await
        .unwrap();
    for _ in 0..300 {
        if instances.get_opt(&instance).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scope.cleanup().await;
}
