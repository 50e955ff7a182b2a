//! Bundle validation: the spec never changes, and every ref is one a
//! provisioner can follow.
//!
//! The CRD's CEL rules already refuse a changed spec and refs without a known
//! scheme; they run before validating webhooks, so the mutating webhook
//! repeats the immutability check to answer first with the message below
//! (which names what changed). The ref checks here go further than CEL can:
//! image refs must parse as the distribution grammar (the parser the runtime
//! uses), `file://` refs must land in a mounted ConfigMap, URLs must name a
//! host.

use axum::http::Uri;
use pakket_api::BundleSpec;
use pakket_api::bundle::ref_scheme;

/// Refuses any change to a Bundle's spec, naming the fields that changed.
pub fn immutable(name: &str, old: &BundleSpec, new: &BundleSpec) -> Result<(), String> {
    let mut changed = Vec::new();
    if old.class != new.class {
        changed.push(format!(
            "spec.class (from {:?} to {:?})",
            old.class, new.class
        ));
    }
    if old.refs != new.refs {
        changed.push(format!("spec.refs (from {:?} to {:?})", old.refs, new.refs));
    }
    if old.volume_mounts != new.volume_mounts {
        changed.push("spec.volumeMounts".to_owned());
    }
    if changed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "Bundle {name:?}: spec is immutable, but this update changes {}; create a new Bundle \
         (for example {:?}) with the new content and point the Instance's spec.bundle.name at it",
        changed.join(" and "),
        format!("{name}-2"),
    ))
}

/// Everything wrong with a Bundle spec, one message per problem; `field` is
/// where the spec sits (`spec` for a Bundle, `spec.bundle.spec` for an
/// Instance's embedded one).
pub fn spec_problems(spec: &BundleSpec, field: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if spec.refs.is_empty() {
        problems.push(format!(
            "{field}.refs is empty: name at least one source, e.g. docker://registry.example/bundle:v1"
        ));
    }
    for (index, reference) in spec.refs.iter().enumerate() {
        if let Err(problem) = check_ref(reference, spec) {
            problems.push(format!("{field}.refs[{index}] {reference:?}: {problem}"));
        }
    }
    let mut paths = Vec::new();
    for (index, mount) in spec.volume_mounts.iter().enumerate() {
        let at = format!("{field}.volumeMounts[{index}]");
        let path = mount.mount_path.trim_end_matches('/');
        if !mount.mount_path.starts_with('/') {
            problems.push(format!(
                "{at}.mountPath {:?} must be absolute, e.g. /content",
                mount.mount_path
            ));
        } else if paths.contains(&path) {
            problems.push(format!(
                "{at}.mountPath {:?} is mounted twice; give each ConfigMap its own path",
                mount.mount_path
            ));
        }
        paths.push(path);
        let source = &mount.config_map;
        if !is_dns_subdomain(&source.name) {
            problems.push(format!(
                "{at}.configMap.name {:?} is not a valid ConfigMap name (lowercase letters, digits, '-' and '.')",
                source.name
            ));
        }
        if !is_dns_label(&source.namespace) {
            problems.push(format!(
                "{at}.configMap.namespace {:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63)",
                source.namespace
            ));
        }
    }
    problems
}

fn check_ref(reference: &str, spec: &BundleSpec) -> Result<(), String> {
    let Some(scheme) = ref_scheme(reference) else {
        return Err(
            "unknown scheme or nothing after it; use docker://, oci://, file://, https://, helm+https://, git:// or git+https://"
                .to_owned(),
        );
    };
    let rest = &reference[scheme.len() + "://".len()..];
    if scheme == "helm+https" {
        return pakket_runtime::kernel::content::chart_repository::ChartRef::parse(reference)
            .map(drop);
    }
    if rest.chars().any(char::is_whitespace) || rest.contains("://") {
        return Err("it has white space or a second scheme".to_owned());
    }
    match scheme {
        "docker" | "oci" => oci_client::Reference::try_from(rest)
            .map(drop)
            .map_err(|error| {
                format!(
                    "{error}; write {scheme}://REGISTRY/REPOSITORY:TAG with a lowercase repository"
                )
            }),
        "file" => check_file_ref(rest, spec),
        "https" | "git" | "git+https" => {
            let url = reference.strip_prefix("git+").unwrap_or(reference);
            match Uri::try_from(url) {
                Ok(uri) if uri.host().is_some_and(|host| !host.is_empty()) => Ok(()),
                Ok(_) => Err(format!("it names no host; write {scheme}://HOST/PATH")),
                Err(error) => Err(format!("{error}; write {scheme}://HOST/PATH")),
            }
        }
        _ => unreachable!("ref_scheme only returns known schemes"),
    }
}

