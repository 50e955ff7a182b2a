//! `kubectl instance history NAME` lists an Instance's revisions, as the
//! runtime recorded them in its status; `kubectl instance rollback NAME
//! [--to-revision N]` asks for an earlier revision's content again.
//!
//! A rollback is a change of the Instance's spec like any other, written
//! as the caller: RBAC decides whether they may, the admission webhook
//! records them as the requester, and the class's approval policy (and CRD
//! upgrade safety) judge the content as they judge any change. It never
//! reuses the earlier revision's approval. A Bundle object must still pin
//! the content the revision ran, or the rollback is refused.

use std::io::Write;

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::{Instance, Revision, RevisionOutcome};
use serde::Serialize;
use serde_json::json;

use crate::error::Error;
use crate::output::{self, ListFormat};
use crate::table::Table;
use crate::{age, identity, lookup};

/// What a caller needs to roll an Instance back.
pub const ROLLBACK_ADVICE: &str = "ask an admin for verbs get, patch on instances.core.pakket.dev, \
     and get on bundles (the class's approval policy then judges the content as any change)";

/// The history as `-o json|yaml` prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct History<'a> {
    instance: String,
    serving_revision: Option<i64>,
    revisions: &'a [Revision],
}

/// Prints `name`'s revisions, oldest first.
pub async fn history(
    client: &kube::Client,
    name: &str,
    format: Option<ListFormat>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instance = lookup::instance(client, name).await?;
    let status = instance.status.clone().unwrap_or_default();
    if format == Some(ListFormat::Name) {
        // As `kubectl rollout history -o name`: the object whose history it is.
        return output::names([output::kubectl_name::<Instance>(name)], out);
    }
    if let Some(format) = format.and_then(ListFormat::document) {
        let history = History {
            instance: name.to_owned(),
            serving_revision: status.serving_revision,
            revisions: &status.revisions,
        };
        return output::print(&history, format, out);
    }
    if status.revisions.is_empty() {
        writeln!(
            out,
            "Instance {name} has no revisions yet: nothing of it was applied (see `kubectl instance why {name}`)"
        )?;
        return Ok(());
    }
    let now = Timestamp::now();
    let mut table = Table::new(&[
        "REVISION",
        "BUNDLE",
        "DIGEST",
        "APPROVED BY",
        "APPLIED",
        "OUTCOME",
        "MESSAGE",
    ]);
    for revision in &status.revisions {
        let mut outcome = revision.outcome.to_string();
        if status.serving_revision == Some(revision.number) {
            outcome.push_str(", serving");
        }
        table.row(vec![
            revision.number.to_string(),
            revision.bundle.clone(),
            short_digest(&revision.digest),
            revision.approved_by.clone(),
            format!("{} ago", age::since(revision.applied.0, now)),
            outcome,
            revision.message.chars().take(100).collect(),
        ]);
    }
    write!(out, "{}", table.render())?;
    Ok(())
}

/// Asks for revision `to` (by default the newest earlier one that rolled
/// out) of `name` again.
pub async fn rollback(
    client: &kube::Client,
    name: &str,
    to: Option<i64>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let instance = lookup::instance_with_advice(client, name, ROLLBACK_ADVICE).await?;
    let revisions = instance
        .status
        .as_ref()
        .map(|status| status.revisions.as_slice())
        .unwrap_or_default();
    let target = target(name, revisions, to)?;
    if asks_for(&instance, target) {
        writeln!(
            out,
            "Instance {name} already asks for revision {}'s content (Bundle {}); nothing changed",
            target.number, target.bundle
        )?;
        return Ok(());
    }
    let mut note = String::new();
    match &target.bundle_spec {
        None => {
            let bundle = lookup::bundle(client, &target.bundle).await?.ok_or_else(|| {
                Error::Changed(format!(
                    "Bundle {} of revision {} no longer exists, so its content cannot be asked for again; pick another revision (`kubectl instance history {name}`)",
                    target.bundle, target.number
                ))
            })?;
            let pinned = bundle
                .status
                .as_ref()
                .and_then(|status| status.source.as_ref())
                .and_then(|source| source.digest.clone());
            if pinned.as_deref() != Some(target.digest.as_str()) {
                return Err(Error::Changed(format!(
                    "Bundle {} now pins {} but revision {} ran {}: it is not the content that ran; pick another revision (`kubectl instance history {name}`)",
                    target.bundle,
                    pinned.as_deref().unwrap_or("no content yet"),
                    target.number,
                    target.digest
                )));
            }
        }
        Some(spec) => {
            if spec
                .refs
                .iter()
                .any(|reference| !pinned_by_digest(reference))
            {
                note = format!(
                    "; its content is fetched again from its refs, and a ref by tag that now serves other content than {} is new content, approved as such",
                    target.digest
                );
            }
        }
    }
    let patch = json!({
        // The write is conditional: a spec someone changed since this read
        // is not overwritten.
        "metadata": { "resourceVersion": instance.resource_version() },
        "spec": { "bundle": { "name": target.bundle, "spec": target.bundle_spec } },
    });
    let instances: Api<Instance> = Api::all(client.clone());
    if let Err(source) = instances
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        if let kube::Error::Api(status) = &source
            && status.code == 409
        {
            return Err(Error::Changed(format!(
                "Instance {name} changed while the rollback was prepared; nothing was written: run the command again"
            )));
        }
        return Err(identity::refused(
            client,
            source,
            format!("roll back Instance {name}"),
            ROLLBACK_ADVICE,
        )
        .await);
    }
    writeln!(
        out,
        "Instance {name} asks for revision {} again (Bundle {} at {}){note}; ProvisionerClass {}'s approval policy judges it as any change: follow it with `kubectl instance describe {name}`",
        target.number, target.bundle, target.digest, instance.spec.class
    )?;
    Ok(())
}

