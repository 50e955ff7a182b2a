//! `transformations`: values read from the package object itself (its
//! name, as every package of the real repository does with
//! `{ $.metadata.name }`) and patched into targets exactly as a value
//! definition's value is: through `valueTemplate`, into objects or the
//! chart's values.
//!
//! The package controller reads the values (it has the package object)
//! and writes them into the Instance's config, by index; the provisioner
//! patches them in. A transformation that reads another object
//! (`source.resource`) is refused as unsupported: reading it would need
//! the author's right to, as for `valueFrom`, and no package uses it.

use serde_json::Value;
use serde_json_path::JsonPath;

use crate::values::{Definitions, Values};
use pakket_packages_api::manifest::{Transformation, ValueDefinition};

/// The value of each transformation, read from `package` (the package
/// object as JSON).
pub fn read(transformations: &[Transformation], package: &Value) -> Result<Vec<String>, String> {
    transformations
        .iter()
        .enumerate()
        .map(|(index, transformation)| {
            let at = format!("transformations[{index}].source.path");
            let written = transformation.source.path.trim();
            // kubectl's JSONPath braces: `{ $.metadata.name }`.
            let expression = written
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
                .unwrap_or(written)
                .trim();
            let path = JsonPath::parse(expression)
                .map_err(|error| format!("{at}: {written:?} is not a JSONPath: {error}"))?;
            let found = path.query(package).all();
            match found.as_slice() {
                [Value::String(text)] => Ok(text.clone()),
                [other] => Ok(other.to_string()),
                [] => Err(format!("{at}: {written} finds nothing in the package")),
                _ => Err(format!(
                    "{at}: {written} finds {} values in the package; it must find one",
                    found.len()
                )),
            }
        })
        .collect()
}

/// The transformations as value definitions with their values, so that
/// [`crate::values::apply`] and [`crate::values::apply_to_chart`] patch
/// them in; named `transformations[i]` (what an error names).
pub fn as_values(
    transformations: &[Transformation],
    values: &[String],
) -> Result<(Definitions, Values), String> {
    if transformations.len() != values.len() {
        return Err(format!(
            "the package has {} transformations and the Instance's config gives {} values; the package controller writes them",
            transformations.len(),
            values.len()
        ));
    }
    let mut definitions = Definitions::new();
    let mut given = Values::new();
    for (index, (transformation, value)) in transformations.iter().zip(values).enumerate() {
        let name = format!("transformations[{index}]");
        definitions.insert(
            name.clone(),
            ValueDefinition {
                type_: "text".into(),
                targets: transformation.targets.clone(),
                ..ValueDefinition::default()
            },
        );
        given.insert(name, value.clone());
    }
    Ok((definitions, given))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_packages_api::manifest::{PackageManifest, parse};
    use serde_json::json;

    /// tracecat v0.12.3+1 of the real repository (glasskube/packages at
    /// 3352e05d, ../shared/data/glasskube-packages/packages): its
    /// transformation reads the package's name into tracecat-config.
    #[test]
    fn the_real_tracecat_reads_its_own_name_into_its_config_map() {
        let dir = pakket_testkit::data("glasskube-packages/packages/tracecat/v0.12.3+1");
        let (manifest, _): (PackageManifest, Value) =
            parse(&std::fs::read_to_string(dir.join("package.yaml")).unwrap()).unwrap();
        assert!(manifest.unsupported().is_none());
        let package = json!({"metadata": {"name": "flows", "namespace": "team"}});
        let values = read(&manifest.transformations, &package).unwrap();
        assert_eq!(values, ["flows"]);
        let (definitions, given) = as_values(&manifest.transformations, &values).unwrap();
        let mut objects = vec![json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "tracecat-config"},
            "data": {"TEMPORAL__CLUSTER_URL": "", "TRACECAT__API_URL": ""},
        })];
        crate::values::apply(&definitions, &given, &mut objects).unwrap();
        assert_eq!(
            objects[0]["data"]["TEMPORAL__CLUSTER_URL"],
            "http://flows-temporal-temporal-frontend:7233"
        );
        assert_eq!(
            objects[0]["data"]["TRACECAT__API_URL"],
            "http://flows-tracecat-api:8000"
        );
    }

    #[test]
    fn a_path_that_finds_nothing_or_many_says_so() {
        let package = json!({"metadata": {"name": "flows", "labels": {"a": "1", "b": "2"}}});
        let with_path = |path: &str| Transformation {
            source: pakket_packages_api::manifest::TransformationSource {
                resource: None,
                path: path.into(),
            },
            targets: Vec::new(),
        };
        assert_eq!(
            read(&[with_path("{ $.spec.missing }")], &package).unwrap_err(),
            "transformations[0].source.path: { $.spec.missing } finds nothing in the package"
        );
        assert!(
            read(&[with_path("$.metadata.labels.*")], &package)
                .unwrap_err()
                .contains("finds 2 values")
        );
        assert!(
            read(&[with_path("{ metadata.name }")], &package)
                .unwrap_err()
                .contains("is not a JSONPath")
        );
    }
}
