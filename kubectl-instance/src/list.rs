//! `kubectl instance list`: the Instances as a table, or as a `List`.

use std::io::Write;

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::{ConditionType, Instance};
use serde_json::json;

use crate::error::Error;
use crate::output::{self, Format};
use crate::table::Table;
use crate::{age, identity, lookup};

/// Lists the Instances matching `selector`.
pub async fn run(
    client: &kube::Client,
    selector: Option<&str>,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instances: Api<Instance> = Api::all(client.clone());
    let mut params = ListParams::default();
    if let Some(selector) = selector {
        params = params.labels(selector);
    }
    let list = match instances.list(&params).await {
        Ok(list) => list,
        Err(source) => {
            return Err(
                identity::refused(client, source, "list Instances", lookup::READ_ADVICE).await,
            );
        }
    };
    match format {
        Some(format) => {
            let mut items = list.items;
            // As kubectl does unless --show-managed-fields: noise to a reader.
            for item in &mut items {
                item.metadata.managed_fields = None;
            }
            let document = json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": { "resourceVersion": "" },
                "items": items,
            });
            output::print(&document, format, out)
        }
        None if list.items.is_empty() => {
            // kubectl says this on stderr, so scripts reading stdout see nothing.
            eprintln!("No Instances found.");
            Ok(())
        }
        None => {
            out.write_all(table(&list.items, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// The table `list` prints: the CRD's printer columns plus Healthy.
pub fn table(instances: &[Instance], now: Timestamp) -> String {
    let mut table = Table::new(&[
        "NAME",
        "CLASS",
        "BUNDLE",
        "APPROVED",
        "INSTALLED",
        "HEALTHY",
        "AGE",
    ]);
    for instance in instances {
        let status = |kind| {
            instance
                .condition(kind)
                .map(|condition| condition.status.clone())
                .unwrap_or_default()
        };
        let age = instance
            .creation_timestamp()
            .map(|created| age::since(created.0, now))
            .unwrap_or_default();
        table.row(vec![
            instance.name_any(),
            instance.spec.class.clone(),
            bundle_column(instance),
            status(ConditionType::Approved),
            status(ConditionType::Installed),
            status(ConditionType::Healthy),
            age,
        ]);
    }
    table.render()
}

/// The wanted Bundle; `active → wanted` while a pivot is pending.
fn bundle_column(instance: &Instance) -> String {
    let wanted = &instance.spec.bundle.name;
    match instance
        .status
        .as_ref()
        .and_then(|status| status.active_bundle.as_ref())
    {
        Some(active) if active != wanted => format!("{active} → {wanted}"),
        _ => wanted.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::ToSpan;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use pakket_api::condition::{self, ConditionStatus};
    use pakket_api::{InstanceStatus, Reason};

    fn instance(name: &str, active: Option<&str>, approved: Option<ConditionStatus>) -> Instance {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let mut instance = crate::fixture::instance(name, "web.v2");
        instance.metadata.creation_timestamp = Some(Time(now - 200.seconds()));
        instance.status = approved.map(|approved| InstanceStatus {
            conditions: vec![condition::new(
                Reason::ApprovalPending,
                approved,
                "waiting",
                None,
                now,
            )],
            active_bundle: active.map(str::to_owned),
            ..InstanceStatus::default()
        });
        instance
    }

    #[test]
    fn table_shows_conditions_pending_pivots_and_age() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let text = table(
            &[
                instance("web", Some("web.v1"), Some(ConditionStatus::False)),
                instance("fresh", None, None),
            ],
            now,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            [
                "NAME",
                "CLASS",
                "BUNDLE",
                "APPROVED",
                "INSTALLED",
                "HEALTHY",
                "AGE"
            ]
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "web", "plain", "web.v1", "→", "web.v2", "False", "<none>", "<none>", "3m20s"
            ]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            [
                "fresh", "plain", "web.v2", "<none>", "<none>", "<none>", "3m20s"
            ]
        );
    }
}
