//! `helmchart/NAMESPACE/NAME` (a namespace owner's Helm chart, which
//! pakket-helm installs as an Instance on her behalf): `why` and
//! `describe` answer from the HelmChart alone, whose status only
//! pakket-helm writes (users get `get` on `helmcharts/status`, nothing
//! more), so its owner, who may not read cluster-scoped Instances, gets the
//! whole answer; `approve` approves the Instance its status names.

use std::io::Write;

use jiff::Timestamp;
use kube::api::{Api, ListParams};
use pakket_helm_api::HelmChart;
use serde::Serialize;

use crate::error::Error;
use crate::identity;
use crate::output::{self, Format, ListFormat};

/// The prefix naming a HelmChart.
pub const PREFIX: &str = "helmchart/";

/// HelmChart `NAMESPACE/NAME` (what follows [`PREFIX`]), read as the caller.
pub async fn read(client: &kube::Client, named: &str) -> Result<HelmChart, Error> {
    let Some((namespace, name)) = named.split_once('/') else {
        return Err(Error::Config(format!(
            "{PREFIX}{named}: name a HelmChart as {PREFIX}NAMESPACE/NAME"
        )));
    };
    let charts: Api<HelmChart> = Api::namespaced(client.clone(), namespace);
    match charts.get_opt(name).await {
        Ok(Some(chart)) => Ok(chart),
        Ok(None) => Err(Error::NotFound {
            kind: "helmchart",
            name: format!("{namespace}/{name}"),
        }),
        Err(source) => Err(identity::refused(
            client,
            source,
            format!("get helmcharts in {namespace}"),
            "ask an admin for get on helmcharts.helm.pakket.dev",
        )
        .await),
    }
}

/// The Instance installing HelmChart `NAMESPACE/NAME`, as its status
/// (pakket-helm's) names it, or why there is none.
pub async fn instance_of(client: &kube::Client, named: &str) -> Result<String, Error> {
    let chart = read(client, named).await?;
    chart
        .status
        .and_then(|status| status.instance)
        .ok_or_else(|| {
            Error::Config(format!(
                "HelmChart {named} has no Instance yet; `kubectl instance why {PREFIX}{named}` says why"
            ))
        })
}

/// Lists HelmCharts in every namespace the caller may list them in
/// (`namespace`: one namespace, for a namespace owner).
pub async fn list(
    client: &kube::Client,
    namespace: Option<&str>,
    selector: Option<&str>,
    format: Option<ListFormat>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let params = match selector {
        Some(selector) => ListParams::default().labels(selector),
        None => ListParams::default(),
    };
    let charts: Api<HelmChart> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let listed = match charts.list(&params).await {
        Ok(list) => list.items,
        Err(source) => {
            return Err(identity::refused(
                client,
                source,
                "list helmcharts",
                "ask an admin for list on helmcharts.helm.pakket.dev, or name your namespace with -n",
            )
            .await);
        }
    };
    crate::list::print(listed, format, out, "HelmCharts", |items| {
        table(items, Timestamp::now())
    })
}

/// The table `list helmcharts` prints: where each chart stands, in the
/// words `why` uses.
pub fn table(charts: &[HelmChart], now: Timestamp) -> String {
    let mut table = crate::table::Table::new(&["NAMESPACE", "NAME", "CHART", "STATE", "AGE"]);
    for chart in charts {
        table.row(vec![
            chart.metadata.namespace.clone().unwrap_or_default(),
            chart.metadata.name.clone().unwrap_or_default(),
            chart.spec.chart.clone(),
            diagnose(chart).summary,
            chart
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|created| crate::age::since(created.0, now))
                .unwrap_or_default(),
        ]);
    }
    table.render()
}

/// The answer for one HelmChart.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartDiagnosis {
    /// `HelmChart NAMESPACE/NAME`.
    pub chart: String,
    /// One sentence: where it stands.
    pub summary: String,
    /// The conditions behind it, one a line.
    pub reasons: Vec<String>,
    /// What to do next, and who does it, if anything.
    pub next: Option<String>,
}

/// Prints the diagnosis of `helmchart/NAMESPACE/NAME`.
pub async fn why(
    client: &kube::Client,
    named: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let diagnosis = diagnose(&read(client, named).await?);
    match format {
        Some(format) => output::print(&diagnosis, format, out),
        None => output::explanation(
            out,
            &diagnosis.chart,
            &diagnosis.summary,
            &diagnosis.reasons,
            diagnosis.next.as_deref(),
        ),
    }
}

