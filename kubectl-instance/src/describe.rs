//! `kubectl instance describe NAME`: everything about one Instance on one
//! page: conditions, class, Bundle, the operator (registry+v1), objects,
//! pivot history, events.
//!
//! Only the Instance itself must be readable; the Bundle, class, the
//! operator's Deployments, history and events add detail, and what cannot
//! be read is said, not fatal.

use std::fmt::Write as _;
use std::io::Write;

use jiff::Timestamp;
use kube::ResourceExt;
use pakket_api::{Bundle, ConditionType, Instance, ProvisionerClass};
use serde::Serialize;

use crate::error::Error;
use crate::events::{self, EventLine};
use crate::operator::{self, OperatorFacts};
use crate::output::{self, Format};
use crate::pending::{self, PendingContent};
use crate::pivot::{self, Pivot};
use crate::table::Table;
use crate::{age, lookup};

/// What `describe` found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    /// The Instance as the server has it.
    pub instance: Instance,
    /// Its ProvisionerClass, if it exists and could be read.
    pub class: Option<ProvisionerClass>,
    /// Its wanted Bundle.
    pub bundle: BundleFacts,
    /// The operator an Instance of a registry+v1 bundle runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<OperatorFacts>,
    /// Pivots that led to the active Bundle, oldest first.
    pub pivot_history: Vec<Pivot>,
    /// Events regarding the Instance, oldest first.
    pub events: Vec<EventLine>,
    /// What approving (or the next install) would do, when the wanted
    /// Bundle is not the one installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingContent>,
    /// What could not be read, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The Bundle an Instance names.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleFacts {
    /// `spec.bundle.name`.
    pub name: String,
    /// Whether the Instance embeds the Bundle's spec (and so records its status).
    pub embedded: bool,
    /// The Bundle: the one the Instance embeds, else the Bundle object if
    /// it exists and could be read.
    pub object: Option<Bundle>,
}

/// Gathers the facts about Instance `name`.
pub async fn gather(client: &kube::Client, name: &str) -> Result<Description, Error> {
    let mut instance = lookup::instance(client, name).await?;
    // As kubectl does unless --show-managed-fields: noise to a reader.
    instance.metadata.managed_fields = None;
    let mut notes = Vec::new();
    let bundle_name = instance.spec.bundle.name.clone();
    let object = lookup::bundle_of(client, &instance)
        .await
        .unwrap_or_else(|error| {
            notes.push(error.to_string());
            None
        })
        .map(|mut bundle| {
            bundle.metadata.managed_fields = None;
            bundle
        });
    let class = lookup::class(client, &instance.spec.class)
        .await
        .unwrap_or_else(|error| {
            notes.push(error.to_string());
            None
        });
    let active = active_bundle(&instance).to_owned();
    let pivot_history = match pivot::replaced_bundles(client).await {
        Ok(pivots) => pivot::history(&active, &pivots),
        Err(error) => {
            notes.push(error.to_string());
            Vec::new()
        }
    };
    let events = events::for_instance(client, name)
        .await
        .unwrap_or_else(|error| {
            notes.push(error.to_string());
            Vec::new()
        });
    let operator = operator::gather(client, &instance, object.as_ref(), &mut notes).await;
    let pending = match &object {
        Some(bundle) => pending::gather(client, &instance, bundle).await,
        None => None,
    };
    Ok(Description {
        pending,
        operator,
        bundle: BundleFacts {
            name: bundle_name,
            embedded: instance.spec.bundle.spec.is_some(),
            object,
        },
        instance,
        class,
        pivot_history,
        events,
        notes,
    })
}

/// The Bundle installed now, else the one wanted.
fn active_bundle(instance: &Instance) -> &str {
    instance
        .status
        .as_ref()
        .and_then(|status| status.active_bundle.as_deref())
        .unwrap_or(&instance.spec.bundle.name)
}

