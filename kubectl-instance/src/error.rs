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
        write!(
            f,
            "{who} may not {}: {}; {}",
            self.attempt, self.server, self.advice
        )
    }
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
}
