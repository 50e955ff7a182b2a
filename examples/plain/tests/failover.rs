//! Two `pakket-plain` processes for one provisioner id, as two replicas of
//! a Deployment would run, on the real control plane: one leads and
//! installs; when it dies (SIGKILL, no chance to release its Lease) the
//! other takes over and installs what comes next. Prints how long that took.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use pakket_api::{
    BundleSpec, BundleTemplate, ConditionType, ConfigMapSource, Instance, InstanceSpec,
    ProvisionerClass, ProvisionerClassSpec, VolumeMount,
};
use pakket_testkit::probes;
use pakket_testkit::{Scope, cluster, condition_is, install_crds, wait_for_instance};
use tokio::process::{Child, Command};

/// One provisioner process and where its probes answer.
struct Replica {
    child: Child,
    probes: String,
}

impl Replica {
    async fn start(scope: &Scope, id: &str, n: usize) -> Self {
        let store = scope.path(&format!("failover-{n}"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_pakket-plain"));
        command
            .args(["--id", id, "--lease-namespace", &scope.namespace])
            // A crash (no release) waits the whole lease: 15 s rather than
            // the default 137 s keeps the test, and docs/figures.md, short.
            .args(["--lease-duration", "15"])
            .args(["--probe-address", "127.0.0.1:0", "--store"])
            .arg(&store)
            .env("KUBECONFIG", cluster().kubeconfig())
            .env("RUST_LOG", "warn");
        let (child, probes) = probes::spawn(command).await;
        Self { child, probes }
    }

    /// Whether `/metrics` says this replica leads.
    async fn leads(&self) -> bool {
        probes::get(&self.probes, "/metrics")
            .await
            .is_some_and(|text| probes::metric_total(&text, "pakket_is_leader") == 1.0)
    }
}

async fn instance(scope: &Scope, suffix: &str, content: &str) -> String {
    let name = scope.name(suffix);
    let instance = Instance {
        metadata: scope.meta(suffix),
        spec: InstanceSpec {
            class: scope.name("class"),
            selector: None,
            deletion_policy: Default::default(),
            config: None,
            bundle: BundleTemplate {
                name: scope.name(&format!("{suffix}-bundle")),
                spec: Some(BundleSpec {
                    class: scope.name("class"),
                    refs: vec!["file://content".into()],
                    volume_mounts: vec![VolumeMount {
                        mount_path: "/content".into(),
                        config_map: ConfigMapSource {
                            name: content.into(),
                            namespace: scope.namespace.clone(),
                        },
                    }],
                }),
            },
            progress_deadline: None,
            drift: None,
        },
        status: None,
    };
    Api::<Instance>::all(scope.client.clone())
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    name
}

async fn content(scope: &Scope, name: &str, object: &str) {
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}\n  namespace: {}\ndata:\n  value: v\n",
        scope.namespace
    );
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                pakket_api::BUNDLE_CONTENT_LABEL.into(),
                "true".into(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("object.yaml".into(), manifest)])),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_standby_replica_takes_over_when_the_leader_dies() {
    let scope = Scope::new("failover").await;
    install_crds(&scope.client).await.unwrap();
    let id = format!("test.pakket.dev/{}", scope.id);
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(
            &PostParams::default(),
            &ProvisionerClass {
                metadata: scope.meta("class"),
                spec: ProvisionerClassSpec {
                    provisioner: id.clone(),
                    parameters: None,
                },
                status: None,
            },
        )
        .await
        .unwrap();
    content(&scope, "before", "installed-before").await;
    content(&scope, "after", "installed-after").await;

    let mut replicas = vec![
        Replica::start(&scope, &id, 0).await,
        Replica::start(&scope, &id, 1).await,
    ];
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let first = instance(&scope, "first", "before").await;
    wait_for_instance(&instances, &first, "install by the leader", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let mut leaders = Vec::new();
    for (n, replica) in replicas.iter().enumerate() {
        if replica.leads().await {
            leaders.push(n);
        }
    }
    assert_eq!(leaders.len(), 1, "exactly one replica leads: {leaders:?}");
    let leader = leaders[0];

    // The leader dies without releasing its Lease.
    replicas[leader].child.kill().await.unwrap();
    let killed = Instant::now();
    let second = instance(&scope, "second", "after").await;
    wait_for_instance(&instances, &second, "install by the standby", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let standby = &replicas[1 - leader];
    assert!(standby.leads().await, "the standby leads now");
    println!(
        "leader killed → the standby installed the next Instance in {:.1?}",
        killed.elapsed()
    );

    // The new leader also cleans up (the finalizer is the provisioner's).
    for name in [&first, &second] {
        instances
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    for name in [&first, &second] {
        for _ in 0..300 {
            if instances.get_opt(name).await.unwrap().is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            instances.get_opt(name).await.unwrap().is_none(),
            "{name} deleted"
        );
    }
    drop(replicas);
    scope.cleanup().await;
}