/// `file://content` or `file://content/key.yaml`: the path must lie in a
/// mounted ConfigMap (the runtime's rule) and a key must be a ConfigMap key.
fn check_file_ref(rest: &str, spec: &BundleSpec) -> Result<(), String> {
    let path = format!("/{}", rest.trim_start_matches('/'));
    let key = spec.volume_mounts.iter().find_map(|mount| {
        let root = mount.mount_path.trim_end_matches('/');
        let below = path.strip_prefix(root)?;
        match below.trim_start_matches('/') {
            "" => Some(None),
            key if below.starts_with('/') => Some(Some(key)),
            _ => None,
        }
    });
    match key {
        None => Err(format!(
            "{path} is not under any spec.volumeMounts mountPath; mount a ConfigMap at {path} \
             (or a parent folder)"
        )),
        Some(Some(key)) if !is_config_map_key(key) => Err(format!(
            "{key:?} is not a ConfigMap key (letters, digits, '-', '_' and '.'; no '/')"
        )),
        Some(_) => Ok(()),
    }
}

fn is_config_map_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use pakket_api::{ConfigMapSource, VolumeMount};

    use super::*;

    fn spec(refs: &[&str], mounts: &[(&str, &str, &str)]) -> BundleSpec {
        BundleSpec {
            class: "plain".into(),
            refs: refs.iter().map(|r| (*r).to_owned()).collect(),
            volume_mounts: mounts
                .iter()
                .map(|(path, namespace, name)| VolumeMount {
                    mount_path: (*path).into(),
                    config_map: ConfigMapSource {
                        name: (*name).into(),
                        namespace: (*namespace).into(),
                    },
                })
                .collect(),
        }
    }

    #[test]
    fn good_refs_of_every_scheme_pass() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let good = spec(
            &[
                "docker://quay.io/openshift-community-operators/etcd:v0.9.4",
                &format!("oci://127.0.0.1:5000/b/etcd@{digest}"),
                "docker://busybox",
                "file://content",
                "file:///content/hello.yaml",
                "https://example.com/bundles/etcd.tgz",
                "git://example.com/org/repo",
                "git+https://github.com/org/repo",
            ],
            &[("/content", "pakket-system", "hello-v1")],
        );
        assert_eq!(spec_problems(&good, "spec"), Vec::<String>::new());
    }

    #[test]
    fn each_bad_ref_is_named_with_its_field_and_what_to_write() {
        let bad = spec(
            &[
                "docker://quay.io/Org/Img:v1",
                "file://elsewhere/x.yaml",
                "file://content/a/b",
                "https:///no-host",
                "http://insecure.example/b.tgz",
                "oci://a b",
            ],
            &[("/content", "ns", "cm")],
        );
        let problems = spec_problems(&bad, "spec.bundle.spec");
        assert_eq!(problems.len(), 6, "{problems:#?}");
        assert!(
            problems[0].starts_with("spec.bundle.spec.refs[0] \"docker://quay.io/Org/Img:v1\"")
        );
        assert!(
            problems[0].contains("lowercase repository"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("/elsewhere/x.yaml is not under any spec.volumeMounts"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].contains("not a ConfigMap key"),
            "{}",
            problems[2]
        );
        assert!(
            problems[3].contains("names no host") || problems[3].contains("invalid"),
            "{}",
            problems[3]
        );
        assert!(problems[4].contains("unknown scheme"), "{}", problems[4]);
        assert!(problems[5].contains("white space"), "{}", problems[5]);
    }

    #[test]
    fn mounts_need_valid_names_and_distinct_paths() {
        let bad = spec(
            &["file://c"],
            &[
                ("/c", "ns", "cm"),
                ("/c/", "Bad_NS", "cm"),
                ("rel", "ns", "UPPER"),
            ],
        );
        let problems = spec_problems(&bad, "spec");
        assert!(
            problems.iter().any(|p| p.contains("mounted twice")),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"Bad_NS\" is not a valid namespace")),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("must be absolute")),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"UPPER\" is not a valid ConfigMap name")),
            "{problems:#?}"
        );
        assert!(spec_problems(&spec(&[], &[]), "spec")[0].contains("refs is empty"));
    }

    #[test]
    fn immutability_names_what_changed_and_what_to_do() {
        let old = spec(&["docker://a/b:v1"], &[]);
        assert_eq!(immutable("etcd", &old, &old.clone()), Ok(()));
        let error = immutable("etcd", &old, &spec(&["docker://a/b:v2"], &[])).unwrap_err();
        assert_eq!(
            error,
            "Bundle \"etcd\": spec is immutable, but this update changes spec.refs \
             (from [\"docker://a/b:v1\"] to [\"docker://a/b:v2\"]); create a new Bundle \
             (for example \"etcd-2\") with the new content and point the Instance's \
             spec.bundle.name at it"
        );
    }
}
