//! The resolver API: JSON over HTTP(S), versioned under `/v1`.
//!
//! | route | answers |
//! |---|---|
//! | `GET /v1/catalogs` | every served catalog: priority, digest, counts |
//! | `GET /v1/packages` | every package: default channel, channels with heads |
//! | `GET /v1/packages/{name}` | channels, versions, the update graph as edges |
//! | `POST /v1/query` | one constraint → the matching bundles |
//! | `POST /v1/resolve` | requests and installed → what `pakket resolve -o json` prints |
//! | `POST /v1/plan` | Inputs and the set now → what the Input controller would make of them (`kubectl instance plan`) |
//! | `GET /openapi.json` | the OpenAPI document, derived from the types |
//!
//! Every answer comes from one snapshot of the served catalogs (see
//! [`crate::catalogs::serving`]), so a reload never shows through half-done.

pub mod auth;
pub mod listen;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::catalogs::serving::Catalogs;
use crate::protocol::browse::{self, CatalogList, PackageDetail, PackageList, QueryResult};
use crate::protocol::constraint::Constraint;
use crate::protocol::plan::{self as plan_protocol, PlanRequest, PlanResponse};
use crate::protocol::resolve::{self as shared, ResolveRequest, ResolveResponse};
use crate::protocol::{BadRequest, ErrorResponse};
use auth::{Authenticator, Refusal};

/// Largest request body read; a resolve request is a few kilobytes.
const MAX_BODY: usize = 1 << 20;

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The served catalogs.
    pub catalogs: Arc<Catalogs>,
    /// Who may call; `None` only with `--api-insecure-loopback`.
    pub auth: Option<Arc<Authenticator>>,
}

/// The OpenAPI document of the API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Pakket resolver API",
        description = "Queries and resolutions over the cluster's Catalogs (resolve.pakket.dev)."
    ),
    paths(list_catalogs, list_packages, get_package, query, resolve, plan),
    // The explanation is recursive (a need's candidates have needs); its
    // fields say `no_recursion`, so the two types are listed here, else
    // their `$ref`s would point nowhere.
    components(schemas(
        crate::protocol::resolve::Need,
        crate::protocol::resolve::CandidateVerdict
    )),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The API's routes.
pub fn router(state: ApiState) -> Router {
    let v1 = Router::new()
        .route("/v1/catalogs", get(list_catalogs))
        .route("/v1/packages", get(list_packages))
        .route("/v1/packages/{name}", get(get_package))
        .route("/v1/query", post(query))
        .route("/v1/resolve", post(resolve))
        .route("/v1/plan", post(plan))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
        .with_state(state.clone());
    Router::new()
        .route("/openapi.json", get(openapi).with_state(state))
        .merge(v1)
        .fallback(|| async {
            refuse(
                StatusCode::NOT_FOUND,
                "no such route; GET /openapi.json lists the API's routes",
            )
        })
}

async fn authorize(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let Some(auth) = &state.auth else {
        return next.run(request).await;
    };
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    match auth.check(header).await {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let status = match refusal {
                Refusal::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
                Refusal::Forbidden(_) => StatusCode::FORBIDDEN,
                Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            let mut response = refuse(status, &refusal.to_string());
            if status == StatusCode::UNAUTHORIZED {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("valid"));
            }
            response
        }
    }
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(ErrorResponse::new(message))).into_response()
}

/// A JSON body as `T`, or the field that does not read and why.
fn read_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, BadRequest> {
    let mut reader = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut reader).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." {
            "body".to_owned()
        } else {
            format!("body.{path}")
        };
        BadRequest::new(field, error.into_inner().to_string())
    })
}

fn bad_request(error: &BadRequest) -> Response {
    refuse(StatusCode::BAD_REQUEST, &error.to_string())
}

/// The document describes the server as it runs: without `--api-insecure-loopback`
/// every `/v1` call needs a bearer token; with it, none does.
async fn openapi(State(state): State<ApiState>) -> Response {
    let mut document = ApiDoc::openapi();
    if state.auth.is_none() {
        document.security = None;
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.to_pretty_json().expect("the document serializes"),
    )
        .into_response()
}

/// Every served catalog, highest priority first.
#[utoipa::path(get, path = "/v1/catalogs", responses(
    (status = 200, description = "the served catalogs", body = CatalogList),
    (status = 401, description = "no or bad token", body = ErrorResponse),
    (status = 403, description = "may not get catalogs", body = ErrorResponse),
))]
async fn list_catalogs(State(state): State<ApiState>) -> axum::Json<CatalogList> {
    axum::Json(browse::catalogs(&state.catalogs.snapshot()))
}

/// Every package of every catalog, with channels and their heads.
#[utoipa::path(get, path = "/v1/packages", responses(
    (status = 200, description = "the packages", body = PackageList),
    (status = 401, description = "no or bad token", body = ErrorResponse),
    (status = 403, description = "may not get catalogs", body = ErrorResponse),
))]
async fn list_packages(State(state): State<ApiState>) -> axum::Json<PackageList> {
    axum::Json(browse::packages(&state.catalogs.snapshot()))
}

