//! `kubectl instance policy test POLICY (-f INSTANCE.yaml | --instance
//! NAME) [--as USER] [--groups G]`: what an ApprovalPolicy (one on the
//! cluster, or a draft in a file) would decide for an Instance, writing
//! nothing.
//!
//! The rules run over the very inputs the runtime computed when it last
//! decided for that Instance (its provisioner keeps them in a ConfigMap in
//! its own namespace): the rendered objects, the rights in `Android`'s
//! words, the Bundle's properties as read from the pinned content. This
//! command cannot render a provisioner's content itself, and inputs
//! approximated here could pass a rule that fails live; so it tests
//! Instances the provisioner has seen (waiting for a person, refused, or
//! approved), and says so when it has not. The decision itself is the
//! runtime's own function ([`policy::decide`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use pakket_api::{ApprovalPolicy, Instance};
use pakket_runtime::kernel::trust::policy::{self, DecisionRecord};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format};
use crate::{identity, lookup};

mod trial;

/// `policy test`'s arguments.
#[derive(clap::Args)]
pub struct TestArgs {
    /// The ApprovalPolicy: its name on the cluster, or a YAML file holding
    /// one (a draft not applied yet).
    pub policy: String,
    /// The Instance, as a manifest; it must be on the cluster as written
    /// (the inputs are those its provisioner computed).
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "instance"
    )]
    pub file: Option<std::path::PathBuf>,
    /// The Instance, by name.
    #[arg(long, value_name = "NAME", required_unless_present = "file")]
    pub instance: Option<String>,
    /// Decide as if USER had asked (default: the Instance's sealed requester).
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// The groups of `--as` (comma-separated, or repeated).
    #[arg(long, value_delimiter = ',', requires = "as_user")]
    pub groups: Vec<String>,
    /// For a request nobody has made yet (`-f` names an Instance not on
    /// the cluster): create it as a policy trial, which its provisioner
    /// renders and never approves nor applies, read what a policy would
    /// see, and delete it.
    #[arg(long, requires = "file")]
    pub trial: bool,
    /// Where the provisioners keep decisions' inputs (their own namespace).
    #[arg(long, default_value = "pakket-system")]
    pub records_namespace: String,
    /// Print the decision as JSON or YAML.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
}

/// What the test found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tested {
    /// The policy tested.
    pub policy: String,
    /// The Instance.
    pub instance: String,
    /// Its Bundle and digest, as the provisioner pinned them.
    pub bundle: String,
    /// The content digest.
    pub digest: String,
    /// Who the rules saw as asking.
    pub requester: String,
    /// `Approve`, `Deny` or `AskAPerson`.
    pub outcome: pakket_api::RuleOutcome,
    /// `rule N (NAME)`, when a rule decided.
    pub rule: Option<String>,
    /// The rule's message, or why no rule decided.
    pub message: String,
    /// What decided live, when the provisioner last did.
    pub decided_live: String,
    /// For `--as`: what the apiserver said of `userPermission()` for her.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_permission: Option<String>,
}

/// Runs the test and prints it.
pub async fn run(
    client: &kube::Client,
    args: &TestArgs,
    out: &mut impl Write,
) -> Result<(), Error> {
    let (policy_name, rules) = read_policy(client, &args.policy).await?;
    let (name, written) = match (&args.instance, &args.file) {
        (Some(name), _) => (name.clone(), None),
        (None, Some(file)) => {
            let written = read_instance(file)?;
            (kube::ResourceExt::name_any(&written), Some(written))
        }
        (None, None) => unreachable!("clap requires --instance or -f"),
    };
    let instance = match Api::<Instance>::all(client.clone()).get_opt(&name).await {
        Ok(Some(instance)) => instance,
        Ok(None) => {
            if let (true, Some(written)) = (args.trial, &written) {
                let record = trial::render(client, written, &args.records_namespace).await?;
                let outcome = tested_over(client, &policy_name, &rules, record, args).await?;
                return print_tested(&outcome, args, out).and_then(|()| {
                    writeln!(
                        out,
                        "  (rendered by its provisioner as policy trial Instance {name}, deleted since; nothing was applied)"
                    )
                    .map_err(Error::from)
                });
            }
            return Err(Error::Config(format!(
                "Instance {name} is not on the cluster, so no provisioner has rendered it: the rules need the objects and rights its provisioner computes. Add --trial to have its provisioner render it as a policy trial (never applied, deleted after), or create it under its class (under approval: Policy it waits for a person when no rule approves; nothing is applied), then test again"
            )));
        }
        Err(source) => {
            return Err(
                identity::refused(client, source, "get instances", lookup::READ_ADVICE).await,
            );
        }
    };
    let record = read_record(client, &args.records_namespace, &name).await?;
    if let Some(written) = &written {
        same_as_the_cluster(written, &instance)?;
    }
    if record.inputs.bundle.name != instance.spec.bundle.name {
        return Err(Error::Changed(format!(
            "Instance {name} now names Bundle {}, which its provisioner has not decided yet (the inputs kept are for {}); wait for its Approved condition to change, then test again",
            instance.spec.bundle.name, record.inputs.bundle.name
        )));
    }
    let tested = tested_over(client, &policy_name, &rules, record, args).await?;
    print_tested(&tested, args, out)
}

