//! `kubectl instance list`: the Instances as a table, as a `List`, or as
//! names.

use std::io::Write;

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::{ConditionType, Instance};
use serde_json::json;

use crate::error::Error;
use crate::output::{self, ListFormat};
use crate::table::Table;
use crate::{age, identity, lookup};

/// Lists the Instances matching `selector`.
pub async fn run(
    client: &kube::Client,
    selector: Option<&str>,
    format: Option<ListFormat>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instances: Vec<Instance> = objects(client, selector, "Instances").await?;
    print(instances, format, out, "Instances", |items| {
        table(items, Timestamp::now())
    })
}

/// Every object of kind `K` whose labels match `selector` (`plural`, as
/// denials name it: `Instances`).
pub async fn objects<K>(
    client: &kube::Client,
    selector: Option<&str>,
    plural: &str,
) -> Result<Vec<K>, Error>
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client.clone());
    let mut params = ListParams::default();
    if let Some(selector) = selector {
        params = params.labels(selector);
    }
    match api.list(&params).await {
        Ok(list) => Ok(list.items),
        Err(source) => Err(identity::refused(
            client,
            source,
            &format!("list {plural}"),
            lookup::READ_ADVICE,
        )
        .await),
    }
}

/// Prints `items` as a `List` in `format`, as names, or as the table
/// `table` makes; with nothing to print, says `No PLURAL found.` on
/// stderr, as kubectl.
pub fn print<K: kube::Resource<DynamicType = ()> + serde::Serialize>(
    mut items: Vec<K>,
    format: Option<ListFormat>,
    out: &mut impl Write,
    plural: &str,
    table: impl FnOnce(&[K]) -> String,
) -> Result<(), Error> {
    match (format, format.and_then(ListFormat::document)) {
        (Some(_), None) => output::names(
            items
                .iter()
                .map(|item| output::kubectl_name::<K>(&item.name_any())),
            out,
        ),
        (Some(_), Some(document)) => {
            // As kubectl does unless --show-managed-fields: noise to a reader.
            for item in &mut items {
                item.meta_mut().managed_fields = None;
            }
            let document_value = json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": { "resourceVersion": "" },
                "items": items,
            });
            output::print(&document_value, document, out)
        }
        (None, _) if items.is_empty() => {
            // kubectl says this on stderr, so scripts reading stdout see nothing.
            eprintln!("No {plural} found.");
            Ok(())
        }
        (None, _) => {
            out.write_all(table(&items).as_bytes())?;
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
