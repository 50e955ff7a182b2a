//! `approval: Policy`: an admin's [`ApprovalPolicy`](pakket_api::ApprovalPolicy) decides, rule by rule,
//! what a class installs by itself. The runtime gathers and verifies every
//! input before a rule sees it ([`Inputs`]), and [`decide`] is a pure
//! function of the rules and those inputs, which `kubectl instance policy
//! test` calls too.
//!
//! Rules read `effects` ([`crate::trust::effects`]): what the change does
//! as typed data (objects created, changed, deleted; RBAC per subject;
//! workloads with their ServiceAccount and host access; admission; CRDs;
//! APIServices). `noNewRights()` is true only when none of it is new and
//! nothing is deleted. A change that runs a workload as Pakket or writes
//! into Pakket's namespace is never approved by a rule
//! ([`needs_a_person`]): a rule that would approve it asks a person.
//!
//! The first rule whose expression is true decides; none true asks a
//! person. A rule that cannot be evaluated (an error, past the cost limit)
//! stops the walk and asks a person, naming the rule and why: skipping it
//! could let a later `Approve` pass what it would have caught.
//!
//! Every rule is held to [`cel_limits`] (size, nesting, depth) when the
//! webhook admits the policy ([`problems`]) and again before it is
//! compiled here: a rule the parser would crash on is never parsed. CEL
//! has no loops, but its macros iterate and nest: a rule whose cost bound
//! over the inputs is past [`COST_LIMIT`] is not run.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::Context;
use pakket_api::{ApprovalRule, BundleProperty, RuleOutcome};
use pakket_engine::cel_limits::{self, BoundedProgram, CelLimitError, widest_collection};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trust::effects::{Effects, needs_a_person};

/// The class parameter that names the policy.
pub const PARAMETER: &str = "approvalPolicy";
/// The largest cost a rule may have: every CEL expression's (as
/// Kubernetes' per-expression limit for CRD validation rules).
pub const COST_LIMIT: u128 = cel_limits::COST_LIMIT;

/// Everything a rule may look at, verified by the runtime.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Inputs {
    /// Who asked, from the record Pakket's webhook sealed.
    pub requester: Requester,
    /// The content, as the provisioner read it from the pinned content.
    pub bundle: BundleInputs,
    /// The rights the content asks for (as `Android` compares them), in
    /// words: kept for rules written before `effects`; rules read
    /// `effects`.
    pub rights: RightsInputs,
    /// Everything the change does, typed: objects created, changed and
    /// deleted, RBAC per subject, workloads and their identity and host
    /// access, admission, CRDs, APIServices ([`Effects`]).
    pub effects: Effects,
    /// The objects it installs.
    pub objects: Vec<ObjectInput>,
    /// The Instance.
    pub instance: InstanceInputs,
    /// `userPermission()`: whether the requester may do everything the
    /// apply does (`UserPermission`'s verdict); `None` when not computed.
    #[serde(skip)]
    pub user_permission: Option<bool>,
    /// `requesterOwns(ns)`: for each namespace the change writes into
    /// (`effects.all.namespaces`), whether the requester may create
    /// RoleBindings there, asked of the apiserver as her (the ownership
    /// OperatorRequests are judged by); `None` when not computed.
    #[serde(skip)]
    pub requester_owns: Option<BTreeMap<String, bool>>,
}

/// `requester`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Requester {
    /// The user name.
    pub name: String,
    /// Its groups.
    pub groups: Vec<String>,
}

/// `bundle`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BundleInputs {
    /// The Bundle's name.
    pub name: String,
    /// The pinned content digest.
    pub digest: String,
    /// Where the content was fetched from (`spec.refs`: an image, a URL):
    /// the digest pins what came from there.
    pub refs: Vec<String>,
    /// The package (`olm.package`'s `packageName`), or empty.
    pub package: String,
    /// Its version (`olm.package`'s `version`), or empty.
    pub version: String,
    /// Every property the provisioner read: `{type, value}`.
    pub properties: Vec<BundleProperty>,
}

/// `rights`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RightsInputs {
    /// Every right the content asks for, in words.
    pub all: Vec<String>,
    /// Those the content the Instance runs now does not hold (all of them
    /// for a first install).
    pub new: Vec<String>,
}

