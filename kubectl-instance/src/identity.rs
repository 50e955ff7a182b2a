//! Who the caller is, as the apiserver sees them (`kubectl auth whoami`).

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};

use crate::error::{self, Error, Forbidden};

/// The caller's user name from a SelfSubjectReview: the name RBAC and the
/// audit log use, whatever credential the kubeconfig holds.
pub async fn whoami(client: &kube::Client) -> Result<String, Error> {
    let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .map_err(error::api(
            "asking the server who you are (SelfSubjectReview)",
        ))?;
    review
        .status
        .and_then(|status| status.user_info)
        .and_then(|user| user.username)
        .ok_or_else(|| {
            Error::Config("the server's SelfSubjectReview did not name a user".to_owned())
        })
}

/// Turns a refusal into a [`Forbidden`] naming the caller; any other error
/// is wrapped with `attempt` as the action.
pub async fn refused(
    client: &kube::Client,
    source: kube::Error,
    attempt: impl Into<String>,
    advice: impl Into<String>,
) -> Error {
    let attempt = attempt.into();
    if !error::is_refusal(&source) {
        return Error::Api {
            action: attempt,
            source,
        };
    }
    // Best effort: a caller refused everything may not even learn its name.
    let user = whoami(client).await.ok();
    Error::Forbidden(Box::new(Forbidden {
        user,
        attempt,
        server: error::server_message(&source),
        advice: advice.into(),
    }))
}
