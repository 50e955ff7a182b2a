//! The API inventory (seed 002): what an installed Instance provides to
//! the cluster, and who uses it.
//!
//! Provides: the CustomResourceDefinitions and APIServices it installed,
//! found by the Instance UID label the runtime writes on every object it
//! applies (never by the Instance's status, which whoever may write the
//! status could change), and the `olm.package` / `olm.gvk` properties
//! its active Bundle's provisioner reported.
//!
//! Uses: custom resources of its kinds anywhere in the cluster (counted
//! per namespace, up to a bound), other installed Instances whose Bundle
//! requires one of its APIs or its package (`olm.gvk.required`,
//! `olm.package.required`), and Roles and ClusterRoles whose rules name
//! its API groups. The first two are what "in use" means: deleting the
//! Instance would break them. RBAC is shown, never blocking (a role that
//! names a group breaks nothing when the group goes).
//!
//! Everything is read at the moment it is asked (a webhook's request, a
//! `kubectl instance deps`), with metadata-only lists, so it is as current
//! as the apiserver.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt as _};
use pakket_api::ownership::INSTANCE_UID_LABEL;
use pakket_api::{Bundle, BundleProperty, ConditionType, Instance};
use serde::Serialize;

/// How many custom resources of one kind are counted; past it the count
/// says "at least".
pub const COUNT_BOUND: usize = 1000;

/// One API a CRD of the Instance defines.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProvidedKind {
    /// The CRD's name (`plural.group`).
    pub crd: String,
    /// Its group.
    pub group: String,
    /// Its kind.
    pub kind: String,
    /// Its plural (the resource).
    pub plural: String,
    /// The versions it serves.
    pub versions: Vec<String>,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
}

/// What an Instance provides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Provided {
    /// The kinds its CRDs define.
    pub kinds: Vec<ProvidedKind>,
    /// Its APIServices (`v1beta1.metrics.k8s.io`).
    pub api_services: Vec<String>,
    /// The packages its Bundle says it is (`olm.package`), name → version.
    pub packages: BTreeMap<String, String>,
}

impl ProvidedKind {
    /// The kind as the dynamic API reaches it, at its first served
    /// version (`None` when it serves none).
    pub fn api_resource(&self) -> Option<ApiResource> {
        let version = self.versions.first()?;
        Some(ApiResource {
            group: self.group.clone(),
            version: version.clone(),
            api_version: format!("{}/{version}", self.group),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        })
    }

    /// The kind a CRD defines, with the versions it serves.
    pub fn of(crd: &CustomResourceDefinition) -> Self {
        kind_of(crd)
    }
}

impl Provided {
    /// Whether it provides nothing anyone could use.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty() && self.api_services.is_empty() && self.packages.is_empty()
    }

    /// Its API groups.
    pub fn groups(&self) -> BTreeSet<&str> {
        self.kinds
            .iter()
            .map(|kind| kind.group.as_str())
            .chain(
                self.api_services
                    .iter()
                    .filter_map(|service| service.split_once('.').map(|(_, group)| group)),
            )
            .collect()
    }
}

/// Custom resources of one provided kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesInUse {
    /// `group/kind`.
    pub kind: String,
    /// How many (at most [`COUNT_BOUND`]).
    pub count: usize,
    /// Whether there are more than `count`.
    pub more: bool,
    /// How many per namespace (`""`: cluster-scoped).
    pub namespaces: BTreeMap<String, usize>,
}

/// Another Instance that needs this one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependent {
    /// Its name.
    pub instance: String,
    /// What it requires of this one, in words.
    pub requires: String,
}

/// Who uses what an Instance provides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Users {
    /// Custom resources of its kinds.
    pub resources: Vec<ResourcesInUse>,
    /// Installed Instances whose Bundles require its APIs or package.
    pub instances: Vec<Dependent>,
    /// Roles and ClusterRoles naming its groups (`ClusterRole x`,
    /// `Role ns/x`); shown, never blocking.
    pub rbac: Vec<String>,
}

impl Users {
    /// Whether anything would break if the Instance went: custom resources
    /// or dependent Instances (RBAC does not count).
    pub fn in_use(&self) -> bool {
        !self.resources.is_empty() || !self.instances.is_empty()
    }

