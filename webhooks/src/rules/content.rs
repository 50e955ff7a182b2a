//! ConfigMaps as Bundle content: a ConfigMap a Bundle mounts must be
//! `immutable: true` (so the content behind a digest cannot change under an
//! installed Bundle) and labelled [`BUNDLE_CONTENT_LABEL`]`: "true"`, and
//! cannot be deleted, nor lose the label, while a Bundle mounts it.
//!
//! Why the label: the ConfigMap webhook selects on it (`objectSelector`),
//! so only content ConfigMaps pay for a webhook call, not every ConfigMap
//! in the cluster. A label is written by whoever may write the ConfigMap,
//! which is safe because the apiserver matches an objectSelector against
//! the old object too: a write that removes the label, and a delete of a
//! labelled ConfigMap, still come here. What never comes here is a
//! ConfigMap that never had it; so a Bundle may mount only a labelled one,
//! and the provisioner refuses to unpack one that arrived later unlabelled.
//!
//! The provisioner reads a mounted ConfigMap on the requester's behalf, so
//! the requester must be allowed to `get` it ([`read_permission`]); asked
//! first, so a refusal says nothing about whether the ConfigMap exists.
//!
//! A Bundle may name a ConfigMap that does not exist yet (GitOps tools apply
//! in any order): that is allowed with a warning, and the ConfigMap's own
//! CREATE is then held to the same rule (when labelled; unlabelled, the
//! provisioner holds it).

use pakket_api::{BUNDLE_CONTENT_LABEL, BundleSpec, ConfigMapSource};

use super::Permission;
use crate::review::Requester;

/// `get` on the mounted ConfigMap: what the requester must hold for the
/// provisioner to read it for him.
pub fn read_permission(source: &ConfigMapSource) -> Permission {
    Permission {
        verb: "get",
        group: "",
        resource: "configmaps",
        namespace: Some(source.namespace.clone()),
        name: source.name.clone(),
    }
}

/// Why mounting a ConfigMap the requester may not read is refused.
pub fn read_denial(
    kind: &str,
    object: &str,
    field: &str,
    requester: &Requester,
    source: &ConfigMapSource,
) -> String {
    let permission = read_permission(source);
    format!(
        "{kind} {object:?}: {field} names ConfigMap {}/{}, which {requester} may not read \
         (that needs {}); the provisioner reads Bundle content only on its requester's behalf: \
         an admin can grant it with a Role rule {} in namespace {}",
        source.namespace,
        source.name,
        permission.describe(),
        permission.rbac_rule(),
        source.namespace
    )
}

/// What the webhook found when it looked up a mounted ConfigMap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigMapState {
    /// No such ConfigMap (yet).
    Missing,
    /// It exists.
    Found {
        /// Whether it is `immutable: true`.
        immutable: bool,
        /// Whether it carries [`BUNDLE_CONTENT_LABEL`]`: "true"`.
        labelled: bool,
    },
}

/// The label as `kubectl label` writes it.
fn label_argument() -> String {
    format!("{BUNDLE_CONTENT_LABEL}=true")
}

/// The ConfigMaps a Bundle spec mounts, with the field naming each.
pub fn mounts<'a>(
    spec: &'a BundleSpec,
    field: &str,
) -> impl Iterator<Item = (String, &'a ConfigMapSource)> {
    spec.volume_mounts
        .iter()
        .enumerate()
        .map(move |(index, mount)| {
            (
                format!("{field}.volumeMounts[{index}].configMap"),
                &mount.config_map,
            )
        })
}

/// The verdict on one mounted ConfigMap: `Ok(None)` fine, `Ok(Some(_))` a
/// warning, `Err(_)` a denial.
pub fn check_mount(
    kind: &str,
    object: &str,
    field: &str,
    source: &ConfigMapSource,
    state: ConfigMapState,
) -> Result<Option<String>, String> {
    let (namespace, name) = (&source.namespace, &source.name);
    let (immutable, labelled) = match state {
        ConfigMapState::Missing => {
            return Ok(Some(format!(
                "{kind} {object:?}: {field} names ConfigMap {namespace}/{name}, which does not \
                 exist yet; create it with immutable: true and the label \
                 {BUNDLE_CONTENT_LABEL}: \"true\" (without the label the provisioner will not \
                 read it)"
            )));
        }
        ConfigMapState::Found {
            immutable,
            labelled,
        } => (immutable, labelled),
    };
    let mut problems = Vec::new();
    if !immutable {
        problems.push(
            "it is not immutable; Bundle content must not change behind its digest: recreate \
             the ConfigMap with immutable: true (or copy it to a new, immutable one and mount \
             that)"
                .to_owned(),
        );
    }
    if !labelled {
        problems.push(format!(
            "it is not labelled {BUNDLE_CONTENT_LABEL}: \"true\", which marks a ConfigMap as \
             Bundle content (and lets the webhook keep it while it is mounted); someone who \
             may write it labels it: `kubectl -n {namespace} label configmap {name} {}`",
            label_argument()
        ));
    }
    if problems.is_empty() {
        return Ok(None);
    }
    Err(format!(
        "{kind} {object:?}: {field} names ConfigMap {namespace}/{name}, but {}",
        problems.join("; and ")
    ))
}

/// Whether `spec` mounts the ConfigMap `namespace/name`.
pub fn spec_mounts(spec: &BundleSpec, namespace: &str, name: &str) -> bool {
    spec.volume_mounts
        .iter()
        .any(|mount| mount.config_map.namespace == namespace && mount.config_map.name == name)
}