/// One of `objects`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObjectInput {
    /// Its API group (`""` for the core group).
    pub group: String,
    /// Its API version.
    pub version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace, or empty.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// `instance`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InstanceInputs {
    /// Its name.
    pub name: String,
    /// Its class.
    pub class: String,
    /// Its `spec.config` (`{}` when it has none).
    pub config: Value,
}

impl Inputs {
    /// `bundle.package` and `bundle.version` from the `olm.package`
    /// property, when there is one.
    pub fn with_package_from_properties(mut self) -> Self {
        if let Some(package) = self
            .bundle
            .properties
            .iter()
            .find(|property| property.type_ == "olm.package")
        {
            let field = |name: &str| {
                package
                    .value
                    .get(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            self.bundle.package = field("packageName");
            self.bundle.version = field("version");
        }
        self
    }

    /// The number of entries of the longest list or map a rule can
    /// iterate over (what bounds a macro's cost), read without copying.
    pub fn widest_collection(&self) -> usize {
        [
            self.requester.groups.len(),
            self.bundle.refs.len(),
            self.bundle.properties.len(),
            self.bundle
                .properties
                .iter()
                .map(|property| widest_collection(&property.value))
                .max()
                .unwrap_or(0),
            self.rights.all.len(),
            self.rights.new.len(),
            self.objects.len(),
            self.effects.widest_collection(),
            widest_collection(&self.instance.config),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    /// The objects of `rendered`, as rules see them.
    pub fn objects_of(rendered: &[Value]) -> Vec<ObjectInput> {
        rendered
            .iter()
            .map(|object| {
                let text = |pointer: &str| {
                    object
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let api_version = text("/apiVersion");
                let (group, version) = match api_version.split_once('/') {
                    Some((group, version)) => (group.to_owned(), version.to_owned()),
                    None => (String::new(), api_version),
                };
                ObjectInput {
                    group,
                    version,
                    kind: text("/kind"),
                    namespace: text("/metadata/namespace"),
                    name: text("/metadata/name"),
                }
            })
            .collect()
    }
}

/// What the runtime last gave a policy for one Instance, kept so that
/// `kubectl instance policy test` can run another policy (or requester)
/// over the very inputs the runtime computed: the CLI cannot render a
/// provisioner's content or compute its rights itself, and an
/// approximation could pass a rule in a test that fails live.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DecisionRecord {
    /// The inputs, `requester` as sealed.
    pub inputs: Inputs,
    /// `userPermission()` for that requester, when a rule asked for it.
    pub user_permission: Option<bool>,
    /// `requesterOwns(ns)` for that requester, when a rule asked for it.
    pub requester_owns: Option<BTreeMap<String, bool>>,
    /// The policy that decided, and what (`policy NAME rule N`, the
    /// outcome).
    pub decided_by: String,
    /// `Approve`, `Deny` or `AskAPerson`.
    pub outcome: String,
    /// What `userPermission()` asks about, so the CLI can ask it for
    /// another user (`policy test --as`) as the runtime would.
    pub permission: Option<PermissionInputs>,
}

impl DecisionRecord {
    /// Whether it was decided for `user` in `groups` (the sealed requester).
    pub fn is_for(&self, user: &str, groups: &[String]) -> bool {
        self.inputs.requester.name == user && self.inputs.requester.groups == groups
    }
}

/// The objects and deletions `userPermission()` checks, reduced to what
/// the check reads ([`permission_view`]): no data of any object (a
/// Secret's included) is kept.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PermissionInputs {
    /// Each rendered object, as [`permission_view`] keeps it.
    pub objects: Vec<Value>,
    /// What the change deletes.
    pub removed: Vec<pakket_api::ObjectRef>,
}

/// What `userPermission()` reads of a rendered object: its kind and name,
/// and only the fields its RBAC checks read (a role's rules and
/// aggregation, a binding's role and subjects, a CRD's group, names and
/// scope, a Pakket Instance's or Bundle's classes). Nothing else, so a
/// record holds no content data.
pub fn permission_view(object: &Value) -> Value {
    const KEPT: [&str; 9] = [
        "/rules",
        "/aggregationRule",
        "/roleRef",
        "/subjects",
        "/spec/group",
        "/spec/names",
        "/spec/scope",
        "/spec/class",
        "/spec/bundle/spec/class",
    ];
    let mut view = serde_json::json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": {
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
        },
    });
    let is_crd = object["kind"] == "CustomResourceDefinition";
    let is_pakket = object["apiVersion"]
        .as_str()
        .is_some_and(|version| version.starts_with("core.pakket.dev/"));
    for pointer in KEPT {
        let spec_field = pointer.starts_with("/spec/");
        let wanted = !spec_field
            || (is_crd && !pointer.contains("class"))
            || (is_pakket && pointer.contains("class"));
        if let (true, Some(value)) = (wanted, object.pointer(pointer)) {
            set_pointer(&mut view, pointer, value.clone());
        }
    }
    view
}

