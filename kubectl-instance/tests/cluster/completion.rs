//! Shell completion: `kubectl_complete-instance`, which kubectl (>= 1.26)
//! runs to complete `kubectl instance <TAB>`, answering in Cobra's format
//! from the real cluster; the pinned kubectl asking it; and the scripts of
//! `completion bash|zsh|fish`.

use std::path::Path;
use std::process::Output;

use pakket_testkit::{Scope, cluster, install_crds};

use crate::support::{BIN, create_instance};

/// The completion helper cargo built beside the plugin.
const HELPER: &str = env!("CARGO_BIN_EXE_kubectl_complete-instance");

/// Runs the helper with `words`, as kubectl does: the test cluster's
/// kubeconfig in `KUBECONFIG`.
async fn helper(words: &[&str]) -> Output {
    tokio::process::Command::new(HELPER)
        .args(words)
        .env("KUBECONFIG", cluster().kubeconfig())
        .output()
        .await
        .expect("running kubectl_complete-instance")
}

/// The candidates (their values, descriptions dropped) and the directive
/// line of a Cobra completion answer.
fn answer(stdout: &[u8]) -> (Vec<String>, String) {
    let text = String::from_utf8_lossy(stdout);
    let mut lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    let directive = lines.pop().unwrap_or_default().to_owned();
    let values = lines
        .into_iter()
        .map(|line| line.split('\t').next().unwrap_or_default().to_owned())
        .collect();
    (values, directive)
}

#[tokio::test]
async fn the_helper_completes_verbs_without_a_cluster() {
    let output = helper(&[""]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    let (values, directive) = answer(&output.stdout);
    for verb in [
        "list",
        "describe",
        "approve",
        "deny",
        "why",
        "history",
        "completion",
    ] {
        assert!(values.iter().any(|v| v == verb), "{verb} in {values:?}");
    }
    assert_eq!(directive, ":4", "no file names");
    let (values, _) = answer(&helper(&["list", "operators", "-o", ""]).await.stdout);
    assert_eq!(values, ["json", "yaml", "name"]);
}

#[tokio::test]
async fn the_helper_and_kubectl_complete_an_instance_name() {
    let scope = Scope::new("complete").await;
    install_crds(&scope.client).await.unwrap();
    let name = create_instance(&scope, "web", &scope.name("web-v1")).await;
    // What is typed: the scope's prefix, which only this test's names have.
    let typed = scope.name("w");

    let output = helper(&["approve", &typed]).await;
    assert!(output.status.success(), "{output:?}");
    let (values, directive) = answer(&output.stdout);
    assert_eq!(values, [name.as_str()]);
    assert_eq!(directive, ":4");
    // The cluster flags typed after `instance` choose the cluster.
    let flagged = helper(&[
        "--kubeconfig",
        &cluster().kubeconfig().display().to_string(),
        "--context",
        "admin",
        "describe",
        &typed,
    ])
    .await;
    assert_eq!(answer(&flagged.stdout).0, [name.as_str()]);

    // The real kubectl finds the helper on PATH and relays its answer.
    let dir = Path::new(HELPER).parent().expect("a directory");
    let path = match std::env::var_os("PATH") {
        Some(rest) => format!("{}:{}", dir.display(), rest.to_string_lossy()),
        None => dir.display().to_string(),
    };
    let typed_again = typed.clone();
    let kubectl = tokio::task::spawn_blocking(move || {
        cluster()
            .kubectl()
            .env("PATH", path)
            .args(["__complete", "instance", "approve", &typed_again])
            .output()
            .expect("running kubectl")
    })
    .await
    .unwrap();
    assert!(kubectl.status.success(), "{kubectl:?}");
    assert_eq!(
        answer(&kubectl.stdout),
        (values, directive),
        "kubectl's answer is the helper's: {kubectl:?}"
    );
    scope.cleanup().await;
}

#[tokio::test]
async fn a_cluster_that_cannot_be_read_completes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A kubeconfig whose server nothing listens on.
    let unreachable = dir.path().join("kubeconfig");
    std::fs::write(
        &unreachable,
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
         clusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: x, user: {token: t}}]\n\
         contexts: [{name: x, context: {cluster: x, user: x}}]\n",
    )
    .unwrap();
    let missing = dir.path().join("missing");
    for kubeconfig in [&unreachable, &missing] {
        let output = tokio::process::Command::new(HELPER)
            .args(["approve", ""])
            .env("KUBECONFIG", kubeconfig)
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            ":4\n",
            "{kubeconfig:?}"
        );
        assert!(
            output.stderr.is_empty(),
            "nothing on the terminal: {output:?}"
        );
    }
}

#[tokio::test]
async fn completion_prints_a_script_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let output = tokio::process::Command::new(BIN)
            .args(["completion", shell])
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.len() > 200, "{shell}: {script}");
        assert!(script.contains("kubectl-instance"), "{shell}: {script}");
        assert!(
            script.contains("approve"),
            "{shell} completes the verbs: {script}"
        );
    }
}
