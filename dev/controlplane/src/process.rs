//! Starting and stopping the component processes.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A component process: its name, pid and log file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Component {
    /// `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` or `kwok`.
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

/// Starts `program` with `args`, output appended to `logs/<name>.log`.
///
/// Each component gets its own process group, so a Ctrl-C in the shell that
/// ran `pakket-dev up` does not take the cluster down with it.
pub fn spawn(
    name: &'static str,
    program: &Path,
    args: &[String],
    logs: &Path,
) -> Result<(Component, Child)> {
    let log = logs.join(format!("{name}.log"));
    let file = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(Error::io("opening", &log))?;
    let stderr = file.try_clone().map_err(Error::io("opening", &log))?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(Error::io("starting", program))?;
    let component = Component {
        name: name.to_owned(),
        pid: child.id(),
        log,
    };
    Ok((component, child))
}

/// Whether a process with this pid exists (zombies count as gone once reaped).
pub fn alive(pid: u32) -> bool {
    kill(as_pid(pid), None).is_ok()
}

/// Whether `pid` is alive and runs the binary called `name` (`etcd`,
/// `kwok` …), read from `/proc/<pid>/exe`. Where that link cannot be read,
/// a live pid is taken to be the component.
pub fn runs(pid: u32, name: &str) -> bool {
    if !alive(pid) {
        return false;
    }
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        // A rebuilt binary shows as `<path> (deleted)`.
        Ok(exe) => exe.file_name().is_some_and(|file| {
            let file = file.to_string_lossy();
            file == name || file == format!("{name} (deleted)")
        }),
        Err(_) => true,
    }
}

/// Asks a process this process did not start to stop, and kills it if it
/// has not stopped within `grace`.
pub fn terminate(pid: u32, grace: Duration) {
    let pid = as_pid(pid);
    stop_gracefully(pid, grace, || kill(pid, None).is_err());
}

/// Stops a child of this process and reaps it. (A child that has exited but
/// is not reaped still answers signals, so polling its pid would wait out
/// the whole grace period.)
pub fn terminate_child(child: &mut Child, grace: Duration) {
    let pid = as_pid(child.id());
    stop_gracefully(pid, grace, || {
        matches!(child.try_wait(), Ok(Some(_)) | Err(_))
    });
    let _ = child.wait();
}

/// SIGTERM, wait until `gone()` or `grace` passes, then SIGKILL.
fn stop_gracefully(pid: Pid, grace: Duration, mut gone: impl FnMut() -> bool) {
    if kill(pid, Signal::SIGTERM).is_err() {
        return;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if gone() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill(pid, Signal::SIGKILL);
}

/// The last `lines` lines of a log file, for error messages.
pub fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Resident memory of a process in KiB, from `/proc/<pid>/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Starts a shell watchdog that stops `pids` and removes `dir` once `owner`
/// exits. Tests use it: a test binary cannot run code at exit, and without it
/// a panicking test run would leave an apiserver behind.
pub fn watchdog(owner: u32, pids: &[u32], dir: &Path) -> Result<u32> {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let script = format!(
        "while kill -0 {owner} 2>/dev/null; do sleep 1; done; \
         kill -TERM {pids} 2>/dev/null; sleep 5; kill -KILL {pids} 2>/dev/null; rm -rf '{dir}'",
        pids = pids.join(" "),
        dir = dir.display(),
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(Error::io("starting", "sh"))?;
    Ok(child.id())
}

fn as_pid(pid: u32) -> Pid {
    Pid::from_raw(pid as i32)
}
