//! The admission reviews answered: dispatches a request to the rules for
//! its resource, asks the apiserver what the rules need asked (permissions,
//! ConfigMaps), and merges the answers into one [`Verdict`].
//!
//! Cheap pure checks come first; a request they already refuse costs no
//! SubjectAccessReview and no lookup.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::core::admission::{AdmissionResponse, Operation};
use kube::{Client, ResourceExt};
use pakket_api::{Bundle, BundleSpec, Instance, RecordKey};
use pakket_runtime::kernel::inventory::{self, Provided};

use crate::apis::ApiCache;
use crate::authz::Authorizer;
use crate::index::Index;
use crate::metrics::Metrics;
use crate::review::{Request, Requester, Target, decode};
use crate::rules::content::ConfigMapState;
use crate::rules::use_verb::ClassUse;
use crate::rules::{
    Verdict, approval, bundle, content, creator, finalizer, input_decision, instance_in_use,
    use_verb,
};

/// Which of the two endpoints a review came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Webhook {
    /// `/validate`: the ValidatingWebhookConfiguration.
    Validate,
    /// `/mutate`: the MutatingWebhookConfiguration.
    Mutate,
}

impl Webhook {
    /// `validate` or `mutate`, for metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            Self::Validate => "validate",
            Self::Mutate => "mutate",
        }
    }
}

/// Answers admission reviews.
#[derive(Clone)]
pub struct Admission {
    client: Client,
    authorizer: Authorizer,
    index: Index,
    apis: ApiCache,
    metrics: std::sync::Arc<Metrics>,
    key: RecordKey,
    delegates: std::sync::Arc<Vec<String>>,
}

/// What an [`Admission`] reads from memory: the watched Bundles and
/// classes, and the watched APIs Instances installed.
pub struct Caches {
    /// Bundles, Instances, classes.
    pub index: Index,
    /// CRDs and APIServices labelled with an Instance.
    pub apis: ApiCache,
}

impl Admission {
    /// Answers with `authorizer` for permissions, `caches` for Bundles,
    /// classes and installed APIs, `client` for ConfigMap lookups, and
    /// `key` to seal and verify requester records. `delegates` are the
    /// user names whose writes may carry a sealed record of someone else
    /// ([`creator`]'s delegates). `metrics` counts where the in-use check
    /// found what an Instance provides.
    pub fn new(
        client: Client,
        authorizer: Authorizer,
        caches: Caches,
        metrics: std::sync::Arc<Metrics>,
        key: RecordKey,
        delegates: Vec<String>,
    ) -> Self {
        Self {
            client,
            authorizer,
            index: caches.index,
            apis: caches.apis,
            metrics,
            key,
            delegates: std::sync::Arc::new(delegates),
        }
    }

    /// Whether `requester` is one of the delegates.
    fn is_delegate(&self, requester: &Requester) -> bool {
        self.delegates.contains(&requester.username)
    }

    /// Whether the watches behind the answers have synced.
    pub fn is_ready(&self) -> bool {
        self.index.is_ready()
    }

