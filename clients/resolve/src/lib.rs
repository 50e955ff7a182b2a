//! `pakket-resolve-client`: calling the resolver API, what `pakket
//! resolve --server`, `kubectl instance` and the tests use. The protocol's
//! types are `pakket-resolve-api`'s; this crate only carries them. The answer is read back into the same [`Outcome`] the file-based
//! path produces, so both print alike.

use std::path::Path;

use pakket_resolve_api::protocol::ErrorResponse;
use pakket_resolve_api::protocol::browse::PackageDetail;
use pakket_resolve_api::protocol::resolve::{Outcome, ResolveRequest, ResolveResponse};

/// Why the API gave no answer to print.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL, the CA file or the connection.
    #[error("{0}")]
    Transport(String),
    /// The server refused (401, 403, …) with this message.
    #[error("the server answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
}

/// A client of one resolver API.
pub struct ResolverClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl ResolverClient {
    /// A client of the API at `base` (`https://HOST:PORT`, or `http://` on
    /// loopback), sending `token`, trusting `ca` besides the system's roots.
    pub fn new(base: &str, token: Option<String>, ca: Option<&Path>) -> Result<Self, ClientError> {
        // reqwest is built without a provider: ring, as everywhere in Pakket.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("pakket/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_secs(120));
        if let Some(ca) = ca {
            let pem = std::fs::read(ca).map_err(|error| {
                ClientError::Transport(format!("--server-ca {}: {error}", ca.display()))
            })?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|error| {
                ClientError::Transport(format!(
                    "--server-ca {}: not PEM certificates: {error}",
                    ca.display()
                ))
            })?;
            builder = builder.tls_certs_merge(certificates);
        }
        let http = builder
            .build()
            .map_err(|error| ClientError::Transport(error.to_string()))?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token,
            http,
        })
    }

    /// Sends `method path` with a JSON `body`; the status and the body's text.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(u16, String), ClientError> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request.send().await.map_err(|error| {
            ClientError::Transport(format!("cannot reach {}: {}", self.base, chain(&error)))
        })?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|error| ClientError::Transport(chain(&error)))?;
        Ok((status, text))
    }

    /// `POST /v1/resolve`, read back as the file-based path's outcome.
    pub async fn resolve(&self, request: &ResolveRequest) -> Result<Outcome, ClientError> {
        let body = serde_json::to_vec(request).expect("plain data serializes");
        let (status, text) = self
            .call(reqwest::Method::POST, "/v1/resolve", Some(body))
            .await?;
        match status {
            200 | 400 => {
                let response: ResolveResponse = serde_json::from_str(&text).map_err(|error| {
                    ClientError::Transport(format!(
                        "the server's answer is not a resolution ({error}); is {} a Pakket resolver API?",
                        self.base
                    ))
                })?;
                Ok(match (status, response) {
                    (200, ResolveResponse::Resolved(resolved)) => Outcome::Resolved(resolved),
                    (200, ResolveResponse::Failed(failed))
                        if failed.error.explanation.is_some() =>
                    {
                        Outcome::NoSolution(failed)
                    }
                    (_, ResolveResponse::Failed(failed)) => Outcome::BadInput(failed.error.message),
                    (_, ResolveResponse::Resolved(_)) => {
                        return Err(ClientError::Transport(
                            "the server answered 400 with a resolution".into(),
                        ));
                    }
                })
            }
            status => Err(refusal(status, text)),
        }
    }
}

impl ResolverClient {
    /// `POST /v1/plan`: what the Input controller would make of `request`.
    pub async fn plan(
        &self,
        request: &pakket_resolve_api::protocol::plan::PlanRequest,
    ) -> Result<pakket_resolve_api::protocol::plan::PlanResponse, ClientError> {
        let body = serde_json::to_vec(request).expect("plain data serializes");
        let (status, text) = self
            .call(reqwest::Method::POST, "/v1/plan", Some(body))
            .await?;
        match status {
            200 => serde_json::from_str(&text).map_err(|error| {
                ClientError::Transport(format!(
                    "the server's answer is not a plan ({error}); is {} a Pakket resolver API of this version?",
                    self.base
                ))
            }),
            status => Err(refusal(status, text)),
        }
    }

    /// `GET /v1/packages/{name}`: the package in every served catalog, or
    /// `None` if no catalog has it.
    pub async fn package(&self, name: &str) -> Result<Option<PackageDetail>, ClientError> {
        // The name is one path segment, escaped: a `/` or `?` in it must not
        // reach another route.
        let mut url = reqwest::Url::parse("http://resolver/v1/packages").expect("a valid URL");
        url.path_segments_mut()
            .expect("an http URL has segments")
            .push(name);
        let path = url.path().to_owned();
        let (status, text) = self.call(reqwest::Method::GET, &path, None).await?;
        match status {
            200 => serde_json::from_str(&text).map(Some).map_err(|error| {
                ClientError::Transport(format!(
                    "the server's answer is not a package ({error}); is {} a Pakket resolver API?",
                    self.base
                ))
            }),
            404 => Ok(None),
            status => Err(refusal(status, text)),
        }
    }
}

fn refusal(status: u16, text: String) -> ClientError {
    let message = serde_json::from_str::<ErrorResponse>(&text)
        .map(|refusal| refusal.error.message)
        .unwrap_or(text);
    ClientError::Refused { status, message }
}

/// An error with its causes, which reqwest keeps apart.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
