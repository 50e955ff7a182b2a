//! Real HTTPS servers on loopback for the `https://` and git source tests:
//! an rcgen CA per server, rustls (ring) through tokio-rustls, hyper
//! serving an axum router on a thread of its own; and git repositories
//! made with the `git` CLI and served by `git http-backend` (CGI), the
//! smart HTTP server git itself ships.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use tokio::io::AsyncWriteExt as _;

/// A fresh directory for one test, removed when dropped (panics included).
pub struct Scratch {
    /// The directory.
    pub path: PathBuf,
}

impl Scratch {
    /// `$TMPDIR/pakket-test-<pid>-<name>`, empty.
    pub fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("pakket-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self { path }
    }

    /// A content store inside it.
    pub fn store(&self) -> Arc<pakket_runtime::kernel::store::Store> {
        Arc::new(pakket_runtime::kernel::store::Store::open(self.path.join("store")).unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub use pakket_testkit::https::HttpsServer;

/// Bare repositories under one root, served over HTTPS by `git http-backend`.
pub struct GitServer {
    /// The HTTPS server.
    pub https: HttpsServer,
    /// Where the bare repositories live (`NAME.git`).
    pub root: PathBuf,
    /// One line per git request: `ls-refs`, `fetch`, or the request line.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl GitServer {
    /// Serves the bare repositories under `root`.
    pub fn start(root: &Path) -> Self {
        std::fs::create_dir_all(root).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = (root.to_path_buf(), Arc::clone(&log));
        let router = Router::new().fallback(git_http_backend).with_state(state);
        Self {
            https: HttpsServer::start(router),
            root: root.to_path_buf(),
            log,
        }
    }

    /// `git+https://127.0.0.1:PORT/NAME.git` followed by `query`.
    pub fn reference(&self, name: &str, query: &str) -> String {
        format!("git+{}{query}", self.https.url(&format!("{name}.git")))
    }

    /// How many `fetch` commands were served so far.
    pub fn fetches(&self) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|line| *line == "fetch")
            .count()
    }
}

type CgiState = (PathBuf, Arc<Mutex<Vec<String>>>);

/// Runs `git http-backend` as a CGI program for one request.
async fn git_http_backend(
    State((root, log)): State<CgiState>,
    request: Request,
) -> Result<Response, StatusCode> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20)
        .await
        .map_err(|_| StatusCode::PAYLOAD_TOO_LARGE)?;
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let entry = if body.windows(13).any(|w| w == b"command=fetch") {
        "fetch".to_owned()
    } else if body.windows(15).any(|w| w == b"command=ls-refs") {
        "ls-refs".to_owned()
    } else {
        format!("{} {}", parts.method, parts.uri)
    };
    log.lock().unwrap().push(entry);
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&body).await.ok();
    drop(stdin);
    let output = child
        .wait_with_output()
        .await
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    cgi_response(&output.stdout).ok_or(StatusCode::BAD_GATEWAY)
}

/// A CGI program's output (headers, a blank line, the body) as a response.
fn cgi_response(output: &[u8]) -> Option<Response> {
    let (head, body) = [&b"\r\n\r\n"[..], b"\n\n"].iter().find_map(|separator| {
        let at = output
            .windows(separator.len())
            .position(|w| w == *separator)?;
        Some((&output[..at], &output[at + separator.len()..]))
    })?;
    let mut status = StatusCode::OK;
    let mut headers = HeaderMap::new();
    for line in String::from_utf8_lossy(head).lines() {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            status = value
                .split(' ')
                .next()?
                .parse::<u16>()
                .ok()?
                .try_into()
                .ok()?;
        } else {
            headers.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).ok()?,
                value.parse().ok()?,
            );
        }
    }
    let mut response = Response::new(Body::from(Bytes::copy_from_slice(body)));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Some(response)
}

