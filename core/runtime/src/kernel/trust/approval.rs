//! Approval policies beyond `AllowAll`: what a provisioner decides when a
//! class's `approval` parameter names a policy the runtime does not apply
//! itself, and `UserPermission`, which a provisioner can adopt in one line.
//!
//! `UserPermission` approves an Instance when the person who asked for its
//! current spec could have installed every object by hand, asked the way
//! RBAC would ask (see [`user_permission`]). The requester is read from the
//! sealed records the admission webhook writes ([`pakket_api::requester`]):
//! the last person who changed the spec, else the creator. A record the
//! webhook did not write (or that covers another spec) is not trusted, and
//! then a person approves.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use pakket_api::{CreatorRecord, Instance, ProvisionerClass, RecordKey};
use serde_json::Value;

use crate::apply::{self, Kinds};
use crate::rbac::{self, Access, Need, RoleKey};
use crate::rights::{Aggregator, Right, Rights};
use crate::trust::effects::{Effects, Landing, needs_a_person};

/// How long a `UserPermission` Instance waits before its creator's rights
/// are asked again (a grant does not start a reconcile by itself).
pub const USER_PERMISSION_RETRY: Duration = Duration::from_secs(10);

/// A provisioner's answer to an approval request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Install: the message says why (it becomes the `Approved` condition's).
    Approved(String),
    /// Wait for a person (`kubectl instance approve`) or for `retry`.
    Pending {
        /// Why it waits, and what would change that.
        message: String,
        /// When to ask again without any change to the Instance.
        retry: Option<Duration>,
    },
}

/// What an approval decision may look at.
pub struct ApprovalRequest<'a> {
    /// The cluster.
    pub client: &'a Client,
    /// The Instance to approve.
    pub instance: &'a Instance,
    /// Its class.
    pub class: &'a ProvisionerClass,
    /// The class's `approval` parameter.
    pub policy: &'a str,
    /// The objects the Instance would install.
    pub objects: &'a [Value],
    /// The objects of the content the Instance runs now, rendered again
    /// from the store, when it runs approved content that is still there
    /// (read only for policies that compare, such as `Android`).
    pub running: Option<&'a [Value]>,
    /// Kinds, for what the objects are (resources, scopes).
    pub kinds: Kinds,
    /// The key that verifies the webhook's requester records, if configured.
    pub record_key: Option<&'a RecordKey>,
}

impl ApprovalRequest<'_> {
    /// Your own policy decided a person should: the Instance waits with
    /// `why` (your words: what the policy saw) and the commands a person
    /// runs. Use this, not [`Self::wait_for_a_person`], from a policy the
    /// provisioner implements.
    pub fn ask_a_person(&self, why: &str) -> Approval {
        Approval::Pending {
            message: format!(
                "waiting for approval (ProvisionerClass {}, approval: {}): {why}; a person with the approve verb decides: review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}` or `kubectl instance deny {name}`",
                self.class.name_any(),
                self.policy,
                name = self.instance.name_any()
            ),
            retry: None,
        }
    }

    /// The default for a policy the provisioner does not know: wait for a
    /// person, saying no policy of that name approves anything.
    pub fn wait_for_a_person(&self) -> Approval {
        self.ask_a_person("no policy of that name approves anything")
    }
}

/// The verbs a server-side apply needs: create for a new object, patch for
/// an existing one (asked both: whether it exists can change before apply).
const APPLY_VERBS: [&str; 2] = ["create", "patch"];

/// Most SubjectAccessReviews one decision asks: a bundle whose RBAC would
/// need more (a role listing hundreds of resources) waits for a person.
pub const MAX_REVIEWS: usize = 5_000;