/// The test over `record`, with the apiserver's answers for `--as`.
async fn tested_over(
    client: &kube::Client,
    policy_name: &str,
    rules: &[pakket_api::ApprovalRule],
    record: DecisionRecord,
    args: &TestArgs,
) -> Result<Tested, Error> {
    let asked = match &args.as_user {
        Some(user) if !record.is_for(user, &args.groups) => {
            Some(ask_as(client, rules, &record, user, &args.groups).await?)
        }
        _ => None,
    };
    Ok(test(policy_name, rules, record, args, asked))
}

fn print_tested(tested: &Tested, args: &TestArgs, out: &mut impl Write) -> Result<(), Error> {
    match args.output {
        Some(format) => output::print(tested, format, out),
        None => print(tested, out),
    }
}

/// What the apiserver answers about `--as USER`: the runtime's own
/// questions (`userPermission()`, `requesterOwns(ns)`), asked for her.
#[derive(Clone, Debug, Default)]
pub struct AskedAs {
    /// `userPermission()` for her, and why not when not; `None` when the
    /// record keeps nothing to ask it about (a provisioner older than the
    /// question).
    pub user_permission: Option<(bool, String)>,
    /// `requesterOwns(ns)` for her, for every namespace the change writes
    /// into.
    pub requester_owns: BTreeMap<String, bool>,
}

/// Asks the apiserver, as the runtime does for a requester, what `user`
/// (in `groups`) may do: create and delete what the record's change does,
/// and create RoleBindings in each namespace it writes into. Asked only
/// for what `rules` use.
async fn ask_as(
    client: &kube::Client,
    rules: &[pakket_api::ApprovalRule],
    record: &DecisionRecord,
    user: &str,
    groups: &[String],
) -> Result<AskedAs, Error> {
    use pakket_runtime::kernel::trust::{approval, effects};
    let person = pakket_api::CreatorRecord::new(user, None, groups.to_vec());
    let mut asked = AskedAs::default();
    let refused = |source: String| {
        Error::Config(format!(
            "asking the apiserver what {user} may do failed ({source}); testing --as needs create on subjectaccessreviews.authorization.k8s.io"
        ))
    };
    if policy::needs_user_permission(rules)
        && let Some(kept) = &record.permission
    {
        let answer = match effects::needs_a_person(&record.inputs.effects) {
            // Live, what runs as Pakket is never the requester's to give.
            Some(why) => (false, why),
            None => {
                let who = format!("{user} (--as)");
                let permission = approval::Permission {
                    client,
                    requester: &person,
                    who: &who,
                    objects: &kept.objects,
                    removed: &kept.removed,
                };
                match permission
                    .check(pakket_runtime::kernel::apply::Kinds::new(client.clone()))
                    .await
                {
                    Ok(said) => (true, said),
                    Err(why) => (false, why),
                }
            }
        };
        asked.user_permission = Some(answer);
    }
    if policy::needs_requester_owns(rules) {
        asked.requester_owns =
            approval::owned_namespaces(client, &person, &record.inputs.effects.all.namespaces)
                .await
                .map_err(refused)?;
    }
    Ok(asked)
}

/// The decision of `rules` over `record`'s inputs, as `--as` asks (with
/// the apiserver's answers for that user, `asked`).
pub fn test(
    policy_name: &str,
    rules: &[pakket_api::ApprovalRule],
    record: DecisionRecord,
    args: &TestArgs,
    asked: Option<AskedAs>,
) -> Tested {
    let mut inputs = record.inputs;
    inputs.user_permission = record.user_permission;
    inputs.requester_owns = record.requester_owns;
    let mut permission_said = None;
    if let Some(user) = &args.as_user {
        inputs.requester = policy::Requester {
            name: user.clone(),
            groups: args.groups.clone(),
        };
        if let Some(asked) = asked {
            // The runtime asked the apiserver about the real requester
            // only: these are the answers for this one.
            permission_said = asked.user_permission.as_ref().map(|(_, why)| why.clone());
            inputs.user_permission = asked.user_permission.map(|(allowed, _)| allowed);
            inputs.requester_owns = Some(asked.requester_owns);
        }
    }
    let decision = policy::decide(rules, &inputs);
    let groups = if inputs.requester.groups.is_empty() {
        String::new()
    } else {
        format!(" (groups {})", inputs.requester.groups.join(", "))
    };
    Tested {
        policy: policy_name.to_owned(),
        instance: inputs.instance.name.clone(),
        bundle: inputs.bundle.name.clone(),
        digest: inputs.bundle.digest.clone(),
        requester: format!("{}{groups}", inputs.requester.name),
        outcome: decision.outcome,
        rule: decision
            .rule
            .map(|index| policy::rule_label(index, &rules[index])),
        message: decision.message,
        decided_live: format!("{}: {}", record.decided_by, record.outcome),
        user_permission: permission_said,
    }
}

