//! Helm chart repositories for tests: charts written by a test, packaged
//! and indexed by the real, pinned helm (`helm package`, `helm repo
//! index`), as a chart repository serves them.

use std::collections::BTreeMap;
use std::path::Path;

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
