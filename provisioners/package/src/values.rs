//! A package's values: checked against its value definitions as Glasskube
//! checks them, then patched into the objects they target.
//!
//! Values are text. `boolean` takes what Go's `strconv.ParseBool` takes,
//! `number` an integer, `options` one of its options; `minLength` and
//! `maxLength` count bytes; `pattern` must match somewhere in a text or
//! number value. A definition's `defaultValue` stands in for a value not
//! given (Glasskube's CLI writes it into the package; here the provisioner
//! does, so a package written by hand gets it too).
//!
//! A target names an object by `apiGroup` (`group/version`, compared with
//! the object's `apiVersion`), kind, name and, if given, namespace. Its
//! patch is `{op, path}` plus the value: as a string, or, with a
//! `valueTemplate`, the template's output (Go's template language, `.` the
//! value, `base64` a function) read as JSON.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};

use pakket_packages_api::manifest::{ValueDefinition, ValueTarget};

/// Value definitions, by value name.
pub type Definitions = BTreeMap<String, ValueDefinition>;
/// Values as text, by name.
pub type Values = BTreeMap<String, String>;

/// The values to use: those given, and the defaults of the others.
pub fn with_defaults(
    definitions: &BTreeMap<String, ValueDefinition>,
    given: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut values = given.clone();
    for (name, definition) in definitions {
        if let Some(default) = &definition.default_value
            && !values.contains_key(name)
        {
            values.insert(name.clone(), default.clone());
        }
    }
    values
}

