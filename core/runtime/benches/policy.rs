//! How long an `ApprovalPolicy` takes to decide, per Instance: 20 rules,
//! the last one matching (every rule evaluated), over content of 40 and
//! of 2,000 objects; and what the cost limit does to a rule that nests
//! macros over many objects (refused before it runs).
//!
//! `cargo bench -p pakket-runtime --bench policy [-- ROUNDS]` prints the
//! figures (no pass or fail: timing is never a test).

use std::time::{Duration, Instant};

use pakket_api::{ApprovalRule, BundleProperty, RuleOutcome};
use pakket_runtime::kernel::trust::policy::{
    BundleInputs, Inputs, InstanceInputs, ObjectInput, Requester, RightsInputs, decide,
};
use serde_json::json;

fn inputs(objects: usize) -> Inputs {
    Inputs {
        requester: Requester {
            name: "alice".into(),
            groups: vec!["team-a".into(), "system:authenticated".into()],
        },
        bundle: BundleInputs {
            name: "etcd-v0.9.4".into(),
            digest: "sha256:00".into(),
            refs: vec!["docker://quay.io/operatorhubio/etcd@sha256:00".into()],
            properties: vec![BundleProperty {
                type_: "olm.package".into(),
                value: json!({"packageName": "etcd", "version": "0.9.4"}),
            }],
            ..BundleInputs::default()
        },
        rights: RightsInputs {
            all: (0..20)
                .map(|n| format!("the rule get r{n} in namespace team-a"))
                .collect(),
            new: vec![],
        },
        objects: (0..objects)
            .map(|n| ObjectInput {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: "team-a".into(),
                name: format!("c{n}"),
            })
            .collect(),
        effects: Default::default(),
        instance: InstanceInputs {
            name: "etcd".into(),
            class: "operators".into(),
            config: json!({"installNamespace": "team-a"}),
        },
        user_permission: Some(false),
        requester_owns: None,
    }
    .with_package_from_properties()
}

/// 19 rules that do not match (each a realistic allow-list entry, one
/// macro over the objects), then one that does.
fn twenty_rules() -> Vec<ApprovalRule> {
    let mut rules: Vec<ApprovalRule> = (0..19)
        .map(|n| ApprovalRule {
            name: Some(format!("team-{n}")),
            cel: format!(
                "'team-{n}' in requester.groups && bundle.package == 'pkg-{n}' && objects.all(o, o.namespace == 'team-{n}')"
            ),
            outcome: RuleOutcome::Approve,
            message: String::new(),
        })
        .collect();
    rules.push(ApprovalRule {
        name: Some("team-a-etcd".into()),
        cel: "'team-a' in requester.groups && bundle.package == 'etcd' && bundle.version.startsWith('0.9.') && objects.all(o, o.namespace == 'team-a') && noNewRights()".into(),
        outcome: RuleOutcome::Approve,
        message: String::new(),
    });
    rules
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn measure(what: &str, rules: &[ApprovalRule], inputs: &Inputs, rounds: usize) {
    let mut times = Vec::with_capacity(rounds);
    let mut outcome = None;
    for _ in 0..rounds {
        let began = Instant::now();
        let decided = decide(rules, inputs);
        times.push(began.elapsed());
        outcome = Some(decided);
    }
    times.sort();
    let decided = outcome.expect("at least one round");
    println!(
        "{what:<58} p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  → {} (rule {:?})",
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.99).as_secs_f64() * 1e6,
        times.last().unwrap().as_secs_f64() * 1e6,
        decided.outcome,
        decided.rule.map(|r| r + 1),
    );
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(2_000);
    println!("ApprovalPolicy decisions, {rounds} rounds each, one core:");
    let rules = twenty_rules();
    measure(
        "20 rules, the last matches, 40 objects",
        &rules,
        &inputs(40),
        rounds,
    );
    measure(
        "20 rules, the last matches, 2,000 objects",
        &rules,
        &inputs(2_000),
        rounds / 10,
    );
    // The cost limit: two nested macros over the objects. Within it for a
    // small content; past it for a large one, where it is refused (asks a
    // person) before anything runs.
    let nested = vec![ApprovalRule {
        name: None,
        cel: "objects.all(a, objects.all(b, a.name != b.name || a == b))".into(),
        outcome: RuleOutcome::Approve,
        message: String::new(),
    }];
    measure(
        "nested macros, 40 objects (within the cost limit)",
        &nested,
        &inputs(40),
        rounds / 10,
    );
    measure(
        "nested macros, 2,000 objects (past it: not run)",
        &nested,
        &inputs(2_000),
        rounds / 10,
    );
}