/// Writes `value` at JSON `pointer` in `root`, making objects on the way.
fn set_pointer(root: &mut Value, pointer: &str, value: Value) {
    let mut at = root;
    let mut parts = pointer.trim_start_matches('/').split('/').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            at[part] = value;
            return;
        }
        if !at[part].is_object() {
            at[part] = Value::Object(serde_json::Map::new());
        }
        at = &mut at[part];
    }
}

/// The ConfigMap (in the provisioner's own namespace) holding an
/// Instance's [`DecisionRecord`], under [`DECISION_RECORD_KEY`]: named by a
/// digest of the Instance's name, which may be longer than a ConfigMap's.
pub fn decision_record_name(instance: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = hex::encode(Sha256::digest(instance.as_bytes()));
    format!("pakket-policy-inputs-{}", &digest[..20])
}

/// The key of [`decision_record_name`]'s ConfigMap holding the record.
pub const DECISION_RECORD_KEY: &str = "record.json";

/// The annotation on that ConfigMap naming its Instance.
pub const DECISION_RECORD_INSTANCE: &str = "core.pakket.dev/instance";

/// Whether any rule calls `userPermission()` (read from the parsed rule,
/// however it is spaced): its answer costs SubjectAccessReviews, asked
/// only then.
pub fn needs_user_permission(rules: &[ApprovalRule]) -> bool {
    rules.iter().any(|rule| {
        compiled(&rule.cel).is_ok_and(|program| {
            program
                .program()
                .references()
                .has_function("userPermission")
        })
    })
}

/// Whether any rule calls `requesterOwns()`: each answer is a
/// SubjectAccessReview, asked only then.
pub fn needs_requester_owns(rules: &[ApprovalRule]) -> bool {
    rules.iter().any(|rule| {
        compiled(&rule.cel)
            .is_ok_and(|program| program.program().references().has_function("requesterOwns"))
    })
}

/// Problems with `rules` that are wrong whatever the inputs, each naming
/// its field (`spec.rules[1].cel: ...`): an expression that is not CEL, is
/// too long or past another of [`cel_limits`] (checked on the text before
/// it is parsed), an outcome-less message. What the admission webhook
/// refuses when an admin writes the policy, so a typo is seen at `kubectl
/// apply` rather than as Instances waiting for a person.
pub fn problems(rules: &[ApprovalRule]) -> Vec<String> {
    let mut problems = Vec::new();
    if rules.len() > pakket_api::approval_policy::MAX_RULES {
        problems.push(format!(
            "spec.rules: holds {} rules; at most {}",
            rules.len(),
            pakket_api::approval_policy::MAX_RULES
        ));
    }
    for (index, rule) in rules.iter().enumerate() {
        let field = format!("spec.rules[{index}].cel");
        if rule.cel.len() > pakket_api::approval_policy::MAX_RULE_EXPRESSION {
            problems.push(format!(
                "{field}: is {} bytes; at most {}",
                rule.cel.len(),
                pakket_api::approval_policy::MAX_RULE_EXPRESSION
            ));
            continue;
        }
        if let Err(error) = cel_limits::compile(&rule.cel) {
            problems.push(format!("{field}: {}", words(&error)));
        }
    }
    problems
}

/// What the policy decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The outcome; `AskAPerson` also when no rule matched or one could
    /// not be evaluated.
    pub outcome: RuleOutcome,
    /// The rule that decided (0-based), if one did.
    pub rule: Option<usize>,
    /// Why, for people.
    pub message: String,
}

