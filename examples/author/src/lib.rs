//! A provisioner for a format Pakket does not know: a Bundle's content is
//! a directory of `.properties` files (`key=value` lines, `#` comments),
//! and each file becomes a ConfigMap of that name in the namespace the
//! Instance's `spec.config.namespace` names.
//!
//! Everything else (watching, unpacking by digest, approval, server-side
//! apply, pivot, health, status, Events, leader election) is the runtime's.
//! This is the whole of what an author writes; the runtime's author guide
//! (`pakket_runtime::guide`) shows this file.

use std::collections::BTreeMap;

use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::{Value, json};

/// The provisioner: its id, which ProvisionerClasses name.
pub struct Properties {
    pub id: String,
}

impl Provisioner for Properties {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        // A setting of the Instance: an error names its field, and the
        // Instance says `InvalidConfig` until it is fixed.
        let namespace = request
            .instance
            .spec
            .config
            .as_ref()
            .and_then(|config| config.get("namespace"))
            .and_then(Value::as_str)
            .ok_or_else(|| ObjectsError::Config {
                field: "spec.config.namespace".into(),
                problem: "missing; name the namespace the ConfigMaps go to".into(),
            })?;
        let mut objects = Vec::new();
        for (name, text) in read_files(request)? {
            let data = parse(&name, &text)?;
            objects.push(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": { "name": name, "namespace": namespace },
                "data": data,
            }));
        }
        if objects.is_empty() {
            return Err(ObjectsError::Content(
                "the content holds no .properties file".into(),
            ));
        }
        Ok(objects)
    }

    // `approve` is not written: the runtime's default applies AllowAll,
    // DenyAll, UserPermission and Android, and asks a person otherwise.
}

/// Every `NAME.properties` file of the content, by name, each at most the
/// class's `maxObjectSize`.
fn read_files(request: &ObjectsRequest<'_>) -> Result<Vec<(String, String)>, ObjectsError> {
    let content_error = |error: std::io::Error| ObjectsError::Content(error.to_string());
    let mut files = Vec::new();
    for entry in std::fs::read_dir(request.content).map_err(content_error)? {
        let path = entry.map_err(content_error)?.path();
        let Some(name) = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".properties"))
        else {
            continue;
        };
        let size = std::fs::metadata(&path).map_err(content_error)?.len();
        if size > request.max_object_size {
            return Err(ObjectsError::Content(format!(
                "{name}.properties is {size} bytes, more than the class's maxObjectSize ({})",
                request.max_object_size
            )));
        }
        let text = std::fs::read_to_string(&path).map_err(content_error)?;
        files.push((name.to_owned(), text));
    }
    files.sort();
    Ok(files)
}

/// `key=value` lines; blank lines and `#` comments are skipped. An error
/// names the file and the line.
pub fn parse(name: &str, text: &str) -> Result<BTreeMap<String, String>, ObjectsError> {
    let mut data = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ObjectsError::Content(format!(
                "{name}.properties:{}: `{line}` is not key=value",
                number + 1
            )));
        };
        data.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_keys_and_a_bad_line_is_named() {
        let data = parse("app", "# settings\nmode = fast\n\nlevel=3\n").unwrap();
        assert_eq!(data.get("mode").map(String::as_str), Some("fast"));
        assert_eq!(data.len(), 2);
        let error = parse("app", "mode=fast\noops\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "app.properties:2: `oops` is not key=value"
        );
    }
}
