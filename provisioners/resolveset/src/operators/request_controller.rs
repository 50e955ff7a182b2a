//! The OperatorRequest controller: a namespace owner's request becomes an
//! Operator written on her behalf (her sealed record as its
//! `last-changed-by`, which the webhook keeps from this process only), so
//! the Input it stands for, and the Instance installing the operator, are
//! hers to be approved: by the class's policy over her request, or by a
//! person. The request's status mirrors that Instance's approval, install
//! and health.
//!
//! What a request may ask is checked here, as the requester, on every
//! reconcile: every namespace the operator runs in or watches must be
//! hers (she may create RoleBindings there, asked of the apiserver with a
//! SubjectAccessReview for her sealed record). The operator watches the
//! request's namespace only, and runs there (`OwnNamespace`) or in
//! another namespace (`SingleNamespace`); both are asked. When she loses
//! one, what was written for her is withdrawn (the Operator and its
//! Input deleted) and the request says so (`Withdrawn`).
//!
//! Nothing is adopted nor deleted by name (see [`super::request_objects`]):
//! the names carry the request's UID, what was generated is recognised by
//! the seal and the owner reference, and anything else at the name is
//! named on the request (`NameTaken`) and left as it is.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, watcher};
use kube::{Client, ResourceExt as _};
use pakket_api::{CreatorRecord, Instance};
use pakket_operators_api::request::{
    REQUEST_ANNOTATION, REQUEST_SEAL_ANNOTATION, Reason, operator_name,
};
use pakket_operators_api::{
    InstallMode, Operator, OperatorConfig, OperatorRequest, OperatorRequestStatus, OperatorSpec,
};
use pakket_resolve_api::InputClass;
use pakket_runtime::kernel::leader::LeaderState;
use pakket_runtime::kernel::trust::approval::review;
use pakket_runtime::kernel::trust::rbac::Access;
use serde_json::json;

use super::request_install::{self, Facts, Installing, Said};
use super::request_objects::{Found, RequestId, seal};
use crate::inputs::input::Input;
use crate::operators::operator::OperatorStatus;
use pakket_resolve_api::InputConditionType;

/// The field manager of the Operators and statuses it writes.
pub const MANAGER: &str = "pakket-resolveset-operator-requests";
/// Kept on a request until the Operator written for it is gone.
pub const FINALIZER: &str = "operators.pakket.dev/operator-request";
/// How often a request is looked at again without a change. Its
/// Operator's and Instance's changes start a reconcile (watched); what no
/// watch shows is the requester's rights (RBAC changes), so an accepted
/// request is asked again about her namespaces every minute (losing one
/// withdraws what was written for her)...
const RESYNC: Duration = Duration::from_secs(60);
/// ...and a refused one, whose requester may be fixing exactly that while
/// she waits, every 15 s.
const RESYNC_REFUSED: Duration = Duration::from_secs(15);
/// The Operator's conditions a request carries as they are.
const COPIED: [&str; 2] = ["ConfigConflict", "CatalogUnavailable"];
/// The annotation the set writes on each child: the package it installs.
const PACKAGE_ANNOTATION: &str = "resolve.pakket.dev/package";

/// What every reconcile shares.
pub struct RequestContext {
    /// The apiserver.
    pub client: Client,
    /// Whether this replica writes; `None`: always.
    pub leader: Option<LeaderState>,
    /// Verifies who wrote each request and seals her on its Operator.
    pub record_key: Option<pakket_api::RecordKey>,
    /// The label selector the process runs with, if any (the InputClass
    /// for requests is looked for among those it matches).
    pub selector: Option<String>,
}

/// The label an admin puts on the one InputClass whose Inputs requests'
/// Operators write (InputClasses are an admin's to write).
pub const FOR_REQUESTS_LABEL: &str = "operators.pakket.dev/for-requests";

