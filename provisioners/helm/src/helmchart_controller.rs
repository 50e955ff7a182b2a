//! HelmCharts: a namespace owner's chart becomes an Instance of the helm
//! class, written by this process on her behalf and sealed with her
//! identity (the webhooks' record of who wrote the HelmChart, verified
//! with the record key; the webhooks accept that seal on an Instance from
//! this process only, a delegate). The class approves by
//! `UserPermission`, so she gets exactly what she could have created by
//! hand; the Instance's `namespaceOnly` makes the provisioner refuse
//! anything cluster-scoped or outside her namespace before anything is
//! written ([`crate::provisioner::confined`]).
//!
//! The Instance is named from the HelmChart's namespace, name **and UID**
//! (random, visible only to who may read the HelmChart), so nobody takes
//! the name first; what this process made is recognised by its seal over
//! the HelmChart's identity, never by a label or name: anything else at
//! the name is reported (`NameTaken`), not adopted, not deleted. Deleting
//! the HelmChart uninstalls the Instance first (a finalizer). Its status
//! mirrors the Instance's `Unpacked`, `Approved`, `Installed` and
//! `Healthy`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource as _, ResourceExt as _};
use pakket_api::{Instance, RecordKey, readiness};
use pakket_helm_api::{HelmChart, HelmChartStatus};
use pakket_runtime::secret_values::SecretValues;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::values_from::{self, Unread, ValuesRead};

/// The field manager of the Instances written for HelmCharts.
const MANAGER: &str = "pakket-helm-charts";
/// The finalizer that uninstalls the Instance before the HelmChart goes.
pub const FINALIZER: &str = "helm.pakket.dev/uninstall";
/// The label of Instances written for HelmCharts (what the controller
/// watches; no proof of anything).
pub const CHART_LABEL: &str = "helm.pakket.dev/helmchart";
/// The annotations naming the HelmChart an Instance was written for.
const NAMESPACE_ANNOTATION: &str = "helm.pakket.dev/namespace";
const NAME_ANNOTATION: &str = "helm.pakket.dev/name";
/// This process's seal over the HelmChart an Instance was made for.
const SEAL_ANNOTATION: &str = "helm.pakket.dev/instance-seal";
const MAKER: &str = "pakket-helm";

/// What the controller needs.
pub struct ChartsContext {
    /// The client (pakket-helm's ServiceAccount).
    pub client: Client,
    /// The ProvisionerClass the Instances name.
    pub class: String,
    /// Verifies authors' records and seals requesters.
    pub record_key: Option<RecordKey>,
    /// Only HelmCharts with these labels (tests sharing a control plane);
    /// `None`: every one.
    pub selector: Option<String>,
    /// Values read from Secrets for the provisioner in this process
    /// ([`crate::values_from`]).
    pub secret_values: Arc<SecretValues>,
}

/// Why a HelmChart has no Instance written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// Runs the HelmChart controller until the stream ends.
pub async fn run(context: Arc<ChartsContext>) -> Result<(), kube::Error> {
    let charts: Api<HelmChart> = Api::all(context.client.clone());
    let instances: Api<Instance> = Api::all(context.client.clone());
    let mut config = watcher::Config::default();
    if let Some(selector) = &context.selector {
        config = config.labels(selector);
    }
    Controller::new(charts, config)
        .watches(
            instances,
            watcher::Config::default().labels(CHART_LABEL),
            |instance| {
                let annotations = instance.annotations();
                Some(
                    ObjectRef::new(annotations.get(NAME_ANNOTATION)?)
                        .within(annotations.get(NAMESPACE_ANNOTATION)?),
                )
            },
        )
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "HelmChart reconcile");
            }
        })
        .await;
    Ok(())
}

fn error_policy(_: Arc<HelmChart>, error: &Error, _: Arc<ChartsContext>) -> Action {
    tracing::warn!(%error, "HelmChart reconcile failed; trying again");
    Action::requeue(Duration::from_secs(5))
}

/// The Instance of the HelmChart `namespace/name` with `uid`:
/// `helmchart-` and 16 hex digits of their digest.
pub fn instance_name(namespace: &str, name: &str, uid: &str) -> String {
    let digest = Sha256::digest(format!("{namespace}/{name}/{uid}").as_bytes());
    format!("helmchart-{}", &hex::encode(digest)[..16])
}