    /// The users in words: "3 EtcdCluster objects in namespaces a, b;
    /// Instance x requires etcd.database.coreos.com/v1beta2 EtcdCluster".
    pub fn words(&self) -> String {
        let mut parts: Vec<String> = self
            .resources
            .iter()
            .map(|used| {
                let kind = used.kind.rsplit('/').next().unwrap_or(&used.kind);
                let count = if used.more {
                    format!("more than {}", used.count)
                } else {
                    used.count.to_string()
                };
                let namespaces: Vec<&str> = used
                    .namespaces
                    .keys()
                    .filter(|ns| !ns.is_empty())
                    .map(String::as_str)
                    .collect();
                match namespaces.as_slice() {
                    [] => format!("{count} {kind} objects"),
                    [one] => format!("{count} {kind} objects in namespace {one}"),
                    many => format!("{count} {kind} objects in namespaces {}", many.join(", ")),
                }
            })
            .collect();
        parts.extend(self.instances.iter().map(|dependent| {
            format!(
                "Instance {} requires {}",
                dependent.instance, dependent.requires
            )
        }));
        parts.join("; ")
    }
}

/// What `instance` provides, from the objects labelled as its own and its
/// active Bundle's properties (`bundle`: that Bundle's, or the embedded
/// record's). Two lists, selected by the Instance's UID; a process that
/// answers many such questions keeps the objects in a watch cache and asks
/// [`provided_among`] instead (the webhooks do).
pub async fn provided(
    client: &Client,
    instance: &Instance,
    properties: &[BundleProperty],
) -> Result<Provided, kube::Error> {
    let Some(uid) = instance.metadata.uid.as_deref() else {
        return Ok(Provided::default());
    };
    let selector = ListParams::default().labels(&format!("{INSTANCE_UID_LABEL}={uid}"));
    let crds = Api::<CustomResourceDefinition>::all(client.clone())
        .list(&selector)
        .await?
        .items;
    // A cluster without the aggregation layer's API has no APIServices.
    let services = match Api::<APIService>::all(client.clone()).list(&selector).await {
        Ok(services) => services.items,
        Err(_) => Vec::new(),
    };
    Ok(provided_among(instance, crds, services, properties))
}

/// What `instance` provides among `crds` and `services` (any objects: those
/// not labelled with its UID are passed over), with its active Bundle's
/// `properties`. Pure: the objects come from a list or a watch cache.
pub fn provided_among<C, S>(
    instance: &Instance,
    crds: impl IntoIterator<Item = C>,
    services: impl IntoIterator<Item = S>,
    properties: &[BundleProperty],
) -> Provided
where
    C: std::borrow::Borrow<CustomResourceDefinition>,
    S: std::borrow::Borrow<APIService>,
{
    // An Instance not yet stored has installed nothing.
    let Some(uid) = instance.metadata.uid.as_deref() else {
        return Provided::default();
    };
    let mut found = Provided {
        packages: packages_of(properties),
        ..Provided::default()
    };
    let is_its = |labels: &BTreeMap<String, String>| {
        labels.get(INSTANCE_UID_LABEL).map(String::as_str) == Some(uid)
    };
    found.kinds = crds
        .into_iter()
        .filter(|crd| is_its(crd.borrow().labels()))
        .map(|crd| kind_of(crd.borrow()))
        .collect();
    found.kinds.sort();
    found.api_services = services
        .into_iter()
        .filter(|service| is_its(service.borrow().labels()))
        .map(|service| service.borrow().name_any())
        .collect();
    found.api_services.sort();
    found
}

/// Who uses the CRDs `instance` provides whose names are in `crds`: what
/// content without them would take away (a pivot's check).
pub async fn users_of_crds(
    client: &Client,
    instance: &Instance,
    crds: &BTreeSet<&str>,
) -> Result<Users, kube::Error> {
    let mut provided = provided(client, instance, &[]).await?;
    provided
        .kinds
        .retain(|kind| crds.contains(kind.crd.as_str()));
    provided.api_services.clear();
    if provided.kinds.is_empty() {
        return Ok(Users::default());
    }
    users(client, instance, &provided, false).await
}

