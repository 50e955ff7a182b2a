//! Reading a ProvisionerClass's `parameters`, strictly: a value of the
//! wrong shape is an error naming the parameter and what to write, never a
//! silent default (a typo in `maxObjectSize` must not quietly mean 1 MiB).

use serde_json::{Map, Value};

/// A parameter that is present but unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter {name}: {problem}")]
pub struct ParameterError {
    /// The parameter.
    pub name: String,
    /// What is wrong, and what to write instead.
    pub problem: String,
}

fn error(name: &str, problem: impl Into<String>) -> ParameterError {
    ParameterError {
        name: name.to_owned(),
        problem: problem.into(),
    }
}

/// A size in bytes: a positive integer, or a Kubernetes quantity string
/// such as `512Ki`, `1Mi`, `2M` or `1048576`. `default` when absent.
pub fn size(
    parameters: Option<&Map<String, Value>>,
    name: &str,
    default: u64,
) -> Result<u64, ParameterError> {
    let Some(value) = parameters.and_then(|parameters| parameters.get(name)) else {
        return Ok(default);
    };
    let bytes = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => parse_quantity(text),
        _ => None,
    };
    match bytes {
        Some(bytes) if bytes > 0 => Ok(bytes),
        _ => Err(error(
            name,
            format!(
                "{value} is not a size; write a number of bytes or a quantity such as 512Ki or 1Mi"
            ),
        )),
    }
}

/// A count: a positive integer. `default` when absent.
pub fn count(
    parameters: Option<&Map<String, Value>>,
    name: &str,
    default: u64,
) -> Result<u64, ParameterError> {
    match parameters.and_then(|parameters| parameters.get(name)) {
        None => Ok(default),
        Some(value) => match value.as_u64() {
            Some(count) if count > 0 => Ok(count),
            _ => Err(error(
                name,
                format!("{value} is not a count; write a positive whole number such as 5000"),
            )),
        },
    }
}

/// A duration: a string such as `90s`, `10m` or `1h30m` (or ISO 8601,
/// `PT10M`), at least one second. `default` when absent.
pub fn duration(
    parameters: Option<&Map<String, Value>>,
    name: &str,
    default: std::time::Duration,
) -> Result<std::time::Duration, ParameterError> {
    let Some(value) = parameters.and_then(|parameters| parameters.get(name)) else {
        return Ok(default);
    };
    value.as_str().and_then(parse_duration).ok_or_else(|| {
        error(
            name,
            format!("{value} is not a duration of a second or more; write e.g. 90s, 10m or 1h30m"),
        )
    })
}

/// A duration as people write it (`90s`, `10m`, `1h30m`, ISO 8601
/// `PT10M`), if it is one of a second or more.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    text.parse::<jiff::SignedDuration>()
        .ok()
        .and_then(|duration| std::time::Duration::try_from(duration).ok())
        .filter(|duration| duration.as_secs() >= 1)
}

/// A boolean; `default` when absent.
pub fn boolean(
    parameters: Option<&Map<String, Value>>,
    name: &str,
    default: bool,
) -> Result<bool, ParameterError> {
    match parameters.and_then(|parameters| parameters.get(name)) {
        None => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        Some(value) => Err(error(
            name,
            format!("{value} is not a boolean; write true or false"),
        )),
    }
}

/// A string; `None` when absent.
pub fn string<'a>(
    parameters: Option<&'a Map<String, Value>>,
    name: &str,
) -> Result<Option<&'a str>, ParameterError> {
    match parameters.and_then(|parameters| parameters.get(name)) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(value) => Err(error(
            name,
            format!("{value} is not a string; write e.g. AllowAll"),
        )),
    }
}

/// A list of strings; empty when absent.
pub fn strings(
    parameters: Option<&Map<String, Value>>,
    name: &str,
) -> Result<Vec<String>, ParameterError> {
    let Some(value) = parameters.and_then(|parameters| parameters.get(name)) else {
        return Ok(Vec::new());
    };
    let not_a_list = || {
        error(
            name,
            format!("{value} is not a list of strings; write e.g. [\"a\", \"b\"]"),
        )
    };
    value
        .as_array()
        .ok_or_else(not_a_list)?
        .iter()
        .map(|item| item.as_str().map(str::to_owned).ok_or_else(not_a_list))
        .collect()
}