/// Runs the controller; `selector` limits it to requests (and Operators)
/// with matching labels.
pub async fn run(context: Arc<RequestContext>, selector: Option<String>) {
    let config = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    let requests: Api<OperatorRequest> = Api::all(context.client.clone());
    let operators: Api<Operator> = Api::all(context.client.clone());
    // The Operators, cached: a change to one reaches its request, and a
    // change to an Instance (its approval, install, health) reaches the
    // requests whose Operators list it, without a periodic read of each.
    let (written, writer) = reflector::store::<Operator>();
    let operator_changes = watcher(operators, config.clone())
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    let children = watcher(
        Api::<kube::core::PartialObjectMeta<Instance>>::all(context.client.clone()),
        watcher::Config::default().labels(crate::inputs::input_controller::SET_LABEL),
    )
    .default_backoff()
    .touched_objects();
    Controller::new(requests, config)
        .watches_stream(operator_changes, |operator| written_for(&operator))
        .watches_stream(children, move |instance| {
            let name = instance.name_any();
            written
                .state()
                .into_iter()
                .filter(|operator| {
                    operator.status.as_ref().is_some_and(|status| {
                        status
                            .components
                            .iter()
                            .any(|c| c.kind == "Instance" && c.name == name)
                    })
                })
                .filter_map(|operator| written_for(&operator))
                .collect::<Vec<_>>()
        })
        .run(reconcile, error_policy, context)
        .for_each(|_| async {})
        .await;
}

/// The request an Operator was written for, by its annotation (only a
/// reconcile is started: the request itself checks the seal).
fn written_for(operator: &Operator) -> Option<ObjectRef<OperatorRequest>> {
    let written_for = operator.annotations().get(REQUEST_ANNOTATION)?;
    let (namespace, name) = written_for.split_once('/')?;
    Some(ObjectRef::<OperatorRequest>::new(name).within(namespace))
}

fn error_policy(
    request: Arc<OperatorRequest>,
    error: &kube::Error,
    _: Arc<RequestContext>,
) -> Action {
    tracing::warn!(request = %request.name_any(), %error, "reconciling an OperatorRequest");
    Action::requeue(Duration::from_secs(5))
}

/// Writes `finalizers` on `request` as it was read: with its
/// resourceVersion, so a finalizer another controller added meanwhile is
/// never dropped by this list. A conflict means the request changed; it is
/// read again at once. Otherwise `then`.
async fn write_finalizers(
    requests: &Api<OperatorRequest>,
    request: &OperatorRequest,
    finalizers: &[&str],
    then: Action,
) -> Result<Action, kube::Error> {
    let written = requests
        .patch(
            &request.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": {
                "finalizers": finalizers,
                "resourceVersion": request.resource_version(),
            } })),
        )
        .await;
    match written {
        Ok(_) => Ok(then),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Action::requeue(Duration::ZERO)),
        Err(error) => Err(error),
    }
}