/// Describes Instance `name`.
pub async fn run(
    client: &kube::Client,
    name: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let description = gather(client, name).await?;
    match format {
        Some(format) => output::print(&description, format, out),
        None => {
            out.write_all(render(&description, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// The description as `kubectl describe`-style text.
pub fn render(description: &Description, now: Timestamp) -> String {
    let instance = &description.instance;
    let mut text = String::new();
    let field = |text: &mut String, label: &str, value: &str| {
        let _ = writeln!(text, "{:<15}{value}", format!("{label}:"));
    };
    field(&mut text, "Name", &instance.name_any());
    let labels: Vec<String> = instance
        .labels()
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    field(
        &mut text,
        "Labels",
        &if labels.is_empty() {
            "<none>".to_owned()
        } else {
            labels.join(",")
        },
    );
    if let Some(created) = instance.creation_timestamp() {
        field(
            &mut text,
            "Created",
            &format!("{} ({} ago)", created.0, age::since(created.0, now)),
        );
    }
    for (label, annotation) in [
        ("Created by", pakket_api::CREATED_BY_ANNOTATION),
        ("Changed by", pakket_api::LAST_CHANGED_BY_ANNOTATION),
    ] {
        if let Some(record) = requester_line(instance, annotation) {
            field(&mut text, label, &record);
        }
    }
    field(&mut text, "Class", &class_line(instance, description));
    // The provisioner's settings (registry-v1: installNamespace,
    // watchNamespaces), one per line, as JSON values.
    if let Some(config) = instance.spec.config.as_ref().filter(|c| !c.is_empty()) {
        text.push_str("Config:\n");
        for (key, value) in config {
            let _ = writeln!(text, "  {key}: {value}");
        }
    }
    let bundle = &description.bundle;
    field(
        &mut text,
        "Bundle",
        &format!(
            "{} ({})",
            bundle.name,
            if bundle.embedded {
                "embedded in the Instance, which records its status"
            } else {
                "a Bundle object of its own"
            }
        ),
    );
    let status = instance.status.clone().unwrap_or_default();
    field(
        &mut text,
        "Active Bundle",
        status.active_bundle.as_deref().unwrap_or("<none>"),
    );
    if let Some(newest) = status.revisions.last() {
        let serving = status.serving_revision.map_or_else(
            || "none rolled out yet".to_owned(),
            |n| format!("serving {n}"),
        );
        field(
            &mut text,
            "Revision",
            &format!(
                "{} ({}, {serving}; `kubectl instance history {}`)",
                newest.number,
                newest.outcome,
                instance.name_any()
            ),
        );
    }
    if let Some(held) = &status.progression {
        field(
            &mut text,
            "Phase",
            &format!(
                "written through {}; {} waits for: {}",
                held.reached,
                held.next,
                held.held_by.join("; ")
            ),
        );
    }

    text.push_str("Conditions:\n");
    if status.conditions.is_empty() {
        text.push_str("  <none> (no provisioner has written status yet)\n");
    } else {
        text.push_str(&conditions_table(&status.conditions, now));
    }

    let _ = writeln!(text, "Bundle {}:", bundle.name);
    text.push_str(&bundle_section(instance, bundle));
    if let Some(facts) = &description.operator {
        text.push_str(&operator::render(facts));
    }

    if status.objects.is_empty() {
        text.push_str("Objects:       <none>\n");
    } else {
        let count = status.object_count.unwrap_or(status.objects.len() as u64);
        let _ = writeln!(
            text,
            "Objects ({}):",
            listed_of(status.objects.len(), count, &status.object_kinds)
        );
        for object in &status.objects {
            let _ = writeln!(text, "  {object} ({})", object.api_version);
        }
    }

    if !status.provides.is_empty() {
        let _ = writeln!(
            text,
            "Provides:      {} (who uses it: `kubectl instance deps {}`)",
            status.provides.join(", "),
            instance.metadata.name.as_deref().unwrap_or_default()
        );
    }
    if let Some(content) = &status.approval {
        let _ = writeln!(
            text,
            "Approval:      covers Bundle {} at {}{} (by {})",
            content.bundle,
            content.digest,
            content
                .generation
                .map(|generation| format!(", generation {generation}"))
                .unwrap_or_default(),
            if content.approved_by.is_empty() {
                "unknown"
            } else {
                &content.approved_by
            }
        );
        if let Some(judged) = &content.judged {
            text.push_str(&judged_lines("  judged on", judged));
        }
    }
    if let Some(pending) = &status.pending_request {
        text.push_str(&judged_lines("Waiting request", pending));
    }
    if let Some(pending) = &description.pending {
        text.push_str(&pending_section(pending));
    }

    let active = active_bundle(instance);
    if description.pivot_history.is_empty() {
        text.push_str("Pivot history: <none>\n");
    } else {
        text.push_str("Pivot history (oldest first):\n");
        let _ = writeln!(
            text,
            "  {}",
            pivot::render(&description.pivot_history, active)
        );
    }
    if active != bundle.name {
        let _ = writeln!(
            text,
            "  pivot pending: {active} → {} (wanted, not active yet)",
            bundle.name
        );
    }

    if description.events.is_empty() {
        text.push_str("Events:        <none>\n");
    } else {
        text.push_str("Events (oldest first):\n");
        text.push_str(&events_table(&description.events, now));
    }
    for note in &description.notes {
        let _ = writeln!(text, "Note: {note}");
    }
    text
}

/// `alice (groups a, b)`, with whether the webhook sealed the record (the
/// plugin has no key to verify it; the provisioner does).
fn requester_line(instance: &Instance, annotation: &str) -> Option<String> {
    let record = pakket_api::CreatorRecord::in_annotation(
        instance.metadata.annotations.as_ref(),
        annotation,
    )?;
    Some(match record {
        Ok(record) => {
            let groups = if record.groups.is_empty() {
                String::new()
            } else {
                format!(" (groups {})", record.groups.join(", "))
            };
            let sealed = if record.seal.is_some() {
                ""
            } else {
                "; not sealed by Pakket's webhook, so not trusted"
            };
            format!("{}{groups}{sealed}", record.username)
        }
        Err(error) => format!("unreadable record: {error}"),
    })
}

/// How many objects a list shows: `3`, or for a list a status cut short
/// `1000 listed of 25000: 24000 ConfigMap (v1), 1000 Secret (v1)`.
fn listed_of(listed: usize, count: u64, kinds: &[pakket_api::KindCount]) -> String {
    if count <= listed as u64 {
        return listed.to_string();
    }
    let per_kind: Vec<String> = kinds
        .iter()
        .map(|k| format!("{} {} ({})", k.count, k.kind, k.api_version))
        .collect();
    format!("{listed} listed of {count}: {}", per_kind.join(", "))
}

/// What a decision was (or would be) judged on, part by part: what an
/// approval covers besides the content, and any change to which is a new
/// request.
fn judged_lines(title: &str, judged: &pakket_api::Judged) -> String {
    let or_none = |part: &str| {
        if part.is_empty() {
            "none".to_owned()
        } else {
            part.to_owned()
        }
    };
    let mut text = format!("{title}:\n");
    let _ = writeln!(text, "    class:     {}", judged.class);
    if !judged.policy.is_empty() {
        let _ = writeln!(text, "    policy:    {}", judged.policy);
    }
    let _ = writeln!(text, "    requester: {}", or_none(&judged.requester));
    let _ = writeln!(text, "    config:    {}", or_none(&judged.config));
    let _ = writeln!(text, "    objects:   {}", judged.effects);
    let _ = writeln!(text, "    deletes:   {} object(s)", judged.deletes.len());
    text
}

/// What approving the pending content would do, for the reader.
fn pending_section(pending: &PendingContent) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "Pending content: Bundle {} at {} (what an approval covers)",
        pending.bundle,
        pending.digest.as_deref().unwrap_or("an unpinned digest")
    );
    let _ = writeln!(
        text,
        "  Objects ({}), and what applying each would do:",
        listed_of(pending.objects.len(), pending.count, &pending.kinds)
    );
    for object in &pending.objects {
        let _ = writeln!(text, "    {}: {}", object.object, object.action);
    }
    if !pending.grants.is_empty() {
        let _ = writeln!(text, "  RBAC it would grant:");
        for grant in &pending.grants {
            for words in &grant.grants {
                let _ = writeln!(text, "    {}: {words}", grant.object);
            }
        }
    }
    text
}

fn class_line(instance: &Instance, description: &Description) -> String {
    let name = &instance.spec.class;
    match &description.class {
        Some(class) => {
            // As the runtime reads it: absent is AllowAll, a non-string
            // gates every Instance (shown as written, so the mistake shows).
            let approval = match class
                .spec
                .parameters
                .as_ref()
                .and_then(|parameters| parameters.get("approval"))
            {
                None => "AllowAll".to_owned(),
                Some(serde_json::Value::String(policy)) => policy.clone(),
                Some(other) => format!("{other} (not a string: nothing installs)"),
            };
            format!(
                "{name} (provisioner {}, approval {approval})",
                class.spec.provisioner
            )
        }
        None => format!("{name} (ProvisionerClass not found or not readable)"),
    }
}

/// Conditions in display order: TYPE STATUS REASON AGE MESSAGE; messages
/// of several lines get their first line in the table and the whole text
/// below it.
/// An Instance's conditions as a table, the four of every Instance first.
fn conditions_table(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    now: Timestamp,
) -> String {
    let mut ordered: Vec<_> = ConditionType::INSTANCE
        .iter()
        .filter_map(|kind| pakket_api::condition::find(conditions, *kind))
        .collect();
    // Conditions of other types (a provisioner's own) follow the four.
    ordered.extend(conditions.iter().filter(|condition| {
        !ConditionType::INSTANCE
            .iter()
            .any(|kind| kind.as_str() == condition.type_)
    }));
    table_of(&ordered, now)
}

/// `conditions`, in the order given, as a table (type, status, reason,
/// age, message); a message of several lines follows the table whole.
pub fn table_of(
    ordered: &[&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    now: Timestamp,
) -> String {
    let mut table = Table::new(&["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"]);
    let mut long = Vec::new();
    for condition in ordered {
        let mut lines = condition.message.lines();
        let mut first = lines.next().unwrap_or_default().to_owned();
        if lines.next().is_some() {
            first.push_str(" (continued below)");
            long.push(condition);
        }
        table.row(vec![
            condition.type_.clone(),
            condition.status.clone(),
            condition.reason.clone(),
            age::since(condition.last_transition_time.0, now),
            first,
        ]);
    }
    let mut text = indent(&table.render(), "  ");
    for condition in long {
        let _ = writeln!(text, "  {} message:", condition.type_);
        text.push_str(&indent(&condition.message, "    "));
    }
    text
}

fn bundle_section(instance: &Instance, bundle: &BundleFacts) -> String {
    let mut text = String::new();
    let refs = bundle
        .object
        .as_ref()
        .map(|object| object.spec.refs.clone())
        .or_else(|| {
            instance
                .spec
                .bundle
                .spec
                .as_ref()
                .map(|spec| spec.refs.clone())
        })
        .unwrap_or_default();
    for reference in &refs {
        let _ = writeln!(text, "  Ref:         {reference}");
    }
    let Some(object) = &bundle.object else {
        text.push_str("  Object:      <none> (not created yet, or not readable)\n");
        return text;
    };
    let status = object.status.clone().unwrap_or_default();
    let _ = writeln!(text, "  Unpacked:    {:?}", status.unpacked);
    match &status.source {
        Some(source) => {
            let mut pinned = source.reference.clone();
            if let Some(digest) = &source.digest {
                let _ = write!(pinned, " @ {digest}");
            }
            if let Some(commit) = &source.commit {
                let _ = write!(pinned, " (commit {commit})");
            }
            let _ = writeln!(text, "  Pinned:      {pinned}");
        }
        None => text.push_str("  Pinned:      <none>\n"),
    }
    if let Some(unpacked) = pakket_api::condition::find(&status.conditions, ConditionType::Unpacked)
        && unpacked.status != "True"
    {
        let _ = writeln!(text, "  Message:     {}", unpacked.message);
    }
    let _ = writeln!(
        text,
        "  Holds:       {} objects",
        status.object_count.unwrap_or(status.objects.len() as u64)
    );
    if let Some(successor) = object.labels().get(pivot::REPLACED_BY_LABEL) {
        let _ = writeln!(text, "  Replaced by: {successor}");
    }
    text.push_str(&properties_lines(&status.properties));
    text
}

/// Most properties `describe` lists; the rest are counted.
const PROPERTIES_SHOWN: usize = 30;
/// Longest property value shown, in characters.
const PROPERTY_VALUE_SHOWN: usize = 120;

/// The properties the provisioner recorded for the content, one per line
/// as `type: value` (compact JSON, cut short), in the order recorded.
fn properties_lines(properties: &[pakket_api::BundleProperty]) -> String {
    if properties.is_empty() {
        return String::new();
    }
    let mut text = String::from("  Properties:\n");
    for property in properties.iter().take(PROPERTIES_SHOWN) {
        let value = match &property.value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let mut shown: String = value.chars().take(PROPERTY_VALUE_SHOWN).collect();
        if shown.len() < value.len() {
            shown.push('…');
        }
        let _ = writeln!(text, "    {}: {shown}", property.type_);
    }
    if properties.len() > PROPERTIES_SHOWN {
        let _ = writeln!(
            text,
            "    … and {} more (kubectl get bundle -o yaml, or the Instance's status.embeddedBundle)",
            properties.len() - PROPERTIES_SHOWN
        );
    }
    text
}

fn events_table(events: &[EventLine], now: Timestamp) -> String {
    let mut table = Table::new(&["TYPE", "REASON", "AGE", "FROM", "MESSAGE"]);
    for event in events {
        let mut age = event
            .time
            .map(|time| age::since(time, now))
            .unwrap_or_default();
        if event.count > 1 {
            age = format!("{age} (x{})", event.count);
        }
        table.row(vec![
            event.kind.clone(),
            event.reason.clone(),
            age,
            event.from.clone(),
            event.message.replace('\n', " "),
        ]);
    }
    indent(&table.render(), "  ")
}

/// The first `rows` lines (header included) of the conditions table under
/// `Conditions:` in `text`, each split into words: what the describe tests
/// of each kind check.
#[cfg(test)]
pub fn conditions_rows(text: &str, rows: usize) -> Vec<Vec<&str>> {
    text.lines()
        .skip_while(|line| *line != "Conditions:")
        .skip(1)
        .take(rows)
        .map(|line| line.split_whitespace().collect())
        .collect()
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::condition::{self, ConditionStatus};
    use pakket_api::{
        BundleSpec, BundleStatus, InstanceStatus, ObjectRef, PinnedSource, Reason, UnpackPhase,
    };

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn what_an_approval_was_judged_on_is_shown_part_by_part() {
        let judged = pakket_api::Judged {
            class: "plain provisioner pakket.dev/plain parameters sha256:01".into(),
            policy: String::new(),
            requester: "alice groups sha256:02".into(),
            config: String::new(),
            effects: "sha256:03".into(),
            deletes: vec!["00".into(), "01".into()],
        };
        assert_eq!(
            judged_lines("Waiting request", &judged),
            "Waiting request:\n    class:     plain provisioner pakket.dev/plain parameters sha256:01\n    requester: alice groups sha256:02\n    config:    none\n    objects:   sha256:03\n    deletes:   2 object(s)\n"
        );
    }

    #[test]
    fn renders_every_section() {
        let mut instance = crate::fixture::instance("web", "web.v3");
        let mut status = InstanceStatus {
            active_bundle: Some("web.v2".into()),
            objects: vec![ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "settings".into(),
                namespace: Some("web".into()),
            }],
            ..InstanceStatus::default()
        };
        condition::set(
            &mut status.conditions,
            condition::new(
                Reason::InstallFailed,
                ConditionStatus::False,
                "cannot install web:\n  because",
                None,
                at(900),
            ),
        );
        condition::set(
            &mut status.conditions,
            condition::new(
                Reason::ApprovedByUser,
                ConditionStatus::True,
                "approved by alice",
                None,
                at(400),
            ),
        );
        instance.status = Some(status);
        instance.spec.config =
            serde_json::json!({ "installNamespace": "web", "watchNamespaces": ["a", "b"] })
                .as_object()
                .cloned();
        let mut bundle = Bundle::new(
            "web.v3",
            BundleSpec {
                class: "plain".into(),
                refs: vec!["docker://registry/web:v3".into()],
                volume_mounts: Vec::new(),
            },
        );
        bundle.status = Some(BundleStatus {
            unpacked: UnpackPhase::Done,
            source: Some(PinnedSource {
                reference: "docker://registry/web:v3".into(),
                digest: Some("sha256:abc".into()),
                commit: None,
            }),
            ..BundleStatus::default()
        });
        let description = Description {
            instance,
            class: None,
            bundle: BundleFacts {
                name: "web.v3".into(),
                embedded: false,
                object: Some(bundle),
            },
            pivot_history: vec![Pivot {
                bundle: "web.v1".into(),
                replaced_by: "web.v2".into(),
            }],
            events: vec![EventLine {
                kind: "Warning".into(),
                reason: "InstallFailed".into(),
                message: "no".into(),
                from: "pakket.dev/plain".into(),
                time: Some(at(950)),
                count: 2,
            }],
            notes: Vec::new(),
            operator: Some(OperatorFacts {
                package: Some("web".into()),
                version: Some("3.0.0".into()),
                ..OperatorFacts::default()
            }),
            pending: Some(PendingContent {
                bundle: "web.v3".into(),
                digest: Some("sha256:abc".into()),
                objects: vec![crate::pending::PendingObject {
                    object: ObjectRef {
                        api_version: "v1".into(),
                        kind: "ConfigMap".into(),
                        name: "taken".into(),
                        namespace: Some("web".into()),
                    },
                    action: "conflict: not managed by Pakket".into(),
                }],
                count: 1,
                kinds: Vec::new(),
                grants: vec![pakket_api::RbacGrant {
                    object: ObjectRef {
                        api_version: "rbac.authorization.k8s.io/v1".into(),
                        kind: "ClusterRole".into(),
                        name: "web".into(),
                        namespace: None,
                    },
                    grants: vec!["get on secrets (core)".into()],
                }],
            }),
        };
        let text = render(&description, at(1_000));
        assert!(
            text.contains(
                "Pending content: Bundle web.v3 at sha256:abc (what an approval covers)\n"
            ) && text.contains("    ConfigMap/web/taken: conflict: not managed by Pakket\n")
                && text.contains(
                    "  RBAC it would grant:\n    ClusterRole/web: get on secrets (core)\n"
                ),
            "{text}"
        );
        assert!(
            text.contains(
                "Config:\n  installNamespace: \"web\"\n  watchNamespaces: [\"a\",\"b\"]\n"
            ),
            "{text}"
        );
        // Approved sorts before Installed whatever the stored order.
        let approved = text.find("  Approved ").unwrap();
        let installed = text.find("  Installed ").unwrap();
        assert!(approved < installed, "{text}");
        assert!(
            text.contains("cannot install web: (continued below)"),
            "{text}"
        );
        assert!(
            text.contains("  Installed message:\n    cannot install web:\n      because\n"),
            "{text}"
        );
        assert!(
            text.contains("  Pinned:      docker://registry/web:v3 @ sha256:abc\n"),
            "{text}"
        );
        assert!(text.contains("  ConfigMap/web/settings (v1)\n"), "{text}");
        // The operator section sits between the Bundle and its objects.
        let operator = text.find("Operator:      web 3.0.0\n").expect(&text);
        assert!(
            text.find("  Holds:").unwrap() < operator && operator < text.find("Objects (").unwrap(),
            "{text}"
        );
        assert!(text.contains("  web.v1 → web.v2 (active)\n"), "{text}");
        assert!(text.contains("pivot pending: web.v2 → web.v3"), "{text}");
        assert!(text.contains("50s (x2)"), "{text}");
        assert!(
            text.contains("Class:         plain (ProvisionerClass not found"),
            "{text}"
        );
    }

    #[test]
    fn every_recorded_property_is_listed_long_values_cut_and_the_rest_counted() {
        let property = |type_: &str, value: serde_json::Value| pakket_api::BundleProperty {
            type_: type_.into(),
            value,
        };
        let mut properties = vec![
            property("olm.maxOpenShiftVersion", serde_json::json!("4.18")),
            property("example.com/tier", serde_json::json!({"level": "gold"})),
            property("example.com/long", serde_json::json!("y".repeat(500))),
        ];
        let text = properties_lines(&properties);
        assert!(text.starts_with("  Properties:\n"), "{text}");
        assert!(
            text.contains("    olm.maxOpenShiftVersion: 4.18\n"),
            "{text}"
        );
        assert!(
            text.contains("    example.com/tier: {\"level\":\"gold\"}\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("    example.com/long: {}…\n", "y".repeat(120))),
            "{text}"
        );
        properties.extend((0..40).map(|i| property("olm.gvk", serde_json::json!(i))));
        assert!(properties_lines(&properties).contains("… and 13 more"));
        assert_eq!(properties_lines(&[]), "");
    }

    #[test]
    fn a_list_cut_short_says_how_many_of_each_kind_there_are() {
        assert_eq!(listed_of(3, 3, &[]), "3");
        let kinds = [
            pakket_api::KindCount {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                count: 1_400,
            },
            pakket_api::KindCount {
                api_version: "v1".into(),
                kind: "Secret".into(),
                count: 100,
            },
        ];
        assert_eq!(
            listed_of(1_000, 1_500, &kinds),
            "1000 listed of 1500: 1400 ConfigMap (v1), 100 Secret (v1)"
        );
    }
}
