//! `history` and `rollback`: what is listed, what a rollback writes, what
//! it refuses (content that no longer is what ran, a revision not kept),
//! and that a user who may only read is refused and changes nothing.

use pakket_testkit::{Scope, install_crds};
use serde_json::json;

use crate::support::{
    Grant, create_bundle, create_instance, get_instance, plugin, reviewer_rules, set_status,
};

const V1_DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const V2_DIGEST: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// Bundles v1 and v2 pinning their digests, and an Instance on v2 whose
/// status records revision 1 (v1, rolled out) and 2 (v2, blocked), as the
/// runtime writes them; returns the Instance's and the Bundles' names.
async fn two_revisions(scope: &Scope) -> (String, String, String) {
    let v1 = scope.name("v1");
    let v2 = scope.name("v2");
    for (bundle, digest) in [(&v1, V1_DIGEST), (&v2, V2_DIGEST)] {
        create_bundle(
            scope,
            bundle,
            &["docker://registry.example/web:v1"],
            &[],
            Some(json!({
                "unpacked": "Done",
                "source": { "ref": "docker://registry.example/web:v1", "digest": digest },
            })),
        )
        .await;
    }
    let name = create_instance(scope, "web", &v2).await;
    let revision = |number: i64, bundle: &str, digest: &str, outcome: &str, message: &str| {
        json!({
            "number": number, "bundle": bundle, "digest": digest,
            "approvedBy": "alice", "applied": "2026-11-27T10:00:00Z",
            "outcome": outcome, "message": message,
        })
    };
    set_status(
        scope,
        &name,
        json!({
            "activeBundle": v2,
            "servingRevision": 1,
            "revisions": [
                revision(1, &v1, V1_DIGEST, "Succeeded", ""),
                revision(2, &v2, V2_DIGEST, "Blocked", "Deployment/web/web did not roll out"),
            ],
        }),
    )
    .await;
    (name, v1, v2)
}

#[tokio::test]
async fn history_lists_each_revision_and_marks_the_serving_one() {
    let scope = Scope::new("history").await;
    install_crds(&scope.client).await.unwrap();
    let (name, v1, v2) = two_revisions(&scope).await;
    let run = plugin("admin", &["history", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("REVISION"), "{}", run.stdout);
    assert!(
        lines[1].contains(&v1)
            && lines[1].contains("Succeeded, serving")
            && lines[1].contains("sha256:111111111111"),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].contains(&v2)
            && lines[2].contains("Blocked")
            && lines[2].contains("did not roll out"),
        "{}",
        run.stdout
    );
    let run = plugin("admin", &["history", &name, "-o", "json"]).await;
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed["servingRevision"], 1);
    assert_eq!(printed["revisions"][1]["outcome"], "Blocked");
    // As `kubectl rollout history -o name`: the object whose history it is.
    let run = plugin("admin", &["history", &name, "-o", "name"]).await;
    assert_eq!(
        run.stdout,
        format!("instance.core.pakket.dev/{name}\n"),
        "{run:?}"
    );
    scope.cleanup().await;
}

#[tokio::test]
async fn rollback_asks_for_the_last_revision_that_rolled_out_and_refuses_what_is_not_what_ran() {
    let scope = Scope::new("rollback").await;
    install_crds(&scope.client).await.unwrap();
    let (name, v1, v2) = two_revisions(&scope).await;

    // A revision the history does not keep.
    let run = plugin("admin", &["rollback", &name, "--to-revision", "7"]).await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("has no revision 7 (it keeps revisions 1 to 2)"),
        "{}",
        run.stderr
    );

    // The default: revision 1, the newest earlier one that rolled out.
    let run = plugin("admin", &["rollback", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "asks for revision 1 again (Bundle {v1} at {V1_DIGEST})"
        )),
        "{}",
        run.stdout
    );
    assert_eq!(get_instance(&scope, &name).await.spec.bundle.name, v1);
    // Asked again: nothing to do.
    let run = plugin("admin", &["rollback", &name, "--to-revision", "1"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("already asks for revision 1"),
        "{}",
        run.stdout
    );

    // A Bundle that pins other content than the revision ran is refused.
    crate::support::set_status(&scope, &name, json!({ "revisions": [
        { "number": 1, "bundle": v2, "digest": V1_DIGEST, "applied": "2026-11-27T10:00:00Z", "outcome": "Succeeded" },
        { "number": 2, "bundle": v1, "digest": V1_DIGEST, "applied": "2026-11-27T11:00:00Z", "outcome": "Succeeded" },
    ] }))
    .await;
    let run = plugin("admin", &["rollback", &name, "--to-revision", "1"]).await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains(&format!(
            "Bundle {v2} now pins {V2_DIGEST} but revision 1 ran {V1_DIGEST}"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        get_instance(&scope, &name).await.spec.bundle.name,
        v1,
        "nothing written"
    );
    scope.cleanup().await;
}

#[tokio::test]
async fn a_user_who_may_only_read_cannot_roll_back_and_nothing_changes() {
    let scope = Scope::new("rollback-ro").await;
    install_crds(&scope.client).await.unwrap();
    let (name, _, v2) = two_revisions(&scope).await;
    let grant = Grant::new(&scope, "reader", "bob", reviewer_rules()).await;
    let run = plugin("bob", &["rollback", &name]).await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains(&format!("may not roll back Instance {name}"))
            && run.stderr.contains("patch on instances"),
        "{}",
        run.stderr
    );
    let after = get_instance(&scope, &name).await;
    assert_eq!(after.spec.bundle.name, v2, "the spec is as it was");
    assert_eq!(after.metadata.generation, Some(1));
    grant.revoke().await;
    scope.cleanup().await;
}