/// What sits at a HelmChart's Instance name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtTheName {
    /// Nothing.
    Nothing,
    /// The Instance this process made for the HelmChart (its seal
    /// verifies), going already or not.
    Ours {
        /// Whether it is being deleted.
        deleting: bool,
    },
    /// An Instance this process did not make for it.
    Another,
}

/// What the controller does next for one HelmChart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// It is being deleted: delete its Instance, then look again.
    DeleteInstance,
    /// It is being deleted and its Instance is going: look again soon.
    AwaitInstanceGone,
    /// It is being deleted and nothing of this process's is left: drop the
    /// finalizer.
    Release,
    /// Nothing is written; `Accepted=False` says why.
    Refuse {
        /// The condition's reason.
        reason: &'static str,
        /// Its message.
        message: String,
    },
    /// Write (apply) the Instance, putting the finalizer on first when it
    /// is missing.
    Write {
        /// Whether the finalizer is missing.
        add_finalizer: bool,
    },
}

/// The next step for a HelmChart whose Instance is `name`, from what was
/// read: whether it is being deleted, has the finalizer, what sits at the
/// name, whether this process holds the record key, and why its
/// `valuesFrom` could not be read, if it could not. Without the key
/// nothing is written: no author could be verified and no Instance proven
/// this process's, and a name or annotation someone can write is no proof.
/// Unread values write nothing either: the Instance already there keeps
/// running as it was.
pub fn step(
    deleting: bool,
    has_finalizer: bool,
    at_the_name: AtTheName,
    has_key: bool,
    unread: Option<Unread>,
    name: &str,
) -> Step {
    match (deleting, at_the_name) {
        (true, AtTheName::Ours { deleting: false }) => return Step::DeleteInstance,
        (true, AtTheName::Ours { deleting: true }) => return Step::AwaitInstanceGone,
        (true, _) => return Step::Release,
        (false, _) => {}
    }
    if !has_key {
        return Step::Refuse {
            reason: "NoRecordKey",
            message: "pakket-helm runs without --record-key-file, so it can prove neither who wrote this HelmChart nor which Instance it made; nothing is written. An admin mounts the record key (deploy/helm/provisioner.yaml)".into(),
        };
    }
    if at_the_name == AtTheName::Another {
        return Step::Refuse {
            reason: "NameTaken",
            message: format!(
                "Instance {name} exists and pakket-helm did not make it for this HelmChart (labels are no proof; only its seal is); nothing of it is changed: whoever may delete Instance {name} deletes it, and the chart installs"
            ),
        };
    }
    if let Some(Unread { reason, message }) = unread {
        return Step::Refuse { reason, message };
    }
    Step::Write {
        add_finalizer: !has_finalizer,
    }
}