fn print(tested: &Tested, out: &mut impl Write) -> Result<(), Error> {
    let verdict = match tested.outcome {
        pakket_api::RuleOutcome::Approve => "approves",
        pakket_api::RuleOutcome::Deny => "refuses",
        pakket_api::RuleOutcome::AskAPerson => "asks a person for",
    };
    writeln!(
        out,
        "ApprovalPolicy {} {verdict} Instance {} (Bundle {}, {}) requested by {}",
        tested.policy, tested.instance, tested.bundle, tested.digest, tested.requester
    )?;
    match &tested.rule {
        Some(rule) => writeln!(out, "  decided by {rule}: {}", tested.message)?,
        None => writeln!(out, "  no rule decided: {}", tested.message)?,
    }
    if let Some(said) = &tested.user_permission {
        writeln!(out, "  userPermission() for {}: {said}", tested.requester)?;
    }
    writeln!(
        out,
        "  live, the provisioner last decided: {}\n  (over the inputs it computed then; nothing was written)",
        tested.decided_live
    )?;
    Ok(())
}

/// The policy's name and rules: a file holding an ApprovalPolicy (checked
/// as the admission webhook checks it), else the one of that name.
async fn read_policy(
    client: &kube::Client,
    policy: &str,
) -> Result<(String, Vec<pakket_api::ApprovalRule>), Error> {
    let path = Path::new(policy);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|error| Error::Config(format!("reading {policy}: {error}")))?;
        let found: ApprovalPolicy = serde_saphyr::from_str(&text).map_err(|error| {
            Error::Config(format!("{policy}: not an ApprovalPolicy manifest: {error}"))
        })?;
        let problems = policy::problems(&found.spec.rules);
        if !problems.is_empty() {
            return Err(Error::Config(format!(
                "{policy}: {}; the cluster would refuse it too",
                problems.join("; ")
            )));
        }
        return Ok((kube::ResourceExt::name_any(&found), found.spec.rules));
    }
    match Api::<ApprovalPolicy>::all(client.clone())
        .get_opt(policy)
        .await
    {
        Ok(Some(found)) => Ok((policy.to_owned(), found.spec.rules)),
        Ok(None) => Err(Error::NotFound {
            kind: "approvalpolicy",
            name: policy.to_owned(),
        }),
        Err(source) => Err(identity::refused(
            client,
            source,
            "get approvalpolicies",
            "ask an admin for get on approvalpolicies.core.pakket.dev",
        )
        .await),
    }
}

fn read_instance(file: &Path) -> Result<Instance, Error> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| Error::Config(format!("reading {}: {error}", file.display())))?;
    serde_saphyr::from_str(&text).map_err(|error| {
        Error::Config(format!(
            "{}: not an Instance manifest: {error}",
            file.display()
        ))
    })
}

/// The inputs the provisioner kept for Instance `name`.
async fn read_record(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<DecisionRecord, Error> {
    let config_map_name = policy::decision_record_name(name);
    let found = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(&config_map_name)
        .await;
    let config_map = match found {
        Ok(Some(config_map)) => config_map,
        Ok(None) => {
            return Err(Error::Config(format!(
                "no decision inputs are kept for Instance {name} (ConfigMap {namespace}/{config_map_name}): its class does not use approval: Policy, or its provisioner has not decided for it yet. Under another approval, name a policy in a class and create the Instance under it (it waits for a person when no rule approves)"
            )));
        }
        Err(source) => {
            return Err(identity::refused(
                client,
                source,
                format!("get configmaps in {namespace}"),
                format!("ask an admin for get on configmaps in {namespace}, where the provisioners keep what each policy decision saw"),
            )
            .await);
        }
    };
    let text = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(policy::DECISION_RECORD_KEY))
        .ok_or_else(|| {
            Error::Config(format!(
                "ConfigMap {namespace}/{config_map_name} has no {}",
                policy::DECISION_RECORD_KEY
            ))
        })?;
    serde_json::from_str(text).map_err(|error| {
        Error::Config(format!(
            "ConfigMap {namespace}/{config_map_name}: {} is not a decision record: {error}",
            policy::DECISION_RECORD_KEY
        ))
    })
}

