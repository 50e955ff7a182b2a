//! `POST /v1/resolve` and `pakket resolve`: one request shape, one
//! resolution, one output document. The CLI prints exactly what the API
//! answers because both go through [`resolve`] and [`ResolveResponse`].

use pakket_engine::Version;
use pakket_engine::resolve::{
    self as engine, Installed, Request, ResolveError, SelectionReason as EngineReason, Universe,
};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use super::BadRequest;
use super::constraint::{Constraint, request_of};

/// The body of `POST /v1/resolve`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// What the result must contain.
    pub requests: Vec<RequestItem>,
    /// What is installed and must keep working (and may be updated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<InstalledItem>,
}

/// One request: the CLI's text (`PKG`, `PKG@CHANNEL`, `PKG=RANGE`,
/// `PKG@CHANNEL=RANGE`) or a list of constraints one bundle meets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RequestItem {
    /// `etcd@alpha=>=0.9.0`.
    Text(String),
    /// `[{"type":"olm.package","value":{"packageName":"etcd"}}, {"type":"olm.channel","value":"alpha"}]`.
    Constraints(Vec<Constraint>),
}

impl<'de> Deserialize<'de> for RequestItem {
    // By hand: an untagged enum's own error ("did not match any variant")
    // would not say what to write.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(Self::Text(text)),
            list @ serde_json::Value::Array(_) => serde_json::from_value(list)
                .map(Self::Constraints)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "a request is text (PKG[@CHANNEL][=RANGE]) or a list of constraints ({\"type\": \"olm.package\", \"value\": …})",
            )),
        }
    }
}

/// An installed bundle: `{package, version}` or `{bundle}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum InstalledItem {
    /// A package at a version.
    Version {
        /// The package.
        package: String,
        /// Its installed version (semver).
        version: String,
    },
    /// A bundle by name.
    Bundle {
        /// The bundle's name.
        bundle: String,
    },
}

impl From<&Installed> for InstalledItem {
    fn from(installed: &Installed) -> Self {
        match installed {
            Installed::Version { package, version } => Self::Version {
                package: package.clone(),
                version: version.as_written().to_owned(),
            },
            Installed::Bundle { bundle } => Self::Bundle {
                bundle: bundle.clone(),
            },
        }
    }
}

/// A request body, checked: what the engine is asked.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The requests.
    pub requests: Vec<Request>,
    /// The installed bundles.
    pub installed: Vec<Installed>,
}

impl ResolveRequest {
    /// Reads a JSON body; the error names the field.
    pub fn from_json(body: &[u8]) -> Result<Self, BadRequest> {
        let mut reader = serde_json::Deserializer::from_slice(body);
        serde_path_to_error::deserialize(&mut reader).map_err(|error| {
            let field = error.path().to_string();
            let field = if field == "." {
                "body".to_owned()
            } else {
                field
            };
            BadRequest::new(field, error.into_inner().to_string())
        })
    }

    /// Parses every request and installed item; the error names the field.
    pub fn check(&self) -> Result<Checked, BadRequest> {
        let requests = self
            .requests
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = format!("requests[{i}]");
                match item {
                    RequestItem::Text(text) => Request::parse_cli(text)
                        .map_err(|error| BadRequest::new(field, error.to_string())),
                    RequestItem::Constraints(list) => request_of(list, &field),
                }
            })
            .collect::<Result<_, _>>()?;
        let installed = self
            .installed
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                InstalledItem::Version { package, version } => Version::parse(version)
                    .map(|version| Installed::Version {
                        package: package.clone(),
                        version,
                    })
                    .map_err(|error| {
                        BadRequest::new(format!("installed[{i}].version"), error.to_string())
                    }),
                InstalledItem::Bundle { bundle } => Ok(Installed::Bundle {
                    bundle: bundle.clone(),
                }),
            })
            .collect::<Result<_, _>>()?;
        Ok(Checked {
            requests,
            installed,
        })
    }
}

/// What `/v1/resolve` answers and `pakket resolve -o json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ResolveResponse {
    /// `{"resolved": [...]}`.
    Resolved(Resolved),
    /// `{"error": {"message", "explanation"}}`.
    Failed(Failed),
}

/// A resolution, sorted by package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Resolved {
    /// The chosen bundles.
    pub resolved: Vec<Selection>,
}

/// One chosen bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Selection {
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The bundle's name.
    pub bundle: String,
    /// The channel it was chosen through.
    pub channel: Option<String>,
    /// The catalog it comes from.
    pub catalog: String,
    /// Why it is in the result.
    pub reason: SelectionReason,
    /// Why it is deprecated, if it is (chosen only when nothing else fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}

/// Why a bundle is in the result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SelectionReason {
    /// A request asked for it.
    Requested {
        /// The request, as written.
        request: String,
        /// The installed bundle it replaces, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<String>,
    },
    /// It was installed and stays.
    Installed,
    /// It replaces an installed bundle along the update graph.
    Upgrade {
        /// The installed bundle it replaces.
        from: String,
    },
    /// Another chosen bundle needs it.
    Dependency {
        /// The bundle that needs it.
        of: String,
        /// What that bundle requires.
        needs: String,
    },
}