/// Runs `git ARGS` in `dir` with a fixed identity and no user or system
/// configuration; returns stdout, trimmed. Panics with git's stderr.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Pakket Test")
        .env("GIT_AUTHOR_EMAIL", "test@pakket.dev")
        .env("GIT_COMMITTER_NAME", "Pakket Test")
        .env("GIT_COMMITTER_EMAIL", "test@pakket.dev")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A working repository `work` whose commits are pushed to the served bare
/// repository `NAME.git` under the server's root.
pub struct Repo {
    /// The working tree.
    pub work: PathBuf,
    /// The bare repository the server serves.
    pub bare: PathBuf,
}

impl Repo {
    /// An empty repository `name` (branch `main`) under `server`'s root.
    pub fn create(server: &GitServer, name: &str) -> Self {
        let work = server.root.join(format!("{name}-work"));
        let bare = server.root.join(format!("{name}.git"));
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "--quiet", "--initial-branch=main"]);
        git(
            &server.root,
            &[
                "init",
                "--quiet",
                "--bare",
                "--initial-branch=main",
                bare.to_str().unwrap(),
            ],
        );
        Self { work, bare }
    }

    /// Writes `files` (path, content), removes `removed`, commits everything
    /// on the current branch and pushes it; returns the commit.
    pub fn commit(&self, message: &str, files: &[(&str, &str)]) -> String {
        for (path, content) in files {
            let path = self.work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        self.commit_staged(message)
    }

    /// Commits what is in the working tree and pushes every branch and tag.
    pub fn commit_staged(&self, message: &str) -> String {
        git(&self.work, &["add", "--all"]);
        git(
            &self.work,
            &["commit", "--quiet", "--allow-empty", "-m", message],
        );
        self.push();
        git(&self.work, &["rev-parse", "HEAD"])
    }

    /// Pushes every branch and tag to the bare repository.
    pub fn push(&self) {
        let bare = self.bare.to_str().unwrap();
        git(&self.work, &["push", "--quiet", "--force", bare, "--all"]);
        git(&self.work, &["push", "--quiet", "--force", bare, "--tags"]);
    }

    /// Runs git in the working tree.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.work, args)
    }
}

/// A ConfigMap manifest named `name` in `namespace` holding `value`.
pub fn config_map(namespace: &str, name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: {value}\n"
    )
}

