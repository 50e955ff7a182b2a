//! The constraint language of `/v1/query` and structured `/v1/resolve`
//! requests (the one `Input` will use): `olm.package` with an optional
//! range, `olm.gvk`, `olm.name`, `olm.label`, `olm.channel`.

use pakket_engine::Range;
use pakket_engine::catalog::Bundle;
use pakket_engine::resolve::Request;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::BadRequest;

/// One constraint, as `{"type": "olm.…", "value": …}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", content = "value")]
pub enum Constraint {
    /// A bundle of this package, optionally in a version range.
    #[serde(rename = "olm.package")]
    Package(PackageConstraint),
    /// A bundle that provides this API.
    #[serde(rename = "olm.gvk")]
    Gvk(GvkConstraint),
    /// The bundle with exactly this name.
    #[serde(rename = "olm.name")]
    Name(Text),
    /// A bundle with this `olm.label`.
    #[serde(rename = "olm.label")]
    Label(Text),
    /// A bundle listed in a channel of this name (in a resolution: narrows
    /// the request's `olm.package`).
    #[serde(rename = "olm.channel")]
    Channel(Text),
}

/// A non-empty string value (a bundle name, a label, a channel).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
// utoipa takes no min_length here; "some character" says the same.
#[schema(value_type = String, pattern = r"[\s\S]")]
pub struct Text(pub String);

/// `olm.package`: a package and, optionally, the versions it may have.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageConstraint {
    /// The package (`etcd`).
    #[schema(min_length = 1)]
    pub package_name: String,
    /// Versions in OLM's range syntax (`>=0.9.0 <1.0.0`); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_range: Option<String>,
}

/// `olm.gvk`: an API by group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GvkConstraint {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The API version (`v1beta2`).
    #[schema(min_length = 1)]
    pub version: String,
    /// The kind (`EtcdCluster`).
    #[schema(min_length = 1)]
    pub kind: String,
}

impl Constraint {
    /// The constraint's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Package(_) => "olm.package",
            Self::Gvk(_) => "olm.gvk",
            Self::Name(_) => "olm.name",
            Self::Label(_) => "olm.label",
            Self::Channel(_) => "olm.channel",
        }
    }

    /// The constraint checked: a range that parses, names that are not
    /// empty. `field` names it in the error (`constraint`, `requests[2][0]`).
    pub fn check(&self, field: &str) -> Result<CheckedConstraint, BadRequest> {
        let empty = |what: &str| {
            BadRequest::new(
                format!("{field}.value{what}"),
                format!("{} needs a non-empty value", self.kind()),
            )
        };
        Ok(match self {
            Self::Package(package) => {
                if package.package_name.trim().is_empty() {
                    return Err(empty(".packageName"));
                }
                let range = package
                    .version_range
                    .as_deref()
                    .map(Range::parse)
                    .transpose()
                    .map_err(|error| {
                        BadRequest::new(format!("{field}.value.versionRange"), error.to_string())
                    })?;
                CheckedConstraint::Package {
                    package: package.package_name.trim().to_owned(),
                    range,
                }
            }
            Self::Gvk(gvk) => {
                if gvk.version.is_empty() {
                    return Err(empty(".version"));
                }
                if gvk.kind.is_empty() {
                    return Err(empty(".kind"));
                }
                CheckedConstraint::Gvk(format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind))
            }
            Self::Name(Text(name)) if name.is_empty() => return Err(empty("")),
            Self::Name(Text(name)) => CheckedConstraint::Name(name.clone()),
            Self::Label(Text(label)) if label.is_empty() => return Err(empty("")),
            Self::Label(Text(label)) => CheckedConstraint::Label(label.clone()),
            Self::Channel(Text(channel)) if channel.is_empty() => return Err(empty("")),
            Self::Channel(Text(channel)) => CheckedConstraint::Channel(channel.clone()),
        })
    }
}

/// A constraint whose range parsed; what queries match bundles against.
#[derive(Clone, Debug)]
pub enum CheckedConstraint {
    /// `olm.package`.
    Package {
        /// The package.
        package: String,
        /// Its versions, if limited.
        range: Option<Range>,
    },
    /// `olm.gvk`, as `group/version/Kind`.
    Gvk(String),
    /// `olm.name`.
    Name(String),
    /// `olm.label`.
    Label(String),
    /// `olm.channel`.
    Channel(String),
}

