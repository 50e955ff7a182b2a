//! The admission rules as pure functions: no HTTP, no apiserver. Each module
//! owns one rule; what needs the cluster (a SubjectAccessReview, a lookup) is
//! asked for as a value ([`Permission`], a ConfigMap state) and answered by
//! [`crate::admission`], which also merges the rules' answers into one
//! [`Verdict`].

pub mod approval;
pub mod bundle;
pub mod content;
pub mod creator;
pub mod finalizer;
pub mod input_decision;
pub mod instance_in_use;
pub mod package_in_use;
pub mod use_verb;

use json_patch::PatchOperation;

/// A permission the requester must hold, asked of the apiserver with a
/// SubjectAccessReview: a verb in group `core.pakket.dev` (`use`,
/// `approve`), or `get` on a ConfigMap a Bundle mounts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Permission {
    /// The verb (`use`, `approve`, `get`).
    pub verb: &'static str,
    /// The API group (`core.pakket.dev`, or `""` for core).
    pub group: &'static str,
    /// The resource (`provisionerclasses`, `instances`, `configmaps`).
    pub resource: &'static str,
    /// The object's namespace, for namespaced resources.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl Permission {
    /// A verb on a cluster-scoped Pakket object.
    pub fn pakket(verb: &'static str, resource: &'static str, name: &str) -> Self {
        Self {
            verb,
            group: pakket_api::GROUP,
            resource,
            namespace: None,
            name: name.to_owned(),
        }
    }

    /// `verb "use" on provisionerclasses.core.pakket.dev/plain`, or
    /// `verb "get" on configmaps in namespace team, name content`.
    pub fn describe(&self) -> String {
        match (&self.namespace, self.group) {
            (Some(namespace), group) => format!(
                "verb {:?} on {}{} {namespace}/{}",
                self.verb,
                self.resource,
                if group.is_empty() {
                    String::new()
                } else {
                    format!(".{group}")
                },
                self.name
            ),
            (None, group) => format!(
                "verb {:?} on {}.{group}/{}",
                self.verb, self.resource, self.name
            ),
        }
    }

    /// The RBAC rule that grants exactly this permission, in the flow style
    /// an admin can paste into a (Cluster)Role.
    pub fn rbac_rule(&self) -> String {
        format!(
            "{{apiGroups: [{}], resources: [{}], resourceNames: [{}], verbs: [{}]}}",
            if self.group.is_empty() {
                "\"\""
            } else {
                self.group
            },
            self.resource,
            self.name,
            self.verb
        )
    }
}

/// The merged answer of the rules for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Why the request is refused; empty means allowed.
    pub denials: Vec<String>,
    /// Told to the client even when allowed (`kubectl` prints them).
    pub warnings: Vec<String>,
    /// JSON-patch operations for a mutating answer.
    pub patch: Vec<PatchOperation>,
    /// An HTTP-like code for the denial: 403 for missing permissions,
    /// 422 for invalid objects, 503 when the webhook cannot tell yet.
    pub code: u16,
}

impl Verdict {
    /// Refuses with `message` and `code`; the first denial's code wins.
    pub fn deny(&mut self, code: u16, message: impl Into<String>) {
        if self.denials.is_empty() {
            self.code = code;
        }
        self.denials.push(message.into());
    }

    /// Refuses an invalid object (422) for each message.
    pub fn invalid(&mut self, messages: impl IntoIterator<Item = String>) {
        for message in messages {
            self.deny(422, message);
        }
    }

    /// Whether the request is allowed so far.
    pub fn is_allowed(&self) -> bool {
        self.denials.is_empty()
    }

    /// All denials in one message, each on its own line after the first.
    pub fn message(&self) -> String {
        self.denials.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_describes_itself_and_the_rule_that_grants_it() {
        let permission = Permission::pakket("use", "provisionerclasses", "plain");
        assert_eq!(
            permission.describe(),
            r#"verb "use" on provisionerclasses.core.pakket.dev/plain"#
        );
        assert_eq!(
            permission.rbac_rule(),
            "{apiGroups: [core.pakket.dev], resources: [provisionerclasses], resourceNames: [plain], verbs: [use]}"
        );
    }

    #[test]
    fn the_first_denial_sets_the_code_and_all_are_reported() {
        let mut verdict = Verdict::default();
        assert!(verdict.is_allowed());
        verdict.deny(403, "no use");
        verdict.invalid(["bad ref".to_owned()]);
        assert_eq!(verdict.code, 403);
        assert_eq!(verdict.message(), "no use\nbad ref");
    }
}