    /// The verdict on one request.
    pub async fn answer(&self, webhook: Webhook, request: &Request) -> Verdict {
        let requester = Requester::from_user_info(&request.user_info);
        let mut verdict = Verdict::default();
        let writes = matches!(request.operation, Operation::Create | Operation::Update);
        let result = match (webhook, Target::of(request)) {
            (Webhook::Validate, Target::Bundle) if writes => {
                self.validate_bundle(request, &requester, &mut verdict)
                    .await
            }
            (Webhook::Validate, Target::Instance) if writes => {
                self.validate_instance(request, &requester, &mut verdict)
                    .await
            }
            (Webhook::Validate, Target::InstanceStatus) if writes => {
                self.validate_instance_status(request, &requester, &mut verdict)
                    .await
            }
            (Webhook::Validate, Target::ApprovalPolicy) if writes => {
                validate_approval_policy(request, &mut verdict)
            }
            (Webhook::Validate, Target::ConfigMap) => {
                self.validate_config_map(request, &mut verdict);
                Ok(())
            }
            (Webhook::Mutate, Target::Bundle) if writes => mutate_bundle(request, &mut verdict),
            (Webhook::Mutate, Target::Instance) if writes => {
                let delegate = self.is_delegate(&requester);
                mutate_instance(request, &requester, &self.key, delegate, &mut verdict).map(|()| {
                    self.add_finalizer(request, &mut verdict);
                })
            }
            (Webhook::Validate, Target::Instance)
                if matches!(request.operation, Operation::Delete) =>
            {
                self.validate_instance_deletion(request, &requester, &mut verdict)
                    .await
            }
            (Webhook::Validate, Target::Recorded("ClusterPackage"))
                if matches!(request.operation, Operation::Delete) =>
            {
                self.validate_package_deletion(request, &mut verdict).await
            }
            (Webhook::Validate, Target::Recorded("Input"))
                if writes && request.sub_resource.as_deref() == Some("status") =>
            {
                let delegate = self.is_delegate(&requester);
                let recorded = records_of(
                    Webhook::Validate,
                    "Input",
                    request,
                    &requester,
                    &self.key,
                    delegate,
                    &mut verdict,
                );
                self.check_input_decision(request, &requester, &mut verdict)
                    .await;
                recorded
            }
            (webhook, Target::Recorded(kind)) if writes => {
                let delegate = self.is_delegate(&requester);
                records_of(
                    webhook,
                    kind,
                    request,
                    &requester,
                    &self.key,
                    delegate,
                    &mut verdict,
                )
            }
            (_, target) => {
                tracing::debug!(?target, operation = ?request.operation, "nothing to check");
                Ok(())
            }
        };
        if let Err(message) = result {
            verdict.deny(422, message);
        }
        verdict
    }

    /// An Instance whose APIs are in use stays, unless an admin overrides
    /// ([`rules::instance_in_use`]).
    async fn validate_instance_deletion(
        &self,
        request: &Request,
        requester: &Requester,
        verdict: &mut Verdict,
    ) -> Result<(), String> {
        let Some(object) = request.old_object.as_ref() else {
            return Ok(());
        };
        let instance: Instance = crate::review::decode(object, "Instance", "oldObject")?;
        let name = instance.name_any();
        if let Some(reason) = instance_in_use::override_reason(&instance) {
            match self
                .authorizer
                .allows(requester, &instance_in_use::permission(&name))
                .await
            {
                Ok(true) => {
                    if !request.dry_run {
                        self.record_override(&instance, requester, reason);
                    }
                }
                Ok(false) => verdict.deny(403, instance_in_use::override_denial(requester, &name)),
                Err(error) => verdict.deny(
                    503,
                    format!(
                        "Instance {name}: cannot check the {} verb: {error}; try again",
                        instance_in_use::OVERRIDE_VERB
                    ),
                ),
            }
            return Ok(());
        }
        let checked = match self.provided(&instance).await {
            Ok(provided) => instance_in_use::refusal(&self.client, &instance, &provided).await,
            Err(error) => Err(instance_in_use::undecided(&name, &error)),
        };
        match checked {
            Ok(Some(message)) => verdict.deny(403, message),
            Ok(None) => {}
            Err(message) => verdict.deny(503, message),
        }
        Ok(())
    }

    /// What `instance` provides: its CRDs and APIServices from the watch
    /// cache ([`ApiCache`]) once it has synced, listed until then (an
    /// unsynced cache would say "nothing", and an Instance in use would go).
    async fn provided(&self, instance: &Instance) -> Result<Provided, kube::Error> {
        let properties = inventory::active_properties(&self.client, instance).await?;
        if let Some(provided) = self.apis.provided(instance, &properties) {
            self.metrics.provided_looked_up("cache");
            return Ok(provided);
        }
        self.metrics.provided_looked_up("list");
        inventory::provided(&self.client, instance, &properties).await
    }