/// One `valuesFrom` entry in words: `Secret db (key db.yaml, optional)`.
fn values_source(source: &pakket_helm_api::ValuesReference) -> String {
    let kind = match source.kind {
        pakket_helm_api::ValuesKind::ConfigMap => "ConfigMap",
        pakket_helm_api::ValuesKind::Secret => "Secret",
    };
    let key = source
        .values_key
        .as_deref()
        .unwrap_or(pakket_helm_api::DEFAULT_VALUES_KEY);
    let optional = if source.optional { ", optional" } else { "" };
    format!("{kind} {} (key {key}{optional})", source.name)
}

/// Prints what the HelmChart asks for and where it stands; `-o` prints
/// the HelmChart itself.
pub async fn describe(
    client: &kube::Client,
    named: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let chart = read(client, named).await?;
    if let Some(format) = format {
        return output::print(&chart, format, out);
    }
    let diagnosis = diagnose(&chart);
    writeln!(out, "{}", diagnosis.chart)?;
    writeln!(out, "  Chart:     {}", chart.spec.chart)?;
    let release = chart
        .spec
        .release_name
        .clone()
        .unwrap_or_else(|| chart.metadata.name.clone().unwrap_or_default());
    writeln!(out, "  Release:   {release}")?;
    let values: Vec<&String> = chart.spec.values.iter().flat_map(|v| v.keys()).collect();
    let values: Vec<&str> = values.into_iter().map(String::as_str).collect();
    writeln!(
        out,
        "  Values:    {}",
        if values.is_empty() {
            "(the chart's own)".to_owned()
        } else {
            values.join(", ")
        }
    )?;
    for source in &chart.spec.values_from {
        writeln!(out, "  From:      {}", values_source(source))?;
    }
    let instance = chart.status.as_ref().and_then(|s| s.instance.clone());
    writeln!(
        out,
        "  Instance:  {}",
        instance.as_deref().unwrap_or("(none yet)")
    )?;
    writeln!(out, "  State:     {}", diagnosis.summary)?;
    writeln!(out, "Conditions:")?;
    for reason in &diagnosis.reasons {
        writeln!(out, "  {reason}")?;
    }
    if let Some(next) = &diagnosis.next {
        writeln!(out, "Next: {next}")?;
    }
    Ok(())
}

