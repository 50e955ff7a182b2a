//! Rendering a Helm chart with a real Helm (`helm template`), in a
//! provisioner's own pipeline: no Flux, no Helm release Secrets, no
//! network. The chart is an archive the runtime downloaded and pinned (a
//! ref of the Bundle); Helm only reads it, with every home
//! folder pointed at a scratch directory so no user's repositories,
//! plugins or registry logins are used.
//!
//! What Helm is told about the cluster is what the runtime read from the
//! apiserver: `--kube-version` (its major.minor) and `--api-versions`
//! (every served `group/version` and `group/version/Kind`), so charts that
//! ask `.Capabilities` render as they would against this cluster. CRDs
//! are included (`--include-crds`); chart tests are not (`--skip-tests`).
//!
//! Hooks. Install and upgrade hooks (`pre-install`, `post-install`,
//! `pre-upgrade`, `post-upgrade`) are applied as ordinary objects of the
//! package, in the runtime's order (CRDs, then namespaces, then the rest),
//! and kept until it goes: a hook Job runs once, not again on each
//! upgrade, and its `hook-delete-policy` is not followed. Delete, rollback
//! and other hooks have no moment here (the runtime removes what it
//! installed itself), so a chart with one is refused, naming the objects,
//! rather than installed without them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pakket_runtime::provisioner::ClusterFacts;
use serde_json::Value;

/// How long one `helm template` may take.
const RENDER_TIMEOUT: Duration = Duration::from_secs(60);
/// The most rendered output read (a big chart renders a few megabytes).
const MAX_OUTPUT: u64 = 64 * 1024 * 1024;
/// The most of Helm's error output quoted in a condition.
const MAX_ERROR: usize = 2000;

/// Hook events applied as ordinary objects.
const INSTALL_HOOKS: &[&str] = &["pre-install", "post-install", "pre-upgrade", "post-upgrade"];

/// A Helm binary.
#[derive(Clone, Debug)]
pub struct Helm {
    binary: PathBuf,
}

/// One release to render.
pub struct Release<'a> {
    /// The release name (`.Release.Name`).
    pub name: &'a str,
    /// Its namespace (`.Release.Namespace`).
    pub namespace: &'a str,
    /// The unpacked chart archive (the folder holding the chart's folder,
    /// or the chart's folder itself).
    pub chart: &'a Path,
    /// The values.
    pub values: &'a Value,
}

impl Helm {
    /// Uses the helm at `binary`.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
        }
    }

    /// The objects `release` renders to, against `cluster`.
    pub fn template(
        &self,
        release: &Release<'_>,
        cluster: &ClusterFacts,
        max_object_size: u64,
    ) -> Result<Vec<Value>, String> {
        let chart = chart_folder(release.chart)?;
        let scratch =
            tempfile::tempdir().map_err(|error| format!("no scratch folder for helm: {error}"))?;
        let values_file = scratch.path().join("values.json");
        std::fs::write(&values_file, release.values.to_string())
            .map_err(|error| format!("cannot write the chart's values: {error}"))?;
        let mut command = Command::new(&self.binary);
        command
            .arg("template")
            .arg(release.name)
            .arg(&chart)
            .arg("--namespace")
            .arg(release.namespace)
            .arg("--values")
            .arg(&values_file)
            .args(["--include-crds", "--skip-tests"])
            .args(capabilities(cluster))
            .env_clear()
            .env("HOME", scratch.path())
            .env("HELM_CACHE_HOME", scratch.path().join("cache"))
            .env("HELM_CONFIG_HOME", scratch.path().join("config"))
            .env("HELM_DATA_HOME", scratch.path().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = run(command, &self.binary)?;
        let objects = pakket_runtime::manifest::parse(
            Path::new("helm template"),
            &output,
            pakket_runtime::manifest::Format::Yaml,
            max_object_size,
        )
        .map_err(|error| format!("the chart renders something that is not a manifest: {error}"))?;
        let objects: Vec<Value> = objects
            .into_iter()
            .map(|manifest| manifest.object)
            .collect();
        refuse_unsupported_hooks(&objects)?;
        Ok(objects)
    }
}

/// `--kube-version` and `--api-versions` for `cluster`.
fn capabilities(cluster: &ClusterFacts) -> Vec<String> {
    let mut args = Vec::new();
    if let Some((major, minor)) = cluster.version {
        args.push(format!("--kube-version=v{major}.{minor}.0"));
    }
    let mut versions = std::collections::BTreeSet::new();
    for (api_version, kind) in &cluster.served {
        versions.insert(api_version.clone());
        versions.insert(format!("{api_version}/{kind}"));
    }
    if !versions.is_empty() {
        let joined: Vec<String> = versions.into_iter().collect();
        args.push(format!("--api-versions={}", joined.join(",")));
    }
    args
}

