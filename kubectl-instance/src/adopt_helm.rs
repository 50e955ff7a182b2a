//! `kubectl instance adopt helm-release NAME -n NS --chart REF`: a release
//! Helm installed becomes a HelmChart, its running objects kept (adopted,
//! never deleted and created again), by the explicit adoption rule.
//!
//! Helm keeps each revision of a release in a Secret (`owner=helm`,
//! `name=NAME`, `status`, `version` labels; the release gzipped JSON,
//! base64, under `release`). The last deployed one gives the chart's name
//! and version, the values the user gave, and the objects it installed (its
//! manifest; hooks are not objects Helm keeps). A release records no chart
//! repository, so the caller says where the chart comes from (`--chart`),
//! and it must be that chart at that version.
//!
//! Nothing is written unless the caller may write every object the release
//! installed (a SelfSubjectAccessReview each for `patch`) and each is
//! namespaced in NS (a HelmChart installs into its namespace only); then
//! the HelmChart is created as the caller (the webhooks record her as its
//! author), and each object is annotated with the adoption offer naming
//! the HelmChart's Instance: the runtime adopts an object only when someone
//! who may write it offered it so. Helm's own records are left in place for
//! the caller to delete once the HelmChart is Installed.

use std::collections::BTreeMap;
use std::io::{Read as _, Write};
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt as _};
use pakket_helm_api::HelmChart;
use serde_json::{Map, Value, json};

use crate::error::Error;

/// How long the HelmChart's Instance is waited for before the objects are
/// offered to it.
const WAIT_FOR_INSTANCE: Duration = Duration::from_secs(60);

/// One revision of a release, as Helm stored it.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    /// The release's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The revision.
    pub revision: u64,
    /// The chart's name.
    pub chart: String,
    /// The chart's version.
    pub version: String,
    /// The values the user gave (not the chart's defaults).
    pub values: Map<String, Value>,
    /// The objects installed, as YAML documents.
    pub manifest: String,
}

/// An object the release installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// `apps/v1`.
    pub api_version: String,
    /// `Deployment`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace as the manifest writes it (Helm places objects that
    /// name none in the release's).
    pub namespace: Option<String>,
}

impl std::fmt::Display for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// The release Helm stored in a Secret's `release` key.
pub fn decode_release(stored: &[u8]) -> Result<Release, String> {
    let text: Vec<u8> = stored
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|error| format!("its release is not base64: {error}"))?;
    // Helm gzips releases; very old ones are plain JSON.
    let json = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .take(64 * 1024 * 1024)
            .read_to_end(&mut json)
            .map_err(|error| format!("its release does not gunzip: {error}"))?;
        json
    } else {
        bytes
    };
    let release: Value = serde_json::from_slice(&json)
        .map_err(|error| format!("its release is not Helm's JSON: {error}"))?;
    let text = |value: &Value, what: &str| {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("its release has no {what}"))
    };
    Ok(Release {
        name: text(&release["name"], "name")?,
        namespace: text(&release["namespace"], "namespace")?,
        revision: release["version"].as_u64().unwrap_or_default(),
        chart: text(&release["chart"]["metadata"]["name"], "chart name")?,
        version: text(&release["chart"]["metadata"]["version"], "chart version")?,
        values: release["config"].as_object().cloned().unwrap_or_default(),
        manifest: release["manifest"].as_str().unwrap_or_default().to_owned(),
    })
}

/// Whether `reference` names chart `name` at `version`: `helm+https://…#NAME@VERSION`
/// or `oci://…/NAME:VERSION` (a digest after it allowed).
pub fn names_chart(reference: &str, name: &str, version: &str) -> Result<(), String> {
    let named = if reference.starts_with("helm+https://") {
        reference
            .rsplit_once('#')
            .and_then(|(_, chart)| chart.split_once('@'))
            .map(|(chart, at)| (chart.to_owned(), at.to_owned()))
    } else if let Some(rest) = reference.strip_prefix("oci://") {
        let rest = rest.split('@').next().unwrap_or_default();
        let last = rest.rsplit('/').next().unwrap_or_default();
        last.split_once(':')
            .map(|(chart, tag)| (chart.to_owned(), tag.to_owned()))
    } else {
        None
    };
    match named {
        Some((chart, at)) if chart == name && at == version => Ok(()),
        Some((chart, at)) => Err(format!(
            "--chart names chart {chart} {at}, and the release runs {name} {version}; name that chart at that version so nothing changes as it is adopted"
        )),
        None => Err(format!(
            "--chart {reference:?} is not helm+https://REPOSITORY/#{name}@{version} or oci://REGISTRY/PATH/{name}:{version}"
        )),
    }
}