    /// An Event on `instance`: who deleted it while in use, and why.
    fn record_override(&self, instance: &Instance, requester: &Requester, reason: &str) {
        use kube::runtime::events::{Event, EventType, Recorder, Reporter};
        let recorder = Recorder::new(
            self.client.clone(),
            Reporter {
                controller: "pakket-webhooks".into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        let reference = kube::Resource::object_ref(instance, &());
        let event = Event {
            type_: EventType::Warning,
            reason: "DeletedInUse".into(),
            note: Some(format!(
                "{requester} deleted Instance {} without checking whether its APIs are in use ({}): {reason}",
                instance.name_any(),
                instance_in_use::OVERRIDE_ANNOTATION
            )),
            action: "Delete".into(),
            secondary: None,
        };
        tracing::warn!(instance = %instance.name_any(), %requester, %reason, "an Instance deleted while in use, by override");
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::warn!(%error, "recording an in-use deletion");
            }
        });
    }

    /// A ClusterPackage others depend on stays ([`rules::package_in_use`]).
    async fn validate_package_deletion(
        &self,
        request: &Request,
        verdict: &mut Verdict,
    ) -> Result<(), String> {
        let Some(object) = request.old_object.as_ref() else {
            return Ok(());
        };
        let package: pakket_packages_api::ClusterPackage =
            crate::review::decode(object, "ClusterPackage", "oldObject")?;
        // Fails open, like the webhook's failurePolicy: a delete the
        // dependents cannot be read for goes through, and pakket-package's
        // finalizer still keeps a needed package.
        match crate::rules::package_in_use::refusal(&self.client, &package).await {
            Ok(Some(message)) => verdict.deny(403, message),
            Ok(None) => {}
            Err(problem) => tracing::warn!(%problem, "package deletion allowed unchecked"),
        }
        Ok(())
    }

    async fn validate_bundle(
        &self,
        request: &Request,
        requester: &Requester,
        verdict: &mut Verdict,
    ) -> Result<(), String> {
        let (old, new) = objects::<Bundle>(request, "Bundle")?;
        let name = new.name_any();
        if let Some(old) = &old
            && let Err(message) = bundle::immutable(&name, &old.spec, &new.spec)
        {
            verdict.deny(422, message);
        }
        let spec_is_new = use_verb::spec_is_new(old.as_ref().map(|old| &old.spec), &new.spec);
        if spec_is_new {
            verdict.invalid(in_object(
                "Bundle",
                &name,
                bundle::spec_problems(&new.spec, "spec"),
            ));
        }
        if !verdict.is_allowed() || !spec_is_new {
            return Ok(());
        }
        let uses = use_verb::bundle_classes(&new.spec);
        self.check_use("Bundle", &name, requester, &uses, verdict)
            .await;
        self.warn_missing_classes("Bundle", &name, &uses, verdict);
        self.check_content("Bundle", &name, requester, &new.spec, "spec", verdict)
            .await;
        Ok(())
    }

    async fn validate_instance(
        &self,
        request: &Request,
        requester: &Requester,
        verdict: &mut Verdict,
    ) -> Result<(), String> {
        let (old, new) = objects::<Instance>(request, "Instance")?;
        let name = new.name_any();
        let subject = creator::Subject {
            delegate: self.is_delegate(requester),
            ..creator::Subject::instance(&name)
        };
        let digest = pakket_api::spec_digest(&new.spec);
        let creator = match &old {
            None => {
                creator::check_create_for(&subject, &new.metadata, &digest, requester, &self.key)
            }
            Some(old) => creator::check_update_for(
                &subject,
                (&old.metadata, &pakket_api::spec_digest(&old.spec)),
                (&new.metadata, &digest),
                requester,
                &self.key,
                false,
            ),
        };
        if let Err(message) = creator {
            verdict.deny(403, message);
        }
        if instance_in_use::pivot_override_set(old.as_ref(), &new).is_some() {
            match self
                .authorizer
                .allows(requester, &instance_in_use::permission(&name))
                .await
            {
                Ok(true) => {}
                Ok(false) => verdict.deny(
                    403,
                    instance_in_use::pivot_override_denial(requester, &name),
                ),
                Err(error) => verdict.deny(
                    503,
                    format!(
                        "Instance {name}: cannot check the {} verb: {error}; try again",
                        instance_in_use::OVERRIDE_VERB
                    ),
                ),
            }
        }
        let spec_is_new = use_verb::spec_is_new(old.as_ref().map(|old| &old.spec), &new.spec);
        let embedded = new.spec.bundle.spec.as_ref().filter(|_| spec_is_new);
        if let Some(spec) = embedded {
            verdict.invalid(in_object(
                "Instance",
                &name,
                bundle::spec_problems(spec, "spec.bundle.spec"),
            ));
        }
        if !verdict.is_allowed() {
            return Ok(());
        }
        self.check_approval(old.as_ref(), &new, requester, verdict)
            .await;
        if spec_is_new {
            let uses = use_verb::instance_classes(&new.spec);
            self.check_use("Instance", &name, requester, &uses, verdict)
                .await;
            self.warn_missing_classes("Instance", &name, &uses, verdict);
        }
        if let Some(spec) = embedded {
            self.check_content(
                "Instance",
                &name,
                requester,
                spec,
                "spec.bundle.spec",
                verdict,
            )
            .await;
        }
        Ok(())
    }

    async fn validate_instance_status(
        &self,
        request: &Request,
        requester: &Requester,
        verdict: &mut Verdict,
    ) -> Result<(), String> {
        let (old, new) = objects::<Instance>(request, "Instance")?;
        let name = new.name_any();
        if let Some(old) = &old
            && let Err(message) = creator::check_update_for(
                &creator::Subject::instance(&name),
                (&old.metadata, &pakket_api::spec_digest(&old.spec)),
                (&new.metadata, &pakket_api::spec_digest(&new.spec)),
                requester,
                &self.key,
                true,
            )
        {
            verdict.deny(403, message);
            return Ok(());
        }
        self.check_approval(old.as_ref(), &new, requester, verdict)
            .await;
        Ok(())
    }

    fn validate_config_map(&self, request: &Request, verdict: &mut Verdict) {
        if !self.index.is_ready() {
            verdict.deny(
                503,
                "the pakket webhook has not finished reading Bundles yet, so it cannot tell \
                 whether this ConfigMap is Bundle content; retry in a few seconds",
            );
            return;
        }
        let namespace = request.namespace.as_deref().unwrap_or_default();
        let bundles = self.index.bundles_mounting(namespace, &request.name);
        let checked = match request.operation {
            Operation::Delete => content::check_delete(namespace, &request.name, &bundles),
            Operation::Create | Operation::Update => {
                let object = request.object.as_ref();
                let immutable = object
                    .and_then(|object| object.data.get("immutable"))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                let labelled = object
                    .and_then(|object| object.metadata.labels.as_ref())
                    .is_some_and(pakket_api::is_bundle_content);
                content::check_write(namespace, &request.name, immutable, labelled, &bundles)
            }
            Operation::Connect => Ok(()),
        };
        if let Err(message) = checked {
            verdict.deny(403, message);
        }
    }

    /// Denies unless the requester may `approve` when the write changes the
    /// Approved condition, or the revisions an automatic rollback installs
    /// from; free when it changes neither.
    async fn check_approval(
        &self,
        old: Option<&Instance>,
        new: &Instance,
        requester: &Requester,
        verdict: &mut Verdict,
    ) {
        let change = approval::change(old, new);
        let rollback_changed = approval::rollback_record_changed(old, new);
        if change.is_none() && !rollback_changed {
            return;
        }
        let name = new.name_any();
        match self
            .authorizer
            .allows(requester, &approval::permission(&name))
            .await
        {
            Ok(true) => {}
            Ok(false) => verdict.deny(
                403,
                match &change {
                    Some(change) => approval::denial(requester, &name, change),
                    None => approval::rollback_denial(requester, &name),
                },
            ),
            Err(error) => verdict.deny(503, unavailable(&error)),
        }
    }

    /// Denies a change of an Input's `status.decision` unless the
    /// requester may `approve` that Input and the record names her.
    async fn check_input_decision(
        &self,
        request: &Request,
        requester: &Requester,
        verdict: &mut Verdict,
    ) {
        let data = |object: Option<&kube::core::DynamicObject>| {
            object.and_then(|o| input_decision::decision_of(&o.data).cloned())
        };
        let old = data(request.old_object.as_ref());
        let new = data(request.object.as_ref());
        let name = request.name.clone();
        match input_decision::check(requester, &name, old.as_ref(), new.as_ref()) {
            Ok(false) => {}
            Ok(true) => match self
                .authorizer
                .allows(requester, &input_decision::permission(&name))
                .await
            {
                Ok(true) => {}
                Ok(false) => verdict.deny(403, input_decision::denial(requester, &name)),
                Err(error) => verdict.deny(503, unavailable(&error)),
            },
            Err(message) => verdict.deny(403, message),
        }
    }

    async fn check_use(
        &self,
        kind: &str,
        name: &str,
        requester: &Requester,
        uses: &[ClassUse],
        verdict: &mut Verdict,
    ) {
        let permissions: Vec<_> = uses
            .iter()
            .map(|used| use_verb::permission(&used.class))
            .collect();
        let answers = futures::future::join_all(
            permissions
                .iter()
                .map(|permission| self.authorizer.allows(requester, permission)),
        )
        .await;
        for (used, answer) in uses.iter().zip(answers) {
            match answer {
                Ok(true) => {}
                Ok(false) => verdict.deny(403, use_verb::denial(kind, name, requester, used)),
                Err(error) => verdict.deny(503, unavailable(&error)),
            }
        }
    }

    fn warn_missing_classes(
        &self,
        kind: &str,
        name: &str,
        uses: &[ClassUse],
        verdict: &mut Verdict,
    ) {
        if !self.index.is_ready() {
            return;
        }
        for used in uses {
            if !self.index.class_exists(&used.class) {
                verdict.warnings.push(format!(
                    "{kind} {name:?}: ProvisionerClass {:?} named in {} does not exist yet; \
                     nothing acts on this {kind} until an admin creates it",
                    used.class, used.field
                ));
            }
        }
    }

    async fn check_content(
        &self,
        kind: &str,
        name: &str,
        requester: &Requester,
        spec: &BundleSpec,
        field: &str,
        verdict: &mut Verdict,
    ) {
        for (at, source) in content::mounts(spec, field) {
            match self
                .authorizer
                .allows(requester, &content::read_permission(source))
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    verdict.deny(
                        403,
                        content::read_denial(kind, name, &at, requester, source),
                    );
                    continue;
                }
                Err(error) => {
                    verdict.deny(503, unavailable(&error));
                    continue;
                }
            }
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &source.namespace);
            let state = match api.get_opt(&source.name).await {
                Ok(None) => ConfigMapState::Missing,
                Ok(Some(found)) => ConfigMapState::Found {
                    immutable: found.immutable == Some(true),
                    labelled: pakket_api::is_bundle_content(found.labels()),
                },
                Err(source_error) => {
                    let error = crate::Error::Lookup {
                        what: format!("ConfigMap {}/{}", source.namespace, source.name),
                        source: source_error,
                    };
                    verdict.deny(503, unavailable(&error));
                    continue;
                }
            };
            match content::check_mount(kind, name, &at, source, state) {
                Ok(None) => {}
                Ok(Some(warning)) => verdict.warnings.push(warning),
                Err(message) => verdict.deny(403, message),
            }
        }
    }
}

