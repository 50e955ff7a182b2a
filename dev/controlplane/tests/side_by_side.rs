//! Two control planes on one machine do not collide, and `stop` leaves
//! nothing running.

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client};
use pakket_controlplane::{ADMIN_CONTEXT, ControlPlane, Options};

fn options(name: &str) -> Options {
    Options {
        dir: std::env::temp_dir()
            .join(format!("pakket-side-by-side-{}-{name}", std::process::id())),
        stop_with_this_process: true,
        nodes: 0,
        real_node: false,
    }
}

fn namespaces(client: Client) -> Api<Namespace> {
    Api::all(client)
}

#[tokio::test]
async fn two_control_planes_run_side_by_side_and_stop_cleanly() {
    let (first, second) = tokio::join!(
        ControlPlane::start(options("a")),
        ControlPlane::start(options("b"))
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_ne!(first.state().server, second.state().server);

    // Each holds its own data: a namespace made in one is absent in the other.
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("only-in-first".into());
    let first_client = first.client(ADMIN_CONTEXT).await.unwrap();
    let second_client = second.client(ADMIN_CONTEXT).await.unwrap();
    namespaces(first_client)
        .create(&Default::default(), &namespace)
        .await
        .unwrap();
    let elsewhere = namespaces(second_client)
        .get_opt("only-in-first")
        .await
        .unwrap();
    assert!(elsewhere.is_none());

    let pids: Vec<u32> = [&first, &second]
        .iter()
        .flat_map(|control_plane| {
            control_plane
                .state()
                .components
                .iter()
                .map(|component| component.pid)
        })
        .collect();
    let dirs = [first.state().dir.clone(), second.state().dir.clone()];
    first.stop(true).unwrap();
    second.stop(true).unwrap();
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} still runs after stop"
        );
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}

/// Stops the control plane in `dir` through `pakket-dev down` when
/// dropped, so a failing test leaves nothing running (a no-op once gone).
struct DownOnDrop(std::path::PathBuf);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        let _ = pakket_dev(&self.0, &["down"]);
    }
}

fn pakket_dev(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pakket-dev"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("pakket-dev runs")
}

#[tokio::test]
async fn stopping_a_control_plane_stops_one_whose_folder_is_inside_its_own() {
    let outer = ControlPlane::start(options("outer")).await.unwrap();
    let dir = outer.state().dir.clone();
    // The inner one as dev/test.sh starts its second: by `pakket-dev up`,
    // another process, so it is known here only by its folder.
    let inner_dir = dir.join("second");
    let _down = DownOnDrop(inner_dir.clone());
    let up = pakket_dev(&inner_dir, &["up", "--nodes", "0"]);
    assert!(
        up.status.success(),
        "pakket-dev up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let inner = ControlPlane::attach(&inner_dir)
        .unwrap()
        .expect("the inner control plane runs");
    let inner_pids: Vec<u32> = inner
        .state()
        .components
        .iter()
        .map(|component| component.pid)
        .collect();
    assert!(!inner_pids.is_empty());
    drop(inner);

    outer.stop(true).unwrap();
    for pid in inner_pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} of the inner control plane still runs after the outer stopped"
        );
    }
    assert!(!dir.exists(), "{} left behind", dir.display());
}
