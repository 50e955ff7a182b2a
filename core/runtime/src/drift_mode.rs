//! `drift` (a ProvisionerClass parameter): what the runtime does when
//! someone else changes or deletes an object an Instance installed.
//! `{mode: Repair}` (the default) puts it back; `{mode: Warn}` leaves it,
//! and says which objects changed in the Instance's `Drifted` condition
//! and an Event, until new content or a new generation is applied (which
//! writes the objects as the content has them, as any install does).
//!
//! Ignoring chosen fields (`ignore`) is not built: a class that names it
//! is refused, so nobody believes a field is ignored when it is not.

use serde_json::{Map, Value};

use crate::class_parameters::ParameterError;

/// What happens to objects someone else changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DriftMode {
    /// Put them back.
    #[default]
    Repair,
    /// Leave them, and say so.
    Warn,
}

/// Reads the class's `drift` parameter; the error names the parameter and
/// what to write.
pub fn from_parameters(
    parameters: Option<&Map<String, Value>>,
) -> Result<DriftMode, ParameterError> {
    let error = |name: String, problem: String| ParameterError { name, problem };
    let Some(drift) = parameters.and_then(|parameters| parameters.get("drift")) else {
        return Ok(DriftMode::Repair);
    };
    let Some(drift) = drift.as_object() else {
        return Err(error(
            "drift".into(),
            format!("{drift} is not an object; write drift: {{mode: Repair}} or {{mode: Warn}}"),
        ));
    };
    if let Some(unknown) = drift.keys().find(|key| key.as_str() != "mode") {
        return Err(error(
            format!("drift.{unknown}"),
            "not supported (only drift.mode is built); remove it".into(),
        ));
    }
    match drift.get("mode") {
        None => Ok(DriftMode::Repair),
        Some(Value::String(mode)) if mode == "Repair" => Ok(DriftMode::Repair),
        Some(Value::String(mode)) if mode == "Warn" => Ok(DriftMode::Warn),
        Some(other) => Err(error(
            "drift.mode".into(),
            format!("{other} is not a mode; write Repair (the default) or Warn"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(value: Value) -> Result<DriftMode, String> {
        from_parameters(value.as_object()).map_err(|error| error.to_string())
    }

    #[test]
    fn repair_is_the_default_and_warn_is_chosen_by_name() {
        assert_eq!(read(json!({})), Ok(DriftMode::Repair));
        assert_eq!(read(json!({"drift": {}})), Ok(DriftMode::Repair));
        assert_eq!(
            read(json!({"drift": {"mode": "Warn"}})),
            Ok(DriftMode::Warn)
        );
        assert_eq!(
            read(json!({"drift": {"mode": "Repair"}})),
            Ok(DriftMode::Repair)
        );
    }

    #[test]
    fn anything_else_is_refused_naming_the_parameter() {
        assert!(
            read(json!({"drift": "Warn"}))
                .unwrap_err()
                .starts_with("parameter drift: ")
        );
        assert!(
            read(json!({"drift": {"mode": "warn"}}))
                .unwrap_err()
                .starts_with("parameter drift.mode: ")
        );
        assert!(
            read(json!({"drift": {"ignore": []}}))
                .unwrap_err()
                .starts_with("parameter drift.ignore: ")
        );
    }
}