/// The properties of `instance`'s active Bundle, if it has one: its
/// embedded record's, or the Bundle object's.
pub async fn active_properties(
    client: &Client,
    instance: &Instance,
) -> Result<Vec<BundleProperty>, kube::Error> {
    let Some(status) = &instance.status else {
        return Ok(Vec::new());
    };
    let Some(active) = &status.active_bundle else {
        return Ok(Vec::new());
    };
    if let Some(embedded) = status
        .embedded_bundle
        .as_ref()
        .filter(|record| &record.name == active && instance.spec.bundle.spec.is_some())
    {
        return Ok(embedded.status.properties.clone());
    }
    Ok(Api::<Bundle>::all(client.clone())
        .get_opt(active)
        .await?
        .and_then(|bundle| bundle.status)
        .map(|status| status.properties)
        .unwrap_or_default())
}

/// Who uses what `instance` provides. `rbac`: whether to read Roles and
/// ClusterRoles too (a webhook deciding a delete does not need them).
pub async fn users(
    client: &Client,
    instance: &Instance,
    provided: &Provided,
    rbac: bool,
) -> Result<Users, kube::Error> {
    let mut users = Users::default();
    for kind in &provided.kinds {
        if let Some(used) = resources_of(client, kind).await?
            && used.count > 0
        {
            users.resources.push(used);
        }
    }
    users.instances = dependents(client, instance, provided).await?;
    if rbac && !provided.groups().is_empty() {
        users.rbac = roles_naming(client, instance, provided).await?;
    }
    Ok(users)
}

/// How many objects of `kind` exist, and where (counted up to
/// [`COUNT_BOUND`]); `None` for a kind that has no API resource.
async fn resources_of(
    client: &Client,
    kind: &ProvidedKind,
) -> Result<Option<ResourcesInUse>, kube::Error> {
    let Some(resource) = kind.api_resource() else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut params = ListParams::default().limit(500);
    let mut used = ResourcesInUse {
        kind: format!("{}/{}", kind.group, kind.kind),
        count: 0,
        more: false,
        namespaces: BTreeMap::new(),
    };
    loop {
        let page = match api.list_metadata(&params).await {
            Ok(page) => page,
            // The CRD is not served (yet, or any more): nothing of it.
            Err(kube::Error::Api(status)) if status.code == 404 => break,
            Err(error) => return Err(error),
        };
        for item in &page.items {
            if used.count == COUNT_BOUND {
                used.more = true;
                break;
            }
            used.count += 1;
            *used
                .namespaces
                .entry(item.metadata.namespace.clone().unwrap_or_default())
                .or_default() += 1;
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) if !used.more => params = params.continue_token(&token),
            _ => break,
        }
    }
    Ok(Some(used))
}