impl Decision {
    /// `policy NAME rule N (RULE)`, or `policy NAME` when no rule decided:
    /// what `status.approval.approvedBy` and the messages say.
    pub fn by(&self, policy: &str, rules: &[ApprovalRule]) -> String {
        match self.rule {
            Some(index) => format!("policy {policy} {}", rule_label(index, &rules[index])),
            None => format!("policy {policy}"),
        }
    }
}

/// `rule N` (1-based, as people count), with its name when it has one.
pub fn rule_label(index: usize, rule: &ApprovalRule) -> String {
    match &rule.name {
        Some(name) => format!("rule {} ({name})", index + 1),
        None => format!("rule {}", index + 1),
    }
}

/// The first rule of `rules` whose expression is true over `inputs`
/// decides; none true, or one that cannot be evaluated, asks a person.
pub fn decide(rules: &[ApprovalRule], inputs: &Inputs) -> Decision {
    let ask = |rule: Option<usize>, message: String| Decision {
        outcome: RuleOutcome::AskAPerson,
        rule,
        message,
    };
    let widest = inputs.widest_collection();
    // Built once, and only for a rule within the cost limit: giving CEL
    // thousands of objects is most of a decision's time.
    let mut context: Option<Context> = None;
    for (index, rule) in rules.iter().enumerate() {
        let label = rule_label(index, rule);
        let program = match checked(rule, widest) {
            Ok(program) => program,
            Err(why) => {
                return ask(
                    Some(index),
                    format!(
                        "{label} could not be evaluated ({why}), so a person decides; fix the rule"
                    ),
                );
            }
        };
        if context.is_none() {
            match context_of(inputs) {
                Ok(built) => context = Some(built),
                Err(why) => {
                    return ask(
                        None,
                        format!("its inputs could not be given to CEL ({why})"),
                    );
                }
            }
        }
        let context = context.as_ref().expect("built just above");
        let outcome = match program.program().execute(context) {
            Ok(cel::Value::Bool(outcome)) => Ok(outcome),
            Ok(_) => {
                Err("it gives a value that is not true or false; write a condition".to_owned())
            }
            Err(error) => Err(error.to_string()),
        };
        match outcome {
            Ok(true) => {
                // No rule approves what only a person may: it runs as
                // Pakket, or writes into Pakket's own namespace.
                if rule.outcome == RuleOutcome::Approve
                    && let Some(why) = needs_a_person(&inputs.effects)
                {
                    return ask(Some(index), format!("{label} would approve, but {why}"));
                }
                let message = if rule.message.is_empty() {
                    format!("`{}` is true", rule.cel)
                } else {
                    rule.message.clone()
                };
                return Decision {
                    outcome: rule.outcome,
                    rule: Some(index),
                    message,
                };
            }
            Ok(false) => {}
            Err(why) => {
                return ask(
                    Some(index),
                    format!(
                        "{label} could not be evaluated ({why}), so a person decides; fix the rule"
                    ),
                );
            }
        }
    }
    ask(None, "no rule matched, so a person decides".to_owned())
}

/// `rule`'s program, once it is known to be short enough, within the
/// limits (before it is parsed) and valid CEL, and within the cost limit
/// over inputs whose widest collection has `widest` entries.
fn checked(rule: &ApprovalRule, widest: usize) -> Result<Arc<BoundedProgram>, String> {
    if rule.cel.len() > pakket_api::approval_policy::MAX_RULE_EXPRESSION {
        return Err(format!(
            "the expression is {} bytes; at most {}",
            rule.cel.len(),
            pakket_api::approval_policy::MAX_RULE_EXPRESSION
        ));
    }
    let program = compiled(&rule.cel).map_err(|error| match error {
        CelLimitError::Invalid(_) => words(&error),
        limit => format!("it {limit}"),
    })?;
    program
        .within_cost(widest)
        .map_err(|error| error.to_string())?;
    Ok(program)
}

/// A refusal in the words rules have always used (`not valid CEL: ...`).
fn words(error: &CelLimitError) -> String {
    match error {
        CelLimitError::Invalid(why) => format!("not valid CEL: {why}"),
        limit => limit.to_string(),
    }
}

