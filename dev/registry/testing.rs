//! A real OCI registry for integration tests (Debian's docker-registry),
//! started through `dev/registry/start.sh`.
//!
//! Included by test files with `#[path = ".../dev/registry/testing.rs"] mod registry;`
//! so each test binary gets its own registry. A test binary cannot run code
//! at exit, so a small shell watchdog stops the registry and removes its
//! directory once the test process is gone, panics included.

#![allow(dead_code)]

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running registry on `127.0.0.1`, plain HTTP.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// Its config, storage and log.
    pub dir: PathBuf,
}

impl Registry {
    /// The registry shared by every test of this binary (anonymous access).
    pub fn shared() -> &'static Registry {
        static SHARED: OnceLock<Registry> = OnceLock::new();
        SHARED.get_or_init(|| Registry::start("shared", None))
    }

    /// A registry of its own, e.g. to stop it or to require `USER:PASSWORD`.
    pub fn start(name: &str, auth: Option<&str>) -> Registry {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pakket-registry-{}-{name}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("registry dir");
        let mut command = Command::new(script("start.sh"));
        command.arg(&dir);
        if let Some(auth) = auth {
            command.args(["--auth", auth]);
        }
        let output = command
            .stderr(Stdio::inherit())
            .output()
            .expect("dev/registry/start.sh runs");
        assert!(
            output.status.success(),
            "dev/registry/start.sh {} failed",
            dir.display()
        );
        let address = String::from_utf8(output.stdout)
            .expect("utf-8")
            .trim()
            .to_owned();
        assert!(
            address.starts_with("127.0.0.1:"),
            "start.sh printed {address:?}"
        );
        watchdog(&dir);
        Registry { address, dir }
    }

    /// Stops it (its data stays until the watchdog removes the directory).
    pub fn stop(&self) {
        let status = Command::new(script("stop.sh"))
            .arg(&self.dir)
            .status()
            .expect("stop.sh runs");
        assert!(
            status.success(),
            "dev/registry/stop.sh {} failed",
            self.dir.display()
        );
    }

    /// `docker://127.0.0.1:PORT/REPOSITORY`.
    pub fn image(&self, repository: &str) -> String {
        format!("docker://{}/{repository}", self.address)
    }
}

/// `dev/registry/NAME`, found from the test crate's directory upwards.
fn script(name: &str) -> PathBuf {
    let start = Path::new(env!("CARGO_MANIFEST_DIR"));
    start
        .ancestors()
        .map(|dir| dir.join("dev/registry").join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("dev/registry/{name} not found above {}", start.display()))
}

/// Stops the registry in `dir` and removes `dir` once this process exits.
fn watchdog(dir: &Path) {
    let script = format!(
        "while kill -0 {owner} 2>/dev/null; do sleep 1; done; '{stop}' '{dir}'; rm -rf '{dir}'",
        owner = std::process::id(),
        stop = script("stop.sh").display(),
        dir = dir.display(),
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("the registry watchdog starts");
    // The watchdog outlives this process by design; the thread only reaps it
    // if it ever ends earlier.
    std::thread::spawn(move || child.wait());
}