/// The folder with `Chart.yaml`: `dir` itself or its one sub-folder (an
/// archive unpacks to `<chart>/Chart.yaml`).
pub fn chart_folder(dir: &Path) -> Result<PathBuf, String> {
    if dir.join("Chart.yaml").is_file() {
        return Ok(dir.to_path_buf());
    }
    let mut charts = std::fs::read_dir(dir)
        .map_err(|error| format!("the chart archive cannot be read: {error}"))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("Chart.yaml").is_file());
    match (charts.next(), charts.next()) {
        (Some(chart), None) => Ok(chart),
        (None, _) => Err("the chart archive holds no Chart.yaml".into()),
        (Some(_), Some(_)) => {
            Err("the chart archive holds several charts; a chart archive holds one".into())
        }
    }
}

/// Runs `command` to its end (within [`RENDER_TIMEOUT`]); its output, or
/// what Helm said went wrong.
fn run(mut command: Command, binary: &Path) -> Result<Vec<u8>, String> {
    let mut child = command.spawn().map_err(|error| {
        format!(
            "helm cannot be started from {} ({error}); the provisioner's --helm flag names the helm binary",
            binary.display()
        )
    })?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout
            .take(MAX_OUTPUT + 1)
            .read_to_end(&mut bytes)
            .map(|_| bytes)
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.take(64 * 1024).read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + RENDER_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "helm template did not finish within {} s",
                    RENDER_TIMEOUT.as_secs()
                ));
            }
            Err(error) => return Err(format!("helm template: {error}")),
        }
    };
    let output = out
        .join()
        .map_err(|_| "reading helm's output failed".to_owned())?
        .map_err(|error| format!("reading helm's output: {error}"))?;
    let said = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(format!("helm template failed: {}", last_words(&said)));
    }
    if output.len() as u64 > MAX_OUTPUT {
        return Err(format!(
            "the chart renders more than {} MiB of manifests",
            MAX_OUTPUT / 1024 / 1024
        ));
    }
    Ok(output)
}

/// Helm's error on one line (a condition message is one), trimmed to what
/// fits in a condition.
fn last_words(said: &str) -> String {
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = said.strip_prefix("Error: ").unwrap_or(&said);
    if said.len() <= MAX_ERROR {
        return said.to_owned();
    }
    let mut start = said.len() - MAX_ERROR;
    while !said.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &said[start..])
}

/// Refuses a chart with a hook this provisioner cannot run at its moment.
fn refuse_unsupported_hooks(objects: &[Value]) -> Result<(), String> {
    let unsupported: Vec<String> = objects
        .iter()
        .filter_map(|object| {
            let hooks = object["metadata"]["annotations"]["helm.sh/hook"].as_str()?;
            let others: Vec<&str> = hooks
                .split(',')
                .map(str::trim)
                .filter(|hook| !hook.is_empty() && !INSTALL_HOOKS.contains(hook))
                .collect();
            (!others.is_empty()).then(|| {
                format!(
                    "{} {} ({})",
                    object["kind"].as_str().unwrap_or("object"),
                    object["metadata"]["name"].as_str().unwrap_or("?"),
                    others.join(", ")
                )
            })
        })
        .collect();
    if unsupported.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the chart has hooks Pakket does not run: {}; it applies install and upgrade hooks as ordinary objects and runs no delete, rollback or other hooks, so the chart is not installed without them",
        unsupported.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn install_hooks_pass_and_a_delete_hook_is_named() {
        let job = |name: &str, hook: &str| json!({"kind": "Job", "metadata": {"name": name, "annotations": {"helm.sh/hook": hook}}});
        assert!(
            refuse_unsupported_hooks(&[
                job("migrate", "pre-install,pre-upgrade"),
                json!({"kind": "ConfigMap", "metadata": {"name": "plain"}}),
            ])
            .is_ok()
        );
        let refused = refuse_unsupported_hooks(&[
            job("migrate", "post-install"),
            job("cleanup", "pre-delete, post-install"),
        ])
        .unwrap_err();
        assert!(refused.contains("Job cleanup (pre-delete)"), "{refused}");
        assert!(!refused.contains("migrate"), "{refused}");
    }

    #[test]
    fn helm_is_told_the_clusters_version_and_kinds() {
        let cluster = ClusterFacts {
            version: Some((1, 35)),
            served: [
                ("apps/v1".to_owned(), "Deployment".to_owned()),
                (
                    "monitoring.coreos.com/v1".to_owned(),
                    "ServiceMonitor".to_owned(),
                ),
            ]
            .into(),
            ..ClusterFacts::default()
        };
        assert_eq!(
            capabilities(&cluster),
            [
                "--kube-version=v1.35.0",
                "--api-versions=apps/v1,apps/v1/Deployment,monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor"
            ]
        );
        assert!(capabilities(&ClusterFacts::default()).is_empty());
    }

    #[test]
    fn helms_error_is_quoted_short() {
        assert_eq!(last_words("Error: boom\n"), "boom");
        assert_eq!(
            last_words(
                "Error: values don't meet the schema:\nweb:\n- replicaCount: Must be >= 1\n"
            ),
            "values don't meet the schema: web: - replicaCount: Must be >= 1"
        );
        let long = "x".repeat(5000);
        assert_eq!(last_words(&long).chars().count(), MAX_ERROR + 1);
    }
}