/// Compiled programs by expression, each held to [`cel_limits`]: a
/// policy's rules are compiled once per process, not at every decision.
/// Bounded: emptied when full.
fn compiled(source: &str) -> Result<Arc<BoundedProgram>, CelLimitError> {
    static PROGRAMS: std::sync::LazyLock<std::sync::Mutex<HashMap<String, Arc<BoundedProgram>>>> =
        std::sync::LazyLock::new(Default::default);
    const KEPT: usize = 1024;
    if let Some(program) = PROGRAMS.lock().expect("not poisoned").get(source) {
        return Ok(program.clone());
    }
    let program = Arc::new(cel_limits::compile(source)?);
    let mut programs = PROGRAMS.lock().expect("not poisoned");
    if programs.len() >= KEPT {
        programs.clear();
    }
    programs.insert(source.to_owned(), program.clone());
    Ok(program)
}

/// The CEL context: the inputs as variables, the built-in policies as
/// functions.
fn context_of(inputs: &Inputs) -> Result<Context<'static, 'static>, String> {
    let mut context = Context::default();
    let variables = [
        ("requester", cel::to_value(&inputs.requester)),
        ("bundle", cel::to_value(&inputs.bundle)),
        ("rights", cel::to_value(&inputs.rights)),
        ("objects", cel::to_value(&inputs.objects)),
        ("instance", cel::to_value(&inputs.instance)),
        ("effects", cel::to_value(&inputs.effects)),
    ];
    for (name, value) in variables {
        let value = value.map_err(|error| error.to_string())?;
        context
            .add_variable(name, value)
            .map_err(|error| error.to_string())?;
    }
    // Nothing new of any kind: no right in words, no new RBAC, workload
    // identity or host access, admission, CRD or APIService, and nothing
    // deleted.
    let no_new_rights = inputs.rights.new.is_empty() && inputs.effects.nothing_new();
    context
        .add_function("noNewRights", move || no_new_rights)
        .map_err(|error| error.to_string())?;
    let user_permission = Arc::new(inputs.user_permission);
    context.add_function(
        "userPermission",
        move || -> Result<bool, cel::ExecutionError> {
            user_permission.ok_or_else(|| {
                cel::ExecutionError::function_error(
                    "userPermission",
                    "not known here (the runtime asks the apiserver; a policy test without --as cannot)",
                )
            })
        },
    )
    .map_err(|error| error.to_string())?;
    let owns = Arc::new(inputs.requester_owns.clone());
    context
        .add_function(
            "requesterOwns",
            move |namespace: Arc<String>| -> Result<bool, cel::ExecutionError> {
                requester_owns(owns.as_ref().as_ref(), &namespace)
            },
        )
        .map_err(|error| error.to_string())?;
    context
        .add_function(
            "semverSatisfies",
            |version: Arc<String>, range: Arc<String>| -> Result<bool, cel::ExecutionError> {
                semver_satisfies(&version, &range)
                    .map_err(|why| cel::ExecutionError::function_error("semverSatisfies", why))
            },
        )
        .map_err(|error| error.to_string())?;
    Ok(context)
}

/// `requesterOwns(namespace)`: the apiserver's answer for a namespace the
/// change writes into. Any other namespace is an error, not `false`: a
/// rule must not pass because it asked about the wrong thing.
fn requester_owns(
    owns: Option<&BTreeMap<String, bool>>,
    namespace: &str,
) -> Result<bool, cel::ExecutionError> {
    let owns = owns.ok_or_else(|| {
        cel::ExecutionError::function_error(
            "requesterOwns",
            "not known here (the runtime asks the apiserver; a policy test without --as cannot)",
        )
    })?;
    owns.get(namespace).copied().ok_or_else(|| {
        cel::ExecutionError::function_error(
            "requesterOwns",
            format!(
                "asked about namespace {namespace:?}, which the change does not write into; ask only about effects.all.namespaces"
            ),
        )
    })
}

/// `semverSatisfies(version, range)`: whether `version` is in `range`
/// (OLM's syntax: `>=1.2.0 <2.0.0`, `1.x`, `||`), as the resolver reads
/// ranges; a version or range that does not parse is an error, so the
/// rule asks a person rather than pass or fail by accident.
pub fn semver_satisfies(version: &str, range: &str) -> Result<bool, String> {
    let version = pakket_engine::Version::parse(version)
        .map_err(|error| format!("version {version:?}: {error}"))?;
    let range =
        pakket_engine::Range::parse(range).map_err(|error| format!("range {range:?}: {error}"))?;
    Ok(range.contains(&version))
}