impl Admission {
    /// Instance CREATE in the mutating phase: the finalizer of the
    /// provisioner its class names ([`finalizer::on_create`]), if that
    /// provisioner has claimed the class. One that never ran (a typo in the
    /// id) would never remove it, and the Instance could not be deleted; a
    /// provisioner adds its finalizer itself before it writes anything.
    fn add_finalizer(&self, request: &Request, verdict: &mut Verdict) {
        if request.operation != Operation::Create || !verdict.is_allowed() {
            return;
        }
        let Ok((_, new)) = objects::<Instance>(request, "Instance") else {
            return;
        };
        if let Some(provisioner) = self.index.serving_provisioner_of(&new.spec.class)
            && let Some(add) = finalizer::on_create(
                &new.metadata,
                pakket_api::ownership::finalizer_of(&provisioner),
            )
        {
            verdict.patch.push(add);
        }
    }
}

/// Bundle UPDATE in the mutating phase: refuses a changed spec before the
/// CRD's CEL rule would, with a message that names what changed.
fn mutate_bundle(request: &Request, verdict: &mut Verdict) -> Result<(), String> {
    let (old, new) = objects::<Bundle>(request, "Bundle")?;
    if let Some(old) = old
        && let Err(message) = bundle::immutable(&new.name_any(), &old.spec, &new.spec)
    {
        verdict.deny(422, message);
    }
    Ok(())
}

