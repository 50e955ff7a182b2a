//! Operators (`operators.pakket.dev`) in `kubectl instance list operators`
//! and `kubectl instance describe operator/NAME`: what each asks for, what
//! it got, the updates on offer and the objects it stands on.

use std::fmt::Write as _;
use std::io::Write;

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use pakket_operators_api::{Operator, OperatorCatalog};

use crate::error::Error;
use crate::output::{self, Format, ListFormat};
use crate::table::Table;
use crate::{age, identity, list, lookup};

/// Lists the Operators matching `selector`.
pub async fn list(
    client: &kube::Client,
    selector: Option<&str>,
    format: Option<ListFormat>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let operators: Vec<Operator> = list::objects(client, selector, "Operators").await?;
    list::print(operators, format, out, "Operators", |items| {
        table(items, Timestamp::now())
    })
}

/// The `UpdateAvailable` condition's reason, or nothing.
fn update_state(operator: &Operator) -> String {
    operator
        .condition("UpdateAvailable")
        .map(|condition| condition.reason.clone())
        .unwrap_or_default()
}

/// The table `list operators` prints.
pub fn table(operators: &[Operator], now: Timestamp) -> String {
    let mut table = Table::new(&[
        "NAME",
        "PACKAGE",
        "CHANNEL",
        "VERSION",
        "INSTALLED",
        "UPDATES",
        "AGE",
    ]);
    for operator in operators {
        let spec = &operator.spec;
        let status = operator.status.clone().unwrap_or_default();
        table.row(vec![
            operator.name_any(),
            spec.catalog.package.clone(),
            spec.catalog.channel.clone().unwrap_or_default(),
            spec.version.clone().unwrap_or_else(|| "any".into()),
            status.installed_version.unwrap_or_default(),
            update_state(operator),
            operator
                .creation_timestamp()
                .map(|created| age::since(created.0, now))
                .unwrap_or_default(),
        ]);
    }
    table.render()
}

/// Describes Operator `name`.
pub async fn describe(
    client: &kube::Client,
    name: &str,
    format: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let operators: Api<Operator> = Api::all(client.clone());
    let operator = match operators.get_opt(name).await {
        Ok(Some(operator)) => operator,
        Ok(None) => {
            return Err(Error::NotFound {
                kind: "operator",
                name: name.to_owned(),
            });
        }
        Err(source) => {
            return Err(
                identity::refused(client, source, "get Operators", lookup::READ_ADVICE).await,
            );
        }
    };
    match format {
        Some(format) => {
            let mut operator = operator;
            operator.metadata.managed_fields = None;
            output::print(&operator, format, out)
        }
        None => {
            out.write_all(render(&operator, Timestamp::now()).as_bytes())?;
            Ok(())
        }
    }
}

/// What an Operator or an OperatorRequest asks for, labelled for
/// `describe`: the package, its Catalog, the channel and the version.
pub fn asked_for<'a>(
    catalog: &'a OperatorCatalog,
    version: Option<&'a str>,
) -> [(&'static str, &'a str); 4] {
    [
        ("Package", &catalog.package),
        ("Catalog", &catalog.name),
        (
            "Channel",
            catalog
                .channel
                .as_deref()
                .unwrap_or("(the package's default)"),
        ),
        ("Version", version.unwrap_or("any")),
    ]
}