/// The diagnosis, from the HelmChart as read.
pub fn diagnose(chart: &HelmChart) -> ChartDiagnosis {
    let namespace = chart.metadata.namespace.as_deref().unwrap_or_default();
    let name = chart.metadata.name.as_deref().unwrap_or_default();
    let named = format!("{PREFIX}{namespace}/{name}");
    let status = chart.status.clone().unwrap_or_default();
    let condition = |kind: &str| status.conditions.iter().find(|c| c.type_ == kind);
    let reasons: Vec<String> = ["Accepted", "Unpacked", "Approved", "Installed", "Healthy"]
        .into_iter()
        .filter_map(condition)
        .map(|c| format!("{} is {} ({}): {}", c.type_, c.status, c.reason, c.message))
        .collect();
    let is = |kind: &str, state: &str| condition(kind).is_some_and(|c| c.status == state);
    let (summary, next) = if condition("Accepted").is_none() {
        (
            "not seen yet: pakket-helm writes Accepted when it sees the HelmChart".to_owned(),
            Some(
                "wait a moment; if nothing comes, an admin checks that pakket-helm runs".to_owned(),
            ),
        )
    } else if !is("Accepted", "True") {
        (
            "no Instance is written for it (see Accepted)".to_owned(),
            Some(
                "do what Accepted says; an admin removes an Instance that took its name".to_owned(),
            ),
        )
    } else if is("Unpacked", "False") {
        (
            "its chart could not be fetched".to_owned(),
            Some(
                "fix spec.chart (the repository, the chart's name or version), as Unpacked says"
                    .to_owned(),
            ),
        )
    } else if is("Installed", "False")
        && condition("Installed").is_some_and(|c| c.reason == "RenderFailed")
    {
        (
            "its chart cannot be installed as it renders".to_owned(),
            Some("change spec.values or spec.chart as Installed says; a chart that writes outside your namespace is an admin's to install".to_owned()),
        )
    } else if is("Approved", "False") {
        (
            "waiting for a person: it asks for more than you may create by hand".to_owned(),
            Some(format!(
                "someone who may approve Instances reviews it and runs `kubectl instance approve {named}`; or ask your admin for the rights Approved names"
            )),
        )
    } else if is("Installed", "True") && is("Healthy", "True") {
        ("installed and healthy".to_owned(), None)
    } else if is("Installed", "True") {
        (
            "installed, not healthy yet".to_owned(),
            Some("see Healthy; its workloads may still be starting".to_owned()),
        )
    } else {
        (
            "being installed".to_owned(),
            Some("wait; Installed says when it is".to_owned()),
        )
    };
    ChartDiagnosis {
        chart: format!("HelmChart {namespace}/{name}"),
        summary,
        reasons,
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_helm_api::{HelmChartSpec, HelmChartStatus};
    use serde_json::json;

    fn chart(conditions: serde_json::Value) -> HelmChart {
        let mut chart = HelmChart::new(
            "notes",
            HelmChartSpec {
                chart: "helm+https://charts.example/#notes@1.0.0".into(),
                release_name: None,
                values: None,
                values_from: Vec::new(),
            },
        );
        chart.metadata.namespace = Some("team-a".into());
        let conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> =
            serde_json::from_value(conditions).unwrap();
        chart.status = Some(HelmChartStatus {
            conditions,
            instance: Some("helmchart-0123".into()),
            observed_generation: Some(1),
        });
        chart
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-29T10:00:00Z"})
    }

    #[test]
    fn a_values_source_is_said_in_words() {
        let source = pakket_helm_api::ValuesReference {
            kind: pakket_helm_api::ValuesKind::Secret,
            name: "db".into(),
            values_key: Some("db.yaml".into()),
            optional: true,
        };
        assert_eq!(values_source(&source), "Secret db (key db.yaml, optional)");
        let plain = pakket_helm_api::ValuesReference {
            kind: pakket_helm_api::ValuesKind::ConfigMap,
            name: "defaults".into(),
            values_key: None,
            optional: false,
        };
        assert_eq!(
            values_source(&plain),
            "ConfigMap defaults (key values.yaml)"
        );
    }

    #[test]
    fn each_state_says_where_it_stands_and_who_acts_next() {
        let accepted = condition(
            "Accepted",
            "True",
            "InstanceWritten",
            "Instance helmchart-0123 installs it",
        );
        let cases = [
            (json!([]), "not seen yet", Some("pakket-helm runs")),
            (
                json!([condition("Accepted", "False", "NameTaken", "taken")]),
                "no Instance",
                Some("Accepted says"),
            ),
            (
                json!([
                    accepted,
                    condition("Unpacked", "False", "UnpackFailed", "lists no version 9")
                ]),
                "could not be fetched",
                Some("fix spec.chart"),
            ),
            (
                json!([
                    accepted,
                    condition(
                        "Installed",
                        "False",
                        "RenderFailed",
                        "ClusterRole x (cluster-scoped)"
                    )
                ]),
                "cannot be installed as it renders",
                Some("an admin's to install"),
            ),
            (
                json!([
                    accepted,
                    condition(
                        "Approved",
                        "False",
                        "ApprovalPending",
                        "alice may not create CustomResourceDefinition/x"
                    )
                ]),
                "waiting for a person",
                Some("kubectl instance approve helmchart/team-a/notes"),
            ),
            (
                json!([
                    accepted,
                    condition("Approved", "True", "Approved", "ok"),
                    condition("Installed", "True", "Installed", "ok"),
                    condition("Healthy", "True", "Healthy", "ok")
                ]),
                "installed and healthy",
                None,
            ),
        ];
        for (conditions, summary, next) in cases {
            let said = diagnose(&chart(conditions.clone()));
            assert!(
                said.summary.contains(summary),
                "{conditions}: {}",
                said.summary
            );
            match (next, &said.next) {
                (Some(words), Some(next)) => assert!(next.contains(words), "{conditions}: {next}"),
                (None, None) => {}
                _ => panic!("{conditions}: {:?}", said.next),
            }
            assert_eq!(said.chart, "HelmChart team-a/notes");
        }
        let refused = diagnose(&chart(json!([
            accepted,
            condition(
                "Installed",
                "False",
                "RenderFailed",
                "ClusterRole x (cluster-scoped)"
            )
        ])));
        assert!(
            refused
                .reasons
                .iter()
                .any(|r| r.contains("ClusterRole x (cluster-scoped)")),
            "{:?}",
            refused.reasons
        );
    }
}
