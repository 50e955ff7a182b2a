//! `kubectl instance ...` through kubectl's own plugin mechanism: the
//! pinned kubectl finds `kubectl-instance` on PATH.

use std::path::Path;

use pakket_testkit::{Scope, install_crds};

use crate::support::{BIN, create_instance};

#[tokio::test]
async fn kubectl_runs_the_plugin_from_path() {
    let scope = Scope::new("plugin").await;
    install_crds(&scope.client).await.unwrap();
    let name = create_instance(&scope, "web", &scope.name("web-v1")).await;
    let dir = Path::new(BIN)
        .parent()
        .expect("the binary is in a directory");
    let path = match std::env::var_os("PATH") {
        Some(rest) => format!("{}:{}", dir.display(), rest.to_string_lossy()),
        None => dir.display().to_string(),
    };
    let selector = scope.selector();
    let output = tokio::task::spawn_blocking(move || {
        pakket_testkit::cluster()
            .kubectl()
            .env("PATH", path)
            .args(["instance", "list", "-l", &selector])
            .output()
            .expect("running kubectl")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.starts_with("NAME "), "{stdout}");
    assert!(
        stdout
            .lines()
            .nth(1)
            .is_some_and(|row| row.starts_with(&format!("{name} "))),
        "{stdout}"
    );
    scope.cleanup().await;
}