/// Instance CREATE and UPDATE in the mutating phase: the requester records.
fn mutate_instance(
    request: &Request,
    requester: &Requester,
    key: &RecordKey,
    delegate: bool,
    verdict: &mut Verdict,
) -> Result<(), String> {
    let raw = request
        .object
        .as_ref()
        .ok_or("the request carries no object")?;
    let shown = display_name(request, raw);
    let (old, new) = objects::<Instance>(request, "Instance")?;
    let name = new.name_any();
    let digest = pakket_api::spec_digest(&new.spec);
    match old {
        None => {
            let subject = creator::Subject {
                delegate,
                ..creator::Subject::instance(&shown)
            };
            match creator::on_create_for(&subject, &new.metadata, &digest, requester, key) {
                Ok(patch) => verdict.patch = patch,
                Err(message) => verdict.deny(403, message),
            }
        }
        Some(old) => {
            let subject = creator::Subject {
                delegate,
                ..creator::Subject::instance(&name)
            };
            verdict.patch = creator::on_update_for(
                &subject,
                (&old.metadata, &pakket_api::spec_digest(&old.spec)),
                (&new.metadata, &digest),
                requester,
                key,
            )
        }
    }
    Ok(())
}

/// The requester records of an Input, Operator, ClusterPackage or Package
/// (`kind`), both phases:
/// sealed for the digest of its spec as JSON ([`pakket_api::value_digest`]),
/// which the resolveset process verifies before it installs anything on
/// the author's behalf.
fn records_of(
    webhook: Webhook,
    kind: &str,
    request: &Request,
    requester: &Requester,
    key: &RecordKey,
    delegate: bool,
    verdict: &mut Verdict,
) -> Result<(), String> {
    let new = request
        .object
        .as_ref()
        .ok_or_else(|| format!("the {kind} request carries no object"))?;
    let old = match (&request.operation, &request.old_object) {
        (Operation::Update, Some(old)) => Some(old),
        _ => None,
    };
    let digest = |object: &kube::core::DynamicObject| {
        pakket_api::value_digest(object.data.get("spec").unwrap_or(&serde_json::Value::Null))
    };
    // A namespaced object's record names its namespace too: one sealed
    // for Package a/db says nothing about Package b/db.
    let name = match request.namespace.as_deref() {
        Some(namespace) if !namespace.is_empty() => {
            format!("{namespace}/{}", display_name(request, new))
        }
        _ => display_name(request, new),
    };
    let subject = creator::Subject {
        kind,
        name: &name,
        delegate,
    };
    let new_digest = digest(new);
    match (webhook, old) {
        (Webhook::Mutate, None) => {
            match creator::on_create_for(&subject, &new.metadata, &new_digest, requester, key) {
                Ok(patch) => verdict.patch = patch,
                Err(message) => verdict.deny(403, message),
            }
        }
        (Webhook::Mutate, Some(old)) => {
            verdict.patch = creator::on_update_for(
                &subject,
                (&old.metadata, &digest(old)),
                (&new.metadata, &new_digest),
                requester,
                key,
            );
        }
        (Webhook::Validate, None) => {
            if let Err(message) =
                creator::check_create_for(&subject, &new.metadata, &new_digest, requester, key)
            {
                verdict.deny(403, message);
            }
        }
        (Webhook::Validate, Some(old)) => {
            let status = request.sub_resource.as_deref() == Some("status");
            if let Err(message) = creator::check_update_for(
                &subject,
                (&old.metadata, &digest(old)),
                (&new.metadata, &new_digest),
                requester,
                key,
                status,
            ) {
                verdict.deny(403, message);
            }
        }
    }
    Ok(())
}