async fn reconcile(chart: Arc<HelmChart>, context: Arc<ChartsContext>) -> Result<Action, Error> {
    let namespace = chart.namespace().unwrap_or_default();
    let charts: Api<HelmChart> = Api::namespaced(context.client.clone(), &namespace);
    let instances: Api<Instance> = Api::all(context.client.clone());
    let name = instance_name(
        &namespace,
        &chart.name_any(),
        &chart.uid().unwrap_or_default(),
    );
    let at_the_name = match (instances.get_opt(&name).await?, &context.record_key) {
        (None, _) => AtTheName::Nothing,
        (Some(instance), Some(key)) if made_for(&instance, &chart, key) => AtTheName::Ours {
            deleting: instance.metadata.deletion_timestamp.is_some(),
        },
        (Some(_), _) => AtTheName::Another,
    };
    let has_finalizer = chart.finalizers().iter().any(|f| f == FINALIZER);
    let deleting = chart.metadata.deletion_timestamp.is_some();
    let (values, unread) = if deleting {
        (ValuesRead::default(), None)
    } else {
        let author = author(&chart, context.record_key.as_ref());
        match values_from::read(&context.client, &chart, author.as_ref()).await {
            Ok(values) => (values, None),
            Err(unread) => (ValuesRead::default(), Some(unread)),
        }
    };
    match step(
        deleting,
        has_finalizer,
        at_the_name,
        context.record_key.is_some(),
        unread,
        &name,
    ) {
        Step::DeleteInstance => {
            instances.delete(&name, &DeleteParams::default()).await?;
            Ok(Action::requeue(Duration::from_secs(2)))
        }
        Step::AwaitInstanceGone => Ok(Action::requeue(Duration::from_secs(2))),
        Step::Release => {
            context.secret_values.forget(&name);
            set_finalizers(&charts, &chart, false).await?;
            Ok(Action::await_change())
        }
        Step::Refuse { reason, message } => {
            let said = accepted(&chart, "False", reason, &message);
            write_status(&charts, &chart, said, None, None).await?;
            Ok(Action::requeue(Duration::from_secs(30)))
        }
        Step::Write { add_finalizer } => {
            if add_finalizer {
                set_finalizers(&charts, &chart, true).await?;
            }
            context.secret_values.put(&name, values.secrets);
            let desired = instance_for(
                &chart,
                &context.class,
                context.record_key.as_ref(),
                &name,
                &values.entries,
            );
            let written = instances
                .patch(
                    &name,
                    &PatchParams::apply(MANAGER).force(),
                    &Patch::Apply(&desired),
                )
                .await?;
            let said = accepted(
                &chart,
                "True",
                "InstanceWritten",
                &format!("Instance {name} installs it on your behalf"),
            );
            write_status(&charts, &chart, said, Some(&written), Some(&name)).await?;
            // Nothing watches the ConfigMaps and Secrets values come from
            // (a watch of every Secret in the cluster costs more than it
            // saves): they are read again each minute.
            let again = if chart.spec.values_from.is_empty() {
                300
            } else {
                60
            };
            Ok(Action::requeue(Duration::from_secs(again)))
        }
    }
}

/// Whether `instance` is the one this process made for `chart`: its seal
/// over the HelmChart's identity verifies with `key`.
fn made_for(instance: &Instance, chart: &HelmChart, key: &RecordKey) -> bool {
    pakket_api::is_generated_by(
        instance.annotations(),
        key,
        SEAL_ANNOTATION,
        MAKER,
        &pakket_api::record_object("Instance", &instance.name_any()),
        &pakket_api::value_digest(&json!(chart_reference(chart))),
    )
}

fn chart_reference(chart: &HelmChart) -> String {
    format!(
        "HelmChart/{}/{}/{}",
        chart.namespace().unwrap_or_default(),
        chart.name_any(),
        chart.uid().unwrap_or_default()
    )
}