async fn reconcile(
    request: Arc<OperatorRequest>,
    context: Arc<RequestContext>,
) -> Result<Action, kube::Error> {
    if !context.leader.as_ref().is_none_or(LeaderState::is_leader) {
        return Ok(Action::requeue(RESYNC));
    }
    let namespace = request.namespace().unwrap_or_default();
    let name = request.name_any();
    let id = RequestId {
        written_for: format!("{namespace}/{name}"),
        uid: request.uid().unwrap_or_default(),
    };
    let operator = operator_name(&namespace, &name, &id.uid);
    let requests: Api<OperatorRequest> = Api::namespaced(context.client.clone(), &namespace);
    if request.metadata.deletion_timestamp.is_some() {
        if request.finalizers().iter().any(|f| f == FINALIZER) {
            if let Some(key) = &context.record_key {
                Found::read(&context.client, key, &operator, &id)
                    .await?
                    .withdraw(&context.client)
                    .await?;
            }
            let kept: Vec<&str> = request
                .finalizers()
                .iter()
                .map(String::as_str)
                .filter(|f| *f != FINALIZER)
                .collect();
            return write_finalizers(&requests, &request, &kept, Action::await_change()).await;
        }
        return Ok(Action::await_change());
    }
    if !request.finalizers().iter().any(|f| f == FINALIZER) {
        let mut finalizers: Vec<&str> = request.finalizers().iter().map(String::as_str).collect();
        finalizers.push(FINALIZER);
        return write_finalizers(
            &requests,
            &request,
            &finalizers,
            Action::requeue(Duration::ZERO),
        )
        .await;
    }
    let status = match accepted(&request, &context, &operator, &id).await? {
        Ok((written, requester)) => mirrored(&request, &context, &written, &requester).await?,
        Err(refusal) => {
            // What a lost namespace withdrew is said once and kept: read
            // what the request says now from the API server, not from a
            // cache that may not have seen this controller's last write
            // (it would then say "nothing was written" over "Withdrawn").
            let fresh;
            let said_now = if refusal.reason == Reason::NotYourNamespace {
                fresh = requests.get(&name).await?;
                &fresh
            } else {
                &*request
            };
            let refusal = match &context.record_key {
                Some(key) if refusal.reason != Reason::NameTaken => {
                    let found = Found::read(&context.client, key, &operator, &id).await?;
                    settled(refusal, &found, said_now, &context.client).await?
                }
                _ => refusal,
            };
            refusal.status(said_now)
        }
    };
    let mut status = status;
    let standing = pakket_api::readiness::of_request(&status.conditions);
    let generation = request.metadata.generation;
    pakket_api::readiness::write(
        &mut status.conditions,
        generation,
        &standing,
        Timestamp::now(),
    );
    if request.status.as_ref() != Some(&status) {
        let patch = json!({
            "apiVersion": "operators.pakket.dev/v1alpha1",
            "kind": "OperatorRequest",
            "status": status,
        });
        requests
            .patch_status(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
    }
    let accepted = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Accepted" && c.status == "True");
    Ok(Action::requeue(if accepted {
        RESYNC
    } else {
        RESYNC_REFUSED
    }))
}

/// Why a request has no Operator: `Accepted=False` with this reason.
struct Refusal {
    reason: Reason,
    message: String,
}

/// What a refusal does to what was written for the request before: a
/// namespace she lost withdraws it (and the request says what went); any
/// other refusal (a missing class, a record that does not verify yet)
/// leaves what runs as it is, and says so.
async fn settled(
    mut refusal: Refusal,
    found: &Found,
    request: &OperatorRequest,
    client: &Client,
) -> Result<Refusal, kube::Error> {
    if refusal.reason == Reason::NotYourNamespace {
        if found.is_written() {
            found.withdraw(client).await?;
        }
        // Once said, what went is kept on the request while the loss lasts
        // (an Operator deleted in the foreground is seen again meanwhile).
        let said = request
            .condition("Accepted")
            .filter(|c| c.reason == Reason::Withdrawn.as_str());
        match (said, found.is_written()) {
            (Some(before), _) => {
                refusal.reason = Reason::Withdrawn;
                refusal.message = before.message.clone();
            }
            (None, true) => {
                refusal.reason = Reason::Withdrawn;
                refusal.message = format!(
                    "{}; so {} written for this request were deleted",
                    refusal.message,
                    found.written().join(" and ")
                );
            }
            (None, false) => refusal
                .message
                .push_str("; nothing was written. Ask for a namespace you own"),
        }
    } else if let Some(operator) = &found.operator {
        refusal.message.push_str(&format!(
            "; Operator {}, written for the request before, is left as it was (delete the request to remove it)",
            operator.name_any()
        ));
    }
    Ok(refusal)
}

impl Refusal {
    fn status(&self, request: &OperatorRequest) -> OperatorRequestStatus {
        let mut status = request.status.clone().unwrap_or_default();
        set(
            &mut status.conditions,
            request,
            "Accepted",
            "False",
            self.reason.as_str(),
            self.message.clone(),
        );
        status.conditions.retain(|c| c.type_ == "Accepted");
        status.operator = None;
        status.instance = None;
        status.installed_version = None;
        status.observed_generation = request.metadata.generation;
        status
    }
}

/// The requester the webhooks' sealed record names for this very request,
/// or the refusal that says there is none.
fn verified_requester(
    request: &OperatorRequest,
    key: &pakket_api::RecordKey,
) -> Result<pakket_api::CreatorRecord, Refusal> {
    let (namespace, name) = (request.namespace().unwrap_or_default(), request.name_any());
    let spec = serde_json::to_value(&request.spec).unwrap_or_default();
    pakket_api::requester_of(
        request.metadata.annotations.as_ref(),
        Some(key),
        &pakket_api::record_object("OperatorRequest", &format!("{namespace}/{name}")),
        &pakket_api::value_digest(&spec),
    )
    .map(|(requester, _)| requester)
    .map_err(|error| Refusal {
        reason: Reason::NoRequester,
        message: format!(
            "no requester record that verifies ({error}); Pakket's webhooks write it when the request is created or changed, so create it again while they run"
        ),
    })
}

/// Where the operator runs: this namespace (`OwnNamespace`), or the other
/// one the request names (`SingleNamespace`); or why the mode and the
/// field do not go together.
fn install_namespace_of(request: &OperatorRequest, namespace: &str) -> Result<String, Refusal> {
    match (request.spec.install_mode, &request.spec.install_namespace) {
        (InstallMode::OwnNamespace, None) => Ok(namespace.to_owned()),
        (InstallMode::OwnNamespace, Some(_)) => Err(Refusal {
            reason: Reason::InvalidInstallMode,
            message: "spec.installNamespace: OwnNamespace runs the operator in this namespace; remove installNamespace, or ask for installMode: SingleNamespace".into(),
        }),
        (InstallMode::SingleNamespace, Some(other)) if *other != namespace => Ok(other.clone()),
        (InstallMode::SingleNamespace, _) => Err(Refusal {
            reason: Reason::InvalidInstallMode,
            message: format!(
                "spec.installNamespace: SingleNamespace runs the operator in another namespace you own, watching {namespace}; name it, or ask for installMode: OwnNamespace"
            ),
        }),
    }
}

/// The Operator written (or kept) for the request, or why there is none.
async fn accepted(
    request: &OperatorRequest,
    context: &RequestContext,
    operator: &str,
    id: &RequestId,
) -> Result<Result<(Operator, CreatorRecord), Refusal>, kube::Error> {
    let namespace = request.namespace().unwrap_or_default();
    let Some(key) = &context.record_key else {
        return Ok(Err(Refusal {
            reason: Reason::NoRecordKey,
            message: "pakket-resolveset runs without --record-key-file, so it cannot tell who asked; an admin starts it with the webhooks' record key".into(),
        }));
    };
    let requester = match verified_requester(request, key) {
        Ok(requester) => requester,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let install_namespace = match install_namespace_of(request, &namespace) {
        Ok(install_namespace) => install_namespace,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let watched = vec![namespace.clone()];
    for (asked, does) in asked_namespaces(&install_namespace, &watched) {
        if !owns(context, &requester, asked).await? {
            return Ok(Err(Refusal {
                reason: Reason::NotYourNamespace,
                message: format!(
                    "{} may not create RoleBindings in namespace {asked}, so it is not theirs to {does} an operator in",
                    requester.username
                ),
            }));
        }
    }
    let input_class = match input_class(context).await? {
        Ok(input_class) => input_class,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let operators: Api<Operator> = Api::all(context.client.clone());
    let written_for = id.written_for.clone();
    let found = Found::read(&context.client, key, operator, id).await?;
    if let Some(taken) = &found.taken {
        return Ok(Err(Refusal {
            reason: Reason::NameTaken,
            message: format!(
                "{taken} exists and was not written for this request, so it is left as it is (nothing is adopted, nothing deleted); its owner or an admin removes it, or delete and make the request again (a new request gets a new name)"
            ),
        }));
    }
    let spec = OperatorSpec {
        input_class,
        catalog: request.spec.catalog.clone(),
        version: request.spec.version.clone(),
        constraints: Vec::new(),
        config: Some(OperatorConfig {
            install_namespace: Some(install_namespace),
            watch_namespaces: Some(watched),
            deployment_config: None,
            namespace_template: None,
        }),
    };
    let spec_value = serde_json::to_value(&spec).unwrap_or_default();
    let on_behalf = on_behalf_of(&requester, key, operator, &spec_value);
    let seal = seal(key, operator, id);
    // No label of the request's (a user's words) reaches the Operator:
    // only those the process's own selector names, so that it sees what it
    // wrote (none in deploy/, which runs without one).
    let labels = crate::process::equality_labels(context.selector.as_deref());
    let object = json!({
        "apiVersion": "operators.pakket.dev/v1alpha1",
        "kind": "Operator",
        "metadata": {
            "name": operator,
            "labels": labels,
            "annotations": {
                REQUEST_ANNOTATION: written_for,
                REQUEST_SEAL_ANNOTATION: seal,
                pakket_api::LAST_CHANGED_BY_ANNOTATION: on_behalf.to_annotation(),
            },
        },
        "spec": spec_value,
    });
    // An Operator already as it would be written costs no write.
    if let Some(current) = found
        .operator
        .filter(|current| already_written(current, &object))
    {
        return Ok(Ok((current, requester)));
    }
    let written = operators
        .patch(
            operator,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await?;
    Ok(Ok((written, requester)))
}

/// Whether `current` (the Operator written for the request, its seal
/// verified) already holds what `desired` sets: its spec, labels and the
/// three annotations this controller writes.
fn already_written(current: &Operator, desired: &serde_json::Value) -> bool {
    let spec = serde_json::to_value(&current.spec).ok();
    let labels = serde_json::to_value(current.labels()).ok();
    let annotations = current.annotations();
    let same_annotations = [
        REQUEST_ANNOTATION,
        REQUEST_SEAL_ANNOTATION,
        pakket_api::LAST_CHANGED_BY_ANNOTATION,
    ]
    .into_iter()
    .all(|key| {
        annotations.get(key).map(String::as_str) == desired["metadata"]["annotations"][key].as_str()
    });
    spec.as_ref() == Some(&desired["spec"])
        && labels.as_ref() == Some(&desired["metadata"]["labels"])
        && same_annotations
}

/// The one InputClass an admin labelled for requests.
async fn input_class(context: &RequestContext) -> Result<Result<String, Refusal>, kube::Error> {
    let selector = match &context.selector {
        Some(selector) => format!("{selector},{FOR_REQUESTS_LABEL}=true"),
        None => format!("{FOR_REQUESTS_LABEL}=true"),
    };
    let classes = Api::<InputClass>::all(context.client.clone())
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    Ok(match classes.as_slice() {
        [class] => Ok(class.name_any()),
        [] => Err(Refusal {
            reason: Reason::NoInputClass,
            message: format!(
                "no InputClass is labelled {FOR_REQUESTS_LABEL}=true, so requests have no class; an admin labels the one they use"
            ),
        }),
        more => Err(Refusal {
            reason: Reason::NoInputClass,
            message: format!(
                "{} InputClasses are labelled {FOR_REQUESTS_LABEL}=true ({}); an admin keeps the label on one",
                more.len(),
                more.iter()
                    .map(|c| c.name_any())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    })
}

/// The requester, sealed again as the one who last changed the Operator's
/// spec `spec`: the webhook keeps such a record from this process only,
/// and the Operator controller carries it into the Input.
fn on_behalf_of(
    requester: &CreatorRecord,
    key: &pakket_api::RecordKey,
    operator: &str,
    spec: &serde_json::Value,
) -> CreatorRecord {
    requester.sealed_for(
        key,
        pakket_api::LAST_CHANGED_BY_ANNOTATION,
        &pakket_api::record_object("Operator", operator),
        pakket_api::value_digest(spec),
    )
}

/// The namespaces a request asks for, each once, with what the operator
/// does there: runs in `install`, and watches `watched`. Every one is asked
/// as the requester.
fn asked_namespaces<'a>(install: &'a str, watched: &'a [String]) -> Vec<(&'a str, &'static str)> {
    let mut asked = vec![(install, "run")];
    for namespace in watched {
        match asked.iter_mut().find(|(n, _)| *n == namespace.as_str()) {
            Some((_, does)) => *does = "run and watch",
            None => asked.push((namespace.as_str(), "watch")),
        }
    }
    asked
}

/// Whether `requester` owns `namespace`: she may create RoleBindings there
/// (asked as the runtime asks for `UserPermission`).
async fn owns(
    context: &RequestContext,
    requester: &CreatorRecord,
    namespace: &str,
) -> Result<bool, kube::Error> {
    review(
        &Api::all(context.client.clone()),
        requester,
        &Access::owner_of(namespace),
    )
    .await
    .map_err(|problem| kube::Error::Service(problem.into()))
}

/// The request's status: accepted, and what its install says
/// ([`super::request_install`]).
async fn mirrored(
    request: &OperatorRequest,
    context: &RequestContext,
    operator: &Operator,
    requester: &CreatorRecord,
) -> Result<OperatorRequestStatus, kube::Error> {
    let old = request.status.clone().unwrap_or_default();
    let mut conditions = old.conditions.clone();
    let operator_name = operator.name_any();
    set(
        &mut conditions,
        request,
        "Accepted",
        "True",
        Reason::OperatorWritten.as_str(),
        format!("Operator {operator_name} asks for it on your behalf"),
    );
    let operator_status = operator.status.clone().unwrap_or_default();
    let package = request.spec.catalog.package.as_str();
    let input = Api::<Input>::all(context.client.clone())
        .get_opt(&operator_name)
        .await?;
    let resolution = input
        .as_ref()
        .and_then(|input| input.condition(InputConditionType::ResolutionFailed.as_str()));
    let (named, found) = installing_instance(context, &operator_status, package).await?;
    let installing = match (&named, &found) {
        (None, _) => Installing::NotNamed,
        (Some(name), None) => Installing::NotWritten(name),
        (Some(name), Some(instance)) => {
            let hers = context.record_key.as_ref().is_some_and(|key| {
                pakket_api::requester(instance, Some(key)).is_ok_and(|(record, _)| {
                    record.username == requester.username && record.uid == requester.uid
                })
            });
            if hers {
                Installing::Hers(instance)
            } else {
                Installing::NotHers(name)
            }
        }
    };
    let facts = Facts {
        package,
        input: &operator_name,
        resolution,
        installing,
    };
    for said in request_install::conditions(&facts) {
        match said {
            Said::Mirrored(condition) => pakket_api::condition::set(
                &mut conditions,
                Condition {
                    observed_generation: request.metadata.generation,
                    ..condition
                },
            ),
            Said::Own(type_, status, reason, message) => {
                set(
                    &mut conditions,
                    request,
                    type_,
                    status,
                    reason.as_str(),
                    message,
                );
            }
        }
    }
    // What the Operator says of its package's config and catalog is the
    // request's too; once gone there, it goes here.
    for type_ in COPIED {
        match operator_status.conditions.iter().find(|c| c.type_ == type_) {
            Some(said) => pakket_api::condition::set(
                &mut conditions,
                Condition {
                    observed_generation: request.metadata.generation,
                    ..said.clone()
                },
            ),
            None => conditions.retain(|c| c.type_ != type_),
        }
    }
    // Another's Instance is neither named nor its version reported.
    let shown = matches!(installing, Installing::Hers(_) | Installing::NotWritten(_));
    let hers = matches!(installing, Installing::Hers(_));
    let instance = named.clone().filter(|_| shown);
    Ok(OperatorRequestStatus {
        conditions,
        operator: Some(operator_name),
        instance,
        installed_version: operator_status.installed_version.filter(|_| hers),
        observed_generation: request.metadata.generation,
    })
}

/// The Instance the Operator names for the request's package (its name),
/// and that Instance if it is written. Among the Instances the Operator
/// lists (the package's and its dependencies'), the package's is the one
/// the set annotated with it.
async fn installing_instance(
    context: &RequestContext,
    operator_status: &OperatorStatus,
    package: &str,
) -> Result<(Option<String>, Option<Instance>), kube::Error> {
    let instances: Api<Instance> = Api::all(context.client.clone());
    let mut first_unwritten = None;
    for component in operator_status
        .components
        .iter()
        .filter(|component| component.kind == "Instance")
    {
        match instances.get_opt(&component.name).await? {
            Some(instance)
                if instance
                    .annotations()
                    .get(PACKAGE_ANNOTATION)
                    .map(String::as_str)
                    == Some(package) =>
            {
                return Ok((Some(component.name.clone()), Some(instance)));
            }
            Some(_) => {}
            None => {
                first_unwritten.get_or_insert_with(|| component.name.clone());
            }
        }
    }
    Ok((first_unwritten, None))
}

/// Sets condition `type_` for the request's generation (its transition
/// time kept while status and reason stay, as everywhere).
fn set(
    conditions: &mut Vec<Condition>,
    request: &OperatorRequest,
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
) {
    pakket_api::condition::set(
        conditions,
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            observed_generation: request.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_as_it_would_be_written_is_not_written_again_and_any_difference_is() {
        let desired = json!({
            "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
            "metadata": {
                "name": "request-1",
                "labels": {},
                "annotations": {
                    REQUEST_ANNOTATION: "team-a/etcd",
                    REQUEST_SEAL_ANNOTATION: "seal",
                    pakket_api::LAST_CHANGED_BY_ANNOTATION: "{\"username\":\"alice\"}",
                },
            },
            "spec": {
                "inputClass": "subscription",
                "catalog": {"name": "c", "package": "etcd"},
            },
        });
        let current: Operator = serde_json::from_value(desired.clone()).unwrap();
        assert!(already_written(&current, &desired));
        let mut other = desired.clone();
        other["spec"]["version"] = json!("0.9.4");
        assert!(!already_written(&current, &other));
        let mut resealed = desired.clone();
        resealed["metadata"]["annotations"][REQUEST_SEAL_ANNOTATION] = json!("another");
        assert!(!already_written(&current, &resealed));
        let mut requester = desired;
        requester["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
            json!("{\"username\":\"bob\"}");
        assert!(!already_written(&current, &requester));
    }

    #[test]
    fn every_namespace_the_operator_runs_in_or_watches_is_asked_once() {
        let own = vec!["team-a".to_owned()];
        assert_eq!(
            asked_namespaces("team-a", &own),
            [("team-a", "run and watch")]
        );
        assert_eq!(
            asked_namespaces("team-a-ops", &own),
            [("team-a-ops", "run"), ("team-a", "watch")]
        );
    }
}