/// `Android`: new content is approved by the policy when it asks for
/// nothing ([`Rights`]: RBAC rules, bindings, CRDs, webhooks, APIServices;
/// and of the [`Effects`]: workload identities and host access, admission
/// policies) beyond what the content the Instance runs now asks for, like
/// an app update that wants no new permission. What runs as Pakket or in
/// Pakket's namespace always waits for a person ([`needs_a_person`]). A first install, or content that
/// asks for more, waits for a person, the message naming what it asks for.
pub async fn android(request: &ApprovalRequest<'_>) -> Approval {
    let name = request.instance.name_any();
    let class = request.class.name_any();
    if let Some(refused) = only_a_person(request).await {
        return refused;
    }
    let aggregators = match cluster_aggregators(
        request.client,
        request.objects,
        request.running.unwrap_or_default(),
    )
    .await
    {
        Ok(found) => found,
        Err(error) => {
            return Approval::Pending {
                message: format!(
                    "waiting for approval (ProvisionerClass {class} has approval: Android): the content holds labelled ClusterRoles, and which roles of the cluster aggregate them could not be read ({error}); review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`"
                ),
                retry: Some(USER_PERMISSION_RETRY),
            };
        }
    };
    let wanted = Rights::of_in(request.objects, &aggregators);
    let pending = |why: String| Approval::Pending {
        message: format!(
            "waiting for approval (ProvisionerClass {class} has approval: Android): {why}; review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}` or `kubectl instance deny {name}`"
        ),
        retry: None,
    };
    let Some(running) = request.running else {
        let asked: Vec<&Right> = wanted.beyond(&Rights::default());
        return pending(if asked.is_empty() {
            "a first install (nothing runs yet to compare with) asks for no RBAC, CRD or webhook, but a person still decides what is installed".to_owned()
        } else {
            format!(
                "a first install asks for {} right(s): {}",
                asked.len(),
                listed(&asked)
            )
        });
    };
    let beyond = wanted.beyond(&Rights::of_in(running, &aggregators));
    let more = new_effects(request, running).await;
    if !more.is_empty() {
        return pending(format!(
            "the new content does {} thing(s) the content it replaces did not: {}",
            more.len(),
            more.join("; ")
        ));
    }
    if beyond.is_empty() {
        return Approval::Approved(format!(
            "approved by policy Android: the new content asks for no right beyond the content it replaces ({} RBAC rules, bindings, CRDs and webhooks, all held already)",
            wanted.len()
        ));
    }
    pending(format!(
        "the new content asks for {} right(s) the content it replaces did not: {}",
        beyond.len(),
        listed(&beyond)
    ))
}

/// At most eight rights in words, then how many more.
fn listed(rights: &[&Right]) -> String {
    const SHOWN: usize = 8;
    let mut text: Vec<String> = rights.iter().take(SHOWN).map(ToString::to_string).collect();
    if rights.len() > SHOWN {
        text.push(format!("and {} more", rights.len() - SHOWN));
    }
    text.join("; ")
}

/// What the rights do not hold and the new content does beyond what
/// `running` did: a workload identity or host access, an admission policy
/// (webhooks are rights already), each in words.
async fn new_effects(request: &ApprovalRequest<'_>, running: &[Value]) -> Vec<String> {
    let effects = Effects::of(request.objects, Some(running), &landing_of(request).await);
    let workloads = effects
        .new
        .workloads
        .iter()
        .map(|workload| workload.sentence.clone());
    let policies = effects
        .new
        .admission
        .iter()
        .filter(|admission| admission.webhook.is_empty())
        .map(|admission| admission.sentence.clone());
    workloads.chain(policies).collect()
}

