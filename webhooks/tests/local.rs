//! `pakket_webhooks::local` and `pakket-webhooks local` against the real
//! apiserver: what is registered (deploy/'s webhooks, pointed at loopback),
//! that "started" means "called", and that stopping (also by SIGTERM or
//! Ctrl-C, or by dropping) removes the registration.

mod support;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, PostParams};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use pakket_api::Instance;
use pakket_testkit::{Scope, cluster};
use pakket_webhooks::config::{self, Options};
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
use serde_json::json;
use support::{eventually, refusal};
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_pakket-webhooks");

/// An Instance of `scope` whose creator record is forged; `labelled`
/// decides whether the scope's webhooks select it.
fn forged_instance(scope: &Scope, suffix: &str, labelled: bool) -> Instance {
    let mut instance: Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": {
            "name": scope.name(suffix),
            "annotations": {(pakket_api::CREATED_BY_ANNOTATION): r#"{"username":"mallory"}"#},
        },
        "spec": {"class": scope.name("class"), "bundle": {"name": scope.name("bundle")}},
    }))
    .unwrap();
    if labelled {
        instance.metadata.labels = Some(scope.labels());
    }
    instance
}

/// The apiserver's answer to a dry-run create: `None` when accepted.
async fn dry_run_refusal(scope: &Scope, instance: &Instance) -> Option<String> {
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    refusal(
        Api::<Instance>::all(scope.client.clone())
            .create(&dry_run, instance)
            .await,
    )
}

async fn registered(scope: &Scope, name: &str) -> (bool, bool) {
    let validating = Api::<ValidatingWebhookConfiguration>::all(scope.client.clone())
        .get_opt(name)
        .await
        .unwrap();
    let mutating = Api::<MutatingWebhookConfiguration>::all(scope.client.clone())
        .get_opt(name)
        .await
        .unwrap();
    (validating.is_some(), mutating.is_some())
}

fn scope_selector(scope: &Scope) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: Some(scope.labels()),
        ..LabelSelector::default()
    })
}

#[tokio::test]
async fn local_webhooks_register_deploys_webhooks_at_loopback_and_are_removed_on_stop() {
    let scope = Scope::new("local-webhooks").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let webhooks = LocalWebhooks::start(
        scope.client.clone(),
        LocalOptions::for_labels(scope.id.clone(), scope.labels()),
    )
    .await
    .unwrap();
    let name = format!("pakket-webhooks-{}", scope.id);
    assert_eq!(webhooks.configuration_name(), name);
    let url = webhooks.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    // deploy/'s webhooks, differing only in where they point and what they select.
    let deployed = Options::deployed();
    let validating = Api::<ValidatingWebhookConfiguration>::all(scope.client.clone())
        .get(&name)
        .await
        .unwrap();
    let expected = config::validating(&deployed).webhooks.unwrap();
    let actual = validating.webhooks.unwrap();
    assert_eq!(actual.len(), expected.len());
    for (mut actual, mut expected) in actual.into_iter().zip(expected) {
        assert_eq!(
            actual.client_config.url,
            Some(format!("{url}/validate")),
            "{}",
            actual.name
        );
        assert_eq!(
            actual.client_config.ca_bundle.take().unwrap().0,
            webhooks.ca_pem().into_bytes()
        );
        // The scope's labels, beside what deploy/ selects itself (the
        // ConfigMap webhook's Bundle content label).
        let mut selected = scope_selector(&scope).unwrap();
        if let Some(own) = expected.object_selector.take() {
            selected
                .match_labels
                .get_or_insert_default()
                .extend(own.match_labels.unwrap_or_default());
        }
        assert_eq!(
            actual.object_selector.take(),
            Some(selected),
            "{}",
            actual.name
        );
        actual.client_config = Default::default();
        expected.client_config = Default::default();
        // The apiserver fills in an empty selector where none was given.
        if expected.namespace_selector.is_none() {
            actual.namespace_selector = None;
        }
        assert_eq!(actual, expected);
    }
    let mutating = Api::<MutatingWebhookConfiguration>::all(scope.client.clone())
        .get(&name)
        .await
        .unwrap();
    let expected = config::mutating(&deployed).webhooks.unwrap();
    let actual = mutating.webhooks.unwrap();
    assert_eq!(actual.len(), expected.len());
    for (mut actual, mut expected) in actual.into_iter().zip(expected) {
        assert_eq!(actual.client_config.url, Some(format!("{url}/mutate")));
        assert_eq!(actual.object_selector.take(), scope_selector(&scope));
        actual.client_config = Default::default();
        expected.client_config = Default::default();
        if expected.namespace_selector.is_none() {
            actual.namespace_selector = None;
        }
        assert_eq!(actual, expected);
    }
    assert_eq!(
        mutating.metadata.labels,
        Some(BTreeMap::from([(
            "app.kubernetes.io/managed-by".to_owned(),
            "pakket-webhooks-local".to_owned()
        )]))
    );

    // Started means called: the first labelled write is checked, no retry.
    let message = dry_run_refusal(&scope, &forged_instance(&scope, "forged", true))
        .await
        .expect("a forged creator record refused by the local webhook");
    assert!(message.contains("records who asks itself"), "{message}");
    // What the selector leaves out never reaches the server.
    let metrics = webhooks.metrics().unwrap().clone();
    let before = metrics.answered("mutate", "instances");
    assert_eq!(
        dry_run_refusal(&scope, &forged_instance(&scope, "outside", false)).await,
        None
    );
    assert_eq!(metrics.answered("mutate", "instances"), before);

    webhooks.stop().await.unwrap();
    assert_eq!(registered(&scope, &name).await, (false, false));
    // stop() returned only once the apiserver had let go of the webhooks.
    assert_eq!(
        dry_run_refusal(&scope, &forged_instance(&scope, "after", true)).await,
        None
    );
    scope.cleanup().await;
}

