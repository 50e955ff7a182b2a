//! Inputs on the real control plane: the Input controller of the
//! resolveset process (run in this test process) resolves every Input of
//! the test's scope together against Catalogs served from immutable
//! ConfigMaps, writes each Input's status, and writes the set as
//! `resolved.bundles.json` in an immutable ConfigMap named after its
//! digest, with the resolveset Instance pointing at it.
//!
//! Data (unedited, see ../shared/data/README.md):
//! - `fbc/community-operators-prod-v4.20/rabbitmq-messaging-topology-operator/catalog.yaml`:
//!   verbatim from redhat-openshift-ecosystem/community-operators-prod at
//!   699495f2 (its bundles need package rabbitmq-cluster-operator >2.0.0);
//! - `fbc/community-operators-prod-derived/catalog.json` (DERIVED from the
//!   same repository and commit): the documents of package
//!   rabbitmq-cluster-operator, selected by their `package`/`name` fields.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_resolveset::inputs::input::{InputClassParameters, InputConstraint};
use pakket_resolveset::set::resolved_set::{self, Entry};
use pakket_resolveset::{Input, InputClass, InputClassSpec, InputSpec};
use pakket_testkit::{Scope, data, eventually};
use serde_json::{Value, json};

const TOPOLOGY: &str = "rabbitmq-messaging-topology-operator";
const CLUSTER_OPERATOR: &str = "rabbitmq-cluster-operator";

async fn input_class(scope: &Scope, suffix: &str, dry_run: bool) -> String {
    let mut class = InputClass::new(
        &scope.name(suffix),
        InputClassSpec {
            parameters: InputClassParameters {
                dry_run,
                // Dependencies stay plain dependencies here (a generated
                // Input would keep the cluster operator from being planned
                // at an older version below); install.rs covers them.
                generate_inputs_for_dependencies: false,
                ..InputClassParameters::default()
            },
        },
    );
    class.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    scope.name(suffix)
}

async fn input(scope: &Scope, suffix: &str, class: &str, constraints: Value) -> String {
    let constraints: Vec<InputConstraint> = serde_json::from_value(constraints).unwrap();
    let mut input = Input::new(
        &scope.name(suffix),
        InputSpec {
            config: None,
            input_class: class.to_owned(),
            constraints,
        },
    );
    input.metadata.labels = Some(scope.labels());
    Api::<Input>::all(scope.client.clone())
        .create(&PostParams::default(), &input)
        .await
        .unwrap();
    scope.name(suffix)
}