/// One package: its channels, versions and update graph in each catalog.
#[utoipa::path(get, path = "/v1/packages/{name}",
    params(("name" = String, Path, description = "the package's name")),
    responses(
        (status = 200, description = "the package", body = PackageDetail),
        (status = 404, description = "no catalog has it", body = ErrorResponse),
        (status = 401, description = "no or bad token", body = ErrorResponse),
        (status = 403, description = "may not get catalogs", body = ErrorResponse),
    ))]
async fn get_package(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    match browse::package(&state.catalogs.snapshot(), &name) {
        Some(detail) => axum::Json(detail).into_response(),
        None => refuse(
            StatusCode::NOT_FOUND,
            &format!("no served catalog has a package named {name:?}; GET /v1/packages lists them"),
        ),
    }
}

/// The bundles that meet one constraint.
#[utoipa::path(post, path = "/v1/query", request_body = Constraint, responses(
    (status = 200, description = "the matching bundles", body = QueryResult),
    (status = 400, description = "the constraint is not valid; the message names the field", body = ErrorResponse),
    (status = 401, description = "no or bad token", body = ErrorResponse),
    (status = 403, description = "may not get catalogs", body = ErrorResponse),
))]
async fn query(State(state): State<ApiState>, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return too_large();
    }
    let constraint: Constraint = match read_body(&body) {
        Ok(constraint) => constraint,
        Err(error) => return bad_request(&error),
    };
    let checked = match constraint.check("body") {
        Ok(checked) => checked,
        Err(error) => return bad_request(&error),
    };
    axum::Json(browse::query(&state.catalogs.snapshot(), &checked)).into_response()
}

/// Resolves requests against every served catalog, keeping the installed
/// bundles working: exactly what `pakket resolve -o json` prints. A
/// resolution without a solution is an answer too (200, with the
/// explanation).
#[utoipa::path(post, path = "/v1/resolve", request_body = ResolveRequest, responses(
    (status = 200, description = "the resolved set, or why there is none", body = ResolveResponse),
    (status = 400, description = "bad input; the message names the field", body = ResolveResponse),
    (status = 401, description = "no or bad token", body = ErrorResponse),
    (status = 403, description = "may not get catalogs", body = ErrorResponse),
))]
async fn resolve(State(state): State<ApiState>, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return too_large();
    }
    let checked = match ResolveRequest::from_json(&body).and_then(|request| request.check()) {
        Ok(checked) => checked,
        Err(error) => {
            return resolve_answer(
                StatusCode::BAD_REQUEST,
                &shared::bad_input(&error.to_string()),
            );
        }
    };
    let served = state.catalogs.snapshot();
    // Solving is CPU work: off the async threads.
    let outcome = tokio::task::spawn_blocking(move || {
        shared::resolve(&served.universe, &checked.requests, &checked.installed)
    })
    .await;
    match outcome {
        Ok(outcome @ shared::Outcome::BadInput(_)) => {
            resolve_answer(StatusCode::BAD_REQUEST, &outcome.response())
        }
        Ok(outcome) => resolve_answer(StatusCode::OK, &outcome.response()),
        Err(error) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the resolution stopped: {error}"),
        ),
    }
}

/// The Input controller's pass over the Inputs sent, against the served
/// catalogs: what each would get and the set that would result. The
/// caller compares that set with the installed one.
#[utoipa::path(post, path = "/v1/plan", request_body = PlanRequest, responses(
    (status = 200, description = "what each Input would get, and the set", body = PlanResponse),
    (status = 400, description = "bad input; the message names the field", body = ErrorResponse),
    (status = 401, description = "no or bad token", body = ErrorResponse),
    (status = 403, description = "may not get catalogs", body = ErrorResponse),
))]
async fn plan(State(state): State<ApiState>, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return too_large();
    }
    let request: PlanRequest = match read_body(&body) {
        Ok(request) => request,
        Err(error) => return bad_request(&error),
    };
    let served = state.catalogs.snapshot();
    match tokio::task::spawn_blocking(move || plan_protocol::plan(&served, &request)).await {
        Ok(Ok(response)) => axum::Json(response).into_response(),
        Ok(Err(error)) => bad_request(&error),
        Err(error) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the plan stopped: {error}"),
        ),
    }
}

/// The resolve document, byte for byte as the CLI prints it.
fn resolve_answer(status: StatusCode, response: &ResolveResponse) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        shared::to_json(response),
    )
        .into_response()
}

fn too_large() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the body is larger than {MAX_BODY} bytes; send fewer requests at once"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openapi_document_is_derived_from_the_types() {
        let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let schemas = &document["components"]["schemas"];
        // The recursive explanation and the constraint language are there,
        // and every `$ref` points at a schema.
        for name in [
            "ResolveRequest",
            "ResolveResponse",
            "Explanation",
            "Need",
            "CandidateVerdict",
            "Constraint",
            "PackageDetail",
            "ErrorResponse",
        ] {
            assert!(schemas[name].is_object(), "{name} in {schemas}");
        }
        let text = document.to_string();
        for reference in text.split("\"#/components/schemas/").skip(1) {
            let name = reference.split('"').next().unwrap();
            assert!(schemas[name].is_object(), "$ref {name} points nowhere");
        }
        let resolve = &document["paths"]["/v1/resolve"]["post"];
        assert_eq!(
            resolve["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ResolveRequest"
        );
        assert!(resolve["responses"]["400"].is_object());
        assert_eq!(
            document["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
    }
}