/// The objects of `manifest`, each with a kind and a name.
pub fn installed(manifest: &str) -> Result<Vec<Installed>, String> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(manifest)
        .map_err(|error| format!("its manifest is not YAML: {error}"))?;
    Ok(documents
        .into_iter()
        .filter(|document| document.is_object())
        .map(|object| Installed {
            api_version: object["apiVersion"].as_str().unwrap_or_default().to_owned(),
            kind: object["kind"].as_str().unwrap_or_default().to_owned(),
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            namespace: object["metadata"]["namespace"].as_str().map(str::to_owned),
        })
        .filter(|object| !object.kind.is_empty() && !object.name.is_empty())
        .collect())
}

/// The HelmChart that installs `release` from `chart`, with `labels`.
pub fn helm_chart_for(release: &Release, chart: &str, labels: &BTreeMap<String, String>) -> Value {
    json!({
        "apiVersion": "helm.pakket.dev/v1alpha1",
        "kind": "HelmChart",
        "metadata": { "name": release.name, "namespace": release.namespace, "labels": labels },
        "spec": {
            "chart": chart,
            "releaseName": release.name,
            "values": release.values,
        },
    })
}

/// The last deployed revision of release `name` in `namespace`.
async fn last_deployed(client: &Client, namespace: &str, name: &str) -> Result<Release, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let listed = secrets
        .list(&ListParams::default().labels(&format!("owner=helm,name={name}")))
        .await
        .map_err(|source| Error::Api {
            action: format!("listing Helm's records of release {name} in {namespace}"),
            source,
        })?;
    let deployed = listed
        .items
        .iter()
        .filter(|secret| secret.labels().get("status").map(String::as_str) == Some("deployed"))
        .max_by_key(|secret| {
            secret
                .labels()
                .get("version")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_default()
        })
        .ok_or_else(|| {
            Error::Refused(format!(
                "no deployed Helm release {name} in namespace {namespace} (Helm keeps each in a Secret labelled owner=helm,name={name},status=deployed; `helm list -n {namespace}` shows them); nothing was written"
            ))
        })?;
    let stored = deployed
        .data
        .as_ref()
        .and_then(|data| data.get("release"))
        .map(|bytes| bytes.0.clone())
        .unwrap_or_default();
    decode_release(&stored).map_err(|problem| {
        Error::Refused(format!(
            "Secret {namespace}/{}: {problem}; nothing was written",
            deployed.name_any()
        ))
    })
}

/// The object's API, if it is namespaced in `namespace` (a HelmChart's
/// release writes nowhere else).
async fn namespaced_api(
    client: &Client,
    object: &Installed,
    namespace: &str,
) -> Result<Result<(Api<DynamicObject>, kube::discovery::ApiResource), String>, Error> {
    let (group, version) = match object.api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", object.api_version.as_str()),
    };
    let kind = kube::api::GroupVersionKind::gvk(group, version, &object.kind);
    let (resource, capabilities) = match discovery::pinned_kind(client, &kind).await {
        Ok(found) => found,
        Err(_) => {
            return Ok(Err(format!(
                "{object} (a kind this cluster does not serve)"
            )));
        }
    };
    if capabilities.scope == Scope::Cluster {
        return Ok(Err(format!("{object} (cluster-scoped)")));
    }
    let own = object.namespace.as_deref().unwrap_or(namespace);
    if own != namespace {
        return Ok(Err(format!("{object} (in namespace {own})")));
    }
    Ok(Ok((
        Api::namespaced_with(client.clone(), namespace, &resource),
        resource,
    )))
}

