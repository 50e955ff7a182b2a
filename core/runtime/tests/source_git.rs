//! `git+https://` refs through `content::unpack`, against real repositories
//! made with the `git` CLI and served over HTTPS by `git http-backend` (the
//! smart HTTP server git ships) behind rustls on loopback; and one end to
//! end through the controller.
//!
//! Data: `bundles/etcd/0.9.4/` of the shared test data, a verbatim
//! registry+v1 bundle from redhat-openshift-ecosystem/community-operators-prod
//! at 699495f2 (`operators/etcd/0.9.4/`); see ../shared/data/README.md. It is
//! committed into a test repository as `bundle/`.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use pakket_api::{BundleSpec, ConditionType, UnpackPhase};
use pakket_runtime::kernel::content::{self, ContentError, ImageSources, UnpackOptions};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::kernel::source::git::GitRef;
use pakket_runtime::kernel::store::Store;
use pakket_testkit::{condition_is, data, files};
use serde_json::json;
use support::{Controller, GitServer, HttpsServer, Repo, Scratch, config_map, git};

/// A client for `content::unpack`'s signature; git refs never use it.
fn unused_client() -> kube::Client {
    let config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn trusting(server: &HttpsServer) -> SourceOptions {
    SourceOptions {
        extra_roots: vec![server.ca_pem.clone()],
        ..SourceOptions::default()
    }
}

async fn unpack(
    reference: &str,
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
) -> Result<content::Unpacked, ContentError> {
    let spec = BundleSpec {
        class: "unused".into(),
        refs: vec![reference.into()],
        volume_mounts: vec![],
    };
    content::unpack(&unused_client(), &spec, store, sources, options).await
}

/// Copies the etcd bundle into `repo`'s working tree under `bundle/`.
fn add_etcd_bundle(repo: &Repo) {
    let from = data("bundles/etcd/0.9.4");
    for (relative, bytes) in files(&from) {
        let to = repo.work.join("bundle").join(relative);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
}

#[tokio::test]
async fn resolves_branches_tags_and_commits_and_a_stored_commit_fetches_nothing() {
    let scratch = Scratch::new("git-refs");
    let server = GitServer::start(&scratch.path.join("served"));
    let repo = Repo::create(&server, "etcd");
    add_etcd_bundle(&repo);
    let tagged = repo.commit("etcd 0.9.4", &[("README.md", "the etcd bundle\n")]);
    repo.git(&["tag", "--annotate", "-m", "release 0.9.4", "v0.9.4"]);
    repo.push();
    let head = repo.commit("a later commit", &[("README.md", "changed\n")]);
    let sources = ImageSources::new(trusting(&server.https));
    let store = scratch.store();
    let options = loopback();

    // (a) A branch, and a subdirectory: the tree below `bundle/` is the content.
    let reference = server.reference("etcd", "?ref=main&path=bundle");
    let started = Instant::now();
    let unpacked = unpack(&reference, &store, &sources, &options)
        .await
        .unwrap();
    let first_time = started.elapsed();
    assert_eq!(unpacked.commit.as_deref(), Some(head.as_str()));
    assert_eq!(unpacked.reference, reference);
    assert_eq!(files(&unpacked.dir), files(&data("bundles/etcd/0.9.4")));
    let repo_ref = GitRef::parse(&reference).unwrap();
    assert_eq!(unpacked.digest, repo_ref.digest_of(&head));
    assert_eq!(server.fetches(), 1);

    // (b) The same commit again: resolved, found in the store, not fetched.
    let started = Instant::now();
    let again = unpack(&reference, &store, &sources, &options)
        .await
        .unwrap();
    let stored_time = started.elapsed();
    assert_eq!(again.dir, unpacked.dir);
    assert_eq!(server.fetches(), 1);

    // (c) An annotated tag resolves to the commit it points at.
    let by_tag = unpack(
        &server.reference("etcd", "?ref=v0.9.4&path=bundle"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert_eq!(by_tag.commit.as_deref(), Some(tagged.as_str()));
    assert_eq!(server.fetches(), 2);

    // (d) A full commit sha needs no resolving; stored, it costs nothing.
    let log_before = server.log.lock().unwrap().len();
    let by_sha = unpack(
        &server.reference("etcd", &format!("?ref={tagged}&path=bundle")),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert_eq!(by_sha.dir, by_tag.dir);
    assert_eq!(
        server.log.lock().unwrap().len(),
        log_before,
        "no request at all"
    );

    // (e) No ref: HEAD; no path: the whole tree.
    let whole = unpack(&server.reference("etcd", ""), &store, &sources, &options)
        .await
        .unwrap();
    assert_eq!(whole.commit.as_deref(), Some(head.as_str()));
    let tree = files(&whole.dir);
    assert_eq!(tree["README.md"], b"changed\n");
    assert!(tree.contains_key("bundle/manifests/etcdoperator.v0.9.4.clusterserviceversion.yaml"));
    assert_ne!(whole.digest, unpacked.digest);
    println!(
        "git: resolve + fetch + unpack {first_time:.1?}; commit already stored (one ls-remote) {stored_time:.1?}"
    );
}

#[tokio::test]
async fn unknown_and_ambiguous_refs_and_missing_paths_are_named() {
    let scratch = Scratch::new("git-unknown");
    let server = GitServer::start(&scratch.path.join("served"));
    let repo = Repo::create(&server, "r");
    repo.commit("one", &[("manifests/a.yaml", "kind: ConfigMap\n")]);
    repo.git(&["branch", "same"]);
    repo.git(&["tag", "same"]);
    repo.push();
    let sources = ImageSources::new(trusting(&server.https));
    let store = scratch.store();
    let options = loopback();
    let cases = [
        (
            "?ref=v9.9.9",
            "has no branch or tag \"v9.9.9\"; check the ref",
            false,
        ),
        (
            "?ref=same",
            "is both a branch and a tag; write ref=refs/heads/same or ref=refs/tags/same",
            true,
        ),
        ("?path=deploy", "has no directory \"deploy\"", false),
        (
            "?path=manifests/a.yaml",
            "has no directory \"manifests/a.yaml\"",
            false,
        ),
    ];
    for (query, expected, terminal) in cases {
        let error = unpack(&server.reference("r", query), &store, &sources, &options)
            .await
            .unwrap_err();
        let message = error.to_string();
        println!("{query}: {message}");
        assert!(message.contains(expected), "{query}: {message}");
        assert!(
            message.starts_with("spec.refs[0] git+https://"),
            "{message}"
        );
        assert_eq!(error.is_terminal(), terminal, "{query}");
    }
    // The full ref name settles it.
    let branch = unpack(
        &server.reference("r", "?ref=refs/heads/same"),
        &store,
        &sources,
        &options,
    )
    .await
    .unwrap();
    assert!(branch.dir.join("manifests/a.yaml").exists());
    assert!(store.digests().unwrap().len() == 1);
}

#[tokio::test]
async fn symlinks_and_dot_dot_entries_in_a_repository_are_refused() {
    let scratch = Scratch::new("git-unsafe");
    let server = GitServer::start(&scratch.path.join("served"));
    let sources = ImageSources::new(trusting(&server.https));
    let store = scratch.store();
    let options = loopback();

    // A symlink committed like any file: the extractor refuses it.
    let linked = Repo::create(&server, "linked");
    std::fs::create_dir_all(linked.work.join("manifests")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", linked.work.join("manifests/passwd.yaml")).unwrap();
    linked.commit_staged("a link");
    let error = unpack(&server.reference("linked", ""), &store, &sources, &options)
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("symlink: {message}");
    assert!(message.contains("cannot unpack commit"), "{message}");
    assert!(
        message.contains("\"manifests/passwd.yaml\" is a symbolic link to \"/etc/passwd\""),
        "{message}"
    );
    assert!(error.is_terminal());

    // A tree with an entry named `..`, made with plumbing (porcelain
    // refuses): fsck refuses it while fetching.
    let evil = Repo::create(&server, "evil");
    let blob = stdin_git(&evil.work, &["hash-object", "-w", "--stdin"], "pwned\n");
    let inner = stdin_git(
        &evil.work,
        &["mktree"],
        &format!("100644 blob {blob}\tescaped.yaml\n"),
    );
    let root = stdin_git(
        &evil.work,
        &["mktree"],
        &format!("040000 tree {inner}\t..\n"),
    );
    let commit = git(&evil.work, &["commit-tree", &root, "-m", "escape"]);
    // git itself archives such a tree as `../escaped.yaml`; it never gets
    // that far, as fsck stops the fetch first.
    git(&evil.work, &["update-ref", "refs/heads/main", &commit]);
    git(
        &evil.work,
        &[
            "push",
            "--quiet",
            "--force",
            evil.bare.to_str().unwrap(),
            "main",
        ],
    );
    let error = unpack(&server.reference("evil", ""), &store, &sources, &options)
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("dot-dot tree: {message}");
    assert!(
        message.contains("git fetch of https://127.0.0.1:"),
        "{message}"
    );
    assert!(message.contains("hasDotdot: contains '..'"), "{message}");
    assert!(message.contains("fsck error"), "{message}");
    assert!(store.digests().unwrap().is_empty());
    assert!(!store.root().join("escaped.yaml").exists());
    assert!(!store.root().parent().unwrap().join("escaped.yaml").exists());
}

/// Runs git with `input` on stdin; returns stdout, trimmed.
fn stdin_git(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn unreachable_untrusted_silent_and_oversized_servers_stop_with_gits_words() {
    let scratch = Scratch::new("git-failures");
    let server = GitServer::start(&scratch.path.join("served"));
    let repo = Repo::create(&server, "big");
    // 256 KiB that do not compress much (xorshift letters).
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: String = (0..256 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect();
    repo.commit("big", &[("manifests/noise.txt", noise.as_str())]);
    let store = scratch.store();

    // Nothing listens on the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sources = ImageSources::new(SourceOptions::default());
    let error = unpack(
        &format!("git+https://127.0.0.1:{port}/r.git"),
        &store,
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    println!("unreachable: {message}");
    assert!(
        message.contains("git ls-remote of https://127.0.0.1:"),
        "{message}"
    );
    assert!(
        message.contains("Failed to connect to 127.0.0.1 port"),
        "{message}"
    );
    assert!(message.contains("is the server up"), "{message}");
    assert!(!error.is_terminal());

    // A CA git is not told to trust.
    let error = unpack(&server.reference("big", ""), &store, &sources, &loopback())
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("untrusted: {message}");
    assert!(message.contains("certificate"), "{message}");
    assert!(message.contains("extra roots"), "{message}");

    // A server that never answers: git is killed at the deadline.
    let silent = HttpsServer::start(Router::new().fallback(std::future::pending::<()>));
    let sources = ImageSources::new(SourceOptions {
        request_timeout: Duration::from_secs(1),
        ..trusting(&silent)
    });
    let started = Instant::now();
    let error = unpack(
        &format!("git+{}", silent.url("r.git")),
        &store,
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    println!("silent ({:.1?}): {error}", started.elapsed());
    assert!(
        error
            .to_string()
            .contains("timed out after 1s and was stopped"),
        "{error}"
    );

    // More objects than the limit allows.
    let sources = ImageSources::new(trusting(&server.https));
    let options = UnpackOptions {
        max_download_size: 64 * 1024,
        ..loopback()
    };
    let error = unpack(&server.reference("big", ""), &store, &sources, &options)
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("too large: {message}");
    assert!(message.contains("took more than 65536 bytes"), "{message}");
    assert!(error.is_terminal());
    assert!(store.digests().unwrap().is_empty());
}

#[tokio::test]
async fn plain_git_is_refused_without_touching_the_network() {
    let sources = ImageSources::new(SourceOptions::default());
    let error = unpack(
        "git://192.0.2.1/org/repo.git",
        &Scratch::new("git-plain").store(),
        &sources,
        &loopback(),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("the unencrypted git protocol"),
        "{message}"
    );
    assert!(message.contains("write it as git+https://"), "{message}");
    assert!(error.is_terminal());
}

#[tokio::test]
async fn the_controller_installs_an_instance_from_a_git_ref() {
    let scratch = Scratch::new("git-controller");
    let server = GitServer::start(&scratch.path.join("served"));
    let controller = Controller::start(
        "git-install",
        json!({"allowInternalAddresses": true}),
        |_| trusting(&server.https),
    )
    .await;
    let namespace = controller.scope.namespace.clone();
    let repo = Repo::create(&server, "app");
    let commit = repo.commit(
        "deploy",
        &[
            ("README.md", "not a manifest, and outside the path\n"),
            (
                "deploy/first.yaml",
                &config_map(&namespace, "from-git", "one"),
            ),
            (
                "deploy/second.yaml",
                &config_map(&namespace, "also-from-git", "two"),
            ),
        ],
    );
    repo.git(&["tag", "v1"]);
    repo.push();
    let reference = server.reference("app", "?ref=v1&path=deploy");

    let started = Instant::now();
    controller
        .create("instance", "class", "bundle", &reference)
        .await;
    let installed = controller.installed("instance").await;
    println!("git ref: created to Installed in {:.1?}", started.elapsed());
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(installed.status.as_ref().unwrap().objects.len(), 2);
    assert_eq!(
        controller.value_of("from-git").await.as_deref(),
        Some("one")
    );
    assert_eq!(
        controller.value_of("also-from-git").await.as_deref(),
        Some("two")
    );
    let status = controller.bundle_status("bundle").await;
    assert_eq!(status.unpacked, UnpackPhase::Done);
    let source = status.source.unwrap();
    assert_eq!(source.reference, reference);
    let digest = GitRef::parse(&reference).unwrap().digest_of(&commit);
    assert_eq!(source.digest.as_deref(), Some(digest.as_str()));
    assert_eq!(
        source.commit.as_deref(),
        Some(commit.as_str()),
        "the Bundle pins the commit the tag named"
    );
    controller.cleanup(&["instance"]).await;
}

/// Options for the loopback test servers: the class allows internal
/// addresses (without it, the address guard refuses them).
fn loopback() -> UnpackOptions {
    UnpackOptions {
        allow_internal_addresses: true,
        ..UnpackOptions::default()
    }
}

#[tokio::test]
async fn a_git_server_on_an_internal_address_is_refused_unless_the_class_allows_it() {
    let scratch = Scratch::new("git-internal");
    let server = GitServer::start(&scratch.path.join("served"));
    let repo = Repo::create(&server, "internal");
    add_etcd_bundle(&repo);
    repo.commit("etcd", &[("README.md", "the etcd bundle\n")]);
    repo.push();
    let sources = ImageSources::new(trusting(&server.https));
    let public_only = UnpackOptions {
        class: "plain".into(),
        ..UnpackOptions::default()
    };
    let reference = server.reference("internal", "?ref=main&path=bundle");
    let before = server.fetches();
    let error = unpack(&reference, &scratch.store(), &sources, &public_only)
        .await
        .unwrap_err();
    let message = error.to_string();
    println!("refused: {message}");
    assert!(
        message.contains("host 127.0.0.1 is a loopback address; nothing was sent to it")
            && message.contains("allowInternalAddresses: true"),
        "{message}"
    );
    assert!(error.is_terminal());
    assert_eq!(server.fetches(), before, "git never reached the server");
    // Allowed by the class: the same ref is fetched.
    unpack(&reference, &scratch.store(), &sources, &loopback())
        .await
        .unwrap();
}
