//! The Instance a package becomes: its Bundle (the refs, named after the
//! package, version and refs' digest), its config, the package's labels,
//! the annotations naming the package, this provisioner's seal on it and
//! the package's author sealed as its requester. Nothing is taken over:
//! an Instance of that name this provisioner did not make for this
//! package stays as it is.

use std::collections::BTreeMap;

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource as _, ResourceExt as _};
use pakket_api::Instance;
use pakket_packages_api::conditions::PackageReason;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::super::{Error, MANAGER, PackageContext, PackageObject};
use super::installing::Install;
use crate::provisioner::PackageConfig;
use crate::{made_here, names};

/// Applies the Instance `name` the package becomes; returns it as stored.
pub(super) async fn apply<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    name: &str,
    install: &Install,
    refs: Vec<String>,
    config: &PackageConfig,
) -> Result<Instance, Error> {
    let instances: Api<Instance> = Api::all(context.info.client.clone());
    refuse_taken(package, context, &instances, name).await?;
    let bundle = bundle_name(name, &install.version, &refs);
    let mut instance = json!({
        "apiVersion": Instance::api_version(&()),
        "kind": Instance::kind(&()),
        "metadata": {
            "name": name,
            "labels": labels(package),
            "annotations": annotations(package, context, name),
        },
        "spec": {
            "class": context.class,
            "bundle": { "name": bundle, "spec": { "class": context.class, "refs": refs } },
            "config": config,
        },
    });
    seal_requester(&mut instance, context, name, install.author.as_ref());
    Ok(instances
        .patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&instance),
        )
        .await?)
}

/// Fails with `NameTaken` when an Instance `name` exists that this
/// provisioner did not make for this package (labels and annotations are
/// no proof, only its seal is).
async fn refuse_taken<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    instances: &Api<Instance>,
    name: &str,
) -> Result<(), Error> {
    if let Some(existing) = instances.get_opt(name).await?
        && !made_here::is_instance_of(
            &existing,
            K::KIND,
            package.namespace().as_deref(),
            &package.name_any(),
            context.record_key.as_ref(),
        )
    {
        return Err(Error::failed(
            PackageReason::NameTaken,
            format!(
                "Instance {name} exists and pakket-package did not make it for this package (labels are no proof; only its seal is); nothing of it is changed: whoever may delete Instance {name} deletes it, and the package installs"
            ),
        ));
    }
    Ok(())
}

/// The Bundle's name: the Instance's, the version and the refs' digest, at
/// most 63 characters (the runtime labels every object with it).
fn bundle_name(name: &str, version: &str, refs: &[String]) -> String {
    let mut digest = Sha256::new();
    for reference in refs {
        digest.update(reference.as_bytes());
        digest.update(b"\n");
    }
    names::sanitized(
        &format!("{name}-{version}-{}", &hex::encode(digest.finalize())[..8]),
        63,
    )
}

/// The package's labels too (a controller or webhook limited by a
/// selector sees the Instances of the packages it sees), and its kind.
fn labels<K: PackageObject>(package: &K) -> BTreeMap<String, String> {
    let mut labels = package.labels().clone();
    labels.insert(names::KIND_LABEL.to_owned(), K::KIND.to_owned());
    labels
}

/// The package's name and namespace, and this provisioner's seal.
fn annotations<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    name: &str,
) -> BTreeMap<String, String> {
    let namespace = package.namespace();
    let mut annotations = BTreeMap::from([(names::NAME_ANNOTATION.to_owned(), package.name_any())]);
    if let Some(namespace) = &namespace {
        annotations.insert(names::NAMESPACE_ANNOTATION.to_owned(), namespace.clone());
    }
    if let Some(key) = context.record_key.as_ref() {
        annotations.insert(
            made_here::INSTANCE_SEAL_ANNOTATION.to_owned(),
            made_here::instance_seal(
                key,
                name,
                &made_here::package_reference(K::KIND, namespace.as_deref(), &package.name_any()),
            ),
        );
    }
    annotations
}

/// The package's author is the Instance's requester: sealed for this
/// Instance and spec, which the webhook takes from this process (a
/// delegate) only.
fn seal_requester(
    instance: &mut Value,
    context: &PackageContext,
    name: &str,
    person: Option<&pakket_api::CreatorRecord>,
) {
    if let (Some(key), Some(person)) = (context.record_key.as_ref(), person)
        && let Ok(spec) =
            serde_json::from_value::<pakket_api::InstanceSpec>(instance["spec"].clone())
    {
        let sealed = person.sealed(key, pakket_api::LAST_CHANGED_BY_ANNOTATION, name, &spec);
        instance["metadata"]["annotations"][pakket_api::LAST_CHANGED_BY_ANNOTATION] =
            json!(sealed.to_annotation());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_is_named_after_its_refs_in_63_characters() {
        let refs = vec!["https://r/a/v1/package.yaml".to_owned()];
        let one = bundle_name("clusterpackage-a", "v1", &refs);
        assert!(one.starts_with("clusterpackage-a-v1-"), "{one}");
        assert_ne!(one, bundle_name("clusterpackage-a", "v1", &[]));
        let long = bundle_name(&"x".repeat(80), "v1", &refs);
        assert!(long.len() <= 63, "{long}");
    }
}