/// Whether the caller may patch the object.
async fn may_write(
    client: &Client,
    resource: &kube::discovery::ApiResource,
    namespace: &str,
    name: &str,
) -> Result<bool, Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(resource.group.clone()),
                resource: Some(resource.plural.clone()),
                verb: Some("patch".into()),
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(|source| Error::Api {
            action: "asking the apiserver what you may write".into(),
            source,
        })?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

/// What `adopt helm-release` is asked.
pub struct Asked<'a> {
    /// The release.
    pub name: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Where its chart comes from.
    pub chart: &'a str,
    /// Labels for the HelmChart (`--label KEY=VALUE`).
    pub labels: &'a [String],
}

/// The labels `KEY=VALUE` written.
pub fn labels(written: &[String]) -> Result<BTreeMap<String, String>, Error> {
    written
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .filter(|(key, _)| !key.is_empty())
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .ok_or_else(|| {
                    Error::Refused(format!(
                        "--label {pair:?} is not KEY=VALUE; nothing was written"
                    ))
                })
        })
        .collect()
}

/// Adopts the release `asked` names, printing what it did.
pub async fn run(client: &Client, asked: &Asked<'_>, out: &mut impl Write) -> Result<(), Error> {
    let Asked {
        name,
        namespace,
        chart,
        ..
    } = *asked;
    let labels = labels(asked.labels)?;
    let release = last_deployed(client, namespace, name).await?;
    names_chart(chart, &release.chart, &release.version)
        .map_err(|problem| Error::Refused(format!("{problem}; nothing was written")))?;
    let objects = installed(&release.manifest)
        .map_err(|problem| Error::Refused(format!("release {name}: {problem}")))?;
    let mut apis = Vec::new();
    let (mut outside, mut unwritable) = (Vec::new(), Vec::new());
    for object in &objects {
        match namespaced_api(client, object, namespace).await? {
            Err(where_) => outside.push(where_),
            Ok((api, resource)) => {
                if !may_write(client, &resource, namespace, &object.name).await? {
                    unwritable.push(object.to_string());
                }
                apis.push((object, api));
            }
        }
    }
    if !outside.is_empty() {
        return Err(Error::Refused(format!(
            "release {name} installed {}; a HelmChart installs only namespaced objects into its namespace, so nothing was written. An admin adopts such a release as an Instance of the helm class",
            outside.join(", ")
        )));
    }
    if !unwritable.is_empty() {
        return Err(Error::Refused(format!(
            "you may not patch {} of release {name}; adopting hands each object to Pakket, which only someone who may write it can do, so nothing was written",
            unwritable.join(", ")
        )));
    }
    let charts: Api<HelmChart> = Api::namespaced(client.clone(), namespace);
    let existing = charts.get_opt(name).await.map_err(|source| Error::Api {
        action: format!("reading HelmChart {namespace}/{name}"),
        source,
    })?;
    match existing {
        // A run that stopped waiting for the Instance, run again.
        Some(existing)
            if existing.spec.chart == chart
                && existing.spec.release_name.as_deref() == Some(name) => {}
        Some(_) => {
            return Err(Error::Refused(format!(
                "HelmChart {namespace}/{name} exists already, for another chart or release; nothing was written"
            )));
        }
        None => {
            let helm_chart: HelmChart =
                serde_json::from_value(helm_chart_for(&release, chart, &labels))
                    .map_err(|error| Error::Encode(error.to_string()))?;
            charts
                .create(&PostParams::default(), &helm_chart)
                .await
                .map_err(|source| Error::Api {
                    action: format!("creating HelmChart {namespace}/{name}"),
                    source,
                })?;
        }
    }
    let instance = instance_of(&charts, name).await?;
    for (object, api) in &apis {
        let offer = json!({ "metadata": { "annotations": {
            pakket_api::ownership::ADOPT_ANNOTATION: instance,
        } } });
        api.patch(&object.name, &PatchParams::default(), &Patch::Merge(&offer))
            .await
            .map_err(|source| Error::Api {
                action: format!("offering {object} to Instance {instance}"),
                source,
            })?;
    }
    writeln!(
        out,
        "helmchart/{namespace}/{name} adopts Helm release {name} (chart {} {}, revision {}) through Instance {instance}.",
        release.chart, release.version, release.revision
    )?;
    writeln!(out, "Offered for adoption, kept running as they are:")?;
    for object in &objects {
        writeln!(out, "  {object}")?;
    }
    writeln!(
        out,
        "Follow it with `kubectl instance why helmchart/{namespace}/{name}`. Once it is Installed, delete Helm's records so helm no longer manages the release: kubectl delete secret -n {namespace} -l owner=helm,name={name}"
    )?;
    Ok(())
}