/// The other installed Instances whose active Bundles require what
/// `instance` provides, each with what it requires.
async fn dependents(
    client: &Client,
    instance: &Instance,
    provided: &Provided,
) -> Result<Vec<Dependent>, kube::Error> {
    let name = instance.name_any();
    let mut found = Vec::new();
    let others = Api::<Instance>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    for other in others {
        if other.name_any() == name
            || other.metadata.deletion_timestamp.is_some()
            || !is_installed(&other)
        {
            continue;
        }
        let properties = active_properties(client, &other).await?;
        for requires in requirements_met(&properties, provided) {
            found.push(Dependent {
                instance: other.name_any(),
                requires,
            });
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The Roles and ClusterRoles not `instance`'s own whose rules name an API
/// group it provides.
async fn roles_naming(
    client: &Client,
    instance: &Instance,
    provided: &Provided,
) -> Result<Vec<String>, kube::Error> {
    let groups = provided.groups();
    let names = |rules: Option<&Vec<k8s_openapi::api::rbac::v1::PolicyRule>>| {
        rules.is_some_and(|rules| {
            rules.iter().any(|rule| {
                rule.api_groups
                    .iter()
                    .flatten()
                    .any(|group| groups.contains(group.as_str()))
            })
        })
    };
    let uid = instance.metadata.uid.clone().unwrap_or_default();
    let own = |labels: &BTreeMap<String, String>| labels.get(INSTANCE_UID_LABEL) == Some(&uid);
    let mut found = Vec::new();
    let cluster_roles = Api::<ClusterRole>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    for role in cluster_roles {
        if names(role.rules.as_ref()) && !own(role.labels()) {
            found.push(format!("ClusterRole {}", role.name_any()));
        }
    }
    let roles = Api::<Role>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    for role in roles {
        if names(role.rules.as_ref()) && !own(role.labels()) {
            found.push(format!(
                "Role {}/{}",
                role.namespace().unwrap_or_default(),
                role.name_any()
            ));
        }
    }
    Ok(found)
}

/// One installed Instance, with its active Bundle's properties and what
/// it provides.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The Instance.
    pub instance: Instance,
    /// Its active Bundle's properties.
    pub properties: Vec<BundleProperty>,
    /// What it provides.
    pub provided: Provided,
}

/// Every Instance that is installed, with what it provides: a handful of
/// lists (Instances, Bundles, CRDs, APIServices), whatever their number.
pub async fn everything(client: &Client) -> Result<Vec<Installed>, kube::Error> {
    let bundles: BTreeMap<String, Vec<BundleProperty>> = Api::<Bundle>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|bundle| {
            let properties = bundle.status.map(|s| s.properties).unwrap_or_default();
            (bundle.metadata.name.unwrap_or_default(), properties)
        })
        .collect();
    let mut kinds: BTreeMap<String, Vec<ProvidedKind>> = BTreeMap::new();
    for crd in Api::<CustomResourceDefinition>::all(client.clone())
        .list(&ListParams::default().labels(INSTANCE_UID_LABEL))
        .await?
        .items
    {
        let Some(uid) = crd.labels().get(INSTANCE_UID_LABEL).cloned() else {
            continue;
        };
        kinds.entry(uid).or_default().push(kind_of(&crd));
    }
    let mut services: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Ok(list) = Api::<APIService>::all(client.clone())
        .list(&ListParams::default().labels(INSTANCE_UID_LABEL))
        .await
    {
        for service in list.items {
            if let Some(uid) = service.labels().get(INSTANCE_UID_LABEL).cloned() {
                services.entry(uid).or_default().push(service.name_any());
            }
        }
    }
    let mut installed = Vec::new();
    for instance in Api::<Instance>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if !is_installed(&instance) {
            continue;
        }
        let uid = instance.metadata.uid.clone().unwrap_or_default();
        let properties = instance
            .status
            .as_ref()
            .and_then(|status| {
                let active = status.active_bundle.as_ref()?;
                match status.embedded_bundle.as_ref() {
                    Some(record)
                        if &record.name == active && instance.spec.bundle.spec.is_some() =>
                    {
                        Some(record.status.properties.clone())
                    }
                    _ => bundles.get(active).cloned(),
                }
            })
            .unwrap_or_default();
        let mut provided = Provided {
            kinds: kinds.remove(&uid).unwrap_or_default(),
            api_services: services.remove(&uid).unwrap_or_default(),
            packages: packages_of(&properties),
        };
        provided.kinds.sort();
        provided.api_services.sort();
        installed.push(Installed {
            instance,
            properties,
            provided,
        });
    }
    Ok(installed)
}

fn is_installed(instance: &Instance) -> bool {
    instance
        .condition(ConditionType::Installed)
        .is_some_and(|c| c.status == "True")
}

fn kind_of(crd: &CustomResourceDefinition) -> ProvidedKind {
    let spec = &crd.spec;
    ProvidedKind {
        crd: crd.name_any(),
        group: spec.group.clone(),
        kind: spec.names.kind.clone(),
        plural: spec.names.plural.clone(),
        versions: spec
            .versions
            .iter()
            .filter(|version| version.served)
            .map(|version| version.name.clone())
            .collect(),
        scope: spec.scope.clone(),
    }
}

