//! What can go wrong, each said so the reader knows what to do next.

use std::fmt;

/// Every failure of a `kubectl instance` command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable kubeconfig, context or client.
    #[error("{0}")]
    Config(String),
    /// The object does not exist (`instance "x" not found`).
    #[error("{kind} {name:?} not found")]
    NotFound {
        /// Lowercase kind, as kubectl prints it.
        kind: &'static str,
        /// The name asked for.
        name: String,
    },
    /// RBAC (or an admission webhook) refused the caller.
    #[error("{0}")]
    Forbidden(Box<Forbidden>),
    /// Another API failure, with what was being done.
    #[error("{action}: {}", server_message(.source))]
    Api {
        /// What was being done, e.g. `reading Instance x`.
        action: String,
        /// The client's error.
        source: kube::Error,
    },
    /// The Instance kept changing under the command.
    #[error("{0}")]
    Changed(String),
    /// What was asked cannot be done as it stands; the words say what was
    /// written (usually nothing) and what to do.
    #[error("{0}")]
    Refused(String),
    /// Catalog files or a package name that do not work.
    #[error("{0}")]
    Catalog(String),
    /// Writing the output failed (a closed pipe, say).
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// Turning a result into JSON or YAML failed.
    #[error("encoding output: {0}")]
    Encode(String),
}

/// A refusal, with who was refused, what they tried and whom to ask.
#[derive(Debug)]
pub struct Forbidden {
    /// The caller's user name, when the server told us.
    pub user: Option<String>,
    /// What the caller tried, as a phrase: `approve Instance x`.
    pub attempt: String,
    /// The server's own words.
    pub server: String,
    /// The rights to ask an admin for.
    pub advice: String,
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match &self.user {
            Some(user) => format!("you ({user})"),
            None => "you".to_owned(),
        };
        match webhook_denial(&self.server) {
            // RBAC let the request through, so our advice (which is about
            // RBAC too) would only repeat or contradict the webhook's own
            // reason, which says what is missing.
            Some(WebhookDenial {
                webhook,
                reason: Some(reason),
            }) => write!(
                f,
                "{who} may not {}: refused by admission webhook {webhook}: {reason}",
                self.attempt
            ),
            Some(WebhookDenial {
                webhook,
                reason: None,
            }) => write!(
                f,
                "{who} may not {}: refused by admission webhook {webhook}, which gave no reason; {}",
                self.attempt, self.advice
            ),
            None => write!(
                f,
                "{who} may not {}: {}; {}",
                self.attempt, self.server, self.advice
            ),
        }
    }
}

/// An admission webhook's refusal, taken apart from the apiserver's words
/// around it (`admission webhook "NAME" denied the request: REASON`).
#[derive(Debug, PartialEq, Eq)]
pub struct WebhookDenial<'a> {
    /// The webhook's name, e.g. `instance-approval.validate.core.pakket.dev`.
    pub webhook: &'a str,
    /// What the webhook said; `None` when it said nothing.
    pub reason: Option<&'a str>,
}

/// The webhook refusal in an apiserver message, if it is one.
pub fn webhook_denial(message: &str) -> Option<WebhookDenial<'_>> {
    let rest = message.strip_prefix("admission webhook \"")?;
    let (webhook, rest) = rest.split_once("\" denied the request")?;
    let reason = match rest.strip_prefix(": ") {
        Some(reason) if !reason.trim().is_empty() => Some(reason.trim()),
        _ => None,
    };
    Some(WebhookDenial { webhook, reason })
}

/// The HTTP status of an API error, if the server answered.
pub fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// The server's message of an API error, or the client's description.
pub fn server_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether the server refused the caller: RBAC's 403, or an admission
/// webhook's denial (which may come with another code).
pub fn is_refusal(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code == 403
                || status.reason == "Forbidden"
                || status.message.contains("admission webhook")
        }
        _ => false,
    }
}

/// Wraps a client error with what was being done.
pub fn api(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Api { action, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_names_the_user_the_attempt_and_the_advice() {
        let error = Error::Forbidden(Box::new(Forbidden {
            user: Some("bob".into()),
            attempt: "approve Instance web".into(),
            server: "instances.core.pakket.dev \"web\" is forbidden".into(),
            advice: "ask an admin for verb approve on instances.core.pakket.dev".into(),
        }));
        assert_eq!(
            error.to_string(),
            "you (bob) may not approve Instance web: instances.core.pakket.dev \"web\" is forbidden; \
             ask an admin for verb approve on instances.core.pakket.dev"
        );
        let missing = Error::NotFound {
            kind: "instance",
            name: "x".into(),
        };
        assert_eq!(missing.to_string(), r#"instance "x" not found"#);
    }

    #[test]
    fn a_webhook_refusal_is_told_in_the_webhooks_words_without_rbac_advice() {
        // The message the apiserver wraps around Pakket's approval guard.
        let server = "admission webhook \"instance-approval.validate.core.pakket.dev\" denied the request: \
             Instance \"web\": user \"bob\" may not change the Approved condition (from False/ApprovalPending \
             to True/ApprovedByUser): that needs verb \"approve\" on instances.core.pakket.dev/web; an admin \
             can grant it with a ClusterRole rule {apiGroups: [core.pakket.dev], resources: [instances], \
             verbs: [approve]} (see the example ClusterRole pakket-instance-approver) bound to the user";
        let error = Error::Forbidden(Box::new(Forbidden {
            user: Some("bob".into()),
            attempt: "approve Instance web".into(),
            server: server.into(),
            advice: "ask an admin for verb approve on instances.core.pakket.dev and verbs update, \
                     patch on instances/status"
                .into(),
        }));
        let text = error.to_string();
        assert!(
            text.starts_with(
                "you (bob) may not approve Instance web: refused by admission webhook \
                 instance-approval.validate.core.pakket.dev: Instance \"web\": user \"bob\" may not \
                 change the Approved condition"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "(see the example ClusterRole pakket-instance-approver) bound to the user"
            ),
            "{text}"
        );
        assert!(!text.contains("ask an admin"), "{text}");
        assert!(!text.contains("denied the request"), "{text}");
    }

    #[test]
    fn a_webhook_refusal_without_a_reason_keeps_the_advice() {
        let denial = webhook_denial(
            "admission webhook \"policy.example.com\" denied the request without explanation",
        );
        assert_eq!(
            denial,
            Some(WebhookDenial {
                webhook: "policy.example.com",
                reason: None
            })
        );
        let error = Forbidden {
            user: None,
            attempt: "deny Instance web".into(),
            server:
                "admission webhook \"policy.example.com\" denied the request without explanation"
                    .into(),
            advice: "ask an admin for verb approve on instances.core.pakket.dev".into(),
        };
        assert_eq!(
            error.to_string(),
            "you may not deny Instance web: refused by admission webhook policy.example.com, \
             which gave no reason; ask an admin for verb approve on instances.core.pakket.dev"
        );
        assert_eq!(
            webhook_denial(r#"instances.core.pakket.dev "web" is forbidden"#),
            None
        );
    }
}
