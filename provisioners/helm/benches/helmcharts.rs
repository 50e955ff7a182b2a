//! pakket-helm's figures (issue 43, "Figures"), printed, never asserted:
//! N HelmCharts of a small chart (one ConfigMap, written here, not real
//! data) created at once on the test kit's kwok control plane, for each N
//! asked (default 100 and 500); the time until every one is
//! `Installed=True`, and the process's peak RSS meanwhile. The provisioner
//! (runtime and HelmChart controller) runs in this process as `deploy/`
//! runs it (its ServiceAccount, the real webhooks), so the RSS also holds
//! the bench's own client and the webhooks; each `helm template` is a
//! process of its own, outside it. Flux's published figure for the same
//! shape is the reference to name beside it: 1,000 HelmReleases in 8 min
//! 12 s with 400 MiB, on other hardware.
//!
//! ```text
//! cargo bench -p pakket-helm --bench helmcharts [-- --charts 100,500,1000]
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_helm_api::HelmChart;
use serde_json::json;

#[tokio::main]
async fn main() {
    let mut counts = vec![100, 500];
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--charts", Some(list)) => {
                counts = list
                    .split(',')
                    .map(|n| n.parse().expect("--charts 100,500"))
                    .collect();
            }
            _ => panic!("usage: helmcharts [--charts 100,500,1000]"),
        }
    }
    let world = support::world("bench-helmcharts").await;
    world.charts.publish(&support::plain_chart("notes"));
    let chart = world.charts.chart_ref("notes", "1.0.0");
    let charts: Api<HelmChart> =
        Api::namespaced(world.scope.client.clone(), &world.scope.namespace);
    println!("{:<44} {}", "memory, start:", pakket_testkit::memory());
    println!(
        "{:>8} {:>14} {:>12} {:>14}",
        "charts", "all installed", "per second", "peak RSS MiB"
    );
    for count in counts {
        let started = Instant::now();
        for i in 0..count {
            let object: HelmChart = serde_json::from_value(json!({
                "apiVersion": "helm.pakket.dev/v1alpha1",
                "kind": "HelmChart",
                "metadata": { "name": format!("notes-{i}"), "labels": world.scope.labels() },
                "spec": { "chart": chart, "values": { "message": format!("chart {i}") } },
            }))
            .unwrap();
            charts
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
        }
        let mut peak = 0.0_f64;
        loop {
            peak = peak.max(rss_mib());
            let listed = charts.list(&ListParams::default()).await.unwrap().items;
            let installed = listed
                .iter()
                .filter(|c| {
                    c.status.as_ref().is_some_and(|s| {
                        s.conditions
                            .iter()
                            .any(|c| c.type_ == "Installed" && c.status == "True")
                    })
                })
                .count();
            if installed == count {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(1800),
                "{installed} of {count} installed after 30 min"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "{count:>8} {elapsed:>13.1}s {:>12.1} {peak:>14.0}",
            count as f64 / elapsed
        );
        charts
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .unwrap();
        while !charts
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
        {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    world.scope.cleanup().await;
}

/// This process's resident memory, MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}