/// A gzip'd tar of `files` (path, content), as a release tarball is made.
pub fn tarball(files: &[(&str, &[u8])]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for (path, content) in files {
        // Names written as given (`append_data` would refuse a `..`), so a
        // test can serve an archive that tries to escape.
        let mut header = tar::Header::new_gnu();
        let name = &mut header.as_gnu_mut().unwrap().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append(&header, *content).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A controller for a provisioner id of its own (so tests in parallel never
/// act on each other's Instances), its class, and its store.
pub struct Controller {
    /// The test's namespace and admin client.
    pub scope: pakket_testkit::Scope,
    /// The content store's directory.
    pub store: PathBuf,
}

impl Controller {
    /// Starts `controller::run_with` with the source options `sources`
    /// makes (it is given the test's namespace, which plays the
    /// provisioner's), and a class (`approval: AllowAll` plus `parameters`)
    /// named `class`.
    pub async fn start(
        test: &str,
        parameters: serde_json::Value,
        sources: impl FnOnce(&str) -> pakket_runtime::kernel::source::SourceOptions,
    ) -> Self {
        let scope = pakket_testkit::Scope::new(test).await;
        let sources = sources(&scope.namespace);
        pakket_testkit::install_crds(&scope.client).await.unwrap();
        let controller = Self {
            store: scope.path("store"),
            scope,
        };
        controller.class("class", parameters).await;
        let options = pakket_runtime::kernel::controller::RunOptions {
            sources,
            ..pakket_runtime::kernel::controller::RunOptions::new(controller.store.clone())
        };
        let client = controller.scope.client.clone();
        let provisioner = pakket_runtime::Plain::new(controller.id());
        tokio::spawn(async move {
            pakket_runtime::kernel::controller::run_with(client, provisioner, options).await
        });
        controller
    }

    /// The provisioner id.
    pub fn id(&self) -> String {
        format!("test.pakket.dev/{}", self.scope.id)
    }

    /// Creates another class of this provisioner: `approval: AllowAll` plus `parameters`.
    pub async fn class(&self, name: &str, parameters: serde_json::Value) {
        let mut all = serde_json::Map::new();
        all.insert("approval".into(), "AllowAll".into());
        if let serde_json::Value::Object(more) = parameters {
            all.extend(more);
        }
        let class = pakket_api::ProvisionerClass {
            metadata: self.scope.meta(name),
            spec: pakket_api::ProvisionerClassSpec {
                provisioner: self.id(),
                parameters: Some(all),
            },
            status: None,
        };
        kube::Api::<pakket_api::ProvisionerClass>::all(self.scope.client.clone())
            .create(&Default::default(), &class)
            .await
            .unwrap();
    }

    /// The Instances API.
    pub fn instances(&self) -> kube::Api<pakket_api::Instance> {
        kube::Api::all(self.scope.client.clone())
    }

    /// Creates Instance `name` of class `class` with an embedded Bundle
    /// `bundle` of the one ref `reference`.
    pub async fn create(&self, name: &str, class: &str, bundle: &str, reference: &str) {
        let instance = pakket_api::Instance {
            metadata: self.scope.meta(name),
            spec: pakket_api::InstanceSpec {
                class: self.scope.name(class),
                selector: None,
                deletion_policy: Default::default(),
                config: None,
                bundle: pakket_api::BundleTemplate {
                    name: self.scope.name(bundle),
                    spec: Some(pakket_api::BundleSpec {
                        class: self.scope.name(class),
                        refs: vec![reference.into()],
                        volume_mounts: vec![],
                    }),
                },
                progress_deadline: None,
                drift: None,
            },
            status: None,
        };
        self.instances()
            .create(&Default::default(), &instance)
            .await
            .unwrap();
    }

    /// Waits until Instance `name` passes `check`.
    pub async fn wait(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&pakket_api::Instance) -> bool,
    ) -> pakket_api::Instance {
        pakket_testkit::wait_for_instance(&self.instances(), &self.scope.name(name), what, check)
            .await
    }

    /// Waits until Instance `name` is installed.
    pub async fn installed(&self, name: &str) -> pakket_api::Instance {
        self.wait(name, "install", |i| {
            pakket_testkit::condition_is(i, pakket_api::ConditionType::Installed, "True")
        })
        .await
    }

    /// Waits until Instance `name` failed to unpack; returns the message.
    pub async fn unpack_failed(&self, name: &str) -> String {
        let failed = self
            .wait(name, "unpack failure", |i| {
                pakket_testkit::reason_is(i, pakket_api::ConditionType::Unpacked, "UnpackFailed")
            })
            .await;
        failed
            .condition(pakket_api::ConditionType::Unpacked)
            .unwrap()
            .message
            .clone()
    }

    /// Bundle `name`'s status.
    pub async fn bundle_status(&self, name: &str) -> pakket_api::BundleStatus {
        pakket_testkit::bundle_status(&self.scope.client, &self.scope.name(name))
            .await
            .unwrap_or_default()
    }

    /// The `value` of ConfigMap `name` in the test's namespace, if it exists.
    pub async fn value_of(&self, name: &str) -> Option<String> {
        let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(self.scope.client.clone(), &self.scope.namespace);
        let found = config_maps.get_opt(name).await.unwrap()?;
        found.data.and_then(|data| data.get("value").cloned())
    }

    /// Deletes the Instances `names`, the store and the scope.
    pub async fn cleanup(self, names: &[&str]) {
        for name in names {
            let _ = self
                .instances()
                .delete(&self.scope.name(name), &Default::default())
                .await;
        }
        let _ = std::fs::remove_dir_all(&self.store);
        self.scope.cleanup().await;
    }
}