/// The Instance for `chart`, named `name`: the helm class, the chart as
/// its Bundle's one ref, its `valuesFrom` as read, confined to the
/// HelmChart's namespace, sealed with its author as requester when her
/// record verifies.
pub fn instance_for(
    chart: &HelmChart,
    class: &str,
    key: Option<&RecordKey>,
    name: &str,
    values_from: &[Value],
) -> Value {
    let namespace = chart.namespace().unwrap_or_default();
    let mut labels = chart.labels().clone();
    labels.insert(CHART_LABEL.to_owned(), "true".to_owned());
    let mut annotations = BTreeMap::from([
        (NAMESPACE_ANNOTATION.to_owned(), namespace.clone()),
        (NAME_ANNOTATION.to_owned(), chart.name_any()),
    ]);
    if let Some(key) = key {
        annotations.insert(
            SEAL_ANNOTATION.to_owned(),
            pakket_api::generated_seal(
                key,
                SEAL_ANNOTATION,
                MAKER,
                &pakket_api::record_object("Instance", name),
                pakket_api::value_digest(&json!(chart_reference(chart))),
            ),
        );
    }
    let digest = Sha256::digest(chart.spec.chart.as_bytes());
    let bundle = format!("{name}-{}", &hex::encode(digest)[..10]);
    let mut instance = json!({
        "apiVersion": Instance::api_version(&()),
        "kind": Instance::kind(&()),
        "metadata": { "name": name, "labels": labels, "annotations": annotations },
        "spec": {
            "class": class,
            "bundle": { "name": bundle, "spec": { "class": class, "refs": [chart.spec.chart] } },
            "config": {
                "namespace": namespace,
                "releaseName": chart.spec.release_name.clone().unwrap_or_else(|| chart.name_any()),
                "values": chart.spec.values.clone().unwrap_or_default(),
                "namespaceOnly": true,
            },
        },
    });
    if !values_from.is_empty() {
        instance["spec"]["config"]["valuesFrom"] = json!(values_from);
    }
    if let (Some(key), Some(person)) = (key, author(chart, key))
        && let Ok(spec) =
            serde_json::from_value::<pakket_api::InstanceSpec>(instance["spec"].clone())
    {
        let sealed = person.sealed(key, pakket_api::LAST_CHANGED_BY_ANNOTATION, name, &spec);
        instance["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
            json!(sealed.to_annotation());
    }
    instance
}

/// The HelmChart's author, if the webhooks' record verifies for its
/// current spec.
pub fn author(chart: &HelmChart, key: Option<&RecordKey>) -> Option<pakket_api::CreatorRecord> {
    let name = format!(
        "{}/{}",
        chart.namespace().unwrap_or_default(),
        chart.name_any()
    );
    let spec = serde_json::to_value(&chart.spec).ok()?;
    pakket_api::requester_of(
        chart.meta().annotations.as_ref(),
        key,
        &pakket_api::record_object("HelmChart", &name),
        &pakket_api::value_digest(&spec),
    )
    .ok()
    .map(|(record, _)| record)
}

fn accepted(chart: &HelmChart, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: "Accepted".into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: chart.metadata.generation,
        last_transition_time: Time(jiff::Timestamp::now()),
    }
}

/// Writes the status: `accepted` and, from the Instance, its `Unpacked`
/// (where a chart that cannot render says why), `Approved`, `Installed`
/// and `Healthy`; a condition keeps its transition time while
/// its status stays.
async fn write_status(
    charts: &Api<HelmChart>,
    chart: &HelmChart,
    accepted: Condition,
    instance: Option<&Instance>,
    name: Option<&str>,
) -> Result<(), kube::Error> {
    let old = chart.status.clone().unwrap_or_default();
    let mut conditions = old.conditions.clone();
    pakket_api::condition::set(&mut conditions, accepted);
    for type_ in ["Unpacked", "Approved", "Installed", "Healthy"] {
        let mirrored = instance
            .and_then(|i| i.status.as_ref())
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_));
        match mirrored {
            Some(said) => pakket_api::condition::set(
                &mut conditions,
                Condition {
                    observed_generation: chart.metadata.generation,
                    ..said.clone()
                },
            ),
            None => conditions.retain(|c| c.type_ != type_),
        }
    }
    // Accepted, the chart stands where its Instance does (its causes
    // included); refused, or with no Instance yet, as the chart says.
    let accepted = conditions
        .iter()
        .any(|c| c.type_ == "Accepted" && c.status == "True");
    let standing = instance
        .filter(|_| accepted)
        .and_then(readiness::of_instance)
        .unwrap_or_else(|| readiness::of_request(&conditions));
    let generation = chart.metadata.generation;
    readiness::write(
        &mut conditions,
        generation,
        &standing,
        jiff::Timestamp::now(),
    );
    let status = HelmChartStatus {
        conditions,
        instance: name.map(str::to_owned),
        observed_generation: chart.metadata.generation,
    };
    if chart.status.as_ref() == Some(&status) {
        return Ok(());
    }
    charts
        .patch_status(
            &chart.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    Ok(())
}