/// Whole-byte Kubernetes quantities: digits, then an optional binary
/// (`Ki` … `Ei`) or decimal (`k` … `E`) suffix. Written here because the
/// quantity crates on crates.io either pull in a float/decimal stack for
/// the general case or pin old k8s-openapi releases; sizes need none of it.
fn parse_quantity(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let number: u64 = digits.parse().ok()?;
    let multiplier: u64 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parameters(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn durations_are_written_as_people_write_them_and_refused_otherwise() {
        use std::time::Duration;
        let read = |value: Value| {
            duration(
                Some(&parameters(json!({ "d": value }))),
                "d",
                Duration::from_secs(600),
            )
        };
        assert_eq!(read(json!("90s")), Ok(Duration::from_secs(90)));
        assert_eq!(read(json!("10m")), Ok(Duration::from_secs(600)));
        assert_eq!(read(json!("1h30m")), Ok(Duration::from_secs(5400)));
        assert_eq!(read(json!("PT2M")), Ok(Duration::from_secs(120)));
        assert_eq!(
            duration(None, "d", Duration::from_secs(600)),
            Ok(Duration::from_secs(600))
        );
        for bad in [json!("soon"), json!(30), json!("-5m"), json!("0s")] {
            let error = read(bad.clone()).unwrap_err();
            assert!(
                error.to_string().contains("write e.g. 90s"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn sizes_are_bytes_or_quantities() {
        let cases = [
            (json!(1024), 1024),
            (json!("1048576"), 1 << 20),
            (json!("512Ki"), 512 << 10),
            (json!("1Mi"), 1 << 20),
            (json!("2M"), 2_000_000),
            (json!("3Gi"), 3 << 30),
        ];
        for (value, bytes) in cases {
            let map = parameters(json!({ "maxObjectSize": value }));
            assert_eq!(size(Some(&map), "maxObjectSize", 7), Ok(bytes), "{value}");
        }
        assert_eq!(size(None, "maxObjectSize", 7), Ok(7));
    }

    #[test]
    fn a_bad_size_is_an_error_naming_the_parameter_not_a_default() {
        for value in [
            json!("1 MB"),
            json!("lots"),
            json!(-1),
            json!(0),
            json!(1.5),
            json!("16Ei"),
            json!(["1Mi"]),
        ] {
            let map = parameters(json!({ "maxObjectSize": value }));
            let refused = size(Some(&map), "maxObjectSize", 7).expect_err("refused");
            assert_eq!(refused.name, "maxObjectSize");
            assert!(refused.to_string().contains("512Ki"), "{refused}");
        }
    }

    #[test]
    fn a_string_parameter_that_is_not_a_string_is_an_error() {
        let good = parameters(json!({ "approval": "DenyAll" }));
        assert_eq!(string(Some(&good), "approval"), Ok(Some("DenyAll")));
        assert_eq!(string(None, "approval"), Ok(None));
        let bad = parameters(json!({ "approval": false }));
        assert!(string(Some(&bad), "approval").is_err());
    }

    #[test]
    fn lists_must_be_lists_of_strings() {
        let good = parameters(json!({ "pullSecrets": ["a", "b"] }));
        assert_eq!(strings(Some(&good), "pullSecrets").unwrap(), ["a", "b"]);
        assert_eq!(strings(None, "pullSecrets").unwrap(), Vec::<String>::new());
        for value in [json!("a"), json!([1]), json!({"a": 1})] {
            let bad = parameters(json!({ "pullSecrets": value }));
            let refused = strings(Some(&bad), "pullSecrets").expect_err("refused");
            assert!(
                refused.to_string().starts_with("parameter pullSecrets:"),
                "{refused}"
            );
        }
    }
}
