//! The `use` verb: naming a ProvisionerClass in a Bundle or an Instance needs
//! `use` on `provisionerclasses/<name>`, like `use` on a PodSecurityPolicy.
//!
//! When it is checked: on CREATE, and on an UPDATE that changes the spec
//! (a new class, or new content under the same class, is a new use of the
//! class). Updates that leave the spec alone (finalizers, labels, owner
//! references written by provisioners and the garbage collector) need no
//! `use`, so those controllers never need it either.

use pakket_api::{BundleSpec, InstanceSpec};

use super::Permission;
use crate::review::Requester;

/// A class named by an object, and the field that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassUse {
    /// The ProvisionerClass's name.
    pub class: String,
    /// Where the object names it, e.g. `spec.bundle.spec.class`.
    pub field: &'static str,
}

/// The class a Bundle names.
pub fn bundle_classes(spec: &BundleSpec) -> Vec<ClassUse> {
    vec![ClassUse {
        class: spec.class.clone(),
        field: "spec.class",
    }]
}

/// The classes an Instance names: its own, and its embedded Bundle's when
/// that names another one.
pub fn instance_classes(spec: &InstanceSpec) -> Vec<ClassUse> {
    let mut uses = vec![ClassUse {
        class: spec.class.clone(),
        field: "spec.class",
    }];
    if let Some(bundle) = &spec.bundle.spec
        && bundle.class != spec.class
    {
        uses.push(ClassUse {
            class: bundle.class.clone(),
            field: "spec.bundle.spec.class",
        });
    }
    uses
}

/// Whether this write uses the classes anew: a create, or a changed spec.
pub fn spec_is_new<S: PartialEq>(old: Option<&S>, new: &S) -> bool {
    old != Some(new)
}

/// The permission a class use needs.
pub fn permission(class: &str) -> Permission {
    Permission::pakket("use", "provisionerclasses", class)
}

/// Why a class use is refused: names the object, the user, the class, the
/// verb, and the rule an admin would add.
pub fn denial(kind: &str, object: &str, requester: &Requester, used: &ClassUse) -> String {
    let permission = permission(&used.class);
    format!(
        "{kind} {object:?}: {requester} may not use ProvisionerClass {class:?} named in {field} \
         ({described}); an admin can grant it with a ClusterRole rule {rule} bound to the user \
         with a ClusterRoleBinding (ProvisionerClasses are cluster-scoped)",
        class = used.class,
        field = used.field,
        described = permission.describe(),
        rule = permission.rbac_rule(),
    )
}

#[cfg(test)]
mod tests {
    use pakket_api::BundleTemplate;

    use super::*;

    fn bundle_spec(class: &str) -> BundleSpec {
        BundleSpec {
            class: class.into(),
            refs: vec!["docker://quay.io/a/b:v1".into()],
            volume_mounts: vec![],
        }
    }

    fn instance_spec(class: &str, embedded: Option<&str>) -> InstanceSpec {
        serde_json::from_value(serde_json::json!({
            "class": class,
            "bundle": {"name": "b"},
        }))
        .map(|mut spec: InstanceSpec| {
            spec.bundle = BundleTemplate {
                name: "b".into(),
                spec: embedded.map(bundle_spec),
            };
            spec
        })
        .unwrap()
    }

    #[test]
    fn an_instance_names_its_class_and_a_different_embedded_class() {
        let classes = |spec: &InstanceSpec| -> Vec<(String, &str)> {
            instance_classes(spec)
                .into_iter()
                .map(|used| (used.class, used.field))
                .collect()
        };
        assert_eq!(
            classes(&instance_spec("a", None)),
            [("a".to_owned(), "spec.class")]
        );
        assert_eq!(
            classes(&instance_spec("a", Some("a"))),
            [("a".to_owned(), "spec.class")]
        );
        assert_eq!(
            classes(&instance_spec("a", Some("b"))),
            [
                ("a".to_owned(), "spec.class"),
                ("b".to_owned(), "spec.bundle.spec.class")
            ]
        );
        assert_eq!(bundle_classes(&bundle_spec("c"))[0].class, "c");
    }

    #[test]
    fn only_creates_and_spec_changes_use_a_class_anew() {
        let spec = instance_spec("a", None);
        assert!(spec_is_new(None, &spec));
        assert!(!spec_is_new(Some(&spec.clone()), &spec));
        assert!(spec_is_new(Some(&instance_spec("a", Some("a"))), &spec));
    }

    #[test]
    fn a_denial_names_user_class_verb_and_the_granting_rule() {
        let used = ClassUse {
            class: "plain".into(),
            field: "spec.class",
        };
        let message = denial(
            "Instance",
            "hello",
            &Requester::named("alice", &["system:authenticated"]),
            &used,
        );
        assert_eq!(
            message,
            "Instance \"hello\": user \"alice\" may not use ProvisionerClass \"plain\" named in spec.class \
             (verb \"use\" on provisionerclasses.core.pakket.dev/plain); an admin can grant it with a \
             ClusterRole rule {apiGroups: [core.pakket.dev], resources: [provisionerclasses], \
             resourceNames: [plain], verbs: [use]} bound to the user with a ClusterRoleBinding \
             (ProvisionerClasses are cluster-scoped)"
        );
    }
}