/// The file's Instance is the cluster's, in what the inputs depend on.
fn same_as_the_cluster(written: &Instance, live: &Instance) -> Result<(), Error> {
    let name = kube::ResourceExt::name_any(live);
    let differs = |field: &str, file: String, cluster: String| {
        Error::Config(format!(
            "{field}: the file says {file}, Instance {name} on the cluster says {cluster}; the provisioner rendered the cluster's, so apply the file first (under approval: Policy nothing is applied before a rule or a person approves), then test"
        ))
    };
    if written.spec.class != live.spec.class {
        return Err(differs(
            "spec.class",
            written.spec.class.clone(),
            live.spec.class.clone(),
        ));
    }
    if written.spec.bundle.name != live.spec.bundle.name {
        return Err(differs(
            "spec.bundle.name",
            written.spec.bundle.name.clone(),
            live.spec.bundle.name.clone(),
        ));
    }
    let config =
        |instance: &Instance| serde_json::to_string(&instance.spec.config).unwrap_or_default();
    if written.spec.config != live.spec.config {
        return Err(differs("spec.config", config(written), config(live)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::{ApprovalRule, RuleOutcome};
    use pakket_runtime::kernel::trust::policy::{Inputs, Requester};

    fn rule(name: &str, cel: &str, outcome: RuleOutcome) -> ApprovalRule {
        serde_json::from_value(serde_json::json!({
            "name": name, "cel": cel, "outcome": outcome, "message": format!("{name} says so"),
        }))
        .unwrap()
    }

    fn args(as_user: Option<&str>, groups: &[&str]) -> TestArgs {
        TestArgs {
            policy: "p".into(),
            file: None,
            instance: Some("etcd".into()),
            as_user: as_user.map(str::to_owned),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            records_namespace: "pakket-system".into(),
            output: None,
            trial: false,
        }
    }

    fn record() -> DecisionRecord {
        let mut inputs = Inputs {
            requester: Requester {
                name: "alice".into(),
                groups: vec!["team-a".into()],
            },
            ..Inputs::default()
        };
        inputs.bundle.name = "etcd.v0.9.4".into();
        inputs.bundle.version = "0.9.4".into();
        inputs.instance.name = "etcd".into();
        DecisionRecord {
            inputs,
            user_permission: Some(true),
            requester_owns: None,
            decided_by: "policy live rule 1".into(),
            outcome: "AskAPerson".into(),
            permission: None,
        }
    }

    #[test]
    fn the_rules_run_over_the_kept_inputs_and_say_which_rule_decided() {
        let rules = vec![
            rule(
                "others",
                "!('team-a' in requester.groups)",
                RuleOutcome::Deny,
            ),
            rule(
                "etcd-09",
                "bundle.version.startsWith('0.9.') && userPermission()",
                RuleOutcome::Approve,
            ),
        ];
        let tested = test("draft", &rules, record(), &args(None, &[]), None);
        assert_eq!(tested.outcome, RuleOutcome::Approve);
        assert_eq!(tested.rule.as_deref(), Some("rule 2 (etcd-09)"));
        assert_eq!(tested.requester, "alice (groups team-a)");
        assert_eq!(tested.decided_live, "policy live rule 1: AskAPerson");
    }

    #[test]
    fn another_requester_is_judged_by_her_groups_and_never_by_alices_permission() {
        let rules = vec![
            rule(
                "others",
                "!('team-a' in requester.groups)",
                RuleOutcome::Deny,
            ),
            rule("mine", "userPermission()", RuleOutcome::Approve),
        ];
        let mallory = test(
            "draft",
            &rules,
            record(),
            &args(Some("mallory"), &["team-m"]),
            Some(AskedAs::default()),
        );
        assert_eq!(mallory.outcome, RuleOutcome::Deny);
        assert_eq!(mallory.rule.as_deref(), Some("rule 1 (others)"));
        // In team A but not alice: what the apiserver said about alice's
        // rights is not hers, so the rule that asks cannot approve.
        let bob = test(
            "draft",
            &rules,
            record(),
            &args(Some("bob"), &["team-a"]),
            Some(AskedAs::default()),
        );
        assert_eq!(bob.outcome, RuleOutcome::AskAPerson);
        assert_eq!(bob.rule.as_deref(), Some("rule 2 (mine)"));
        assert!(bob.message.contains("userPermission"), "{}", bob.message);
        // What the apiserver says of bob's own rights decides it.
        let allowed = AskedAs {
            user_permission: Some((true, "bob may create all 3 objects".into())),
            requester_owns: BTreeMap::new(),
        };
        let bob = test(
            "draft",
            &rules,
            record(),
            &args(Some("bob"), &["team-a"]),
            Some(allowed),
        );
        assert_eq!(bob.outcome, RuleOutcome::Approve);
        assert_eq!(
            bob.user_permission.as_deref(),
            Some("bob may create all 3 objects")
        );
    }
}