impl CheckedConstraint {
    /// Whether `bundle` meets the constraint.
    pub fn matches(&self, bundle: &Bundle) -> bool {
        match self {
            Self::Package { package, range } => {
                &bundle.package == package
                    && range
                        .as_ref()
                        .is_none_or(|range| range.contains(&bundle.version))
            }
            Self::Gvk(key) => bundle
                .provided_gvks
                .iter()
                .any(|gvk| pakket_engine::resolve::gvk_key(gvk) == *key),
            Self::Name(name) => &bundle.name == name,
            Self::Label(label) => bundle.labels.iter().any(|l| l == label),
            Self::Channel(channel) => bundle.is_in_channel(channel),
        }
    }
}

/// A structured request (a list of constraints every chosen bundle meets)
/// as the engine's [`Request`]. The engine takes one subject per request:
/// a package (narrowed by a channel and a range), an API, a name or a label.
pub fn request_of(constraints: &[Constraint], field: &str) -> Result<Request, BadRequest> {
    if constraints.is_empty() {
        return Err(BadRequest::new(
            field,
            "an empty constraint list asks for nothing; write at least one constraint",
        ));
    }
    let mut subject: Option<(usize, CheckedConstraint)> = None;
    let mut channel: Option<(usize, String)> = None;
    for (i, constraint) in constraints.iter().enumerate() {
        let at = format!("{field}[{i}]");
        match constraint.check(&at)? {
            CheckedConstraint::Channel(name) => {
                if let Some((first, _)) = channel {
                    return Err(BadRequest::new(
                        at,
                        format!("a request names one channel; {field}[{first}] already does"),
                    ));
                }
                channel = Some((i, name));
            }
            checked => {
                if let Some((first, _)) = &subject {
                    return Err(BadRequest::new(
                        at,
                        format!(
                            "a request combines at most one of olm.package, olm.gvk, olm.name and olm.label ({field}[{first}] is one); write them as separate requests"
                        ),
                    ));
                }
                subject = Some((i, checked));
            }
        }
    }
    let Some((at, subject)) = subject else {
        return Err(BadRequest::new(
            field,
            "olm.channel narrows an olm.package constraint; add one naming the package",
        ));
    };
    let channel_field = channel.as_ref().map(|(i, _)| format!("{field}[{i}]"));
    let channel = channel.map(|(_, name)| name);
    let only_package = |request: Request| match channel_field {
        Some(ref channel_at) => Err(BadRequest::new(
            channel_at.clone(),
            format!("olm.channel narrows an olm.package constraint, not the one at {field}[{at}]"),
        )),
        None => Ok(request),
    };
    match subject {
        CheckedConstraint::Package { package, range } => Ok(Request::Package {
            package,
            channel,
            range,
            catalog: None,
        }),
        CheckedConstraint::Gvk(gvk) => only_package(Request::Gvk(gvk)),
        CheckedConstraint::Name(name) => only_package(Request::BundleName(name)),
        CheckedConstraint::Label(label) => only_package(Request::Label(label)),
        CheckedConstraint::Channel(_) => unreachable!("channels are collected apart"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Vec<Constraint> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_package_with_a_channel_and_range_is_one_request() {
        let constraints = parse(
            r#"[{"type":"olm.package","value":{"packageName":"etcd","versionRange":">=0.9.0"}},
                {"type":"olm.channel","value":"alpha"}]"#,
        );
        let request = request_of(&constraints, "requests[0]").unwrap();
        assert_eq!(request.to_string(), "etcd@alpha >=0.9.0");
    }

    #[test]
    fn mistakes_name_the_field_and_say_what_to_write() {
        let two =
            parse(r#"[{"type":"olm.name","value":"a.v1"},{"type":"olm.label","value":"LTS"}]"#);
        let error = request_of(&two, "requests[3]").unwrap_err();
        assert_eq!(error.field, "requests[3][1]");
        assert!(error.message.contains("separate requests"), "{error}");

        let bad_range = parse(
            r#"[{"type":"olm.package","value":{"packageName":"etcd","versionRange":">=x"}}]"#,
        );
        let error = request_of(&bad_range, "requests[0]").unwrap_err();
        assert_eq!(error.field, "requests[0][0].value.versionRange");

        let lonely = parse(r#"[{"type":"olm.channel","value":"alpha"}]"#);
        let error = request_of(&lonely, "requests[1]").unwrap_err();
        assert!(
            error.message.contains("add one naming the package"),
            "{error}"
        );

        let gvk_channel = parse(
            r#"[{"type":"olm.gvk","value":{"group":"g","version":"v1","kind":"K"}},{"type":"olm.channel","value":"alpha"}]"#,
        );
        assert_eq!(
            request_of(&gvk_channel, "requests[0]").unwrap_err().field,
            "requests[0][1]"
        );
    }
}