/// The rights `new` asks for beyond what `running` holds, as `Android`
/// compares them (aggregation included), each in words; empty when it
/// asks for nothing more.
pub async fn rights_beyond(
    client: &Client,
    new: &[Value],
    running: &[Value],
) -> Result<Vec<String>, kube::Error> {
    let aggregators = cluster_aggregators(client, new, running).await?;
    let wanted = Rights::of_in(new, &aggregators);
    let held = Rights::of_in(running, &aggregators);
    Ok(wanted
        .beyond(&held)
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Every right `new` asks for, and those beyond what `running` holds, as
/// `Android` compares them, each in words: what an `ApprovalPolicy`'s
/// `rights.all` and `rights.new` are. The cluster's aggregating roles are
/// read once for both.
pub async fn rights_all_and_beyond(
    client: &Client,
    new: &[Value],
    running: &[Value],
) -> Result<(Vec<String>, Vec<String>), kube::Error> {
    let aggregators = cluster_aggregators(client, new, running).await?;
    let wanted = Rights::of_in(new, &aggregators);
    let held = Rights::of_in(running, &aggregators);
    let words = |rights: Vec<&Right>| rights.iter().map(ToString::to_string).collect();
    Ok((
        words(wanted.beyond(&Rights::default())),
        words(wanted.beyond(&held)),
    ))
}

/// Where `request`'s objects land: a namespaced object naming no namespace
/// in the client's default namespace (in a cluster, the provisioner's
/// own); whether a kind is cluster-scoped as the cluster serves it (a kind
/// it does not serve is taken as namespaced, unless the content's CRD
/// says otherwise); Pakket's namespace is `pakket-system`.
async fn landing_of(request: &ApprovalRequest<'_>) -> Landing {
    let mut landing = Landing::new(request.client.default_namespace(), None);
    let mut kinds = request.kinds.clone();
    for object in request
        .objects
        .iter()
        .chain(request.running.unwrap_or_default())
    {
        let reference = apply::reference_of(object);
        if reference.namespace.is_some() {
            continue;
        }
        if let Ok((_, false)) = kinds.resource(&reference).await {
            landing
                .cluster_scoped
                .insert((group_of(&reference.api_version), reference.kind));
        }
    }
    landing
}

/// A change no policy approves by itself ([`needs_a_person`]: it runs a
/// workload as Pakket or in Pakket's namespace, or writes into that
/// namespace): waiting for a person, naming what it would do.
async fn only_a_person(request: &ApprovalRequest<'_>) -> Option<Approval> {
    let effects = Effects::of(request.objects, request.running, &landing_of(request).await);
    let why = needs_a_person(&effects)?;
    let name = request.instance.name_any();
    Some(Approval::Pending {
        message: format!(
            "waiting for approval (ProvisionerClass {} has approval: {}): {why}; review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}` or `kubectl instance deny {name}`",
            request.class.name_any(),
            request.policy,
        ),
        retry: None,
    })
}

/// What an `ApprovalPolicy`'s rules read of a change: every right `new`
/// asks for and those beyond what `running` holds, in words (`rights.all`,
/// `rights.new`), and its typed [`Effects`] (`effects`); `running` is
/// `None` when nothing runs to compare with. `landing` says where objects
/// land; the cluster's aggregating roles are read here, once for both.
pub async fn rights_and_effects(
    client: &Client,
    new: &[Value],
    running: Option<&[Value]>,
    mut landing: Landing,
) -> Result<(Vec<String>, Vec<String>, Effects), kube::Error> {
    landing.aggregators = cluster_aggregators(client, new, running.unwrap_or_default()).await?;
    let placed = landing.place(new);
    let held = landing.place(running.unwrap_or_default());
    let wanted = Rights::of_in(&placed, &landing.aggregators);
    let words = |rights: Vec<&Right>| rights.iter().map(ToString::to_string).collect();
    Ok((
        words(wanted.beyond(&Rights::default())),
        words(wanted.beyond(&Rights::of_in(&held, &landing.aggregators))),
        Effects::of(new, running, &landing),
    ))
}

/// The cluster's aggregating ClusterRoles, read only when the content
/// (new or running) holds a labelled ClusterRole they could select.
async fn cluster_aggregators(
    client: &Client,
    new: &[Value],
    running: &[Value],
) -> Result<Vec<Aggregator>, kube::Error> {
    let labelled = |objects: &[Value]| {
        objects.iter().any(|object| {
            object.get("kind").and_then(Value::as_str) == Some("ClusterRole")
                && object
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .is_some_and(|labels| !labels.is_empty())
        })
    };
    if !labelled(new) && !labelled(running) {
        return Ok(Vec::new());
    }
    let roles = Api::<ClusterRole>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await?;
    Ok(roles
        .items
        .iter()
        .filter(|role| role.aggregation_rule.is_some())
        .filter_map(|role| serde_json::to_value(role).ok())
        .filter_map(|role| Aggregator::of(&role))
        .collect())
}

/// The policies every provisioner gets: `UserPermission` and `Android`;
/// any other policy waits for a person. A provisioner that adds policies
/// of its own falls back to this for the rest.
pub async fn standard(request: &ApprovalRequest<'_>) -> Approval {
    match request.policy {
        "UserPermission" => user_permission(request).await,
        "Android" => android(request).await,
        _ => request.wait_for_a_person(),
    }
}

/// `UserPermission`: approved when the requester of the current spec may
/// do everything the apply does, as RBAC would judge it:
/// - `create` and `patch` on every object, in the namespace it lands in
///   (`default` for a namespaced object that names none);
/// - for a Role or ClusterRole, hold every rule in it where it applies, or
///   `escalate` on it (a ClusterRole with an aggregationRule: `escalate`);
/// - for a RoleBinding or ClusterRoleBinding, hold every rule of the role
///   it references (from the bundle, else from the cluster) where the
///   binding applies, or `bind` on that role;
/// - `delete` on every object the Instance installed that the new content
///   lacks (what the prune after the apply deletes).
///
/// Otherwise it waits, naming the first missing right. Whatever the
/// requester holds, what runs as Pakket or in Pakket's namespace waits for
/// a person ([`needs_a_person`]).
pub async fn user_permission(request: &ApprovalRequest<'_>) -> Approval {
    let name = request.instance.name_any();
    if let Some(refused) = only_a_person(request).await {
        return refused;
    }
    let pending = |message: String| Approval::Pending {
        message: format!(
            "{message}; an admin can grant it, or run `kubectl instance approve {name}`"
        ),
        retry: Some(USER_PERMISSION_RETRY),
    };
    let (requester, annotation) = match pakket_api::requester(request.instance, request.record_key)
    {
        Ok(found) => found,
        Err(error) => {
            return Approval::Pending {
                message: format!(
                    "approval: UserPermission does not trust this Instance's requester record: {error}; a person must approve: run `kubectl instance approve {name}`"
                ),
                retry: None,
            };
        }
    };
    let role = if annotation == pakket_api::LAST_CHANGED_BY_ANNOTATION {
        "who last changed the spec"
    } else {
        "the creator"
    };
    let who = format!("{role} {}", requester.username);
    // What this spec removes is deleted on the requester's behalf too.
    let removed = removed_objects(request.instance, request.objects);
    let asked = Permission {
        client: request.client,
        requester: &requester,
        who: &who,
        objects: request.objects,
        removed: &removed,
    };
    match asked.check(request.kinds.clone()).await {
        Ok(said) => Approval::Approved(said),
        Err(why) => pending(why),
    }
}

/// What `userPermission` asks of the apiserver: whether `requester`
/// (`who`, in messages) may create each of `objects` and delete each of
/// `removed`, by RBAC's own rules. `objects` need hold only what
/// [`crate::trust::policy::permission_view`] keeps of them.
pub struct Permission<'a> {
    /// A client that may create SubjectAccessReviews.
    pub client: &'a Client,
    /// Whose rights are asked about.
    pub requester: &'a CreatorRecord,
    /// How messages name her (`the creator alice`).
    pub who: &'a str,
    /// What the content applies.
    pub objects: &'a [Value],
    /// What the change deletes.
    pub removed: &'a [pakket_api::ObjectRef],
}

impl Permission<'_> {
    /// `Ok` saying so when she may, else `Err` naming the first right
    /// missing.
    pub async fn check(&self, mut kinds: Kinds) -> Result<String, String> {
        let mut checker = Checker {
            reviews: Api::all(self.client.clone()),
            client: self.client.clone(),
            requester: self.requester,
            answers: HashMap::new(),
        };
        for object in self.objects {
            may_create(&mut checker, &mut kinds, object, self.objects, self.who).await?;
        }
        for reference in self.removed {
            may_delete(&mut checker, &mut kinds, reference, self.who).await?;
        }
        Ok(format!(
            "approval: UserPermission: {} may create all {} objects, RBAC included{}",
            self.who,
            self.objects.len(),
            if self.removed.is_empty() {
                String::new()
            } else {
                format!(
                    ", and delete the {} this change removes",
                    self.removed.len()
                )
            }
        ))
    }
}