fn listed(bundles: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut names: Vec<String> = bundles
        .iter()
        .take(SHOWN)
        .map(|name| format!("{name:?}"))
        .collect();
    if bundles.len() > SHOWN {
        names.push(format!("and {} more", bundles.len() - SHOWN));
    }
    names.join(", ")
}

/// Refuses deleting a ConfigMap that Bundles mount, naming them.
pub fn check_delete(namespace: &str, name: &str, bundles: &[String]) -> Result<(), String> {
    if bundles.is_empty() {
        return Ok(());
    }
    Err(format!(
        "ConfigMap {namespace}/{name} is the content of Bundle {}; delete those Bundles (or \
         the Instances that own them) first",
        listed(bundles)
    ))
}

/// Refuses creating or keeping a mutable ConfigMap that Bundles mount, and
/// taking its [`BUNDLE_CONTENT_LABEL`] away while they do.
pub fn check_write(
    namespace: &str,
    name: &str,
    immutable: bool,
    labelled: bool,
    bundles: &[String],
) -> Result<(), String> {
    if bundles.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !immutable {
        problems.push("must be immutable: set immutable: true".to_owned());
    }
    if !labelled {
        problems.push(format!(
            "must keep the label {BUNDLE_CONTENT_LABEL}: \"true\" while it is mounted: \
             delete those Bundles (or the Instances that own them) first"
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "ConfigMap {namespace}/{name} is the content of Bundle {} and {}",
        listed(bundles),
        problems.join("; and it ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> ConfigMapSource {
        ConfigMapSource {
            name: "hello-v1".into(),
            namespace: "content".into(),
        }
    }

    #[test]
    fn a_mounted_config_map_must_be_immutable_and_labelled_and_may_come_later() {
        let check = |state| {
            check_mount(
                "Bundle",
                "hello",
                "spec.volumeMounts[0].configMap",
                &source(),
                state,
            )
        };
        let found = |immutable, labelled| ConfigMapState::Found {
            immutable,
            labelled,
        };
        assert_eq!(check(found(true, true)), Ok(None));
        let warning = check(ConfigMapState::Missing).unwrap().unwrap();
        assert!(
            warning.contains("content/hello-v1, which does not exist yet")
                && warning.contains(r#"core.pakket.dev/bundle-content: "true""#),
            "{warning}"
        );
        // (immutable, labelled) → what the denial must say, and not say.
        let table = [
            (false, true, &["not immutable"][..], &["not labelled"][..]),
            (
                true,
                false,
                &[
                    r#"not labelled core.pakket.dev/bundle-content: "true""#,
                    "kubectl -n content label configmap hello-v1 core.pakket.dev/bundle-content=true",
                ][..],
                &["not immutable"][..],
            ),
            (
                false,
                false,
                &["not immutable", "not labelled"][..],
                &[][..],
            ),
        ];
        for (immutable, labelled, says, omits) in table {
            let denial = check(found(immutable, labelled)).unwrap_err();
            assert!(
                denial.starts_with(
                    "Bundle \"hello\": spec.volumeMounts[0].configMap names ConfigMap content/hello-v1"
                ),
                "{denial}"
            );
            for expected in says {
                assert!(denial.contains(expected), "{expected} in {denial}");
            }
            for unexpected in omits {
                assert!(!denial.contains(unexpected), "{unexpected} in {denial}");
            }
        }
    }

    #[test]
    fn deleting_unfreezing_or_unlabelling_mounted_content_is_refused_naming_the_bundles() {
        let bundles: Vec<String> = (1..=7).map(|i| format!("b{i}")).collect();
        assert_eq!(check_delete("ns", "cm", &[]), Ok(()));
        let error = check_delete("ns", "cm", &bundles).unwrap_err();
        assert!(
            error.contains(r#"Bundle "b1", "b2", "b3", "b4", "b5", and 2 more"#),
            "{error}"
        );
        assert_eq!(check_write("ns", "cm", true, true, &bundles), Ok(()));
        for (immutable, labelled) in [(false, true), (true, false), (false, false)] {
            assert_eq!(check_write("ns", "cm", immutable, labelled, &[]), Ok(()));
            let error = check_write("ns", "cm", immutable, labelled, &bundles[..1]).unwrap_err();
            assert!(
                error.starts_with(r#"ConfigMap ns/cm is the content of Bundle "b1" and "#),
                "{error}"
            );
            assert_eq!(error.contains("set immutable: true"), !immutable, "{error}");
            assert_eq!(
                error.contains(r#"must keep the label core.pakket.dev/bundle-content: "true""#),
                !labelled,
                "{error}"
            );
        }
    }

    #[test]
    fn mounts_are_listed_with_their_fields() {
        let spec: BundleSpec = serde_json::from_value(serde_json::json!({
            "class": "plain",
            "refs": ["file://content"],
            "volumeMounts": [{"mountPath": "/content", "configMap": {"name": "hello-v1", "namespace": "content"}}],
        }))
        .unwrap();
        let listed: Vec<String> = mounts(&spec, "spec.bundle.spec")
            .map(|(field, _)| field)
            .collect();
        assert_eq!(listed, ["spec.bundle.spec.volumeMounts[0].configMap"]);
        assert!(spec_mounts(&spec, "content", "hello-v1"));
        assert!(!spec_mounts(&spec, "other", "hello-v1"));
    }
}