/// The description as `kubectl describe`-style text.
pub fn render(operator: &Operator, now: Timestamp) -> String {
    let mut text = String::new();
    let field = |text: &mut String, label: &str, value: &str| {
        let _ = writeln!(text, "{:<15}{value}", format!("{label}:"));
    };
    let spec = &operator.spec;
    let status = operator.status.clone().unwrap_or_default();
    field(&mut text, "Name", &operator.name_any());
    for (label, value) in asked_for(&spec.catalog, spec.version.as_deref()) {
        field(&mut text, label, value);
    }
    field(&mut text, "Input class", &spec.input_class);
    field(
        &mut text,
        "Installed",
        status
            .installed_version
            .as_deref()
            .unwrap_or("(nothing yet)"),
    );
    if let Some(age) = operator.creation_timestamp() {
        field(&mut text, "Age", &age::since(age.0, now));
    }
    let _ = writeln!(text, "Conditions:");
    if status.conditions.is_empty() {
        let _ = writeln!(text, "  (none yet)");
    } else {
        let ordered: Vec<_> = status.conditions.iter().collect();
        text.push_str(&crate::describe::table_of(&ordered, now));
    }
    let _ = writeln!(text, "Updates:");
    if status.updates.is_empty() {
        let _ = writeln!(text, "  (none offered)");
    }
    for update in &status.updates {
        let mut notes = Vec::new();
        if update.cross_channel {
            notes.push("in other channels only");
        }
        if !update.allowed {
            notes.push("outside spec.version");
        }
        let _ = writeln!(
            text,
            "  {} {} (channels {}){}",
            update.bundle,
            update.version,
            update.channels.join(", "),
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", notes.join(", "))
            }
        );
    }
    let _ = writeln!(text, "Components:");
    if status.components.is_empty() {
        let _ = writeln!(text, "  (none yet)");
    }
    for component in &status.components {
        let _ = writeln!(
            text,
            "  {}/{}: {}",
            component.kind, component.name, component.state
        );
    }
    let _ = writeln!(
        text,
        "Next:          `kubectl instance why input/{}` explains what its Input brings in",
        operator.name_any()
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_operators_api::{Component, OperatorCatalog, OperatorSpec, Update};

    fn operator() -> Operator {
        let mut operator = Operator::new(
            "etcd",
            OperatorSpec {
                config: None,
                input_class: "subscription".into(),
                catalog: OperatorCatalog {
                    name: "community".into(),
                    package: "etcd".into(),
                    channel: Some("singlenamespace-alpha".into()),
                },
                version: Some("<=0.9.2".into()),
                constraints: Vec::new(),
            },
        );
        operator.status = Some(pakket_operators_api::OperatorStatus {
            observed_generation: None,
            installed_version: Some("0.9.2".into()),
            updates: vec![Update {
                bundle: "etcdoperator.v0.9.4".into(),
                version: "0.9.4".into(),
                channels: vec!["singlenamespace-alpha".into()],
                cross_channel: false,
                allowed: false,
            }],
            conditions: vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: "UpdateAvailable".into(),
                status: "False".into(),
                reason: "UpdateOutsideVersion".into(),
                message: "0.9.4 is outside spec.version <=0.9.2".into(),
                observed_generation: None,
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    Timestamp::from_second(999_940).unwrap(),
                ),
            }],
            components: vec![Component {
                kind: "Instance".into(),
                name: "resolveset-etcd".into(),
                state: "InstallSucceeded".into(),
            }],
        });
        operator
    }

    #[test]
    fn the_table_and_the_description_say_what_it_asks_got_and_could_get() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let table = table(&[operator()], now);
        let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(
            row[..5],
            ["etcd", "etcd", "singlenamespace-alpha", "<=0.9.2", "0.9.2"]
        );
        let text = render(&operator(), now);
        assert!(text.contains("Installed:     0.9.2"), "{text}");
        assert!(
            text.contains(
                "etcdoperator.v0.9.4 0.9.4 (channels singlenamespace-alpha): outside spec.version"
            ),
            "{text}"
        );
        assert!(
            text.contains("Instance/resolveset-etcd: InstallSucceeded"),
            "{text}"
        );
        // Conditions in the table Instance `describe` uses, with ages.
        let table = crate::describe::conditions_rows(&text, 2);
        assert_eq!(
            table[0],
            ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
            "{text}"
        );
        assert_eq!(
            table[1],
            [
                "UpdateAvailable",
                "False",
                "UpdateOutsideVersion",
                "60s",
                "0.9.4",
                "is",
                "outside",
                "spec.version",
                "<=0.9.2"
            ],
            "{text}"
        );
    }
}
