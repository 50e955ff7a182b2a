//! `operatorrequest/NAMESPACE/NAME` where a command takes an Instance:
//! the Instance that installs the request's operator. It is read from the
//! Operator written for the request (whose status only pakket-resolveset
//! writes), never from the request's own status alone, so an approver
//! approves exactly what the request brought in.

use kube::api::Api;
use pakket_operators_api::request::operator_name;
use pakket_operators_api::{Operator, OperatorRequest};

use crate::error::Error;
use crate::identity;

/// The prefix naming a request.
pub const PREFIX: &str = "operatorrequest/";

/// Request `NAMESPACE/NAME` (what follows [`PREFIX`]), read as the caller.
pub async fn read(client: &kube::Client, named: &str) -> Result<OperatorRequest, Error> {
    let Some((namespace, name)) = named.split_once('/') else {
        return Err(Error::Config(format!(
            "{PREFIX}{named}: name a request as {PREFIX}NAMESPACE/NAME"
        )));
    };
    let requests: Api<OperatorRequest> = Api::namespaced(client.clone(), namespace);
    match requests.get_opt(name).await {
        Ok(Some(request)) => Ok(request),
        Ok(None) => Err(Error::NotFound {
            kind: "operatorrequest",
            name: format!("{namespace}/{name}"),
        }),
        Err(source) => Err(identity::refused(
            client,
            source,
            format!("get operatorrequests in {namespace}"),
            "ask an admin for get on operatorrequests.operators.pakket.dev",
        )
        .await),
    }
}

/// The Instance installing request `NAMESPACE/NAME` (what follows
/// [`PREFIX`]), or why there is none yet.
pub async fn instance_of(client: &kube::Client, named: &str) -> Result<String, Error> {
    let request = read(client, named).await?;
    let namespace = request.metadata.namespace.as_deref().unwrap_or_default();
    let name = request.metadata.name.as_deref().unwrap_or_default();
    let said = |type_: &str| {
        request
            .condition(type_)
            .map(|c| format!("{}: {}", c.reason, c.message))
            .unwrap_or_else(|| "not reported yet".into())
    };
    if request
        .condition("Accepted")
        .is_none_or(|c| c.status != "True")
    {
        return Err(Error::Config(format!(
            "OperatorRequest {namespace}/{name} was not accepted ({}), so nothing of it waits for approval",
            said("Accepted")
        )));
    }
    let uid = request.metadata.uid.as_deref().unwrap_or_default();
    let operator = operator_name(namespace, name, uid);
    let written = Api::<Operator>::all(client.clone())
        .get_opt(&operator)
        .await
        .map_err(crate::error::api(format!("reading Operator {operator}")))?;
    let instance = written.and_then(|operator| {
        operator
            .status?
            .components
            .into_iter()
            .find(|component| component.kind == "Instance")
            .map(|component| component.name)
    });
    match instance {
        Some(instance) => Ok(instance),
        None => Err(Error::Config(format!(
            "OperatorRequest {namespace}/{name} has no Instance to approve yet ({}); `kubectl instance why input/{operator}` says what it waits for",
            said("Approved")
        ))),
    }
}
