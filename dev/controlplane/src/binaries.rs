//! Finding (and, the first time, building) the control-plane binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The folder holding `etcd`, `kube-apiserver`, `kube-controller-manager` and `kubectl`.
#[derive(Clone, Debug)]
pub struct Binaries {
    dir: PathBuf,
}

/// The build script beside this crate's sources.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build.sh");

impl Binaries {
    /// Uses `$PAKKET_CONTROLPLANE_BIN` if set; otherwise runs `build.sh`, which
    /// returns at once when its cache already holds the pinned build.
    pub fn ensure() -> Result<Self> {
        if let Some(dir) = std::env::var_os("PAKKET_CONTROLPLANE_BIN") {
            return Self::at(PathBuf::from(dir));
        }
        let output = Command::new("bash")
            .arg(BUILD_SCRIPT)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(Error::io("running", BUILD_SCRIPT))?;
        if !output.status.success() {
            return Err(Error::Build(output.status.to_string()));
        }
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        Self::at(PathBuf::from(dir))
    }

    /// The binaries in `dir`, checked to be there.
    pub fn at(dir: PathBuf) -> Result<Self> {
        let binaries = Self { dir };
        for name in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kubectl",
        ] {
            let path = binaries.path(name);
            if !path.is_file() {
                return Err(Error::Build(format!("{} is missing", path.display())));
            }
        }
        Ok(binaries)
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