/// The revision to return to: `to`, or the newest earlier one that rolled
/// out with other content than the newest.
fn target<'a>(
    name: &str,
    revisions: &'a [Revision],
    to: Option<i64>,
) -> Result<&'a Revision, Error> {
    let range = match (revisions.first(), revisions.last()) {
        (Some(first), Some(last)) => format!("revisions {} to {}", first.number, last.number),
        _ => "no revisions".to_owned(),
    };
    if let Some(number) = to {
        return revisions
            .iter()
            .find(|revision| revision.number == number)
            .ok_or_else(|| {
                Error::Changed(format!(
                    "Instance {name} has no revision {number} (it keeps {range}); see `kubectl instance history {name}`"
                ))
            });
    }
    let newest = revisions.last().ok_or_else(|| {
        Error::Changed(format!(
            "Instance {name} has no revisions to return to: nothing of it was applied yet"
        ))
    })?;
    revisions
        .iter()
        .rev()
        .skip(1)
        .find(|revision| {
            revision.outcome == RevisionOutcome::Succeeded
                && (revision.bundle != newest.bundle || revision.digest != newest.digest)
        })
        .ok_or_else(|| {
            Error::Changed(format!(
                "Instance {name} has no earlier revision that rolled out ({range}); name one with --to-revision (see `kubectl instance history {name}`)"
            ))
        })
}

/// Whether `instance`'s spec already asks for `revision`'s Bundle.
fn asks_for(instance: &Instance, revision: &Revision) -> bool {
    instance.spec.bundle.name == revision.bundle
        && instance.spec.bundle.spec == revision.bundle_spec
}

/// Whether a ref names its content by digest (an image `@sha256:`), so
/// fetching it again gives the same bytes.
fn pinned_by_digest(reference: &str) -> bool {
    reference.contains("@sha256:")
}

/// `sha256:` and the first 12 hex digits.
fn short_digest(digest: &str) -> String {
    match digest.strip_prefix("sha256:") {
        Some(hex) => format!("sha256:{}", &hex[..hex.len().min(12)]),
        None => digest.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn revision(number: i64, bundle: &str, outcome: RevisionOutcome) -> Revision {
        Revision {
            number,
            bundle: bundle.into(),
            bundle_spec: None,
            digest: format!("sha256:{bundle}"),
            rendered: None,
            approved_by: "alice".into(),
            applied: Time(Timestamp::UNIX_EPOCH),
            outcome,
            ended: None,
            message: String::new(),
        }
    }

    #[test]
    fn by_default_the_newest_earlier_revision_that_rolled_out_with_other_content_is_chosen() {
        let revisions = [
            revision(1, "v1", RevisionOutcome::Succeeded),
            revision(2, "v2", RevisionOutcome::Succeeded),
            revision(3, "v3", RevisionOutcome::Failed),
            revision(4, "v4", RevisionOutcome::Blocked),
        ];
        assert_eq!(target("x", &revisions, None).unwrap().number, 2);
        assert_eq!(target("x", &revisions, Some(1)).unwrap().number, 1);
        let missing = target("x", &revisions, Some(9)).unwrap_err().to_string();
        assert!(
            missing.contains("no revision 9 (it keeps revisions 1 to 4)"),
            "{missing}"
        );
    }

    #[test]
    fn with_nothing_earlier_that_rolled_out_the_error_says_so() {
        let revisions = [
            revision(1, "v1", RevisionOutcome::Failed),
            revision(2, "v2", RevisionOutcome::Succeeded),
        ];
        let error = target("x", &revisions, None).unwrap_err().to_string();
        assert!(
            error.contains("no earlier revision that rolled out"),
            "{error}"
        );
        assert!(target("x", &[], None).is_err());
    }

    #[test]
    fn digests_are_shortened_for_the_table() {
        assert_eq!(
            short_digest("sha256:0123456789abcdef0123"),
            "sha256:0123456789ab"
        );
        assert!(pinned_by_digest("docker://quay.io/x/y@sha256:abc"));
        assert!(!pinned_by_digest("docker://quay.io/x/y:v1"));
    }
}
