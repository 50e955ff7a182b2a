//! An apply cut short by a SIGKILL, then the Instance deleted while the
//! provisioner is down: when it comes back, nothing the Instance applied
//! is left behind (issue 11). The runtime finds what the killed apply had
//! written from the Bundle's list of objects and each object's own
//! ownership records, not from the Instance's status, which the killed
//! apply never reached. While it runs, the Instance says how far the
//! apply has come.

#[path = "trust/shipped.rs"]
#[allow(dead_code)]
mod shipped;
#[path = "trust/support.rs"]
#[allow(dead_code)]
mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use pakket_api::ConditionType;
use pakket_api::ownership::INSTANCE_LABEL;
use pakket_testkit::eventually;

use support::{Stage, Webhooks};

/// Objects in the bundle: enough that the kill lands mid-apply, and that
/// the apply runs long enough to report progress.
const OBJECTS: usize = 3_000;

#[tokio::test]
async fn a_sigkill_mid_apply_then_a_delete_leaves_nothing_behind() {
    let mut stage = Stage::new("interrupted", "AllowAll", Webhooks::On).await;
    let manifests: Vec<String> = (0..OBJECTS)
        .map(|i| stage.config_map_manifest(&format!("part-{i:04}"), "v"))
        .collect();
    stage
        .content("content", &[("all.yaml", manifests.join("---\n"))])
        .await;
    stage
        .create(&stage.admin(), stage.instance("big", "big-v1", "content"))
        .await
        .unwrap();
    let name = stage.scope.name("big");
    let config_maps: Api<ConfigMap> = Api::namespaced(stage.admin(), stage.namespace());
    let mine = ListParams::default().labels(&format!("{INSTANCE_LABEL}={name}"));
    let applied = || async { config_maps.list_metadata(&mine).await.unwrap().items.len() };
    // The apply reports how far it has come while it runs.
    let counted = format!("/{OBJECTS} objects");
    let mut progress = None;
    for _ in 0..600 {
        let instance = stage.instances().get(&name).await.unwrap();
        progress = instance
            .condition(ConditionType::Installed)
            .filter(|c| c.reason == "Installing" && c.message.contains(": applied "))
            .map(|c| c.message.clone())
            .filter(|message| message.contains(&counted));
        if progress.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let progress = progress.expect("Installed says how far the apply has come within 60 s");
    println!("progress: {progress}");
    stage.kill_provisioner(false).await;
    let left = applied().await;
    println!("killed with {left} of {OBJECTS} objects applied");
    assert!(
        left > 0 && left < OBJECTS,
        "the kill landed mid-apply ({left} applied)"
    );

    stage
        .instances()
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    stage.start_provisioner().await;
    eventually("the Instance is gone", || async {
        stage.instances().get_opt(&name).await.unwrap().is_none()
    })
    .await;
    assert_eq!(applied().await, 0, "nothing the killed apply wrote is left");
    stage.cleanup().await;
}