/// Waits until Input `name`'s ResolutionFailed condition has `reason`.
async fn resolved_as(scope: &Scope, name: &str, reason: &str) -> Input {
    let api: Api<Input> = Api::all(scope.client.clone());
    let mut last = None;
    for _ in 0..600 {
        let input = api.get(name).await.unwrap();
        if input
            .condition("ResolutionFailed")
            .is_some_and(|c| c.reason == reason)
        {
            return input;
        }
        last = input.status;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("Input {name} not {reason} within 60 s: {last:#?}");
}

/// The set as the resolveset Instance points at it: the ConfigMap's name
/// and its entries.
///
/// The controller deletes an old set's ConfigMap once the Instance names
/// a newer one, so a ConfigMap that is gone between the two reads means
/// the Instance moved on: it is read again.
async fn current_set(scope: &Scope) -> Option<(String, Vec<Entry>, ConfigMap)> {
    let config_maps = Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace);
    let mut gone = Vec::new();
    for _ in 0..50 {
        let instance = Api::<pakket_api::Instance>::all(scope.client.clone())
            .get_opt(&scope.name("resolveset"))
            .await
            .unwrap()?;
        let spec = instance.spec.bundle.spec.clone().unwrap();
        assert_eq!(spec.class, scope.name("resolveset"));
        let mount = &spec.volume_mounts[0];
        assert_eq!(mount.config_map.name, instance.spec.bundle.name);
        let Some(config_map) = config_maps.get_opt(&mount.config_map.name).await.unwrap() else {
            gone.push(mount.config_map.name.clone());
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let text = config_map.data.as_ref().unwrap()[resolved_set::FILE].clone();
        let entries = resolved_set::from_bytes(text.as_bytes()).unwrap();
        return Some((mount.config_map.name.clone(), entries, config_map));
    }
    panic!("the resolveset Instance kept naming ConfigMaps that do not exist: {gone:?}");
}

#[tokio::test]
async fn inputs_resolve_together_into_one_set_and_each_says_what_it_got_and_why() {
    let scope = Scope::new("resolveset-inputs").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    support::serve_files(
        &scope,
        "topology",
        BTreeMap::from([(
            format!("{TOPOLOGY}.yaml"),
            std::fs::read_to_string(data(&format!(
                "fbc/community-operators-prod-v4.20/{TOPOLOGY}/catalog.yaml"
            )))
            .unwrap(),
        )]),
    )
    .await;
    support::serve_files(
        &scope,
        "cluster-op",
        BTreeMap::from([(
            format!("{CLUSTER_OPERATOR}.json"),
            pakket_testkit::derived_package(CLUSTER_OPERATOR),
        )]),
    )
    .await;
    for suffix in ["topology", "cluster-op"] {
        support::wait_for(&scope.client, &scope.name(suffix), "serving", |c| {
            c.condition(pakket_resolveset::ConditionType::Serving)
                .is_some_and(|c| c.status == "True")
        })
        .await;
    }
    let subscription = input_class(&scope, "subscription", false).await;
    let dry_run = input_class(&scope, "dry-run", true).await;

    // The topology operator from its catalog, pinned: it brings the
    // cluster operator in as a dependency.
    let topology = input(
        &scope,
        "topology",
        &subscription,
        json!([
            {"type": "olm.catalog", "value": {"name": scope.name("topology"), "package": TOPOLOGY, "channel": "stable"}},
            {"type": "olm.packageVersion", "value": {"package": TOPOLOGY, "version": "1.15.0"}},
        ]),
    )
    .await;
    let resolved = resolved_as(&scope, &topology, "Resolved").await;
    let status = resolved.status.clone().unwrap();
    let chosen: Vec<(&str, &str)> = status
        .instances
        .iter()
        .map(|i| (i.package.as_str(), i.version.as_str()))
        .collect();
    assert_eq!(chosen[0], (TOPOLOGY, "1.15.0"));
    assert_eq!(chosen[1].0, CLUSTER_OPERATOR);
    let own = &status.instances[0];
    assert_eq!(own.satisfies[0].kind, "Input");
    assert_eq!(own.satisfies[0].name, topology);
    assert_eq!(
        own.dependencies[0].name,
        format!("{}-{CLUSTER_OPERATOR}", scope.name("resolveset"))
    );
    assert!(
        own.dependencies[0].meets[0].contains(CLUSTER_OPERATOR),
        "{:?}",
        own.dependencies
    );
    let dependency = &status.instances[1];
    assert_eq!(
        dependency.satisfies[0].name,
        format!("{}-{TOPOLOGY}", scope.name("resolveset"))
    );
    assert_eq!(dependency.catalog, scope.name("cluster-op"));
    assert!(!status.dry_run);
    let missing = resolved.condition("DependenciesMissing").unwrap();
    assert_eq!(missing.status, "False");

    // The set: both bundles, with images from the catalogs and who needs
    // them, in an immutable ConfigMap the Instance mounts.
    let (set_name, entries, config_map) = current_set(&scope).await.expect("the set is written");
    assert_eq!(config_map.immutable, Some(true));
    let packages: Vec<&str> = entries.iter().map(|e| e.package_name.as_str()).collect();
    assert_eq!(packages, [CLUSTER_OPERATOR, TOPOLOGY]);
    let topology_entry = &entries[1];
    assert_eq!(topology_entry.version, "1.15.0");
    assert!(
        topology_entry.image.contains("rabbitmq"),
        "{topology_entry:?}"
    );
    let needed_by = |entry: &Entry| {
        entry
            .properties
            .iter()
            .find(|p| p["type"] == "pakket.dev/neededBy")
            .map(|p| p["value"].clone())
    };
    assert_eq!(
        needed_by(topology_entry),
        Some(json!([format!("Input {topology}")]))
    );
    assert_eq!(
        needed_by(&entries[0]),
        Some(json!([format!(
            "Instance {}-{TOPOLOGY}",
            scope.name("resolveset")
        )]))
    );
    let text = config_map.data.as_ref().unwrap()[resolved_set::FILE].clone();
    assert_eq!(
        resolved_set::config_map_name(text.as_bytes()),
        set_name,
        "the ConfigMap is named after its bytes"
    );

    // A dry run that conflicts with the set (the cluster operator at 2.0.0,
    // which the topology operator's >2.0.0 rules out) explains why, and
    // the set stays as it was.
    let planned = input(
        &scope,
        "plan",
        &dry_run,
        json!([{"type": "olm.packageVersion", "value": {"package": CLUSTER_OPERATOR, "version": "2.0.0"}}]),
    )
    .await;
    let refused = resolved_as(&scope, &planned, "Unsatisfiable").await;
    let message = &refused.condition("ResolutionFailed").unwrap().message;
    assert!(
        message.contains(CLUSTER_OPERATOR) && message.contains(TOPOLOGY),
        "the chain names both: {message}"
    );
    assert!(refused.status.unwrap().dry_run);
    // A dry run that fits shows its plan.
    let fits = input(
        &scope,
        "fits",
        &dry_run,
        json!([{"type": "olm.name", "value": "rabbitmq-cluster-operator.v2.17.2"}]),
    )
    .await;
    let fits = resolved_as(&scope, &fits, "Resolved").await;
    assert!(
        fits.condition("ResolutionFailed")
            .unwrap()
            .message
            .starts_with("would install rabbitmq-cluster-operator 2.17.2")
    );

    // The same conflict as a real Input, named to sort before the one in
    // the set: the name is the writer's choice and decides nothing. Nothing
    // is installed here (no provisioner runs the set), so neither request
    // is: both wait, each told a conflicting request exists (by UID, not
    // by name or what it asks for), and the set holds neither.
    let newcomer = input(
        &scope,
        "a",
        &subscription,
        json!([{"type": "olm.packageVersion", "value": {"package": CLUSTER_OPERATOR, "version": "2.0.0"}}]),
    )
    .await;
    assert!(newcomer < topology, "{newcomer} sorts before {topology}");
    let refused = resolved_as(&scope, &newcomer, "ConflictWaitsForDecision").await;
    let message = refused
        .condition("ResolutionFailed")
        .unwrap()
        .message
        .clone();
    assert!(!message.contains(TOPOLOGY), "{message}");
    let status = refused.status.unwrap();
    assert!(status.instances.is_empty());
    let waits = resolved_as(&scope, &topology, "ConflictWaitsForDecision").await;
    let conflict = status.conflict.expect("the conflict is recorded");
    assert_eq!(conflict.standing, "Waiting");
    assert_eq!(conflict.with, [waits.metadata.uid.clone().unwrap()]);
    eventually("the set holds neither", || async {
        let (_, entries, _) = current_set(&scope).await.unwrap();
        entries.iter().all(|e| e.package_name != TOPOLOGY)
    })
    .await;
    Api::<Input>::all(scope.client.clone())
        .delete(&newcomer, &Default::default())
        .await
        .unwrap();
    // Alone again, it resolves as before.
    let back = resolved_as(&scope, &topology, "Resolved").await;
    assert_eq!(back.status.unwrap().instances[0].version, "1.15.0");

    // Mistakes name the field; an Input nothing can satisfy says why; the
    // set keeps what resolved.
    let invalid = input(
        &scope,
        "invalid",
        &subscription,
        json!([{"type": "olm.catalog", "value": {"name": "x"}}]),
    )
    .await;
    let invalid = resolved_as(&scope, &invalid, "InvalidInput").await;
    assert_eq!(
        invalid.condition("ResolutionFailed").unwrap().message,
        "spec.constraints[0].value.package: is required"
    );
    let nowhere = input(
        &scope,
        "nowhere",
        &subscription,
        json!([{"type": "olm.packageVersion", "value": {"package": "no-such-operator", "version": ">=1.0.0"}}]),
    )
    .await;
    resolved_as(&scope, &nowhere, "Unsatisfiable").await;
    let missing_class = input(
        &scope,
        "classless",
        &scope.name("no-such-class"),
        json!([{"type": "olm.name", "value": "x"}]),
    )
    .await;
    let classless = resolved_as(&scope, &missing_class, "InvalidInput").await;
    assert!(
        classless
            .condition("ResolutionFailed")
            .unwrap()
            .message
            .starts_with("spec.inputClass: InputClass")
    );
    let (same_name, _, _) = current_set(&scope).await.unwrap();
    assert_eq!(
        same_name, set_name,
        "dry runs and failures leave the set alone"
    );

    // Widening the pin moves the topology operator up; the new set says
    // which bundle it pivots from.
    Api::<Input>::all(scope.client.clone())
        .patch(
            &topology,
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "resolve.pakket.dev/v1alpha1",
                "kind": "Input",
                "spec": {
                    "inputClass": subscription,
                    "constraints": [
                        {"type": "olm.catalog", "value": {"name": scope.name("topology"), "package": TOPOLOGY, "channel": "stable"}},
                        {"type": "olm.packageVersion", "value": {"package": TOPOLOGY, "version": ">=1.15.0"}},
                    ],
                },
            })),
        )
        .await
        .unwrap();
    eventually("a new set with the newer topology operator", || async {
        current_set(&scope).await.is_some_and(|(name, entries, _)| {
            name != set_name
                && entries.iter().any(|e| {
                    e.package_name == TOPOLOGY
                        && e.version != "1.15.0"
                        && e.properties.iter().any(|p| {
                            p["type"] == "pivotFrom"
                                && p["value"] == "rabbitmq-messaging-topology-operator.v1.15.0"
                        })
                })
        })
    })
    .await;
    // The old set's ConfigMap goes; the one the Instance names stays.
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    eventually("the old set's ConfigMap is deleted", || async {
        config_maps.get_opt(&set_name).await.unwrap().is_none()
    })
    .await;
    let (current, _, _) = current_set(&scope).await.unwrap();
    assert!(config_maps.get_opt(&current).await.unwrap().is_some());

    // Dependents go first. The topology operator's child Instance is still
    // being uninstalled (here: an Instance of that name held by a
    // finalizer, as a provisioner holds one while it removes objects) when
    // its Input goes: the cluster operator it needs stays in the set,
    // saying what it waits for, and leaves once that Instance is gone.
    let child = format!("{}-{TOPOLOGY}", scope.name("resolveset"));
    let instances: Api<pakket_api::Instance> = Api::all(scope.client.clone());
    let standing_in: pakket_api::Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": child, "labels": scope.labels(), "finalizers": ["test.pakket.dev/uninstalling"] },
        "spec": { "class": scope.name("nobody"), "bundle": { "name": "x", "spec": { "class": scope.name("nobody"), "refs": ["docker://example.com/x:1"] } } },
    }))
    .unwrap();
    instances
        .create(&PostParams::default(), &standing_in)
        .await
        .unwrap();
    instances.delete(&child, &Default::default()).await.unwrap();
    Api::<Input>::all(scope.client.clone())
        .delete(&topology, &Default::default())
        .await
        .unwrap();
    eventually(
        "the topology operator leaves, the cluster operator is held back",
        || async {
            current_set(&scope).await.is_some_and(|(_, entries, _)| {
                entries.len() == 1
                    && entries[0].package_name == CLUSTER_OPERATOR
                    && entries[0].properties.contains(&json!({
                        "type": pakket_resolveset::set::held_back::HELD_BACK_FOR,
                        "value": [child],
                    }))
            })
        },
    )
    .await;
    instances
        .patch(
            &child,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
        )
        .await
        .unwrap();
    eventually(
        "the cluster operator leaves once its dependent is gone",
        || async {
            current_set(&scope)
                .await
                .is_some_and(|(_, entries, _)| entries.is_empty())
        },
    )
    .await;

    // Nor does it leave while an Instance outside the set requires it (as
    // that Instance's provisioner recorded: here written by the test, on
    // an Instance of a class nobody serves).
    let topology = input(
        &scope,
        "topology",
        &subscription,
        json!([
            {"type": "olm.catalog", "value": {"name": scope.name("topology"), "package": TOPOLOGY, "channel": "stable"}},
        ]),
    )
    .await;
    eventually("both are in the set again", || async {
        current_set(&scope)
            .await
            .is_some_and(|(_, entries, _)| entries.len() == 2)
    })
    .await;
    let outside = scope.name("app");
    let app: pakket_api::Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": outside, "labels": scope.labels() },
        "spec": { "class": scope.name("nobody"), "bundle": { "name": "app", "spec": { "class": scope.name("nobody"), "refs": ["docker://example.com/app:1"] } } },
    }))
    .unwrap();
    instances
        .create(&PostParams::default(), &app)
        .await
        .unwrap();
    instances
        .patch_status(
            &outside,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "embeddedBundle": {
                "name": "app",
                "properties": [{"type": "olm.package.required", "value": {"packageName": CLUSTER_OPERATOR, "versionRange": ">=2.0.0"}}],
            } } })),
        )
        .await
        .unwrap();
    Api::<Input>::all(scope.client.clone())
        .delete(&topology, &Default::default())
        .await
        .unwrap();
    eventually(
        "the topology operator leaves; the cluster operator stays for the app",
        || async {
            current_set(&scope).await.is_some_and(|(_, entries, _)| {
                entries.len() == 1
                    && entries[0].package_name == CLUSTER_OPERATOR
                    && entries[0].properties.contains(&json!({
                        "type": pakket_resolveset::set::held_back::HELD_BACK_FOR,
                        "value": [outside],
                    }))
            })
        },
    )
    .await;
    // Its deletion wakes the controller.
    instances
        .delete(&outside, &Default::default())
        .await
        .unwrap();
    eventually(
        "the cluster operator leaves once the app is gone",
        || async {
            current_set(&scope)
                .await
                .is_some_and(|(_, entries, _)| entries.is_empty())
        },
    )
    .await;
    // A cel constraint narrows the Input to the bundles whose properties
    // pass: here the topology operator whose olm.package says 1.16.0 (the
    // newest would be chosen without it).
    let by_rule = input(
        &scope,
        "by-rule",
        &dry_run,
        json!([
            {"type": "olm.catalog", "value": {"name": scope.name("topology"), "package": TOPOLOGY, "channel": "stable"}},
            {"type": "cel", "value": "properties.exists(p, p.type == 'olm.package' && p.value.version == '1.16.0')"},
        ]),
    )
    .await;
    let by_rule = resolved_as(&scope, &by_rule, "Resolved").await;
    let planned = &by_rule.status.as_ref().unwrap().instances;
    assert!(
        planned
            .iter()
            .any(|i| i.package == TOPOLOGY && i.version == "1.16.0"),
        "{planned:?}"
    );

    support::cleanup(scope).await;
}