/// Whether `who` (the requester, as `the creator alice`) may create
/// `object`: apply it, use the classes it names, and grant what it grants;
/// `Err` names the first right missing.
async fn may_create(
    checker: &mut Checker<'_>,
    kinds: &mut apply::Kinds,
    object: &serde_json::Value,
    objects: &[serde_json::Value],
    who: &str,
) -> Result<(), String> {
    let reference = apply::reference_of(object);
    let (group, plural, namespaced) = match kinds.resource(&reference).await {
        Ok((resource, namespaced)) => (resource.group, resource.plural, namespaced),
        // A kind whose CRD comes with the bundle: asked as the CRD defines it.
        Err(error) => {
            let group = pakket_api::group_of(&reference.api_version);
            match apply::defined_resource(objects, group, &reference.kind) {
                Some((plural, namespaced)) => (group.to_owned(), plural, namespaced),
                None => return Err(format!("cannot check {reference}: {error}")),
            }
        }
    };
    let namespace = namespaced.then(|| {
        reference
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned())
    });
    for verb in APPLY_VERBS {
        let access = Access::Resource {
            group: group.clone(),
            resource: plural.clone(),
            subresource: String::new(),
            verb: verb.into(),
            namespace: namespace.clone(),
            name: Some(reference.name.clone()),
        };
        if !checker.allows(&access).await? {
            let resource = if group.is_empty() {
                plural.clone()
            } else {
                format!("{plural}.{group}")
            };
            return Err(format!(
                "approval: UserPermission: {who} may not {verb} {reference} (verb {verb:?} on {resource})"
            ));
        }
    }
    for access in rbac::classes_used(object) {
        if !checker.allows(&access).await? {
            return Err(format!(
                "approval: UserPermission: {who} may not {access}, which {reference} names"
            ));
        }
    }
    let need = rbac::need_of(object, namespace.as_deref())
        .map_err(|error| format!("cannot read {error}"))?;
    checker.meets(&need, objects).await.map_err(|missing| {
        format!("approval: UserPermission: {who} may not create {reference}: {missing}")
    })
}