/// The old (on UPDATE) and new objects of a request, decoded.
fn objects<K: serde::de::DeserializeOwned>(
    request: &Request,
    kind: &str,
) -> Result<(Option<K>, K), String> {
    let new = request
        .object
        .as_ref()
        .ok_or_else(|| format!("the {kind} request carries no object"))?;
    let new = decode(new, kind, "object")?;
    let old = match (&request.operation, &request.old_object) {
        (Operation::Update, Some(old)) => Some(decode(old, kind, "oldObject")?),
        _ => None,
    };
    Ok((old, new))
}

/// Prefixes each problem with the object it is about.
fn in_object(kind: &str, name: &str, problems: Vec<String>) -> Vec<String> {
    problems
        .into_iter()
        .map(|problem| format!("{kind} {name:?}: {problem}"))
        .collect()
}

fn unavailable(error: &crate::Error) -> String {
    format!("the pakket webhook could not decide: {error}; retry, and tell an admin if it persists")
}

/// The admission response for a verdict.
pub fn respond(request: &Request, verdict: Verdict) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    if !verdict.warnings.is_empty() {
        response.warnings = Some(verdict.warnings.clone());
    }
    if !verdict.is_allowed() {
        let reason = match verdict.code {
            403 => "Forbidden",
            422 => "Invalid",
            _ => "ServiceUnavailable",
        };
        response = response.deny(verdict.message());
        response.result.code = verdict.code;
        response.result.reason = reason.to_owned();
        return response;
    }
    if verdict.patch.is_empty() {
        return response;
    }
    match response
        .clone()
        .with_patch(json_patch::Patch(verdict.patch))
    {
        Ok(patched) => patched,
        Err(error) => {
            let mut failed = response.deny(format!(
                "the pakket webhook could not write its patch: {error}"
            ));
            failed.result.code = 500;
            failed
        }
    }
}

/// A name for the object in messages, even on CREATE with `generateName`.
fn display_name(request: &Request, object: &kube::core::DynamicObject) -> String {
    object
        .metadata
        .name
        .clone()
        .or_else(|| object.metadata.generate_name.clone())
        .unwrap_or_else(|| request.name.clone())
}

/// An ApprovalPolicy whose rules do not compile is refused, each problem
/// naming its rule's field: a typo shows at `kubectl apply`, not as
/// Instances waiting for a person.
fn validate_approval_policy(request: &Request, verdict: &mut Verdict) -> Result<(), String> {
    let (_, policy) = objects::<pakket_api::ApprovalPolicy>(request, "ApprovalPolicy")?;
    verdict.invalid(in_object(
        "ApprovalPolicy",
        &policy.name_any(),
        pakket_runtime::kernel::trust::policy::problems(&policy.spec.rules),
    ));
    Ok(())
}