/// The HelmChart's Instance, once its controller names it.
async fn instance_of(charts: &Api<HelmChart>, name: &str) -> Result<String, Error> {
    let started = std::time::Instant::now();
    loop {
        let chart = charts.get(name).await.map_err(|source| Error::Api {
            action: format!("reading HelmChart {name}"),
            source,
        })?;
        let status = chart.status.unwrap_or_default();
        if let Some(instance) = status.instance {
            return Ok(instance);
        }
        if let Some(refused) = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Accepted" && c.status == "False")
        {
            return Err(Error::Refused(format!(
                "HelmChart {name} was created and is not accepted: {}; no object was offered to it",
                refused.message
            )));
        }
        if started.elapsed() > WAIT_FOR_INSTANCE {
            return Err(Error::Refused(format!(
                "HelmChart {name} was created and pakket-helm named no Instance for it in {} s (is pakket-helm running?); no object was offered to it: run the command again once it has one",
                WAIT_FOR_INSTANCE.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(release: &Value) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(release.to_string().as_bytes()).unwrap();
        base64::engine::general_purpose::STANDARD
            .encode(gz.finish().unwrap())
            .into_bytes()
    }

    #[test]
    fn a_release_is_read_as_helm_stores_it() {
        let release = json!({
            "name": "web", "namespace": "team-a", "version": 3,
            "chart": {"metadata": {"name": "podinfo", "version": "6.7.1"}},
            "config": {"replicaCount": 2},
            "manifest": "---\n# Source: podinfo/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team-a\n",
            "info": {"status": "deployed"},
        });
        let read = decode_release(&stored(&release)).unwrap();
        assert_eq!(
            (read.chart.as_str(), read.version.as_str(), read.revision),
            ("podinfo", "6.7.1", 3)
        );
        assert_eq!(read.values["replicaCount"], 2);
        let objects = installed(&read.manifest).unwrap();
        let named: Vec<String> = objects.iter().map(ToString::to_string).collect();
        assert_eq!(named, ["Service web", "Deployment web"]);
        assert_eq!(objects[1].namespace.as_deref(), Some("team-a"));
        let chart = helm_chart_for(
            &read,
            "oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1",
            &BTreeMap::new(),
        );
        assert_eq!(chart["spec"]["releaseName"], "web");
        assert_eq!(chart["spec"]["values"]["replicaCount"], 2);
        assert!(
            decode_release(b"not base64!")
                .unwrap_err()
                .contains("not base64")
        );
    }

    #[test]
    fn the_chart_named_must_be_the_one_the_release_runs() {
        for good in [
            "helm+https://stefanprodan.github.io/podinfo/#podinfo@6.7.1",
            "oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1",
            "oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1@sha256:0123",
        ] {
            assert_eq!(names_chart(good, "podinfo", "6.7.1"), Ok(()), "{good}");
        }
        let other = names_chart(
            "oci://ghcr.io/stefanprodan/charts/podinfo:6.8.0",
            "podinfo",
            "6.7.1",
        )
        .unwrap_err();
        assert!(
            other.contains("podinfo 6.8.0") && other.contains("runs podinfo 6.7.1"),
            "{other}"
        );
        assert!(
            names_chart("https://x/podinfo.tgz", "podinfo", "6.7.1")
                .unwrap_err()
                .contains("is not helm+https://")
        );
    }
}
