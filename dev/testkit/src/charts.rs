//! Helm chart repositories for tests: charts written by a test, packaged
//! and indexed by the real, pinned helm (`helm package`, `helm repo
//! index`), as a chart repository serves them; and such a repository
//! served over HTTPS on loopback ([`ChartRepository`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::get;

use crate::https::HttpsServer;

/// Served files by name, and the requests answered (both repositories').
#[derive(Clone, Default)]
struct Files {
    by_name: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    requests: Arc<AtomicUsize>,
}

impl Files {
    /// The same count, other files.
    fn beside(&self) -> Self {
        Self {
            by_name: Arc::default(),
            requests: Arc::clone(&self.requests),
        }
    }
}

/// A chart repository: `index.yaml` and archives under `/charts/`, made by
/// the real helm from charts the tests write; and a private one under
/// `/private/`, served only with [`PRIVATE_USER`]'s basic auth.
pub struct ChartRepository {
    /// The server (its CA is what a client must trust).
    pub server: HttpsServer,
    files: Files,
    private: Files,
}

/// The private repository's user and password.
pub const PRIVATE_USER: (&str, &str) = ("reader", "let-me-in");

/// The Secret (in the provisioner's namespace) a class's `pullSecrets`
/// names for the private repository, in the helm provisioner's tests.
pub const CREDENTIALS_SECRET: &str = "chart-credentials";

async fn private_file(
    State(files): State<Files>,
    UrlPath(path): UrlPath<String>,
    headers: axum::http::HeaderMap,
) -> Result<Vec<u8>, StatusCode> {
    use base64::Engine as _;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", PRIVATE_USER.0, PRIVATE_USER.1))
    );
    let given = headers.get(axum::http::header::AUTHORIZATION);
    if given.and_then(|value| value.to_str().ok()) != Some(expected.as_str()) {
        files.requests.fetch_add(1, Ordering::Relaxed);
        return Err(StatusCode::UNAUTHORIZED);
    }
    chart_file(State(files), UrlPath(path)).await
}

async fn chart_file(
    State(files): State<Files>,
    UrlPath(path): UrlPath<String>,
) -> Result<Vec<u8>, StatusCode> {
    files.requests.fetch_add(1, Ordering::Relaxed);
    files
        .by_name
        .lock()
        .unwrap()
        .get(&path)
        .cloned()
        .ok_or(StatusCode::NOT_FOUND)
}

impl ChartRepository {
    /// Serves an empty repository until the test binary exits.
    pub fn start() -> Self {
        let files = Files::default();
        let private = files.beside();
        let router = Router::new()
            .route("/charts/{*path}", get(chart_file))
            .with_state(files.clone())
            .merge(
                Router::new()
                    .route("/private/{*path}", get(private_file))
                    .with_state(private.clone()),
            );
        Self {
            server: HttpsServer::start(router),
            files,
            private,
        }
    }

    /// How many requests for files both repositories have answered (a
    /// refused one counts too).
    pub fn requests(&self) -> usize {
        self.files.requests.load(Ordering::Relaxed)
    }

    /// `helm+https://…/private/#NAME@VERSION`.
    pub fn private_ref(&self, name: &str, version: &str) -> String {
        format!("helm+{}#{name}@{version}", self.server.url("private/"))
    }

    /// [`Self::publish`] to the private repository.
    pub fn publish_private(&self, files: &[(&str, String)]) {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let mut served = self.private.by_name.lock().unwrap();
        let (all, _) = with_chart(&served, &files, &self.server.url("private/"));
        *served = all;
    }

    /// `helm+https://…/charts/#NAME@VERSION`.
    pub fn chart_ref(&self, name: &str, version: &str) -> String {
        format!("helm+{}#{name}@{version}", self.server.url("charts/"))
    }

    /// Packages the chart whose files are `files` with the real helm and
    /// indexes the repository again; the archive's bytes.
    pub fn publish(&self, files: &[(&str, String)]) -> Vec<u8> {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let mut served = self.files.by_name.lock().unwrap();
        let (all, archive) = with_chart(&served, &files, &self.server.url("charts/"));
        *served = all;
        served[&archive].clone()
    }
}

/// The files of a chart repository served at `url` once the chart whose
/// files (`Chart.yaml`, `values.yaml`, `templates/…`) are `files` is
/// added to the archives it already holds (`archives`, by file name):
/// every archive and `index.yaml`, by file name; and the new archive's
/// name.
pub fn with_chart(
    archives: &BTreeMap<String, Vec<u8>>,
    files: &[(&str, &str)],
    url: &str,
) -> (BTreeMap<String, Vec<u8>>, String) {
    let helm = pakket_controlplane::helm().expect("the pinned helm");
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("chart");
    for (path, text) in files {
        let file = source.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let out = work.path().join("repository");
    std::fs::create_dir_all(&out).unwrap();
    for (name, bytes) in archives.iter().filter(|(name, _)| name.ends_with(".tgz")) {
        std::fs::write(out.join(name), bytes).unwrap();
    }
    let said = run(
        &helm,
        work.path(),
        &[
            "package".as_ref(),
            source.as_os_str(),
            "-d".as_ref(),
            out.as_os_str(),
        ],
    );
    let archive = Path::new(said.trim().rsplit(": ").next().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    run(
        &helm,
        work.path(),
        &[
            "repo".as_ref(),
            "index".as_ref(),
            out.as_os_str(),
            "--url".as_ref(),
            url.as_ref(),
        ],
    );
    let served = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    (served, archive)
}

/// Runs helm with `home` as its every home; its output.
fn run(helm: &Path, home: &Path, args: &[&std::ffi::OsStr]) -> String {
    let output = std::process::Command::new(helm)
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "helm {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