async fn set_finalizers(
    charts: &Api<HelmChart>,
    chart: &HelmChart,
    present: bool,
) -> Result<(), kube::Error> {
    let mut finalizers: Vec<String> = chart
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if present {
        finalizers.push(FINALIZER.to_owned());
    }
    charts
        .patch(
            &chart.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": finalizers } })),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_helm_api::HelmChartSpec;

    fn chart(values: Value) -> HelmChart {
        let mut chart = HelmChart::new(
            "web",
            HelmChartSpec {
                chart: "helm+https://charts.example/#web@1.0.0".into(),
                release_name: None,
                values: values.as_object().cloned(),
                values_from: Vec::new(),
            },
        );
        chart.metadata.namespace = Some("team-a".into());
        chart.metadata.uid = Some("0000-1111".into());
        chart
    }

    #[test]
    fn the_instance_is_confined_to_the_charts_namespace_and_named_by_its_uid() {
        let chart = chart(json!({"replicaCount": 2}));
        let name = instance_name("team-a", "web", "0000-1111");
        assert!(name.starts_with("helmchart-") && name.len() == 26, "{name}");
        assert_ne!(
            name,
            instance_name("team-a", "web", "0000-2222"),
            "a new HelmChart of the same name gets another"
        );
        let instance = instance_for(&chart, "helm", None, &name, &[]);
        let config = &instance["spec"]["config"];
        assert_eq!(config["namespace"], "team-a");
        assert_eq!(config["namespaceOnly"], true);
        assert_eq!(config["releaseName"], "web");
        assert_eq!(config["values"]["replicaCount"], 2);
        assert_eq!(
            instance["spec"]["bundle"]["spec"]["refs"][0],
            "helm+https://charts.example/#web@1.0.0"
        );
        assert!(
            instance["metadata"]["annotations"]
                .get(pakket_api::LAST_CHANGED_BY_ANNOTATION)
                .is_none(),
            "no verified author, no requester: a person approves"
        );
    }

    #[test]
    fn each_state_gets_its_step_and_nothing_is_written_without_the_key_or_at_anothers_name() {
        use AtTheName::{Another, Nothing, Ours};
        let refused = |reason: &'static str| move |step: &Step| matches!(step, Step::Refuse { reason: r, .. } if *r == reason);
        let write = |add_finalizer| move |step: &Step| *step == Step::Write { add_finalizer };
        // (deleting, has finalizer, at the name, has key, expected)
        type Case = (bool, bool, AtTheName, bool, Box<dyn Fn(&Step) -> bool>);
        let cases: Vec<Case> = vec![
            (false, false, Nothing, true, Box::new(write(true))),
            (
                false,
                true,
                Ours { deleting: false },
                true,
                Box::new(write(false)),
            ),
            (false, true, Another, true, Box::new(refused("NameTaken"))),
            (
                false,
                true,
                Nothing,
                false,
                Box::new(refused("NoRecordKey")),
            ),
            (
                false,
                true,
                Another,
                false,
                Box::new(refused("NoRecordKey")),
            ),
            (
                true,
                true,
                Ours { deleting: false },
                true,
                Box::new(|s: &Step| *s == Step::DeleteInstance),
            ),
            (
                true,
                true,
                Ours { deleting: true },
                true,
                Box::new(|s: &Step| *s == Step::AwaitInstanceGone),
            ),
            // Another's Instance is never deleted for a HelmChart.
            (
                true,
                true,
                Another,
                true,
                Box::new(|s: &Step| *s == Step::Release),
            ),
            (
                true,
                true,
                Nothing,
                false,
                Box::new(|s: &Step| *s == Step::Release),
            ),
        ];
        for (deleting, finalizer, at, key, expected) in cases {
            let got = step(deleting, finalizer, at, key, None, "helmchart-0123");
            assert!(
                expected(&got),
                "{deleting} {finalizer} {at:?} {key}: {got:?}"
            );
        }
        // Values she may not read: nothing is written, the Instance there
        // stays as it is; a HelmChart going is uninstalled all the same.
        let unread = || {
            Some(Unread {
                reason: "ValuesNotReadable",
                message: "spec.valuesFrom[0]: mallory may not get secrets".into(),
            })
        };
        assert!(refused("ValuesNotReadable")(&step(
            false,
            true,
            Ours { deleting: false },
            true,
            unread(),
            "helmchart-0123"
        )));
        assert_eq!(
            step(
                true,
                true,
                Ours { deleting: false },
                true,
                unread(),
                "helmchart-0123"
            ),
            Step::DeleteInstance
        );
        let Step::Refuse { message, .. } = step(false, true, Another, true, None, "helmchart-0123")
        else {
            panic!("refused")
        };
        assert!(
            message.contains("Instance helmchart-0123") && message.contains("only its seal"),
            "{message}"
        );
    }
}