/// Whether `who` may delete `reference`, which this change removes.
async fn may_delete(
    checker: &mut Checker<'_>,
    kinds: &mut apply::Kinds,
    reference: &pakket_api::ObjectRef,
    who: &str,
) -> Result<(), String> {
    let (group, plural, namespaced) = match kinds.resource(reference).await {
        Ok((resource, namespaced)) => (resource.group, resource.plural, namespaced),
        // A kind no longer served: there is nothing of it to delete.
        Err(_) => return Ok(()),
    };
    let access = Access::Resource {
        group,
        resource: plural,
        subresource: String::new(),
        verb: "delete".into(),
        namespace: if namespaced {
            reference.namespace.clone()
        } else {
            None
        },
        name: Some(reference.name.clone()),
    };
    if checker.allows(&access).await? {
        Ok(())
    } else {
        Err(format!(
            "approval: UserPermission: {who} may not delete {reference}, which this change removes ({access})"
        ))
    }
}

/// For each of `namespaces`, whether `requester` owns it: she may create
/// RoleBindings there ([`rbac::Access::owner_of`]), asked of the
/// apiserver as her. What `requesterOwns(ns)` answers, and what an
/// OperatorRequest's namespaces are judged by.
pub async fn owned_namespaces(
    client: &Client,
    requester: &CreatorRecord,
    namespaces: &[String],
) -> Result<std::collections::BTreeMap<String, bool>, String> {
    let reviews = Api::all(client.clone());
    let mut owns = std::collections::BTreeMap::new();
    for namespace in namespaces {
        let owned = review(&reviews, requester, &Access::owner_of(namespace))
            .await
            .map_err(|error| {
                format!(
                    "asking whether {} owns namespace {namespace} failed ({error})",
                    requester.username
                )
            })?;
        owns.insert(namespace.clone(), owned);
    }
    Ok(owns)
}

/// The objects the Instance has installed that the new content lacks:
/// what the prune after this apply would delete (the runtime's own list
/// of what it applied, which prune also starts from).
pub fn removed_objects(instance: &Instance, objects: &[Value]) -> Vec<pakket_api::ObjectRef> {
    let Some(status) = instance.status.as_ref() else {
        return Vec::new();
    };
    let kept: std::collections::BTreeSet<(String, String, Option<String>, String)> = objects
        .iter()
        .map(|object| {
            let reference = apply::reference_of(object);
            (
                group_of(&reference.api_version),
                reference.kind,
                reference.namespace,
                reference.name,
            )
        })
        .collect();
    status
        .objects
        .iter()
        .filter(|installed| {
            !kept.contains(&(
                group_of(&installed.api_version),
                installed.kind.clone(),
                installed.namespace.clone(),
                installed.name.clone(),
            ))
        })
        .cloned()
        .collect()
}

/// The API group of an `apiVersion` (`""` for the core group): an object
/// moved to another version of its kind is the same object.
fn group_of(api_version: &str) -> String {
    api_version
        .split_once('/')
        .map_or("", |(group, _)| group)
        .to_owned()
}

