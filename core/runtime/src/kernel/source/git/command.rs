//! Running the `git` CLI on untrusted repositories: a private work
//! directory, a scrubbed environment, hardened configuration, and a
//! deadline (and optionally a size limit) enforced by killing the whole
//! process group, since `git fetch` runs `git-remote-https` and
//! `index-pack` as children.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::DirBuilderExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Most bytes of a command's stdout or stderr kept; the rest is read and dropped.
const MAX_CAPTURED: usize = 1 << 20;
/// Environment variables passed through to git: the proxy settings a
/// provisioner behind a proxy needs. Everything else is cleared.
const PASSED_THROUGH: &[&str] = &[
    "PATH",
    "https_proxy",
    "HTTPS_PROXY",
    "no_proxy",
    "NO_PROXY",
    "all_proxy",
    "ALL_PROXY",
];
/// Where distributions keep the system's CA bundle, for a bundle that adds
/// extra roots (`http.sslCAInfo` replaces git's default bundle).
const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// A private, empty directory for one git operation (HOME, the bare
/// repository, the CA bundle), removed when dropped.
pub(super) struct Workspace {
    path: PathBuf,
    ca_bundle: Option<PathBuf>,
}

impl Workspace {
    /// Creates one under the system's temporary directory, readable by
    /// this user only; with `extra_roots_pem`, writes a CA bundle of the
    /// system's roots plus those.
    pub(super) fn create(extra_roots_pem: &[String]) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let mut builder = fs::DirBuilder::new();
        builder.mode(0o700);
        let path = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("pakket-git-{}-{n}", std::process::id()));
            match builder.create(&path) {
                Ok(()) => break path,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        };
        let mut workspace = Self {
            path,
            ca_bundle: None,
        };
        if !extra_roots_pem.is_empty() {
            let bundle = workspace.path.join("ca-bundle.pem");
            let mut text = system_ca_bundle();
            for pem in extra_roots_pem {
                text.push('\n');
                text.push_str(pem);
            }
            fs::write(&bundle, text)?;
            workspace.ca_bundle = Some(bundle);
        }
        Ok(workspace)
    }

    /// The bare repository objects are fetched into.
    pub(super) fn repository(&self) -> PathBuf {
        self.path.join("repo.git")
    }

    /// A `git` command with the hardened configuration and environment.
    pub(super) fn git(&self, stall: Duration) -> Command {
        let mut command = Command::new("git");
        command.env_clear();
        for name in PASSED_THROUGH {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        if std::env::var_os("PATH").is_none() {
            command.env("PATH", "/usr/local/bin:/usr/bin:/bin");
        }
        command
            .env("HOME", &self.path)
            .env("LC_ALL", "C")
            .env("LANG", "C")
            // Never ask for credentials: there is nobody to answer.
            .env("GIT_TERMINAL_PROMPT", "0")
            // No system or user configuration: only what is set below.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_PROTOCOL_FROM_USER", "0")
            .current_dir(&self.path);
        let mut config: Vec<OsString> = [
            // HTTPS and nothing else, redirects included (no file://, ssh,
            // ext:: helpers or plain git://).
            "protocol.allow=never",
            "protocol.https.allow=always",
            "http.sslVerify=true",
            "http.followRedirects=initial",
            // A server that goes silent for the read timeout is cut off.
            "http.lowSpeedLimit=1",
            // Malformed objects and trees (`..` entries, odd modes) are
            // refused while fetching.
            "transfer.fsckObjects=true",
            "credential.helper=",
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            "gc.auto=0",
            "maintenance.auto=false",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        config.push(format!("http.lowSpeedTime={}", stall.as_secs().max(1)).into());
        if let Some(bundle) = &self.ca_bundle {
            let mut setting = OsString::from("http.sslCAInfo=");
            setting.push(bundle);
            config.push(setting);
        }
        for setting in config {
            command.arg("-c").arg(setting);
        }
        command
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The system's CA bundle, or nothing if none of the usual places has one
/// (then only the extra roots are trusted by git).
fn system_ca_bundle() -> String {
    let from_env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    from_env
        .into_iter()
        .chain(SYSTEM_CA_BUNDLES.iter().map(PathBuf::from))
        .find_map(|path| fs::read_to_string(path).ok())
        .unwrap_or_default()
}

/// How a command is bounded.
pub(super) struct Bounds {
    /// Killed past this.
    pub deadline: Duration,
    /// Killed if this directory grows past `max_bytes`.
    pub watch: Option<(PathBuf, u64)>,
}

/// Why a command was stopped, or could not run.
#[derive(Debug)]
pub(super) enum Stopped {
    /// It could not be started (no git on PATH?).
    Spawn(io::Error),
    /// The deadline passed.
    Timeout(Duration),
    /// The watched directory grew past the limit.
    TooLarge(u64),
    /// Waiting for it failed.
    Wait(io::Error),
}

/// What a command that ran to its end left.
pub(super) struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its stdout (at most [`MAX_CAPTURED`] bytes); empty if it was consumed.
    pub stdout: Vec<u8>,
    /// Its stderr (at most [`MAX_CAPTURED`] bytes).
    pub stderr: Vec<u8>,
}

impl Finished {
    /// stderr as one trimmed string.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_owned()
    }
}

/// Runs `command` to its end under `bounds`, capturing its output.
pub(super) fn run(command: Command, bounds: &Bounds) -> Result<Finished, Stopped> {
    let (mut finished, stdout) = run_with(command, bounds, |stdout| capture(stdout))?;
    finished.stdout = stdout;
    Ok(finished)
}

/// Runs `command` under `bounds`, handing its stdout to `consume` on
/// another thread; returns what it left and what `consume` returned. If
/// `consume` stops reading early, the pipe is closed and git ends.
pub(super) fn run_with<T: Send>(
    mut command: Command,
    bounds: &Bounds,
    consume: impl FnOnce(&mut ChildStdout) -> T + Send,
) -> Result<(Finished, T), Stopped> {
    // Its own process group, so a kill reaches git's helpers too.
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().map_err(Stopped::Spawn)?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    std::thread::scope(|scope| {
        let errors = scope.spawn(move || capture(stderr));
        let output = scope.spawn(move || {
            let result = consume(&mut stdout);
            // Closed here, so a git still writing gets EPIPE and ends.
            drop(stdout);
            result
        });
        let waited = supervise(&mut child, bounds);
        let stderr = errors.join().unwrap_or_default();
        let result = match output.join() {
            Ok(joined) => joined,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let status = waited?;
        Ok((
            Finished {
                status,
                stdout: Vec::new(),
                stderr,
            },
            result,
        ))
    })
}

/// Waits for `child`, killing its process group past the deadline or the
/// size limit. The kill happens before the child is reaped, so its pid
/// (the group's id) cannot belong to anyone else yet.
fn supervise(child: &mut Child, bounds: &Bounds) -> Result<ExitStatus, Stopped> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        if let Some(status) = child.try_wait().map_err(Stopped::Wait)? {
            return Ok(status);
        }
        let stop = if started.elapsed() > bounds.deadline {
            Some(Stopped::Timeout(bounds.deadline))
        } else {
            bounds
                .watch
                .as_ref()
                .filter(|(dir, max)| size_of(dir) > *max)
                .map(|(_, max)| Stopped::TooLarge(*max))
        };
        if let Some(stop) = stop {
            let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            let _ = killpg(group, Signal::SIGKILL);
            let _ = child.wait();
            return Err(stop);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Reads `reader` to its end, keeping the first [`MAX_CAPTURED`] bytes.
fn capture(mut reader: impl Read) -> Vec<u8> {
    let mut kept = Vec::new();
    let _ = (&mut reader)
        .take(MAX_CAPTURED as u64)
        .read_to_end(&mut kept);
    let _ = io::copy(&mut reader, &mut io::sink());
    kept
}

/// Bytes of the files under `dir` (0 if it cannot be read).
pub(super) fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => size_of(&entry.path()),
            Ok(_) => entry.metadata().map(|meta| meta.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}