#[cfg(test)]
mod attacks;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_permission_view_keeps_what_rbac_checks_read_and_no_data() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "a", "labels": {"x": "y"}},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "t"}});
        assert_eq!(
            permission_view(&secret),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}})
        );
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "namespace": "a"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert_eq!(permission_view(&role), role);
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "etcdclusters.etcd.database.coreos.com"},
            "spec": {"group": "etcd.database.coreos.com", "scope": "Namespaced",
                "names": {"plural": "etcdclusters", "kind": "EtcdCluster"},
                "versions": [{"name": "v1beta2", "schema": {}}]}});
        let view = permission_view(&crd);
        assert_eq!(view["spec"]["names"]["plural"], "etcdclusters");
        assert_eq!(view["spec"]["scope"], "Namespaced");
        assert!(view["spec"].get("versions").is_none(), "{view}");
        let child = json!({"apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": {"name": "i"},
            "spec": {"class": "c", "config": {"password": "p"},
                "bundle": {"name": "b", "spec": {"class": "c", "refs": ["docker://x"]}}}});
        assert_eq!(
            permission_view(&child)["spec"],
            json!({"class": "c", "bundle": {"spec": {"class": "c"}}})
        );
    }

    fn rule(cel: &str, outcome: RuleOutcome) -> ApprovalRule {
        ApprovalRule {
            name: None,
            cel: cel.into(),
            outcome,
            message: format!("{outcome} because {cel}"),
        }
    }

    fn etcd_for(name: &str, groups: &[&str]) -> Inputs {
        Inputs {
            requester: Requester {
                name: name.into(),
                groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            },
            bundle: BundleInputs {
                name: "etcd-v0.9.4".into(),
                digest: "sha256:aa".into(),
                properties: vec![BundleProperty {
                    type_: "olm.package".into(),
                    value: json!({"packageName": "etcd", "version": "0.9.4"}),
                }],
                ..BundleInputs::default()
            },
            rights: RightsInputs {
                all: vec!["the rule create on pods in team-a".into()],
                new: vec![],
            },
            objects: Inputs::objects_of(&[
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "etcd", "namespace": "team-a"}}),
            ]),
            effects: Effects::default(),
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

    #[test]
    fn the_first_matching_rule_decides_and_says_which_it_was() {
        let rules = vec![
            rule("bundle.package == 'postgres'", RuleOutcome::Deny),
            ApprovalRule {
                name: Some("team-a-etcd".into()),
                ..rule(
                    "'team-a' in requester.groups && bundle.package == 'etcd' && bundle.version.startsWith('0.9.') && objects.all(o, o.namespace == 'team-a')",
                    RuleOutcome::Approve,
                )
            },
            rule("true", RuleOutcome::Deny),
        ];
        let decided = decide(&rules, &etcd_for("alice", &["team-a"]));
        assert_eq!(decided.outcome, RuleOutcome::Approve);
        assert_eq!(decided.rule, Some(1));
        assert_eq!(
            decided.by("operators", &rules),
            "policy operators rule 2 (team-a-etcd)"
        );
        // Someone outside the team falls through to the last rule.
        let other = decide(&rules, &etcd_for("bob", &["team-b"]));
        assert_eq!((other.outcome, other.rule), (RuleOutcome::Deny, Some(2)));
    }

    #[test]
    fn problems_name_the_rule_and_field() {
        let rules = vec![
            rule("bundle.package == 'etcd'", RuleOutcome::Approve),
            rule("bundle.package ==", RuleOutcome::Deny),
        ];
        let found = problems(&rules);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("spec.rules[1].cel: not valid CEL"),
            "{found:?}"
        );
        assert!(problems(&rules[..1]).is_empty());
    }

    #[test]
    fn no_match_asks_a_person() {
        let rules = vec![rule("bundle.package == 'postgres'", RuleOutcome::Approve)];
        let decided = decide(&rules, &etcd_for("alice", &[]));
        assert_eq!(
            (decided.outcome, decided.rule),
            (RuleOutcome::AskAPerson, None)
        );
        assert!(
            decided.message.contains("no rule matched"),
            "{}",
            decided.message
        );
    }

    #[test]
    fn a_rule_that_cannot_be_evaluated_stops_the_walk_and_asks_a_person() {
        // The second rule would approve; the first, broken, must not be
        // skipped past (it might have been meant to deny).
        for broken in [
            "bundle.nosuchfield == 'x'",
            "bundle.package ==",
            "bundle.package",
        ] {
            let rules = vec![
                rule(broken, RuleOutcome::Deny),
                rule("true", RuleOutcome::Approve),
            ];
            let decided = decide(&rules, &etcd_for("alice", &[]));
            assert_eq!(
                (decided.outcome, decided.rule),
                (RuleOutcome::AskAPerson, Some(0)),
                "{broken}: {decided:?}"
            );
            assert!(
                decided.message.starts_with("rule 1 could not be evaluated"),
                "{}",
                decided.message
            );
        }
    }

    #[test]
    fn the_built_in_verdicts_are_functions() {
        let mut inputs = etcd_for("alice", &[]);
        let rules = vec![rule(
            "noNewRights() && !userPermission()",
            RuleOutcome::Approve,
        )];
        assert_eq!(decide(&rules, &inputs).outcome, RuleOutcome::Approve);
        inputs.rights.new = vec!["the rule escalate on clusterroles".into()];
        assert_eq!(decide(&rules, &inputs).outcome, RuleOutcome::AskAPerson);
        // Unknown (a policy test that cannot ask the apiserver): the rule
        // cannot be evaluated, and says so.
        inputs.user_permission = None;
        let rules = vec![rule("userPermission()", RuleOutcome::Approve)];
        let decided = decide(&rules, &inputs);
        assert_eq!(decided.outcome, RuleOutcome::AskAPerson);
        assert!(
            decided.message.contains("not known here"),
            "{}",
            decided.message
        );
        assert!(needs_user_permission(&rules));
    }

    #[test]
    fn requester_owns_answers_for_the_namespaces_written_and_errs_for_any_other() {
        let mut inputs = etcd_for("alice", &[]);
        inputs.requester_owns = Some(BTreeMap::from([
            ("team-a".to_owned(), true),
            ("team-b".to_owned(), false),
        ]));
        let rules = |cel: &str| vec![rule(cel, RuleOutcome::Approve)];
        let outcome = |cel: &str| decide(&rules(cel), &inputs);
        assert_eq!(
            outcome("requesterOwns('team-a')").outcome,
            RuleOutcome::Approve
        );
        assert_eq!(
            outcome("requesterOwns('team-b')").outcome,
            RuleOutcome::AskAPerson,
            "no rule matched"
        );
        // A namespace the change does not write into is not `false` (a
        // negated rule would pass): it cannot be evaluated.
        let stray = outcome("!requesterOwns('kube-system')");
        assert_eq!(stray.outcome, RuleOutcome::AskAPerson);
        assert!(
            stray.message.contains("does not write into"),
            "{}",
            stray.message
        );
        assert!(needs_requester_owns(&rules("requesterOwns('x')")));
        assert!(!needs_requester_owns(&rules("userPermission()")));
        inputs.requester_owns = None;
        let unknown = decide(&rules("requesterOwns('team-a')"), &inputs);
        assert!(
            unknown.message.contains("not known here"),
            "{}",
            unknown.message
        );
    }

    #[test]
    fn semver_ranges_are_read_as_the_resolver_reads_them() {
        let inputs = etcd_for("alice", &[]);
        let outcome = |cel: &str| decide(&[rule(cel, RuleOutcome::Approve)], &inputs).outcome;
        assert_eq!(
            outcome("semverSatisfies(bundle.version, '>=0.9.0 <0.10.0')"),
            RuleOutcome::Approve
        );
        assert_eq!(
            outcome("semverSatisfies(bundle.version, '>=1.0.0')"),
            RuleOutcome::AskAPerson
        );
        // "0.9.40" starts with "0.9.4": a prefix test would pass it.
        assert_eq!(semver_satisfies("0.9.40", "0.9.4"), Ok(false));
        let bad = decide(
            &[rule(
                "semverSatisfies(bundle.version, '>>1')",
                RuleOutcome::Approve,
            )],
            &inputs,
        );
        assert_eq!(bad.outcome, RuleOutcome::AskAPerson);
        assert!(bad.message.contains("range"), "{}", bad.message);
    }

    #[test]
    fn nested_macros_over_many_objects_are_past_the_cost_limit_and_not_run() {
        let mut inputs = etcd_for("alice", &[]);
        inputs.objects = (0..2_000)
            .map(|n| ObjectInput {
                kind: "ConfigMap".into(),
                name: format!("c{n}"),
                ..ObjectInput::default()
            })
            .collect();
        let rules = vec![rule(
            "objects.all(a, objects.all(b, a.name != b.name || a == b))",
            RuleOutcome::Approve,
        )];
        let decided = decide(&rules, &inputs);
        assert_eq!(decided.outcome, RuleOutcome::AskAPerson);
        assert!(
            decided.message.contains("past the limit"),
            "{}",
            decided.message
        );
        // One macro over the same objects is within it.
        let rules = vec![rule(
            "objects.all(o, o.kind == 'ConfigMap')",
            RuleOutcome::Approve,
        )];
        assert_eq!(decide(&rules, &inputs).outcome, RuleOutcome::Approve);
    }

    /// A thread with a quarter of a tokio worker's stack: what a hostile
    /// rule must be refused on without crashing.
    fn on_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(work)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn a_rule_with_two_thousand_parentheses_is_refused_at_admission_without_crashing() {
        let deep = format!("{}true{}", "(".repeat(2_000), ")".repeat(2_000));
        let rules = vec![rule(&deep, RuleOutcome::Approve)];
        let started = std::time::Instant::now();
        let (found, decided) = on_small_stack(move || {
            let found = problems(&rules);
            let decided = decide(&rules, &etcd_for("alice", &[]));
            (found, decided)
        });
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(
            found,
            vec![
                "spec.rules[0].cel: nests brackets 2000 deep; at most 32 (the nesting limit): flatten it"
                    .to_owned()
            ]
        );
        // A policy stored before the webhook checked it is not parsed
        // either: a person decides.
        assert_eq!(
            (decided.outcome, decided.rule),
            (RuleOutcome::AskAPerson, Some(0))
        );
        assert!(
            decided.message.contains("the nesting limit"),
            "{}",
            decided.message
        );
    }

    #[test]
    fn loops_over_list_literals_or_spelled_with_spaces_are_past_the_cost_limit() {
        // Four loops of 100 over inputs with no wide list (which the old
        // bound, counting only the inputs, let run), and loops over 2,000
        // objects spelled `.all (` (which it did not count at all).
        let hundred = (0..100)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let literals = format!(
            "[{hundred}].all(a, [{hundred}].all(b, [{hundred}].all(c, [{hundred}].all(d, a + b + c + d >= 0))))"
        );
        let mut wide = etcd_for("alice", &[]);
        wide.objects = (0..2_000)
            .map(|n| ObjectInput {
                name: format!("c{n}"),
                ..ObjectInput::default()
            })
            .collect();
        for (hostile, inputs) in [
            (literals.as_str(), etcd_for("alice", &[])),
            (
                "objects.all (a, objects.all (b, a.name != b.name || a == b))",
                wide.clone(),
            ),
            (
                "objects.all\n(a, !objects.exists\t(b, b.name == 'none'))",
                wide,
            ),
        ] {
            let rules = vec![rule(hostile, RuleOutcome::Approve)];
            assert!(problems(&rules).is_empty(), "valid CEL: {hostile}");
            let started = std::time::Instant::now();
            let decided = decide(&rules, &inputs);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(1),
                "{hostile}"
            );
            assert_eq!(decided.outcome, RuleOutcome::AskAPerson, "{hostile}");
            assert!(
                decided.message.contains("past the limit"),
                "{}",
                decided.message
            );
        }
    }

    #[test]
    fn user_permission_is_found_in_the_parsed_rule_however_it_is_spaced() {
        let rules = vec![rule("userPermission () && true", RuleOutcome::Approve)];
        assert!(needs_user_permission(&rules));
        let rules = vec![rule(
            "'userPermission(' == bundle.name",
            RuleOutcome::Approve,
        )];
        assert!(!needs_user_permission(&rules));
    }

    #[test]
    fn the_shipped_policies_are_within_every_limit() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/policies");
        let mut read = 0;
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|extension| extension != "yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let policy: pakket_api::ApprovalPolicy = serde_saphyr::from_str(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert_eq!(
                problems(&policy.spec.rules),
                Vec::<String>::new(),
                "{}",
                path.display()
            );
            read += 1;
        }
        assert!(read >= 4, "read {read} policies");
    }
}