#[tokio::test]
async fn dropping_local_webhooks_removes_their_configurations() {
    let scope = Scope::new("local-webhooks-drop").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let webhooks = LocalWebhooks::start(
        scope.client.clone(),
        LocalOptions::for_labels(scope.id.clone(), scope.labels()),
    )
    .await
    .unwrap();
    let name = webhooks.configuration_name().to_owned();
    assert_eq!(registered(&scope, &name).await, (true, true));
    drop(webhooks);
    eventually(
        "the dropped webhooks' configurations being deleted",
        || async {
            match registered(&scope, &name).await {
                (false, false) => Ok(()),
                still => Err(format!("{still:?}")),
            }
        },
    )
    .await;
    scope.cleanup().await;
}

#[tokio::test]
async fn the_local_command_prints_where_it_serves_and_unregisters_on_sigterm_and_ctrl_c() {
    let scope = Scope::new("local-command").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let suffix = format!("{}-{}", scope.id, signal.as_str().to_lowercase());
        let name = format!("pakket-webhooks-{suffix}");
        let mut child = tokio::process::Command::new(BIN)
            .args([
                "local",
                "--context",
                "admin",
                "--name",
                &suffix,
                "--selector",
            ])
            .arg(scope.selector())
            .env("KUBECONFIG", cluster().kubeconfig())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // A guard against a hang, not a figure: start-up takes seconds.
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("no line from `pakket-webhooks local` within 120 s")
            .unwrap()
            .expect("`pakket-webhooks local` exited before it was ready");
        let port: u16 = line
            .strip_prefix("webhooks on https://127.0.0.1:")
            .and_then(|rest| rest.split_once(','))
            .and_then(|(port, _)| port.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {line}"));
        assert!(
            line.contains(&format!(
                ", registered as validatingwebhookconfiguration/{name} and mutatingwebhookconfiguration/{name}; record key in /"
            )),
            "{line}"
        );
        // The key it prints is the one a provisioner is given.
        let key_file = line.rsplit("record key in ").next().unwrap();
        pakket_api::RecordKey::read(std::path::Path::new(key_file)).expect("a usable record key");
        let validating = Api::<ValidatingWebhookConfiguration>::all(scope.client.clone())
            .get(&name)
            .await
            .unwrap();
        assert_eq!(
            validating.webhooks.unwrap()[0].client_config.url,
            Some(format!("https://127.0.0.1:{port}/validate"))
        );
        let message = dry_run_refusal(&scope, &forged_instance(&scope, "forged", true))
            .await
            .expect("refused by the webhook as soon as the line is printed");
        assert!(message.contains("records who asks itself"), "{message}");

        let pid = Pid::from_raw(child.id().unwrap().try_into().unwrap());
        nix::sys::signal::kill(pid, signal).unwrap();
        let status = child.wait().await.unwrap();
        assert!(status.success(), "{signal}: {status}");
        assert_eq!(registered(&scope, &name).await, (false, false), "{signal}");
        assert_eq!(lines.next_line().await.unwrap(), None, "one line only");
    }
    scope.cleanup().await;
}

#[test]
fn serve_refuses_to_start_without_a_usable_record_key() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "too-short\n").unwrap();
    let absent = dir.path().join("absent");
    let serve = |args: &[&std::ffi::OsStr]| {
        let output = std::process::Command::new(BIN)
            .arg("serve")
            .args(args)
            .env_remove("PAKKET_RECORD_KEY_FILE")
            // Never reached: the key is read before anything else.
            .env("KUBECONFIG", dir.path().join("no-kubeconfig"))
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} started");
        String::from_utf8(output.stderr).unwrap()
    };
    let missing_flag = serve(&[]);
    assert!(missing_flag.contains("--record-key-file"), "{missing_flag}");
    let too_short = serve(&["--record-key-file".as_ref(), short.as_os_str()]);
    assert!(
        too_short.contains(&format!(
            "record key file {} holds 9 bytes; it needs at least 32",
            short.display()
        )),
        "{too_short}"
    );
    let unreadable = serve(&["--record-key-file".as_ref(), absent.as_os_str()]);
    assert!(
        unreadable.contains(&format!("cannot read record key file {}", absent.display())),
        "{unreadable}"
    );
}