/// Data: the derived catalog's etcd documents (see the file's head),
/// served twice, as two Catalogs of the same priority.
#[tokio::test]
async fn a_package_two_catalogs_offer_at_the_same_priority_is_refused_until_one_is_chosen() {
    let scope = Scope::new("resolveset-ambiguous").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    for suffix in ["etcd-a", "etcd-b"] {
        support::serve_until_serving(
            &scope,
            suffix,
            BTreeMap::from([(
                "catalog.json".to_owned(),
                pakket_testkit::derived_package("etcd"),
            )]),
        )
        .await;
    }
    let subscription = input_class(&scope, "subscription", false).await;
    let (a, b) = (scope.name("etcd-a"), scope.name("etcd-b"));

    // No catalog named: refused, naming both and how to choose.
    let unnamed = input(
        &scope,
        "unnamed",
        &subscription,
        json!([{"type": "olm.packageVersion", "value": {"package": "etcd", "version": ">=0.9.0"}}]),
    )
    .await;
    let refused = resolved_as(&scope, &unnamed, "InvalidInput").await;
    let message = refused
        .condition("ResolutionFailed")
        .unwrap()
        .message
        .clone();
    assert!(
        message.contains(&format!("Catalogs {a} and {b}")),
        "{message}"
    );
    assert!(
        message.contains("olm.catalog") && message.contains("spec.priority"),
        "{message}"
    );
    assert!(refused.status.unwrap().instances.is_empty());

    // One catalog named: resolved from it.
    let named = input(
        &scope,
        "named",
        &subscription,
        json!([{"type": "olm.catalog", "value": {"name": b, "package": "etcd", "channel": "singlenamespace-alpha"}}]),
    )
    .await;
    let resolved = resolved_as(&scope, &named, "Resolved").await;
    assert_eq!(resolved.status.unwrap().instances[0].catalog, b);

    // A higher priority for one: the unnamed Input resolves from it (the
    // named one goes first, so the set holds no etcd from the other).
    Api::<Input>::all(scope.client.clone())
        .delete(&named, &Default::default())
        .await
        .unwrap();
    Api::<pakket_resolveset::Catalog>::all(scope.client.clone())
        .patch(
            &a,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"priority": 10}})),
        )
        .await
        .unwrap();
    eventually(
        "the unnamed Input resolved from the preferred catalog",
        || async {
            Api::<Input>::all(scope.client.clone())
                .get(&unnamed)
                .await
                .unwrap()
                .status
                .is_some_and(|status| {
                    !status.instances.is_empty() && status.instances.iter().all(|i| i.catalog == a)
                })
        },
    )
    .await;
    support::cleanup(scope).await;
}