/// Every problem with `values` (after defaults), each `NAME: problem`.
pub fn validate(
    definitions: &BTreeMap<String, ValueDefinition>,
    values: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for name in values.keys() {
        if !definitions.contains_key(name) {
            let known: Vec<&str> = definitions.keys().map(String::as_str).collect();
            problems.push(format!(
                "{name}: the package defines no such value (it defines: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    for (name, definition) in definitions {
        let Some(value) = values.get(name) else {
            if definition.constraints.required {
                problems.push(format!("{name}: required; set spec.values.{name}"));
            }
            continue;
        };
        problems.extend(check(definition, value).map(|problem| format!("{name}: {problem}")));
    }
    problems
}

/// What is wrong with one value.
fn check(definition: &ValueDefinition, value: &str) -> Option<String> {
    let constraints = &definition.constraints;
    match definition.type_.as_str() {
        "boolean" => (parse_bool(value).is_none())
            .then(|| format!("{value:?} is not a boolean; write true or false")),
        "options" => (!definition.options.iter().any(|option| option == value)).then(|| {
            format!(
                "{value:?} is not one of the options: {}",
                definition.options.join(", ")
            )
        }),
        "number" => {
            let Ok(number) = value.parse::<i64>() else {
                return Some(format!("{value:?} is not a whole number"));
            };
            if let Some(min) = constraints.min
                && number < min
            {
                return Some(format!("{number} is below the minimum {min}"));
            }
            if let Some(max) = constraints.max
                && number > max
            {
                return Some(format!("{number} is above the maximum {max}"));
            }
            pattern_problem(constraints.pattern.as_deref(), value)
        }
        "text" => {
            if let Some(min) = constraints.min_length
                && value.len() < min
            {
                return Some(format!("{} bytes; at least {min} are needed", value.len()));
            }
            if let Some(max) = constraints.max_length
                && value.len() > max
            {
                return Some(format!("{} bytes; at most {max} are allowed", value.len()));
            }
            pattern_problem(constraints.pattern.as_deref(), value)
        }
        other => Some(format!(
            "the package's definition has an unknown type {other:?}"
        )),
    }
}

fn pattern_problem(pattern: Option<&str>, value: &str) -> Option<String> {
    let pattern = pattern?;
    match regex::Regex::new(pattern) {
        Ok(regex) if regex.is_match(value) => None,
        Ok(_) => Some(format!("{value:?} does not match the pattern {pattern}")),
        Err(_) => Some(format!(
            "the package's pattern {pattern} is not a regular expression"
        )),
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Patches every value into the objects its definition targets.
pub fn apply(
    definitions: &BTreeMap<String, ValueDefinition>,
    values: &BTreeMap<String, String>,
    objects: &mut [Value],
) -> Result<(), String> {
    for (name, definition) in definitions {
        let Some(value) = values.get(name) else {
            continue;
        };
        for (index, target) in definition.targets.iter().enumerate() {
            let Some(resource) = &target.resource else {
                // A chart's values: see apply_to_chart.
                continue;
            };
            let patch = target_patch(name, index, target, value)?;
            for object in objects.iter_mut().filter(|object| {
                object["apiVersion"].as_str() == resource.api_group.as_deref()
                    && object["kind"] == resource.kind.as_str()
                    && object["metadata"]["name"] == resource.name.as_str()
                    && resource.namespace.as_ref().is_none_or(|namespace| {
                        object["metadata"]["namespace"] == namespace.as_str()
                    })
            }) {
                json_patch::patch(object, &patch).map_err(|error| {
                    format!(
                        "{name}: targets[{index}]: cannot {} {} of {} {}: {error}",
                        target.patch.op, target.patch.path, resource.kind, resource.name
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// Patches every value whose target is the chart `chart` into its
/// `chart_values`. A target naming no object and no chart is taken as the
/// chart's too: that is what its author meant (akri's `useLatestContainers`
/// is written so), though Glasskube applies it nowhere.
pub fn apply_to_chart(
    definitions: &BTreeMap<String, ValueDefinition>,
    values: &BTreeMap<String, String>,
    chart: &str,
    chart_values: &mut Value,
) -> Result<(), String> {
    if !chart_values.is_object() {
        *chart_values = json!({});
    }
    for (name, definition) in definitions {
        let Some(value) = values.get(name) else {
            continue;
        };
        for (index, target) in definition.targets.iter().enumerate() {
            let for_chart = match (&target.resource, &target.chart_name) {
                (None, Some(named)) => named == chart,
                (None, None) => true,
                (Some(_), _) => false,
            };
            if !for_chart {
                continue;
            }
            let patch = target_patch(name, index, target, value)?;
            json_patch::patch(chart_values, &patch).map_err(|error| {
                format!(
                    "{name}: targets[{index}]: cannot {} {} of chart {chart}'s values: {error}",
                    target.patch.op, target.patch.path
                )
            })?;
        }
    }
    Ok(())
}

/// The RFC 6902 patch target `index` of value `name` makes of `value`.
fn target_patch(
    name: &str,
    index: usize,
    target: &ValueTarget,
    value: &str,
) -> Result<json_patch::Patch, String> {
    let patch_value = rendered(target, value)
        .map_err(|problem| format!("{name}: targets[{index}]: {problem}"))?;
    serde_json::from_value(json!([{
        "op": target.patch.op, "path": target.patch.path, "value": patch_value,
    }]))
    .map_err(|error| format!("{name}: targets[{index}].patch: {error}"))
}

/// The value a target patches in.
fn rendered(target: &ValueTarget, value: &str) -> Result<Value, String> {
    let Some(template) = &target.value_template else {
        return Ok(Value::String(value.to_owned()));
    };
    let mut parsed = gtmpl::Template::default();
    parsed.add_func("base64", base64_function);
    parsed
        .parse(template)
        .map_err(|error| format!("valueTemplate does not parse: {error}"))?;
    let output = parsed
        .render(&gtmpl::Context::from(value.to_owned()))
        .map_err(|error| format!("valueTemplate fails: {error}"))?;
    serde_json::from_str(output.trim())
        .map_err(|error| format!("valueTemplate gives {output:?}, which is not JSON: {error}"))
}

fn base64_function(args: &[gtmpl::Value]) -> Result<gtmpl::Value, gtmpl::FuncError> {
    match args {
        [gtmpl::Value::String(text)] => Ok(gtmpl::Value::from(
            base64::engine::general_purpose::STANDARD.encode(text),
        )),
        _ => Err(gtmpl::FuncError::ExactlyXArgs("base64".into(), 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_packages_api::manifest::{PackageManifest, parse};

    /// The real postgresql package (glasskube/packages at 3352e05d,
    /// ../shared/data/glasskube-packages/packages/postgresql/v16.4.0+2) and
    /// its manifest.yaml.
    fn postgresql() -> (PackageManifest, Vec<Value>) {
        let dir = pakket_testkit::data("glasskube-packages/packages/postgresql/v16.4.0+2");
        let (manifest, _): (PackageManifest, Value) =
            parse(&std::fs::read_to_string(dir.join("package.yaml")).unwrap()).unwrap();
        let objects: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(dir.join("manifest.yaml")).unwrap())
                .unwrap();
        (manifest, vec![objects])
    }

    #[test]
    fn values_are_checked_as_glasskube_checks_them() {
        let (manifest, _) = postgresql();
        let definitions = &manifest.value_definitions;
        let given = |pairs: &[(&str, &str)]| {
            with_defaults(
                definitions,
                &pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            )
        };
        assert!(validate(definitions, &given(&[("databaseName", "app")])).is_empty());
        let problems = validate(
            definitions,
            &given(&[
                ("instances", "-1"),
                ("enableSuperuserAccess", "yes"),
                ("colour", "red"),
            ]),
        );
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("colour: the package defines no such value"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p == "databaseName: required; set spec.values.databaseName")
        );
        assert!(
            problems
                .iter()
                .any(|p| p == "instances: -1 is below the minimum 0")
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("enableSuperuserAccess: \"yes\" is not a boolean"))
        );
        assert_eq!(
            validate(definitions, &given(&[("databaseName", "")])),
            ["databaseName: 0 bytes; at least 1 are needed"]
        );
    }

    #[test]
    fn values_are_patched_into_their_targets_through_the_templates() {
        let (manifest, mut objects) = postgresql();
        let values = with_defaults(
            &manifest.value_definitions,
            &BTreeMap::from([
                ("databaseName".to_owned(), "shop".to_owned()),
                ("instances".to_owned(), "3".to_owned()),
                ("enableSuperuserAccess".to_owned(), "true".to_owned()),
            ]),
        );
        apply(&manifest.value_definitions, &values, &mut objects).unwrap();
        let cluster = &objects[0];
        assert_eq!(cluster["spec"]["instances"], 3, "{{.}} reads as a number");
        assert_eq!(cluster["spec"]["enableSuperuserAccess"], true);
        assert_eq!(
            cluster["spec"]["bootstrap"]["initdb"]["database"], "shop",
            "no template: a string"
        );
        assert_eq!(cluster["spec"]["storage"]["size"], "10Gi", "the default");
    }

    #[test]
    fn templates_of_the_real_repository_render() {
        let target = |template: &str| ValueTarget {
            value_template: Some(template.into()),
            ..ValueTarget::default()
        };
        let cases = [
            (
                r#"{{ if eq . "" }}false{{ else }}true{{ end }}"#,
                "",
                json!(false),
            ),
            (r#"{{if .}}"{{.}}"{{else}}null{{end}}"#, "x", json!("x")),
            (r#"{{if .}}"{{.}}"{{else}}null{{end}}"#, "", Value::Null),
            (r#""{{ . | base64 }}""#, "ab", json!("YWI=")),
            (
                r#""http://{{.}}-tracecat-api:8000""#,
                "t",
                json!("http://t-tracecat-api:8000"),
            ),
        ];
        for (template, value, expected) in cases {
            assert_eq!(
                rendered(&target(template), value).unwrap(),
                expected,
                "{template}"
            );
        }
        let error = rendered(&target("{{.}}"), "not json").unwrap_err();
        assert!(error.contains("not JSON"), "{error}");
    }

    /// The real quickwit package (glasskube/packages at 3352e05d,
    /// ../shared/data/glasskube-packages/packages/quickwit/v0.8.1+5): its
    /// values go into the chart's values, templated where it says so.
    #[test]
    fn chart_targets_patch_the_charts_values() {
        let dir = pakket_testkit::data("glasskube-packages/packages/quickwit/v0.8.1+5");
        let (manifest, _): (PackageManifest, Value) =
            parse(&std::fs::read_to_string(dir.join("package.yaml")).unwrap()).unwrap();
        let helm = manifest.helm.clone().unwrap();
        let mut chart_values = helm.values.clone().unwrap();
        let values: BTreeMap<String, String> = [
            ("defaultIndexRootUri", "s3://bucket/indexes"),
            ("s3Flavor", "minio"),
            ("s3Endpoint", ""),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        apply_to_chart(
            &manifest.value_definitions,
            &values,
            &helm.chart_name,
            &mut chart_values,
        )
        .unwrap();
        assert_eq!(
            chart_values["config"]["default_index_root_uri"],
            "s3://bucket/indexes"
        );
        assert_eq!(chart_values["config"]["storage"]["s3"]["flavor"], "minio");
        // `{{if .}}…{{else}}null{{end}}`: an empty value is JSON null.
        assert_eq!(
            chart_values["config"]["storage"]["s3"]["endpoint"],
            Value::Null
        );
        // The package's own values stay.
        assert_eq!(chart_values["ingress"]["ingressClassName"], "nginx");
        // Another chart's targets are not applied.
        let mut other = json!({});
        apply_to_chart(&manifest.value_definitions, &values, "other", &mut other).unwrap();
        assert_eq!(other, json!({}));
    }
}