/// A resolution that produced no result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Failed {
    /// What went wrong.
    pub error: Failure,
}

/// The message, and for a resolution with no solution, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Failure {
    /// One line.
    pub message: String,
    /// The chain of requirements that cannot all be met; `null` for bad input.
    pub explanation: Option<Explanation>,
}

/// Why a resolution failed: the needs that cannot all be met.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Explanation {
    /// Which requests cannot be satisfied together.
    pub summary: String,
    /// The chain of requirements, from the requests down.
    #[schema(no_recursion)]
    pub needs: Vec<Need>,
}

/// Someone needs something, and these are the candidates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Need {
    /// Who needs it (empty for a candidate's own needs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// What is needed.
    pub requires: String,
    /// When nothing fits: why each bundle that might have does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_candidates: Option<String>,
    /// The candidates that fit but could not be used, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub candidates: Vec<CandidateVerdict>,
}

/// Candidates that failed for the same reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CandidateVerdict {
    /// `name version (catalog)` of each.
    pub bundles: Vec<String>,
    /// Why they could not be used.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Their own needs that could not be met.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub needs: Vec<Need>,
}

/// What a resolution came to.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A set of bundles.
    Resolved(Resolved),
    /// No set satisfies the requests; the explanation says why.
    NoSolution(Failed),
    /// The input names something that cannot be used (HTTP 400, exit 2).
    BadInput(String),
}

impl Outcome {
    /// The document to print or send.
    pub fn response(&self) -> ResolveResponse {
        match self {
            Self::Resolved(resolved) => ResolveResponse::Resolved(resolved.clone()),
            Self::NoSolution(failed) => ResolveResponse::Failed(failed.clone()),
            Self::BadInput(message) => bad_input(message),
        }
    }
}

/// The document for bad input: a message, no explanation.
pub fn bad_input(message: &str) -> ResolveResponse {
    ResolveResponse::Failed(Failed {
        error: Failure {
            message: message.to_owned(),
            explanation: None,
        },
    })
}

/// Resolves with the engine and turns the result into the shared document.
pub fn resolve(universe: &Universe, requests: &[Request], installed: &[Installed]) -> Outcome {
    match engine::resolve(universe, requests, installed) {
        Ok(resolution) => Outcome::Resolved(Resolved {
            resolved: resolution.resolved.iter().map(Selection::from).collect(),
        }),
        Err(ResolveError::BadInput(message)) => Outcome::BadInput(message),
        Err(ResolveError::Unsatisfiable(explanation)) => Outcome::NoSolution(Failed {
            error: Failure {
                message: explanation.summary.clone(),
                explanation: Some(Explanation::from(&explanation)),
            },
        }),
    }
}

/// The document as the CLI prints it and the API sends it: pretty JSON and a newline.
pub fn to_json(response: &ResolveResponse) -> String {
    let mut text = serde_json::to_string_pretty(response).expect("plain data serializes");
    text.push('\n');
    text
}

impl From<&engine::Selection> for Selection {
    fn from(selection: &engine::Selection) -> Self {
        Self {
            package: selection.package.clone(),
            version: selection.version.to_string(),
            bundle: selection.bundle.clone(),
            channel: selection.channel.clone(),
            catalog: selection.catalog.clone(),
            reason: match &selection.reason {
                EngineReason::Requested { request, replaces } => SelectionReason::Requested {
                    request: request.clone(),
                    replaces: replaces.clone(),
                },
                EngineReason::Installed => SelectionReason::Installed,
                EngineReason::Upgrade { from } => SelectionReason::Upgrade { from: from.clone() },
                EngineReason::Dependency { of, needs } => SelectionReason::Dependency {
                    of: of.clone(),
                    needs: needs.clone(),
                },
            },
            deprecated: selection.deprecated.clone(),
        }
    }
}

impl From<&engine::Explanation> for Explanation {
    fn from(explanation: &engine::Explanation) -> Self {
        Self {
            summary: explanation.summary.clone(),
            needs: explanation.needs.iter().map(Need::from).collect(),
        }
    }
}

impl From<&engine::Need> for Need {
    fn from(need: &engine::Need) -> Self {
        Self {
            by: need.by.clone(),
            requires: need.requires.clone(),
            no_candidates: need.no_candidates.clone(),
            candidates: need.candidates.iter().map(CandidateVerdict::from).collect(),
        }
    }
}

impl From<&engine::CandidateVerdict> for CandidateVerdict {
    fn from(verdict: &engine::CandidateVerdict) -> Self {
        Self {
            bundles: verdict.bundles.clone(),
            reason: verdict.reason.clone(),
            needs: verdict.needs.iter().map(Need::from).collect(),
        }
    }
}

// Back to the engine's types, so the CLI prints an answer from a server
// with the engine's own text rendering.
impl From<&Explanation> for engine::Explanation {
    fn from(explanation: &Explanation) -> Self {
        Self {
            summary: explanation.summary.clone(),
            needs: explanation.needs.iter().map(engine::Need::from).collect(),
        }
    }
}