/// Asks the apiserver whether `requester` may `access`, as RBAC would
/// answer if he asked himself.
pub async fn review(
    reviews: &Api<SubjectAccessReview>,
    requester: &CreatorRecord,
    access: &Access,
) -> Result<bool, String> {
    let (resource_attributes, non_resource_attributes) = match access {
        Access::Resource {
            group,
            resource,
            subresource,
            verb,
            namespace,
            name,
        } => (
            Some(ResourceAttributes {
                group: Some(group.clone()),
                resource: Some(resource.clone()),
                subresource: (!subresource.is_empty()).then(|| subresource.clone()),
                verb: Some(verb.clone()),
                namespace: namespace.clone(),
                name: name.clone(),
                ..ResourceAttributes::default()
            }),
            None,
        ),
        Access::NonResource { path, verb } => (
            None,
            Some(NonResourceAttributes {
                path: Some(path.clone()),
                verb: Some(verb.clone()),
            }),
        ),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(requester.username.clone()),
            uid: requester.uid.clone(),
            groups: Some(requester.groups.clone()),
            resource_attributes,
            non_resource_attributes,
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer: bool = reviews
        .create(&PostParams::default(), &review)
        .await
        .map_err(|error| {
            format!(
                "cannot ask whether {} may {access}: {}",
                requester.username,
                apply::api_message(&error)
            )
        })?
        .status
        .is_some_and(|status| status.allowed);
    Ok(answer)
}

/// Asks the apiserver about one requester, once per distinct question.
struct Checker<'a> {
    reviews: Api<SubjectAccessReview>,
    client: Client,
    requester: &'a CreatorRecord,
    answers: HashMap<Access, bool>,
}

impl Checker<'_> {
    async fn allows(&mut self, access: &Access) -> Result<bool, String> {
        if let Some(answer) = self.answers.get(access) {
            return Ok(*answer);
        }
        if self.answers.len() >= MAX_REVIEWS {
            return Err(format!(
                "approval: UserPermission: checking this bundle would take more than {MAX_REVIEWS} access reviews"
            ));
        }
        let answer = review(&self.reviews, self.requester, access).await?;
        self.answers.insert(access.clone(), answer);
        Ok(answer)
    }

    /// `Ok` when the requester meets what one RBAC object asks; otherwise
    /// the first thing missing, in words.
    async fn meets(&mut self, need: &Need, objects: &[Value]) -> Result<(), String> {
        match need {
            Need::Nothing => Ok(()),
            Need::Role {
                escalate,
                held,
                aggregated,
            } => {
                if self.allows(escalate).await? {
                    return Ok(());
                }
                if *aggregated {
                    return Err(format!(
                        "a ClusterRole with an aggregationRule needs {escalate}"
                    ));
                }
                for access in held {
                    if !self.allows(access).await? {
                        return Err(format!(
                            "it grants {access}, which the requester does not hold (nor {escalate})"
                        ));
                    }
                }
                Ok(())
            }
            Need::Binding {
                bind,
                role,
                namespace,
            } => {
                if self.allows(bind).await? {
                    return Ok(());
                }
                let rules = match rbac::rules_in_bundle(objects, role) {
                    Some(rules) => rules,
                    None => match self.rules_in_cluster(role).await? {
                        Some(rules) => rules,
                        None => {
                            return Err(format!(
                                "it binds {role}, which does not exist, and only {bind} allows that"
                            ));
                        }
                    },
                };
                for rule in &rules {
                    for access in rbac::rule_accesses(rule, namespace.as_deref()) {
                        if !self.allows(&access).await? {
                            return Err(format!(
                                "it binds {role}, which grants {access}, which the requester does not hold (nor {bind})"
                            ));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The rules of a role on the cluster, read with the provisioner's
    /// rights (only to compare with the requester's, never shown).
    async fn rules_in_cluster(&self, role: &RoleKey) -> Result<Option<Vec<PolicyRule>>, String> {
        let unreadable =
            |error: kube::Error| format!("cannot read {role}: {}", apply::api_message(&error));
        if role.kind == "Role" {
            let namespace = role.namespace.clone().unwrap_or_else(|| "default".into());
            let roles: Api<Role> = Api::namespaced(self.client.clone(), &namespace);
            Ok(roles
                .get_opt(&role.name)
                .await
                .map_err(unreadable)?
                .map(|role| role.rules.unwrap_or_default()))
        } else {
            let roles: Api<ClusterRole> = Api::all(self.client.clone());
            Ok(roles
                .get_opt(&role.name)
                .await
                .map_err(unreadable)?
                .map(|role| role.rules.unwrap_or_default()))
        }
    }
}
