//! Reading the objects the commands show, with errors that say what to do.

use kube::api::Api;
use pakket_api::{Bundle, Instance, ProvisionerClass};

use crate::error::{self, Error};
use crate::identity;

/// Advice for a caller who may not read Instances.
pub const READ_ADVICE: &str = "ask an admin for verbs get, list on instances.core.pakket.dev (resource instances, group core.pakket.dev)";

/// The Instance called `name`; `instance "name" not found` when absent.
pub async fn instance(client: &kube::Client, name: &str) -> Result<Instance, Error> {
    instance_with_advice(client, name, READ_ADVICE).await
}

/// [`instance`], telling a refused caller `advice` (what the command they
/// ran needs, not only reading).
pub async fn instance_with_advice(
    client: &kube::Client,
    name: &str,
    advice: &str,
) -> Result<Instance, Error> {
    let instances: Api<Instance> = Api::all(client.clone());
    match instances.get_opt(name).await {
        Ok(Some(instance)) => Ok(instance),
        Ok(None) => Err(Error::NotFound {
            kind: "instance",
            name: name.to_owned(),
        }),
        Err(source) => {
            Err(identity::refused(client, source, format!("get Instance {name}"), advice).await)
        }
    }
}

/// The Bundle `instance` wants: the one it embeds (which exists only in
/// the Instance, its status recorded there), else the Bundle object it
/// names, if that exists.
pub async fn bundle_of(
    client: &kube::Client,
    instance: &Instance,
) -> Result<Option<Bundle>, Error> {
    match instance.embedded_bundle() {
        Some(embedded) => Ok(Some(embedded)),
        None => bundle(client, &instance.spec.bundle.name).await,
    }
}

/// The Bundle object called `name`, if it exists.
pub async fn bundle(client: &kube::Client, name: &str) -> Result<Option<Bundle>, Error> {
    let bundles: Api<Bundle> = Api::all(client.clone());
    bundles
        .get_opt(name)
        .await
        .map_err(error::api(format!("reading Bundle {name}")))
}

/// The ProvisionerClass called `name`, if it exists.
pub async fn class(client: &kube::Client, name: &str) -> Result<Option<ProvisionerClass>, Error> {
    let classes: Api<ProvisionerClass> = Api::all(client.clone());
    classes
        .get_opt(name)
        .await
        .map_err(error::api(format!("reading ProvisionerClass {name}")))
}