impl From<&Need> for engine::Need {
    fn from(need: &Need) -> Self {
        Self {
            by: need.by.clone(),
            requires: need.requires.clone(),
            no_candidates: need.no_candidates.clone(),
            candidates: need
                .candidates
                .iter()
                .map(engine::CandidateVerdict::from)
                .collect(),
        }
    }
}

impl From<&CandidateVerdict> for engine::CandidateVerdict {
    fn from(verdict: &CandidateVerdict) -> Self {
        Self {
            bundles: verdict.bundles.clone(),
            reason: verdict.reason.clone(),
            needs: verdict.needs.iter().map(engine::Need::from).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_engine::catalog::{Catalog, CatalogSet, Format};

    const ETCD: &str = r#"{"schema":"olm.package","name":"etcd","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"etcd","name":"alpha","entries":[{"name":"etcd.v0.9.2"},{"name":"etcd.v0.9.4","replaces":"etcd.v0.9.2"}]}
{"schema":"olm.bundle","name":"etcd.v0.9.2","package":"etcd","image":"x","properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.2"}}]}
{"schema":"olm.bundle","name":"etcd.v0.9.4","package":"etcd","image":"x","properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}},{"type":"olm.package.required","value":{"packageName":"nope","versionRange":">=1.0.0"}}]}"#;

    fn universe() -> Universe {
        let catalog = Catalog::from_str(ETCD, "etcd.json", Format::Json, "test", 0).unwrap();
        Universe::from_catalogs(&CatalogSet::new(vec![catalog]))
    }

    fn run(body: &str) -> Result<Outcome, BadRequest> {
        let checked = ResolveRequest::from_json(body.as_bytes())?.check()?;
        Ok(resolve(&universe(), &checked.requests, &checked.installed))
    }

    #[test]
    fn documents_serialize_as_the_engine_does() {
        let universe = universe();
        let requests = [Request::parse_cli("etcd=0.9.2").unwrap()];
        let engine = engine::resolve(&universe, &requests, &[]).unwrap();
        let ours = resolve(&universe, &requests, &[]).response();
        assert_eq!(
            serde_json::to_string_pretty(&engine).unwrap(),
            serde_json::to_string_pretty(&ours).unwrap()
        );
        let failing = [Request::parse_cli("etcd=0.9.4").unwrap()];
        let Err(ResolveError::Unsatisfiable(explanation)) =
            engine::resolve(&universe, &failing, &[])
        else {
            panic!("etcd 0.9.4 needs a package no catalog has");
        };
        let ResolveResponse::Failed(failed) = resolve(&universe, &failing, &[]).response() else {
            panic!("no solution");
        };
        let back = engine::Explanation::from(failed.error.explanation.as_ref().unwrap());
        assert_eq!(back, explanation);
        // A round trip through JSON keeps every byte.
        let text = to_json(&ResolveResponse::Failed(failed));
        let parsed: ResolveResponse = serde_json::from_str(&text).unwrap();
        assert_eq!(to_json(&parsed), text);
    }

    #[test]
    fn text_and_structured_requests_resolve_alike() {
        let text = run(r#"{"requests":["etcd@alpha=<0.9.4"]}"#).unwrap();
        let structured = run(
            r#"{"requests":[[{"type":"olm.package","value":{"packageName":"etcd","versionRange":"<0.9.4"}},{"type":"olm.channel","value":"alpha"}]]}"#,
        )
        .unwrap();
        let (Outcome::Resolved(a), Outcome::Resolved(b)) = (text, structured) else {
            panic!("both resolve");
        };
        assert_eq!(a, b);
        assert_eq!(a.resolved[0].version, "0.9.2");
    }

    #[test]
    fn bad_input_names_the_field() {
        let cases = [
            (r#"{"requests":[""]}"#, "requests[0]"),
            (r#"{"requests":[7]}"#, "requests[0]"),
            (r#"{"requests":["etcd=>=x"]}"#, "requests[0]"),
            (
                r#"{"requests":["etcd"],"installed":[{"package":"etcd","version":"1.x"}]}"#,
                "installed[0].version",
            ),
            (r#"{"requests":["etcd"],"extra":1}"#, "extra"),
            (
                r#"{"requests":[[{"type":"olm.nope","value":1}]]}"#,
                "requests[0]",
            ),
        ];
        for (body, field) in cases {
            let error = run(body)
                .err()
                .unwrap_or_else(|| panic!("{body} is refused"));
            assert_eq!(error.field, field, "{body}: {error}");
            assert!(!error.message.is_empty());
        }
        // The engine's own bad input: an installed bundle no catalog has.
        let outcome = run(r#"{"requests":["etcd"],"installed":[{"bundle":"etcd.v9"}]}"#).unwrap();
        assert!(matches!(outcome, Outcome::BadInput(message) if message.contains("etcd.v9")));
    }
}
