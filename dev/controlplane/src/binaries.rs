//! Finding (and, the first time, building) the control-plane binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The folder holding `etcd`, `kube-apiserver`, `kube-controller-manager` and `kubectl`.
#[derive(Clone, Debug)]
pub struct Binaries {
    dir: PathBuf,
}

/// The folder holding `kube-scheduler` and `kwok`, needed only by a control
/// plane with fake nodes (`Options::nodes > 0`). Built by a script of its own
/// so that adding them did not invalidate the control-plane cache.
#[derive(Clone, Debug)]
pub struct NodeBinaries {
    dir: PathBuf,
}

/// The build scripts beside this crate's sources.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build.sh");
const BUILD_NODES_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build-nodes.sh");
const BUILD_HELM_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build-helm.sh");

/// The pinned `helm` (the package provisioner renders charts with it):
/// in `$PAKKET_HELM_BIN` if set, otherwise built by `build-helm.sh`, which
/// returns at once when its cache already holds the pinned build.
pub fn helm() -> Result<PathBuf> {
    let dir = cached_or_built("PAKKET_HELM_BIN", BUILD_HELM_SCRIPT)?;
    check(&dir, &["helm"], BUILD_HELM_SCRIPT)?;
    Ok(dir.join("helm"))
}

impl Binaries {
    /// Uses `$PAKKET_CONTROLPLANE_BIN` if set; otherwise runs `build.sh`, which
    /// returns at once when its cache already holds the pinned build.
    pub fn ensure() -> Result<Self> {
        let dir = cached_or_built("PAKKET_CONTROLPLANE_BIN", BUILD_SCRIPT)?;
        Self::at(dir)
    }

    /// The binaries in `dir`, checked to be there.
    pub fn at(dir: PathBuf) -> Result<Self> {
        check(
            &dir,
            &[
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kubectl",
            ],
            BUILD_SCRIPT,
        )?;
        Ok(Self { dir })
    }

    /// The folder itself (put it on `PATH` to get the pinned kubectl).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One binary by name.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl NodeBinaries {
    /// Uses `$PAKKET_NODES_BIN` if set; otherwise runs `build-nodes.sh`, which
    /// returns at once when its cache already holds the pinned build.
    pub fn ensure() -> Result<Self> {
        let dir = cached_or_built("PAKKET_NODES_BIN", BUILD_NODES_SCRIPT)?;
        Self::at(dir)
    }

    /// The binaries in `dir`, checked to be there.
    pub fn at(dir: PathBuf) -> Result<Self> {
        check(&dir, &["kube-scheduler", "kwok"], BUILD_NODES_SCRIPT)?;
        Ok(Self { dir })
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One binary by name.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// The folder named by `$variable`, or the one `script` prints after building.
pub(crate) fn cached_or_built(variable: &str, script: &'static str) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(variable) {
        return Ok(PathBuf::from(dir));
    }
    let output = Command::new("bash")
        .arg(script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(Error::io("running", script))?;
    if !output.status.success() {
        return Err(Error::Build {
            script,
            detail: output.status.to_string(),
        });
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&output.stdout).trim(),
    ))
}

pub(crate) fn check(dir: &Path, names: &[&str], script: &'static str) -> Result<()> {
    for name in names {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(Error::Build {
                script,
                detail: format!("{} is missing", path.display()),
            });
        }
    }
    Ok(())
}