/// After an upgrade from a resolveset that wrote its sets without the
/// Bundle content label, the set its Instance mounts is labelled by the
/// next pass: the runtime reads no unlabelled ConfigMap, and a pass that
/// resolves to the same bytes would otherwise find the set already written
/// and leave it unreadable.
///
/// Data: the derived catalog's etcd documents (see the file's head).
#[tokio::test]
async fn a_set_written_before_the_content_label_is_labelled_by_the_next_pass() {
    let scope = Scope::new("resolveset-relabel").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    support::serve_until_serving(
        &scope,
        "etcd",
        BTreeMap::from([(
            "catalog.json".to_owned(),
            pakket_testkit::derived_package("etcd"),
        )]),
    )
    .await;
    let subscription = input_class(&scope, "subscription", false).await;
    let etcd = input(
        &scope,
        "etcd",
        &subscription,
        json!([{"type": "olm.catalog", "value": {"name": scope.name("etcd"), "package": "etcd", "channel": "singlenamespace-alpha"}}]),
    )
    .await;
    resolved_as(&scope, &etcd, "Resolved").await;
    let (set_name, _, written) = current_set(&scope).await.expect("the set is written");
    let is_content = |config_map: &ConfigMap| {
        config_map
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(pakket_api::BUNDLE_CONTENT_LABEL))
            .is_some_and(|value| value == "true")
    };
    assert!(is_content(&written), "{:?}", written.metadata.labels);

    // The set as a resolveset before the label left it (no webhooks run
    // here to refuse taking the label off mounted content).
    let config_maps = Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace);
    let unlabel = json!({"metadata": {"labels": {pakket_api::BUNDLE_CONTENT_LABEL: null}}});
    let old = config_maps
        .patch(&set_name, &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    assert!(!is_content(&old));

    // Any change to an InputClass wakes a pass.
    let touch = json!({"metadata": {"labels": {"test.pakket.dev/touched": "1"}}});
    Api::<InputClass>::all(scope.client.clone())
        .patch(
            &subscription,
            &PatchParams::default(),
            &Patch::Merge(&touch),
        )
        .await
        .unwrap();
    eventually("the set labelled again", || async {
        is_content(&config_maps.get(&set_name).await.unwrap())
    })
    .await;
    let last = config_maps.get(&set_name).await.unwrap();
    // The same ConfigMap, labelled, not another one written beside it.
    assert_eq!(last.metadata.uid, written.metadata.uid);
    assert_eq!(last.data, written.data);

    support::cleanup(scope).await;
}