fn packages_of(properties: &[BundleProperty]) -> BTreeMap<String, String> {
    properties
        .iter()
        .filter(|p| p.type_ == "olm.package")
        .filter_map(|property| {
            Some((
                property.value["packageName"].as_str()?.to_owned(),
                property.value["version"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// What content provides, in words, for an Instance's `status.provides`:
/// the APIs of its CRDs (`group/v1,v2 Kind`), its APIServices and its
/// packages, at most [`pakket_api::PROVIDES_LISTED_MAX`] then how many more.
pub fn summary(objects: &[serde_json::Value], properties: &[BundleProperty]) -> Vec<String> {
    let mut all = Vec::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if kind == "CustomResourceDefinition" && api_version.starts_with("apiextensions.k8s.io/") {
            let spec = &object["spec"];
            let versions: Vec<&str> = spec["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|v| v["served"].as_bool() != Some(false))
                .filter_map(|v| v["name"].as_str())
                .collect();
            all.push(format!(
                "{}/{} {}",
                spec["group"].as_str().unwrap_or_default(),
                versions.join(","),
                spec["names"]["kind"].as_str().unwrap_or_default()
            ));
        } else if kind == "APIService" && api_version.starts_with("apiregistration.k8s.io/") {
            all.push(format!(
                "APIService {}",
                object["metadata"]["name"].as_str().unwrap_or_default()
            ));
        }
    }
    all.extend(
        packages_of(properties)
            .into_iter()
            .map(|(name, version)| format!("package {name} {version}")),
    );
    if all.len() > pakket_api::PROVIDES_LISTED_MAX {
        let more = all.len() - (pakket_api::PROVIDES_LISTED_MAX - 1);
        all.truncate(pakket_api::PROVIDES_LISTED_MAX - 1);
        all.push(format!("… and {more} more"));
    }
    all
}

/// What of `provided` the `properties` of another Bundle require, in words.
pub fn requirements_met(properties: &[BundleProperty], provided: &Provided) -> Vec<String> {
    let mut met = Vec::new();
    for property in properties {
        let value = &property.value;
        let text = |field: &str| value[field].as_str().unwrap_or_default();
        match property.type_.as_str() {
            "olm.gvk.required" => {
                let (group, version, kind) = (text("group"), text("version"), text("kind"));
                if provided.kinds.iter().any(|provided| {
                    provided.group == group
                        && provided.kind == kind
                        && provided.versions.iter().any(|v| v == version)
                }) {
                    met.push(format!("{group}/{version} {kind}"));
                }
            }
            "olm.package.required" => {
                let package = text("packageName");
                if provided.packages.contains_key(package) {
                    let range = text("versionRange");
                    met.push(if range.is_empty() {
                        format!("package {package}")
                    } else {
                        format!("package {package} {range}")
                    });
                }
            }
            _ => {}
        }
    }
    met
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn etcd() -> Provided {
        Provided {
            kinds: vec![ProvidedKind {
                crd: "etcdclusters.etcd.database.coreos.com".into(),
                group: "etcd.database.coreos.com".into(),
                kind: "EtcdCluster".into(),
                plural: "etcdclusters".into(),
                versions: vec!["v1beta2".into()],
                scope: "Namespaced".into(),
            }],
            api_services: vec!["v1beta1.metrics.k8s.io".into()],
            packages: [("etcd".to_owned(), "0.9.4".to_owned())].into(),
        }
    }

    fn property(type_: &str, value: serde_json::Value) -> BundleProperty {
        BundleProperty {
            type_: type_.into(),
            value,
        }
    }

    fn labelled<K: kube::Resource>(mut object: K, name: &str, uid: Option<&str>) -> K {
        object.meta_mut().name = Some(name.into());
        if let Some(uid) = uid {
            object
                .meta_mut()
                .labels
                .get_or_insert_default()
                .insert(INSTANCE_UID_LABEL.into(), uid.into());
        }
        object
    }

    fn crd(name: &str, uid: Option<&str>, served: &[(&str, bool)]) -> CustomResourceDefinition {
        let (plural, group) = name.split_once('.').unwrap();
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {},
            "spec": {
                "group": group,
                "names": {"kind": "Widget", "plural": plural},
                "scope": "Namespaced",
                "versions": served.iter().map(|(version, served)| json!({
                    "name": version, "served": served, "storage": *served,
                })).collect::<Vec<_>>(),
            },
        }))
        .unwrap();
        labelled(crd, name, uid)
    }

    #[test]
    fn what_an_instance_provides_is_picked_from_any_objects_by_its_uid_label() {
        let instance = |uid: Option<&str>| {
            let mut instance = Instance::new(
                "api",
                serde_json::from_value(json!({"class": "c", "bundle": {"name": "b"}})).unwrap(),
            );
            instance.metadata.uid = uid.map(str::to_owned);
            instance
        };
        let crds = [
            crd(
                "widgets.b.example",
                Some("u1"),
                &[("v1", true), ("v0", false)],
            ),
            crd("gadgets.a.example", Some("u1"), &[("v2", true)]),
            crd("others.example", Some("u2"), &[("v1", true)]),
            crd("unlabelled.example", None, &[("v1", true)]),
        ];
        let services = [
            labelled(APIService::default(), "v1.b.example", Some("u1")),
            labelled(APIService::default(), "v1.c.example", Some("u2")),
            labelled(APIService::default(), "v1.d.example", None),
        ];
        let properties = [property(
            "olm.package",
            json!({"packageName": "widgets", "version": "1.0.0"}),
        )];
        // Borrowed objects (a list) and shared ones (a watch cache's) alike.
        let shared: Vec<std::sync::Arc<CustomResourceDefinition>> =
            crds.iter().cloned().map(std::sync::Arc::new).collect();
        let found = provided_among(&instance(Some("u1")), shared, &services, &properties);
        assert_eq!(
            found,
            provided_among(&instance(Some("u1")), &crds, &services, &properties)
        );
        assert_eq!(
            found
                .kinds
                .iter()
                .map(|kind| (kind.crd.as_str(), kind.versions.clone()))
                .collect::<Vec<_>>(),
            [
                ("gadgets.a.example", vec!["v2".to_owned()]),
                ("widgets.b.example", vec!["v1".to_owned()]),
            ],
            "its CRDs only, sorted, with the versions they serve"
        );
        assert_eq!(found.api_services, ["v1.b.example"]);
        assert_eq!(found.packages["widgets"], "1.0.0");
        // Another Instance's objects, and an Instance not yet stored.
        let other = provided_among(&instance(Some("u3")), &crds, &services, &[]);
        assert!(other.is_empty(), "{other:?}");
        let unstored = provided_among(&instance(None), &crds, &services, &properties);
        assert_eq!(unstored, Provided::default());
    }

    #[test]
    fn requirements_name_the_api_or_package_they_need() {
        let needs = [
            property(
                "olm.gvk.required",
                json!({"group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}),
            ),
            // A version the CRD does not serve is not met by it.
            property(
                "olm.gvk.required",
                json!({"group": "etcd.database.coreos.com", "version": "v1", "kind": "EtcdCluster"}),
            ),
            property(
                "olm.package.required",
                json!({"packageName": "etcd", "versionRange": ">=0.9.2"}),
            ),
            property("olm.package.required", json!({"packageName": "other"})),
            property(
                "olm.gvk",
                json!({"group": "x", "version": "v1", "kind": "Y"}),
            ),
        ];
        assert_eq!(
            requirements_met(&needs, &etcd()),
            [
                "etcd.database.coreos.com/v1beta2 EtcdCluster",
                "package etcd >=0.9.2"
            ]
        );
    }

    #[test]
    fn the_summary_names_apis_services_and_packages_and_stays_bounded() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "etcd.database.coreos.com", "names": {"kind": "EtcdCluster"},
                "versions": [{"name": "v1beta2", "served": true}, {"name": "v1beta1", "served": false}]},
        });
        let service = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"}});
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let package = property(
            "olm.package",
            json!({"packageName": "etcd", "version": "0.9.4"}),
        );
        assert_eq!(
            summary(&[crd.clone(), service, other], &[package]),
            [
                "etcd.database.coreos.com/v1beta2 EtcdCluster",
                "APIService v1beta1.metrics.k8s.io",
                "package etcd 0.9.4"
            ]
        );
        let many: Vec<serde_json::Value> = (0..30).map(|_| crd.clone()).collect();
        let bounded = summary(&many, &[]);
        assert_eq!(bounded.len(), pakket_api::PROVIDES_LISTED_MAX);
        assert_eq!(bounded.last().unwrap(), "… and 11 more");
    }

    #[test]
    fn users_in_words_name_counts_namespaces_and_instances() {
        let users = Users {
            resources: vec![ResourcesInUse {
                kind: "etcd.database.coreos.com/EtcdCluster".into(),
                count: 3,
                more: false,
                namespaces: [("a".to_owned(), 2), ("b".to_owned(), 1)].into(),
            }],
            instances: vec![Dependent {
                instance: "x".into(),
                requires: "etcd.database.coreos.com/v1beta2 EtcdCluster".into(),
            }],
            rbac: vec!["ClusterRole edit".into()],
        };
        assert!(users.in_use());
        assert_eq!(
            users.words(),
            "3 EtcdCluster objects in namespaces a, b; Instance x requires etcd.database.coreos.com/v1beta2 EtcdCluster"
        );
        let rbac_only = Users {
            rbac: vec!["ClusterRole edit".into()],
            ..Users::default()
        };
        assert!(
            !rbac_only.in_use(),
            "a role naming the group breaks nothing"
        );
        assert_eq!(
            etcd().groups().into_iter().collect::<Vec<_>>(),
            ["etcd.database.coreos.com", "metrics.k8s.io"]
        );
    }
}
